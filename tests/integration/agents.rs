//! Agents that use Tools, end to end on the real Bolt server and RabbitMQ: an agent
//! step's loop against a scripted model that speaks the OpenAI chat-completions and Anthropic
//! Messages wire formats with tool calls, and REST tools on a local upstream that counts calls.
//!
//! The scripted model (`aiden_tests::scripted_model`) reads its script from the user message.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aiden_tests::scripted_model::{self, Model};
use aiden_tests::{aiden_graph_query, fixtures, graph_rows, step_of as step, unique, user, Client};
use axum::{
    extract::{Query, State},
    routing::get,
    Json, Router,
};
use reqwest::Method;
use serde_json::{json, Value};

mod budgets;
mod routing;
mod usage;

#[derive(Clone, Default)]
pub(crate) struct Upstream {
    calls: Arc<Mutex<Vec<String>>>,
}

type Params = Query<HashMap<String, String>>;

async fn search(State(u): State<Upstream>, Query(p): Params) -> Json<Value> {
    let q = p.get("q").cloned().unwrap_or_default();
    u.calls.lock().unwrap().push(format!("search:{q}"));
    Json(json!({"result": format!("sunny in {q}")}))
}

async fn slow(Query(p): Params) -> Json<Value> {
    let ms = p.get("ms").and_then(|m| m.parse().ok()).unwrap_or(0);
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    Json(json!({"slept": ms}))
}

async fn clock(State(u): State<Upstream>, Query(p): Params) -> Json<Value> {
    let zone = p.get("zone").cloned().unwrap_or_default();
    u.calls.lock().unwrap().push(format!("clock:{zone}"));
    Json(json!({"time": format!("12:00 {zone}")}))
}

pub(crate) async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// One user's agent kit: the scripted model as an llm_call Tool (per API), two REST tools and
/// a third that is disabled.
pub(crate) struct Kit {
    u: Client,
    model: Model,
    up: Upstream,
    openai: String,
    anthropic: String,
    /// The scripted model (OpenAI API) under a model name the test server prices (AGT-14).
    priced: String,
    search: String,
    clock: String,
    disabled: String,
    /// `/slow?ms=`: sleeps.
    sleeper: String,
}

impl Kit {
    fn calls(&self, prefix: &str) -> usize {
        self.up
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.starts_with(prefix))
            .count()
    }

    fn requests(&self) -> Vec<Value> {
        self.model.requests()
    }
}

pub(crate) fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

pub(crate) async fn kit() -> Kit {
    kit_for(user().await).await
}

pub(crate) async fn kit_for(u: Client) -> Kit {
    let (model, base) = scripted_model::start().await;
    let up = Upstream::default();
    let tools_base = serve(
        Router::new()
            .route("/search", get(search))
            .route("/clock", get(clock))
            .route("/slow", get(slow))
            .with_state(up.clone()),
    )
    .await;
    let secret = fixtures::secret(&u, "sk-agent-test").await;
    let llm_svc = id(&fixtures::create(
        &u,
        "services",
        json!({"id": unique("svc"), "name": "LLM",
        "type": "llm_provider", "protocol": "http", "requiresSecret": true, "enabled": true,
        "connectionSchema": {"type": "object", "required": ["endpoint", "model"], "properties": {
            "endpoint": {"type": "string"}, "model": {"type": "string"}}}}),
    )
    .await);
    let llm = |api: &str, model: &str| {
        json!({"id": unique("model"), "name": "model", "serviceId": llm_svc, "secretId": secret,
               "connectionParams": {"endpoint": base, "model": model},
               "operation": {"type": "llm_call", "api": api, "promptTemplate": "{{message}}"},
               "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
               "outputSchema": {"type": "object"}})
    };
    let openai = id(&fixtures::create(&u, "tools", llm("openai", "scripted")).await);
    let anthropic = id(&fixtures::create(&u, "tools", llm("anthropic", "scripted")).await);
    let priced = id(&fixtures::create(&u, "tools", llm("openai", aiden_tests::PRICED_MODEL)).await);
    let svc = fixtures::rest_service(&u, false).await;
    let rest = |name: &str, path: &str, field: &str| {
        json!({"id": unique("tool"), "name": name, "description": format!("the {name} tool"),
               "serviceId": svc, "connectionParams": {"endpoint": tools_base},
               "operation": {"type": "rest_api", "method": "GET", "path": path},
               "inputSchema": {"type": "object", "required": [field], "additionalProperties": false,
                               "properties": {field: {"type": "string"}}},
               "outputSchema": {"type": "object"}})
    };
    let search = id(&fixtures::create(&u, "tools", rest("search", "/search?q={{q}}", "q")).await);
    let clock =
        id(&fixtures::create(&u, "tools", rest("clock", "/clock?zone={{zone}}", "zone")).await);
    let disabled = id(&fixtures::create(
        &u,
        "tools",
        rest("secret_search", "/search?q=secret-{{q}}", "q"),
    )
    .await);
    let sleeper = id(&fixtures::create(&u, "tools", rest("sleep", "/slow?ms={{ms}}", "ms")).await);
    Kit {
        u,
        model,
        up,
        openai,
        anthropic,
        priced,
        search,
        clock,
        disabled,
        sleeper,
    }
}

/// An agent Process: one agent step over `tools`, answering `{{question}}`.
pub(crate) async fn agent_process(k: &Kit, model: &str, tools: &[&str], caps: Value) -> String {
    let mut agent = json!({"tools": tools, "systemPrompt": "You are the test agent."});
    for (key, v) in caps.as_object().unwrap() {
        agent[key] = v.clone();
    }
    id(&fixtures::create(
        &k.u,
        "processes",
        json!({"id": unique("agent"), "name": "agent",
        "initialContext": ["question"],
        "steps": [{"id": "answer", "tool": model, "agent": agent,
                   "inputs": {"message": "{{question}}"}, "output": {"variable": "a"}}],
        "outputTemplate": "{{a.text}}"}),
    )
    .await)
}

pub(crate) async fn run(k: &Kit, process: &str, script: Value) -> Value {
    let question = format!("script:{script}");
    let run = k.u.start_run(process, json!({"question": question})).await;
    k.u.settled_run(&run).await
}

pub(crate) async fn events(u: &Client, run: &str) -> Vec<Value> {
    let text = u
        .raw(Method::GET, &format!("/v1/runs/{run}/events"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    aiden_tests::scan::record("sse", &text);
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// AGT-4 / AGT-5: two tools over three model turns end with the right answer; each model turn
/// and tool call is a step run of its own, on its Tool's pool, in the run graph.
#[tokio::test]
async fn agt_4_5_two_tools_over_three_iterations_answer_with_every_call_in_the_run_graph() {
    let k = kit().await;
    k.u.patch(
        &format!("/v1/tools/{}", k.disabled),
        json!({"enabled": false}),
    )
    .await
    .ok(200);
    let p = agent_process(
        &k,
        &k.openai,
        &[&k.search, &k.clock, &k.disabled],
        json!({}),
    )
    .await;
    let script = json!([{"calls": [{"name": "search", "args": {"q": "kigali"}}]},
                        {"calls": [{"name": "clock", "args": {"zone": "CAT"}}]},
                        {"answer": "done"}]);
    let r = run(&k, &p, script).await;
    assert_eq!(r["status"], "completed", "{r}");
    let text = r["output"].as_str().unwrap();
    assert!(text.starts_with("done | "), "{text}");
    assert!(
        text.contains("sunny in kigali") && text.contains("12:00 CAT"),
        "{text}"
    );
    assert_eq!((k.calls("search:"), k.calls("clock:")), (1, 1));
    for (s, kind) in [
        ("answer#m1", "m"),
        ("answer#t2", "t"),
        ("answer#m3", "m"),
        ("answer#t4", "t"),
        ("answer#m5", "m"),
    ] {
        assert_eq!(step(&r, s)["status"], "completed", "{s} ({kind}) in {r}");
    }
    let answer = step(&r, "answer");
    assert_eq!(answer["output"]["finishReason"], "complete");
    assert_eq!(answer["output"]["iterations"], 3);
    assert_eq!(answer["output"]["toolCalls"], 2);
    // The prompt: the immutable core first, the governed prompt next, the guardrail last; the
    // disabled tool is never offered (AGT-3's gate).
    let reqs = k.requests();
    assert_eq!(reqs.len(), 3);
    let first = &reqs[0];
    let roles: Vec<&str> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "system", "user", "system"]);
    assert!(first["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("ABSOLUTE RULES"));
    assert_eq!(first["messages"][1]["content"], "You are the test agent.");
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["search", "clock"]);
    assert_eq!(
        first["tools"][0]["function"]["parameters"]["required"],
        json!(["q"])
    );
    // The third turn reads both results, each answering its own call id.
    let third = reqs[2]["messages"].as_array().unwrap();
    let tool_ids: Vec<&str> = third
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(tool_ids, ["call_0_0", "call_1_0"]);
    // The events name every request; the policy's refusal of the disabled tool is recorded.
    let ev = events(&k.u, r["id"].as_str().unwrap()).await;
    let requested: Vec<&str> = ev
        .iter()
        .filter(|e| e["kind"] == "tool.requested")
        .map(|e| {
            e["data"]["tool"]
                .as_str()
                .unwrap_or_else(|| e["tool"].as_str().unwrap())
        })
        .collect();
    assert_eq!(requested, ["search", "clock"], "{ev:?}");
    assert!(ev.iter().any(|e| e["kind"] == "tool.refused"), "{ev:?}");
    // The graph: the agent's step run HAS_CALL five step runs, each INVOKES_TOOL what it called.
    let calls: Vec<Value> = graph_rows(
        aiden_graph_query(
            "MATCH (:StepRun {id: $sr})-[h:HAS_CALL]->(c:StepRun)-[:INVOKES_TOOL]->(t:Tool)
             RETURN c.stepId AS step, c.kind AS kind, t.id AS tool, c.status AS status ORDER BY h.order",
        )
        .param("sr", format!("{}/answer", r["id"].as_str().unwrap())),
    )
    .await;
    let want = vec![
        json!({"step": "answer#m1", "kind": "model", "tool": k.openai, "status": "completed"}),
        json!({"step": "answer#t2", "kind": "tool", "tool": k.search, "status": "completed"}),
        json!({"step": "answer#m3", "kind": "model", "tool": k.openai, "status": "completed"}),
        json!({"step": "answer#t4", "kind": "tool", "tool": k.clock, "status": "completed"}),
        json!({"step": "answer#m5", "kind": "model", "tool": k.openai, "status": "completed"}),
    ];
    assert_eq!(calls, want);
}

/// AGT-3 / AGT-6: a forbidden tool the model asks for anyway, and arguments that do not match
/// a tool's inputSchema, are refused without running and returned to the model as errors
/// (here over the Anthropic wire format).
#[tokio::test]
async fn agt_3_6_forbidden_tools_and_bad_arguments_are_refused_and_never_run() {
    let k = kit().await;
    k.u.patch(
        &format!("/v1/tools/{}", k.disabled),
        json!({"enabled": false}),
    )
    .await
    .ok(200);
    let p = agent_process(&k, &k.anthropic, &[&k.search, &k.disabled], json!({})).await;
    let script = json!([{"calls": [{"name": "secret_search", "args": {"q": "x"}},
                                   {"name": "search", "args": {"query": "wrong field"}}]},
                        {"answer": "gave up"}]);
    let r = run(&k, &p, script).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(
        k.calls(""),
        0,
        "nothing ran: {:?}",
        k.up.calls.lock().unwrap()
    );
    let text = r["output"].as_str().unwrap();
    assert!(
        text.contains("TOOL_FORBIDDEN") && text.contains("INPUT_INVALID"),
        "{text}"
    );
    let ev = events(&k.u, r["id"].as_str().unwrap()).await;
    let refused: Vec<String> = ev
        .iter()
        .filter(|e| e["kind"] == "tool.refused")
        .map(|e| {
            e["data"]["code"]
                .as_str()
                .or(e["code"].as_str())
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        refused,
        ["TOOL_FORBIDDEN", "TOOL_FORBIDDEN", "INPUT_INVALID"],
        "{ev:?}"
    );
    // Anthropic got the refusals as tool_result blocks answering its tool_use ids.
    let second = &k.requests()[1];
    let results: Vec<String> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["tool_use_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results, ["toolu_0_0", "toolu_0_1"]);
    assert!(second["system"]
        .as_str()
        .unwrap()
        .starts_with("You are an AI assistant"));
    assert_eq!(step(&r, "answer")["output"]["toolCalls"], 0);
}

/// AGT-7: the caps end the loop with the best answer so far and a recorded reason, never a
/// hang: maxIterations across turns, maxToolCalls within one turn.
#[tokio::test]
async fn agt_7_iteration_and_tool_call_caps_hold() {
    let k = kit().await;
    let looping = json!([{"calls": [{"name": "search", "args": {"q": "a"}}]},
                         {"calls": [{"name": "search", "args": {"q": "b"}}]},
                         {"calls": [{"name": "search", "args": {"q": "c"}}]},
                         {"answer": "never"}]);
    let p = agent_process(&k, &k.openai, &[&k.search], json!({"maxIterations": 2})).await;
    let r = run(&k, &p, looping).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(
        step(&r, "answer")["output"]["finishReason"],
        "iteration_limit",
        "{r}"
    );
    assert_eq!(
        k.calls("search:"),
        1,
        "the second turn's call is not run: no turn could read it"
    );
    let wide = json!([{"calls": [{"name": "search", "args": {"q": "x"}}, {"name": "search", "args": {"q": "y"}}]},
                      {"answer": "never"}]);
    let p = agent_process(&k, &k.openai, &[&k.search], json!({"maxToolCalls": 1})).await;
    let r = run(&k, &p, wide).await;
    assert_eq!(r["status"], "completed", "{r}");
    let out = &step(&r, "answer")["output"];
    assert_eq!(out["finishReason"], "tool_call_limit", "{r}");
    assert_eq!(out["toolCalls"], 1);
    // The loop ends as soon as the second call meets the cap, while the first is dispatched in
    // the same pass: whether it reaches the upstream before its settled run's cancel does is a
    // race (on Neo4j's slower commit it sometimes loses). The second never runs.
    assert!(k.calls("search:x") <= 1);
    assert_eq!(k.calls("search:y"), 0);
}

/// AGT-1 / AGT-2: an agent step's model must be an llm_call Tool given a `message`, and its
/// tools must exist and be usable by the owner; caps stay in bounds (400).
#[tokio::test]
async fn agt_1_2_agent_steps_are_checked_when_defined() {
    let k = kit().await;
    let other = user().await;
    let mut private = fixtures::rest_tool_body(&fixtures::rest_service(&other, false).await);
    private["shared"] = json!(false);
    let foreign = id(&fixtures::create(&other, "tools", private).await);
    let body = |model: &str, tools: Vec<&str>, inputs: Value, agent_extra: Value| {
        let mut agent = json!({"tools": tools});
        for (key, v) in agent_extra.as_object().unwrap() {
            agent[key] = v.clone();
        }
        json!({"id": unique("agent"), "name": "a", "initialContext": ["question"],
               "steps": [{"id": "answer", "tool": model, "agent": agent, "inputs": inputs}]})
    };
    let msg = json!({"message": "{{question}}"});
    k.u.post(
        "/v1/processes",
        body(&k.search, vec![], msg.clone(), json!({})),
    )
    .await
    .rejects(422, "AGT-1");
    k.u.post(
        "/v1/processes",
        body(
            &k.openai,
            vec![],
            json!({"text": "{{question}}"}),
            json!({}),
        ),
    )
    .await
    .rejects(422, "AGT-1");
    k.u.post(
        "/v1/processes",
        body(&k.openai, vec![&foreign], msg.clone(), json!({})),
    )
    .await
    .rejects(422, "AGT-2");
    k.u.post(
        "/v1/processes",
        body(
            &k.openai,
            vec![&k.search, &k.search],
            msg.clone(),
            json!({}),
        ),
    )
    .await
    .rejects(422, "AGT-2");
    let r =
        k.u.post(
            "/v1/processes",
            body(
                &k.openai,
                vec![&k.search],
                msg.clone(),
                json!({"maxIterations": 0}),
            ),
        )
        .await;
    assert_eq!(r.status.as_u16(), 400, "{:?}", r.body);
    k.u.post(
        "/v1/processes",
        body(&k.openai, vec![&k.search], msg, json!({})),
    )
    .await
    .ok(201);
}

/// AGT-8: an agent Process answers a conversation's agent turn: the Alternative is the loop's
/// answer, and the model was given the path as history (layer 5).
#[tokio::test]
async fn agt_8_an_agent_process_answers_a_conversation_turn() {
    let k = kit().await;
    let p = id(&fixtures::create(&k.u, "processes", json!({"id": unique("agent"), "name": "chat agent",
        "initialContext": ["conversationId", "turnId", "alternativeId", "userMessage", "workingMemory"],
        "steps": [{"id": "answer", "tool": k.openai, "agent": {"tools": [k.search]},
                   "inputs": {"message": "{{userMessage}}", "memory": "{{workingMemory}}"},
                   "output": {"variable": "a"}}],
        "outputTemplate": "{{a.text}}"})).await);
    let c = id(k
        .u
        .post("/v1/conversations", json!({"title": "agent"}))
        .await
        .ok(201));
    let t1 =
        k.u.post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "hello there"}),
        )
        .await
        .ok(201)
        .clone();
    let script =
        json!([{"calls": [{"name": "search", "args": {"q": "news"}}]}, {"answer": "here"}]);
    let t2 = k.u.post(&format!("/v1/conversations/{c}/turns"),
        json!({"speaker": "user", "content": format!("script:{script}"), "parentTurnId": t1["id"]}))
        .await.ok(201).clone();
    let (g, r) = agent_turn(&k.u, &c, &p, &t2["id"]).await;
    assert_eq!(r["status"], "completed", "{r}");
    let turn =
        k.u.get(&format!("/v1/turns/{}", g["turnId"].as_str().unwrap()))
            .await
            .ok(200)
            .clone();
    let content = turn["alternatives"][0]["content"].as_str().unwrap();
    assert!(
        content.starts_with("here | ") && content.contains("sunny in news"),
        "{content}"
    );
    let first = &k.requests()[0];
    let users: Vec<&str> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users[0], "hello there", "the path is the history");
    assert!(users[1].starts_with("script:"));
    assert_eq!(users.len(), 2, "the message is not repeated: {users:?}");
}

/// AGT-8: the seeded `process-agent`, as `seed/` defines it (its model and tools pointed at
/// this test's), is a valid agent Process that answers a conversation turn with its tools.
#[tokio::test]
async fn agt_8_the_seeded_process_agent_answers_with_its_tools() {
    use serde::Deserialize;
    let k = kit().await;
    let mut spec =
        serde_yaml_ng::Deserializer::from_str(include_str!("../../seed/60-processes.yaml"))
            .map(|d| Value::deserialize(d).expect("seed yaml"))
            .find(|d| d["spec"]["id"] == "process-agent")
            .expect("seed defines process-agent")["spec"]
            .clone();
    assert_eq!(
        spec["steps"][0]["agent"]["tools"],
        json!(["tool-graph-find-entity"]),
        "the seed's agent offers only tools of servers the main job runs"
    );
    spec["id"] = json!(unique("agent"));
    spec["steps"][0]["tool"] = json!(k.anthropic);
    spec["steps"][0]["agent"]["tools"] = json!([k.search, k.clock]);
    let p = id(&fixtures::create(&k.u, "processes", spec).await);
    let c = id(k.u.post("/v1/conversations", json!({})).await.ok(201));
    let script =
        json!([{"calls": [{"name": "clock", "args": {"zone": "UTC"}}]}, {"answer": "it is"}]);
    let t =
        k.u.post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": format!("script:{script}")}),
        )
        .await
        .ok(201)
        .clone();
    let (_, r) = agent_turn(&k.u, &c, &p, &t["id"]).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert!(r["output"].as_str().unwrap().contains("12:00 UTC"), "{r}");
    let system = k.requests()[0]["system"].as_str().unwrap().to_owned();
    assert!(
        system.contains("You are Aiden"),
        "the seed's governed prompt: {system}"
    );
}

/// Polls the run until `pred` holds (20 s at most).
async fn run_until(u: &Client, run: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let r = u.get(&format!("/v1/runs/{run}")).await.ok(200).clone();
        if pred(&r) {
            return r;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {r}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// AGT-9: a tool whose calls need the owner's approval pauses the run (`waiting_for_approval`,
/// `step.waiting`) without running it; a grant runs it and the loop goes on; a denial returns
/// `APPROVAL_DENIED` to the model, which answers without the tool. Decisions are checked.
#[tokio::test]
async fn agt_9_approvals_pause_the_loop_until_granted_or_denied() {
    let k = kit().await;
    let caps = json!({"approvals": {k.clock.clone(): "time.read"}});
    let p = agent_process(&k, &k.openai, &[&k.search, &k.clock], caps).await;
    let script = json!([{"calls": [{"name": "clock", "args": {"zone": "EAT"}},
                                   {"name": "search", "args": {"q": "now"}}]},
                        {"answer": "answered"}]);
    let start = |script: Value| {
        let u = k.u.clone();
        let p = p.clone();
        async move {
            u.start_run(&p, json!({"question": format!("script:{script}")}))
                .await
        }
    };
    // Grant: the run waits, the clock does not run until the grant, then the loop completes.
    let run = start(script.clone()).await;
    let waiting = run_until(&k.u, &run, "waiting", |r| {
        r["status"] == "waiting_for_approval"
    })
    .await;
    assert_eq!(step(&waiting, "answer")["status"], "waiting_for_approval");
    assert_eq!(k.calls("clock:"), 0);
    let ev = events_so_far(&k.u, &run).await;
    assert!(
        ev.iter()
            .any(|e| e["kind"] == "step.waiting" && e["data"]["capability"] == "time.read"),
        "{ev:?}"
    );
    let path = format!("/v1/runs/{run}/approvals");
    k.u.post(
        &path,
        json!({"capability": "email.send", "decision": "grant"}),
    )
    .await
    .rejects(409, "AGT-9");
    let stranger = user()
        .await
        .post(
            &path,
            json!({"capability": "time.read", "decision": "grant"}),
        )
        .await;
    assert_eq!(stranger.status.as_u16(), 404, "OWN-2: {:?}", stranger.body);
    let bad =
        k.u.post(
            &path,
            json!({"capability": "time.read", "decision": "maybe"}),
        )
        .await;
    assert_eq!(bad.status.as_u16(), 400, "{:?}", bad.body);
    let g =
        k.u.post(
            &path,
            json!({"capability": "time.read", "decision": "grant", "ttlSeconds": 60}),
        )
        .await
        .ok(202)
        .clone();
    assert!(g["expiresAt"].is_string(), "{g}");
    let done = k.u.settled_run(&run).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        done["output"].as_str().unwrap().contains("12:00 EAT"),
        "{done}"
    );
    assert_eq!(k.calls("clock:"), 1);
    k.u.post(
        &path,
        json!({"capability": "time.read", "decision": "grant"}),
    )
    .await
    .rejects(409, "AGT-9");
    // Deny: the clock never runs; the model reads the refusal and answers.
    let run = start(script).await;
    run_until(&k.u, &run, "waiting", |r| {
        r["status"] == "waiting_for_approval"
    })
    .await;
    k.u.post(
        &format!("/v1/runs/{run}/approvals"),
        json!({"capability": "time.read", "decision": "deny"}),
    )
    .await
    .ok(202);
    let done = k.u.settled_run(&run).await;
    assert_eq!(done["status"], "completed", "{done}");
    let text = done["output"].as_str().unwrap();
    assert!(
        text.contains("APPROVAL_DENIED") && text.contains("sunny in now"),
        "{text}"
    );
    assert_eq!(k.calls("clock:"), 1, "not run again");
}

/// AGT-9: a run waiting for an approval is canceled by `POST /v1/runs/{id}/cancel`: the cancel
/// is recorded (202, `cancelRequested`, the status it met), the run settles `canceled`, and the
/// call it held never runs, not even when a grant arrives after (409: nothing waits).
#[tokio::test]
async fn agt_9_a_run_waiting_for_an_approval_is_canceled_and_its_held_call_never_runs() {
    let k = kit().await;
    let caps = json!({"approvals": {k.clock.clone(): "time.read"}});
    let p = agent_process(&k, &k.openai, &[&k.clock], caps).await;
    let script = json!([{"calls": [{"name": "clock", "args": {"zone": "CET"}}]},
                        {"answer": "never"}]);
    let run =
        k.u.start_run(&p, json!({"question": format!("script:{script}")}))
            .await;
    run_until(&k.u, &run, "waiting", |r| {
        r["status"] == "waiting_for_approval"
    })
    .await;
    let cancel =
        k.u.post(&format!("/v1/runs/{run}/cancel"), json!({}))
            .await
            .ok(202)
            .clone();
    assert_eq!(cancel["status"], "waiting_for_approval", "{cancel}");
    assert_eq!(cancel["cancelRequested"], true, "{cancel}");
    let done = k.u.settled_run(&run).await;
    assert_eq!(done["status"], "canceled", "{done}");
    assert_eq!(step(&done, "answer")["status"], "canceled", "{done}");
    k.u.post(
        &format!("/v1/runs/{run}/approvals"),
        json!({"capability": "time.read", "decision": "grant"}),
    )
    .await
    .rejects(409, "AGT-9");
    // The engine settled the run before the grant was refused; a held call it still dispatched
    // would have reached the clock by the time the run reads settled again.
    let after = k.u.settled_run(&run).await;
    assert_eq!(
        after["steps"], done["steps"],
        "nothing moved after the cancel"
    );
    assert_eq!(k.calls("clock:"), 0, "the held call never ran");
    let ev = events_so_far(&k.u, &run).await;
    assert_eq!(
        ev.last().map(|e| e["kind"].clone()),
        Some(json!("run.canceled")),
        "{ev:?}"
    );
}

/// The events logged so far (the stream of a run that has not ended is cut after 2 s).
async fn events_so_far(u: &Client, run: &str) -> Vec<Value> {
    let resp = u
        .raw(Method::GET, &format!("/v1/runs/{run}/events"))
        .send()
        .await
        .unwrap();
    let mut body = Vec::new();
    let mut stream = resp;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, stream.chunk()).await {
        body.extend_from_slice(&chunk);
    }
    let body = String::from_utf8_lossy(&body);
    aiden_tests::scan::record("sse", &body);
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

/// AGT-10: a Process's quota is counted in the graph, in the start's own transaction: past
/// `maxInvocationsPerHour` a start is refused (429 QUOTA_EXCEEDED, `Retry-After`) before
/// anything is written, also when the starts race; `maxConcurrent` refuses while that many runs
/// are unsettled.
#[tokio::test]
async fn agt_10_quotas_refuse_starts_before_anything_is_written() {
    // The hourly window is a clock hour; the tests' server counts it on a clock pinned to the
    // top of the hour it started in (tests/src/lib.rs), so the racing starts share one.
    let k = kit().await;
    let step = |ms: &str| json!([{"id": "s", "tool": k.sleeper, "inputs": {"ms": ms}}]);
    let hourly = id(&fixtures::create(
        &k.u,
        "processes",
        json!({"id": unique("quota"), "name": "q",
        "steps": step("0"), "quota": {"maxInvocationsPerHour": 3}}),
    )
    .await);
    let starts = (0..6).map(|_| {
        let u = k.u.clone();
        let path = format!("/v1/processes/{hourly}/runs");
        async move { u.post(&path, json!({"inputs": {}})).await }
    });
    let replies = futures::future::join_all(starts).await;
    let accepted = replies.iter().filter(|r| r.status.as_u16() == 202).count();
    assert_eq!(
        accepted,
        3,
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    for r in replies.iter().filter(|r| r.status.as_u16() != 202) {
        r.rejects(429, "AGT-10");
        assert_eq!(r.body["error"]["code"], "QUOTA_EXCEEDED");
        let after: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=3600).contains(&after), "Retry-After {after}");
    }
    let stored: Vec<Value> = graph_rows(
        aiden_graph_query("MATCH (r:Run {processId: $p}) RETURN count(r) AS n")
            .param("p", hourly.as_str()),
    )
    .await;
    assert_eq!(stored[0]["n"], 3, "a refused start writes nothing");

    let single = id(&fixtures::create(
        &k.u,
        "processes",
        json!({"id": unique("quota"), "name": "q",
        "steps": step("1500"), "quota": {"maxConcurrent": 1}}),
    )
    .await);
    let first = k.u.start_run(&single, json!({})).await;
    let busy =
        k.u.post(
            &format!("/v1/processes/{single}/runs"),
            json!({"inputs": {}}),
        )
        .await;
    busy.rejects(429, "AGT-10");
    assert_eq!(busy.headers["retry-after"], "1");
    assert_eq!(k.u.settled_run(&first).await["status"], "completed");
    k.u.start_run(&single, json!({})).await;
}

/// AGT-11: a loop's token budget is checked before each model turn: a budget that cannot pay
/// for the first turn fails the step with BUDGET_EXCEEDED before the model is asked at all.
#[tokio::test]
async fn agt_11_a_token_budget_refuses_before_any_spend() {
    let k = kit().await;
    let p = agent_process(&k, &k.openai, &[&k.search], json!({"tokenBudget": 100})).await;
    let r = run(&k, &p, json!([{"answer": "never"}])).await;
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(
        step(&r, "answer")["error"]["code"],
        "BUDGET_EXCEEDED",
        "{r}"
    );
    assert!(k.requests().is_empty(), "the model was never called");
    let bad =
        k.u.post(
            "/v1/processes",
            json!({"id": unique("agent"), "name": "a", "initialContext": ["question"],
            "steps": [{"id": "answer", "tool": k.openai, "agent": {"tools": [], "tokenBudget": 0},
                       "inputs": {"message": "{{question}}"}}]}),
        )
        .await;
    assert_eq!(bad.status.as_u16(), 400, "{:?}", bad.body);
}

/// One SSE frame: its `event:`, whether it had an `id:`, and its data.
fn frames(text: &str) -> Vec<(String, bool, Value)> {
    aiden_tests::scan::record("sse", text);
    text.split("\n\n")
        .filter_map(|f| {
            let event = f
                .lines()
                .find_map(|l| l.strip_prefix("event: "))?
                .to_owned();
            let has_id = f.lines().any(|l| l.starts_with("id:"));
            let data = f.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((event, has_id, serde_json::from_str(data).ok()?))
        })
        .collect()
}

/// The run's SSE stream, opened now and read until it ends after the run.
async fn live_stream(u: &Client, run: &str) -> String {
    tokio::time::timeout(std::time::Duration::from_secs(20), async {
        u.raw(Method::GET, &format!("/v1/runs/{run}/events"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    })
    .await
    .expect("the stream ends after the run")
}

/// Starts `p` on the model script and reads the run's live event stream to its end.
async fn run_live(k: &Kit, p: &str, script: &Value) -> (String, Vec<(String, bool, Value)>) {
    let run =
        k.u.start_run(p, json!({"question": format!("script:{script}")}))
            .await;
    let live = frames(&live_stream(&k.u, &run).await);
    (run, live)
}

/// AGT-12 for a plain (non-agent) `llm_call` step: its answer streams as `step.delta` events
/// too, over both wire formats, in order, adding up to the recorded text.
#[tokio::test]
async fn agt_12_a_plain_model_step_streams_its_answer_too() {
    let k = kit().await;
    for model in [&k.openai, &k.anthropic] {
        // The model step waits 300 ms behind another, so the stream is open before it answers.
        let p = id(&fixtures::create(
            &k.u,
            "processes",
            json!({"id": unique("plain"),
            "name": "plain model step", "initialContext": ["question"],
            "steps": [{"id": "wait", "tool": k.sleeper, "inputs": {"ms": "300"}},
                      {"id": "answer", "tool": model, "dependsOn": ["wait"],
                       "inputs": {"message": "{{question}}"}, "output": {"variable": "a"}}],
            "outputTemplate": "{{a.text}}"}),
        )
        .await);
        let text = "a plain answer streamed word by word";
        let script = json!([{ "answer": text }]);
        let (run, live) = run_live(&k, &p, &script).await;
        let deltas: Vec<&Value> = live
            .iter()
            .filter(|(e, _, _)| e == "step.delta")
            .map(|(_, _, d)| d)
            .collect();
        assert!(
            deltas.len() > 1,
            "word by word: {live:?} after {:?}",
            k.model.requests().last()
        );
        assert!(deltas.iter().all(|d| d["stepId"] == "answer"), "{deltas:?}");
        let indices: Vec<u64> = deltas
            .iter()
            .map(|d| d["index"].as_u64().unwrap())
            .collect();
        assert_eq!(indices, (0..indices.len() as u64).collect::<Vec<_>>());
        let streamed: String = deltas.iter().map(|d| d["text"].as_str().unwrap()).collect();
        let done = k.u.settled_run(&run).await;
        assert_eq!(done["output"], text, "{done}");
        assert_eq!(streamed, text, "the deltas add up to the recorded text");
        assert_eq!(k.model.requests().last().unwrap()["stream"], true);
    }
}

/// AGT-12: a model turn's text streams to the run's SSE stream as `step.delta` events (in
/// order, without ids) while it is generated, over both wire formats; the durable log keeps the
/// final text only, so a stream read after the run (or resumed with Last-Event-ID) has no
/// deltas and its ids stay gapless.
#[tokio::test]
async fn agt_12_model_text_streams_as_deltas_that_are_never_stored() {
    let k = kit().await;
    for model in [&k.openai, &k.anthropic] {
        let p = agent_process(&k, model, &[&k.sleeper], json!({})).await;
        let script = json!([{"calls": [{"name": "sleep", "args": {"ms": "300"}}]},
                            {"answer": "the final answer is here"}]);
        let (run, live) = run_live(&k, &p, &script).await;
        let deltas: Vec<&Value> = live
            .iter()
            .filter(|(e, _, _)| e == "step.delta")
            .map(|(_, has_id, d)| {
                assert!(!has_id, "a delta has no id: {d}");
                d
            })
            .collect();
        let last_turn: Vec<&&Value> = deltas
            .iter()
            .filter(|d| d["stepId"] == "answer#m3")
            .collect();
        let indices: Vec<u64> = last_turn
            .iter()
            .map(|d| d["index"].as_u64().unwrap())
            .collect();
        assert_eq!(
            indices,
            (0..indices.len() as u64).collect::<Vec<_>>(),
            "in order"
        );
        let streamed: String = last_turn
            .iter()
            .map(|d| d["text"].as_str().unwrap())
            .collect();
        let done = k.u.settled_run(&run).await;
        let answer = done["output"].as_str().unwrap();
        assert!(
            answer.starts_with("the final answer is here | "),
            "{answer}"
        );
        assert_eq!(streamed, answer, "the deltas add up to the recorded text");
        let seqs: Vec<i64> = live
            .iter()
            .filter(|(e, _, _)| e != "step.delta")
            .map(|(_, has_id, d)| {
                assert!(has_id);
                d["seq"].as_i64().unwrap()
            })
            .collect();
        assert_eq!(
            seqs,
            (1..=seqs.len() as i64).collect::<Vec<_>>(),
            "durable ids stay gapless"
        );
        assert!(k.requests().last().unwrap()["stream"] == true);
        // Read again, and resumed: the durable events only.
        let again = events(&k.u, &run).await;
        assert!(again.iter().all(|e| e["kind"] != "step.delta"));
        assert_eq!(again.len(), seqs.len());
        let resumed =
            k.u.raw(Method::GET, &format!("/v1/runs/{run}/events"))
                .header("Last-Event-ID", "3")
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
        let resumed = frames(&resumed);
        assert_eq!(resumed.len(), seqs.len() - 3);
        assert_eq!(resumed[0].2["seq"], 4);
    }
}

/// AGT-13, the post-hook: what an answer proposes to remember (the structured
/// `memory_suggestions`) becomes a proposed Entity of the run's owner — never a sensitive one,
/// never memory until confirmed: it cannot be made active, confirm makes it the owner's, reject
/// removes it, nobody else can decide it.
#[tokio::test]
async fn agt_13_memory_suggestions_are_proposed_then_confirmed_or_rejected() {
    let k = kit().await;
    let p = agent_process(&k, &k.openai, &[&k.search], json!({})).await;
    let propose = |tag: &str| {
        let answer = json!({"content": format!("Noted ({tag})."),
            "memory_suggestions": [format!("Likes green tea {tag}"), "My password is hunter2"]});
        json!([{"answer": answer.to_string()}])
    };
    let proposals_of = |run: String| {
        let u = k.u.clone();
        async move {
            let list = u.get("/v1/entities").await.ok(200).clone();
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| {
                    e["sources"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|s| s["runId"] == json!(run))
                })
                .cloned()
                .collect::<Vec<Value>>()
        }
    };
    let r = run(&k, &p, propose("one")).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(
        r["output"], "Noted (one).",
        "the structured answer's content is the text"
    );
    let out = &step(&r, "answer")["output"];
    assert_eq!(out["memorySuggestions"], json!(["Likes green tea one"]));
    assert_eq!(out["droppedSensitive"], 1);
    let found = proposals_of(r["id"].as_str().unwrap().to_owned()).await;
    assert_eq!(
        found.len(),
        1,
        "the sensitive one is never proposed: {found:?}"
    );
    let e = &found[0];
    assert_eq!(
        (&e["name"], &e["status"]),
        (&json!("Likes green tea one"), &json!("proposed"))
    );
    let uuid = e["uuid"].as_str().unwrap().to_owned();
    let c = id(k.u.post("/v1/conversations", json!({})).await.ok(201));
    let activate = format!("/v1/conversations/{c}/entities/{uuid}");
    k.u.put(&activate, json!({})).await.rejects(409, "AGT-13");
    let stranger = user()
        .await
        .post(&format!("/v1/entities/{uuid}/confirm"), json!({}))
        .await;
    assert_eq!(stranger.status.as_u16(), 404);
    let confirmed =
        k.u.post(&format!("/v1/entities/{uuid}/confirm"), json!({}))
            .await
            .ok(200)
            .clone();
    assert_eq!(confirmed["status"], "confirmed");
    k.u.post(&format!("/v1/entities/{uuid}/confirm"), json!({}))
        .await
        .rejects(409, "AGT-13");
    k.u.put(&activate, json!({})).await.ok(200);
    // Rejected: gone.
    let r = run(&k, &p, propose("two")).await;
    let found = proposals_of(r["id"].as_str().unwrap().to_owned()).await;
    let uuid = found[0]["uuid"].as_str().unwrap().to_owned();
    k.u.post(&format!("/v1/entities/{uuid}/reject"), json!({}))
        .await
        .ok(200);
    assert_eq!(
        k.u.get(&format!("/v1/entities/{uuid}"))
            .await
            .status
            .as_u16(),
        404
    );
}

/// Starts an agent turn answering `parent` with Process `p`; the 202 body and the settled run.
async fn agent_turn(u: &Client, c: &str, p: &str, parent: &Value) -> (Value, Value) {
    let g = u
        .post(
            &format!("/v1/conversations/{c}/agent-turns"),
            json!({"processId": p, "parentTurnId": parent}),
        )
        .await
        .ok(202)
        .clone();
    let r = u.settled_run(g["runId"].as_str().unwrap()).await;
    (g, r)
}
