//! Knowledge-layer tests against real processes: `aiden serve` (API, engine, outbox
//! relay), `aiden worker --type rest_api` and `--type episode`, the Graphiti service
//! (`workers/graphiti/`, graphiti-core on the tests' Neo4j, in the same database as everything
//! else) and a scripted OpenAI-compatible LLM + embedder (`workers/graphiti/fake_llm.py`). They use a RabbitMQ virtual host of their
//! own, so content other suites' servers relay never reaches this ingestion pool. The tests run one at
//! a time ([`SERIAL`]); the Episode and Entity tests (`episodes.rs`) share one set of processes,
//! which they kill and restart, the others start their own.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aiden_tests::procs::{Api, Proc};
use aiden_tests::setting;
use axum::{extract::Query, routing::get, Json, Router};
use reqwest::Method;
use serde_json::{json, Value};

mod currency;
mod episodes;
mod memory;
mod merge;
mod recall;
mod warm_up;

/// The tests of this binary share the database's outbox: each parks what is pending before it
/// starts its own relay, so they run one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The database: the tests' own Neo4j instance's (Community serves one user database, shared
/// with the other suites; ids, and Graphiti group ids = conversation ids, keep runs apart).
fn database() -> String {
    std::env::var("AIDEN_TEST_KNOWLEDGE_DATABASE").unwrap_or_else(|_| aiden_tests::test_database())
}

/// A RabbitMQ virtual host of this run's own: `aiden serve`s of other suites relay their
/// content to `aiden-test`, which this run's ingestion pool must not take.
fn fresh_vhost() -> (String, String) {
    if let Ok(uri) = std::env::var("AIDEN_TEST_KNOWLEDGE_AMQP_URI") {
        return (String::new(), uri);
    }
    let vhost = format!("aiden-knowledge-{}", std::process::id());
    for args in [
        vec!["add_vhost", vhost.as_str()],
        vec![
            "set_permissions",
            "-p",
            vhost.as_str(),
            "guest",
            ".*",
            ".*",
            ".*",
        ],
    ] {
        let ok = Command::new("rabbitmqctl")
            .arg("-q")
            .args(&args)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "rabbitmqctl {args:?}");
    }
    let uri = format!("amqp://guest:guest@127.0.0.1:5672/{vhost}");
    (vhost, uri)
}

fn drop_vhost(vhost: &str) {
    if !vhost.is_empty() {
        let _ = Command::new("rabbitmqctl")
            .args(["-q", "delete_vhost", vhost])
            .stdout(Stdio::null())
            .status();
    }
}

/// What the recall, memory and merge tests' processes run with: this run's database and
/// virtual host, the Graphiti service, and no memory upkeep.
fn serve_env(db: &str, amqp: &str, graphiti_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AIDEN_NEO4J_DATABASE", db.to_owned()),
        ("AIDEN_AMQP_URI", amqp.to_owned()),
        ("AIDEN_GRAPHITI_URL", graphiti_url.to_owned()),
        ("AIDEN_UPKEEP_INTERVAL_MS", "0".into()),
    ]
}

async fn park_pending_items(db: &str) {
    let settings = aiden_graph::Settings {
        uri: setting("AIDEN_NEO4J_URI", Some("bolt://127.0.0.1:7688")),
        user: setting("AIDEN_NEO4J_USER", Some("neo4j")),
        password: setting("AIDEN_NEO4J_PASSWORD", None),
        database: db.to_owned(),
        max_connections: 2,
        timeout: Duration::from_secs(30),
    };
    let graph = aiden_graph::Graph::connect(&settings).await.expect("graph");
    aiden_graph::migrate::run(&graph).await.expect("migrate");
    let mut tx = graph.begin().await.expect("tx");
    tx.run(
        neo4rs::query(
            "MATCH (o:IngestItem {state: 'new'}) SET o.state = 'published', o.publishedAt = $now",
        )
        .param("now", chrono::Utc::now().to_rfc3339()),
    )
    .await
    .expect("park items");
    tx.commit().await.expect("commit");
}

/// The tests' Neo4j (`.stack/test-env`), for the Graphiti service and the Python check: the
/// same graph and database the Rust side uses.
fn neo4j_env(db: &str) -> Vec<(&'static str, String)> {
    aiden_tests::procs::neo4j_envs(db)
}

fn venv_python() -> PathBuf {
    let venv = root().join(".stack/graphiti-venv/bin/python");
    assert!(
        venv.exists(),
        "no .stack/graphiti-venv: run scripts/graphiti.sh install (scripts/test.sh does)"
    );
    venv
}

fn python_proc(python: &str, args: &[&str], env: &[(&str, String)]) -> Proc {
    Proc::start(
        Command::new(python)
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str()))),
    )
    .unwrap_or_else(|e| panic!("spawn {python}: {e}"))
}

/// The Graphiti service on `port`, on the tests' Neo4j database `db`, extracting with the fake
/// LLM when `llm` is given.
fn graphiti(port: u16, llm: Option<u16>, db: &str) -> Proc {
    let venv = venv_python();
    let mut env = neo4j_env(db);
    env.extend([
        ("AIDEN_GRAPHITI_ADDR", format!("127.0.0.1:{port}")),
        ("AIDEN_GRAPHITI_LLM_BASE_URL", String::new()),
    ]);
    if let Some(l) = llm {
        env.push((
            "AIDEN_GRAPHITI_LLM_BASE_URL",
            format!("http://127.0.0.1:{l}/v1"),
        ));
        env.push(("AIDEN_GRAPHITI_LLM_MODEL", "fake".into()));
        env.push(("AIDEN_GRAPHITI_EMBEDDER", "openai".into()));
        env.push(("AIDEN_GRAPHITI_EMBEDDER_MODEL", "fake-embedding".into()));
        env.push(("AIDEN_GRAPHITI_EMBEDDING_DIM", "384".into()));
    }
    let service = root().join("workers/graphiti/aiden_graphiti_service.py");
    python_proc(venv.to_str().unwrap(), &[service.to_str().unwrap()], &env)
}

/// What the recall tests run against: the Graphiti service with its default embedder (no LLM:
/// extraction off), `aiden serve` and an episode pool on a fresh virtual host, and a graph
/// connection of the tests' own.
struct RecallProcs {
    _service: Proc,
    _serve: Proc,
    episodes: Proc,
    admin: Api,
    graph: aiden_graph::Graph,
    port: u16,
    extra: Vec<(&'static str, String)>,
    vhost: String,
}

async fn recall_procs() -> RecallProcs {
    let db = database();
    let (vhost, amqp) = fresh_vhost();
    let graphiti_port = aiden_tests::procs::free_port();
    let service = graphiti(graphiti_port, None, &db);
    let graphiti_url = format!("http://127.0.0.1:{graphiti_port}");
    wait_http(&format!("{graphiti_url}/healthz"), Duration::from_secs(60)).await;
    park_pending_items(&db).await;
    let port = aiden_tests::procs::free_port();
    let extra = serve_env(&db, &amqp, &graphiti_url);
    let serve = aiden_tests::procs::spawn_env(&["serve"], port, &extra);
    let episodes = aiden_tests::procs::spawn_env(&["worker", "--type", "episode"], port, &extra);
    let admin = Api::local(port);
    admin.wait_ready().await;
    let settings = aiden_graph::Settings {
        database: db,
        ..aiden_tests::graph_settings()
    };
    let graph = aiden_graph::Graph::connect(&settings).await.expect("graph");
    RecallProcs {
        _service: service,
        _serve: serve,
        episodes,
        admin,
        graph,
        port,
        extra,
        vhost,
    }
}

/// The official Python driver's view of the graph (`tests/knowledge/graph_walk.py`): one Cypher
/// query walks `Alternative -[:HAS_CONTENT]-> Episodic -[:MENTIONS]-> Entity` from the
/// Conversation `c`, edges only, and finds each of `names`.
fn graph_walk(db: &str, c: &str, names: &[&str]) {
    let script = root().join("tests/knowledge/graph_walk.py");
    let out = Command::new(venv_python())
        .arg(&script)
        .arg(c)
        .args(names)
        .envs(neo4j_env(db))
        .output()
        .expect("run tests/knowledge/graph_walk.py");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "graph_walk.py failed: {text}");
}

/// `path` answers 404 NOT_FOUND (OWN-2: unknown and invisible look alike).
async fn assert_not_found(api: &Api, method: Method, path: &str, body: Option<Value>) {
    let (s, b) = api.call(method, path, body).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{path}: {b}"
    );
}

async fn get_json(url: &str) -> Option<Value> {
    let r = reqwest::get(url).await.ok()?;
    r.status().is_success().then_some(())?;
    r.json().await.ok()
}

async fn wait_http(url: &str, within: Duration) {
    let deadline = Instant::now() + within;
    while get_json(url).await.is_none() {
        assert!(Instant::now() < deadline, "{url} did not answer");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The upstream the agent Processes call: `/answer?n=` answers a scripted text.
async fn start_upstream() -> String {
    let app = Router::new().route(
        "/answer",
        get(|Query(q): Query<HashMap<String, String>>| async move {
            let text = match q.get("n").map(String::as_str) {
                Some("1") => "Ada wrote notes about the Analytical Engine",
                Some("2") => "Charles Babbage designed the Difference Engine",
                _ => "Nothing to add",
            };
            Json(json!({"text": text}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

struct World {
    api: Api,
    graph: aiden_graph::Graph,
    graphiti_url: String,
    llm_url: String,
}

impl World {
    async fn ok(&self, method: Method, path: &str, body: Option<Value>, status: u16) -> Value {
        let (s, b) = self.api.call(method, path, body).await;
        assert_eq!(s, status, "{path}: {b}");
        b
    }

    async fn rows(&self, text: &str, params: &[(&str, &str)]) -> Vec<Value> {
        let mut q = neo4rs::query(text);
        for (k, v) in params {
            q = q.param(k, *v);
        }
        #[derive(serde::Deserialize)]
        struct Row {
            row: Value,
        }
        let rows: Vec<Row> = self.graph.read_rows(q).await.expect("query");
        rows.into_iter().map(|r| r.row).collect()
    }

    /// Waits until the corrected (revision 2) `id` listed at `path` is extracted under the
    /// Episode derived from `id#2`, with the first Episode's HAS_CONTENT edge still there.
    async fn wait_corrected(
        &self,
        what: &str,
        path: &str,
        id: &str,
        source: aiden_domain::knowledge::EpisodeSource,
        within: Duration,
    ) {
        use aiden_domain::knowledge::episode::episode_uuid;
        let expected = episode_uuid(source, &format!("{id}#2"));
        self.wait_extracted(what, path, id, &expected, within).await;
        let label = match source {
            aiden_domain::knowledge::EpisodeSource::Summary => "Summary",
            _ => "Introspection",
        };
        let edges = self
            .rows(
                &format!("MATCH (:{label} {{id: $id}})-[:HAS_CONTENT]->(e:Episodic) RETURN {{uuid: e.uuid}} AS row"),
                &[("id", id)],
            )
            .await;
        let mut uuids: Vec<String> = edges
            .iter()
            .map(|e| e["uuid"].as_str().unwrap().to_owned())
            .collect();
        uuids.sort();
        let mut want = vec![episode_uuid(source, id), expected];
        want.sort();
        assert_eq!(
            uuids, want,
            "{what}: the old Episode's edge is kept beside the new one"
        );
    }

    /// Waits until `id`, listed at `path`, is extracted under the Episode `uuid`.
    async fn wait_extracted(&self, what: &str, path: &str, id: &str, uuid: &str, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let list = self.ok(Method::GET, path, None, 200).await;
            let me = list["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["id"] == id)
                .cloned()
                .unwrap_or_else(|| panic!("{id} not in {what}: {list}"));
            if me["binding"] == "extracted" && me["episodeId"] == uuid {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: {id} never extracted as {uuid}: {me}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A new conversation of the admin's: its id.
    async fn conversation(&self, title: &str) -> String {
        let c = self
            .ok(
                Method::POST,
                "/v1/conversations",
                Some(json!({"title": title})),
                201,
            )
            .await;
        c["id"].as_str().unwrap().to_owned()
    }

    /// A user Turn in `c` with `body`: its id and its first Alternative's.
    async fn user_turn(&self, c: &str, body: Value) -> (String, String) {
        let path = format!("/v1/conversations/{c}/turns");
        let t = self.ok(Method::POST, &path, Some(body), 201).await;
        let id = |v: &Value| v.as_str().unwrap().to_owned();
        (id(&t["id"]), id(&t["alternatives"][0]["id"]))
    }

    async fn turn(&self, turn_id: &str) -> Value {
        self.ok(Method::GET, &format!("/v1/turns/{turn_id}"), None, 200)
            .await
    }

    /// The Alternative `alt` of `turn_id` once its binding is one of `states`.
    async fn wait_binding(
        &self,
        turn_id: &str,
        alt: &str,
        states: &[&str],
        within: Duration,
    ) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let t = self.turn(turn_id).await;
            let a = t["alternatives"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["id"] == alt)
                .cloned()
                .unwrap_or_else(|| panic!("alternative {alt} not in {t}"));
            if states.iter().any(|s| a["binding"] == *s) {
                return a;
            }
            assert!(
                Instant::now() < deadline,
                "binding of {alt} stayed {}: {a}",
                a["binding"]
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn extractions(&self) -> Vec<Value> {
        get_json(&format!("{}/debug/extractions", self.graphiti_url))
            .await
            .map(|v| v["items"].as_array().cloned().unwrap_or_default())
            .unwrap_or_default()
    }

    async fn llm_requests(&self) -> Vec<Value> {
        get_json(&format!("{}/debug/requests", self.llm_url))
            .await
            .map(|v| v["items"].as_array().cloned().unwrap_or_default())
            .unwrap_or_default()
    }

    /// The one Process whose single step asks the upstream for answer `n`.
    async fn answer_process(&self, upstream: &str, tag: &str, n: &str) -> String {
        let svc = format!("svc-{tag}-{n}");
        let tool = format!("tool-{tag}-{n}");
        let process = format!("proc-{tag}-{n}");
        self.ok(
            Method::POST,
            "/v1/services",
            Some(json!({
            "id": svc, "name": "answers", "type": "rest_api", "protocol": "http",
            "requiresSecret": false, "endpoint": upstream, "enabled": true,
            "connectionSchema": {"type": "object", "required": ["endpoint"],
                "properties": {"endpoint": {"type": "string"}}}})),
            201,
        )
        .await;
        self.ok(
            Method::POST,
            "/v1/tools",
            Some(json!({
            "id": tool, "name": "answer", "serviceId": svc,
            "connectionParams": {"endpoint": upstream},
            "operation": {"type": "rest_api", "method": "GET", "path": "/answer?n={{n}}"},
            "inputSchema": {"type": "object", "required": ["n"],
                "properties": {"n": {"type": "string"}}},
            "outputSchema": {"type": "object", "required": ["status", "body"],
                "properties": {"status": {"type": "integer"}, "body": {}}},
            "enabled": true})),
            201,
        )
        .await;
        self.ok(
            Method::POST,
            "/v1/processes",
            Some(json!({
            "id": process, "name": "answer",
            "steps": [{"id": "a", "tool": tool, "inputs": {"n": n},
                       "output": {"variable": "a", "required": true},
                       "execution": {"mode": "sequential", "timeout": 30000}}],
            "outputTemplate": "{{a.body.text}}"})),
            201,
        )
        .await;
        process
    }
}

/// Percent-encodes a query parameter's value (everything but letters and digits).
fn query_value(q: &str) -> String {
    q.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Recall over what Graphiti extracted: an Entity by its name and a fact by its
/// sentence, each with the Alternatives that stated it (in `c`), through `GET /v1/search`.
async fn search_finds_entities_and_facts(w: &World, c: &str) {
    let hits = |answer: &Value| answer["hits"].as_array().cloned().unwrap_or_default();
    let found = w
        .ok(
            Method::GET,
            &format!("/v1/search?q=Ada%20Lovelace&kinds=entity&conversationId={c}"),
            None,
            200,
        )
        .await;
    let ada = hits(&found)
        .into_iter()
        .find(|h| h["name"] == "Ada Lovelace")
        .unwrap_or_else(|| panic!("the entity is found by name: {found}"));
    assert_eq!(ada["kind"], "entity");
    assert!(
        ada["sources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["conversationId"] == c),
        "{ada}"
    );
    let facts = w
        .rows(
            "MATCH ()-[r:RELATES_TO {group_id: $c}]->() WHERE r.fact IS NOT NULL \
             RETURN {uuid: r.uuid, fact: r.fact} AS row LIMIT 1",
            &[("c", c)],
        )
        .await;
    let fact = facts
        .first()
        .unwrap_or_else(|| panic!("no fact extracted in {c}"));
    let text = query_value(fact["fact"].as_str().unwrap());
    let found = w
        .ok(
            Method::GET,
            &format!("/v1/search?q={text}&kinds=fact&limit=50&conversationId={c}"),
            None,
            200,
        )
        .await;
    let hit = hits(&found)
        .into_iter()
        .find(|h| h["id"] == fact["uuid"])
        .unwrap_or_else(|| panic!("the fact is found by its sentence: {found}"));
    assert_eq!(hit["kind"], "fact");
    assert!(
        hit["sources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["conversationId"] == c),
        "{hit}"
    );
}

/// What the ingestion pool logs when Graphiti (or the graph) cannot be reached: it waits.
const GRAPHITI_WAIT: &str = "ingestion waiting for graphiti or the graph";

/// Waits until the ingestion pool `episodes` has logged that it is done with the message of the
/// Alternative `alt` (its binding, extraction and merge all behind it).
async fn wait_ingested(episodes: &Proc, alt: &str) {
    let id = format!("message:{alt}");
    aiden_tests::procs::wait_until(
        "the ingestion pool done with the message",
        Duration::from_secs(60),
        || {
            episodes
                .log()
                .lines()
                .any(|l| l.contains("ingested") && l.contains(&id))
        },
    )
    .await;
}

/// How many requests wait unread at the (paused) process listening on 127.0.0.1:`port`:
/// established connections to it with bytes in their receive queue (Linux's `/proc/net/tcp`).
fn requests_waiting_at(port: u16) -> usize {
    let local = format!("0100007F:{port:04X}");
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let unread = f.get(4).and_then(|q| q.split(':').nth(1));
            f.get(1) == Some(&local.as_str())
                && f.get(3) == Some(&"01")
                && unread.is_some_and(|rx| u64::from_str_radix(rx, 16).is_ok_and(|n| n > 0))
        })
        .count()
}

/// The tokens a working-memory section counts: `field` summed over its items, each of which
/// must carry it (WM-2).
fn section_tokens(items: &Value, field: &str) -> u64 {
    items
        .as_array()
        .expect("a working-memory section")
        .iter()
        .map(|x| x[field].as_u64().expect("a token count"))
        .sum()
}

fn episode_uuid(alternative_id: &str) -> String {
    aiden_domain::knowledge::episode::episode_uuid(
        aiden_domain::knowledge::EpisodeSource::Message,
        alternative_id,
    )
}

/// The default embedder: all-MiniLM-L6-v2 from the PyPI package the venv
/// holds, run with numpy on this machine (no model hub, no provider), gives the model's own
/// documented similarity for its example pair, unit vectors of 384 dimensions
/// (`workers/graphiti/aiden_embedder.py`'s check).
#[test]
fn knowledge_the_local_embedder_is_all_minilm_l6_v2_offline() {
    let out = Command::new(venv_python())
        .arg(root().join("workers/graphiti/aiden_embedder.py"))
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .expect("run aiden_embedder.py");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "aiden_embedder.py check failed: {text}"
    );
    assert!(text.contains("eating/bread 0.755"), "{text}");
}
