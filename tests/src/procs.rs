//! Spawned `aiden` processes for the tests that kill and restart them (faults, knowledge):
//! the binary of this checkout, its environment, and a small HTTP client for its API.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{setting, TEST_MASTER_KEY};

/// The `aiden` binary of this checkout, built once per test run (cargo does not build a
/// package's binary for another package's tests, and a stale one would test old code).
pub fn binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
            // Without what cargo set for this test binary (`CARGO_PKG_NAME`, `CARGO_CRATE_NAME`,
            // `CARGO_MANIFEST_DIR`, …): inherited, they make the build of `aiden`'s dependencies
            // look changed, and every test binary then rebuilt them (some 20 s each) and left
            // them stale for the next plain `cargo build`.
            let mut cargo = Command::new(env!("CARGO"));
            for (key, _) in std::env::vars_os() {
                let key = key.to_string_lossy();
                if key.starts_with("CARGO_PKG_")
                    || [
                        "CARGO_MANIFEST_DIR",
                        "CARGO_MANIFEST_PATH",
                        "CARGO_CRATE_NAME",
                        "CARGO_BIN_NAME",
                        "CARGO_PRIMARY_PACKAGE",
                        "CARGO_TARGET_TMPDIR",
                    ]
                    .contains(&&*key)
                {
                    cargo.env_remove(&*key);
                }
            }
            let status = cargo
                .args(["build", "--quiet", "--bin", "aiden"])
                .current_dir(&root)
                .status()
                .expect("cargo build");
            assert!(status.success(), "building aiden failed");
            let target = std::env::var("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|_| root.join("target"));
            target.join("debug/aiden")
        })
        .clone()
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `AIDEN_NEO4J_*` for a spawned process on the tests' Neo4j (`.stack/test-env`), database `db`.
pub fn neo4j_envs(db: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "AIDEN_NEO4J_URI",
            setting("AIDEN_NEO4J_URI", Some("bolt://127.0.0.1:7688")),
        ),
        (
            "AIDEN_NEO4J_USER",
            setting("AIDEN_NEO4J_USER", Some("neo4j")),
        ),
        (
            "AIDEN_NEO4J_PASSWORD",
            setting("AIDEN_NEO4J_PASSWORD", None),
        ),
        ("AIDEN_NEO4J_DATABASE", db.to_owned()),
    ]
}

/// The environment every spawned `aiden` gets.
pub fn envs(http_port: u16) -> Vec<(&'static str, String)> {
    let mut env = neo4j_envs(&crate::test_database());
    env.extend([
        ("AIDEN_AMQP_URI", crate::test_amqp_uri()),
        // The tests' virtual host, never a cluster that .stack/env may list (cluster-up).
        ("AIDEN_AMQP_URIS", String::new()),
        ("AIDEN_MASTER_KEY", TEST_MASTER_KEY.to_owned()),
        ("AIDEN_ADMIN_TOKEN", admin_token()),
        ("AIDEN_HTTP_ADDR", format!("127.0.0.1:{http_port}")),
        ("AIDEN_RETRY_INITIAL_DELAY_MS", "100".to_owned()),
        ("AIDEN_INSTANCE_ID", crate::TEST_INSTANCE_ID.to_owned()),
        // Tests start `aiden serve` hundreds of times: without its 40 s of warm-up passes.
        ("AIDEN_ENGINE_WARM_UP_MS", "0".to_owned()),
        ("AIDEN_RECALL_WARM_UP_MS", "0".to_owned()),
        ("RUST_LOG", crate::scan::child_log_level().to_owned()),
    ]);
    env
}

pub fn admin_token() -> String {
    setting(
        "AIDEN_ADMIN_TOKEN",
        Some("test-admin-token-0123456789abcdef"),
    )
}

/// A spawned `aiden`, SIGKILLed when dropped (also when a test panics), so a failed run never
/// leaves an engine or worker behind to serve the next test binary's queues.
/// Its log goes to the secrets scan's capture when that is on (`scan::child_stderr`); a failing
/// test then prints the log's tail.
/// The third field says the log is a temporary file of [`Proc::start_logged`]'s, removed on drop.
pub struct Proc(pub Child, Option<PathBuf>, bool);

impl Proc {
    /// Starts `cmd` with its stdout discarded and its stderr captured or inherited.
    pub fn start(cmd: &mut Command) -> std::io::Result<Self> {
        let (stderr, log) = crate::scan::child_stderr();
        let child = cmd.stdout(Stdio::null()).stderr(stderr).spawn()?;
        Ok(Self(child, log, false))
    }

    /// Like [`Proc::start`], with its stderr always kept in a file the test reads
    /// ([`Proc::log`], [`Proc::wait_log`]): the capture's when the scan is on.
    pub fn start_logged(cmd: &mut Command) -> std::io::Result<Self> {
        let (file, path, temporary) = crate::scan::child_log_file();
        let child = cmd.stdout(Stdio::null()).stderr(file).spawn()?;
        Ok(Self(child, Some(path), temporary))
    }

    /// The log file of [`Proc::start_logged`]'s when it is a temporary one (removed on drop).
    pub fn temporary_log(&self) -> Option<&std::path::Path> {
        self.1.as_deref().filter(|_| self.2)
    }

    /// What the process has logged so far (empty when its stderr is not kept in a file).
    pub fn log(&self) -> String {
        self.1
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
    }

    /// How many times `needle` occurs in the log so far.
    pub fn log_count(&self, needle: &str) -> usize {
        self.log().matches(needle).count()
    }

    /// Waits until the log holds `needle` at least `count` times: a barrier on something the
    /// process demonstrably did, instead of a sleep.
    pub async fn wait_log(&self, needle: &str, count: usize, within: Duration) {
        let deadline = Instant::now() + within;
        while self.log_count(needle) < count {
            assert!(
                Instant::now() < deadline,
                "waited {within:?} for {count} × {needle:?} in the log of {:?}",
                self.1
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        sigkill(self);
        if let (true, Some(log)) = (std::thread::panicking(), &self.1) {
            crate::scan::print_tail(log, 40);
        }
        if let (true, Some(log)) = (self.2, &self.1) {
            let _ = std::fs::remove_file(log);
        }
    }
}

pub fn spawn(args: &[&str], http_port: u16) -> Proc {
    spawn_env(args, http_port, &[])
}

pub fn sigkill(child: &mut Proc) {
    let _ = child.0.kill(); // SIGKILL on unix
    let _ = child.0.wait();
}

#[derive(Clone)]
pub struct Api {
    pub http: reqwest::Client,
    pub base: String,
    pub token: String,
}

impl Api {
    /// An admin client of the `aiden serve` on `127.0.0.1:port`.
    pub fn local(port: u16) -> Self {
        Self {
            http: reqwest::Client::new(),
            base: format!("http://127.0.0.1:{port}"),
            token: admin_token(),
        }
    }

    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = &body {
            req = req.json(b);
        }
        match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let text = resp.text().await.unwrap_or_default();
                crate::scan::record_exchange(
                    &method,
                    path,
                    body.as_ref(),
                    (200..300).contains(&status),
                    &text,
                );
                (status, serde_json::from_str(&text).unwrap_or(Value::Null))
            }
            Err(_) => (0, Value::Null),
        }
    }

    pub async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.call(reqwest::Method::GET, "/readyz", None).await.0 == 200 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("aiden serve did not become ready");
    }

    pub async fn run(&self, id: &str) -> Value {
        self.call(reqwest::Method::GET, &format!("/v1/runs/{id}"), None)
            .await
            .1
    }

    pub async fn wait_settled(&self, id: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let run = self.run(id).await;
            let status = run["status"].as_str().unwrap_or("");
            if matches!(status, "completed" | "failed" | "canceled") {
                return run;
            }
            assert!(Instant::now() < deadline, "run {id} not settled: {run}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The run's event stream after `last_event_id` (`Last-Event-ID`), read until an event
    /// satisfies `until` (then the stream is dropped) or the stream ends.
    pub async fn events_until(
        &self,
        id: &str,
        last_event_id: Option<i64>,
        until: impl Fn(&Value) -> bool,
    ) -> Vec<Value> {
        let mut req = self
            .http
            .get(format!("{}/v1/runs/{id}/events", self.base))
            .bearer_auth(&self.token);
        if let Some(last) = last_event_id {
            req = req.header("Last-Event-ID", last.to_string());
        }
        let mut resp = req.send().await.unwrap();
        let (mut text, mut events) = (String::new(), Vec::new());
        let deadline = Duration::from_secs(30);
        while let Some(chunk) = tokio::time::timeout(deadline, resp.chunk())
            .await
            .expect("event stream went quiet")
            .unwrap()
        {
            text.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = text.find("\n\n") {
                let block: String = text.drain(..end + 2).collect();
                crate::scan::record("sse", &block);
                let data = block.lines().find_map(|l| l.strip_prefix("data: "));
                let Some(event) = data.and_then(|d| serde_json::from_str::<Value>(d).ok()) else {
                    continue;
                };
                let done = until(&event);
                events.push(event);
                if done {
                    return events;
                }
            }
        }
        events
    }

    /// The run's whole event stream, until it ends.
    pub async fn events(&self, id: &str) -> Vec<Value> {
        self.events_until(id, None, |_| false).await
    }
}

pub async fn wait_until(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Like [`spawn`], with settings that override the defaults (later `envs` win).
pub fn spawn_env(args: &[&str], http_port: u16, extra: &[(&str, String)]) -> Proc {
    Proc::start(
        Command::new(binary())
            .args(args)
            .envs(envs(http_port))
            .envs(extra.iter().map(|(k, v)| (*k, v.as_str()))),
    )
    .expect("spawn aiden")
}

/// Like [`spawn_env`], with the process's log kept for the test to read ([`Proc::wait_log`]).
pub fn spawn_logged(args: &[&str], http_port: u16, extra: &[(&str, String)]) -> Proc {
    Proc::start_logged(
        Command::new(binary())
            .args(args)
            .envs(envs(http_port))
            .envs(extra.iter().map(|(k, v)| (*k, v.as_str()))),
    )
    .expect("spawn aiden")
}

/// `RUST_LOG` for a spawned process whose log lines a test waits on: the usual level
/// ([`crate::scan::child_log_level`]) with `directives` added (e.g. `aiden_workers=info`).
pub fn log_level_with(directives: &str) -> (&'static str, String) {
    (
        "RUST_LOG",
        format!("{},{directives}", crate::scan::child_log_level()),
    )
}

/// `aiden check` on `database` (the tests' own unless given) must report no violation.
pub fn assert_check_clean(database: Option<&str>) {
    let mut cmd = Command::new(binary());
    cmd.arg("check").envs(envs(0));
    if let Some(db) = database {
        cmd.env("AIDEN_NEO4J_DATABASE", db);
    }
    let out = cmd.output().expect("aiden check");
    assert!(
        out.status.success(),
        "aiden check: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
