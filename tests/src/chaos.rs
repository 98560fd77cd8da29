//! What the fault tests and the soak (`aiden-soak`) share: a REST upstream that counts its
//! calls, a Process whose middle step is slow, an agent Process on the scripted model, and the
//! stack's restarts (RabbitMQ, Neo4j).

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::{extract::Query, routing::get, Json, Router};
use serde_json::{json, Value};

use crate::procs::{wait_until, Api};

/// The REST API the test Tools call: `/slow?ms=` sleeps, counting calls per `tag` and the
/// `Idempotency-Key` each call carried.
#[derive(Clone, Default)]
pub struct Upstream {
    pub calls: Arc<std::sync::Mutex<Vec<String>>>,
    /// `(tag, Idempotency-Key)` of every call.
    pub keys: Arc<std::sync::Mutex<Vec<TaggedKey>>>,
    pub in_flight: Arc<AtomicUsize>,
    /// Per tag, how many of its next calls answer 503 (a retryable upstream error).
    pub failing: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
}

/// A call's `tag` and the `Idempotency-Key` it carried.
pub type TaggedKey = (String, Option<String>);

/// What an upstream that honours `Idempotency-Key` would have seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyCount {
    pub calls: usize,
    pub distinct_keys: usize,
    pub without_key: usize,
    /// Calls that repeat a key already seen: re-calls after a kill, which such an upstream
    /// answers from its record instead of running them again.
    pub repeated: usize,
}

impl Upstream {
    /// The distinct keys the calls for `tag` carried (calls without one are not counted): how
    /// many times an upstream honouring `Idempotency-Key` would have run them.
    pub fn distinct_keys_for(&self, tag: &str) -> usize {
        let keys = self.keys.lock().unwrap();
        let of_tag = keys.iter().filter(|(t, _)| t == tag);
        let keyed = of_tag.filter_map(|(_, k)| k.as_ref());
        keyed.collect::<std::collections::HashSet<_>>().len()
    }

    pub fn key_count(&self) -> KeyCount {
        let keys = self.keys.lock().unwrap();
        let with: Vec<&String> = keys.iter().filter_map(|(_, k)| k.as_ref()).collect();
        let distinct = with.iter().collect::<std::collections::HashSet<_>>().len();
        KeyCount {
            calls: keys.len(),
            distinct_keys: distinct,
            without_key: keys.len() - with.len(),
            repeated: with.len() - distinct,
        }
    }

    /// The next `calls` calls for `tag` answer 503.
    pub fn fail_next(&self, tag: &str, calls: usize) {
        self.failing.lock().unwrap().insert(tag.to_owned(), calls);
    }

    /// `true` once for each call [`Upstream::fail_next`] said should fail.
    fn takes_failure(&self, tag: &str) -> bool {
        let mut failing = self.failing.lock().unwrap();
        match failing.get_mut(tag) {
            Some(left) if *left > 0 => {
                *left -= 1;
                true
            }
            _ => false,
        }
    }

    pub fn calls_for(&self, tag: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|t| t.as_str() == tag)
            .count()
    }
}

pub async fn start_upstream() -> (Upstream, String) {
    let up = Upstream::default();
    let state = up.clone();
    let app = Router::new().route(
        "/slow",
        get(
            move |headers: axum::http::HeaderMap,
                  Query(q): Query<std::collections::HashMap<String, String>>| {
                let state = state.clone();
                async move {
                    let tag = q.get("tag").cloned().unwrap_or_default();
                    let ms: u64 = q.get("ms").and_then(|m| m.parse().ok()).unwrap_or(0);
                    state.calls.lock().unwrap().push(tag.clone());
                    let key = headers
                        .get("idempotency-key")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    state.keys.lock().unwrap().push((tag.clone(), key));
                    if state.takes_failure(&tag) {
                        let busy = axum::http::StatusCode::SERVICE_UNAVAILABLE;
                        return (busy, Json(json!({"tag": tag, "ok": false})));
                    }
                    state.in_flight.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    state.in_flight.fetch_sub(1, Ordering::SeqCst);
                    (
                        axum::http::StatusCode::OK,
                        Json(json!({"tag": tag, "ok": true})),
                    )
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (up, format!("http://{addr}"))
}

/// A Service and Tool on the upstream, and a 3-step chain whose middle step is slow.
pub async fn define(api: &Api, upstream: &str, tag: &str, slow_ms: u64) -> String {
    let svc = format!("svc-{tag}");
    let tool = format!("tool-{tag}");
    let process = format!("proc-{tag}");
    let (s, b) = api
        .call(reqwest::Method::POST, "/v1/services", Some(json!({
            "id": svc, "name": "fault upstream", "type": "rest_api", "protocol": "http",
            "requiresSecret": false, "endpoint": upstream, "enabled": true,
            "connectionSchema": {"type": "object", "required": ["endpoint"],
                "properties": {"endpoint": {"type": "string"}, "timeoutMs": {"type": "integer"}}}})))
        .await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = api
        .call(reqwest::Method::POST, "/v1/tools", Some(json!({
            "id": tool, "name": "slow call", "serviceId": svc,
            "connectionParams": {"endpoint": upstream, "timeoutMs": 20000},
            "operation": {"type": "rest_api", "method": "GET", "path": "/slow?tag={{tag}}&ms={{ms}}"},
            "inputSchema": {"type": "object", "required": ["tag", "ms"],
                "properties": {"tag": {"type": "string"}, "ms": {"type": "string"}}},
            "outputSchema": {"type": "object", "required": ["status", "body"],
                "properties": {"status": {"type": "integer"}, "body": {}}},
            "enabled": true})))
        .await;
    assert_eq!(s, 201, "{b}");
    let step = |id: &str, ms: u64| {
        json!({"id": id, "tool": tool, "inputs": {"tag": format!("{tag}-{id}"), "ms": ms.to_string()},
               "output": {"variable": id, "required": true},
               "execution": {"mode": "sequential", "timeout": 30000}})
    };
    let (s, b) = api
        .call(
            reqwest::Method::POST,
            "/v1/processes",
            Some(json!({
            "id": process, "name": "fault chain",
            "steps": [step("a", 0), step("b", slow_ms), step("c", 0)],
            "outputTemplate": "{{c.body}}"})),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    process
}

pub async fn start(api: &Api, process: &str) -> String {
    let (s, b) = api
        .call(
            reqwest::Method::POST,
            &format!("/v1/processes/{process}/runs"),
            Some(json!({"inputs": {}})),
        )
        .await;
    assert_eq!(s, 202, "{b}");
    b["runId"].as_str().unwrap().to_owned()
}

/// Defines `define`'s chain under `tag`, starts it and returns once its slow step b is running.
pub async fn start_at_slow_step(api: &Api, upstream: &str, up: &Upstream, tag: &str) -> String {
    let process = define(api, upstream, tag, 1500).await;
    let run = start(api, &process).await;
    let b = format!("{tag}-b");
    wait_until(
        "step b to reach the upstream",
        Duration::from_secs(30),
        || up.calls_for(&b) == 1,
    )
    .await;
    run
}

/// The worker the engine records as running `step` of `run_id` (the step announces itself
/// 500 ms into its call).
pub async fn running_on(api: &Api, run_id: &str, step: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let run = api.run(run_id).await;
        let s = run["steps"]
            .as_array()
            .and_then(|steps| steps.iter().find(|s| s["stepId"] == step).cloned())
            .unwrap_or(Value::Null);
        if s["status"] == "running" {
            if let Some(w) = s["workerId"].as_str() {
                return w.to_owned();
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "step {step} not running: {run}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The run completed, every step once, and the log has exactly one completion per step.
pub async fn assert_completed_once(api: &Api, run_id: &str, up: &Upstream, tag: &str) {
    let run = api.wait_settled(run_id, Duration::from_secs(60)).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["output"],
        json!({"tag": format!("{tag}-c"), "ok": true})
    );
    let events = api.events(run_id).await;
    for step in ["a", "b", "c"] {
        let completions = events
            .iter()
            .filter(|e| e["kind"] == "step.completed" && e["stepId"] == step)
            .count();
        assert_eq!(
            completions, 1,
            "step {step} recorded {completions} times: {events:?}"
        );
    }
    let seqs: Vec<i64> = events.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as i64).collect::<Vec<_>>(),
        "gapless log"
    );
    assert_eq!(up.calls_for(&format!("{tag}-a")), 1, "step a ran once");
    assert_eq!(up.calls_for(&format!("{tag}-c")), 1, "step c ran once");
}

pub fn rabbitmqctl(args: &[&str]) {
    let status = Command::new("rabbitmqctl")
        .args(args)
        .stdout(Stdio::null())
        .status()
        .expect("rabbitmqctl");
    assert!(status.success(), "rabbitmqctl {args:?}");
}

/// `scripts/stack.sh <command> <instance>` of this checkout, on the tests' Neo4j instance
/// (`graph-down`, `graph-kill`, `graph-up`: the graph outage and crash tests).
pub fn stack(command: &str) {
    let instance = crate::setting("AIDEN_STACK_GRAPH", Some("test"));
    stack_args(&[command, instance.as_str()]);
}

/// `scripts/stack.sh ARGS…` of this checkout (e.g. `mq-kill 2`), which must succeed.
pub fn stack_args(args: &[&str]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/stack.sh");
    let status = Command::new(script)
        .args(args)
        .status()
        .expect("scripts/stack.sh");
    assert!(status.success(), "scripts/stack.sh {args:?}");
}

/// The environment that puts a spawned `aiden` on the three-node cluster of
/// `scripts/stack.sh cluster-up` / `test-cluster-up` (AMQP 5682-5684), on `vhost`.
pub fn cluster_env(vhost: &str) -> Vec<(&'static str, String)> {
    let uris: Vec<String> = (5682..=5684)
        .map(|port| format!("amqp://guest:guest@127.0.0.1:{port}/{vhost}"))
        .collect();
    vec![
        ("AIDEN_AMQP_URIS", uris.join(",")),
        ("AIDEN_QUEUE_TYPE", "quorum".into()),
    ]
}

/// An agent Process whose model is the scripted model and whose one tool is `define`'s slow
/// call (shown to the model as `slow_call`).
pub async fn define_agent(api: &Api, upstream: &str, model_url: &str, tag: &str) -> String {
    let _ = define(api, upstream, tag, 0).await;
    scripted_model_tool(api, model_url, tag).await;
    let post = |path: &'static str, body: Value| async move {
        let (s, b) = api.call(reqwest::Method::POST, path, Some(body)).await;
        assert_eq!(s, 201, "{path}: {b}");
    };
    let id = format!("agentproc-{tag}");
    post(
        "/v1/processes",
        json!({"id": id, "name": "fault agent", "initialContext": ["question"],
        "steps": [{"id": "answer", "tool": format!("model-{tag}"),
                   "agent": {"tools": [format!("tool-{tag}")]},
                   "inputs": {"message": "{{question}}"}, "output": {"variable": "a"}}],
        "outputTemplate": "{{a.text}}"}),
    )
    .await;
    id
}

/// An `llm_provider` Service `svc-llm-<tag>` and its `llm_call` Tool `model-<tag>` (OpenAI wire)
/// on the scripted model at `model_url`: the Tool's id.
pub async fn scripted_model_tool(api: &Api, model_url: &str, tag: &str) -> String {
    let post = |path: &'static str, body: Value| async move {
        let (s, b) = api.call(reqwest::Method::POST, path, Some(body)).await;
        assert_eq!(s, 201, "{path}: {b}");
    };
    post(
        "/v1/services",
        json!({"id": format!("svc-llm-{tag}"), "name": "scripted model",
        "type": "llm_provider", "protocol": "http", "requiresSecret": false, "enabled": true,
        "connectionSchema": {"type": "object", "required": ["endpoint", "model"],
            "properties": {"endpoint": {"type": "string"}, "model": {"type": "string"}}}}),
    )
    .await;
    post(
        "/v1/tools",
        json!({"id": format!("model-{tag}"), "name": "model",
        "serviceId": format!("svc-llm-{tag}"),
        "connectionParams": {"endpoint": model_url, "model": "scripted"},
        "operation": {"type": "llm_call", "api": "openai", "promptTemplate": "{{message}}"},
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
        "outputSchema": {"type": "object"}, "enabled": true}),
    )
    .await;
    format!("model-{tag}")
}

/// Starts a run of `process` with `{q}` as its input and hands back the raw answer (its status
/// and headers matter under load), or the transport error when there was none within 10 s.
pub async fn start_run_raw(api: &Api, process: &str) -> Result<reqwest::Response, reqwest::Error> {
    api.http
        .request(
            reqwest::Method::POST,
            format!("{}/v1/processes/{process}/runs", api.base),
        )
        .bearer_auth(&api.token)
        .timeout(Duration::from_secs(10))
        .json(&json!({"inputs": {"q": "load"}}))
        .send()
        .await
}
