//! Knowledge-layer tests against real processes: `aiden serve` (API, engine, outbox
//! relay), `aiden worker --type rest_api` and `--type episode`, the Graphiti service
//! (`workers/graphiti/`, graphiti-core on the tests' Neo4j, in the same database as everything
//! else) and a scripted OpenAI-compatible LLM + embedder (`workers/graphiti/fake_llm.py`). They use a RabbitMQ virtual host of their
//! own, so content other suites' servers relay never reaches this ingestion pool. One `#[test]`: the
//! scenarios share the processes and kill and restart some of them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aiden_tests::procs::{
    assert_check_clean, free_port, log_level_with, sigkill, spawn_env, spawn_logged, Api, Proc,
};
use aiden_tests::{ask_query, setting};
use axum::{extract::Query, routing::get, Json, Router};
use reqwest::Method;
use serde_json::{json, Value};

mod memory;
mod merge;
mod recall;

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

/// Whether a request waits unread at the (paused) process listening on 127.0.0.1:`port`: an
/// established connection to it with bytes in its receive queue (Linux's `/proc/net/tcp`).
fn request_waiting_at(port: u16) -> bool {
    let local = format!("0100007F:{port:04X}");
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table.lines().skip(1).any(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let unread = f.get(4).and_then(|q| q.split(':').nth(1));
        f.get(1) == Some(&local.as_str())
            && f.get(3) == Some(&"01")
            && unread.is_some_and(|rx| u64::from_str_radix(rx, 16).is_ok_and(|n| n > 0))
    })
}

fn episode_uuid(alternative_id: &str) -> String {
    aiden_domain::knowledge::episode::episode_uuid(
        aiden_domain::knowledge::EpisodeSource::Message,
        alternative_id,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn epi_1_to_7_ent_1_to_3_episodes_bind_once_extract_on_their_own_path_and_never_block_the_user(
) {
    let _serial = SERIAL.lock().await;
    let db = database();
    let (vhost, amqp) = fresh_vhost();
    let llm_port = free_port();
    let _llm = python_proc(
        "python3",
        &[
            root()
                .join("workers/graphiti/fake_llm.py")
                .to_str()
                .unwrap(),
            "--port",
            &llm_port.to_string(),
            "--dim",
            "384",
        ],
        &[],
    );
    let graphiti_port = free_port();
    let mut service = graphiti(graphiti_port, Some(llm_port), &db);
    let graphiti_url = format!("http://127.0.0.1:{graphiti_port}");
    let llm_url = format!("http://127.0.0.1:{llm_port}");
    wait_http(&format!("{llm_url}/healthz"), Duration::from_secs(20)).await;
    wait_http(&format!("{graphiti_url}/healthz"), Duration::from_secs(60)).await;

    // Content other suites left pending in the shared database is not this test's to ingest:
    // mark it handed over, so this run's relay publishes only what this test writes.
    park_pending_items(&db).await;
    let port = free_port();
    let extra = vec![
        ("AIDEN_NEO4J_DATABASE", db.clone()),
        ("AIDEN_AMQP_URI", amqp.clone()),
        ("AIDEN_GRAPHITI_URL", graphiti_url.clone()),
    ];
    let serve = spawn_env(&["serve"], port, &extra);
    let rest = spawn_env(&["worker", "--type", "rest_api"], port, &extra);
    // The ingestion pool's log is read: what it has ingested, and when it waits for Graphiti.
    let episode_env = [
        extra.clone(),
        vec![log_level_with("aiden_workers::episodes=debug")],
    ]
    .concat();
    let mut episodes = spawn_logged(&["worker", "--type", "episode"], port, &episode_env);
    let api = Api {
        http: reqwest::Client::new(),
        base: format!("http://127.0.0.1:{port}"),
        token: aiden_tests::procs::admin_token(),
    };
    api.wait_ready().await;
    let settings = aiden_graph::Settings {
        uri: setting("AIDEN_NEO4J_URI", Some("bolt://127.0.0.1:7688")),
        user: setting("AIDEN_NEO4J_USER", Some("neo4j")),
        password: setting("AIDEN_NEO4J_PASSWORD", None),
        database: db.clone(),
        max_connections: 4,
        timeout: Duration::from_secs(10),
    };
    let w = World {
        api,
        graph: aiden_graph::Graph::connect(&settings).await.expect("graph"),
        graphiti_url: graphiti_url.clone(),
        llm_url,
    };
    let upstream = start_upstream().await;
    // Ids unique per run: the database is shared and outlives the run.
    let tag = aiden_tests::unique("k");
    let p1 = w.answer_process(&upstream, &tag, "1").await;
    let p2 = w.answer_process(&upstream, &tag, "2").await;
    let long = Duration::from_secs(90);

    // 1. The lifecycle: a user turn, a user edit, an answer and its regeneration, a follow-up.
    let c = w
        .ok(
            Method::POST,
            "/v1/conversations",
            Some(json!({"title": "knowledge"})),
            201,
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let t1 = w
        .ok(
            Method::POST,
            &format!("/v1/conversations/{c}/turns"),
            Some(json!({"speaker": "user", "content": "I met Ada Lovelace in London"})),
            201,
        )
        .await;
    let t1_id = t1["id"].as_str().unwrap().to_owned();
    let u1 = t1["alternatives"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(t1["alternatives"][0]["binding"], "pending", "{t1}");
    assert!(t1["alternatives"][0]["episodeId"].is_null());
    let edit = w
        .ok(
            Method::POST,
            &format!("/v1/turns/{t1_id}/alternatives"),
            Some(json!({"content": "I met Grace Hopper in Arlington"})),
            201,
        )
        .await;
    let u1_edit = edit["id"].as_str().unwrap().to_owned();
    // The answer responds to the first version of the question.
    let g1 = w
        .ok(
            Method::POST,
            &format!("/v1/conversations/{c}/agent-turns"),
            Some(json!({"processId": p1, "parentTurnId": t1_id, "parentAlternativeId": u1})),
            202,
        )
        .await;
    let t2_id = g1["turnId"].as_str().unwrap().to_owned();
    let g1_id = g1["alternativeId"].as_str().unwrap().to_owned();
    w.wait_binding(&t2_id, &g1_id, &["extracted"], long).await;
    let g2 = w
        .ok(
            Method::POST,
            &format!("/v1/turns/{t2_id}/alternatives"),
            Some(json!({"processId": p2, "parentAlternativeId": u1})),
            202,
        )
        .await;
    let g2_id = g2["id"].as_str().unwrap().to_owned();
    w.wait_binding(&t2_id, &g2_id, &["extracted"], long).await;
    let before = w.llm_requests().await.len();
    let t3 = w
        .ok(
            Method::POST,
            &format!("/v1/conversations/{c}/turns"),
            Some(
                json!({"speaker": "user", "content": "Tell me more about Babbage",
                        "parentTurnId": t2_id, "parentAlternativeId": g2_id}),
            ),
            201,
        )
        .await;
    let t3_id = t3["id"].as_str().unwrap().to_owned();
    let u3 = t3["alternatives"][0]["id"].as_str().unwrap().to_owned();
    let a3 = w.wait_binding(&t3_id, &u3, &["extracted"], long).await;
    for (turn, alt) in [
        (&t1_id, &u1),
        (&t1_id, &u1_edit),
        (&t2_id, &g1_id),
        (&t2_id, &g2_id),
    ] {
        let a = w.wait_binding(turn, alt, &["extracted"], long).await;
        // EPI-1: its own Episode, under the derived uuid.
        assert_eq!(a["episodeId"], episode_uuid(alt), "{a}");
    }
    assert_eq!(a3["episodeId"], episode_uuid(&u3));
    // EPI-5: what the service was given as extraction context: the Episodes of the path only.
    let ex = w.extractions().await;
    let context_of = |alt: &str| -> Vec<String> {
        ex.iter()
            .filter(|e| e["uuid"] == episode_uuid(alt).as_str())
            .map(|e| {
                e["previous_episode_uuids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect()
            })
            .next()
            .unwrap_or_else(|| panic!("no extraction of {alt}: {ex:?}"))
    };
    assert_eq!(context_of(&u3), [episode_uuid(&u1), episode_uuid(&g2_id)]);
    assert_eq!(context_of(&g2_id), [episode_uuid(&u1)]);
    assert_eq!(context_of(&g1_id), [episode_uuid(&u1)]);
    assert!(context_of(&u1_edit).is_empty());
    // ...and what the LLM saw while extracting the follow-up: never the sibling branch.
    let prompts: Vec<String> = w.llm_requests().await[before..]
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert!(
        !prompts.is_empty(),
        "the follow-up was extracted by the LLM"
    );
    assert!(
        prompts.iter().any(|p| p.contains("Difference Engine")),
        "its own path is context"
    );
    for p in &prompts {
        assert!(
            !p.contains("Analytical Engine"),
            "a sibling answer leaked into extraction"
        );
        assert!(
            !p.contains("Grace Hopper"),
            "a sibling edit leaked into extraction"
        );
    }
    // Entities in working memory: those of the path, never of a sibling branch.
    let wm = w
        .ok(
            Method::GET,
            &format!("/v1/conversations/{c}/working-memory?alternativeId={u3}"),
            None,
            200,
        )
        .await;
    let path_episodes: Vec<&Value> = wm["immediatePath"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["episodeId"])
        .collect();
    assert_eq!(
        path_episodes,
        [episode_uuid(&u1), episode_uuid(&g2_id), episode_uuid(&u3)]
            .iter()
            .map(|u| json!(u))
            .collect::<Vec<_>>()
            .iter()
            .collect::<Vec<_>>()
    );
    let names: Vec<&str> = wm["activeEntities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    for expected in ["Ada Lovelace", "London", "Difference Engine"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    for foreign in ["Grace Hopper", "Arlington", "Analytical Engine"] {
        assert!(!names.contains(&foreign), "{foreign} leaked into {names:?}");
    }
    // docs/queries.md, "the Entities a Conversation's active path mentions" (u3 is current):
    // the graph answers with the same Entities as working memory, each mentioned at least once.
    let asked: Vec<Value> = w
        .graph
        .read_rows(ask_query("path_entities", &[("conversationId", json!(c))]))
        .await
        .expect("path_entities");
    let mut asked_names: Vec<&str> = asked.iter().map(|r| r["name"].as_str().unwrap()).collect();
    asked_names.sort();
    let mut wm_names = names.clone();
    wm_names.sort();
    assert_eq!(asked_names, wm_names, "{asked:?}");
    assert!(asked.iter().all(|r| r["mentions"].as_i64().unwrap() >= 1));
    let path_tokens: u64 = wm["immediatePath"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["tokens"].as_u64().unwrap())
        .sum();
    let entity_tokens: u64 = wm["activeEntities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["tokens"].as_u64().unwrap())
        .sum();
    assert!(entity_tokens > 0);
    // WM-2 also counts the owner's introspection notes and the path's summaries, which other
    // suites' runs in this graph may have written for the same user.
    let sum_of = |key: &str, field: &str| -> u64 {
        wm[key]
            .as_array()
            .map(|xs| xs.iter().filter_map(|x| x[field].as_u64()).sum())
            .unwrap_or(0)
    };
    assert_eq!(
        wm["totalTokens"].as_u64().unwrap(),
        path_tokens
            + entity_tokens
            + sum_of("introspectionContext", "tokens")
            + sum_of("summaries", "tokenCount")
            + sum_of("retrievedContext", "tokens"),
        "WM-2: {wm}"
    );
    // The tree shows each Alternative's binding state.
    let tree = w
        .ok(
            Method::GET,
            &format!("/v1/conversations/{c}/tree"),
            None,
            200,
        )
        .await;
    let bindings: Vec<&Value> = tree["turns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["alternatives"].as_array().unwrap())
        .map(|a| &a["binding"])
        .collect();
    assert_eq!(bindings.len(), 5);
    assert!(bindings.iter().all(|b| *b == "extracted"), "{bindings:?}");
    // One graph: our Alternatives point at graphiti-core's own Episodic nodes, which MENTION its
    // own Entities — walked by the official Python driver, edges only.
    graph_walk(
        &db,
        &c,
        &[
            "Ada Lovelace",
            "London",
            "Difference Engine",
            "Analytical Engine",
        ],
    );
    search_finds_entities_and_facts(&w, &c).await;
    assert_check_clean(Some(&db));

    // 2. Idempotency: a duplicated message, a SIGKILLed worker, a restarted Graphiti service.
    let one_node = |alt: String| {
        let w = &w;
        async move {
            let rows = w
                .rows(
                    "MATCH (a:Alternative {id: $id})-[h:HAS_CONTENT]->(e:Episodic) \
                     WITH a, count(h) AS edges, collect(e.uuid) AS uuids \
                     OPTIONAL MATCH (x:Episodic {uuid: a.episodeId}) \
                     WITH edges, uuids, count(x) AS nodes \
                     RETURN {edges: edges, uuids: uuids, nodes: nodes} AS row",
                    &[("id", &alt)],
                )
                .await;
            assert_eq!(rows.len(), 1, "{rows:?}");
            assert_eq!(rows[0]["edges"], 1, "one HAS_CONTENT: {rows:?}");
            assert_eq!(rows[0]["nodes"], 1, "one Episodic node: {rows:?}");
            assert_eq!(rows[0]["uuids"], json!([episode_uuid(&alt)]));
        }
    };
    let runs_of = |ex: &[Value], alt: &str| {
        ex.iter()
            .filter(|e| e["uuid"] == episode_uuid(alt).as_str() && e["ran"] == true)
            .count()
    };
    // A duplicated (or redelivered) ingestion message changes nothing.
    let broker = aiden_jobs::Broker::connect(&amqp).await.expect("broker");
    let duplicate = aiden_jobs::IngestMessage {
        v: 1,
        id: format!("message:{u1}"),
        kind: "message".into(),
        target_id: u1.clone(),
        conversation_id: c.clone(),
        created_at: "2026-01-01T00:00:00.000Z".into(),
    };
    let ran_before = runs_of(&w.extractions().await, &u1);
    broker
        .publish_ingest(&[duplicate.clone(), duplicate.clone()])
        .await
        .unwrap();
    // Something after it in the same conversation, so we know the duplicates were consumed.
    let (t4_id, u4) = w
        .user_turn(
            &c,
            json!({"speaker": "user", "content": "And Ada Lovelace?", "parentTurnId": t3_id}),
        )
        .await;
    w.wait_binding(&t4_id, &u4, &["extracted"], long).await;
    one_node(u1.clone()).await;
    assert_eq!(
        runs_of(&w.extractions().await, &u1),
        ran_before,
        "extraction not run again"
    );

    // SIGKILL the ingestion worker while Graphiti is extracting: the LLM is paused mid-call.
    // Not before the pool is done with the follow-up (its Entities' merge embeds through the
    // LLM after the binding is recorded): then the paused LLM holds up nothing but the next.
    wait_ingested(&episodes, &u4).await;
    let llm_pid = _llm.0.id().to_string();
    let signal = |sig: &str| {
        Command::new("kill").args([sig, &llm_pid]).status().unwrap();
    };
    signal("-STOP");
    let t5 = w
        .ok(Method::POST, &format!("/v1/conversations/{c}/turns"),
            Some(json!({"speaker": "user", "content": "Babbage met Lovelace in London", "parentTurnId": t4_id})), 201)
        .await;
    let (t5_id, u5) = (
        t5["id"].as_str().unwrap().to_owned(),
        t5["alternatives"][0]["id"].as_str().unwrap().to_owned(),
    );
    w.wait_binding(&t5_id, &u5, &["bound"], long).await;
    // Mid-call: a request (the embedding or the extraction of u5) waits unread at the LLM.
    aiden_tests::procs::wait_until(
        "a request waiting at the paused LLM",
        Duration::from_secs(30),
        || request_waiting_at(llm_port),
    )
    .await;
    sigkill(&mut episodes);
    signal("-CONT");
    episodes = spawn_logged(&["worker", "--type", "episode"], port, &episode_env);
    w.wait_binding(&t5_id, &u5, &["extracted"], long).await;
    one_node(u5.clone()).await;
    let completed = w
        .extractions()
        .await
        .iter()
        .filter(|e| {
            e["uuid"] == episode_uuid(&u5).as_str()
                && e["status"] == "extracted"
                && e["ran"] == true
        })
        .count();
    assert_eq!(completed, 1, "extraction completed exactly once");
    assert_check_clean(Some(&db));

    // 3. Never on the user's path: with Graphiti stopped, appends and switches still answer
    // (their latency is printed; the benchmark measures it), items wait, and bind once it is back.
    sigkill(&mut service);
    let waits_before = episodes.log_count(GRAPHITI_WAIT);
    let mut latencies = Vec::new();
    let mut parent = t5_id.clone();
    let mut waiting = Vec::new();
    for i in 0..20 {
        let started = Instant::now();
        let t = w
            .ok(Method::POST, &format!("/v1/conversations/{c}/turns"),
                Some(json!({"speaker": "user", "content": format!("Offline note {i} about London"), "parentTurnId": parent})), 201)
            .await;
        latencies.push(started.elapsed());
        parent = t["id"].as_str().unwrap().to_owned();
        waiting.push((
            parent.clone(),
            t["alternatives"][0]["id"].as_str().unwrap().to_owned(),
        ));
    }
    let started = Instant::now();
    w.ok(
        Method::PUT,
        &format!("/v1/turns/{t1_id}/active"),
        Some(json!({"alternativeId": u1})),
        200,
    )
    .await;
    latencies.push(started.elapsed());
    latencies.sort();
    println!(
        "appends/switch with Graphiti down: p50 {:?}, max {:?}",
        latencies[latencies.len() / 2],
        latencies.last().unwrap()
    );
    // The pool has taken the first of them and found Graphiti gone: it waits (in order per
    // conversation, the rest wait behind it), and nothing is bound meanwhile.
    episodes
        .wait_log(GRAPHITI_WAIT, waits_before + 1, Duration::from_secs(60))
        .await;
    for (turn, alt) in &waiting {
        let a = w
            .wait_binding(turn, alt, &["pending"], Duration::from_secs(5))
            .await;
        assert!(a["episodeId"].is_null(), "{a}");
    }
    service = graphiti(graphiti_port, Some(llm_port), &db);
    wait_http(&format!("{graphiti_url}/healthz"), Duration::from_secs(60)).await;
    for (turn, alt) in &waiting {
        w.wait_binding(turn, alt, &["extracted"], long).await;
    }
    one_node(waiting[0].1.clone()).await;
    assert_check_clean(Some(&db));

    // 4. Entities: user-created, added to and removed from the conversation; bad input.
    let ent = w
        .ok(Method::POST, "/v1/entities",
            Some(json!({"name": "Analytical Engine project", "summary": "Babbage's general-purpose computer design", "category": "Project"})), 201)
        .await;
    let ent_uuid = ent["uuid"].as_str().unwrap().to_owned();
    assert_eq!(ent["sources"][0]["type"], "user");
    let wm_before = w
        .ok(
            Method::GET,
            &format!("/v1/conversations/{c}/working-memory"),
            None,
            200,
        )
        .await;
    let added = w
        .ok(
            Method::PUT,
            &format!("/v1/conversations/{c}/entities/{ent_uuid}"),
            Some(json!({"includeFacets": true})),
            200,
        )
        .await;
    assert_eq!(added["relevanceScore"], 1.0);
    assert_eq!(added["source"], "user");
    let wm_after = w
        .ok(
            Method::GET,
            &format!("/v1/conversations/{c}/working-memory"),
            None,
            200,
        )
        .await;
    let first = &wm_after["activeEntities"][0];
    assert_eq!(first["entityUuid"], ent_uuid.as_str(), "{wm_after}");
    assert_eq!(
        wm_after["totalTokens"].as_u64().unwrap(),
        wm_before["totalTokens"].as_u64().unwrap() + first["tokens"].as_u64().unwrap(),
        "WM-2 counts the chosen entity"
    );
    let listed = w
        .ok(
            Method::GET,
            &format!("/v1/conversations/{c}/entities"),
            None,
            200,
        )
        .await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    let extracted = w
        .ok(
            Method::GET,
            &format!("/v1/entities?conversationId={c}&q=lovelace"),
            None,
            200,
        )
        .await;
    let lovelace = extracted["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "Ada Lovelace")
        .cloned()
        .unwrap_or_else(|| panic!("{extracted}"));
    let sources = lovelace["sources"].as_array().unwrap();
    assert!(
        sources.iter().all(|s| s["type"] == "graphiti"),
        "{lovelace}"
    );
    assert!(
        sources
            .iter()
            .any(|s| s["episodeId"] == episode_uuid(&u1).as_str()),
        "provenance names the Episode it was extracted from: {lovelace}"
    );
    // Another user sees none of it (OWN-2) and cannot activate it (ENT-2).
    let (s, other) = w
        .api
        .call(
            Method::POST,
            "/v1/users",
            Some(json!({"name": "stranger", "role": "user"})),
        )
        .await;
    assert_eq!(s, 201, "{other}");
    let stranger = Api {
        http: reqwest::Client::new(),
        base: w.api.base.clone(),
        token: other["token"].as_str().unwrap().to_owned(),
    };
    assert_eq!(
        stranger
            .call(Method::GET, &format!("/v1/entities/{ent_uuid}"), None)
            .await
            .0,
        404
    );
    let lovelace_uuid = lovelace["uuid"].as_str().unwrap();
    assert_eq!(
        stranger
            .call(Method::GET, &format!("/v1/entities/{lovelace_uuid}"), None)
            .await
            .0,
        404
    );
    let sc = stranger
        .call(
            Method::POST,
            "/v1/conversations",
            Some(json!({"title": "theirs"})),
        )
        .await
        .1["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let activate = |conv: &str, uuid: &str| format!("/v1/conversations/{conv}/entities/{uuid}");
    assert_not_found(
        &stranger,
        Method::PUT,
        &activate(&sc, &ent_uuid),
        Some(json!({})),
    )
    .await;
    assert_not_found(
        &w.api,
        Method::PUT,
        &activate(&c, "no-such-entity"),
        Some(json!({})),
    )
    .await;
    let (s, b) = w
        .api
        .call(
            Method::POST,
            "/v1/entities",
            Some(json!({"name": " ", "summary": "", "category": "Dragon"})),
        )
        .await;
    assert_eq!(s, 422, "{b}");
    let rules: Vec<&str> = b["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["invariant"].as_str())
        .collect();
    assert_eq!(rules, ["ENT-1", "ENT-1", "ENT-1"], "{b}");
    let stray = w
        .rows(
            "MATCH (n:Entity) WHERE n.category = 'Dragon' RETURN {n: count(n)} AS row",
            &[],
        )
        .await;
    assert_eq!(stray[0]["n"], 0, "nothing half-written");
    let (s, _) = w
        .api
        .call(
            Method::DELETE,
            &format!("/v1/conversations/{c}/entities/{ent_uuid}"),
            None,
        )
        .await;
    assert_eq!(s, 204);
    let listed = w
        .ok(
            Method::GET,
            &format!("/v1/conversations/{c}/entities"),
            None,
            200,
        )
        .await;
    assert!(listed["items"].as_array().unwrap().is_empty());

    // 5. Bad content: empty is refused; huge is accepted and its Episode cut (EPI-6).
    let (s, b) = w
        .api
        .call(
            Method::POST,
            &format!("/v1/conversations/{c}/turns"),
            Some(json!({"speaker": "user", "content": "   ", "parentTurnId": t1_id})),
        )
        .await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (400, Some("VALIDATION_ERROR")),
        "{b}"
    );
    let huge = "Ada Lovelace wrote the first program. ".repeat(5_000);
    let (t6_id, u6) = w
        .user_turn(
            &c,
            json!({"speaker": "user", "content": huge, "parentTurnId": t5_id}),
        )
        .await;
    w.wait_binding(&t6_id, &u6, &["extracted"], long).await;
    let cut = w
        .rows(
            "MATCH (:Alternative {id: $id})-[:HAS_CONTENT]->(e:Episodic) \
             RETURN {len: size(e.content), tail: right(e.content, 40)} AS row",
            &[("id", &u6)],
        )
        .await;
    let len = cut[0]["len"].as_u64().unwrap();
    assert!(
        len <= aiden_domain::knowledge::episode::MAX_EPISODE_CHARS as u64,
        "{cut:?}"
    );
    assert!(
        cut[0]["tail"]
            .as_str()
            .unwrap()
            .contains("more characters]"),
        "{cut:?}"
    );
    let full = w.turn(&t6_id).await;
    assert_eq!(
        full["alternatives"][0]["content"].as_str().unwrap().len(),
        huge.len(),
        "the Alternative keeps it all"
    );

    // 6. Summaries get their Episode the same way (source summary).
    let s = w
        .ok(Method::POST, &format!("/v1/conversations/{c}/summaries"),
            Some(json!({"content": "Ada Lovelace and Charles Babbage in London", "coversUpToTurnId": t2_id,
                        "sources": [u1, g2_id]})), 201)
        .await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let summary_episode = aiden_domain::knowledge::episode::episode_uuid(
        aiden_domain::knowledge::EpisodeSource::Summary,
        &sid,
    );
    w.wait_extracted(
        "summaries",
        &format!("/v1/conversations/{c}/summaries"),
        &sid,
        &summary_episode,
        long,
    )
    .await;
    let summary_ctx: Vec<Value> = w
        .extractions()
        .await
        .into_iter()
        .filter(|e| e["uuid"].as_str() == Some(summary_episode.as_str()))
        .collect();
    assert_eq!(
        summary_ctx[0]["previous_episode_uuids"],
        json!([episode_uuid(&u1), episode_uuid(&g2_id)])
    );

    // 6b. Corrections are new Episodes beside the old ones: an admin's repair of the
    //     Summary, and an introspection note (group `system_introspection`) and its correction.
    let fixed = w
        .ok(
            Method::PATCH,
            &format!("/v1/summaries/{sid}"),
            Some(json!({"content": "Ada Lovelace and Charles Babbage met in London"})),
            200,
        )
        .await;
    assert_eq!(fixed["revision"], 2, "{fixed}");
    w.wait_corrected(
        "summaries",
        &format!("/v1/conversations/{c}/summaries"),
        &sid,
        aiden_domain::knowledge::EpisodeSource::Summary,
        long,
    )
    .await;
    let note = w
        .ok(
            Method::POST,
            "/v1/introspections",
            Some(json!({"content": "The user researches Ada Lovelace"})),
            201,
        )
        .await;
    let nid = note["id"].as_str().unwrap().to_owned();
    let first_episode = aiden_domain::knowledge::episode::episode_uuid(
        aiden_domain::knowledge::EpisodeSource::Introspection,
        &nid,
    );
    w.wait_extracted(
        "introspections",
        "/v1/introspections",
        &nid,
        &first_episode,
        long,
    )
    .await;
    w.ok(
        Method::PUT,
        &format!("/v1/introspections/{nid}/content"),
        Some(json!({"content": "The user researches Ada Lovelace and Babbage"})),
        200,
    )
    .await;
    w.wait_corrected(
        "introspections",
        "/v1/introspections",
        &nid,
        aiden_domain::knowledge::EpisodeSource::Introspection,
        long,
    )
    .await;
    let groups = w
        .rows(
            "MATCH (:Introspection {id: $id})-[:HAS_CONTENT]->(e:Episodic) RETURN {group: e.group_id} AS row",
            &[("id", &nid)],
        )
        .await;
    assert!(
        !groups.is_empty() && groups.iter().all(|g| g["group"] == "system_introspection"),
        "{groups:?}"
    );
    assert_check_clean(Some(&db));

    // 7. No LLM configured: binding completes and extraction is reported as skipped.
    sigkill(&mut service);
    service = graphiti(graphiti_port, None, &db);
    wait_http(&format!("{graphiti_url}/healthz"), Duration::from_secs(60)).await;
    let (t7_id, u7) = w
        .user_turn(
            &c,
            json!({"speaker": "user", "content": "No model here", "parentTurnId": t6_id}),
        )
        .await;
    let a7 = w.wait_binding(&t7_id, &u7, &["skipped"], long).await;
    assert_eq!(a7["episodeId"], episode_uuid(&u7).as_str());
    assert_check_clean(Some(&db));

    sigkill(&mut episodes);
    sigkill(&mut service);
    drop((serve, rest));
    drop_vhost(&vhost);
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
