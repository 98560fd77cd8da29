//! Process execution through the HTTP API, end to end: the in-process engine and
//! worker pools run real jobs over RabbitMQ against a REST upstream served by this test process
//! (one per test, so every call it records belongs to that test), and every state change is
//! read back through the API. Covers EXEC-1..5, PROC-4, PROC-7, PROC-8, TOOL-3, SEC-6 and WRK-1
//! at execution time, and the metrics runs leave; the calls are mostly made by plain users.
//! One file per concern; the fixtures and helpers they share are here.

mod access;
mod children;
mod control;
mod events;
mod forks;
mod jobs;
mod list;
mod metrics;
mod outputs;
mod pacing;
mod retries;
mod steps;
mod warm_up;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiden_jobs::topology::{header, REASON_HEADER, STEP_RUN_HEADER};
use aiden_tests::{fixtures, server, unique, Client};
use axum::{
    body::Bytes,
    extract::{Query, State},
    http::{HeaderMap, Method, StatusCode, Uri},
    response::{IntoResponse, Response},
    Json, Router,
};
use lapin::options::{BasicAckOptions, BasicGetOptions, BasicNackOptions};
use serde_json::{json, Value};

const DLQ: &str = "aiden.dlq.rest_api";

// ---------------------------------------------------------------------------------------------
// The upstream REST API the Tools call.
// ---------------------------------------------------------------------------------------------

/// One request the upstream received.
#[derive(Debug, Clone)]
struct Call {
    route: String,
    method: String,
    query: HashMap<String, String>,
    headers: HashMap<String, String>,
    body: Value,
}

/// One `/hold` request: when it began, when it ended, and whether the caller gave up on it.
#[derive(Debug, Clone)]
struct Hold {
    tag: String,
    start: Instant,
    end: Option<Instant>,
    abandoned: bool,
}

#[derive(Clone, Default)]
struct Upstream {
    calls: Arc<Mutex<Vec<Call>>>,
    scripts: Arc<Mutex<HashMap<String, usize>>>,
    holds: Arc<Mutex<Vec<Hold>>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
}

impl Upstream {
    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
    fn calls_to(&self, route: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.route == route)
            .collect()
    }
    /// Calls whose query parameter `key` equals `value`.
    fn calls_with(&self, key: &str, value: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.query.get(key).map(String::as_str) == Some(value))
            .collect()
    }
    /// Waits (10 s at most) until the `/hold` request tagged `tag` has arrived.
    async fn arrived(&self, tag: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.hold(tag).is_none() {
            assert!(
                Instant::now() < deadline,
                "the held call {tag} never arrived"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    fn hold(&self, tag: &str) -> Option<Hold> {
        self.holds
            .lock()
            .unwrap()
            .iter()
            .find(|h| h.tag == tag)
            .cloned()
    }
}

/// Marks a `/hold` request finished, or abandoned when its future is dropped mid-sleep.
struct HoldGuard {
    up: Upstream,
    index: usize,
    done: bool,
}

impl Drop for HoldGuard {
    fn drop(&mut self) {
        self.up.in_flight.fetch_sub(1, Ordering::SeqCst);
        let mut holds = self.up.holds.lock().unwrap();
        holds[self.index].end = Some(Instant::now());
        holds[self.index].abandoned = !self.done;
    }
}

/// Every route:
/// - `GET /echo?q=` → `{"x": q, "n": 7, "obj": {"k": [1, 2], "s": "deep"}}`
/// - `POST /post?tag=` (JSON body) → `{"tag": tag, "got": body}`
/// - `GET /hold?tag=&ms=` → sleeps `ms`, tracking concurrency → `{"tag": tag, "ms": ms}`
/// - `GET /script?key=&plan=a,b,c` → the n-th call for `key` follows the n-th entry (the last
///   repeats): an HTTP status code, `hang:<ms>` (sleep, then 200), `empty` (200, no body) or
///   `long:<n>` (200, a text body of n characters).
async fn handle(
    State(up): State<Upstream>,
    method: Method,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()))
    };
    let route = uri.path().trim_start_matches('/').to_owned();
    up.calls.lock().unwrap().push(Call {
        route: route.clone(),
        method: method.to_string(),
        query: query.clone(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect(),
        body: body.clone(),
    });
    let q = |k: &str| query.get(k).cloned().unwrap_or_default();
    match route.as_str() {
        "echo" => {
            Json(json!({"x": q("q"), "n": 7, "obj": {"k": [1, 2], "s": "deep"}})).into_response()
        }
        "post" => Json(json!({"tag": q("tag"), "got": body})).into_response(),
        "hold" => {
            let ms: u64 = q("ms").parse().unwrap_or(0);
            let index = {
                let mut holds = up.holds.lock().unwrap();
                holds.push(Hold {
                    tag: q("tag"),
                    start: Instant::now(),
                    end: None,
                    abandoned: false,
                });
                holds.len() - 1
            };
            let now = up.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            up.max_in_flight.fetch_max(now, Ordering::SeqCst);
            let mut guard = HoldGuard {
                up: up.clone(),
                index,
                done: false,
            };
            tokio::time::sleep(Duration::from_millis(ms)).await;
            guard.done = true;
            drop(guard);
            Json(json!({"tag": q("tag"), "ms": ms})).into_response()
        }
        "script" => {
            let n = {
                let mut scripts = up.scripts.lock().unwrap();
                let n = scripts.entry(q("key")).or_insert(0);
                *n += 1;
                *n
            };
            let plan = q("plan");
            let entries: Vec<&str> = plan.split(',').collect();
            let entry = entries[(n - 1).min(entries.len() - 1)];
            if let Some(ms) = entry.strip_prefix("hang:") {
                tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
                return Json(json!({"try": n})).into_response();
            }
            if entry == "empty" {
                return StatusCode::OK.into_response();
            }
            if let Some(len) = entry.strip_prefix("long:") {
                return long_text(len.parse().unwrap()).into_response();
            }
            let code = StatusCode::from_u16(entry.parse().unwrap()).unwrap();
            (code, Json(json!({"try": n, "code": code.as_u16()}))).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `0123456789` repeated to `len` characters.
fn long_text(len: usize) -> String {
    "0123456789".chars().cycle().take(len).collect()
}

async fn upstream() -> (Upstream, String) {
    let up = Upstream::default();
    let app = Router::new().fallback(handle).with_state(up.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (up, format!("http://{addr}"))
}

// ---------------------------------------------------------------------------------------------
// Definitions: a Service on the upstream and its Tools.
// ---------------------------------------------------------------------------------------------

const OUTPUT_SCHEMA: &str = r#"{"type":"object","required":["status","body"],"properties":{"status":{"type":"integer"},"body":{}}}"#;

fn output_schema() -> Value {
    serde_json::from_str(OUTPUT_SCHEMA).unwrap()
}

struct Kit {
    up: Upstream,
    base: String,
    service: String,
    /// `GET /echo?q={{q}}`
    echo: String,
    /// `POST /post?tag={{tag}}` with body `{"n": {{json n}}, "obj": {{json obj}}}`
    post: String,
    /// `GET /hold?tag={{tag}}&ms={{ms}}`
    hold: String,
    /// `GET /script?key={{key}}&plan={{plan}}`
    script: String,
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_owned()
}

/// A Tool on `service`; `vars` are its (string unless typed) required inputs.
async fn tool(
    client: &Client,
    service: &str,
    base: &str,
    operation: Value,
    properties: Value,
    extra: Value,
) -> String {
    let required: Vec<String> = properties.as_object().unwrap().keys().cloned().collect();
    let mut body = json!({"id": unique("tool"), "name": "t", "serviceId": service,
        "connectionParams": {"endpoint": base, "timeoutMs": 10000},
        "operation": operation,
        "inputSchema": {"type": "object", "required": required, "properties": properties},
        "outputSchema": output_schema(), "enabled": true, "shared": false});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    id_of(&fixtures::create(client, "tools", body).await)
}

/// A fresh upstream, a `rest_api` Service on it owned by `client`, and the standard Tools.
async fn kit(client: &Client) -> Kit {
    let (up, base) = upstream().await;
    let service = id_of(
        &fixtures::create(
            client,
            "services",
            json!({"id": unique("svc"), "name": "upstream", "type": "rest_api",
                "protocol": "http", "endpoint": base, "connectionSchema": fixtures::rest_schema(),
                "requiresSecret": false, "enabled": true, "shared": false}),
        )
        .await,
    );
    let s = json!({"type": "string"});
    let echo = tool(
        client,
        &service,
        &base,
        json!({"type": "rest_api", "method": "GET", "path": "/echo?q={{q}}"}),
        json!({"q": s}),
        json!({}),
    )
    .await;
    let post = tool(
        client,
        &service,
        &base,
        json!({"type": "rest_api", "method": "POST", "path": "/post?tag={{tag}}",
               "bodyTemplate": "{\"n\": {{json n}}, \"obj\": {{json obj}}}"}),
        json!({"tag": s, "n": {"type": "integer"}, "obj": {"type": "object"}}),
        json!({}),
    )
    .await;
    let hold = tool(
        client,
        &service,
        &base,
        json!({"type": "rest_api", "method": "GET", "path": "/hold?tag={{tag}}&ms={{ms}}"}),
        json!({"tag": s, "ms": {"type": "integer"}}),
        json!({}),
    )
    .await;
    let script = tool(
        client,
        &service,
        &base,
        json!({"type": "rest_api", "method": "GET", "path": "/script?key={{key}}&plan={{plan}}"}),
        json!({"key": s, "plan": s}),
        json!({}),
    )
    .await;
    Kit {
        up,
        base,
        service,
        echo,
        post,
        hold,
        script,
    }
}

/// The value of the first Prometheus sample named `name` whose labels include all of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .find(|l| labels.iter().all(|x| l.contains(x)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Step `id` calling `tool`; its output variable is the step id.
fn step(tool: &str, id: &str, inputs: Value) -> Value {
    json!({"id": id, "tool": tool, "inputs": inputs, "output": {"variable": id}})
}

/// Creates a Process from `body` (id and name added).
async fn process(client: &Client, body: Value) -> String {
    let mut body = body;
    body["id"] = json!(unique("proc"));
    body["name"] = json!("execution test");
    id_of(&fixtures::create(client, "processes", body).await)
}

/// A Process of one step `step_id` whose call the upstream holds `ms` (`/hold`, tagged `tag`).
async fn hold_process(client: &Client, k: &Kit, step_id: &str, tag: &str, ms: u64) -> String {
    process(
        client,
        json!({"steps": [step(&k.hold, step_id, json!({"tag": tag, "ms": ms}))]}),
    )
    .await
}

/// A Process of two echo steps, `a` then `b`, started once; the run's id.
async fn start_echo_pair(client: &Client, echo: &str) -> String {
    let p = process(
        client,
        json!({"steps": [step(echo, "a", json!({"q": "1"})), step(echo, "b", json!({"q": "2"}))]}),
    )
    .await;
    start(client, &p, json!({})).await
}

async fn start(client: &Client, process: &str, inputs: Value) -> String {
    let r = client
        .post(
            &format!("/v1/processes/{process}/runs"),
            json!({"inputs": inputs}),
        )
        .await;
    let body = r.ok(202);
    assert_eq!(body["status"], "queued", "{body}");
    body["runId"].as_str().unwrap().to_owned()
}

/// The SSE stream read to its end: (the `id:` of each event, its JSON data).
async fn sse(client: &Client, run_id: &str, last_event_id: Option<&str>) -> Vec<(i64, Value)> {
    sse_within(client, run_id, last_event_id, Duration::from_secs(20))
        .await
        .expect("the event stream did not end after the terminal event")
}

/// The SSE stream read to its end, or `None` if it has not ended within `wait`.
async fn sse_within(
    client: &Client,
    run_id: &str,
    last_event_id: Option<&str>,
    wait: Duration,
) -> Option<Vec<(i64, Value)>> {
    let mut req = client.raw(reqwest::Method::GET, &format!("/v1/runs/{run_id}/events"));
    if let Some(l) = last_event_id {
        req = req.header("Last-Event-ID", l);
    }
    let text = tokio::time::timeout(wait, async {
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert!(res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"));
        res.text().await.unwrap()
    })
    .await
    .ok()?;
    aiden_tests::scan::record("sse", &text);
    let mut out = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let field = |name: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_owned())
        };
        let Some(data) = field("data:") else {
            continue; // keep-alive comment
        };
        let id: i64 = field("id:")
            .expect("every event has an id")
            .parse()
            .unwrap();
        let data: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(field("event:").as_deref(), data["kind"].as_str(), "{block}");
        out.push((id, data));
    }
    Some(out)
}

/// `kind` or `kind stepId` of each event, in order.
fn kinds(events: &[(i64, Value)]) -> Vec<String> {
    events
        .iter()
        .map(|(_, e)| match e["stepId"].as_str() {
            Some(s) => format!("{} {s}", e["kind"].as_str().unwrap()),
            None => e["kind"].as_str().unwrap().to_owned(),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// RabbitMQ: the dead-letter queue and hand-made jobs.
// ---------------------------------------------------------------------------------------------

async fn amqp() -> (lapin::Connection, lapin::Channel) {
    let uri = aiden_tests::test_amqp_uri();
    let conn = aiden_jobs::nodes::connect_any(&uri)
        .await
        .expect("RabbitMQ");
    let ch = conn.create_channel().await.unwrap();
    (conn, ch)
}

/// Takes (acks) the dead-lettered message of `step_run_id` from `aiden.dlq.rest_api`, leaving
/// every other message there (nack + requeue); returns its `x-aiden-reason`. Other tests scan
/// the queue too, so this retries for a few seconds.
async fn take_dead_letter(step_run_id: &str) -> Option<String> {
    take_dead_letter_within(step_run_id, Duration::from_secs(10)).await
}

async fn take_dead_letter_within(step_run_id: &str, wait: Duration) -> Option<String> {
    take_dead_letter_message(step_run_id, wait)
        .await
        .map(|(reason, _)| reason)
}

/// The dead-lettered message of `step_run_id`: its reason, and its headers and body as text
/// (also kept for the suite's secrets scan).
async fn take_dead_letter_message(step_run_id: &str, wait: Duration) -> Option<(String, String)> {
    let (_conn, ch) = amqp().await;
    let deadline = Instant::now() + wait;
    loop {
        let mut others = Vec::new();
        let mut found = None;
        for _ in 0..5000 {
            let Some(m) = ch.basic_get(DLQ, BasicGetOptions::default()).await.unwrap() else {
                break;
            };
            let headers = m.delivery.properties.headers().clone();
            if header(headers.as_ref(), STEP_RUN_HEADER).as_deref() == Some(step_run_id) {
                m.delivery
                    .acker
                    .ack(BasicAckOptions::default())
                    .await
                    .unwrap();
                let text = format!("{headers:?} {}", String::from_utf8_lossy(&m.delivery.data));
                aiden_tests::scan::record("dlq", &text);
                found = Some((
                    header(headers.as_ref(), REASON_HEADER).unwrap_or_default(),
                    text,
                ));
                break;
            }
            others.push(m);
        }
        for m in others {
            m.delivery
                .acker
                .nack(BasicNackOptions {
                    requeue: true,
                    ..Default::default()
                })
                .await
                .unwrap();
        }
        if found.is_some() || Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The audit findings (`aiden check`) about these ids.
async fn findings(ids: &[&str]) -> Vec<String> {
    let graph = aiden_graph::Graph::connect(&server().graph)
        .await
        .expect("graph");
    aiden_service::Auditor::new(graph)
        .audit()
        .await
        .expect("audit")
        .into_iter()
        .filter(|f| ids.contains(&f.id.as_str()))
        .map(|f| format!("{} {}", f.invariant, f.id))
        .collect()
}
