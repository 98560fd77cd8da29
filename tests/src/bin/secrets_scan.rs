//! `aiden-secrets-scan DIR`: after the test suite, looks for Secret plaintexts and ciphertexts
//! everywhere they must never be (SEC-1/SEC-2): the response bodies, SSE streams and
//! logs and dead-lettered messages the harness captured in DIR (`tests/src/scan.rs`), every node and relationship property
//! in the graph (a Secret's own `encryptedValue` excepted), and every message left in the test
//! virtual host's queues, dead-letter queues included.
//!
//! The plaintexts are the values tests stored plus every Secret still in the graph, decrypted
//! with the test master key. It exits non-zero on a leak, and also when a source it must search
//! is empty (a scan of nothing cannot pass).

use std::{collections::BTreeMap, path::Path, process::Command};

use aiden_tests::scan::Needles;
use anyhow::{bail, Context, Result};
use serde_json::Value;

#[derive(Default)]
struct Report {
    /// Per source: how many items and bytes were searched.
    searched: BTreeMap<&'static str, (u64, u64)>,
    leaks: Vec<String>,
}

impl Report {
    fn search(
        &mut self,
        needles: &Needles,
        source: &'static str,
        at: &dyn Fn() -> String,
        text: &str,
    ) {
        let entry = self.searched.entry(source).or_default();
        entry.0 += 1;
        entry.1 += text.len() as u64;
        if let Some(leak) = needles.find(text) {
            self.leaks
                .push(format!("{source}: {} in {}", needles.describe(&leak), at()));
        }
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let dir = std::env::args()
        .nth(1)
        .context("usage: aiden-secrets-scan CAPTURE_DIR")?;
    let dir = Path::new(&dir);
    let graph = aiden_graph::Graph::connect(&aiden_tests::graph_settings())
        .await
        .context("graph")?;

    // Secrets made before the suite started (an earlier run's, fuzzing's random values) are
    // searched for as ciphertexts only: their values can be anything, "{{" included.
    let since = std::fs::read_to_string(dir.join("started-at"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let (stored, ciphertexts, undecryptable) = secrets_in_graph(&graph, &since).await?;
    let recorded = recorded_plaintexts(dir)?;
    // A value the tests also sent in another request (the bad-input tests send the same odd
    // strings to every field) is expected wherever that request put it.
    let mut sent = String::new();
    for file in captures(dir, "requests-")? {
        sent.push_str(&std::fs::read_to_string(file)?);
    }
    let (searched, also_sent): (Vec<String>, Vec<String>) = recorded
        .iter()
        .chain(&stored)
        .cloned()
        .partition(|p| !sent.contains(p.as_str()));
    let needles = Needles::new(searched, ciphertexts);
    println!(
        "secrets-scan: {} plaintexts ({} stored by tests, {} made since the suite started and decrypted from the graph; left out: shorter than {} chars, or also sent in another request ({})), {} stored ciphertexts, {} Secrets under another key",
        needles.plaintext_count(),
        recorded.len(),
        stored.len(),
        aiden_tests::scan::MIN_PLAINTEXT_LEN,
        also_sent.len(),
        needles.ciphertext_count(),
        undecryptable
    );

    let mut report = Report::default();
    scan_captures(dir, &needles, &mut report)?;
    scan_graph(&graph, &needles, &mut report).await?;
    scan_queues(&needles, &mut report).await?;

    for (source, (items, bytes)) in &report.searched {
        println!("secrets-scan: searched {items} {source} ({bytes} bytes)");
    }
    let required = [
        "responses",
        "sse",
        "dead letters",
        "log",
        "process logs",
        "graph nodes",
    ];
    let empty: Vec<&str> = required
        .into_iter()
        .filter(|s| !report.searched.contains_key(s))
        .collect();
    if needles.plaintext_count() == 0 || !empty.is_empty() {
        bail!(
            "nothing to scan: {} plaintexts, empty sources {empty:?} (was AIDEN_SCAN_DIR set for the tests?)",
            needles.plaintext_count()
        );
    }
    if !report.leaks.is_empty() {
        for leak in report.leaks.iter().take(50) {
            eprintln!("secrets-scan: LEAK {leak}");
        }
        bail!("{} leaks found", report.leaks.len());
    }
    println!("secrets-scan: no Secret plaintext or ciphertext outside its Secret node");
    Ok(())
}

/// Each Secret's plaintext (decrypted with the test key), every stored ciphertext, and how many
/// did not decrypt (a `scripts/run.sh` stack's Secrets, under its own key, share the graph).
async fn secrets_in_graph(
    graph: &aiden_graph::Graph,
    since: &str,
) -> Result<(Vec<String>, Vec<String>, usize)> {
    #[derive(serde::Deserialize)]
    struct Row {
        id: String,
        enc: Option<String>,
        #[serde(rename = "createdAt")]
        created_at: Option<String>,
    }
    let vault = aiden_service::Vault::from_base64(aiden_tests::TEST_MASTER_KEY)?;
    let rows: Vec<Row> = read(
        graph,
        "MATCH (s:Secret) RETURN s.id AS id, s.encryptedValue AS enc, s.createdAt AS createdAt",
    )
    .await?;
    let (mut plain, mut cipher, mut other) = (Vec::new(), Vec::new(), 0);
    for row in rows {
        let Some(enc) = row.enc else { continue };
        match vault.decrypt(&row.id, &enc) {
            Ok(p) if row.created_at.as_deref().unwrap_or("") >= since => plain.push(p.to_string()),
            Ok(_) => {}
            Err(_) => other += 1,
        }
        cipher.push(enc);
    }
    Ok((plain, cipher, other))
}

fn recorded_plaintexts(dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for file in captures(dir, "plaintexts-")? {
        for line in std::fs::read_to_string(&file)?.lines() {
            out.push(serde_json::from_str(line).with_context(|| file.display().to_string())?);
        }
    }
    Ok(out)
}

fn captures(dir: &Path, prefix: &str) -> Result<Vec<std::path::PathBuf>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| dir.display().to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Response bodies, SSE streams, the in-process server's log and spawned processes' logs, line
/// by line (a line names where a leak is).
fn scan_captures(dir: &Path, needles: &Needles, report: &mut Report) -> Result<()> {
    for (prefix, source) in [
        ("responses-", "responses"),
        ("sse-", "sse"),
        ("dlq-", "dead letters"),
        ("log-", "log"),
        ("proc-", "process logs"),
    ] {
        for file in captures(dir, prefix)? {
            let bytes = std::fs::read(&file)?;
            let text = String::from_utf8_lossy(&bytes);
            for (n, line) in text.lines().enumerate() {
                let at = || format!("{}:{}", file.display(), n + 1);
                report.search(needles, source, &at, line);
            }
        }
    }
    Ok(())
}

/// Every node's and relationship's properties; a Secret's `encryptedValue` is where the
/// ciphertext belongs, so only that one property is left out.
async fn scan_graph(
    graph: &aiden_graph::Graph,
    needles: &Needles,
    report: &mut Report,
) -> Result<()> {
    #[derive(serde::Deserialize)]
    struct Node {
        labels: Vec<String>,
        id: Option<String>,
        props: Value,
    }
    let nodes: Vec<Node> = read(
        graph,
        "MATCH (n) RETURN labels(n) AS labels, n.id AS id, properties(n) AS props",
    )
    .await?;
    for mut node in nodes {
        if node.labels.iter().any(|l| l == "Secret") {
            if let Some(props) = node.props.as_object_mut() {
                props.remove("encryptedValue");
            }
        }
        let at = || {
            format!(
                "{:?} {}",
                node.labels,
                node.id.as_deref().unwrap_or("(no id)")
            )
        };
        report.search(needles, "graph nodes", &at, &node.props.to_string());
    }
    #[derive(serde::Deserialize)]
    struct Rel {
        kind: String,
        props: Value,
    }
    let rels: Vec<Rel> = read(
        graph,
        "MATCH ()-[r]->() WHERE size(keys(r)) > 0 RETURN type(r) AS kind, properties(r) AS props",
    )
    .await?;
    for rel in rels {
        let at = || format!("relationship {}", rel.kind);
        report.search(needles, "graph relationships", &at, &rel.props.to_string());
    }
    Ok(())
}

async fn read<T: serde::de::DeserializeOwned>(
    graph: &aiden_graph::Graph,
    text: &str,
) -> Result<Vec<T>> {
    let mut tx = graph.begin().await?;
    let rows = tx.rows(neo4rs::query(text)).await?;
    let _ = tx.rollback().await;
    Ok(rows)
}

/// Every message in every queue of the test virtual host, read without acknowledging (closing
/// the channel puts them back): job and retry queues, dead-letter queues, the engine's and the
/// episode queues.
async fn scan_queues(needles: &Needles, report: &mut Report) -> Result<()> {
    use lapin::options::{BasicGetOptions, BasicQosOptions};
    let uri = aiden_tests::test_amqp_uri();
    let vhost = uri.rsplit('/').next().unwrap_or("%2f").replace("%2f", "/");
    let listed = Command::new("rabbitmqctl")
        .args(["-q", "list_queues", "-p", &vhost, "name", "messages"])
        .output()
        .context("rabbitmqctl list_queues")?;
    if !listed.status.success() {
        bail!("rabbitmqctl list_queues -p {vhost} failed");
    }
    let queues: Vec<(String, u32)> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            Some((parts.next()?.to_owned(), parts.next()?.parse().ok()?))
        })
        .collect();
    let conn = aiden_jobs::nodes::connect_any(&uri).await?;
    for (queue, count) in queues.into_iter().filter(|(_, n)| *n > 0) {
        let channel = conn.create_channel().await?;
        channel.basic_qos(0, BasicQosOptions::default()).await?;
        for _ in 0..count {
            let Some(msg) = channel
                .basic_get(&queue, BasicGetOptions { no_ack: false })
                .await?
            else {
                break;
            };
            let headers = format!("{:?}", msg.delivery.properties.headers());
            let body = String::from_utf8_lossy(&msg.delivery.data);
            let at = || format!("queue {queue}");
            report.search(
                needles,
                "queued messages",
                &at,
                &format!("{headers} {body}"),
            );
        }
        // Unacknowledged messages go back to their queue when the channel closes.
        channel.close(200, "scanned").await?;
    }
    conn.close(200, "scanned").await?;
    Ok(())
}
