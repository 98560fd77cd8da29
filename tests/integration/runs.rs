//! Process execution end to end (issue #3): the in-process engine and worker pools run real
//! jobs over RabbitMQ against a local HTTP upstream, and every state change is read back
//! through the API.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiden_tests::{admin, fixtures, server, step_of, unique, user, Client};
use axum::{
    extract::{Query, State},
    http::StatusCode,
    response::IntoResponse,
    routing::get,
    Json, Router,
};
use lapin::options::{BasicAckOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions};
use serde_json::{json, Value};

type Params = Query<HashMap<String, String>>;

/// A REST upstream recording every request; behaviour by path.
#[derive(Clone, Default)]
struct Upstream {
    seen: Arc<Mutex<Vec<String>>>,
    flaky: Arc<Mutex<HashMap<String, usize>>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
}

impl Upstream {
    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
    fn count(&self, needle: &str) -> usize {
        self.seen().iter().filter(|s| s.contains(needle)).count()
    }
}

async fn echo(State(u): State<Upstream>, Query(q): Params) -> Json<Value> {
    u.seen
        .lock()
        .unwrap()
        .push(format!("echo {}", q.get("v").cloned().unwrap_or_default()));
    Json(json!({"v": q.get("v")}))
}

async fn status(State(u): State<Upstream>, Query(q): Params) -> impl IntoResponse {
    let code: u16 = q.get("code").and_then(|c| c.parse().ok()).unwrap_or(200);
    u.seen.lock().unwrap().push(format!(
        "status {code} {}",
        q.get("tag").cloned().unwrap_or_default()
    ));
    (
        StatusCode::from_u16(code).unwrap(),
        Json(json!({"code": code})),
    )
}

/// 503 for the first two calls per `key`, then 200.
async fn flaky(State(u): State<Upstream>, Query(q): Params) -> impl IntoResponse {
    let key = q.get("key").cloned().unwrap_or_default();
    u.seen.lock().unwrap().push(format!("flaky {key}"));
    let n = {
        let mut f = u.flaky.lock().unwrap();
        let n = f.entry(key).or_insert(0);
        *n += 1;
        *n
    };
    if n <= 2 {
        (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"try": n})))
    } else {
        (StatusCode::OK, Json(json!({"try": n})))
    }
}

async fn slow(State(u): State<Upstream>, Query(q): Params) -> Json<Value> {
    let ms: u64 = q.get("ms").and_then(|m| m.parse().ok()).unwrap_or(0);
    u.seen.lock().unwrap().push(format!(
        "slow {}",
        q.get("tag").cloned().unwrap_or_default()
    ));
    let now = u.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    u.max_in_flight.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    u.in_flight.fetch_sub(1, Ordering::SeqCst);
    Json(json!({"slept": ms}))
}

async fn upstream() -> (Upstream, String) {
    let u = Upstream::default();
    let app = Router::new()
        .route("/echo", get(echo))
        .route("/status", get(status))
        .route("/flaky", get(flaky))
        .route("/slow", get(slow))
        .with_state(u.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (u, format!("http://{addr}"))
}

/// A Service on the upstream plus one Tool per route; returns tool ids by route.
struct Kit {
    up: Upstream,
    tools: HashMap<&'static str, String>,
}

async fn kit(client: &Client) -> Kit {
    let (up, base) = upstream().await;
    let mut body = fixtures::rest_service_body(false);
    body["endpoint"] = json!(base);
    let svc = fixtures::create(client, "services", body).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut tools = HashMap::new();
    for (route, path, vars) in [
        ("echo", "/echo?v={{v}}", vec!["v"]),
        (
            "status",
            "/status?code={{code}}&tag={{tag}}",
            vec!["code", "tag"],
        ),
        ("flaky", "/flaky?key={{key}}", vec!["key"]),
        ("slow", "/slow?ms={{ms}}&tag={{tag}}", vec!["ms", "tag"]),
    ] {
        let props: serde_json::Map<String, Value> = vars
            .iter()
            .map(|v| (v.to_string(), json!({"type": "string"})))
            .collect();
        let tool = json!({"id": unique(route), "name": route, "serviceId": svc,
            "connectionParams": {"endpoint": base, "timeoutMs": 10000},
            "operation": {"type": "rest_api", "method": "GET", "path": path},
            "inputSchema": {"type": "object", "required": vars, "properties": props},
            "outputSchema": {"type": "object", "required": ["status", "body"],
                "properties": {"status": {"type": "integer"}, "body": {}}},
            "enabled": true});
        let id = fixtures::create(client, "tools", tool).await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        tools.insert(route, id);
    }
    Kit { up, tools }
}

fn step(tool: &str, id: &str, inputs: Value) -> Value {
    json!({"id": id, "tool": tool, "inputs": inputs, "output": {"variable": id}})
}

async fn process(client: &Client, body: Value) -> String {
    let mut body = body;
    body["id"] = json!(unique("proc"));
    body["name"] = json!("run test");
    fixtures::create(client, "processes", body).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn start(client: &Client, process: &str, inputs: Value) -> String {
    let r = client
        .post(
            &format!("/v1/processes/{process}/runs"),
            json!({"inputs": inputs}),
        )
        .await;
    r.ok(202)["runId"].as_str().unwrap().to_owned()
}

async fn wait_run(client: &Client, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = client.get(&format!("/v1/runs/{id}")).await.ok(200).clone();
        if matches!(
            run["status"].as_str(),
            Some("completed" | "failed" | "canceled")
        ) {
            return run;
        }
        assert!(Instant::now() < deadline, "run did not settle: {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The whole event log (the stream ends after the terminal event).
async fn events(client: &Client, id: &str, last_event_id: Option<i64>) -> Vec<Value> {
    let mut req = client.raw(reqwest::Method::GET, &format!("/v1/runs/{id}/events"));
    if let Some(l) = last_event_id {
        req = req.header("Last-Event-ID", l.to_string());
    }
    let text = tokio::time::timeout(Duration::from_secs(20), async {
        req.send().await.unwrap().text().await.unwrap()
    })
    .await
    .expect("the event stream did not end");
    let mut out = Vec::new();
    let mut id_line = None;
    for line in text.lines() {
        if let Some(i) = line.strip_prefix("id: ") {
            id_line = Some(i.parse::<i64>().unwrap());
        }
        if let Some(d) = line.strip_prefix("data: ") {
            let e: Value = serde_json::from_str(d).unwrap();
            assert_eq!(
                Some(e["seq"].as_i64().unwrap()),
                id_line,
                "SSE id: is the sequence"
            );
            out.push(e);
        }
    }
    out
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e["stepId"].as_str() {
            Some(s) => format!("{} {s}", e["kind"].as_str().unwrap()),
            None => e["kind"].as_str().unwrap().to_owned(),
        })
        .collect()
}

#[tokio::test]
async fn exec_1_a_sequential_chain_passes_outputs_through_interpolation() {
    let c = admin();
    let k = kit(&c).await;
    let echo = &k.tools["echo"];
    let p = process(
        &c,
        json!({"initialContext": ["q"], "steps": [
        step(echo, "a", json!({"v": "{{q}}"})),
        step(echo, "b", json!({"v": "{{a.body.v}}-b"})),
        step(echo, "c", json!({"v": "{{json b.body}}|{step.q}"})),
    ], "outputTemplate": "{{c.body}}"}),
    )
    .await;
    let id = start(&c, &p, json!({"q": "hello world"})).await;
    let run = wait_run(&c, &id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["output"],
        json!({"v": "{\"v\":\"hello world-b\"}|hello world"})
    );
    assert_eq!(run["depth"], 1);
    for s in run["steps"].as_array().unwrap() {
        assert_eq!(s["status"], "completed");
        assert_eq!(s["attempts"], 1);
        assert!(
            s["workerId"].as_str().unwrap().starts_with("rest_api-"),
            "{s}"
        );
        assert!(s["telemetry"]["latencyMs"].is_u64(), "{s}");
        assert_eq!(s["telemetry"]["retryCount"], 0);
        assert!(s["startedAt"].is_string() && s["finishedAt"].is_string());
    }
    assert_eq!(
        k.up.seen(),
        vec![
            "echo hello world",
            "echo hello world-b",
            "echo {\"v\":\"hello world-b\"}|hello world"
        ]
    );
}

#[tokio::test]
async fn scheduling_parallel_steps_fan_out_and_a_sequential_step_joins_them() {
    let c = admin();
    let k = kit(&c).await;
    let (slow, echo) = (&k.tools["slow"], &k.tools["echo"]);
    let par = |id: &str| {
        json!({"id": id, "tool": slow, "inputs": {"ms": "400", "tag": id},
               "output": {"variable": id}, "execution": {"mode": "parallel"}})
    };
    let p = process(
        &c,
        json!({"steps": [par("p1"), par("p2"),
        step(echo, "join", json!({"v": "{{p1.body.slept}}+{{p2.body.slept}}"}))],
        "outputTemplate": "{{join.body.v}}"}),
    )
    .await;
    let id = start(&c, &p, json!({})).await;
    let run = wait_run(&c, &id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], "400+400");
    assert_eq!(
        k.up.max_in_flight.load(Ordering::SeqCst),
        2,
        "p1 and p2 ran at once"
    );
    let log = kinds(&events(&c, &id, None).await);
    let pos = |k: &str| log.iter().position(|x| x == k).unwrap();
    assert!(
        pos("step.completed p1") < pos("step.queued join"),
        "{log:?}"
    );
    assert!(
        pos("step.completed p2") < pos("step.queued join"),
        "{log:?}"
    );
}

#[tokio::test]
async fn conditions_skip_with_null_and_a_missing_variable_fails_the_step() {
    let c = admin();
    let k = kit(&c).await;
    let echo = &k.tools["echo"];
    let mut skipped = step(echo, "maybe", json!({"v": "never"}));
    skipped["execution"] = json!({"condition": "{{#if go}}yes{{/if}}"});
    let p = process(
        &c,
        json!({"initialContext": ["go"], "steps": [skipped,
        step(echo, "after", json!({"v": "after-{{json maybe}}"}))],
        "outputTemplate": "{{after.body.v}}"}),
    )
    .await;
    let run = wait_run(&c, &start(&c, &p, json!({"go": false})).await).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(step_of(&run, "maybe")["status"], "skipped");
    assert_eq!(run["output"], "after-null");
    assert_eq!(k.up.count("never"), 0);

    // A variable no step provides (only at run time: a nested path that is absent).
    let p = process(
        &c,
        json!({"initialContext": ["obj"], "steps": [
        step(echo, "a", json!({"v": "x{{obj.missing}}"}))]}),
    )
    .await;
    let run = wait_run(&c, &start(&c, &p, json!({"obj": {}})).await).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(step_of(&run, "a")["error"]["code"], "INTERPOLATION_ERROR");
    assert_eq!(run["error"]["code"], "INTERPOLATION_ERROR");
    assert_eq!(k.up.count("echo x"), 0, "never sent with an empty value");
}

#[tokio::test]
async fn exec_3_output_must_match_the_tool_output_schema_and_budgets_cut_it() {
    let c = admin();
    let k = kit(&c).await;
    // A tool whose outputSchema the upstream's answer cannot satisfy.
    let mut tool = c
        .get(&format!("/v1/tools/{}", k.tools["echo"]))
        .await
        .ok(200)
        .clone();
    let strict = unique("strict");
    for key in [
        "revision",
        "status",
        "createdAt",
        "updatedAt",
        "ownerId",
        "lastHealthCheck",
        "errorMessage",
        "toolTemplateId",
        "secretId",
        "secretScope",
        "description",
    ] {
        tool.as_object_mut().unwrap().remove(key);
    }
    tool["id"] = json!(strict);
    tool["outputSchema"] = json!({"type": "object", "required": ["status", "body"],
        "properties": {"body": {"type": "object", "required": ["never"]}}});
    c.post("/v1/tools", tool).await.ok(201);
    let p = process(
        &c,
        json!({"steps": [step(&strict, "a", json!({"v": "x"}))]}),
    )
    .await;
    let run = wait_run(&c, &start(&c, &p, json!({})).await).await;
    assert_eq!(run["status"], "failed");
    assert_eq!(
        step_of(&run, "a")["error"]["code"],
        "OUTPUT_INVALID",
        "{run}"
    );

    let mut budgeted = step(&k.tools["echo"], "a", json!({"v": "{{long}}"}));
    budgeted["output"] = json!({"variable": "a", "required": true, "tokenBudget": 5});
    let p = process(
        &c,
        json!({"initialContext": ["long"], "steps": [budgeted],
        "outputTemplate": "{{a}}"}),
    )
    .await;
    let long = "y".repeat(400);
    let run = wait_run(&c, &start(&c, &p, json!({"long": long})).await).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(step_of(&run, "a")["telemetry"]["truncated"], true);
    // Cut as far as the object's own keys allow: the 400-character value is gone.
    let out = run["output"].to_string();
    assert!(!out.contains(&"y".repeat(20)) && out.len() < 40, "{out}");
}

#[tokio::test]
async fn exec_4_retryable_failures_are_retried_with_backoff_until_they_succeed() {
    let c = admin();
    let k = kit(&c).await;
    let key = unique("k");
    let p = process(
        &c,
        json!({"steps": [step(&k.tools["flaky"], "a", json!({"key": key}))]}),
    )
    .await;
    let id = start(&c, &p, json!({})).await;
    let run = wait_run(&c, &id).await;
    assert_eq!(run["status"], "completed", "{run}");
    let a = step_of(&run, "a");
    assert_eq!(a["attempts"], 3);
    assert_eq!(a["telemetry"]["retryCount"], 2);
    assert_eq!(k.up.count(&key), 3);
    let log = events(&c, &id, None).await;
    let retries: Vec<&Value> = log
        .iter()
        .filter(|e| e["kind"] == "step.retrying")
        .collect();
    assert_eq!(retries.len(), 2, "{log:?}");
    assert_eq!(retries[0]["data"]["error"]["code"], "UPSTREAM_ERROR");
    assert_eq!(
        retries[1]["data"]["delayMs"], 200,
        "exponential: 100 ms, then 200 ms"
    );
}

/// Finds (and removes) the dead-lettered job of `step_run_id`; returns its reason header.
async fn dead_letter_reason(step_run_id: &str) -> Option<String> {
    let amqp = aiden_tests::test_amqp_uri();
    let conn = lapin::Connection::connect(&amqp, Default::default())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    let mut found = None;
    let mut others = Vec::new();
    for _ in 0..500 {
        let Some(m) = ch
            .basic_get("aiden.dlq.rest_api", BasicGetOptions::default())
            .await
            .unwrap()
        else {
            break;
        };
        let headers = m.delivery.properties.headers().clone();
        let step = aiden_jobs::topology::header(headers.as_ref(), "x-aiden-step-run-id");
        if step.as_deref() == Some(step_run_id) {
            found = aiden_jobs::topology::header(headers.as_ref(), "x-aiden-reason");
            m.delivery
                .acker
                .ack(BasicAckOptions::default())
                .await
                .unwrap();
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
    found
}

#[tokio::test]
async fn exec_4_exhausted_and_permanent_failures_are_dead_lettered_with_the_reason() {
    let c = admin();
    let k = kit(&c).await;
    let st = &k.tools["status"];
    let tag = unique("t");
    let p = process(
        &c,
        json!({"steps": [step(st, "a", json!({"code": "500", "tag": tag}))]}),
    )
    .await;
    let id = start(&c, &p, json!({})).await;
    let run = wait_run(&c, &id).await;
    assert_eq!(run["status"], "failed");
    let a = step_of(&run, "a");
    assert_eq!(a["attempts"], 3, "{a}");
    assert_eq!(a["error"]["code"], "UPSTREAM_ERROR");
    assert_eq!(k.up.count(&tag), 3);
    let reason = dead_letter_reason(&format!("{id}/a"))
        .await
        .expect("job in aiden.dlq.rest_api");
    assert!(reason.starts_with("UPSTREAM_ERROR"), "{reason}");

    let tag = unique("t");
    let p = process(
        &c,
        json!({"steps": [step(st, "a", json!({"code": "404", "tag": tag}))]}),
    )
    .await;
    let id = start(&c, &p, json!({})).await;
    let run = wait_run(&c, &id).await;
    let a = step_of(&run, "a");
    assert_eq!(
        (a["attempts"].as_u64(), a["error"]["code"].as_str()),
        (Some(1), Some("INVALID_REQUEST"))
    );
    assert_eq!(k.up.count(&tag), 1, "a permanent failure is not retried");
    assert!(dead_letter_reason(&format!("{id}/a"))
        .await
        .unwrap()
        .contains("HTTP 404"));
}

#[tokio::test]
async fn proc_7_a_called_process_runs_as_a_child_run_within_the_depth_limit() {
    let c = admin();
    let k = kit(&c).await;
    let child = process(&c, json!({"initialContext": ["x"], "steps": [
        step(&k.tools["echo"], "e", json!({"v": "child-{{x}}"}))], "outputTemplate": "{{e.body.v}}"})).await;
    let parent = process(
        &c,
        json!({"steps": [
        {"id": "call", "process": child, "inputs": {"x": "42"}, "output": {"variable": "r"}}],
        "outputTemplate": "{{r}}", "maxRecursionDepth": 2}),
    )
    .await;
    let id = start(&c, &parent, json!({})).await;
    let run = wait_run(&c, &id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], "child-42");
    let child_id = step_of(&run, "call")["childRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    let child_run = c.get(&format!("/v1/runs/{child_id}")).await.ok(200).clone();
    assert_eq!(child_run["parentRunId"], id);
    assert_eq!(child_run["depth"], 2);
    assert_eq!(child_run["processId"], child);

    // A callee that later grows its own call chain: the caller's maxRecursionDepth still
    // bounds the whole chain at run time (the static check only saw the callee as it was).
    let leaf = process(
        &c,
        json!({"steps": [step(&k.tools["echo"], "e", json!({"v": "leaf"}))],
        "outputTemplate": "{{e.body.v}}"}),
    )
    .await;
    let middle = process(
        &c,
        json!({"steps": [step(&k.tools["echo"], "e", json!({"v": "m"}))],
        "outputTemplate": "{{e.body.v}}"}),
    )
    .await;
    let top = process(
        &c,
        json!({"steps": [
        {"id": "call", "process": middle, "inputs": {}, "output": {"variable": "r"}}],
        "maxRecursionDepth": 2}),
    )
    .await;
    c.patch(
        &format!("/v1/processes/{middle}"),
        json!({"steps": [
        {"id": "call", "process": leaf, "inputs": {}, "output": {"variable": "r"}}],
        "outputTemplate": "{{r}}"}),
    )
    .await
    .ok(200);
    let run = wait_run(&c, &start(&c, &top, json!({})).await).await;
    assert_eq!(run["status"], "failed", "{run}");
    let middle_run = step_of(&run, "call")["childRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    let middle_run = c
        .get(&format!("/v1/runs/{middle_run}"))
        .await
        .ok(200)
        .clone();
    assert_eq!(
        step_of(&middle_run, "call")["error"]["code"],
        "PROC-7",
        "{middle_run}"
    );
}

#[tokio::test]
async fn proc_8_a_disabled_tool_fails_its_step_at_execution() {
    let c = admin();
    let k = kit(&c).await;
    let echo = &k.tools["echo"];
    let p = process(&c, json!({"steps": [step(echo, "a", json!({"v": "x"}))]})).await;
    c.patch(&format!("/v1/tools/{echo}"), json!({"enabled": false}))
        .await
        .ok(200);
    let run = wait_run(&c, &start(&c, &p, json!({})).await).await;
    c.patch(&format!("/v1/tools/{echo}"), json!({"enabled": true}))
        .await
        .ok(200);
    assert_eq!(run["status"], "failed");
    assert_eq!(step_of(&run, "a")["error"]["code"], "PROC-8", "{run}");
    assert_eq!(k.up.count("echo x"), 0);
}

#[tokio::test]
async fn cancel_stops_pending_work_and_settles_the_run() {
    let c = admin();
    let k = kit(&c).await;
    let tag = unique("c");
    let p = process(
        &c,
        json!({"steps": [
        step(&k.tools["slow"], "wait", json!({"ms": "3000", "tag": tag})),
        step(&k.tools["echo"], "later", json!({"v": tag}))]}),
    )
    .await;
    let id = start(&c, &p, json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while k.up.count(&tag) == 0 {
        assert!(Instant::now() < deadline, "the slow step never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    c.post(&format!("/v1/runs/{id}/cancel"), json!({}))
        .await
        .ok(202);
    let run = wait_run(&c, &id).await;
    assert_eq!(run["status"], "canceled", "{run}");
    assert_eq!(step_of(&run, "wait")["status"], "canceled");
    assert_eq!(step_of(&run, "later")["status"], "canceled");
    let log = kinds(&events(&c, &id, None).await);
    assert_eq!(log.last().unwrap(), "run.canceled");
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(
        k.up.count(&format!("echo {tag}")),
        0,
        "pending work never started"
    );
    let after = wait_run(&c, &id).await;
    assert_eq!(after["status"], "canceled", "a late result changes nothing");
}

#[tokio::test]
async fn idempotency_key_returns_the_same_run_per_caller() {
    let c = admin();
    let k = kit(&c).await;
    let mut body = json!({"steps": [step(&k.tools["echo"], "a", json!({"v": "i"}))]});
    body["shared"] = json!(true);
    let p = process(&c, body).await;
    let key = unique("key");
    let path = format!("/v1/processes/{p}/runs");
    let send = |client: &Client, key: String| {
        let path = path.clone();
        let client = Client::new(&client.id, &client.token);
        async move {
            let r = client
                .send(
                    reqwest::Method::POST,
                    &path,
                    Some(&json!({"inputs": {}})),
                    &[("Idempotency-Key", key.as_str())],
                )
                .await;
            r.ok(202)["runId"].as_str().unwrap().to_owned()
        }
    };
    let first = send(&c, key.clone()).await;
    assert_eq!(send(&c, key.clone()).await, first);
    assert_ne!(send(&c, unique("other")).await, first);
    let someone = user().await;
    assert_ne!(send(&someone, key.clone()).await, first);
    wait_run(&c, &first).await;
}

#[tokio::test]
async fn exec_5_events_are_ordered_gapless_and_resume_after_last_event_id() {
    let c = admin();
    let k = kit(&c).await;
    let p = process(
        &c,
        json!({"steps": [step(&k.tools["echo"], "a", json!({"v": "e1"})),
        step(&k.tools["echo"], "b", json!({"v": "e2"}))]}),
    )
    .await;
    let id = start(&c, &p, json!({})).await;
    // Subscribe before it finishes: the stream delivers live events and ends by itself.
    let all = events(&c, &id, None).await;
    let seqs: Vec<i64> = all.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, (1..=all.len() as i64).collect::<Vec<_>>());
    assert_eq!(
        kinds(&all),
        vec![
            "run.started",
            "step.queued a",
            "step.started a",
            "step.completed a",
            "step.queued b",
            "step.started b",
            "step.completed b",
            "run.completed"
        ]
    );
    let resumed = events(&c, &id, Some(3)).await;
    assert_eq!(resumed.first().unwrap()["seq"], 4);
    assert_eq!(resumed.len(), all.len() - 3);
}

#[tokio::test]
async fn exec_2_a_duplicated_job_never_records_a_second_result() {
    let c = admin();
    let k = kit(&c).await;
    let tag = unique("dup");
    let p = process(
        &c,
        json!({"steps": [step(&k.tools["echo"], "a", json!({"v": tag}))]}),
    )
    .await;
    let id = start(&c, &p, json!({})).await;
    let run = wait_run(&c, &id).await;
    assert_eq!(run["status"], "completed");
    let before = events(&c, &id, None).await;

    let job = json!({"v": 1, "runId": id, "stepId": "a", "stepRunId": format!("{id}/a"),
        "operationType": "rest_api", "attempt": 1, "maxAttempts": 3, "toolId": k.tools["echo"],
        "ownerId": "admin", "inputs": {"v": "{{v}}"}, "variables": {"v": tag}, "timeoutMs": 5000,
        "deadlineMs": i64::MAX, "redispatch": true});
    let amqp = aiden_tests::test_amqp_uri();
    let conn = lapin::Connection::connect(&amqp, Default::default())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    ch.basic_publish(
        "aiden.jobs",
        "rest_api",
        BasicPublishOptions::default(),
        job.to_string().as_bytes(),
        Default::default(),
    )
    .await
    .unwrap();
    // A poison message for the same step: dead-lettered with the reason, nothing recorded.
    let mut headers = lapin::types::FieldTable::default();
    headers.insert("x-aiden-run-id".into(), aiden_jobs::topology::text(&id));
    headers.insert(
        "x-aiden-step-run-id".into(),
        aiden_jobs::topology::text(&format!("{id}/a")),
    );
    ch.basic_publish(
        "aiden.jobs",
        "rest_api",
        BasicPublishOptions::default(),
        b"{not json",
        lapin::BasicProperties::default().with_headers(headers),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;

    assert_eq!(k.up.count(&tag), 1, "the settled step was not re-run");
    assert_eq!(
        events(&c, &id, None).await,
        before,
        "no second result, no new event"
    );
    let reason = dead_letter_reason(&format!("{id}/a"))
        .await
        .expect("poison in the DLQ");
    assert!(reason.starts_with("malformed job"), "{reason}");
}

#[tokio::test]
async fn wrk_1_workers_list_their_type_status_and_current_job() {
    server();
    let c = admin();
    let deadline = Instant::now() + Duration::from_secs(10);
    let items = loop {
        let items = c.get("/v1/workers").await.ok(200)["items"]
            .as_array()
            .unwrap()
            .clone();
        let types: Vec<&str> = items
            .iter()
            .filter(|w| w["status"] != "offline")
            .filter_map(|w| w["type"].as_str())
            .collect();
        if aiden_jobs::OPERATION_TYPES
            .iter()
            .all(|t| types.contains(t))
        {
            break items;
        }
        assert!(
            Instant::now() < deadline,
            "not every pool heartbeated: {items:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for w in &items {
        let status = w["status"].as_str().unwrap();
        assert!(["idle", "busy", "offline"].contains(&status), "{w}");
        if status != "offline" {
            assert_eq!(w["currentJobId"].is_null(), status == "idle", "WRK-1: {w}");
        }
        assert!(
            w["lastHeartbeat"].is_string() && w["processedCount"].is_u64(),
            "{w}"
        );
    }
}

#[tokio::test]
async fn runs_are_private_and_bad_starts_are_refused() {
    let c = admin();
    let k = kit(&c).await;
    let p = process(
        &c,
        json!({"initialContext": ["q"], "steps": [
        step(&k.tools["echo"], "a", json!({"v": "{{q}}"}))]}),
    )
    .await;
    let id = start(&c, &p, json!({"q": "private"})).await;
    let other = user().await;
    assert_eq!(other.get(&format!("/v1/runs/{id}")).await.status, 404);
    assert_eq!(
        other
            .post(&format!("/v1/runs/{id}/cancel"), json!({}))
            .await
            .status,
        404
    );
    assert_eq!(
        other.get(&format!("/v1/runs/{id}/events")).await.status,
        404
    );
    // The process is not shared: invisible to the other user.
    assert_eq!(
        other
            .post(
                &format!("/v1/processes/{p}/runs"),
                json!({"inputs": {"q": "x"}})
            )
            .await
            .status,
        404
    );
    assert_eq!(
        c.post("/v1/processes/no-such-process/runs", json!({"inputs": {}}))
            .await
            .status,
        404
    );
    let r = c
        .post(&format!("/v1/processes/{p}/runs"), json!({"inputs": {}}))
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    c.patch(&format!("/v1/processes/{p}"), json!({"enabled": false}))
        .await
        .ok(200);
    c.post(
        &format!("/v1/processes/{p}/runs"),
        json!({"inputs": {"q": "x"}}),
    )
    .await
    .rejects(422, "PROC-8");
    wait_run(&c, &id).await;
    // The event stream of a missing run is a 404 too, before any streaming.
    let missing = c
        .raw(reqwest::Method::GET, "/v1/runs/nope/events")
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

/// The value of the first Prometheus sample named `name` whose labels include all of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .find(|l| labels.iter().all(|x| l.contains(x)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Operations (issue #12): `/metrics` is the Prometheus exporter's rendering of what the API,
/// the engine and the worker pools recorded through the `metrics` facade: requests by route
/// template (never by id), runs started and settled by outcome, step latency by operation type,
/// Tool and outcome, engine passes, broker publishes.
#[tokio::test]
async fn metrics_count_requests_by_route_runs_by_outcome_and_steps_by_tool() {
    let c = admin();
    let k = kit(&c).await;
    let echo = &k.tools["echo"];
    let p = process(
        &c,
        json!({"initialContext": ["q"], "steps": [step(echo, "a", json!({"v": "{{q}}"}))],
               "outputTemplate": "{{a.body}}"}),
    )
    .await;
    let id = start(&c, &p, json!({"q": "m"})).await;
    assert_eq!(wait_run(&c, &id).await["status"], "completed");
    let r = c.get("/metrics").await;
    let text = r.body.as_str().unwrap_or_default().to_owned();
    let route = r#"route="/v1/processes/{id}/runs""#;
    assert!(
        sample(
            &text,
            "aiden_http_request_duration_seconds_count",
            &[route, r#"status="202""#]
        )
        .is_some_and(|n| n >= 1.0),
        "requests by route template: {text}"
    );
    assert!(
        !text.contains(&format!("/v1/runs/{id}")),
        "no per-id series"
    );
    let tool = format!(r#"tool="{echo}""#);
    assert_eq!(
        sample(
            &text,
            "aiden_step_duration_seconds_count",
            &[r#"type="rest_api""#, &tool, r#"outcome="completed""#]
        ),
        Some(1.0),
        "one completed step of this Tool: {text}"
    );
    for (name, labels) in [
        ("aiden_runs_started_total", vec![]),
        ("aiden_runs_settled_total", vec![r#"outcome="completed""#]),
        ("aiden_engine_pass_seconds_count", vec![]),
        ("aiden_engine_pass_messages_count", vec![]),
        ("aiden_broker_publish_seconds_count", vec![]),
    ] {
        assert!(
            sample(&text, name, &labels).is_some_and(|n| n >= 1.0),
            "{name} {labels:?} missing: {text}"
        );
    }
    assert!(text.contains("# TYPE aiden_step_duration_seconds histogram"));
}
