//! The router (AGT-15) and the pipeline's audit record (AGT-16), against the scripted
//! model: its `{"route": …}` script entry answers the router's turn.

use aiden_tests::{aiden_graph_query, graph_rows, step_of as step, unique};
use serde_json::{json, Value};

use super::{agent_process, events, kit, run, Kit};

/// An agent over search and clock whose router knows `weather` (search only, `/weather`) and
/// `chat` (no tools, the fallback).
async fn routed_process(k: &Kit) -> String {
    let router = json!({
        "intents": [
            {"name": "chat", "description": "small talk"},
            {"name": "weather", "description": "the weather somewhere", "tools": [k.search],
             "prefix": "/weather"}
        ],
        "fallback": "chat", "minConfidence": 0.6
    });
    agent_process(
        k,
        &k.openai,
        &[&k.search, &k.clock],
        json!({"router": router}),
    )
    .await
}

fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn of_kind<'a>(ev: &'a [Value], kind: &str) -> Vec<&'a Value> {
    ev.iter().filter(|e| e["kind"] == kind).collect()
}

#[tokio::test]
async fn agt_15_16_the_router_narrows_the_tools_to_its_intent_and_the_pipeline_is_audited_once() {
    let k = kit().await;
    let p = routed_process(&k).await;
    let script = json!([
        {"route": {"intent": "weather", "confidence": 0.9}},
        {"calls": [{"name": "search", "args": {"q": "kigali"}},
                   {"name": "clock", "args": {"zone": "CAT"}}]},
        {"answer": "done"}
    ]);
    let r = run(&k, &p, script).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert!(
        r["output"].as_str().unwrap().contains("sunny in kigali"),
        "{r}"
    );
    // The clock was declared but the intent leaves it out: the model asked for it anyway and
    // it never ran.
    assert_eq!((k.calls("search:"), k.calls("clock:")), (1, 0));
    let reqs = k.requests();
    assert_eq!(reqs.len(), 3, "the router's turn, then two of the loop's");
    let router_system = reqs[0]["messages"][0]["content"].as_str().unwrap();
    assert!(router_system.contains("- weather: the weather somewhere"));
    assert!(
        offered(&reqs[0]).is_empty(),
        "the router is offered no tools"
    );
    assert_eq!(offered(&reqs[1]), ["search"]);
    for s in ["answer#r1", "answer#m2", "answer#t3", "answer#m4"] {
        assert_eq!(step(&r, s)["status"], "completed", "{s} in {r}");
    }
    assert_eq!(step(&r, "answer")["output"]["iterations"], 2);
    let ev = events(&k.u, r["id"].as_str().unwrap()).await;
    let routed = of_kind(&ev, "step.routed");
    assert_eq!(routed.len(), 1, "{ev:?}");
    assert_eq!(
        (&routed[0]["data"]["intent"], &routed[0]["data"]["source"]),
        (&json!("weather"), &json!("model")),
        "{routed:?}"
    );
    let refused: Vec<(&Value, &Value)> = of_kind(&ev, "tool.refused")
        .into_iter()
        .map(|e| (&e["data"]["stage"], &e["data"]["code"]))
        .collect();
    assert_eq!(
        refused,
        [
            (&json!("policy"), &json!("TOOL_FORBIDDEN")),
            (&json!("call"), &json!("TOOL_FORBIDDEN"))
        ],
        "{ev:?}"
    );
    // One audit record for the whole pipeline, on the agent's step run, beside the calls' own.
    let rows: Vec<Value> = graph_rows(
        aiden_graph_query(
            "MATCH (:StepRun {id: $sr})-[:HAS_AUDIT]->(x:ToolCallAudit {kind: 'pipeline'})
             RETURN x.pipeline AS pipeline, x.status AS status, x.toolId AS tool",
        )
        .param("sr", format!("{}/answer", r["id"].as_str().unwrap())),
    )
    .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "completed");
    assert_eq!(rows[0]["tool"], k.openai.as_str());
    let pipeline: Value = serde_json::from_str(rows[0]["pipeline"].as_str().unwrap()).unwrap();
    assert_eq!(pipeline["router"]["intent"], "weather");
    assert_eq!(pipeline["router"]["confidence"], 0.9);
    assert_eq!(pipeline["policy"]["offered"], json!(["search"]));
    assert_eq!(
        pipeline["policy"]["forbidden"][0]["toolId"],
        k.clock.as_str()
    );
    assert_eq!(pipeline["executor"]["roundTrips"], 2);
    assert_eq!(pipeline["executor"]["toolCalls"], 1);
    assert_eq!(pipeline["executor"]["refused"][0]["code"], "TOOL_FORBIDDEN");
    let calls: Vec<&str> = pipeline["executor"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["stepId"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["answer#r1", "answer#m2", "answer#t3", "answer#m4"]);
    assert_eq!(pipeline["postHooks"]["memorySuggestions"], 0);
    // AGT-16: the pipeline record holds what was decided, never a call's arguments or result.
    let recorded = rows[0]["pipeline"].as_str().unwrap();
    for leaked in ["kigali", "CAT", "sunny"] {
        assert!(!recorded.contains(leaked), "{leaked} in {recorded}");
    }
    let per_call: Vec<Value> = graph_rows(
        aiden_graph_query(
            "MATCH (:Run {id: $run})-[:HAS_STEP_RUN]->(sr:StepRun)
             WHERE sr.callSpec IS NOT NULL AND sr.workerId IS NOT NULL AND sr.durationMs IS NOT NULL
             RETURN count(sr) AS n",
        )
        .param("run", r["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(
        per_call[0]["n"], 4,
        "each call's StepRun is its audit record"
    );
    // The pipeline record is not a tool call: "where the time goes" leaves it out.
    let latency: Vec<Value> = graph_rows(aiden_tests::ask_query(
        "step_latency",
        &[("processId", json!(p)), ("version", json!(1))],
    ))
    .await;
    assert!(
        latency.iter().all(|r| r["stepId"] != "answer"),
        "{latency:?}"
    );
}

#[tokio::test]
async fn agt_15_a_prefix_skips_the_router_and_an_unusable_route_falls_back() {
    let k = kit().await;
    let p = routed_process(&k).await;
    // `/weather …`: routed by its prefix, no router turn; the prefix is not part of the message.
    let script = json!([{"calls": [{"name": "search", "args": {"q": "huye"}}]}, {"answer": "ok"}]);
    let run_id =
        k.u.start_run(&p, json!({"question": format!("/weather script:{script}")}))
            .await;
    let r = k.u.settled_run(&run_id).await;
    assert_eq!(r["status"], "completed", "{r}");
    let reqs = k.requests();
    assert_eq!(reqs.len(), 2, "no router turn");
    assert_eq!(offered(&reqs[0]), ["search"]);
    let user = reqs[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert!(user["content"].as_str().unwrap().starts_with("script:"));
    let ev = events(&k.u, &run_id).await;
    assert_eq!(of_kind(&ev, "step.routed")[0]["data"]["source"], "prefix");
    // A classification under minConfidence, then one that does not parse: both fall back to
    // `chat`, which offers no tools at all.
    for route in [
        json!({"intent": "weather", "confidence": 0.3}),
        json!("it is probably weather"),
    ] {
        let before = k.requests().len();
        let r = run(&k, &p, json!([{"route": route}, {"answer": "hello"}])).await;
        assert_eq!(r["status"], "completed", "{r}");
        let reqs = k.requests();
        assert_eq!(reqs.len() - before, 2);
        assert!(offered(&reqs[before + 1]).is_empty(), "{route}");
        let ev = events(&k.u, r["id"].as_str().unwrap()).await;
        let routed = of_kind(&ev, "step.routed");
        assert_eq!(
            (&routed[0]["data"]["intent"], &routed[0]["data"]["source"]),
            (&json!("chat"), &json!("fallback")),
            "{route}"
        );
        assert_eq!(of_kind(&ev, "tool.refused").len(), 2, "both tools left out");
    }
    // Defined badly: an intent's tool the agent does not declare.
    let bad = json!({"id": unique("agent"), "name": "a", "initialContext": ["question"],
        "steps": [{"id": "answer", "tool": k.openai, "inputs": {"message": "{{question}}"},
                   "agent": {"tools": [k.search],
                             "router": {"intents": [{"name": "t", "tools": [k.clock]}]}}}]});
    k.u.post("/v1/processes", bad).await.rejects(422, "AGT-15");
}
