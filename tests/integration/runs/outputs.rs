//! What a step may record as its output (EXEC-3): the Tool's outputSchema, output.required,
//! output.tokenBudget.

use aiden_tests::{step_of, unique, user};
use serde_json::json;

use super::*;

/// EXEC-3: an answer that breaks the Tool's outputSchema fails the step (OUTPUT_INVALID), and
/// is not retried.
#[tokio::test]
async fn exec_3_output_schema_mismatch_fails_the_step_with_output_invalid() {
    let u = user().await;
    let k = kit(&u).await;
    let strict = tool(
        &u,
        &k.service,
        &k.base,
        json!({"type": "rest_api", "method": "GET", "path": "/echo?q={{q}}"}),
        json!({"q": {"type": "string"}}),
        json!({"outputSchema": {"type": "object", "required": ["status", "body"],
            "properties": {"body": {"type": "object", "required": ["id"]}}}}),
    )
    .await;
    let p = process(
        &u,
        json!({"steps": [step(&strict, "a", json!({"q": "x"})), step(&k.echo, "b", json!({"q": "y"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "failed", "{run}");
    let a = step_of(&run, "a");
    assert_eq!(a["error"]["code"], "OUTPUT_INVALID", "{a}");
    assert_eq!(a["attempts"], 1, "{a}");
    assert!(
        a["output"].is_null(),
        "an invalid output is never recorded: {a}"
    );
    assert_eq!(run["error"]["code"], "OUTPUT_INVALID");
    assert_eq!(step_of(&run, "b")["status"], "canceled");
    assert_eq!(k.up.calls().len(), 1, "not retried, and `b` never ran");
    take_dead_letter(&format!("{id}/a")).await;
}

/// EXEC-3: `output.required` with an empty result fails the step (OUTPUT_REQUIRED) — here the
/// result of a called Process whose output renders empty.
#[tokio::test]
async fn exec_3_a_required_output_that_is_empty_fails_with_output_required() {
    let u = user().await;
    let k = kit(&u).await;
    let child = process(
        &u,
        json!({"initialContext": ["x"], "steps": [step(&k.echo, "e", json!({"q": "{{x}}"}))],
            "outputTemplate": "{{e.body.x}}"}),
    )
    .await;
    let parent = process(
        &u,
        json!({"initialContext": ["x"], "steps": [
            {"id": "call", "process": child, "inputs": {"x": "{{x}}"},
             "output": {"variable": "r", "required": true}}],
            "outputTemplate": "{{r}}"}),
    )
    .await;
    let run = u
        .settled_run(&start(&u, &parent, json!({"x": "  "})).await)
        .await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(
        step_of(&run, "call")["error"]["code"],
        "OUTPUT_REQUIRED",
        "{run}"
    );
    assert_eq!(run["error"]["code"], "OUTPUT_REQUIRED");
    // The same call with a non-empty result completes.
    let run = u
        .settled_run(&start(&u, &parent, json!({"x": "ok"})).await)
        .await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], "ok");
}

/// EXEC-3: a Tool call answered 200 with an empty body has produced nothing, so a step with
/// `output.required` fails with OUTPUT_REQUIRED.
#[tokio::test]
async fn exec_3_required_output_with_an_empty_http_body_fails_with_output_required() {
    let u = user().await;
    let k = kit(&u).await;
    let key = unique("k");
    let mut a = step(&k.script, "a", json!({"key": key, "plan": "empty"}));
    a["output"] = json!({"variable": "a", "required": true});
    let p = process(&u, json!({"steps": [a]})).await;
    let run = u.settled_run(&start(&u, &p, json!({})).await).await;
    assert_eq!(k.up.calls_with("key", &key).len(), 1);
    assert_eq!(
        step_of(&run, "a")["error"]["code"],
        "OUTPUT_REQUIRED",
        "a 200 with no body is no output: {run}"
    );
    assert_eq!(run["status"], "failed");
}

/// EXEC-3: `output.tokenBudget` cuts what is passed on (telemetry.truncated), and the next
/// step receives the cut value.
#[tokio::test]
async fn exec_3_token_budget_cuts_a_long_body_before_it_is_passed_on() {
    let u = user().await;
    let k = kit(&u).await;
    let key = unique("k");
    let mut a = step(&k.script, "a", json!({"key": key, "plan": "long:2000"}));
    a["output"] = json!({"variable": "a", "required": true, "tokenBudget": 25});
    let p = process(
        &u,
        json!({"steps": [a, step(&k.echo, "b", json!({"q": "{{a.body}}"}))],
            "outputTemplate": "{{b.body.x}}"}),
    )
    .await;
    let run = u.settled_run(&start(&u, &p, json!({})).await).await;
    assert_eq!(run["status"], "completed", "{run}");
    let a = step_of(&run, "a");
    assert_eq!(a["telemetry"]["truncated"], true, "{a}");
    assert_eq!(step_of(&run, "b")["telemetry"]["truncated"], false);
    let kept = a["output"]["body"].as_str().expect("body still a string");
    assert!(
        !kept.is_empty() && kept.len() <= 25 * 4 && long_text(2000).starts_with(kept),
        "cut to a prefix within ~25 tokens: {kept:?}"
    );
    assert!(a["output"].to_string().len() <= 25 * 4, "{a}");
    let echoed = k.up.calls_to("echo");
    assert_eq!(echoed.len(), 1);
    assert_eq!(
        echoed[0].query["q"], kept,
        "the next step saw the cut value"
    );
    assert_eq!(run["output"], kept);
}
