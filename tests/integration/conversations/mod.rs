//! Branching conversations end to end, against the real Bolt server and RabbitMQ:
//! CONV-1..3, TURN-1..8, WM-1..3 and SUM-1 each by name, a scripted six-turn scenario, the
//! concurrency rules, bad input that must leave the graph exactly as it was, and the audit.
//! One file per concern; the fixtures and helpers they share are here.
//!
//! Agent turns are run by Processes that call a REST upstream started by each test
//! (`/reply?q=&tag=&hold=` answers `{"reply": "answer to <q>"}`; `hold=1` waits for the test to
//! open a gate, so "generating" can be observed without racing the run; `/fail` answers 400).
//! Every agent Process renders `"<reply> [<TAG>]"`, so each Alternative's content is known
//! exactly. "Nothing was written" is checked on the graph itself (`snapshot`), not only through
//! the API.

mod agent_turns;
mod alternatives;
mod forks;
mod lifecycle;
mod memory;
mod regenerate;
mod run_lines;
mod scenario;
mod turns;
mod upkeep;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiden_tests::{aiden_graph_query, fixtures, graph_rows, server, unique, Client};
use axum::{
    extract::{Query, State},
    http::StatusCode,
    routing::get,
    Json, Router,
};
use reqwest::Method;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

// ---------------------------------------------------------------------------------------------
// The upstream the agent Processes call
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
struct Upstream {
    /// `"<tag>|<q>"` per `/reply` request, in arrival order.
    seen: Arc<Mutex<Vec<String>>>,
    /// `hold=1` requests wait for a permit (at most 20 s, so a failed test never wedges a worker).
    gate: Arc<Semaphore>,
}

type Params = Query<HashMap<String, String>>;

async fn reply(State(up): State<Upstream>, Query(p): Params) -> Json<Value> {
    let q = p.get("q").cloned().unwrap_or_default();
    let tag = p.get("tag").cloned().unwrap_or_default();
    up.seen.lock().unwrap().push(format!("{tag}|{q}"));
    if p.get("hold").map(String::as_str) == Some("1") {
        if let Ok(Ok(permit)) =
            tokio::time::timeout(Duration::from_secs(20), up.gate.acquire()).await
        {
            permit.forget();
        }
    }
    Json(json!({"reply": format!("answer to {q}")}))
}

async fn fail(Query(p): Params) -> (StatusCode, Json<Value>) {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"refused": p.get("q").cloned().unwrap_or_default()})),
    )
}

/// One user's agent setup: a Service on a fresh upstream, two Tools and the Processes.
struct Kit {
    u: Client,
    up: Upstream,
    /// Answers `"answer to <userMessage> [P1]"` / `"… [P2]"`.
    p1: String,
    p2: String,
    /// Like P1 (tag `HOLD`) but waits until `release()`.
    held: String,
    /// No `outputTemplate`: the run output is an object (content = its JSON text).
    object: String,
    /// Its only step gets a 400: the run fails.
    broken: String,
    /// Needs `q`, which an agent turn does not offer (PROC-6).
    narrow: String,
    reply_tool: String,
}

impl Kit {
    fn release(&self, n: usize) {
        self.up.gate.add_permits(n);
    }
}

impl Drop for Kit {
    fn drop(&mut self) {
        // Never leave a held request (and the worker running it) waiting on a failed test.
        self.up.gate.add_permits(1000);
    }
}

const AGENT_CONTEXT: [&str; 5] = [
    "conversationId",
    "turnId",
    "alternativeId",
    "userMessage",
    "workingMemory",
];

fn agent_body(tag: &str, tool: &str, hold: bool, shared: bool) -> Value {
    json!({"id": unique("agent"), "name": format!("agent {tag}"), "initialContext": AGENT_CONTEXT,
           "steps": [{"id": "ask", "tool": tool,
                      "inputs": {"q": "{{userMessage}}", "tag": tag, "hold": if hold { "1" } else { "0" }},
                      "output": {"variable": "r"}}],
           "outputTemplate": format!("{{{{r.body.reply}}}} [{tag}]"), "shared": shared})
}

async fn kit(u: Client) -> Kit {
    let up = Upstream {
        seen: Arc::default(),
        gate: Arc::new(Semaphore::new(0)),
    };
    let app = Router::new()
        .route("/reply", get(reply))
        .route("/fail", get(fail))
        .with_state(up.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let base = format!("http://{addr}");
    let mut svc = fixtures::rest_service_body(false);
    svc["endpoint"] = json!(base);
    let svc = id(&fixtures::create(&u, "services", svc).await);
    let tool = |path: &str, vars: &[&str]| {
        let props: serde_json::Map<String, Value> = vars
            .iter()
            .map(|v| (v.to_string(), json!({"type": "string"})))
            .collect();
        json!({"id": unique("tool"), "name": "upstream", "serviceId": svc,
               "connectionParams": {"endpoint": base, "timeoutMs": 30000},
               "operation": {"type": "rest_api", "method": "GET", "path": path},
               "inputSchema": {"type": "object", "required": vars, "properties": props},
               "outputSchema": {"type": "object"}, "enabled": true})
    };
    let reply_tool = id(&fixtures::create(
        &u,
        "tools",
        tool(
            "/reply?q={{q}}&tag={{tag}}&hold={{hold}}",
            &["q", "tag", "hold"],
        ),
    )
    .await);
    let fail_tool = id(&fixtures::create(&u, "tools", tool("/fail?q={{q}}", &["q"])).await);
    let process = |body: Value| {
        let u = u.clone();
        async move { id(&fixtures::create(&u, "processes", body).await) }
    };
    let p1 = process(agent_body("P1", &reply_tool, false, false)).await;
    let p2 = process(agent_body("P2", &reply_tool, false, false)).await;
    let held = process(agent_body("HOLD", &reply_tool, true, false)).await;
    let mut object = agent_body("OBJ", &reply_tool, false, false);
    object.as_object_mut().unwrap().remove("outputTemplate");
    let object = process(object).await;
    let broken = process(json!({"id": unique("agent"), "name": "broken", "initialContext": AGENT_CONTEXT,
        "steps": [{"id": "ask", "tool": fail_tool, "inputs": {"q": "{{userMessage}}"}, "output": {"variable": "r"}}],
        "outputTemplate": "{{r.body}}", "shared": false}))
    .await;
    let narrow = process(json!({"id": unique("agent"), "name": "narrow", "initialContext": ["q"],
        "steps": [{"id": "ask", "tool": reply_tool, "inputs": {"q": "{{q}}", "tag": "N", "hold": "0"},
                   "output": {"variable": "r"}}],
        "outputTemplate": "{{r.body.reply}}", "shared": false}))
    .await;
    Kit {
        u,
        up,
        p1,
        p2,
        held,
        object,
        broken,
        narrow,
        reply_tool,
    }
}

// ---------------------------------------------------------------------------------------------
// API helpers
// ---------------------------------------------------------------------------------------------

fn text(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .to_owned()
}

fn id(v: &Value) -> String {
    text(&v["id"])
}

fn ceil4(s: &str) -> i64 {
    s.chars().count().div_ceil(4) as i64
}

async fn conversation(u: &Client) -> String {
    id(
        u.post("/v1/conversations", json!({"title": unique("conv")}))
            .await
            .ok(201),
    )
}

async fn get_conversation(u: &Client, c: &str) -> Value {
    u.get(&format!("/v1/conversations/{c}"))
        .await
        .ok(200)
        .clone()
}

/// A user Turn; a root when `parent` is None. Returns the Turn.
async fn say(u: &Client, c: &str, content: &str, parent: Option<&str>) -> Value {
    let mut body = json!({"speaker": "user", "content": content});
    if let Some(p) = parent {
        body["parentTurnId"] = json!(p);
    }
    u.post(&format!("/v1/conversations/{c}/turns"), body)
        .await
        .ok(201)
        .clone()
}

/// A user Turn responding to a chosen Alternative of the parent Turn.
async fn say_via(u: &Client, c: &str, content: &str, parent: &str, parent_alt: &str) -> Value {
    u.post(
        &format!("/v1/conversations/{c}/turns"),
        json!({"speaker": "user", "content": content, "parentTurnId": parent,
               "parentAlternativeId": parent_alt}),
    )
    .await
    .ok(201)
    .clone()
}

/// The one Alternative a new Turn has.
fn first(turn: &Value) -> String {
    let alts = turn["alternatives"].as_array().expect("alternatives");
    assert_eq!(alts.len(), 1, "a new Turn has one Alternative: {turn}");
    id(&alts[0])
}

/// Starts an agent Turn; returns the 202 body.
async fn start(
    u: &Client,
    c: &str,
    process: &str,
    parent: &str,
    parent_alt: Option<&str>,
) -> Value {
    let mut body = json!({"processId": process, "parentTurnId": parent});
    if let Some(a) = parent_alt {
        body["parentAlternativeId"] = json!(a);
    }
    let g = u
        .post(&format!("/v1/conversations/{c}/agent-turns"), body)
        .await
        .ok(202)
        .clone();
    assert_eq!(g["status"], "generating", "{g}");
    for k in ["turnId", "alternativeId", "runId"] {
        assert!(g[k].as_str().is_some_and(|s| !s.is_empty()), "{k} in {g}");
    }
    g
}

/// An agent Turn, settled; returns its Alternative.
async fn answer(
    u: &Client,
    c: &str,
    process: &str,
    parent: &str,
    parent_alt: Option<&str>,
) -> Value {
    let g = start(u, c, process, parent, parent_alt).await;
    settled(u, &text(&g["turnId"]), &text(&g["alternativeId"])).await
}

/// Starts another Alternative of an agent Turn; returns the 202 body.
async fn regen_start(u: &Client, turn: &str, process: &str, parent_alt: Option<&str>) -> Value {
    let mut body = json!({"processId": process});
    if let Some(a) = parent_alt {
        body["parentAlternativeId"] = json!(a);
    }
    let r = u
        .post(&format!("/v1/turns/{turn}/alternatives"), body)
        .await;
    let g = r.ok(202).clone();
    // The created Alternative, like a user edit's answer, at its Location.
    assert_eq!(g["cacheStatus"], "generating", "{g}");
    assert_eq!(g["turnId"], json!(turn));
    assert!(g["runId"].is_string(), "{g}");
    assert_eq!(
        r.header("location").as_deref(),
        Some(format!("/v1/alternatives/{}", text(&g["id"])).as_str())
    );
    g
}

/// Another Alternative of an agent Turn, settled.
async fn regen(u: &Client, turn: &str, process: &str, parent_alt: Option<&str>) -> Value {
    let g = regen_start(u, turn, process, parent_alt).await;
    settled(u, turn, &text(&g["id"])).await
}

/// Another Alternative of a user Turn (an edit); returns the new Alternative.
async fn edit(u: &Client, turn: &str, content: &str, parent_alt: Option<&str>) -> Value {
    let mut body = json!({"content": content});
    if let Some(a) = parent_alt {
        body["parentAlternativeId"] = json!(a);
    }
    let r = u
        .post(&format!("/v1/turns/{turn}/alternatives"), body)
        .await;
    let a = r.ok(201).clone();
    assert_eq!(a["turnId"], json!(turn), "{a}");
    assert_eq!(a["isActive"], true, "TURN-8: {a}");
    let location = format!("/v1/alternatives/{}", text(&a["id"]));
    assert_eq!(r.header("location").as_deref(), Some(location.as_str()));
    assert_eq!(u.get(&location).await.ok(200), &a);
    a
}

async fn switch(u: &Client, turn: &str, alt: &str) -> Value {
    u.put(
        &format!("/v1/turns/{turn}/active"),
        json!({"alternativeId": alt}),
    )
    .await
    .ok(200)
    .clone()
}

async fn get_turn(u: &Client, turn: &str) -> Value {
    u.get(&format!("/v1/turns/{turn}")).await.ok(200).clone()
}

fn alt_of(turn: &Value, alt: &str) -> Value {
    turn["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == alt)
        .cloned()
        .unwrap_or_else(|| panic!("{alt} not in {turn}"))
}

fn actives(turn: &Value) -> Vec<String> {
    turn["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["isActive"] == true)
        .map(id)
        .collect()
}

async fn alternative(u: &Client, turn: &str, alt: &str) -> Value {
    alt_of(&get_turn(u, turn).await, alt)
}

/// Waits until the Alternative is no longer generating.
async fn settled(u: &Client, turn: &str, alt: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let a = alternative(u, turn, alt).await;
        if a["cacheStatus"] != "generating" {
            return a;
        }
        assert!(
            Instant::now() < deadline,
            "still generating after 30 s: {a}\n{}",
            server().error_lines()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn tree(u: &Client, c: &str) -> Value {
    u.get(&format!("/v1/conversations/{c}/tree"))
        .await
        .ok(200)
        .clone()
}

fn turns_of(tree: &Value) -> Vec<Value> {
    tree["turns"].as_array().unwrap().clone()
}

fn tree_turn(tree: &Value, turn: &str) -> Value {
    turns_of(tree)
        .into_iter()
        .find(|t| t["id"] == turn)
        .unwrap_or_else(|| panic!("turn {turn} not in tree"))
}

fn tree_alt(tree: &Value, alt: &str) -> Value {
    turns_of(tree)
        .iter()
        .flat_map(|t| t["alternatives"].as_array().unwrap().clone())
        .find(|a| a["id"] == alt)
        .unwrap_or_else(|| panic!("alternative {alt} not in tree"))
}

fn all_alts(tree: &Value) -> Vec<Value> {
    turns_of(tree)
        .iter()
        .flat_map(|t| t["alternatives"].as_array().unwrap().clone())
        .collect()
}

async fn wm(u: &Client, c: &str, query: &str) -> Value {
    u.get(&format!("/v1/conversations/{c}/working-memory{query}"))
        .await
        .ok(200)
        .clone()
}

fn path(wm: &Value) -> Vec<Value> {
    wm["immediatePath"]
        .as_array()
        .expect("immediatePath")
        .clone()
}

fn contents(wm: &Value) -> Vec<String> {
    path(wm)
        .iter()
        .map(|p| p["content"].as_str().unwrap_or("<null>").to_owned())
        .collect()
}

fn path_alts(wm: &Value) -> Vec<String> {
    path(wm).iter().map(|p| text(&p["alternativeId"])).collect()
}

/// The run's whole SSE event log (the stream ends after the terminal event).
async fn run_events(u: &Client, run: &str) -> Vec<Value> {
    let body = tokio::time::timeout(Duration::from_secs(20), async {
        let r = u
            .raw(Method::GET, &format!("/v1/runs/{run}/events"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "events of {run}");
        r.text().await.unwrap()
    })
    .await
    .expect("the event stream did not end");
    aiden_tests::scan::record("sse", &body);
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

async fn conversation_count(owner: &str) -> i64 {
    #[derive(serde::Deserialize)]
    struct N {
        n: i64,
    }
    graph_rows::<N>(
        aiden_graph_query("MATCH (c:Conversation {ownerId: $o}) RETURN count(c) AS n")
            .param("o", owner),
    )
    .await[0]
        .n
}

/// Everything stored for one Conversation, read from the graph: the Conversation's counters and
/// position, every Turn, Alternative (content, state, HAS_ALTERNATIVE flags) and Summary with
/// the number of edges touching each, plus the owner's Runs and Conversations. Equal snapshots
/// before and after a rejected request show it wrote nothing.
async fn snapshot(c: &str, owner: &str) -> Vec<String> {
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Conv {
        turns: Option<i64>,
        current_turn: Option<String>,
        current_alt: Option<String>,
        revision: Option<i64>,
        updated: Option<String>,
        default_process: Option<String>,
        status: Option<String>,
        title: Option<String>,
        rels: i64,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Turn {
        id: String,
        alts: Option<i64>,
        seq: Option<i64>,
        rels: i64,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Alt {
        id: String,
        active: Option<bool>,
        seq: Option<i64>,
        content: Option<String>,
        state: Option<String>,
        rels: i64,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Node {
        id: String,
        rels: i64,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct N {
        n: i64,
    }
    let q = |s: &str| aiden_graph_query(s).param("c", c).param("o", owner);
    let mut out = Vec::new();
    let conv: Vec<Conv> = graph_rows(q(
        "MATCH (c:Conversation {id: $c}) OPTIONAL MATCH (c)-[r]-()
         RETURN c.turnCount AS turns, c.currentTurnId AS current_turn,
                c.currentAlternativeId AS current_alt, c.revision AS revision,
                c.updatedAt AS updated, c.defaultProcessId AS default_process,
                c.status AS status, c.title AS title, count(r) AS rels",
    ))
    .await;
    out.extend(conv.iter().map(|r| format!("{r:?}")));
    let turns: Vec<Turn> = graph_rows(q(
        "MATCH (t:ConversationTurn {conversationId: $c}) OPTIONAL MATCH (t)-[r]-()
         RETURN t.id AS id, t.altCount AS alts, t.sequence AS seq, count(r) AS rels ORDER BY id",
    ))
    .await;
    out.extend(turns.iter().map(|r| format!("{r:?}")));
    let alts: Vec<Alt> = graph_rows(q(
        "MATCH (:ConversationTurn {conversationId: $c})-[h:HAS_ALTERNATIVE]->(a:Alternative)
         OPTIONAL MATCH (a)-[r]-()
         RETURN a.id AS id, h.isActive AS active, h.sequence AS seq, a.content AS content,
                a.state AS state, count(r) AS rels ORDER BY id",
    ))
    .await;
    out.extend(alts.iter().map(|r| format!("{r:?}")));
    let loose: Vec<N> = graph_rows(q(
        "MATCH (a:Alternative {conversationId: $c}) RETURN count(a) AS n",
    ))
    .await;
    out.push(format!("alternatives {}", loose[0].n));
    let sums: Vec<Node> = graph_rows(q(
        "MATCH (s:Summary {conversationId: $c}) OPTIONAL MATCH (s)-[r]-()
         RETURN s.id AS id, count(r) AS rels ORDER BY id",
    ))
    .await;
    out.extend(sums.iter().map(|r| format!("summary {r:?}")));
    let runs: Vec<N> = graph_rows(q("MATCH (r:Run {ownerId: $o}) RETURN count(r) AS n")).await;
    out.push(format!("runs {}", runs[0].n));
    out.push(format!("conversations {}", conversation_count(owner).await));
    out
}
