//! Agent Alternatives: executed by a Process version (TURN-5), `generating` until their run
//! settles, then `valid` with its output or `failed` with its error (TURN-6).

use std::time::{Duration, Instant};

use aiden_tests::{aiden_graph_query, graph_rows, user};
use serde_json::{json, Value};

use super::*;

/// TURN-5: agent Alternatives, and only they, are EXECUTED_BY the Process version that made
/// them: `executedBy {processId, version}` with version fixed at creation (a later Process
/// version is used, and recorded, only by later Alternatives; versions are never rewritten,
/// PROC-9).
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
    let r = u.settled_run(&run).await;
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
    let run = u.settled_run(&text(&f["runId"])).await;
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
    assert_eq!(u.settled_run(&run).await["status"], "canceled");
    assert_eq!(a["cacheStatus"], "failed", "{a}");
    assert_eq!(a["content"], Value::Null);
    assert!(!a["error"].is_null(), "{a}");
    // The step's end: the worker dropped the call when the cancel reached it, or finished it
    // and the engine ignored the late result.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !server().logs().lines().any(|l| {
        l.contains(&run)
            && (l.contains("job canceled mid-call; acked")
                || l.contains("result for a settled step ignored"))
    }) {
        assert!(Instant::now() < deadline, "the canceled step never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        alternative(u, &turn, &alt).await["content"],
        Value::Null,
        "a late step result does not write content"
    );
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
    let run = u.settled_run(&text(&r["runId"])).await;
    assert_eq!(run["status"], "completed");
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
    let orun = u.settled_run(&text(&o["runId"])).await;
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
