//! One graph you can ask: the reference edges (GRAPH-1..3) and the questions of
//! `docs/queries.md`, each run as written (`cypher/queries/ask/*.cypher`) against the real
//! graph after one scripted scenario, with its expected rows. Every query is scoped by the
//! scenario's own ids (or its rows are filtered to them), because the test graph is shared.
//! (Two questions need more than this harness has: `path_entities` runs in the knowledge suite,
//! where Graphiti extracts Entities, and `worker_lost_runs` in the fault suite, where a worker
//! is SIGKILLed.)

use std::collections::HashMap;

use aiden_tests::{
    aiden_graph_query, ask_query, fixtures, graph_rows, server, unique, user, Client,
};
use axum::{extract::Query, http::StatusCode, routing::get, Json, Router};
use serde_json::{json, Value};
use tokio::sync::OnceCell;

/// Runs question `name` with `params`; its rows as JSON objects.
async fn rows(name: &str, params: &[(&str, Value)]) -> Vec<Value> {
    graph_rows::<Value>(ask_query(name, params)).await
}

fn s(v: &str) -> Value {
    json!(v)
}

fn sorted(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_str().expect("string").to_owned())
        .collect();
    out.sort();
    out
}

// ---------------------------------------------------------------------------------------------
// The scenario
// ---------------------------------------------------------------------------------------------

const AGENT_CONTEXT: [&str; 5] = [
    "conversationId",
    "turnId",
    "alternativeId",
    "userMessage",
    "workingMemory",
];

type Params = Query<HashMap<String, String>>;

async fn reply(Query(p): Params) -> Json<Value> {
    let q = p.get("q").cloned().unwrap_or_default();
    Json(json!({"reply": format!("answer to {q}")}))
}

async fn fail() -> (StatusCode, Json<Value>) {
    (StatusCode::BAD_REQUEST, Json(json!({"refused": true})))
}

/// What the scenario made, by role.
struct Scenario {
    u: Client,
    since: String,
    svc: String,
    reply_tool: String,
    fail_tool: String,
    secret: String,
    secret_tool: String,
    secret_svc: String,
    /// An agent Process: one step `ask` calling `reply_tool`; version 2 after the PATCH.
    agent: String,
    /// An agent Process whose step `delegate` runs `child` (which calls `reply_tool`).
    parent: String,
    child: String,
    /// One step `boom` calling `fail_tool` (a 400: fails without retry).
    failing: String,
    /// Version 1 called `reply_tool`; its current version calls `secret_tool` only.
    former: String,
    secret_user: String,
    /// c: user turn t1, agent turn t2 with a1 (agent v1), a2 (parent), a3 (agent v2, active).
    c: String,
    t2: String,
    a1: String,
    a2: String,
    a3: String,
    r1: String,
    r2: String,
    r3: String,
    child_run: String,
    fail_run: String,
    /// c2 forked from c at (t2, a1); its own agent answer a4 (agent v2) at t4; c3 forked from
    /// c2 at (t4, a4).
    c2: String,
    t4: String,
    a4: String,
    r4: String,
    c3: String,
    summary: String,
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("id").to_owned()
}

async fn process(u: &Client, body: Value) -> String {
    id(&fixtures::create(u, "processes", body).await)
}

fn agent_step(tool: &str) -> Value {
    json!({"id": "ask", "tool": tool, "inputs": {"q": "{{userMessage}}"}, "output": {"variable": "r"}})
}

async fn agent_answer(u: &Client, path: &str, body: Value) -> (String, String, String) {
    let g = u.post(path, body).await.ok(202).clone();
    let run = g["runId"].as_str().unwrap().to_owned();
    assert_eq!(u.settled_run(&run).await["status"], "completed");
    let field = |k: &str| g[k].as_str().unwrap().to_owned();
    // An agent Turn answers its ids; a new Alternative answers itself (`id`).
    let alternative = g
        .get("alternativeId")
        .unwrap_or(&g["id"])
        .as_str()
        .unwrap()
        .to_owned();
    (field("turnId"), alternative, run)
}

async fn fork(u: &Client, c: &str, turn: &str, alt: &str, title: &str) -> String {
    let body = json!({"turnId": turn, "alternativeId": alt, "title": title});
    id(u.post(&format!("/v1/conversations/{c}/fork"), body)
        .await
        .ok(201))
}

async fn user_turn(u: &Client, c: &str, content: &str, parent: Option<&str>) -> (String, String) {
    let mut body = json!({"speaker": "user", "content": content});
    if let Some(p) = parent {
        body["parentTurnId"] = json!(p);
    }
    let t = u
        .post(&format!("/v1/conversations/{c}/turns"), body)
        .await
        .ok(201)
        .clone();
    (id(&t), id(&t["alternatives"][0]))
}

async fn build() -> Scenario {
    let u = user().await;
    let since = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let app = Router::new()
        .route("/reply", get(reply))
        .route("/fail", get(fail));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let svc = fixtures::rest_service(&u, false).await;
    let tool = |path: &str| {
        json!({"id": unique("tool"), "name": path.trim_start_matches('/').split('?').next().unwrap(),
               "serviceId": svc, "connectionParams": {"endpoint": base},
               "operation": {"type": "rest_api", "method": "GET", "path": path},
               "inputSchema": {"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}},
               "outputSchema": {"type": "object"}})
    };
    let reply_tool = id(&fixtures::create(&u, "tools", tool("/reply?q={{q}}")).await);
    let fail_tool = id(&fixtures::create(&u, "tools", tool("/fail?q={{q}}")).await);
    let secret = fixtures::secret(&u, "pw-queries").await;
    let secret_svc = id(&fixtures::create(&u, "services", fixtures::graph_service_body()).await);
    let secret_tool = id(&fixtures::create(
        &u,
        "tools",
        json!({"id": unique("tool"), "name": "lookup", "serviceId": secret_svc, "secretId": secret,
               "connectionParams": {"endpoint": "bolt://127.0.0.1:7687", "database": "neo4j"},
               "operation": {"type": "graph_query", "query": "RETURN $q AS q"},
               "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
               "outputSchema": {"type": "object"}}),
    )
    .await);

    let agent = process(
        &u,
        json!({"id": unique("agent"), "name": "agent", "initialContext": AGENT_CONTEXT,
        "steps": [agent_step(&reply_tool)], "outputTemplate": "{{r.body.reply}}"}),
    )
    .await;
    let child = process(&u, json!({"id": unique("child"), "name": "child", "initialContext": ["q"],
        "steps": [{"id": "ask", "tool": reply_tool, "inputs": {"q": "{{q}}"}, "output": {"variable": "r"}}],
        "outputTemplate": "{{r.body.reply}}"}))
    .await;
    let parent = process(&u, json!({"id": unique("parent"), "name": "parent", "initialContext": AGENT_CONTEXT,
        "steps": [{"id": "delegate", "process": child, "inputs": {"q": "{{userMessage}}"}, "output": {"variable": "r"}}],
        "outputTemplate": "{{r}}"}))
    .await;
    let failing = process(&u, json!({"id": unique("failing"), "name": "failing", "initialContext": ["q"],
        "steps": [{"id": "boom", "tool": fail_tool, "inputs": {"q": "{{q}}"}, "output": {"variable": "r"}}]}))
    .await;
    let former = process(&u, json!({"id": unique("former"), "name": "former", "initialContext": ["q"],
        "steps": [{"id": "ask", "tool": reply_tool, "inputs": {"q": "{{q}}"}, "output": {"variable": "r"}}]}))
    .await;
    u.patch(&format!("/v1/processes/{former}"), json!({"steps": [
        {"id": "look", "tool": secret_tool, "inputs": {"q": "{{q}}"}, "output": {"variable": "r"}}]}))
        .await
        .ok(200);
    let secret_user = process(&u, json!({"id": unique("secretuser"), "name": "secret user", "initialContext": ["q"],
        "steps": [{"id": "look", "tool": secret_tool, "inputs": {"q": "{{q}}"}, "output": {"variable": "r"}}]}))
    .await;

    // c: t1 (user) → t2 (agent): a1 by agent v1, a2 by parent (a child run), a3 by agent v2.
    let c = id(u
        .post("/v1/conversations", json!({"title": "origin"}))
        .await
        .ok(201));
    let (t1, _) = user_turn(&u, &c, "hello", None).await;
    let agent_turns = format!("/v1/conversations/{c}/agent-turns");
    let (t2, a1, r1) = agent_answer(
        &u,
        &agent_turns,
        json!({"processId": agent, "parentTurnId": t1}),
    )
    .await;
    let alternatives = format!("/v1/turns/{t2}/alternatives");
    let (_, a2, r2) = agent_answer(&u, &alternatives, json!({"processId": parent})).await;
    let patched = u
        .patch(
            &format!("/v1/processes/{agent}"),
            json!({"outputTemplate": "{{r.body.reply}}!"}),
        )
        .await;
    assert_eq!(patched.ok(200)["version"], 2);
    let (_, a3, r3) = agent_answer(&u, &alternatives, json!({"processId": agent})).await;
    let run2 = u.get(&format!("/v1/runs/{r2}")).await.ok(200).clone();
    let child_run = run2["steps"][0]["childRunId"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_default();

    let fail_run = u.start_run(&failing, json!({"q": "x"})).await;
    assert_eq!(u.settled_run(&fail_run).await["status"], "failed");

    // c2 forks c at (t2, a1) and answers once more (agent v2); c3 forks c2 at that answer.
    let c2 = fork(&u, &c, &t2, &a1, "fork one").await;
    let tree = u
        .get(&format!("/v1/conversations/{c2}/tree"))
        .await
        .ok(200)
        .clone();
    let last_turn = tree["turns"].as_array().unwrap().last().unwrap().clone();
    let (t3, _) = user_turn(&u, &c2, "more", Some(&id(&last_turn))).await;
    let (t4, a4, r4) = agent_answer(
        &u,
        &format!("/v1/conversations/{c2}/agent-turns"),
        json!({"processId": agent, "parentTurnId": t3}),
    )
    .await;
    let c3 = fork(&u, &c2, &t4, &a4, "fork two").await;

    // A Summary of c's first turn, made by (and naming) run r1.
    let summary = id(u
        .post(
            &format!("/v1/conversations/{c}/summaries"),
            json!({"content": "greeting", "coversUpToTurnId": t1, "sources": [a1_source(&u, &c, &t1).await],
                   "runId": r1}),
        )
        .await
        .ok(201));

    Scenario {
        u,
        since,
        svc,
        reply_tool,
        fail_tool,
        secret,
        secret_tool,
        secret_svc,
        agent,
        parent,
        child,
        failing,
        former,
        secret_user,
        c,
        t2,
        a1,
        a2,
        a3,
        r1,
        r2,
        r3,
        child_run,
        fail_run,
        c2,
        t4,
        a4,
        r4,
        c3,
        summary,
    }
}

/// The user Alternative of turn `t1` in `c` (the Summary's source).
async fn a1_source(u: &Client, c: &str, t1: &str) -> String {
    let tree = u
        .get(&format!("/v1/conversations/{c}/tree"))
        .await
        .ok(200)
        .clone();
    let turn = tree["turns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == json!(t1))
        .unwrap()
        .clone();
    id(&turn["alternatives"][0])
}

static SCENARIO: OnceCell<Scenario> = OnceCell::const_new();

/// Built once for the file's tests (they only read it).
async fn scenario() -> &'static Scenario {
    SCENARIO.get_or_init(build).await
}

/// The scenario's user with a client of this test's own runtime (a client's pooled connections
/// die with the runtime of the test that made them).
fn owner(sc: &Scenario) -> Client {
    Client::new(&sc.u.id, &sc.u.token)
}

// ---------------------------------------------------------------------------------------------
// The edges (GRAPH-1..3)
// ---------------------------------------------------------------------------------------------

/// GRAPH-1 / GRAPH-2 / GRAPH-3: an agent Alternative is GENERATED_BY its run, a Summary naming
/// its run likewise, and each audit record hangs off its step run, in the statements that write
/// them; the summaries list shows the run.
#[tokio::test]
async fn graph_1_2_3_alternatives_summaries_and_audits_are_linked_by_edges() {
    let sc = scenario().await;
    let generated: Vec<Value> = graph_rows(
        aiden_graph_query(
            "MATCH (n)-[:GENERATED_BY]->(r:Run) WHERE n.id IN $ids
             RETURN n.id AS id, r.id AS runId, n.runId AS property ORDER BY id",
        )
        .param(
            "ids",
            vec![
                sc.a1.clone(),
                sc.a2.clone(),
                sc.a3.clone(),
                sc.a4.clone(),
                sc.summary.clone(),
            ],
        ),
    )
    .await;
    let mut want = vec![
        json!({"id": sc.a1, "runId": sc.r1, "property": sc.r1}),
        json!({"id": sc.a2, "runId": sc.r2, "property": sc.r2}),
        json!({"id": sc.a3, "runId": sc.r3, "property": sc.r3}),
        json!({"id": sc.a4, "runId": sc.r4, "property": sc.r4}),
        json!({"id": sc.summary, "runId": sc.r1, "property": sc.r1}),
    ];
    want.sort_by_key(|v| v["id"].as_str().unwrap().to_owned());
    assert_eq!(generated, want);
    // Fork copies were not generated by a run: no edge (their COPIED_FROM leads to one).
    let copies: Vec<Value> = graph_rows(
        aiden_graph_query(
            "MATCH (a:Alternative {conversationId: $c})-[:COPIED_FROM]->(o:Alternative)
             OPTIONAL MATCH (a)-[g:GENERATED_BY]->()
             RETURN o.id AS origin, count(g) AS edges ORDER BY origin",
        )
        .param("c", sc.c2.as_str()),
    )
    .await;
    assert!(
        copies.iter().any(|r| r["origin"] == json!(sc.a1)),
        "{copies:?}"
    );
    assert!(copies.iter().all(|r| r["edges"] == 0), "{copies:?}");

    // The StepRun is its tool call's audit record: no record of its own.
    let audits: Vec<Value> = graph_rows(
        aiden_graph_query(
            "MATCH (r:Run {id: $run})-[:HAS_STEP_RUN]->(sr:StepRun)
             OPTIONAL MATCH (sr)-[:HAS_AUDIT]->(x:ToolCallAudit)
             RETURN sr.stepId AS step, sr.status AS status, sr.failedAt = sr.finishedAt AS failedAt,
                    sr.workerId IS NOT NULL AS worker, sr.attempts AS attempts, count(x) AS records",
        )
        .param("run", sc.fail_run.as_str()),
    )
    .await;
    assert_eq!(
        audits,
        vec![
            json!({"step": "boom", "status": "failed", "failedAt": true, "worker": true,
                    "attempts": 1, "records": 0})
        ]
    );

    let list = owner(sc)
        .get(&format!("/v1/conversations/{}/summaries", sc.c))
        .await
        .ok(200)
        .clone();
    assert_eq!(list["items"][0]["runId"], json!(sc.r1), "{list}");
    assert_eq!(list["items"][0]["createdByProcessId"], json!(sc.agent));
}

/// SUM-1 / GRAPH-2: a Summary may only name a run its author can see, and the run decides which
/// Process made it; refusals write nothing.
#[tokio::test]
async fn sum_1_a_summary_names_only_a_visible_run_of_the_process_it_claims() {
    let sc = scenario().await;
    let other = user().await;
    let oc = id(other.post("/v1/conversations", json!({})).await.ok(201));
    let (t, a) = user_turn(&other, &oc, "mine", None).await;
    let body = |run: &str, process: Option<&str>| {
        let mut b = json!({"content": "s", "coversUpToTurnId": t, "sources": [a], "runId": run});
        if let Some(p) = process {
            b["createdByProcessId"] = json!(p);
        }
        b
    };
    let path = format!("/v1/conversations/{oc}/summaries");
    other
        .post(&path, body(&sc.r1, None))
        .await
        .rejects(422, "SUM-1");
    other
        .post(&path, body(&unique("run"), None))
        .await
        .rejects(422, "SUM-1");
    // Their own run, claimed as another Process's, then as its own.
    let svc = fixtures::rest_service(&other, false).await;
    let tool = fixtures::rest_tool(&other, &svc).await;
    let mut pb = fixtures::process_body(&tool);
    pb["shared"] = json!(false);
    let p = process(&other, pb).await;
    let run = other.start_run(&p, json!({"q": "x"})).await;
    other.settled_run(&run).await;
    other
        .post(&path, body(&run, Some(&sc.agent)))
        .await
        .rejects(422, "SUM-1");
    let made = other.post(&path, body(&run, None)).await.ok(201).clone();
    assert_eq!(made["runId"], json!(run));
    assert_eq!(made["createdByProcessId"], json!(p));
    // Only the accepted one was written.
    let list = other.get(&path).await.ok(200).clone();
    let runs: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["runId"])
        .collect();
    assert_eq!(runs, vec![&json!(run)]);
}

// ---------------------------------------------------------------------------------------------
// The questions (docs/queries.md)
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn ask_which_alternatives_came_from_runs_that_called_a_tool_on_a_service() {
    let sc = scenario().await;
    let got = rows(
        "alternatives_from_tool_on_service",
        &[("toolId", s(&sc.reply_tool)), ("serviceId", s(&sc.svc))],
    )
    .await;
    let mut want = vec![
        json!({"alternativeId": sc.a1, "conversationId": sc.c, "runId": sc.r1, "processId": sc.agent, "version": 1}),
        json!({"alternativeId": sc.a2, "conversationId": sc.c, "runId": sc.r2, "processId": sc.parent, "version": 1}),
        json!({"alternativeId": sc.a3, "conversationId": sc.c, "runId": sc.r3, "processId": sc.agent, "version": 2}),
        json!({"alternativeId": sc.a4, "conversationId": sc.c2, "runId": sc.r4, "processId": sc.agent, "version": 2}),
    ];
    want.sort_by_key(|v| v["alternativeId"].as_str().unwrap().to_owned());
    assert_eq!(got, want);
    // The failing tool on the same Service generated nothing.
    let none = rows(
        "alternatives_from_tool_on_service",
        &[("toolId", s(&sc.fail_tool)), ("serviceId", s(&sc.svc))],
    )
    .await;
    assert_eq!(none, Vec::<Value>::new());
}

#[tokio::test]
async fn ask_which_processes_would_break_if_a_service_went_down() {
    let sc = scenario().await;
    let got = rows(
        "processes_depending_on_service",
        &[("serviceId", s(&sc.svc))],
    )
    .await;
    let mut want = vec![
        json!({"processId": sc.agent, "name": "agent", "enabled": true, "throughTools": [sc.reply_tool]}),
        json!({"processId": sc.child, "name": "child", "enabled": true, "throughTools": [sc.reply_tool]}),
        json!({"processId": sc.parent, "name": "parent", "enabled": true, "throughTools": [sc.reply_tool]}),
        json!({"processId": sc.failing, "name": "failing", "enabled": true, "throughTools": [sc.fail_tool]}),
    ];
    want.sort_by_key(|v| v["processId"].as_str().unwrap().to_owned());
    // `former` called the Service only in its old version.
    assert_eq!(got, want);
    let secret_side = rows(
        "processes_depending_on_service",
        &[("serviceId", s(&sc.secret_svc))],
    )
    .await;
    let ids: Vec<&str> = secret_side
        .iter()
        .map(|r| r["processId"].as_str().unwrap())
        .collect();
    let mut want = vec![sc.former.as_str(), sc.secret_user.as_str()];
    want.sort();
    assert_eq!(ids, want);
}

#[tokio::test]
async fn ask_failures_per_tool_since_a_time() {
    let sc = scenario().await;
    let got = rows("tool_failures_since", &[("since", s(&sc.since))]).await;
    let ours: Vec<&Value> = got
        .iter()
        .filter(|r| {
            [&sc.reply_tool, &sc.fail_tool].contains(&&r["toolId"].as_str().unwrap().to_owned())
        })
        .collect();
    assert_eq!(
        ours,
        vec![
            &json!({"toolId": sc.fail_tool, "tool": "fail", "failed": 1, "retried": 0, "runs": 1})
        ]
    );
    // Nothing failed after the scenario.
    let later = chrono::Utc::now() + chrono::Duration::seconds(5);
    let later = later.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let after = rows("tool_failures_since", &[("since", s(&later))]).await;
    assert!(after.iter().all(|r| r["toolId"] != json!(sc.fail_tool)));
}

#[tokio::test]
async fn ask_the_lineage_of_a_fork_back_to_its_origin() {
    let sc = scenario().await;
    let got = rows("fork_lineage", &[("conversationId", s(&sc.c3))]).await;
    assert_eq!(
        got,
        vec![
            json!({"generation": 0, "conversationId": sc.c3, "title": "fork two", "forkedAtTurn": null, "forkedAtAlternative": null}),
            json!({"generation": 1, "conversationId": sc.c2, "title": "fork one", "forkedAtTurn": sc.t4, "forkedAtAlternative": sc.a4}),
            json!({"generation": 2, "conversationId": sc.c, "title": "origin", "forkedAtTurn": sc.t2, "forkedAtAlternative": sc.a1}),
        ]
    );
}

#[tokio::test]
async fn ask_which_conversations_used_a_version_of_a_process() {
    let sc = scenario().await;
    let strip = |rows: Vec<Value>| -> Vec<(String, i64)> {
        rows.iter()
            .map(|r| {
                assert_eq!(r["ownerId"], json!(sc.u.id));
                assert!(r["lastUsedAt"].is_string());
                (
                    r["conversationId"].as_str().unwrap().to_owned(),
                    r["alternatives"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    let v1 = rows(
        "conversations_using_process_version",
        &[("processId", s(&sc.agent)), ("version", json!(1))],
    )
    .await;
    assert_eq!(strip(v1), vec![(sc.c.clone(), 1)]);
    let v2 = rows(
        "conversations_using_process_version",
        &[("processId", s(&sc.agent)), ("version", json!(2))],
    )
    .await;
    let mut want = vec![(sc.c.clone(), 1), (sc.c2.clone(), 1)];
    want.sort();
    assert_eq!(strip(v2), want);
}

#[tokio::test]
async fn ask_what_rotating_a_secret_touches() {
    let sc = scenario().await;
    let got = rows("secret_blast_radius", &[("secretId", s(&sc.secret))]).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["toolId"], json!(sc.secret_tool));
    assert_eq!(got[0]["serviceId"], json!(sc.secret_svc));
    let mut want = vec![sc.former.clone(), sc.secret_user.clone()];
    want.sort();
    assert_eq!(sorted(&got[0]["processes"]), want);
}

#[tokio::test]
async fn ask_where_the_time_goes_per_step_of_a_process_version() {
    let sc = scenario().await;
    let got = rows(
        "step_latency",
        &[("processId", s(&sc.agent)), ("version", json!(1))],
    )
    .await;
    assert_eq!(got.len(), 1, "{got:?}");
    let r = &got[0];
    assert_eq!(
        (&r["stepId"], &r["calls"], &r["failures"]),
        (&s("ask"), &json!(1), &json!(0))
    );
    let (min, avg, max) = (
        r["minMs"].as_f64().unwrap(),
        r["avgMs"].as_f64().unwrap(),
        r["maxMs"].as_f64().unwrap(),
    );
    assert!(0.0 <= min && min <= avg && avg <= max, "{r}");
    let failing = rows(
        "step_latency",
        &[("processId", s(&sc.failing)), ("version", json!(1))],
    )
    .await;
    assert_eq!(failing.len(), 1, "{failing:?}");
    assert_eq!(
        (
            &failing[0]["stepId"],
            &failing[0]["calls"],
            &failing[0]["failures"]
        ),
        (&s("boom"), &json!(1), &json!(1))
    );
}

#[tokio::test]
async fn ask_the_tree_of_runs_a_run_started() {
    let sc = scenario().await;
    assert!(
        !sc.child_run.is_empty(),
        "the delegate step names its child run"
    );
    let got = rows("run_tree", &[("runId", s(&sc.r2))]).await;
    assert_eq!(
        got,
        vec![
            json!({"runId": sc.r2, "processId": sc.parent, "version": 1, "status": "completed", "depth": 0, "spawnedBy": null}),
            json!({"runId": sc.child_run, "processId": sc.child, "version": 1, "status": "completed", "depth": 1, "spawnedBy": "delegate"}),
        ]
    );
}

#[tokio::test]
async fn ask_who_runs_a_process_and_how_their_runs_end() {
    let sc = scenario().await;
    let strip = |rows: Vec<Value>| -> Vec<Value> {
        rows.into_iter()
            .map(|mut r| {
                assert!(r["latest"].is_string(), "{r}");
                r.as_object_mut().unwrap().remove("latest");
                r
            })
            .collect()
    };
    let agent = strip(rows("runs_by_caller", &[("processId", s(&sc.agent))]).await);
    assert_eq!(
        agent,
        vec![json!({"userId": sc.u.id, "status": "completed", "runs": 3})]
    );
    let failing = strip(rows("runs_by_caller", &[("processId", s(&sc.failing))]).await);
    assert_eq!(
        failing,
        vec![json!({"userId": sc.u.id, "status": "failed", "runs": 1})]
    );
}

/// docs/queries.md shows every question's Cypher exactly as the files hold it (so the tested
/// text is the documented one), and every file is documented.
#[tokio::test]
async fn docs_show_every_question_as_tested() {
    let _ = server();
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/queries.md"))
        .expect("docs/queries.md");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../cypher/queries/ask");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(name.ends_with(".cypher"), "{name}");
        let path = format!("{dir}/{name}");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(
            doc.contains(text.trim_end()),
            "docs/queries.md does not show {name} as it is"
        );
        n += 1;
    }
    assert!(n >= 10, "ten questions at least, found {n}");
}
