//! The integration-test harness: one `aiden` API server per test binary, started on port 0 in a
//! background runtime against the tests' own Neo4j and RabbitMQ that `scripts/stack.sh test-up`
//! started. It fails loudly when they are unreachable; it never passes vacuously.
//! Each test makes its own users and ids (`unique`), so tests run in parallel.

use std::{
    io::Write,
    sync::{Arc, Mutex, OnceLock},
};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

pub mod chaos;
pub mod fixtures;
pub mod otlp;
pub mod procs;
pub mod scan;
pub mod scripted_model;

pub use serde_json;

/// The shared server and what tests need to reach it.
pub struct Server {
    pub base: String,
    pub admin_token: String,
    pub graph: aiden_graph::Settings,
    logs: Arc<Mutex<Vec<u8>>>,
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// Settings from `AIDEN_*`, falling back to the files `scripts/stack.sh` generates: the tests'
/// own `.stack/test-env` (their Neo4j instance and RabbitMQ virtual host) before the stack's
/// `.stack/env` (password, keys).
pub fn setting(name: &str, default: Option<&str>) -> String {
    if let Ok(v) = std::env::var(name) {
        return v;
    }
    for file in ["test-env", "env"] {
        let path = format!("{}/../.stack/{file}", env!("CARGO_MANIFEST_DIR"));
        if let Some(v) = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| env_file_value(&text, name))
        {
            return v;
        }
    }
    default.map(str::to_owned).unwrap_or_else(|| {
        panic!("{name} is not set and .stack/env has no value: run scripts/stack.sh test-up")
    })
}

/// `NAME`'s value in a file of `export NAME=value` or `export NAME=${NAME:-value}` lines.
fn env_file_value(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.trim_start_matches("export ").split_once('=')?;
        (k == name).then(|| {
            v.trim_start_matches(&format!("${{{name}:-"))
                .trim_end_matches('}')
                .to_owned()
        })
    })
}

/// The broker the tests use: `AIDEN_TEST_AMQP_URI`, else the tests' virtual host from
/// `.stack/test-env` (so a `scripts/run.sh` stack on `/` never takes test jobs).
pub fn test_amqp_uri() -> String {
    std::env::var("AIDEN_TEST_AMQP_URI").unwrap_or_else(|_| {
        setting(
            "AIDEN_AMQP_URI",
            Some("amqp://guest:guest@127.0.0.1:5672/aiden-test"),
        )
    })
}

/// The database the tests use: `AIDEN_TEST_NEO4J_DATABASE`, else `AIDEN_NEO4J_DATABASE`. On
/// Community (one user database) the tests have a Neo4j instance of their own instead
/// (`scripts/stack.sh test-up`, `.stack/test-env`).
pub fn test_database() -> String {
    std::env::var("AIDEN_TEST_NEO4J_DATABASE")
        .unwrap_or_else(|_| setting("AIDEN_NEO4J_DATABASE", Some("neo4j")))
}

/// The test graph's connection settings (the stack's, `AIDEN_*` overriding).
pub fn graph_settings() -> aiden_graph::Settings {
    aiden_graph::Settings {
        uri: setting("AIDEN_NEO4J_URI", Some("bolt://127.0.0.1:7688")),
        user: setting("AIDEN_NEO4J_USER", Some("neo4j")),
        password: setting("AIDEN_NEO4J_PASSWORD", None),
        database: test_database(),
        max_connections: 32,
        timeout: std::time::Duration::from_secs(5),
    }
}

/// A documented question (`cypher/queries/ask/<name>.cypher`, docs/queries.md) with its
/// parameters, ready to run.
pub fn ask_query(name: &str, params: &[(&str, Value)]) -> neo4rs::Query {
    let path = format!(
        "{}/../cypher/queries/ask/{name}.cypher",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut q = neo4rs::query(&text);
    for (k, v) in params {
        q = match v {
            Value::Number(n) => q.param(k, n.as_i64().expect("integer param")),
            Value::String(s) => q.param(k, s.as_str()),
            other => panic!("unsupported param {other}"),
        };
    }
    q
}

/// Captures the server's log lines so tests can assert what never appears in them. With
/// `AIDEN_STATUS_LOG` set, each answered request's line ("handled route=... status=...") is
/// also appended to that file: `scripts/status-coverage.py` lists the documented statuses the
/// suite never produced.
#[derive(Clone)]
struct LogSink(Arc<Mutex<Vec<u8>>>, Option<Arc<Mutex<std::fs::File>>>);

impl LogSink {
    fn new(logs: Arc<Mutex<Vec<u8>>>) -> Self {
        let statuses = std::env::var_os("AIDEN_STATUS_LOG").and_then(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()
        });
        Self(logs, statuses.map(|f| Arc::new(Mutex::new(f))))
    }
}

impl Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        scan::record_log(buf);
        if let Some(file) = &self.1 {
            if buf.windows(9).any(|w| w == b" handled ") {
                file.lock().unwrap().write_all(buf)?;
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub fn server() -> &'static Server {
    SERVER.get_or_init(|| {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        // Short retry delays keep the retry tests fast (the policy shape is unchanged).
        if std::env::var("AIDEN_RETRY_INITIAL_DELAY_MS").is_err() {
            std::env::set_var("AIDEN_RETRY_INITIAL_DELAY_MS", "100");
        }
        // AGT-14: one model name is priced, so budget tests see real charges. $1,000 per
        // million input tokens and $2,000 per million output: the scripted model's 10 + 5
        // tokens cost $0.02 a turn, a turn's pre-flight estimate (1,024 answer tokens) ~$2.5.
        if std::env::var("AIDEN_MODEL_PRICES").is_err() {
            std::env::set_var(
                "AIDEN_MODEL_PRICES",
                format!(
                    r#"{{"{PRICED_MODEL}": {{"inputPerMillion": 1000, "outputPerMillion": 2000}}}}"#
                ),
            );
        }
        // Built-in measurements are written every sweep (3 s) rather than every minute.
        std::env::set_var("AIDEN_BUILTIN_METRICS_INTERVAL_MS", "1000");
        let graph = graph_settings();
        let amqp = test_amqp_uri();
        let admin_token = setting(
            "AIDEN_ADMIN_TOKEN",
            Some("test-admin-token-0123456789abcdef"),
        );
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = LogSink::new(logs.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("debug,neo4rs=info,lapin=info,hyper=info,h2=info,reqwest=info")
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);

        let (tx, rx) = std::sync::mpsc::channel();
        let g = graph.clone();
        let token = admin_token.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let graph = aiden_graph::Graph::connect(&g).await.unwrap_or_else(|e| {
                    panic!(
                        "cannot reach the Bolt server at {} ({e}): run scripts/stack.sh test-up",
                        g.uri
                    )
                });
                aiden_graph::migrate::run(&graph).await.expect("migrate");
                let vault = aiden_service::Vault::from_base64(TEST_MASTER_KEY).unwrap();
                // The engine and one worker pool per operation type, in this process.
                let notifier = aiden_engine::Notifier::default();
                // The test binaries and the processes they spawn share one engine identity, so
                // each takes the lease over from the last at once.
                let lease = aiden_engine::Lease::new(
                    graph.clone(),
                    TEST_INSTANCE_ID,
                    aiden_engine::DEFAULT_LEASE_TTL,
                );
                let clock = hour_pinned_clock();
                let engine =
                    aiden_engine::Engine::new(graph.clone(), amqp.clone(), notifier.clone())
                        .with_lease(lease)
                        .with_clock(clock.clone());
                tokio::spawn(aiden_engine::relay_deltas(amqp.clone(), notifier.clone()));
                let door = engine.door();
                tokio::spawn(engine.run());
                for ty in aiden_jobs::OperationType::ALL {
                    let config = aiden_workers::pool::PoolConfig {
                        operation_type: ty,
                        concurrency: 4,
                        amqp_uri: amqp.clone(),
                        graph: graph.clone(),
                        vault: vault.clone(),
                        started_notice_after: aiden_workers::pool::STARTED_NOTICE_AFTER,
                    };
                    tokio::spawn(aiden_workers::pool::run(config));
                }
                // Requests name their source in x-forwarded-for where a test needs its own
                // (USR-4); the rest share the peer address 127.0.0.1.
                let auth = aiden_service::AuthPolicy {
                    source_header: Some("x-forwarded-for".into()),
                    ..Default::default()
                };
                let app = aiden_service::App::new(graph, vault)
                    .with_broker(&amqp)
                    .with_auth_policy(&auth)
                    .with_engine_door(door)
                    .with_clock(clock)
                    .with_neo4j_browser(Some(TEST_NEO4J_BROWSER.into()));
                app.bootstrap_admin(&token).await.expect("bootstrap admin");
                // Memory upkeep, ticking fast so its tests settle quickly.
                tokio::spawn(
                    aiden_service::upkeep::runner::Runner::new(
                        app.clone(),
                        std::time::Duration::from_millis(200),
                    )
                    .run(),
                );
                let server = aiden_api::Application::build(app, "127.0.0.1:0", amqp, notifier)
                    .await
                    .expect("bind");
                tx.send(server.port()).unwrap();
                server.run().await.unwrap();
            });
        });
        let port = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the test server did not start within 60 s");
        Server {
            base: format!("http://127.0.0.1:{port}"),
            admin_token,
            graph,
            logs,
        }
    })
}

/// The Neo4j Browser address the test server shows admins.
pub const TEST_NEO4J_BROWSER: &str = "http://127.0.0.1:7475/browser/";

/// The model name the test server prices (AGT-14).
pub const PRICED_MODEL: &str = "scripted-priced";

/// The engine lease holder of every engine the tests start, in process or spawned.
pub const TEST_INSTANCE_ID: &str = "aiden-tests";

/// A fixed key for tests only (base64 of 32 bytes).
pub const TEST_MASTER_KEY: &str = "dGVzdC1tYXN0ZXIta2V5LTMyLWJ5dGVzLWxvbmchISE=";

impl Server {
    /// Everything the server has logged so far.
    pub fn logs(&self) -> String {
        String::from_utf8_lossy(&self.logs.lock().unwrap()).into_owned()
    }

    /// The server's ERROR log lines, to explain a 5xx in a failure message.
    pub fn error_lines(&self) -> String {
        self.logs()
            .lines()
            .filter(|l| l.contains("ERROR"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A fresh id with a readable prefix, unique across tests and runs.
/// A source address no other test of this binary uses (the test server counts failed
/// authentications per source, USR-4).
/// Hourly quota windows (AGT-10) are clock hours and spend windows (AGT-14) UTC days. The tests'
/// server (its API and its engine) counts them on a clock that starts at the top of the hour it
/// started in and runs at the real pace, so no suite (each well under an hour) sees a window roll
/// over between the starts and spends it races.
fn hour_pinned_clock() -> aiden_service::Clock {
    use chrono::Timelike;
    let now = chrono::Utc::now();
    let top = now
        .with_minute(0)
        .and_then(|t| t.with_second(0))
        .and_then(|t| t.with_nanosecond(0))
        .unwrap_or(now);
    let started = std::time::Instant::now();
    aiden_service::Clock::from_fn(move || {
        top + chrono::Duration::from_std(started.elapsed()).unwrap_or_default()
    })
}

pub fn unique_source() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("10.77.{}.{}", (n >> 8) & 0xff, n & 0xff)
}

pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::now_v7().simple())
}

/// An HTTP response: status and JSON body (Null when empty).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Reply {
    /// A response header as text.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// The invariant IDs named in `error.details`.
    pub fn invariants(&self) -> Vec<String> {
        self.body["error"]["details"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| d["invariant"].as_str().map(str::to_owned))
            .collect()
    }

    /// Asserts the status and that `invariant` is named; returns self for more checks.
    #[track_caller]
    pub fn rejects(&self, status: u16, invariant: &str) -> &Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "expected {status} naming {invariant}, got {:?}",
            self
        );
        assert!(
            self.invariants().iter().any(|i| i == invariant),
            "expected {invariant} in details, got {:?}",
            self.body
        );
        assert!(
            self.body["error"]["requestId"]
                .as_str()
                .is_some_and(|r| !r.is_empty()),
            "error without requestId: {:?}",
            self.body
        );
        self
    }

    #[track_caller]
    pub fn ok(&self, status: u16) -> &Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected reply: {:?}",
            self.body
        );
        &self.body
    }

    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
}

/// A caller with a bearer token.
#[derive(Clone)]
pub struct Client {
    pub id: String,
    pub token: String,
    http: reqwest::Client,
    base: String,
    /// The address the test server takes as the request's source (x-forwarded-for, USR-4).
    source: Option<String>,
}

impl Client {
    pub fn new(id: &str, token: &str) -> Self {
        Self {
            id: id.to_owned(),
            token: token.to_owned(),
            http: reqwest::Client::new(),
            base: server().base.clone(),
            source: None,
        }
    }

    /// The same caller, with redirects answered rather than followed (to see a 3xx itself).
    pub fn not_following(mut self) -> Self {
        self.http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client");
        self
    }

    /// The same caller, its requests counted as coming from `ip` (USR-4): a test that sends
    /// unknown tokens on purpose uses a source of its own, so no other test's is throttled.
    pub fn from_source(mut self, ip: &str) -> Self {
        self.source = Some(ip.to_owned());
        self
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut req = self.raw(method.clone(), path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let res = req.send().await.expect("request failed");
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap_or_default();
        scan::record_exchange(&method, path, body, status.is_success(), &text);
        let body = serde_json::from_str(&text).unwrap_or(if text.is_empty() {
            Value::Null
        } else {
            Value::String(text)
        });
        Reply {
            status,
            body,
            headers,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, None, &[]).await
    }
    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.send(Method::POST, path, Some(&body), &[]).await
    }
    pub async fn patch(&self, path: &str, body: Value) -> Reply {
        self.send(Method::PATCH, path, Some(&body), &[]).await
    }
    pub async fn put(&self, path: &str, body: Value) -> Reply {
        self.send(Method::PUT, path, Some(&body), &[]).await
    }
    pub async fn delete(&self, path: &str) -> Reply {
        self.send(Method::DELETE, path, None, &[]).await
    }

    /// `POST /v1/processes/{id}/runs`; the new run's id.
    pub async fn start_run(&self, process: &str, inputs: Value) -> String {
        let path = format!("/v1/processes/{process}/runs");
        let r = self.post(&path, json!({"inputs": inputs})).await;
        r.ok(202)["runId"].as_str().expect("runId").to_owned()
    }

    /// Polls `GET /v1/runs/{id}` until the run is terminal (30 s at most).
    pub async fn settled_run(&self, id: &str) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let run = self.get(&format!("/v1/runs/{id}")).await.ok(200).clone();
            if matches!(
                run["status"].as_str(),
                Some("completed" | "failed" | "canceled")
            ) {
                return run;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "run did not settle: {run}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// The raw client, for requests the helpers do not cover (bad bodies, odd headers).
    pub fn raw(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(ip) = &self.source {
            req = req.header("x-forwarded-for", ip);
        }
        if self.token.is_empty() {
            req
        } else {
            req.bearer_auth(&self.token)
        }
    }
}

pub fn admin() -> Client {
    Client::new("admin", &server().admin_token)
}

/// A new user (role `user` unless `admin`), made through `POST /v1/users`.
pub async fn new_user(role: &str) -> Client {
    let id = unique("u");
    let reply = admin()
        .post("/v1/users", json!({"id": id, "name": id, "role": role}))
        .await;
    let body = reply.ok(201);
    Client::new(
        &id,
        body["token"].as_str().expect("token in create-user reply"),
    )
}

pub async fn user() -> Client {
    new_user("user").await
}

/// A fingerprint of everything a user owns: each owned node's id, revision and stored record,
/// and how many edges touch them. Equal fingerprints before and after a rejected request show
/// it left nothing half-written.
pub async fn fingerprint(owner_id: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Row {
        id: String,
        doc: Option<String>,
        rels: i64,
        enc: Option<String>,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (n) WHERE n.ownerId = $owner OPTIONAL MATCH (n)-[r]-() \
             RETURN n.id AS id, n.doc AS doc, n.encryptedValue AS enc, count(r) AS rels ORDER BY id",
        )
        .param("owner", owner_id),
    )
    .await;
    rows.into_iter()
        .map(|r| {
            format!(
                "{} {} {} {}",
                r.id,
                r.rels,
                r.doc.unwrap_or_default(),
                r.enc.unwrap_or_default()
            )
        })
        .collect()
}

/// The step `id` of a run as `GET /v1/runs/{id}` shows it (panics naming the run if absent).
pub fn step_of<'a>(run: &'a Value, id: &str) -> &'a Value {
    run["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["stepId"] == id)
        .unwrap_or_else(|| panic!("no step {id} in {run}"))
}

/// A raw query for test assertions (tests may read the graph directly).
pub fn aiden_graph_query(text: &str) -> neo4rs::Query {
    neo4rs::query(text)
}

/// Writes to the graph directly: what another component (Graphiti's mirror, a bad actor for
/// the audit) would have written.
pub async fn graph_write(q: neo4rs::Query) {
    let graph = aiden_graph::Graph::connect(&server().graph)
        .await
        .expect("graph");
    let mut tx = graph.begin().await.expect("tx");
    tx.run(q).await.expect("write");
    tx.commit().await.expect("commit");
}

/// Runs a read query against the graph for assertions.
pub async fn graph_rows<T: serde::de::DeserializeOwned>(q: neo4rs::Query) -> Vec<T> {
    let graph = aiden_graph::Graph::connect(&graph_settings())
        .await
        .expect("graph");
    // Reads can fail transiently while a concurrent delete settles (EntityNotFound).
    for attempt in 1..=10u64 {
        let mut tx = graph.begin().await.expect("tx");
        let rows = tx.rows(q.clone()).await;
        let _ = tx.rollback().await;
        match rows {
            Ok(rows) => return rows,
            Err(e) if e.is_transient() && attempt < 10 => {
                tokio::time::sleep(std::time::Duration::from_millis(5 * attempt)).await
            }
            Err(e) => panic!("query: {e:?}"),
        }
    }
    unreachable!()
}
