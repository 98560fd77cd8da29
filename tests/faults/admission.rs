//! Admission under overload: once the run queues hold more ready messages than
//! `AIDEN_ADMIT_QUEUE_BOUND`, new runs are refused with 503 and `Retry-After` (the request
//! never waits on the backlog); once a pool drains them, runs are admitted again, and every run
//! that was acknowledged completes. A test binary of its own, so no other test's pools drain
//! the queue it fills. `scripts/overload.sh` measures the same at ten times the sustained rate.

use std::time::{Duration, Instant};

use aiden_tests::chaos::{define, start_run_raw, start_upstream};
use aiden_tests::procs::{free_port, sigkill, spawn_env, Api};
use serde_json::Value;

async fn start(api: &Api, process: &str) -> reqwest::Response {
    start_run_raw(api, process).await.expect("an answer")
}

/// Starts a run every 250 ms until one is admitted (refusals in between are 503s).
async fn admitted_again(api: &Api, process: &str, accepted: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let res = start(api, process).await;
        if res.status().as_u16() == 202 {
            let body: Value = res.json().await.unwrap();
            accepted.push(body["runId"].as_str().unwrap().to_owned());
            return;
        }
        assert_eq!(res.status().as_u16(), 503);
        assert!(
            Instant::now() < deadline,
            "not admitted after the queue drained"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_past_the_bound_is_refused_with_retry_after_and_admitted_again_once_drained() {
    let port = free_port();
    let _serve = spawn_env(&["serve"], port, &[("AIDEN_ADMIT_QUEUE_BOUND", "3".into())]);
    let api = Api::local(port);
    api.wait_ready().await;
    let (_up, upstream) = start_upstream().await;
    let tag = format!("adm-{}", &uuid::Uuid::now_v7().simple().to_string()[20..]);
    let process = define(&api, &upstream, &tag, 0).await;

    // The queue may hold what an earlier run left: a pool drains it first, then stops, so that
    // every later run's first step waits in the queue.
    let mut pool = spawn_env(&["worker", "--type", "rest_api"], 0, &[]);
    let mut accepted: Vec<String> = Vec::new();
    admitted_again(&api, &process, &mut accepted).await;
    // The pool has drained the queue once the run just admitted has completed: its jobs were
    // queued behind whatever an earlier run left.
    let drained = accepted.last().expect("a run admitted");
    let settled = api.wait_settled(drained, Duration::from_secs(60)).await;
    assert_eq!(settled["status"], "completed", "{settled}");
    sigkill(&mut pool);

    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut admitted, refusal) = (
        0,
        loop {
            assert!(Instant::now() < deadline, "no refusal past the bound");
            let res = start(&api, &process).await;
            match res.status().as_u16() {
                202 => {
                    let body: Value = res.json().await.unwrap();
                    accepted.push(body["runId"].as_str().unwrap().to_owned());
                }
                503 => {
                    let retry = res.headers()["retry-after"].to_str().unwrap().to_owned();
                    let body: Value = res.json().await.unwrap();
                    break (retry, body);
                }
                other => panic!("unexpected {other}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        },
    );
    admitted += accepted.len() - 1;
    let (retry, body) = refusal;
    assert!(retry.parse::<u64>().unwrap() >= 1, "Retry-After: {retry}");
    assert_eq!(body["error"]["code"], "OVERLOADED", "{body}");
    assert!(admitted > 3, "admitted up to the bound: {admitted}");

    // A pool drains the queue: starts are admitted again, and every acknowledged run completes.
    let _pool = spawn_env(&["worker", "--type", "rest_api"], 0, &[]);
    admitted_again(&api, &process, &mut accepted).await;
    for run in &accepted {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = api.run(run).await;
            if r["status"] == "completed" {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "acknowledged run not completed: {r}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
