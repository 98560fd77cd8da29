//! Retries (EXEC-4): retryable failures are retried with backoff; exhausted and permanent ones
//! are dead-lettered with the reason.

use std::time::Duration;

use aiden_tests::{step_of, unique, user};
use serde_json::{json, Value};

use super::*;

/// EXEC-4: 503 twice then 200 — retried with backoff, completed on the third attempt, each
/// retry an event.
#[tokio::test]
async fn exec_4_a_retryable_upstream_error_is_retried_until_it_succeeds() {
    let u = user().await;
    let k = kit(&u).await;
    let key = unique("k");
    let p = process(
        &u,
        json!({"steps": [step(&k.script, "a", json!({"key": key, "plan": "503,503,200"}))],
            "outputTemplate": "{{a.body.try}}"}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], 3);
    let a = step_of(&run, "a");
    assert_eq!(a["attempts"], 3, "{a}");
    assert_eq!(a["telemetry"]["retryCount"], 2, "{a}");
    assert_eq!(a["output"]["status"], 200);
    assert_eq!(k.up.calls_with("key", &key).len(), 3);
    let events = sse(&u, &id, None).await;
    let retries: Vec<&Value> = events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| e["kind"] == "step.retrying")
        .collect();
    assert_eq!(retries.len(), 2, "{events:?}");
    assert_eq!(retries[0]["stepId"], "a");
    assert_eq!(retries[0]["data"]["error"]["code"], "UPSTREAM_ERROR");
    assert_eq!(retries[0]["data"]["nextAttempt"], 2);
    assert_eq!(retries[1]["data"]["nextAttempt"], 3);
    assert!(
        retries[1]["data"]["delayMs"].as_u64() > retries[0]["data"]["delayMs"].as_u64(),
        "exponential backoff: {retries:?}"
    );
    assert_eq!(
        retries[1]["data"]["delayMs"], 200,
        "exponential: 100 ms, then 200 ms"
    );
    assert_eq!(kinds(&events).last().unwrap(), "run.completed");
}

/// EXEC-4: 429 (RATE_LIMITED) and a timeout are retryable too.
#[tokio::test]
async fn exec_4_rate_limits_and_timeouts_are_retried() {
    let u = user().await;
    let k = kit(&u).await;
    let quick = tool(
        &u,
        &k.service,
        &k.base,
        json!({"type": "rest_api", "method": "GET", "path": "/script?key={{key}}&plan={{plan}}"}),
        json!({"key": {"type": "string"}, "plan": {"type": "string"}}),
        json!({"connectionParams": {"endpoint": k.base, "timeoutMs": 300}}),
    )
    .await;
    let (k1, k2) = (unique("k"), unique("k"));
    let p = process(
        &u,
        json!({"steps": [
            step(&k.script, "limited", json!({"key": k1, "plan": "429,200"})),
            step(&quick, "slow", json!({"key": k2, "plan": "hang:3000,200"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(step_of(&run, "limited")["attempts"], 2);
    assert_eq!(step_of(&run, "slow")["attempts"], 2);
    assert_eq!(k.up.calls_with("key", &k1).len(), 2);
    assert_eq!(k.up.calls_with("key", &k2).len(), 2);
    let codes: Vec<(String, String)> = sse(&u, &id, None)
        .await
        .into_iter()
        .filter(|(_, e)| e["kind"] == "step.retrying")
        .map(|(_, e)| {
            (
                e["stepId"].as_str().unwrap().to_owned(),
                e["data"]["error"]["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        vec![
            ("limited".to_owned(), "RATE_LIMITED".to_owned()),
            ("slow".to_owned(), "TIMEOUT".to_owned())
        ]
    );
}

/// EXEC-4: a 500 on every attempt fails after 3 attempts (UPSTREAM_ERROR) and the job ends in
/// the dead-letter queue with its reason; a 404 is permanent: one attempt.
#[tokio::test]
async fn exec_4_exhausted_retries_are_dead_lettered_and_permanent_errors_are_not_retried() {
    let u = user().await;
    let k = kit(&u).await;
    let key = unique("k");
    let p = process(
        &u,
        json!({"steps": [step(&k.script, "a", json!({"key": key, "plan": "500"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "failed", "{run}");
    let a = step_of(&run, "a");
    assert_eq!(a["status"], "failed");
    assert_eq!(a["attempts"], 3, "{a}");
    assert_eq!(a["error"]["code"], "UPSTREAM_ERROR", "{a}");
    assert_eq!(a["telemetry"]["retryCount"], 2, "{a}");
    assert_eq!(run["error"]["code"], "UPSTREAM_ERROR");
    assert_eq!(k.up.calls_with("key", &key).len(), 3);
    let reason = take_dead_letter(&format!("{id}/a"))
        .await
        .expect("the exhausted job is in aiden.dlq.rest_api");
    assert!(reason.starts_with("UPSTREAM_ERROR"), "{reason}");
    assert!(reason.contains("3 attempts"), "{reason}");
    assert_eq!(
        take_dead_letter_within(&format!("{id}/a"), Duration::from_secs(2)).await,
        None,
        "dead-lettered once, not once per attempt"
    );

    let key = unique("k");
    let p = process(
        &u,
        json!({"steps": [step(&k.script, "a", json!({"key": key, "plan": "404,200"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "failed", "{run}");
    let a = step_of(&run, "a");
    assert_eq!(a["attempts"], 1, "{a}");
    assert_eq!(a["error"]["code"], "INVALID_REQUEST", "{a}");
    assert_eq!(a["telemetry"]["retryCount"], 0, "{a}");
    assert_eq!(
        k.up.calls_with("key", &key).len(),
        1,
        "a 404 is not retried"
    );
    let log = kinds(&sse(&u, &id, None).await);
    assert!(
        !log.iter().any(|e| e.starts_with("step.retrying")),
        "{log:?}"
    );
    let reason = take_dead_letter(&format!("{id}/a"))
        .await
        .expect("the failed job is in aiden.dlq.rest_api");
    assert!(reason.contains("HTTP 404"), "{reason}");
}
