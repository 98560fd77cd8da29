//! A step calling a Process: a child run, within the caller's maxRecursionDepth (PROC-7).

use aiden_tests::{step_of, user};
use serde_json::json;

use super::*;

/// A step calling a Process runs it as a child run (depth 2, parentRunId) whose output is the
/// step's output.
#[tokio::test]
async fn a_called_process_runs_as_a_child_run_whose_output_is_the_step_output() {
    let u = user().await;
    let k = kit(&u).await;
    let child = process(
        &u,
        json!({"initialContext": ["x"], "steps": [step(&k.echo, "e", json!({"q": "child-{{x}}"}))],
            "outputTemplate": "{{e.body}}"}),
    )
    .await;
    let parent = process(
        &u,
        json!({"initialContext": ["q"], "steps": [
            {"id": "call", "process": child, "inputs": {"x": "{{q}}"}, "output": {"variable": "r"}},
            step(&k.echo, "after", json!({"q": "{{r.x}}!"}))],
            "outputTemplate": "{{after.body.x}}"}),
    )
    .await;
    let id = start(&u, &parent, json!({"q": "42"})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], "child-42!");
    let call = step_of(&run, "call");
    assert_eq!(call["status"], "completed");
    let child_id = call["childRunId"].as_str().expect("childRunId").to_owned();
    let child_run = u.get(&format!("/v1/runs/{child_id}")).await.ok(200).clone();
    assert_eq!(child_run["status"], "completed");
    assert_eq!(child_run["processId"], child);
    assert_eq!(child_run["parentRunId"], id);
    assert_eq!(child_run["depth"], 2);
    assert_eq!(
        child_run["output"],
        json!({"x": "child-42", "n": 7, "obj": {"k": [1, 2], "s": "deep"}})
    );
    assert_eq!(
        call["output"], child_run["output"],
        "the step output is the child's"
    );
    assert_eq!(
        k.up.calls()
            .iter()
            .map(|c| c.query["q"].clone())
            .collect::<Vec<_>>(),
        vec!["child-42", "child-42!"]
    );
    let child_events = sse(&u, &child_id, None).await;
    assert_eq!(kinds(&child_events).first().unwrap(), "run.started");
    assert_eq!(child_events[0].1["data"]["depth"], 2);
    // The child run is as private as its parent.
    let other = user().await;
    assert_eq!(other.get(&format!("/v1/runs/{child_id}")).await.status, 404);
}

/// PROC-7 at run time: a call chain that ends up deeper than the caller's maxRecursionDepth
/// fails the step with PROC-7 (the static check saw the callee before it grew).
#[tokio::test]
async fn proc_7_a_chain_deeper_than_max_recursion_depth_fails_the_step() {
    let u = user().await;
    let k = kit(&u).await;
    let leaf = process(
        &u,
        json!({"steps": [step(&k.echo, "e", json!({"q": "leaf"}))], "outputTemplate": "{{e.body.x}}"}),
    )
    .await;
    let middle = process(
        &u,
        json!({"steps": [step(&k.echo, "e", json!({"q": "middle"}))], "outputTemplate": "{{e.body.x}}"}),
    )
    .await;
    let top = process(
        &u,
        json!({"steps": [{"id": "call", "process": middle, "inputs": {}, "output": {"variable": "r"}}],
            "outputTemplate": "{{r}}", "maxRecursionDepth": 2}),
    )
    .await;
    // Depth 2 is within the limit.
    let run = u.settled_run(&start(&u, &top, json!({})).await).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], "middle");

    u.patch(
        &format!("/v1/processes/{middle}"),
        json!({"steps": [{"id": "call", "process": leaf, "inputs": {}, "output": {"variable": "r"}}],
            "outputTemplate": "{{r}}"}),
    )
    .await
    .ok(200);
    let id = start(&u, &top, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "failed", "{run}");
    let call = step_of(&run, "call");
    assert_eq!(call["error"]["code"], "PROC-7", "{run}");
    assert_eq!(run["error"]["code"], "PROC-7", "{run}");
    let middle_run = u
        .get(&format!(
            "/v1/runs/{}",
            call["childRunId"].as_str().unwrap()
        ))
        .await
        .ok(200)
        .clone();
    assert_eq!(middle_run["depth"], 2);
    assert_eq!(middle_run["status"], "failed");
    let inner = step_of(&middle_run, "call");
    assert_eq!(inner["error"]["code"], "PROC-7", "{middle_run}");
    assert!(inner["childRunId"].is_null(), "no run at depth 3: {inner}");
    assert!(
        k.up.calls_with("q", "leaf").is_empty(),
        "the leaf never ran"
    );
}
