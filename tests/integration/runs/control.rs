//! Controlling runs: cancel, and starting once per Idempotency-Key.

use std::time::{Duration, Instant};

use aiden_tests::{step_of, unique, user, Client};
use serde_json::json;

use super::*;

/// Cancel: the in-flight call is abandoned, unfinished steps are canceled, the run ends
/// `canceled` with a `run.canceled` event, and later steps never reach the upstream.
#[tokio::test]
async fn cancel_settles_the_run_and_later_steps_never_run() {
    let u = user().await;
    let k = kit(&u).await;
    let tag = unique("hang");
    let p = process(
        &u,
        json!({"steps": [
            step(&k.echo, "first", json!({"q": "first"})),
            step(&k.hold, "wait", json!({"tag": tag, "ms": 5000})),
            step(&k.echo, "later", json!({"q": "later"})),
            step(&k.echo, "last", json!({"q": "last"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    k.up.arrived(&tag).await;
    let sent = Instant::now();
    let r = u.post(&format!("/v1/runs/{id}/cancel"), json!({})).await;
    let body = r.ok(202);
    assert_eq!(body["runId"], id);
    assert_eq!(body["cancelRequested"], true, "{body}");
    let run = u.settled_run(&id).await;
    assert!(
        sent.elapsed() < Duration::from_secs(4),
        "cancel did not wait for the call"
    );
    assert_eq!(run["status"], "canceled", "{run}");
    assert_eq!(step_of(&run, "first")["status"], "completed");
    for s in ["wait", "later", "last"] {
        assert_eq!(step_of(&run, s)["status"], "canceled", "{run}");
    }
    let events = sse(&u, &id, None).await;
    assert_eq!(kinds(&events).last().unwrap(), "run.canceled", "{events:?}");

    // The hanging call's end: the upstream saw the request end, and the worker was done with
    // the job (dropped the call when the cancel reached it, or finished it and the engine
    // ignored the late result). Only then can nothing more happen.
    let deadline = Instant::now() + Duration::from_secs(20);
    while k.up.hold(&tag).and_then(|h| h.end).is_none()
        || !server().logs().lines().any(|l| {
            l.contains(&id)
                && (l.contains("job canceled mid-call; acked")
                    || l.contains("result for a settled step ignored"))
        })
    {
        assert!(Instant::now() < deadline, "the canceled call never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let hold = k.up.hold(&tag).unwrap();
    assert!(
        hold.abandoned,
        "the worker dropped the in-flight call: {hold:?}"
    );
    assert!(k.up.calls_with("q", "later").is_empty());
    assert!(k.up.calls_with("q", "last").is_empty());
    let after = u.settled_run(&id).await;
    assert_eq!(after["status"], "canceled");
    assert_eq!(
        after["steps"], run["steps"],
        "nothing changed after the cancel"
    );
    assert_eq!(
        sse(&u, &id, None).await,
        events,
        "no event after run.canceled"
    );
    // Canceling a settled run changes nothing, and says so: its final status, no request.
    let again = u
        .post(&format!("/v1/runs/{id}/cancel"), json!({}))
        .await
        .ok(202)
        .clone();
    assert_eq!(again["status"], "canceled", "{again}");
    assert_eq!(again["cancelRequested"], false, "{again}");
    let done = u.settled_run(&id).await;
    assert_eq!(done["status"], "canceled");
}

/// `Idempotency-Key`: same key and caller → same run (also when sent concurrently); a new key
/// or another caller → a new run.
#[tokio::test]
async fn idempotency_key_returns_the_same_run_for_the_same_caller_only() {
    let u = user().await;
    let k = kit(&u).await;
    let mut body = json!({"steps": [step(&k.echo, "a", json!({"q": "idem"}))]});
    body["shared"] = json!(true);
    let p = process(&u, body).await;
    let path = format!("/v1/processes/{p}/runs");
    let post = |c: Client, key: String| {
        let path = path.clone();
        async move {
            let r = c
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
    let key = unique("key");
    let first = post(u.clone(), key.clone()).await;
    u.settled_run(&first).await;
    assert_eq!(post(u.clone(), key.clone()).await, first);
    let again = u
        .send(
            reqwest::Method::POST,
            &path,
            Some(&json!({"inputs": {}})),
            &[("Idempotency-Key", key.as_str())],
        )
        .await;
    assert_eq!(
        again.ok(202)["status"],
        "completed",
        "the existing run as it stands"
    );
    let second = post(u.clone(), unique("key")).await;
    assert_ne!(second, first);
    let other = user().await;
    let theirs = post(other.clone(), key.clone()).await;
    assert_ne!(theirs, first);
    assert_ne!(theirs, second);
    assert_eq!(other.settled_run(&theirs).await["status"], "completed");
    assert_eq!(other.get(&format!("/v1/runs/{first}")).await.status, 404);
    u.settled_run(&second).await;
    assert_eq!(k.up.calls().len(), 3, "three runs, three calls");

    // Concurrent first uses of one key still make one run.
    let key = unique("key");
    let ids = futures::future::join_all((0..6).map(|_| post(u.clone(), key.clone()))).await;
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
    u.settled_run(&ids[0]).await;
    assert_eq!(k.up.calls().len(), 4);
}
