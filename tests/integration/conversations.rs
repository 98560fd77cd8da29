//! Branching conversations (issue #4) end to end, against the real Bolt server and RabbitMQ:
//! CONV-1..3, TURN-1..8, WM-1..3 and SUM-1 each by name, a scripted six-turn scenario, the
//! concurrency rules, bad input that must leave the graph exactly as it was, and the audit.
//!
//! Agent turns are run by Processes that call a REST upstream started by each test
//! (`/reply?q=&tag=&hold=` answers `{"reply": "answer to <q>"}`; `hold=1` waits for the test to
//! open a gate, so "generating" can be observed without racing the run; `/fail` answers 400).
//! Every agent Process renders `"<reply> [<TAG>]"`, so each Alternative's content is known
//! exactly. "Nothing was written" is checked on the graph itself (`snapshot`), not only through
//! the API.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiden_tests::{admin, aiden_graph_query, fixtures, graph_rows, server, unique, user, Client};
use axum::{
    extract::{Query, State},
    http::StatusCode,
    routing::get,
    Json, Router,
};
use futures::future::join_all;
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
    let g = u
        .post(&format!("/v1/turns/{turn}/alternatives"), body)
        .await
        .ok(202)
        .clone();
    assert_eq!(g["status"], "generating", "{g}");
    assert_eq!(g["turnId"], json!(turn));
    g
}

/// Another Alternative of an agent Turn, settled.
async fn regen(u: &Client, turn: &str, process: &str, parent_alt: Option<&str>) -> Value {
    let g = regen_start(u, turn, process, parent_alt).await;
    settled(u, turn, &text(&g["alternativeId"])).await
}

/// Another Alternative of a user Turn (an edit); returns the new Alternative.
async fn edit(u: &Client, turn: &str, content: &str, parent_alt: Option<&str>) -> Value {
    let mut body = json!({"content": content});
    if let Some(a) = parent_alt {
        body["parentAlternativeId"] = json!(a);
    }
    let t = u
        .post(&format!("/v1/turns/{turn}/alternatives"), body)
        .await
        .ok(201)
        .clone();
    t["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|a| a["sequence"].as_i64().unwrap())
        .cloned()
        .unwrap()
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

async fn wait_run(u: &Client, run: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = u.get(&format!("/v1/runs/{run}")).await.ok(200).clone();
        if matches!(
            r["status"].as_str(),
            Some("completed" | "failed" | "canceled")
        ) {
            return r;
        }
        assert!(Instant::now() < deadline, "run did not settle: {r}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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

// ---------------------------------------------------------------------------------------------
// CONV-1
// ---------------------------------------------------------------------------------------------

/// CONV-1: DELETE answers 405 NOT_ALLOWED and removes nothing; archiving hides the conversation
/// from the default listing, freezes it (409, nothing written) and is reversible.
#[tokio::test]
async fn conv_1_delete_answers_405_and_archiving_is_reversible() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "keep me", None).await;
    let r1 = answer(u, &c, &k.p1, &id(&t1), None).await;
    let t2 = text(&r1["turnId"]);
    let before = snapshot(&c, &u.id).await;
    let del = u.delete(&format!("/v1/conversations/{c}")).await;
    del.rejects(405, "CONV-1");
    assert_eq!(del.code(), "NOT_ALLOWED");
    assert_eq!(
        snapshot(&c, &u.id).await,
        before,
        "DELETE removed something"
    );
    assert_eq!(tree(u, &c).await["turns"].as_array().unwrap().len(), 2);

    let archived = u
        .patch(
            &format!("/v1/conversations/{c}"),
            json!({"status": "archived"}),
        )
        .await;
    assert_eq!(archived.ok(200)["status"], "archived");
    let listed = u.get("/v1/conversations").await.ok(200).clone();
    assert!(
        !listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == c),
        "archived conversations are left out of the default listing: {listed}"
    );
    let all = u
        .get("/v1/conversations?includeArchived=true")
        .await
        .ok(200)
        .clone();
    assert!(all["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["id"] == c));
    assert_eq!(
        u.get(&format!("/v1/conversations/{c}")).await.ok(200)["status"],
        "archived"
    );
    assert_eq!(contents(&wm(u, &c, "").await).len(), 2, "still readable");
    u.delete(&format!("/v1/conversations/{c}"))
        .await
        .rejects(405, "CONV-1");

    // An archived conversation takes no writes, and the refused writes leave nothing behind.
    let frozen = snapshot(&c, &u.id).await;
    let writes = [
        u.post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "more", "parentTurnId": t2}),
        )
        .await,
        u.post(
            &format!("/v1/conversations/{c}/agent-turns"),
            json!({"processId": k.p1, "parentTurnId": id(&t1)}),
        )
        .await,
        u.post(
            &format!("/v1/turns/{}/alternatives", id(&t1)),
            json!({"content": "edited"}),
        )
        .await,
        u.post(
            &format!("/v1/turns/{t2}/alternatives"),
            json!({"processId": k.p2}),
        )
        .await,
        u.put(
            &format!("/v1/turns/{}/active", id(&t1)),
            json!({"alternativeId": first(&t1)}),
        )
        .await,
    ];
    for r in &writes {
        assert_eq!(r.status.as_u16(), 409, "archived must refuse: {:?}", r.body);
        assert_eq!(r.code(), "CONFLICT");
    }
    assert_eq!(snapshot(&c, &u.id).await, frozen, "a refused write wrote");

    // Reversible.
    let back = u
        .patch(
            &format!("/v1/conversations/{c}"),
            json!({"status": "active"}),
        )
        .await;
    assert_eq!(back.ok(200)["status"], "active");
    let t3 = say(u, &c, "more", Some(&t2)).await;
    assert_eq!(t3["sequence"], 3);
    u.patch(
        &format!("/v1/conversations/{c}"),
        json!({"status": "deleted"}),
    )
    .await
    .ok(400);

    // If-Match: a stale revision loses (409) and changes nothing.
    let now = u
        .get(&format!("/v1/conversations/{c}"))
        .await
        .ok(200)
        .clone();
    let rev = now["revision"].as_i64().unwrap();
    let stale = (rev - 1).to_string();
    let r = u
        .send(
            Method::PATCH,
            &format!("/v1/conversations/{c}"),
            Some(&json!({"title": "lost"})),
            &[("If-Match", stale.as_str())],
        )
        .await;
    assert_eq!(r.status.as_u16(), 409, "{:?}", r.body);
    assert_eq!(
        u.get(&format!("/v1/conversations/{c}")).await.ok(200)["title"],
        now["title"]
    );
    let fresh = rev.to_string();
    let r = u
        .send(
            Method::PATCH,
            &format!("/v1/conversations/{c}"),
            Some(&json!({"title": "won"})),
            &[("If-Match", fresh.as_str())],
        )
        .await;
    assert_eq!(r.ok(200)["title"], "won");
    assert!(r.body["revision"].as_i64().unwrap() > rev);
}

// ---------------------------------------------------------------------------------------------
// CONV-2
// ---------------------------------------------------------------------------------------------

async fn default_edges(c: &str) -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Edge {
        p: String,
        since: Option<String>,
    }
    let rows: Vec<Edge> = graph_rows(
        aiden_graph_query(
            "MATCH (:Conversation {id: $c})-[d:DEFAULT_PROCESS]->(p:Process) RETURN p.id AS p, d.since AS since",
        )
        .param("c", c),
    )
    .await;
    rows.into_iter()
        .map(|e| (e.p, e.since.unwrap_or_default()))
        .collect()
}

/// CONV-2: a default Process must be an enabled Process the owner can see, on create and PATCH;
/// refusals write nothing; `null` clears the edge.
#[tokio::test]
async fn conv_2_default_process_must_be_enabled_and_visible_to_the_owner() {
    let k = kit(user().await).await;
    let other = kit(user().await).await;
    let u = &k.u;
    let theirs_shared = id(&fixtures::create(
        &other.u,
        "processes",
        agent_body("SHARED", &other.reply_tool, false, true),
    )
    .await);

    let c = u
        .post("/v1/conversations", json!({"defaultProcessId": k.p1}))
        .await
        .ok(201)
        .clone();
    assert_eq!(c["defaultProcessId"], json!(k.p1));
    let c = id(&c);
    assert_eq!(
        default_edges(&c)
            .await
            .into_iter()
            .map(|e| e.0)
            .collect::<Vec<_>>(),
        [k.p1.as_str()]
    );
    let count = conversation_count(&u.id).await;
    for bad in [other.p1.as_str(), "no-such-process"] {
        u.post("/v1/conversations", json!({"defaultProcessId": bad}))
            .await
            .rejects(422, "CONV-2");
    }
    u.patch(
        &format!("/v1/processes/{}", k.p2),
        json!({"enabled": false}),
    )
    .await
    .ok(200);
    u.post("/v1/conversations", json!({"defaultProcessId": k.p2}))
        .await
        .rejects(422, "CONV-2");
    assert_eq!(
        conversation_count(&u.id).await,
        count,
        "a refused create made a Conversation"
    );
    // Another user's shared Process is visible, so it may be the default.
    let visible = u
        .post(
            "/v1/conversations",
            json!({"defaultProcessId": theirs_shared}),
        )
        .await;
    assert_eq!(visible.ok(201)["defaultProcessId"], json!(theirs_shared));

    let before = snapshot(&c, &u.id).await;
    for bad in [k.p2.as_str(), other.p1.as_str(), "no-such-process"] {
        u.patch(
            &format!("/v1/conversations/{c}"),
            json!({"defaultProcessId": bad}),
        )
        .await
        .rejects(422, "CONV-2");
    }
    assert_eq!(snapshot(&c, &u.id).await, before);
    let changed = u
        .patch(
            &format!("/v1/conversations/{c}"),
            json!({"defaultProcessId": theirs_shared}),
        )
        .await;
    assert_eq!(changed.ok(200)["defaultProcessId"], json!(theirs_shared));
    assert_eq!(default_edges(&c).await.len(), 1);
    let cleared = u
        .patch(
            &format!("/v1/conversations/{c}"),
            json!({"defaultProcessId": null}),
        )
        .await;
    assert_eq!(cleared.ok(200)["defaultProcessId"], Value::Null);
    assert!(default_edges(&c).await.is_empty(), "null removes the edge");
}

/// CONV-2: every agent turn (new Turn or regeneration) points DEFAULT_PROCESS at its Process,
/// idempotently: one edge, untouched when the same Process runs again; a refused agent turn
/// (disabled Process, PROC-8) changes nothing.
#[tokio::test]
async fn conv_2_agent_turns_update_the_default_process_idempotently() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    assert_eq!(
        u.get(&format!("/v1/conversations/{c}")).await.ok(200)["defaultProcessId"],
        Value::Null
    );
    let t1 = say(u, &c, "first", None).await;
    let r1 = answer(u, &c, &k.p1, &id(&t1), None).await;
    let t2 = text(&r1["turnId"]);
    let conv = u
        .get(&format!("/v1/conversations/{c}"))
        .await
        .ok(200)
        .clone();
    assert_eq!(conv["defaultProcessId"], json!(k.p1));
    let edges = default_edges(&c).await;
    assert_eq!(edges.len(), 1);
    assert_eq!(edges[0].0, k.p1);
    let t3 = say(u, &c, "second", Some(&t2)).await;
    answer(u, &c, &k.p1, &id(&t3), None).await;
    assert_eq!(
        default_edges(&c).await,
        edges,
        "running the same Process again leaves the edge as it was"
    );
    regen(u, &t2, &k.p2, None).await;
    let conv = u
        .get(&format!("/v1/conversations/{c}"))
        .await
        .ok(200)
        .clone();
    assert_eq!(
        conv["defaultProcessId"],
        json!(k.p2),
        "regenerations count too"
    );
    let edges = default_edges(&c).await;
    assert_eq!(edges.len(), 1, "{edges:?}");
    assert_eq!(edges[0].0, k.p2);

    u.patch(
        &format!("/v1/processes/{}", k.p1),
        json!({"enabled": false}),
    )
    .await
    .ok(200);
    let before = snapshot(&c, &u.id).await;
    u.post(
        &format!("/v1/conversations/{c}/agent-turns"),
        json!({"processId": k.p1, "parentTurnId": id(&t3)}),
    )
    .await
    .rejects(422, "PROC-8");
    u.post(
        &format!("/v1/turns/{t2}/alternatives"),
        json!({"processId": k.p1}),
    )
    .await
    .rejects(422, "PROC-8");
    assert_eq!(snapshot(&c, &u.id).await, before);
    assert_eq!(default_edges(&c).await[0].0, k.p2);
}

// ---------------------------------------------------------------------------------------------
// CONV-3
// ---------------------------------------------------------------------------------------------

/// CONV-3: a fork at an older (stale) Alternative gets its own copy of that Alternative's path
/// (new ids, same speakers, contents and executedBy, one active valid Alternative per Turn),
/// records FORKED_FROM, and from then on neither side sees the other's changes.
#[tokio::test]
async fn conv_3_a_fork_copies_the_path_and_evolves_independently() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "q1", None).await;
    let (t1_id, u1) = (id(&t1), first(&t1));
    let r1 = answer(u, &c, &k.p1, &t1_id, None).await;
    let t2_id = text(&r1["turnId"]);
    let t3 = say(u, &c, "q2", Some(&t2_id)).await;
    let (t3_id, u3) = (id(&t3), first(&t3));
    // The user edits q1 and regenerates: u3 now hangs off an older answer (stale).
    let u1b = edit(u, &t1_id, "q1 edited", None).await;
    let r2 = regen(u, &t2_id, &k.p2, None).await;
    assert_eq!(r2["respondsTo"], u1b["id"]);
    assert_eq!(alternative(u, &t3_id, &u3).await["cacheStatus"], "stale");
    let origin_ids: HashSet<String> = all_alts(&tree(u, &c).await)
        .iter()
        .map(id)
        .chain(turns_of(&tree(u, &c).await).iter().map(id))
        .collect();

    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": t3_id, "alternativeId": u3, "title": "branch"}),
        )
        .await
        .ok(201)
        .clone();
    let f = id(&fork);
    assert_ne!(f, c);
    assert_eq!(
        fork["forkedFrom"],
        json!({"conversationId": c, "originTurnId": t3_id, "originAlternativeId": u3})
    );
    assert_eq!(fork["title"], "branch");
    assert_eq!(fork["ownerId"], json!(u.id));
    assert_eq!(fork["status"], "active");
    assert_eq!(fork["turnCount"], 3);
    #[derive(serde::Deserialize)]
    struct Forked {
        origin: String,
        turn: Option<String>,
        alt: Option<String>,
    }
    let edges: Vec<Forked> = graph_rows(
        aiden_graph_query(
            "MATCH (:Conversation {id: $f})-[e:FORKED_FROM]->(o:Conversation)
             RETURN o.id AS origin, e.originTurn AS turn, e.originAlternative AS alt",
        )
        .param("f", f.as_str()),
    )
    .await;
    assert_eq!(edges.len(), 1, "one FORKED_FROM edge");
    assert_eq!(edges[0].origin, c);
    assert_eq!(edges[0].turn.as_deref(), Some(t3_id.as_str()));
    assert_eq!(edges[0].alt.as_deref(), Some(u3.as_str()));

    // The copy: u1 → r1 → u3 (the stale path, not the active one), all its own.
    let ft = tree(u, &f).await;
    let turns = turns_of(&ft);
    assert_eq!(turns.len(), 3, "{ft}");
    let expect = [
        ("user", "q1".to_owned(), Value::Null),
        ("agent", text(&r1["content"]), r1["executedBy"].clone()),
        ("user", "q2".to_owned(), Value::Null),
    ];
    let mut prev: Option<(String, String)> = None;
    for (i, (t, (speaker, content, executed))) in turns.iter().zip(expect.iter()).enumerate() {
        assert_eq!(t["conversationId"], json!(f));
        assert_eq!(t["sequence"], i as i64 + 1, "TURN-1 in the fork");
        assert_eq!(t["speaker"], *speaker);
        assert!(!origin_ids.contains(&id(t)), "a copied Turn has a new id");
        let alts = t["alternatives"].as_array().unwrap();
        assert_eq!(alts.len(), 1, "one Alternative per copied Turn: {t}");
        let a = &alts[0];
        assert!(
            !origin_ids.contains(&id(a)),
            "a copied Alternative has a new id"
        );
        assert_eq!(a["content"], json!(content));
        assert_eq!(a["executedBy"], *executed);
        assert_eq!(a["isActive"], true);
        assert_eq!(
            a["cacheStatus"], "valid",
            "the copy is on its own active path"
        );
        assert_eq!(a["hasChildren"], i < 2);
        match &prev {
            None => {
                assert_eq!(t["parentTurnId"], Value::Null);
                assert_eq!(a["respondsTo"], Value::Null);
            }
            Some((pt, pa)) => {
                assert_eq!(t["parentTurnId"], json!(pt));
                assert_eq!(a["respondsTo"], json!(pa));
            }
        }
        prev = Some((id(t), id(a)));
    }
    let (leaf_turn, leaf_alt) = prev.unwrap();
    assert_eq!(fork["currentAlternativeId"], json!(leaf_alt));
    let fwm = wm(u, &f, "").await;
    assert_eq!(
        contents(&fwm),
        vec!["q1".to_owned(), text(&r1["content"]), "q2".to_owned()]
    );
    let fork_turns: HashSet<String> = turns.iter().map(id).collect();
    for p in path(&fwm) {
        assert!(fork_turns.contains(&text(&p["turnId"])), "WM-3: {p}");
    }

    // Changes in the fork stay in the fork.
    let origin_before = tree(u, &c).await;
    let fu = say(u, &f, "fork only", Some(&leaf_turn)).await;
    let fr = answer(u, &f, &k.p2, &id(&fu), None).await;
    assert_eq!(fr["content"], "answer to fork only [P2]");
    edit(u, &id(&turns[0]), "q1 edited in the fork", None).await;
    assert_eq!(tree(u, &c).await, origin_before, "the origin changed");
    assert_eq!(
        alternative(u, &t3_id, &u3).await["hasChildren"],
        false,
        "the fork's new Turn responds to the copy, not to the origin"
    );
    // Changes in the origin stay in the origin.
    let fork_before = tree(u, &f).await;
    edit(u, &t3_id, "q2 edited in the origin", None).await;
    switch(u, &t1_id, &u1).await;
    regen(u, &t2_id, &k.p1, None).await;
    assert_eq!(tree(u, &f).await, fork_before, "the fork changed");

    // Bad fork points are refused and make no Conversation.
    let count = conversation_count(&u.id).await;
    u.post(
        &format!("/v1/conversations/{c}/fork"),
        json!({"turnId": t1_id, "alternativeId": text(&r1["id"])}),
    )
    .await
    .rejects(422, "TURN-2");
    u.post(
        &format!("/v1/conversations/{c}/fork"),
        json!({"turnId": leaf_turn, "alternativeId": leaf_alt}),
    )
    .await
    .rejects(422, "CONV-3");
    assert_eq!(conversation_count(&u.id).await, count);
}

/// CONV-3: a fork needs a settled path; forking at an Alternative still generating is refused
/// (409) and creates no Conversation; once the run finishes the same fork succeeds with the
/// content.
#[tokio::test]
async fn conv_3_forking_a_path_that_is_still_generating_is_refused() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "wait for it", None).await;
    let g = start(u, &c, &k.held, &id(&t1), None).await;
    let (turn, alt) = (text(&g["turnId"]), text(&g["alternativeId"]));
    let count = conversation_count(&u.id).await;
    let r = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": turn, "alternativeId": alt}),
        )
        .await;
    assert_eq!(r.status.as_u16(), 409, "{:?}", r.body);
    assert_eq!(r.code(), "CONFLICT");
    assert_eq!(conversation_count(&u.id).await, count);
    k.release(1);
    let done = settled(u, &turn, &alt).await;
    assert_eq!(done["cacheStatus"], "valid");
    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": turn, "alternativeId": alt}),
        )
        .await
        .ok(201)
        .clone();
    let fwm = wm(u, &id(&fork), "").await;
    assert_eq!(
        contents(&fwm),
        ["wait for it", "answer to wait for it [HOLD]"]
    );
}

// ---------------------------------------------------------------------------------------------
// TURN-1
// ---------------------------------------------------------------------------------------------

/// TURN-1: a Turn's sequence is its depth (root 1, child parent + 1; siblings share it) for
/// user, agent and continued-from-older Turns; HAS_TURN.sequence agrees; only the first Turn
/// is a root.
#[tokio::test]
async fn turn_1_sequence_is_the_depth_and_only_the_first_turn_is_a_root() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let root = say(u, &c, "root", None).await;
    assert_eq!(root["sequence"], 1);
    assert_eq!(root["parentTurnId"], Value::Null);
    assert_eq!(root["viaAlternative"], Value::Null);
    assert_eq!(root["conversationId"], json!(c));
    assert_eq!(root["speaker"], "user");
    assert_eq!(root["turnType"], "message");
    let before = snapshot(&c, &u.id).await;
    u.post(
        &format!("/v1/conversations/{c}/turns"),
        json!({"speaker": "user", "content": "a second root"}),
    )
    .await
    .rejects(422, "TURN-3");
    u.post(
        &format!("/v1/conversations/{c}/turns"),
        json!({"speaker": "user", "content": "x", "parentAlternativeId": first(&root)}),
    )
    .await
    .rejects(422, "TURN-3");
    assert_eq!(snapshot(&c, &u.id).await, before);

    let child = say(u, &c, "child", Some(&id(&root))).await;
    let sibling = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "system", "content": "sibling", "turnType": "tool_result",
                   "parentTurnId": id(&root)}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(child["sequence"], 2);
    assert_eq!(sibling["sequence"], 2, "siblings share a depth");
    assert_eq!(sibling["speaker"], "system");
    assert_eq!(sibling["turnType"], "tool_result");
    let agent = answer(u, &c, &k.p1, &id(&child), None).await;
    let agent_turn = get_turn(u, &text(&agent["turnId"])).await;
    assert_eq!(agent_turn["sequence"], 3);
    assert_eq!(agent_turn["speaker"], "agent");
    // Continue from an older Alternative of `child`: still depth 3.
    let child_b = edit(u, &id(&child), "child, edited", None).await;
    let older = say_via(u, &c, "from the older child", &id(&child), &first(&child)).await;
    assert_eq!(older["sequence"], 3);
    assert_eq!(older["viaAlternative"], json!(first(&child)));
    let deeper = say(u, &c, "deeper", Some(&text(&agent["turnId"]))).await;
    assert_eq!(deeper["sequence"], 4);
    let _ = child_b;

    let full = tree(u, &c).await;
    let turns = turns_of(&full);
    assert_eq!(turns.len(), 6);
    let by_id: HashMap<String, Value> = turns.iter().map(|t| (id(t), t.clone())).collect();
    for t in &turns {
        let mut depth = 1;
        let mut at = t.clone();
        while let Some(p) = at["parentTurnId"].as_str() {
            depth += 1;
            at = by_id[p].clone();
        }
        assert_eq!(t["sequence"], depth, "sequence is the depth: {t}");
    }
    let seqs: Vec<i64> = turns
        .iter()
        .map(|t| t["sequence"].as_i64().unwrap())
        .collect();
    let mut sorted = seqs.clone();
    sorted.sort();
    assert_eq!(seqs, sorted, "the tree lists turns by sequence");
    #[derive(serde::Deserialize)]
    struct Row {
        id: String,
        edge: i64,
        node: i64,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (:Conversation {id: $c})-[h:HAS_TURN]->(t:ConversationTurn)
             RETURN t.id AS id, h.sequence AS edge, t.sequence AS node",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(rows.len(), 6, "one HAS_TURN per Turn");
    for r in rows {
        assert_eq!(r.edge, r.node);
        assert_eq!(by_id[&r.id]["sequence"], r.edge);
    }
    assert_eq!(full["conversation"]["turnCount"], 6);
}

/// TURN-1 under concurrency: 20 new Turns under one parent at once all get depth 2, each is
/// counted once, and a refused one (409) leaves no Turn behind.
#[tokio::test]
async fn turn_1_concurrent_new_turns_under_one_parent_are_each_counted_once() {
    let u = user().await;
    let c = conversation(&u).await;
    let root = say(&u, &c, "root", None).await;
    let root_id = id(&root);
    let adds = (0..20).map(|i| {
        let (u, c, root_id) = (u.clone(), c.clone(), root_id.clone());
        async move {
            u.post(
                &format!("/v1/conversations/{c}/turns"),
                json!({"speaker": "user", "content": format!("child {i}"), "parentTurnId": root_id}),
            )
            .await
        }
    });
    let replies = join_all(adds).await;
    let mut made = 0;
    for r in &replies {
        match r.status.as_u16() {
            201 => made += 1,
            409 => assert_eq!(r.code(), "CONFLICT"),
            s => panic!("unexpected {s}: {:?}", r.body),
        }
    }
    assert!(made > 0, "no concurrent Turn was created");
    let full = tree(&u, &c).await;
    let turns = turns_of(&full);
    assert_eq!(turns.len(), 1 + made);
    assert_eq!(full["conversation"]["turnCount"], 1 + made as i64);
    for t in &turns[1..] {
        assert_eq!(t["sequence"], 2);
        assert_eq!(t["parentTurnId"], json!(root_id));
        assert_eq!(t["alternatives"][0]["respondsTo"], json!(first(&root)));
    }
    assert_eq!(
        tree_alt(&full, &first(&root))["hasChildren"],
        true,
        "TURN-6: hasChildren"
    );
}

// ---------------------------------------------------------------------------------------------
// TURN-2
// ---------------------------------------------------------------------------------------------

async fn active_edges(turn: &str) -> i64 {
    #[derive(serde::Deserialize)]
    struct N {
        n: i64,
    }
    graph_rows::<N>(
        aiden_graph_query(
            "MATCH (:ConversationTurn {id: $t})-[h:HAS_ALTERNATIVE]->(:Alternative)
             WHERE h.isActive = true RETURN count(h) AS n",
        )
        .param("t", turn),
    )
    .await[0]
        .n
}

/// TURN-2: 50 concurrent switches on one Turn leave exactly one active Alternative (API and
/// graph), it is one that a successful switch asked for, the Conversation's current position
/// agrees with it, and no switch created or removed an Alternative. A switch that lost the race
/// may answer 409 CONFLICT (the contract's "concurrent modification lost"), never 5xx.
#[tokio::test]
async fn turn_2_exactly_one_active_alternative_under_50_concurrent_switches() {
    let u = user().await;
    let c = conversation(&u).await;
    let t = say(&u, &c, "v1", None).await;
    let turn = id(&t);
    let mut alts = vec![first(&t)];
    for i in 2..=5 {
        alts.push(id(&edit(&u, &turn, &format!("v{i}"), None).await));
    }
    let switches = (0..50).map(|i| {
        let (u, turn, alt) = (u.clone(), turn.clone(), alts[i % alts.len()].clone());
        async move {
            let r = u
                .put(
                    &format!("/v1/turns/{turn}/active"),
                    json!({"alternativeId": alt}),
                )
                .await;
            (alt, r)
        }
    });
    let replies = join_all(switches).await;
    let mut won = HashSet::new();
    let mut conflicts = 0;
    for (alt, r) in &replies {
        match r.status.as_u16() {
            200 => {
                assert_eq!(
                    actives(&r.body).len(),
                    1,
                    "a reply shows one active: {:?}",
                    r.body
                );
                won.insert(alt.clone());
            }
            409 => {
                assert_eq!(r.code(), "CONFLICT");
                conflicts += 1;
            }
            s => panic!("unexpected {s}: {:?}", r.body),
        }
    }
    eprintln!("turn_2 switches: {} of 50 answered 409", conflicts);
    assert!(!won.is_empty(), "every switch failed");
    let now = get_turn(&u, &turn).await;
    let active = actives(&now);
    assert_eq!(active.len(), 1, "{now}");
    assert_eq!(active_edges(&turn).await, 1, "graph: one isActive edge");
    assert!(
        won.contains(&active[0]),
        "the active Alternative {} was only asked for by switches that failed",
        active[0]
    );
    let alts_now: Vec<String> = now["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .map(id)
        .collect();
    assert_eq!(
        alts_now, alts,
        "switching never adds or removes Alternatives"
    );
    let conv = u
        .get(&format!("/v1/conversations/{c}"))
        .await
        .ok(200)
        .clone();
    assert_eq!(conv["currentTurnId"], json!(turn));
    assert_eq!(
        conv["currentAlternativeId"],
        json!(active[0]),
        "the last switch to commit set both the active Alternative and the position"
    );
}

/// TURN-2 / TURN-8: 20 concurrent edits of one user Turn never duplicate a sequence: the
/// Alternatives are numbered 1..n without gaps, exactly one is active and it is the newest
/// (highest sequence), and a refused edit (409) left no Alternative.
#[tokio::test]
async fn turn_2_concurrent_new_alternatives_never_duplicate_a_sequence() {
    let u = user().await;
    let c = conversation(&u).await;
    let t = say(&u, &c, "v0", None).await;
    let turn = id(&t);
    let adds = (0..20).map(|i| {
        let (u, turn) = (u.clone(), turn.clone());
        async move {
            let content = format!("edit {i}");
            let r = u
                .post(
                    &format!("/v1/turns/{turn}/alternatives"),
                    json!({"content": content}),
                )
                .await;
            (content, r)
        }
    });
    let replies = join_all(adds).await;
    let mut made = HashSet::new();
    for (content, r) in &replies {
        match r.status.as_u16() {
            201 => {
                made.insert(content.clone());
            }
            409 => assert_eq!(r.code(), "CONFLICT"),
            s => panic!("unexpected {s}: {:?}", r.body),
        }
    }
    assert!(!made.is_empty());
    let now = get_turn(&u, &turn).await;
    let alts = now["alternatives"].as_array().unwrap();
    assert_eq!(alts.len(), 1 + made.len(), "{now}");
    let seqs: Vec<i64> = alts
        .iter()
        .map(|a| a["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=alts.len() as i64).collect::<Vec<_>>());
    let stored: HashSet<String> = alts[1..].iter().map(|a| text(&a["content"])).collect();
    assert_eq!(stored, made, "exactly the accepted edits are stored");
    let active = actives(&now);
    assert_eq!(active.len(), 1);
    assert_eq!(active_edges(&turn).await, 1);
    assert_eq!(
        json!(active[0]),
        alts.last().unwrap()["id"],
        "TURN-8: the newest Alternative is the active one"
    );
    #[derive(serde::Deserialize)]
    struct Row {
        key: Option<String>,
        seq: i64,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (:ConversationTurn {id: $t})-[h:HAS_ALTERNATIVE]->(a:Alternative)
             RETURN a.seqKey AS key, h.sequence AS seq",
        )
        .param("t", turn.as_str()),
    )
    .await;
    let mut edge_seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
    edge_seqs.sort();
    assert_eq!(edge_seqs, seqs, "HAS_ALTERNATIVE.sequence in the graph");
    let keys: HashSet<Option<String>> = rows.into_iter().map(|r| r.key).collect();
    assert_eq!(keys.len(), alts.len());
}

/// TURN-2 with agent regenerations: 8 concurrent new Alternatives of one agent Turn get
/// distinct sequences, one is active (the newest), every one settles with its own content, and
/// no Run exists without its Alternative (a refused addition started no run).
#[tokio::test]
async fn turn_2_concurrent_regenerations_never_duplicate_a_sequence_or_orphan_a_run() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "regenerate me", None).await;
    let r1 = answer(u, &c, &k.p1, &id(&t1), None).await;
    let turn = text(&r1["turnId"]);
    let adds = (0..8).map(|i| {
        let (u, turn) = (u.clone(), turn.clone());
        let p = if i % 2 == 0 {
            k.p1.clone()
        } else {
            k.p2.clone()
        };
        async move {
            u.post(
                &format!("/v1/turns/{turn}/alternatives"),
                json!({"processId": p}),
            )
            .await
        }
    });
    let replies = join_all(adds).await;
    let mut started = Vec::new();
    for r in &replies {
        match r.status.as_u16() {
            202 => started.push(r.body.clone()),
            409 => assert_eq!(r.code(), "CONFLICT"),
            s => panic!("unexpected {s}: {:?}", r.body),
        }
    }
    assert!(!started.is_empty());
    for g in &started {
        let a = settled(u, &turn, &text(&g["alternativeId"])).await;
        assert_eq!(a["runId"], g["runId"]);
        let tag = if a["executedBy"]["processId"] == json!(k.p1) {
            "P1"
        } else {
            "P2"
        };
        assert_eq!(
            a["content"],
            json!(format!("answer to regenerate me [{tag}]"))
        );
    }
    let now = get_turn(u, &turn).await;
    let alts = now["alternatives"].as_array().unwrap();
    assert_eq!(alts.len(), 1 + started.len());
    let seqs: Vec<i64> = alts
        .iter()
        .map(|a| a["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=alts.len() as i64).collect::<Vec<_>>());
    let active = actives(&now);
    assert_eq!(active.len(), 1);
    assert_eq!(json!(active[0]), alts.last().unwrap()["id"]);
    #[derive(serde::Deserialize)]
    struct Row {
        run: String,
        alt: Option<String>,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (r:Run {ownerId: $o}) WHERE r.alternativeId IS NOT NULL
             OPTIONAL MATCH (a:Alternative {id: r.alternativeId})
             RETURN r.id AS run, a.id AS alt",
        )
        .param("o", u.id.as_str()),
    )
    .await;
    assert_eq!(rows.len(), alts.len(), "one Run per agent Alternative");
    for r in rows {
        assert!(r.alt.is_some(), "run {} has no Alternative", r.run);
    }
}

/// TURN-2 with switches and additions racing on one Turn: one active Alternative, contiguous
/// sequences, and the Conversation's position is that active Alternative.
#[tokio::test]
async fn turn_2_mixed_concurrent_switches_and_additions_keep_one_active() {
    let u = user().await;
    let c = conversation(&u).await;
    let t = say(&u, &c, "a", None).await;
    let turn = id(&t);
    let mut alts = vec![first(&t)];
    for v in ["b", "c"] {
        alts.push(id(&edit(&u, &turn, v, None).await));
    }
    let switches = (0..30).map(|i| {
        let (u, turn, alt) = (u.clone(), turn.clone(), alts[i % 3].clone());
        async move {
            u.put(
                &format!("/v1/turns/{turn}/active"),
                json!({"alternativeId": alt}),
            )
            .await
            .status
            .as_u16()
        }
    });
    let additions = (0..10).map(|i| {
        let (u, turn) = (u.clone(), turn.clone());
        async move {
            u.post(
                &format!("/v1/turns/{turn}/alternatives"),
                json!({"content": format!("new {i}")}),
            )
            .await
            .status
            .as_u16()
        }
    });
    let (s, a) = futures::join!(join_all(switches), join_all(additions));
    assert!(s.iter().all(|x| matches!(x, 200 | 409)), "{s:?}");
    assert!(a.iter().all(|x| matches!(x, 201 | 409)), "{a:?}");
    let added = a.iter().filter(|x| **x == 201).count();
    let now = get_turn(&u, &turn).await;
    let all = now["alternatives"].as_array().unwrap();
    assert_eq!(all.len(), 3 + added);
    let seqs: Vec<i64> = all
        .iter()
        .map(|a| a["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=all.len() as i64).collect::<Vec<_>>());
    let active = actives(&now);
    assert_eq!(active.len(), 1, "{now}");
    assert_eq!(active_edges(&turn).await, 1);
    let conv = u
        .get(&format!("/v1/conversations/{c}"))
        .await
        .ok(200)
        .clone();
    assert_eq!(conv["currentAlternativeId"], json!(active[0]));
}

/// TURN-2: only an Alternative of the Turn itself can become active; an Alternative of the
/// parent, a child, a sibling Turn or another conversation (or an unknown id) is refused with
/// 422 TURN-2 and nothing changes in either conversation.
#[tokio::test]
async fn turn_2_switching_to_an_alternative_of_another_turn_is_refused_without_writes() {
    let u = user().await;
    let c = conversation(&u).await;
    let other = conversation(&u).await;
    let t1 = say(&u, &c, "one", None).await;
    let t2 = say(&u, &c, "two", Some(&id(&t1))).await;
    let sib = say(&u, &c, "two'", Some(&id(&t1))).await;
    let t3 = say(&u, &c, "three", Some(&id(&t2))).await;
    let x = say(&u, &other, "elsewhere", None).await;
    let before = snapshot(&c, &u.id).await;
    let before_other = snapshot(&other, &u.id).await;
    let put = |turn: String, alt: String| {
        let u = u.clone();
        async move {
            u.put(
                &format!("/v1/turns/{turn}/active"),
                json!({"alternativeId": alt}),
            )
            .await
        }
    };
    for (turn, alt) in [
        (id(&t2), first(&t1)),
        (id(&t2), first(&t3)),
        (id(&t2), first(&sib)),
        (id(&t2), first(&x)),
        (id(&t2), "no-such-alternative".to_owned()),
        (id(&x), first(&t1)),
    ] {
        put(turn, alt).await.rejects(422, "TURN-2");
    }
    u.put(&format!("/v1/turns/{}/active", id(&t2)), json!({}))
        .await
        .ok(400);
    assert_eq!(snapshot(&c, &u.id).await, before);
    assert_eq!(snapshot(&other, &u.id).await, before_other);
    // Switching to the already active Alternative is fine and keeps one active.
    let same = switch(&u, &id(&t2), &first(&t2)).await;
    assert_eq!(actives(&same), [first(&t2)]);
}

// ---------------------------------------------------------------------------------------------
// TURN-3
// ---------------------------------------------------------------------------------------------

/// TURN-3 in the graph: a child Turn has one CHILD_OF to its parent (same conversation), each of
/// its Alternatives one RESPONDS_TO to an Alternative of that parent — the parent's active one
/// by default, or the one asked for; a root has neither, and a root's new Alternative may not
/// name a parent Alternative.
#[tokio::test]
async fn turn_3_child_of_and_responds_to_follow_the_chosen_parent_alternative() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "one", None).await;
    let (t1_id, u1) = (id(&t1), first(&t1));
    let u1b = id(&edit(u, &t1_id, "one, edited", None).await);
    let t2 = say(u, &c, "two", Some(&t1_id)).await;
    assert_eq!(t2["viaAlternative"], json!(u1b), "default: the active one");
    assert_eq!(t2["alternatives"][0]["respondsTo"], json!(u1b));
    let t2b = say_via(u, &c, "two, from the original", &t1_id, &u1).await;
    assert_eq!(t2b["viaAlternative"], json!(u1));
    assert_eq!(t2b["alternatives"][0]["respondsTo"], json!(u1));
    let r = answer(u, &c, &k.p1, &id(&t2), None).await;
    let agent_turn = text(&r["turnId"]);
    assert_eq!(r["respondsTo"], json!(first(&t2)));
    let u2b = id(&edit(u, &id(&t2), "two, edited", None).await);
    let r2 = regen(u, &agent_turn, &k.p2, None).await;
    assert_eq!(
        r2["respondsTo"],
        json!(u2b),
        "regeneration: the parent's active one"
    );
    let r3 = regen(u, &agent_turn, &k.p2, Some(&first(&t2))).await;
    assert_eq!(r3["respondsTo"], json!(first(&t2)), "or the one asked for");
    let before = snapshot(&c, &u.id).await;
    u.post(
        &format!("/v1/turns/{t1_id}/alternatives"),
        json!({"content": "root edit", "parentAlternativeId": u1}),
    )
    .await
    .rejects(422, "TURN-3");
    assert_eq!(snapshot(&c, &u.id).await, before);

    #[derive(serde::Deserialize)]
    struct TurnRow {
        turn: String,
        parent: Option<String>,
        parents: Vec<String>,
        convs: Vec<String>,
    }
    let turns: Vec<TurnRow> = graph_rows(
        aiden_graph_query(
            "MATCH (t:ConversationTurn {conversationId: $c})
             OPTIONAL MATCH (t)-[:CHILD_OF]->(p:ConversationTurn)
             RETURN t.id AS turn, t.parentTurnId AS parent, collect(p.id) AS parents,
                    collect(p.conversationId) AS convs",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(turns.len(), 4);
    for t in &turns {
        match &t.parent {
            None => assert!(t.parents.is_empty(), "a root has no CHILD_OF"),
            Some(p) => {
                assert_eq!(
                    t.parents,
                    [p.as_str()],
                    "one CHILD_OF to the parent: {}",
                    t.turn
                );
                assert_eq!(t.convs, [c.as_str()]);
            }
        }
    }
    let parent_of: HashMap<String, Option<String>> =
        turns.into_iter().map(|t| (t.turn, t.parent)).collect();
    #[derive(serde::Deserialize)]
    struct AltRow {
        turn: String,
        alt: String,
        targets: Vec<String>,
        target_turns: Vec<String>,
    }
    let alts: Vec<AltRow> = graph_rows(
        aiden_graph_query(
            "MATCH (t:ConversationTurn {conversationId: $c})-[:HAS_ALTERNATIVE]->(a:Alternative)
             OPTIONAL MATCH (a)-[:RESPONDS_TO]->(pa:Alternative)<-[:HAS_ALTERNATIVE]-(pt:ConversationTurn)
             RETURN t.id AS turn, a.id AS alt, collect(pa.id) AS targets,
                    collect(pt.id) AS target_turns",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(alts.len(), 8);
    let full = tree(u, &c).await;
    for a in alts {
        match &parent_of[&a.turn] {
            None => assert!(
                a.targets.is_empty(),
                "a root Alternative responds to nothing"
            ),
            Some(p) => {
                assert_eq!(
                    a.target_turns,
                    [p.as_str()],
                    "RESPONDS_TO into the parent Turn"
                );
                assert_eq!(
                    json!(a.targets),
                    json!([tree_alt(&full, &a.alt)["respondsTo"]]),
                    "the API's respondsTo is the edge"
                );
            }
        }
    }
}

/// TURN-3 bad input: a parent Alternative outside the parent Turn, a parent Turn of another
/// conversation or unknown, a missing parent, a root Alternative with a parent, a Process the
/// agent context cannot feed (PROC-6), an invisible Process (404), and bodies of the wrong kind
/// (400) are all refused, and neither conversation gains a Turn, an Alternative or a Run.
#[tokio::test]
async fn turn_3_responding_to_an_alternative_not_in_the_parent_turn_is_refused_without_writes() {
    let k = kit(user().await).await;
    let stranger = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let other = conversation(u).await;
    let t1 = say(u, &c, "one", None).await;
    let t2 = say(u, &c, "two", Some(&id(&t1))).await;
    let r = answer(u, &c, &k.p1, &id(&t2), None).await;
    let agent_turn = text(&r["turnId"]);
    let x = say(u, &other, "elsewhere", None).await;
    let before = snapshot(&c, &u.id).await;
    let before_other = snapshot(&other, &u.id).await;
    let (turns_s, agents_s, t2_alts_s, agent_alts_s) = (
        format!("/v1/conversations/{c}/turns"),
        format!("/v1/conversations/{c}/agent-turns"),
        format!("/v1/turns/{}/alternatives", id(&t2)),
        format!("/v1/turns/{agent_turn}/alternatives"),
    );
    let (turns, agents, t2_alts, agent_alts) = (
        turns_s.as_str(),
        agents_s.as_str(),
        t2_alts_s.as_str(),
        agent_alts_s.as_str(),
    );
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        (
            turns,
            json!({"speaker": "user", "content": "c", "parentTurnId": id(&t2), "parentAlternativeId": first(&t1)}),
            422,
            "TURN-3",
        ),
        (
            turns,
            json!({"speaker": "user", "content": "c", "parentTurnId": id(&t2), "parentAlternativeId": first(&x)}),
            422,
            "TURN-3",
        ),
        (
            turns,
            json!({"speaker": "user", "content": "c", "parentTurnId": id(&x)}),
            422,
            "TURN-3",
        ),
        (
            turns,
            json!({"speaker": "user", "content": "c", "parentTurnId": "no-such-turn"}),
            422,
            "TURN-3",
        ),
        (
            turns,
            json!({"speaker": "user", "content": "c"}),
            422,
            "TURN-3",
        ),
        (
            agents,
            json!({"processId": k.p1, "parentTurnId": id(&t2), "parentAlternativeId": first(&t1)}),
            422,
            "TURN-3",
        ),
        (
            agents,
            json!({"processId": k.p1, "parentTurnId": id(&x)}),
            422,
            "TURN-3",
        ),
        (
            t2_alts,
            json!({"content": "two'", "parentAlternativeId": first(&t2)}),
            422,
            "TURN-3",
        ),
        (
            t2_alts,
            json!({"content": "two'", "parentAlternativeId": first(&x)}),
            422,
            "TURN-3",
        ),
        (
            agent_alts,
            json!({"processId": k.p1, "parentAlternativeId": first(&t1)}),
            422,
            "TURN-3",
        ),
        (
            agents,
            json!({"processId": k.narrow, "parentTurnId": id(&t2)}),
            422,
            "PROC-6",
        ),
        (agent_alts, json!({"processId": k.narrow}), 422, "PROC-6"),
    ];
    for (route, body, status, invariant) in cases {
        let reply = u.post(route, body.clone()).await;
        assert_eq!(
            reply.status.as_u16(),
            status,
            "{route} {body}: {:?}",
            reply.body
        );
        reply.rejects(status, invariant);
    }
    for (route, body, status) in [
        (
            agents,
            json!({"processId": stranger.p1, "parentTurnId": id(&t2)}),
            404,
        ),
        (
            agents,
            json!({"processId": "no-such-process", "parentTurnId": id(&t2)}),
            404,
        ),
        (agent_alts, json!({"processId": stranger.p1}), 404),
        (t2_alts, json!({"processId": k.p1}), 400),
        (agent_alts, json!({"content": "typed by hand"}), 400),
        (
            turns,
            json!({"speaker": "agent", "content": "impersonation", "parentTurnId": id(&t2)}),
            400,
        ),
        (
            turns,
            json!({"speaker": "user", "content": "  ", "parentTurnId": id(&t2)}),
            400,
        ),
    ] {
        let reply = u.post(route, body.clone()).await;
        assert_eq!(
            reply.status.as_u16(),
            status,
            "{route} {body}: {:?}",
            reply.body
        );
    }
    assert_eq!(snapshot(&c, &u.id).await, before, "a refused request wrote");
    assert_eq!(snapshot(&other, &u.id).await, before_other);
}

/// TURN-3: there is nothing to respond to in an Alternative still generating or one whose run
/// failed: 409, nothing written; a valid Alternative of the same Turn can still be answered.
#[tokio::test]
async fn turn_3_responding_to_a_generating_or_failed_alternative_conflicts() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "q", None).await;
    let g = start(u, &c, &k.held, &id(&t1), None).await;
    let (turn, alt) = (text(&g["turnId"]), text(&g["alternativeId"]));
    let before = snapshot(&c, &u.id).await;
    for r in [
        u.post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "too early", "parentTurnId": turn}),
        )
        .await,
        u.post(
            &format!("/v1/conversations/{c}/agent-turns"),
            json!({"processId": k.p1, "parentTurnId": turn}),
        )
        .await,
    ] {
        assert_eq!(r.status.as_u16(), 409, "{:?}", r.body);
        assert_eq!(r.code(), "CONFLICT");
    }
    assert_eq!(snapshot(&c, &u.id).await, before);
    k.release(1);
    let ok = settled(u, &turn, &alt).await;
    assert_eq!(ok["cacheStatus"], "valid");
    let bad = regen(u, &turn, &k.broken, None).await;
    assert_eq!(bad["cacheStatus"], "failed");
    assert_eq!(actives(&get_turn(u, &turn).await), [id(&bad)]);
    let before = snapshot(&c, &u.id).await;
    let r = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "to the failure", "parentTurnId": turn}),
        )
        .await;
    assert_eq!(r.status.as_u16(), 409, "{:?}", r.body);
    assert_eq!(snapshot(&c, &u.id).await, before);
    let next = say_via(u, &c, "to the good one", &turn, &alt).await;
    assert_eq!(next["alternatives"][0]["respondsTo"], json!(alt));
}

// ---------------------------------------------------------------------------------------------
// TURN-4
// ---------------------------------------------------------------------------------------------

/// TURN-4: no route edits or deletes a Turn or an Alternative (every attempt answers a non-2xx,
/// non-5xx status and the graph is unchanged); an "edit" is a new Alternative, and the original
/// keeps its content and sequence — only `isActive` moves.
#[tokio::test]
async fn turn_4_no_route_edits_or_deletes_turns_or_alternatives() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "original", None).await;
    let (t1_id, u1) = (id(&t1), first(&t1));
    let r = answer(u, &c, &k.p1, &t1_id, None).await;
    let (agent_turn, r_id) = (text(&r["turnId"]), id(&r));
    let before = snapshot(&c, &u.id).await;
    let change = json!({"content": "changed", "alternativeId": u1, "speaker": "agent"});
    let attempts = [
        (Method::PATCH, format!("/v1/turns/{t1_id}")),
        (Method::PUT, format!("/v1/turns/{t1_id}")),
        (Method::DELETE, format!("/v1/turns/{t1_id}")),
        (Method::PATCH, format!("/v1/turns/{agent_turn}")),
        (Method::DELETE, format!("/v1/turns/{agent_turn}")),
        (Method::PATCH, format!("/v1/turns/{t1_id}/alternatives")),
        (Method::PUT, format!("/v1/turns/{t1_id}/alternatives")),
        (Method::DELETE, format!("/v1/turns/{t1_id}/alternatives")),
        (
            Method::PATCH,
            format!("/v1/turns/{t1_id}/alternatives/{u1}"),
        ),
        (Method::PUT, format!("/v1/turns/{t1_id}/alternatives/{u1}")),
        (
            Method::DELETE,
            format!("/v1/turns/{t1_id}/alternatives/{u1}"),
        ),
        (
            Method::DELETE,
            format!("/v1/turns/{agent_turn}/alternatives/{r_id}"),
        ),
        (Method::PATCH, format!("/v1/turns/{t1_id}/active")),
        (Method::DELETE, format!("/v1/turns/{t1_id}/active")),
        (Method::PATCH, format!("/v1/alternatives/{u1}")),
        (Method::PUT, format!("/v1/alternatives/{u1}")),
        (Method::DELETE, format!("/v1/alternatives/{u1}")),
        (Method::DELETE, format!("/v1/conversations/{c}/turns")),
        (Method::DELETE, format!("/v1/conversations/{c}/tree")),
    ];
    for (m, p) in attempts {
        let reply = u.send(m.clone(), &p, Some(&change), &[]).await;
        let s = reply.status.as_u16();
        assert!(
            !(200..300).contains(&s) && s < 500,
            "{m} {p} answered {s}: {:?}",
            reply.body
        );
    }
    assert_eq!(
        snapshot(&c, &u.id).await,
        before,
        "a refused mutation wrote"
    );

    let edited = edit(u, &t1_id, "revised", None).await;
    let now = get_turn(u, &t1_id).await;
    let orig = alt_of(&now, &u1);
    assert_eq!(orig["content"], "original");
    assert_eq!(orig["sequence"], 1);
    assert_eq!(orig["isActive"], false);
    assert_eq!(orig["createdAt"], t1["alternatives"][0]["createdAt"]);
    assert_eq!(edited["sequence"], 2);
    switch(u, &t1_id, &u1).await;
    let back = alt_of(&get_turn(u, &t1_id).await, &u1);
    assert_eq!(back["content"], "original");
    assert_eq!(back["isActive"], true);
    #[derive(serde::Deserialize)]
    struct Row {
        content: Option<String>,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query("MATCH (a:Alternative {id: $a}) RETURN a.content AS content")
            .param("a", r_id.as_str()),
    )
    .await;
    assert_eq!(rows[0].content.as_deref(), r["content"].as_str());
}

// ---------------------------------------------------------------------------------------------
// TURN-5
// ---------------------------------------------------------------------------------------------

/// TURN-5: agent Alternatives, and only they, are EXECUTED_BY the Process version that made
/// them: `executedBy {processId, version}` with version fixed at creation (a later Process
/// version is used, and recorded, only by later Alternatives).
#[tokio::test]
async fn turn_5_only_agent_alternatives_are_executed_by_a_process_version() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "q", None).await;
    assert_eq!(t1["alternatives"][0]["executedBy"], Value::Null);
    assert_eq!(t1["alternatives"][0]["runId"], Value::Null);
    let r1 = answer(u, &c, &k.p1, &id(&t1), None).await;
    assert_eq!(r1["executedBy"], json!({"processId": k.p1, "version": 1}));
    let turn = text(&r1["turnId"]);
    let sys = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "system", "content": "note", "parentTurnId": turn}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(sys["alternatives"][0]["executedBy"], Value::Null);
    edit(u, &id(&t1), "q, edited", None).await;

    let patched = u
        .patch(
            &format!("/v1/processes/{}", k.p1),
            json!({"outputTemplate": "v2: {{r.body.reply}}"}),
        )
        .await;
    assert_eq!(patched.ok(200)["version"], 2);
    let r2 = regen(u, &turn, &k.p1, None).await;
    assert_eq!(r2["executedBy"], json!({"processId": k.p1, "version": 2}));
    assert_eq!(r2["content"], "v2: answer to q, edited", "version 2 ran");
    let r3 = regen(u, &turn, &k.p2, None).await;
    assert_eq!(r3["executedBy"], json!({"processId": k.p2, "version": 1}));
    assert_eq!(
        alternative(u, &turn, &id(&r1)).await["executedBy"],
        json!({"processId": k.p1, "version": 1}),
        "the version recorded at creation stays"
    );

    #[derive(serde::Deserialize)]
    struct Row {
        speaker: String,
        id: String,
        processes: Vec<String>,
        versions: Vec<i64>,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (t:ConversationTurn {conversationId: $c})-[:HAS_ALTERNATIVE]->(a:Alternative)
             OPTIONAL MATCH (a)-[e:EXECUTED_BY]->(p:Process)
             RETURN t.speaker AS speaker, a.id AS id, collect(p.id) AS processes,
                    collect(e.version) AS versions",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(rows.len(), 6);
    let full = tree(u, &c).await;
    for r in rows {
        let api = tree_alt(&full, &r.id)["executedBy"].clone();
        if r.speaker == "agent" {
            assert_eq!(r.processes.len(), 1, "one EXECUTED_BY on agent {}", r.id);
            assert_eq!(
                api,
                json!({"processId": r.processes[0], "version": r.versions[0]})
            );
        } else {
            assert!(
                r.processes.is_empty(),
                "a {} Alternative has EXECUTED_BY",
                r.speaker
            );
            assert_eq!(api, Value::Null);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// TURN-6
// ---------------------------------------------------------------------------------------------

/// TURN-6: an agent Alternative is `generating` (content null) while its run runs, its `runId`
/// leads to the run and its SSE event stream, and it becomes `valid` with the run's output.
#[tokio::test]
async fn turn_6_generating_until_the_run_completes_then_valid_with_its_output() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "ping", None).await;
    let g = start(u, &c, &k.held, &id(&t1), None).await;
    let (turn, alt, run) = (
        text(&g["turnId"]),
        text(&g["alternativeId"]),
        text(&g["runId"]),
    );
    let a = alternative(u, &turn, &alt).await;
    assert_eq!(a["cacheStatus"], "generating");
    assert_eq!(a["content"], Value::Null);
    assert_eq!(a["runId"], json!(run));
    assert_eq!(a["isActive"], true);
    assert_eq!(a["respondsTo"], json!(first(&t1)));
    assert_eq!(a["executedBy"], json!({"processId": k.held, "version": 1}));
    assert_eq!(a["error"], Value::Null);
    assert_eq!(
        tree_alt(&tree(u, &c).await, &alt)["cacheStatus"],
        "generating"
    );
    let r = u.get(&format!("/v1/runs/{run}")).await.ok(200).clone();
    assert!(
        matches!(r["status"].as_str(), Some("queued" | "running")),
        "{r}"
    );
    assert_eq!(r["processId"], json!(k.held));
    let m = wm(u, &c, &format!("?alternativeId={alt}")).await;
    assert_eq!(path_alts(&m), [first(&t1), alt.clone()]);
    assert_eq!(path(&m)[1]["content"], Value::Null);
    assert_eq!(path(&m)[1]["tokens"], 0);

    k.release(1);
    let done = settled(u, &turn, &alt).await;
    assert_eq!(done["cacheStatus"], "valid");
    assert_eq!(done["content"], "answer to ping [HOLD]");
    assert_eq!(done["error"], Value::Null);
    let r = wait_run(u, &run).await;
    assert_eq!(r["status"], "completed");
    assert_eq!(r["output"], done["content"]);
    let events = run_events(u, &run).await;
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"run.started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"run.completed"), "{kinds:?}");
    assert_eq!(k.up.seen.lock().unwrap().clone(), ["HOLD|ping"]);
}

/// TURN-6: a failed run leaves a `failed` Alternative carrying the run's error and no content;
/// it stays in the Turn (never deleted) and a later regeneration supersedes it.
#[tokio::test]
async fn turn_6_a_failed_run_leaves_a_failed_alternative_with_the_runs_error() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "break", None).await;
    let f = answer(u, &c, &k.broken, &id(&t1), None).await;
    let turn = text(&f["turnId"]);
    assert_eq!(f["cacheStatus"], "failed", "{f}");
    assert_eq!(f["content"], Value::Null);
    assert_eq!(f["isActive"], true);
    let run = wait_run(u, &text(&f["runId"])).await;
    assert_eq!(run["status"], "failed");
    assert!(f["error"]["code"].is_string(), "{f}");
    assert_eq!(
        f["error"], run["error"],
        "the Alternative carries the run's error"
    );
    assert_eq!(
        tree_alt(&tree(u, &c).await, &id(&f))["cacheStatus"],
        "failed"
    );
    let ok = regen(u, &turn, &k.p1, None).await;
    assert_eq!(ok["cacheStatus"], "valid");
    assert_eq!(ok["content"], "answer to break [P1]");
    let now = get_turn(u, &turn).await;
    assert_eq!(now["alternatives"].as_array().unwrap().len(), 2);
    let still = alt_of(&now, &id(&f));
    assert_eq!(still["cacheStatus"], "failed");
    assert_eq!(still["isActive"], false);
    assert_eq!(still["error"], run["error"]);
}

/// TURN-6: a canceled run also leaves the Alternative `failed` (content null, with an error).
#[tokio::test]
async fn turn_6_a_canceled_run_leaves_a_failed_alternative() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "never mind", None).await;
    let g = start(u, &c, &k.held, &id(&t1), None).await;
    let (turn, alt, run) = (
        text(&g["turnId"]),
        text(&g["alternativeId"]),
        text(&g["runId"]),
    );
    // Wait until the step is in flight, then cancel.
    let deadline = Instant::now() + Duration::from_secs(20);
    while k.up.seen.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the held step never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    u.post(&format!("/v1/runs/{run}/cancel"), json!({}))
        .await
        .ok(202);
    let a = settled(u, &turn, &alt).await;
    k.release(1);
    assert_eq!(wait_run(u, &run).await["status"], "canceled");
    assert_eq!(a["cacheStatus"], "failed", "{a}");
    assert_eq!(a["content"], Value::Null);
    assert!(!a["error"].is_null(), "{a}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        alternative(u, &turn, &alt).await["content"],
        Value::Null,
        "a late step result does not write content"
    );
}

/// TURN-6: `stale` is derived from the parent Turn's active Alternative only (a grandchild of an
/// edited Turn stays valid while its own parent is active); switching back makes it valid;
/// `hasChildren` is true exactly for Alternatives something responds to; GET turn and the tree
/// derive the same.
#[tokio::test]
async fn turn_6_stale_and_has_children_are_derived_from_the_current_selection() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "a", None).await;
    let (t1_id, a1) = (id(&t1), first(&t1));
    let r = answer(u, &c, &k.p1, &t1_id, None).await;
    let (t2_id, b1) = (text(&r["turnId"]), id(&r));
    let t3 = say(u, &c, "c", Some(&t2_id)).await;
    let (t3_id, c1) = (id(&t3), first(&t3));
    fn status(t: &Value, a: &str) -> Value {
        tree_alt(t, a)["cacheStatus"].clone()
    }
    let full = tree(u, &c).await;
    for a in [&a1, &b1, &c1] {
        assert_eq!(status(&full, a), "valid");
    }
    // Edit the first question: the answer to it is stale, the reply to that answer is not.
    let a2 = id(&edit(u, &t1_id, "a, edited", None).await);
    let full = tree(u, &c).await;
    assert_eq!(status(&full, &a1), "valid", "a root is never stale");
    assert_eq!(status(&full, &a2), "valid");
    assert_eq!(status(&full, &b1), "stale");
    assert_eq!(
        status(&full, &c1),
        "valid",
        "its own parent is still the active one"
    );
    assert_eq!(tree_alt(&full, &a1)["hasChildren"], true);
    assert_eq!(tree_alt(&full, &a2)["hasChildren"], false);
    assert_eq!(tree_alt(&full, &b1)["hasChildren"], true);
    assert_eq!(tree_alt(&full, &c1)["hasChildren"], false);
    // Regenerate under the edit: now the reply hangs off an inactive answer.
    let b2 = id(&regen(u, &t2_id, &k.p2, None).await);
    let full = tree(u, &c).await;
    assert_eq!(status(&full, &b2), "valid");
    assert_eq!(status(&full, &c1), "stale");
    assert_eq!(tree_alt(&full, &a2)["hasChildren"], true);
    // A failed child still counts as a child.
    let failed = regen(u, &t2_id, &k.broken, Some(&a1)).await;
    assert_eq!(failed["respondsTo"], json!(a1));
    assert_eq!(
        failed["cacheStatus"], "stale",
        "it responds to an inactive Alternative"
    );
    // Switch back: everything on the original line is valid again.
    switch(u, &t1_id, &a1).await;
    switch(u, &t2_id, &b1).await;
    let full = tree(u, &c).await;
    for a in [&a1, &b1, &c1] {
        assert_eq!(status(&full, a), "valid", "{a}");
    }
    assert_eq!(status(&full, &b2), "stale");
    assert_eq!(status(&full, &id(&failed)), "failed");
    // The tree and GET /v1/turns/{id} agree on every derived field.
    for t in turns_of(&full) {
        assert_eq!(
            get_turn(u, &id(&t)).await,
            t,
            "GET turn differs from the tree"
        );
    }
    let _ = t3_id;
}

/// TURN-6: the content of an agent Alternative is the run's output (a string as is, any other
/// JSON as its JSON text), written once; the run got the agent context
/// (conversationId, turnId, alternativeId, userMessage = the parent's content, workingMemory at
/// the parent).
#[tokio::test]
async fn turn_6_agent_content_is_the_run_output_written_once() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "hello there", None).await;
    let r = answer(u, &c, &k.p1, &id(&t1), None).await;
    assert_eq!(r["content"], "answer to hello there [P1]");
    let run = wait_run(u, &text(&r["runId"])).await;
    assert_eq!(run["output"], r["content"], "a string output is used as is");
    let inputs = &run["inputs"];
    assert_eq!(inputs["conversationId"], json!(c));
    assert_eq!(inputs["turnId"], r["turnId"]);
    assert_eq!(inputs["alternativeId"], r["id"]);
    assert_eq!(inputs["userMessage"], "hello there");
    assert_eq!(inputs["workingMemory"]["conversationId"], json!(c));
    assert_eq!(
        contents(&inputs["workingMemory"]),
        ["hello there"],
        "the working memory at the parent"
    );
    assert_eq!(
        inputs["workingMemory"]["currentAlternativeId"],
        json!(first(&t1))
    );

    let o = regen(u, &text(&r["turnId"]), &k.object, None).await;
    let orun = wait_run(u, &text(&o["runId"])).await;
    assert!(orun["output"].is_object(), "{orun}");
    let parsed: Value = serde_json::from_str(o["content"].as_str().expect("content")).unwrap();
    assert_eq!(parsed, orun["output"], "other JSON is its JSON text");

    // Written once: later activity on the Turn leaves both contents as they were.
    let t = text(&r["turnId"]);
    switch(u, &t, &id(&r)).await;
    regen(u, &t, &k.p2, None).await;
    say(u, &c, "next", Some(&t)).await;
    #[derive(serde::Deserialize)]
    struct Row {
        content: Option<String>,
        state: Option<String>,
    }
    for (alt, want) in [(id(&r), &r["content"]), (id(&o), &o["content"])] {
        let rows: Vec<Row> = graph_rows(
            aiden_graph_query(
                "MATCH (a:Alternative {id: $a}) RETURN a.content AS content, a.state AS state",
            )
            .param("a", alt.as_str()),
        )
        .await;
        assert_eq!(rows[0].content.as_deref(), want.as_str());
        assert_eq!(rows[0].state.as_deref(), Some("valid"));
    }
}

// ---------------------------------------------------------------------------------------------
// TURN-7
// ---------------------------------------------------------------------------------------------

/// TURN-7: no Alternative — user, agent, or a fork's copy — has an Episode at creation:
/// `episodeId` null everywhere (tree and working memory) and no HAS_CONTENT edge.
#[tokio::test]
async fn turn_7_episode_binding_is_absent_at_creation() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "x", None).await;
    assert_eq!(t1["alternatives"][0]["episodeId"], Value::Null);
    let r = answer(u, &c, &k.p1, &id(&t1), None).await;
    assert_eq!(r["episodeId"], Value::Null);
    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": r["turnId"], "alternativeId": r["id"]}),
        )
        .await
        .ok(201)
        .clone();
    let f = id(&fork);
    for conv in [&c, &f] {
        for a in all_alts(&tree(u, conv).await) {
            assert_eq!(a["episodeId"], Value::Null, "{a}");
        }
        for p in path(&wm(u, conv, "").await) {
            assert_eq!(p["episodeId"], Value::Null);
        }
    }
    #[derive(serde::Deserialize)]
    struct N {
        alts: i64,
        edges: i64,
    }
    let n: Vec<N> = graph_rows(
        aiden_graph_query(
            "MATCH (a:Alternative) WHERE a.conversationId IN [$c, $f]
             OPTIONAL MATCH (a)-[h:HAS_CONTENT]->()
             RETURN count(DISTINCT a) AS alts, count(h) AS edges",
        )
        .param("c", c.as_str())
        .param("f", f.as_str()),
    )
    .await;
    assert_eq!(n[0].alts, 4);
    assert_eq!(n[0].edges, 0);
}

// ---------------------------------------------------------------------------------------------
// TURN-8
// ---------------------------------------------------------------------------------------------

/// TURN-8: every new Alternative is its Turn's active one at once — an edit, a regeneration
/// (already while generating), a continuation from another parent Alternative — and the
/// Conversation's current position follows it.
#[tokio::test]
async fn turn_8_a_new_alternative_becomes_the_active_one() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "x", None).await;
    let t1_id = id(&t1);
    assert_eq!(t1["alternatives"][0]["isActive"], true);
    let e = edit(u, &t1_id, "y", None).await;
    assert_eq!(e["isActive"], true);
    assert_eq!(e["sequence"], 2);
    let now = get_turn(u, &t1_id).await;
    assert_eq!(actives(&now), [id(&e)]);
    let conv = u
        .get(&format!("/v1/conversations/{c}"))
        .await
        .ok(200)
        .clone();
    assert_eq!(conv["currentTurnId"], json!(t1_id));
    assert_eq!(conv["currentAlternativeId"], e["id"]);

    let r = answer(u, &c, &k.p1, &t1_id, None).await;
    let turn = text(&r["turnId"]);
    assert_eq!(r["isActive"], true);
    let g = regen_start(u, &turn, &k.held, Some(&first(&t1))).await;
    let alt = text(&g["alternativeId"]);
    let during = get_turn(u, &turn).await;
    assert_eq!(
        actives(&during),
        [alt.as_str()],
        "active while still generating"
    );
    assert_eq!(alt_of(&during, &alt)["cacheStatus"], "generating");
    let conv = u
        .get(&format!("/v1/conversations/{c}"))
        .await
        .ok(200)
        .clone();
    assert_eq!(conv["currentAlternativeId"], json!(alt));
    k.release(1);
    let done = settled(u, &turn, &alt).await;
    assert_eq!(done["isActive"], true);
    assert_eq!(done["respondsTo"], json!(first(&t1)));
    assert_eq!(
        done["content"], "answer to x [HOLD]",
        "it answered the Alternative it was given"
    );
    assert_eq!(
        done["cacheStatus"], "stale",
        "it responds to an Alternative that is not the parent's active one"
    );
    let seqs: Vec<i64> = get_turn(u, &turn).await["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2]);
}

// ---------------------------------------------------------------------------------------------
// WM-1
// ---------------------------------------------------------------------------------------------

/// WM-1: the immediate path runs root → the given Alternative along each Alternative's own
/// `respondsTo` (a stale Alternative keeps its own ancestry), and for a non-stale Alternative it
/// is exactly the chain of active Alternatives; turnId alone means that Turn's active
/// Alternative, neither means the Conversation's current one, and an empty Conversation has an
/// empty path.
#[tokio::test]
async fn wm_1_the_path_follows_responds_to_not_the_current_selection() {
    let u = user().await;
    let c = conversation(&u).await;
    let empty = wm(&u, &c, "").await;
    assert_eq!(empty["conversationId"], json!(c));
    assert!(path(&empty).is_empty());
    assert_eq!(empty["totalTokens"], 0);
    assert_eq!(empty["currentAlternativeId"], Value::Null);

    let t1 = say(&u, &c, "a1", None).await;
    let t2 = say(&u, &c, "b1", Some(&id(&t1))).await;
    let t3 = say(&u, &c, "c1", Some(&id(&t2))).await;
    let b2 = edit(&u, &id(&t2), "b2", None).await;
    let t4 = say(&u, &c, "d1", Some(&id(&t2))).await;
    let a2 = edit(&u, &id(&t1), "a2", None).await;

    // c1 answered b1, which is no longer active: its path still goes through b1 and a1.
    let m = wm(&u, &c, &format!("?alternativeId={}", first(&t3))).await;
    assert_eq!(contents(&m), ["a1", "b1", "c1"]);
    assert_eq!(path_alts(&m), [first(&t1), first(&t2), first(&t3)]);
    assert_eq!(m["currentTurnId"], t3["id"]);
    assert_eq!(m["currentAlternativeId"], json!(first(&t3)));
    let turn_ids: Vec<Value> = path(&m).iter().map(|p| p["turnId"].clone()).collect();
    assert_eq!(
        turn_ids,
        [t1["id"].clone(), t2["id"].clone(), t3["id"].clone()]
    );
    let seqs: Vec<Value> = path(&m).iter().map(|p| p["sequence"].clone()).collect();
    assert_eq!(seqs, [json!(1), json!(2), json!(3)]);
    assert!(path(&m).iter().all(|p| p["speaker"] == "user"));
    // turnId alone: that Turn's active (only) Alternative — the same path.
    assert_eq!(
        contents(&wm(&u, &c, &format!("?turnId={}", id(&t3))).await),
        ["a1", "b1", "c1"]
    );
    // d1 answered b2 (then active); after the edit of turn 1 it still goes through a1.
    assert_eq!(
        contents(&wm(&u, &c, &format!("?alternativeId={}", first(&t4))).await),
        ["a1", "b2", "d1"]
    );
    // Default position: the last Alternative created or switched to (a2).
    let m = wm(&u, &c, "").await;
    assert_eq!(contents(&m), ["a2"]);
    assert_eq!(m["currentAlternativeId"], a2["id"]);
    // Back on the original line: a non-stale Alternative's path is the active chain.
    switch(&u, &id(&t1), &first(&t1)).await;
    switch(&u, &id(&t2), &id(&b2)).await;
    let m = wm(&u, &c, &format!("?turnId={}", id(&t4))).await;
    assert_eq!(contents(&m), ["a1", "b2", "d1"]);
    let full = tree(&u, &c).await;
    for p in path(&m) {
        let t = tree_turn(&full, &text(&p["turnId"]));
        assert_eq!(actives(&t), [text(&p["alternativeId"])], "the active chain");
        assert_eq!(
            tree_alt(&full, &text(&p["alternativeId"]))["cacheStatus"],
            "valid"
        );
    }
    assert_eq!(
        contents(&wm(&u, &c, "").await),
        ["a1", "b2"],
        "last switched to"
    );
    // Both parameters, consistent: fine.
    let both = wm(
        &u,
        &c,
        &format!("?turnId={}&alternativeId={}", id(&t2), first(&t2)),
    )
    .await;
    assert_eq!(contents(&both), ["a1", "b1"]);
}

// ---------------------------------------------------------------------------------------------
// WM-2
// ---------------------------------------------------------------------------------------------

/// WM-2: each path entry's tokens are ceil(characters / 4) — characters, not bytes — and
/// totalTokens is their sum plus the included Summaries' tokenCount (which defaults to the same
/// estimate of the Summary's content).
#[tokio::test]
async fn wm_2_total_tokens_is_the_sum_of_path_and_summary_estimates() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let texts = ["héllo wörld!", "日本語のテキスト", "a"];
    let t1 = say(u, &c, texts[0], None).await;
    let t2 = say(u, &c, texts[1], Some(&id(&t1))).await;
    let t3 = say(u, &c, texts[2], Some(&id(&t2))).await;
    let r = answer(u, &c, &k.p1, &id(&t3), None).await;
    let answer_text = text(&r["content"]);
    let m = wm(u, &c, "").await;
    let want: Vec<i64> = texts
        .iter()
        .map(|t| ceil4(t))
        .chain([ceil4(&answer_text)])
        .collect();
    let got: Vec<i64> = path(&m)
        .iter()
        .map(|p| p["tokens"].as_i64().unwrap())
        .collect();
    assert_eq!(got, want, "ceil(chars/4) per entry");
    assert_eq!(want[..3], [3, 2, 1], "characters, not bytes");
    assert_eq!(m["totalTokens"], want.iter().sum::<i64>());
    assert_eq!(m["activeEntities"], json!([]));
    assert_eq!(m["introspectionContext"], json!([]));
    assert!(m["lastUpdated"].is_string());

    let s = u
        .post(
            &format!("/v1/conversations/{c}/summaries"),
            json!({"content": "ééééé", "coversUpToTurnId": id(&t1), "sources": [first(&t1)]}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(s["tokenCount"], 2, "default tokenCount: ceil(5 chars / 4)");
    let m = wm(u, &c, "").await;
    assert_eq!(contents(&m).len(), 3, "the summary replaces turn 1");
    assert_eq!(m["summaries"][0]["tokenCount"], 2);
    assert_eq!(m["totalTokens"], 2 + want[1..].iter().sum::<i64>());
    u.post(
        &format!("/v1/conversations/{c}/summaries"),
        json!({"content": "big", "coversUpToTurnId": id(&t2),
               "sources": [id(&s), first(&t2)], "tokenCount": 40}),
    )
    .await
    .ok(201);
    let m = wm(u, &c, "").await;
    assert_eq!(contents(&m), [texts[2].to_owned(), answer_text.clone()]);
    assert_eq!(
        m["totalTokens"],
        40 + want[2] + want[3],
        "only the deepest summary counts"
    );
}

// ---------------------------------------------------------------------------------------------
// WM-3
// ---------------------------------------------------------------------------------------------

/// WM-3: the deepest Summary covering a Turn on the path replaces that Turn and everything
/// before it; a Summary of another branch does not apply; ids of another conversation are
/// refused (working memory and Summaries) and nothing is written.
#[tokio::test]
async fn wm_3_the_deepest_covering_summary_replaces_the_covered_path_and_foreign_ids_are_refused() {
    let u = user().await;
    let c = conversation(&u).await;
    let other = conversation(&u).await;
    let t1 = say(&u, &c, "one", None).await;
    let t2 = say(&u, &c, "two", Some(&id(&t1))).await;
    let t3 = say(&u, &c, "three", Some(&id(&t2))).await;
    let t4 = say(&u, &c, "four", Some(&id(&t3))).await;
    let sums = format!("/v1/conversations/{c}/summaries");
    let s1 = u
        .post(
            &sums,
            json!({"content": "S1", "coversUpToTurnId": id(&t1), "sources": [first(&t1)], "tokenCount": 100}),
        )
        .await
        .ok(201)
        .clone();
    let s2 = u
        .post(
            &sums,
            json!({"content": "S2", "coversUpToTurnId": id(&t3),
                   "sources": [id(&s1), first(&t2), first(&t3)], "tokenCount": 7}),
        )
        .await
        .ok(201)
        .clone();
    let m = wm(&u, &c, &format!("?alternativeId={}", first(&t4))).await;
    assert_eq!(contents(&m), ["four"]);
    let used: Vec<Value> = m["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].clone())
        .collect();
    assert_eq!(
        used,
        [s2["id"].clone()],
        "the deepest covering summary only"
    );
    assert_eq!(m["summaries"][0]["coversUpToTurnId"], t3["id"]);
    assert_eq!(m["summaries"][0]["compressionLevel"], 2);
    assert_eq!(m["totalTokens"], 7 + ceil4("four"));
    // At turn 2 only S1 covers something on the path.
    let m = wm(&u, &c, &format!("?alternativeId={}", first(&t2))).await;
    assert_eq!(contents(&m), ["two"]);
    assert_eq!(m["summaries"][0]["id"], s1["id"]);
    assert_eq!(m["totalTokens"], 100 + ceil4("two"));
    // Another branch below turn 2 reaches depth 3 through a new Turn: S2 (covering turn 3)
    // does not apply to it however deep it is; S1 (turn 1, shared) still does.
    let t2b = edit(&u, &id(&t2), "two, edited", None).await;
    let t3b = say(&u, &c, "three, again", Some(&id(&t2))).await;
    let m = wm(&u, &c, &format!("?alternativeId={}", first(&t3b))).await;
    assert_eq!(contents(&m), ["two, edited", "three, again"]);
    assert_eq!(m["summaries"].as_array().unwrap().len(), 1);
    assert_eq!(m["summaries"][0]["id"], s1["id"]);
    let _ = t2b;
    // The original branch is still summarized by S2.
    let m = wm(&u, &c, &format!("?alternativeId={}", first(&t4))).await;
    assert_eq!(m["summaries"][0]["id"], s2["id"]);

    // Foreign ids.
    let x1 = say(&u, &other, "elsewhere", None).await;
    let x2 = say(&u, &other, "elsewhere 2", Some(&id(&x1))).await;
    let xs = u
        .post(
            &format!("/v1/conversations/{other}/summaries"),
            json!({"content": "X", "coversUpToTurnId": id(&x1), "sources": [first(&x1)]}),
        )
        .await
        .ok(201)
        .clone();
    for q in [
        format!("?alternativeId={}", first(&x2)),
        format!("?turnId={}", id(&x2)),
        format!("?turnId={}&alternativeId={}", id(&x2), first(&x2)),
    ] {
        u.get(&format!("/v1/conversations/{c}/working-memory{q}"))
            .await
            .rejects(422, "WM-3");
    }
    let before = snapshot(&c, &u.id).await;
    for body in [
        json!({"content": "x", "coversUpToTurnId": id(&x1), "sources": [first(&t1)]}),
        json!({"content": "x", "coversUpToTurnId": id(&t1), "sources": [first(&x1)]}),
        json!({"content": "x", "coversUpToTurnId": id(&t1), "sources": [first(&t1), id(&xs)]}),
    ] {
        u.post(&sums, body).await.rejects(422, "WM-3");
    }
    assert_eq!(snapshot(&c, &u.id).await, before);
    assert_eq!(
        u.get(&sums).await.ok(200)["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// WM-3 and the agent-turn contract: `userMessage` is the parent Alternative's content even
/// when a Summary covers the parent Turn (the Summary replaces it in the working memory, not in
/// what the agent is asked to answer).
#[tokio::test]
async fn wm_3_a_covering_summary_does_not_blank_the_agent_user_message() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "first question", None).await;
    let s = u
        .post(
            &format!("/v1/conversations/{c}/summaries"),
            json!({"content": "the user asked a question", "coversUpToTurnId": id(&t1),
                   "sources": [first(&t1)]}),
        )
        .await
        .ok(201)
        .clone();
    let m = wm(u, &c, "").await;
    assert!(path(&m).is_empty(), "the summary covers turn 1: {m}");
    assert_eq!(m["summaries"][0]["id"], s["id"]);
    let r = answer(u, &c, &k.p1, &id(&t1), None).await;
    let run = wait_run(u, &text(&r["runId"])).await;
    assert_eq!(
        run["inputs"]["workingMemory"]["summaries"][0]["id"], s["id"],
        "the run sees the working memory at the parent"
    );
    assert_eq!(
        run["inputs"]["userMessage"], "first question",
        "userMessage must be the parent Alternative's content"
    );
    assert_eq!(r["content"], "answer to first question [P1]");
}

// ---------------------------------------------------------------------------------------------
// SUM-1
// ---------------------------------------------------------------------------------------------

/// SUM-1: a Summary needs at least one source (422 SUM-1 for none or an unknown one);
/// compressionLevel = max(source levels) + 1 with Alternatives at 0; SUMMARIZES, COVERS_UP_TO
/// and CREATED_BY_PROCESS are written; a refused Summary writes nothing.
#[tokio::test]
async fn sum_1_sources_are_required_and_compression_is_one_above_the_highest_source() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "one", None).await;
    let t2 = say(u, &c, "two", Some(&id(&t1))).await;
    let sums = format!("/v1/conversations/{c}/summaries");
    let before = snapshot(&c, &u.id).await;
    for sources in [json!([]), json!(["no-such-source"])] {
        u.post(
            &sums,
            json!({"content": "x", "coversUpToTurnId": id(&t1), "sources": sources}),
        )
        .await
        .rejects(422, "SUM-1");
    }
    u.post(&sums, json!({"content": "x", "coversUpToTurnId": id(&t1)}))
        .await
        .ok(400);
    assert_eq!(snapshot(&c, &u.id).await, before);

    let s1 = u
        .post(
            &sums,
            json!({"content": "level one", "coversUpToTurnId": id(&t1), "sources": [first(&t1)],
                   "createdByProcessId": k.p1}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(s1["compressionLevel"], 1);
    assert_eq!(s1["conversationId"], json!(c));
    assert_eq!(s1["coversUpToTurnId"], t1["id"]);
    assert_eq!(s1["sources"], json!([first(&t1)]));
    assert_eq!(s1["createdByProcessId"], json!(k.p1));
    assert_eq!(s1["tokenCount"], ceil4("level one"));
    let s2 = u
        .post(
            &sums,
            json!({"content": "level two", "coversUpToTurnId": id(&t2), "sources": [id(&s1), first(&t2)]}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(s2["compressionLevel"], 2);
    let s3 = u
        .post(
            &sums,
            json!({"content": "level three", "coversUpToTurnId": id(&t2),
                   "sources": [first(&t1), id(&s1), id(&s2)]}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(s3["compressionLevel"], 3, "max(0, 1, 2) + 1");
    let listed = u.get(&sums).await.ok(200).clone();
    let ids: HashSet<String> = listed["items"].as_array().unwrap().iter().map(id).collect();
    assert_eq!(ids, [id(&s1), id(&s2), id(&s3)].into_iter().collect());

    #[derive(serde::Deserialize)]
    struct Row {
        id: String,
        sources: Vec<String>,
        covers: Vec<String>,
        by: Vec<String>,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (:Conversation {id: $c})-[:HAS_SUMMARY]->(s:Summary)
             OPTIONAL MATCH (s)-[:SUMMARIZES]->(src)
             WITH s, collect(coalesce(src.id, src.uuid)) AS sources
             OPTIONAL MATCH (s)-[:COVERS_UP_TO]->(t:ConversationTurn)
             WITH s, sources, collect(t.id) AS covers
             OPTIONAL MATCH (s)-[:CREATED_BY_PROCESS]->(p:Process)
             RETURN s.id AS id, sources, covers, collect(p.id) AS by",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(rows.len(), 3);
    for r in rows {
        let api = [&s1, &s2, &s3]
            .into_iter()
            .find(|s| s["id"] == r.id)
            .unwrap();
        let mut want: Vec<String> = api["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(text)
            .collect();
        let mut got = r.sources.clone();
        want.sort();
        got.sort();
        assert_eq!(got, want, "SUMMARIZES of {}", r.id);
        assert_eq!(r.covers, [text(&api["coversUpToTurnId"])]);
        let by: Vec<String> = api["createdByProcessId"]
            .as_str()
            .map(str::to_owned)
            .into_iter()
            .collect();
        assert_eq!(r.by, by);
    }
}

// ---------------------------------------------------------------------------------------------
// OWN-2 for conversations
// ---------------------------------------------------------------------------------------------

/// OWN-2: a conversation is its owner's alone — an admin and another user get 404 NOT_FOUND on
/// every conversation and turn route, see nothing in their listing, and change nothing.
#[tokio::test]
async fn own_2_another_users_conversation_is_404_everywhere_even_for_admins() {
    let k = kit(user().await).await;
    let stranger = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t = say(u, &c, "private", None).await;
    let r = answer(u, &c, &k.p1, &id(&t), None).await;
    let (turn, alt, agent_turn) = (id(&t), first(&t), text(&r["turnId"]));
    let before = snapshot(&c, &u.id).await;
    for (who, p) in [
        (admin(), k.p1.clone()),
        (stranger.u.clone(), stranger.p1.clone()),
    ] {
        let replies = [
            who.get(&format!("/v1/conversations/{c}")).await,
            who.get(&format!("/v1/conversations/{c}/tree")).await,
            who.get(&format!("/v1/conversations/{c}/working-memory"))
                .await,
            who.get(&format!(
                "/v1/conversations/{c}/working-memory?alternativeId={alt}"
            ))
            .await,
            who.get(&format!("/v1/conversations/{c}/summaries")).await,
            who.get(&format!("/v1/turns/{turn}")).await,
            who.get(&format!("/v1/turns/{agent_turn}")).await,
            who.patch(&format!("/v1/conversations/{c}"), json!({"title": "mine"}))
                .await,
            who.patch(
                &format!("/v1/conversations/{c}"),
                json!({"status": "archived"}),
            )
            .await,
            who.delete(&format!("/v1/conversations/{c}")).await,
            who.post(
                &format!("/v1/conversations/{c}/turns"),
                json!({"speaker": "user", "content": "x", "parentTurnId": agent_turn}),
            )
            .await,
            who.post(
                &format!("/v1/conversations/{c}/agent-turns"),
                json!({"processId": p, "parentTurnId": turn}),
            )
            .await,
            who.post(
                &format!("/v1/turns/{turn}/alternatives"),
                json!({"content": "x"}),
            )
            .await,
            who.post(
                &format!("/v1/turns/{agent_turn}/alternatives"),
                json!({"processId": p}),
            )
            .await,
            who.put(
                &format!("/v1/turns/{turn}/active"),
                json!({"alternativeId": alt}),
            )
            .await,
            who.post(
                &format!("/v1/conversations/{c}/fork"),
                json!({"turnId": turn, "alternativeId": alt}),
            )
            .await,
            who.post(
                &format!("/v1/conversations/{c}/summaries"),
                json!({"content": "x", "coversUpToTurnId": turn, "sources": [alt]}),
            )
            .await,
        ];
        for r in replies {
            assert_eq!(r.status.as_u16(), 404, "{}: {:?}", who.id, r.body);
            assert_eq!(r.code(), "NOT_FOUND");
        }
        let listed = who
            .get("/v1/conversations?includeArchived=true")
            .await
            .ok(200)
            .clone();
        assert!(
            !listed["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["id"] == c),
            "{} lists another user's conversation",
            who.id
        );
    }
    assert_eq!(snapshot(&c, &u.id).await, before);
}

/// OWN-2 ("never a hint that it exists"): inside one's own conversation, naming another user's
/// Turn, Alternative or Summary gets exactly the answer an id that does not exist gets.
#[tokio::test]
async fn own_2_another_users_ids_are_answered_like_unknown_ids() {
    let u = user().await;
    let stranger = user().await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "mine", None).await;
    let sc = conversation(&stranger).await;
    let st = say(&stranger, &sc, "theirs", None).await;
    let ss = stranger
        .post(
            &format!("/v1/conversations/{sc}/summaries"),
            json!({"content": "theirs", "coversUpToTurnId": id(&st), "sources": [first(&st)]}),
        )
        .await
        .ok(201)
        .clone();
    let shape = |r: &aiden_tests::Reply| (r.status.as_u16(), r.code().to_owned(), r.invariants());
    let (their_turn, their_alt, their_sum) = (id(&st), first(&st), id(&ss));
    let (t1_id, t1_alt) = (id(&t1), first(&t1));
    let request = |what: &str, x: &str| -> (Method, String, Option<Value>) {
        let sums = format!("/v1/conversations/{c}/summaries");
        match what {
            "working memory alternativeId" => (
                Method::GET,
                format!("/v1/conversations/{c}/working-memory?alternativeId={x}"),
                None,
            ),
            "working memory turnId" => (
                Method::GET,
                format!("/v1/conversations/{c}/working-memory?turnId={x}"),
                None,
            ),
            "turn parentTurnId" => (
                Method::POST,
                format!("/v1/conversations/{c}/turns"),
                Some(json!({"speaker": "user", "content": "x", "parentTurnId": x})),
            ),
            "turn parentAlternativeId" => (
                Method::POST,
                format!("/v1/conversations/{c}/turns"),
                Some(
                    json!({"speaker": "user", "content": "x", "parentTurnId": t1_id,
                            "parentAlternativeId": x}),
                ),
            ),
            "switch" => (
                Method::PUT,
                format!("/v1/turns/{t1_id}/active"),
                Some(json!({"alternativeId": x})),
            ),
            "fork" => (
                Method::POST,
                format!("/v1/conversations/{c}/fork"),
                Some(json!({"turnId": t1_id, "alternativeId": x})),
            ),
            "summary coversUpToTurnId" => (
                Method::POST,
                sums,
                Some(json!({"content": "x", "coversUpToTurnId": x, "sources": [t1_alt]})),
            ),
            _ => (
                Method::POST,
                sums,
                Some(json!({"content": "x", "coversUpToTurnId": t1_id, "sources": [x]})),
            ),
        }
    };
    let probes = [
        ("working memory alternativeId", their_alt.clone()),
        ("working memory turnId", their_turn.clone()),
        ("turn parentTurnId", their_turn.clone()),
        ("turn parentAlternativeId", their_alt.clone()),
        ("switch", their_alt.clone()),
        ("fork", their_alt.clone()),
        ("summary coversUpToTurnId", their_turn.clone()),
        ("summary source alternative", their_alt.clone()),
        ("summary source summary", their_sum.clone()),
    ];
    let before = snapshot(&c, &u.id).await;
    let mut leaks = Vec::new();
    for (what, theirs) in &probes {
        let (m, p, b) = request(what, theirs);
        let foreign = u.send(m, &p, b.as_ref(), &[]).await;
        let (m, p, b) = request(what, &format!("{}-nonexistent", unique("x")));
        let unknown = u.send(m, &p, b.as_ref(), &[]).await;
        assert!(
            (400..500).contains(&foreign.status.as_u16()),
            "{what}: {:?}",
            foreign.body
        );
        if shape(&foreign) != shape(&unknown) {
            leaks.push(format!(
                "{what}: another user's id → {:?}, an unknown id → {:?}",
                shape(&foreign),
                shape(&unknown)
            ));
        }
    }
    assert_eq!(snapshot(&c, &u.id).await, before);
    assert!(
        leaks.is_empty(),
        "answers that reveal another user's ids:\n{}",
        leaks.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The scripted scenario
// ---------------------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
/// Checks one Alternative of the tree against (isActive, cacheStatus, hasChildren, respondsTo,
/// executedBy process, content).
#[track_caller]
fn expect_alt(
    tree: &Value,
    alt: &str,
    active: bool,
    status: &str,
    children: bool,
    responds: Option<&str>,
    process: Option<&str>,
    content: &str,
) {
    let a = tree_alt(tree, alt);
    assert_eq!(a["isActive"], active, "isActive of {a}");
    assert_eq!(a["cacheStatus"], status, "cacheStatus of {a}");
    assert_eq!(a["hasChildren"], children, "hasChildren of {a}");
    assert_eq!(a["respondsTo"], json!(responds), "respondsTo of {a}");
    match process {
        Some(p) => {
            assert_eq!(
                a["executedBy"],
                json!({"processId": p, "version": 1}),
                "executedBy of {a}"
            );
            assert!(a["runId"].is_string(), "runId of {a}");
        }
        None => {
            assert_eq!(a["executedBy"], Value::Null, "executedBy of {a}");
            assert_eq!(a["runId"], Value::Null, "runId of {a}");
        }
    }
    assert_eq!(a["content"], content, "content of {a}");
}

/// The scripted scenario: six Turns with user edits, regenerations by two Processes, a
/// continue-from-an-older-Alternative and a fork; the whole tree (isActive, cacheStatus with
/// stale, hasChildren, respondsTo, executedBy, contents, structure) and the working memory are
/// checked at several points, GET turn agrees with the tree, and the fork leaves the origin
/// untouched.
#[tokio::test]
async fn scenario_six_turns_with_edits_regenerations_a_continue_and_a_fork() {
    let k = kit(user().await).await;
    let u = &k.u;
    let (p1, p2) = (k.p1.as_str(), k.p2.as_str());
    let c = conversation(u).await;
    // T1 user "hi" → T2 agent (P1) → T3 user "tell me more" → T4 agent (P1)
    let t1 = say(u, &c, "hi", None).await;
    let (t1_id, u1) = (id(&t1), first(&t1));
    let r1 = id(&answer(u, &c, p1, &t1_id, None).await);
    let t2_id = text(&tree(u, &c).await["turns"][1]["id"]);
    let t3 = say(u, &c, "tell me more", Some(&t2_id)).await;
    let (t3_id, u3) = (id(&t3), first(&t3));
    let r4a_alt = answer(u, &c, p1, &t3_id, None).await;
    let (t4_id, r4a) = (text(&r4a_alt["turnId"]), id(&r4a_alt));
    let m = wm(u, &c, "").await;
    assert_eq!(
        contents(&m),
        [
            "hi",
            "answer to hi [P1]",
            "tell me more",
            "answer to tell me more [P1]"
        ]
    );
    let total: i64 = contents(&m).iter().map(|s| ceil4(s)).sum();
    assert_eq!(m["totalTokens"], total, "WM-2");

    // Regenerate T4 with the other Process: both answers respond to u3, both valid.
    let r4b = id(&regen(u, &t4_id, p2, None).await);
    // Edit T1, regenerate T2 under the edit with P2.
    let u1b = id(&edit(u, &t1_id, "hello", None).await);
    let full = tree(u, &c).await;
    expect_alt(
        &full,
        &r1,
        true,
        "stale",
        true,
        Some(&u1),
        Some(p1),
        "answer to hi [P1]",
    );
    assert_eq!(
        contents(&wm(u, &c, "").await),
        ["hello"],
        "current: the edit"
    );
    let r2 = id(&regen(u, &t2_id, p2, None).await);

    // Midway: the whole tree.
    let full = tree(u, &c).await;
    expect_alt(&full, &u1, false, "valid", true, None, None, "hi");
    expect_alt(&full, &u1b, true, "valid", true, None, None, "hello");
    expect_alt(
        &full,
        &r1,
        false,
        "stale",
        true,
        Some(&u1),
        Some(p1),
        "answer to hi [P1]",
    );
    expect_alt(
        &full,
        &r2,
        true,
        "valid",
        false,
        Some(&u1b),
        Some(p2),
        "answer to hello [P2]",
    );
    expect_alt(
        &full,
        &u3,
        true,
        "stale",
        true,
        Some(&r1),
        None,
        "tell me more",
    );
    expect_alt(
        &full,
        &r4a,
        false,
        "valid",
        false,
        Some(&u3),
        Some(p1),
        "answer to tell me more [P1]",
    );
    expect_alt(
        &full,
        &r4b,
        true,
        "valid",
        false,
        Some(&u3),
        Some(p2),
        "answer to tell me more [P2]",
    );
    // The working memory at the stale u3 keeps its own ancestry (WM-1).
    assert_eq!(
        contents(&wm(u, &c, &format!("?alternativeId={u3}")).await),
        ["hi", "answer to hi [P1]", "tell me more"]
    );
    assert_eq!(
        contents(&wm(u, &c, "").await),
        ["hello", "answer to hello [P2]"],
        "current: the regeneration"
    );

    // Continue from the older answer r4a (not the active one): T5 user, then T6 agent (P1).
    let t5 = say_via(u, &c, "go on", &t4_id, &r4a).await;
    let (t5_id, u5) = (id(&t5), first(&t5));
    assert_eq!(t5["viaAlternative"], json!(r4a));
    assert_eq!(
        t5["alternatives"][0]["cacheStatus"], "stale",
        "r4b is still T4's active Alternative"
    );
    switch(u, &t4_id, &r4a).await;
    assert_eq!(alternative(u, &t5_id, &u5).await["cacheStatus"], "valid");
    let r6_alt = answer(u, &c, p1, &t5_id, None).await;
    let (t6_id, r6) = (text(&r6_alt["turnId"]), id(&r6_alt));
    // Back to the original line above.
    switch(u, &t1_id, &u1).await;
    switch(u, &t2_id, &r1).await;
    assert_eq!(
        contents(&wm(u, &c, "").await),
        ["hi", "answer to hi [P1]"],
        "current: the last switch"
    );

    // The final tree.
    let full = tree(u, &c).await;
    let turns = turns_of(&full);
    let ids: Vec<String> = turns.iter().map(id).collect();
    assert_eq!(
        ids,
        [
            t1_id.clone(),
            t2_id.clone(),
            t3_id.clone(),
            t4_id.clone(),
            t5_id.clone(),
            t6_id.clone()
        ]
    );
    let speakers: Vec<&str> = turns
        .iter()
        .map(|t| t["speaker"].as_str().unwrap())
        .collect();
    assert_eq!(
        speakers,
        ["user", "agent", "user", "agent", "user", "agent"]
    );
    let seqs: Vec<i64> = turns
        .iter()
        .map(|t| t["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    let parents: Vec<Value> = turns.iter().map(|t| t["parentTurnId"].clone()).collect();
    assert_eq!(
        parents,
        [
            Value::Null,
            json!(t1_id),
            json!(t2_id),
            json!(t3_id),
            json!(t4_id),
            json!(t5_id)
        ]
    );
    let via: Vec<Value> = turns.iter().map(|t| t["viaAlternative"].clone()).collect();
    assert_eq!(
        via,
        [
            Value::Null,
            json!(u1),
            json!(r1),
            json!(u3),
            json!(r4a),
            json!(u5)
        ]
    );
    let per_turn: Vec<Vec<String>> = turns
        .iter()
        .map(|t| {
            t["alternatives"]
                .as_array()
                .unwrap()
                .iter()
                .map(id)
                .collect()
        })
        .collect();
    assert_eq!(
        per_turn,
        [
            vec![u1.clone(), u1b.clone()],
            vec![r1.clone(), r2.clone()],
            vec![u3.clone()],
            vec![r4a.clone(), r4b.clone()],
            vec![u5.clone()],
            vec![r6.clone()],
        ],
        "alternatives ordered by sequence"
    );
    expect_alt(&full, &u1, true, "valid", true, None, None, "hi");
    expect_alt(&full, &u1b, false, "valid", true, None, None, "hello");
    expect_alt(
        &full,
        &r1,
        true,
        "valid",
        true,
        Some(&u1),
        Some(p1),
        "answer to hi [P1]",
    );
    expect_alt(
        &full,
        &r2,
        false,
        "stale",
        false,
        Some(&u1b),
        Some(p2),
        "answer to hello [P2]",
    );
    expect_alt(
        &full,
        &u3,
        true,
        "valid",
        true,
        Some(&r1),
        None,
        "tell me more",
    );
    expect_alt(
        &full,
        &r4a,
        true,
        "valid",
        true,
        Some(&u3),
        Some(p1),
        "answer to tell me more [P1]",
    );
    expect_alt(
        &full,
        &r4b,
        false,
        "valid",
        false,
        Some(&u3),
        Some(p2),
        "answer to tell me more [P2]",
    );
    expect_alt(&full, &u5, true, "valid", true, Some(&r4a), None, "go on");
    expect_alt(
        &full,
        &r6,
        true,
        "valid",
        false,
        Some(&u5),
        Some(p1),
        "answer to go on [P1]",
    );
    for t in &turns {
        assert_eq!(actives(t).len(), 1, "TURN-2: {t}");
        assert_eq!(
            &get_turn(u, &id(t)).await,
            t,
            "GET turn agrees with the tree"
        );
    }
    assert_eq!(full["conversation"]["turnCount"], 6);
    assert_eq!(
        full["conversation"]["defaultProcessId"],
        json!(p1),
        "CONV-2"
    );

    // Working memory at the end of the line, at a stale answer, and mid-path.
    let end = wm(u, &c, &format!("?turnId={t6_id}")).await;
    let line = [
        "hi",
        "answer to hi [P1]",
        "tell me more",
        "answer to tell me more [P1]",
        "go on",
        "answer to go on [P1]",
    ];
    assert_eq!(contents(&end), line);
    assert_eq!(
        path_alts(&end),
        [
            u1.clone(),
            r1.clone(),
            u3.clone(),
            r4a.clone(),
            u5.clone(),
            r6.clone()
        ]
    );
    assert_eq!(
        end["totalTokens"],
        line.iter().map(|s| ceil4(s)).sum::<i64>()
    );
    assert_eq!(
        contents(&wm(u, &c, &format!("?alternativeId={r2}")).await),
        ["hello", "answer to hello [P2]"],
        "a stale answer keeps its own upstream"
    );
    assert_eq!(
        contents(&wm(u, &c, &format!("?alternativeId={r4b}")).await),
        [line[0], line[1], line[2], "answer to tell me more [P2]"]
    );

    // Fork at the other answer of T4 and go on there; the origin stays exactly as it was.
    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": t4_id, "alternativeId": r4b}),
        )
        .await
        .ok(201)
        .clone();
    let f = id(&fork);
    assert_eq!(fork["forkedFrom"]["originAlternativeId"], json!(r4b));
    assert_eq!(
        contents(&wm(u, &f, "").await),
        [
            "hi",
            "answer to hi [P1]",
            "tell me more",
            "answer to tell me more [P2]"
        ]
    );
    let ft = tree(u, &f).await;
    let fturns = turns_of(&ft);
    assert_eq!(fturns.len(), 4);
    let executed: Vec<Value> = fturns
        .iter()
        .map(|t| t["alternatives"][0]["executedBy"]["processId"].clone())
        .collect();
    assert_eq!(executed, [Value::Null, json!(p1), Value::Null, json!(p2)]);
    let leaf = id(&fturns[3]);
    let fu = say(u, &f, "in the fork", Some(&leaf)).await;
    let fr = answer(u, &f, p2, &id(&fu), None).await;
    assert_eq!(fr["content"], "answer to in the fork [P2]");
    assert_eq!(
        tree(u, &c).await,
        full,
        "the origin is untouched by its fork"
    );
}

// ---------------------------------------------------------------------------------------------
// The audit
// ---------------------------------------------------------------------------------------------

async fn findings(ids: &HashSet<String>) -> Vec<String> {
    let graph = aiden_graph::Graph::connect(&server().graph)
        .await
        .expect("graph");
    aiden_service::Auditor::new(graph)
        .audit()
        .await
        .expect("audit")
        .into_iter()
        .filter(|f| ids.contains(&f.id))
        .map(|f| format!("{} {}: {}", f.invariant, f.id, f.message))
        .collect()
}

async fn write(q: neo4rs::Query) {
    let graph = aiden_graph::Graph::connect(&server().graph)
        .await
        .expect("graph");
    let mut tx = graph.begin().await.expect("tx");
    tx.run(q).await.expect("write");
    tx.commit().await.expect("commit");
}

/// `aiden check` (TURN-1/2/3/5/6/7, OWN-1) finds nothing wrong in conversations built through
/// the API — edits, regenerations by two Processes, a failed and a canceled run, a stale branch,
/// system and tool_result Turns, Summaries and a fork — and does see those nodes (a corrupted
/// sequence is reported, then repaired).
#[tokio::test]
async fn audit_is_clean_for_conversations_built_through_the_api() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "q", None).await;
    let t1_id = id(&t1);
    let r1 = answer(u, &c, &k.p1, &t1_id, None).await;
    let t2_id = text(&r1["turnId"]);
    regen(u, &t2_id, &k.broken, None).await;
    regen(u, &t2_id, &k.p2, None).await;
    let g = regen_start(u, &t2_id, &k.held, None).await;
    u.post(&format!("/v1/runs/{}/cancel", text(&g["runId"])), json!({}))
        .await
        .ok(202);
    settled(u, &t2_id, &text(&g["alternativeId"])).await;
    k.release(1);
    switch(u, &t2_id, &id(&r1)).await;
    let sys = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "system", "content": "tool said 42", "turnType": "tool_result",
                   "parentTurnId": t2_id}),
        )
        .await
        .ok(201)
        .clone();
    edit(u, &t1_id, "q, edited", None).await;
    let t3 = say(u, &c, "more", Some(&id(&sys))).await;
    u.post(
        &format!("/v1/conversations/{c}/summaries"),
        json!({"content": "s", "coversUpToTurnId": t1_id, "sources": [first(&t1)], "createdByProcessId": k.p1}),
    )
    .await
    .ok(201);
    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": id(&t3), "alternativeId": first(&t3)}),
        )
        .await
        .ok(201)
        .clone();
    let f = id(&fork);
    let mut ids: HashSet<String> = [c.clone(), f.clone()].into_iter().collect();
    for conv in [&c, &f] {
        let t = tree(u, conv).await;
        ids.extend(turns_of(&t).iter().map(id));
        ids.extend(all_alts(&t).iter().map(id));
        ids.extend(
            u.get(&format!("/v1/conversations/{conv}/summaries"))
                .await
                .ok(200)["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(id),
        );
    }
    // 2 conversations; the origin's 4 Turns, 8 Alternatives and 1 Summary; the fork's 4 + 4.
    assert_eq!(ids.len(), 2 + 4 + 8 + 1 + 4 + 4, "{ids:?}");
    let found = findings(&ids).await;
    assert!(
        found.is_empty(),
        "aiden check on an API-built conversation:\n{}",
        found.join("\n")
    );

    // Not vacuous: the audit does look at these Turns.
    let leaf = id(&turns_of(&tree(u, &f).await)[3]);
    write(
        aiden_graph_query("MATCH (t:ConversationTurn {id: $t}) SET t.sequence = 9")
            .param("t", leaf.as_str()),
    )
    .await;
    let found = findings(&ids).await;
    write(
        aiden_graph_query("MATCH (t:ConversationTurn {id: $t}) SET t.sequence = 4")
            .param("t", leaf.as_str()),
    )
    .await;
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("TURN-1") && f.contains(&leaf)),
        "{found:?}"
    );
    assert!(findings(&ids).await.is_empty(), "repaired");
}

/// The windowed tree (issue #10): `?fromSequence=&toSequence=` answers exactly the whole tree's
/// Turns of those depths — `cacheStatus` and `hasChildren` derived across the window's edges
/// the same way — and refuses an empty or inverted window.
#[tokio::test]
async fn tree_window_is_the_whole_trees_slice_with_the_same_derivations() {
    let u = user().await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "one", None).await;
    let t2 = say(&u, &c, "two", Some(&id(&t1))).await;
    let t3 = say(&u, &c, "three", Some(&id(&t2))).await;
    let t4 = say(&u, &c, "four", Some(&id(&t3))).await;
    say(&u, &c, "five", Some(&id(&t4))).await;
    // A new version of turn 2: turn 3 answered the old one and is stale from now on.
    let edited = edit(&u, &id(&t2), "two, edited", None).await;
    switch(&u, &id(&t2), &id(&edited)).await;

    let whole = tree(&u, &c).await;
    let slice: Vec<Value> = turns_of(&whole)
        .into_iter()
        .filter(|t| (3..=4).contains(&t["sequence"].as_i64().unwrap()))
        .collect();
    assert_eq!(slice.len(), 2);
    assert_eq!(
        slice[0]["alternatives"][0]["cacheStatus"], "stale",
        "{whole}"
    );
    assert_eq!(slice[1]["alternatives"][0]["hasChildren"], true, "{whole}");

    let window = u
        .get(&format!(
            "/v1/conversations/{c}/tree?fromSequence=3&toSequence=4"
        ))
        .await
        .ok(200)
        .clone();
    assert_eq!(window["turns"], json!(slice), "{window}");
    assert_eq!(
        window["window"],
        json!({"fromSequence": 3, "toSequence": 4})
    );
    assert_eq!(window["conversation"], whole["conversation"]);

    let from_only = u
        .get(&format!("/v1/conversations/{c}/tree?fromSequence=4"))
        .await
        .ok(200)
        .clone();
    let seqs: Vec<i64> = turns_of(&from_only)
        .iter()
        .map(|t| t["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [4, 5]);

    for bad in ["fromSequence=0", "fromSequence=4&toSequence=3", "depth=2"] {
        let r = u.get(&format!("/v1/conversations/{c}/tree?{bad}")).await;
        assert_eq!(r.status.as_u16(), 400, "{bad}: {:?}", r.body);
        assert_eq!(r.code(), "VALIDATION_ERROR", "{bad}");
    }
}
