//! Jobs and the workers that take them: a duplicated job never records a second result (EXEC-2);
//! workers report their status and current job (WRK-1).

use std::time::{Duration, Instant};

use aiden_jobs::topology::{text, RUN_HEADER, STEP_RUN_HEADER};
use aiden_tests::{server, unique, user};
use lapin::options::BasicPublishOptions;
use lapin::types::FieldTable;
use serde_json::{json, Value};

use super::*;

/// Polls the server's log until a line contains every needle.
async fn wait_log(needles: &[&str]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if server()
            .logs()
            .lines()
            .any(|l| needles.iter().all(|n| l.contains(n)))
        {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn duplicate_job(
    run_id: &str,
    step: &str,
    tool: &str,
    owner: &str,
    q: &str,
    redispatch: bool,
) -> aiden_jobs::Job {
    let mut inputs = serde_json::Map::new();
    inputs.insert("q".into(), json!("{{q}}"));
    let mut variables = serde_json::Map::new();
    variables.insert("q".into(), json!(q));
    aiden_jobs::Job {
        v: aiden_jobs::JOB_VERSION,
        run_id: run_id.to_owned(),
        step_id: step.to_owned(),
        step_run_id: format!("{run_id}/{step}"),
        operation_type: aiden_jobs::OperationType::RestApi,
        attempt: 1,
        max_attempts: 3,
        tool_id: tool.to_owned(),
        owner_id: owner.to_owned(),
        inputs,
        variables,
        timeout_ms: 5000,
        deadline_ms: chrono_now_ms() + 60_000,
        redispatch,
        traceparent: None,
        literal_input: None,
        agent_turn: false,
        hops: None,
    }
}

fn chrono_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

async fn publish(ch: &lapin::Channel, body: &[u8], headers: FieldTable) {
    ch.basic_publish(
        "aiden.jobs",
        "rest_api",
        BasicPublishOptions::default(),
        body,
        lapin::BasicProperties::default()
            .with_delivery_mode(2)
            .with_headers(headers),
    )
    .await
    .unwrap()
    .await
    .unwrap();
}

/// EXEC-2: a duplicate of a settled step's job is consumed and skipped, whether re-dispatched
/// (`redispatch`) or a plain second copy (published twice, e.g. after a lost publish confirm;
/// neither `redelivered` nor `redispatch`): no call, no second result, no new event. A job whose
/// body cannot be decoded is dead-lettered with `malformed job` and changes nothing either.
#[tokio::test]
async fn exec_2_a_duplicated_job_for_a_settled_step_is_not_run_again() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"steps": [step(&k.echo, "a", json!({"q": "once"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    let before = sse(&u, &id, None).await;
    assert_eq!(k.up.calls().len(), 1);

    let (_conn, ch) = amqp().await;
    let step_run = format!("{id}/a");
    let mut headers = FieldTable::default();
    headers.insert(RUN_HEADER.into(), text(&id));
    headers.insert(STEP_RUN_HEADER.into(), text(&step_run));
    let job = duplicate_job(&id, "a", &k.echo, &u.id, "once", true);
    publish(&ch, &serde_json::to_vec(&job).unwrap(), headers.clone()).await;
    assert!(
        wait_log(&["redelivered job for a settled step skipped", &step_run]).await,
        "a worker consumed the duplicate and skipped it"
    );
    // The skip is the worker's last act on it (acked, nothing reported): the barrier.
    assert_eq!(k.up.calls().len(), 1, "the settled step was not run again");
    let after = u.settled_run(&id).await;
    assert_eq!(after["steps"], run["steps"], "no second result");
    assert_eq!(sse(&u, &id, None).await, before, "no new event");

    // A plain duplicate: neither `redelivered` nor `redispatch`.
    let job = duplicate_job(&id, "a", &k.echo, &u.id, "once", false);
    publish(&ch, &serde_json::to_vec(&job).unwrap(), headers.clone()).await;
    assert!(
        wait_log(&["duplicate job skipped", &step_run]).await,
        "the pool that took the job skipped its plain duplicate"
    );
    assert_eq!(
        u.settled_run(&id).await["steps"],
        run["steps"],
        "no second result for a plain duplicate"
    );
    assert_eq!(
        sse(&u, &id, None).await,
        before,
        "no new event for a plain duplicate"
    );
    assert_eq!(
        k.up.calls().len(),
        1,
        "the Tool was called again for a step whose result is recorded"
    );

    // Poison: headers say which step, the body is not a job.
    publish(&ch, b"{not a job", headers).await;
    let reason = take_dead_letter(&step_run)
        .await
        .expect("the malformed job is in aiden.dlq.rest_api");
    assert!(reason.starts_with("malformed job"), "{reason}");
    // Dead-lettered is the poison's end: nothing else happens to it.
    assert_eq!(u.settled_run(&id).await["steps"], run["steps"]);
    assert_eq!(sse(&u, &id, None).await, before);
    assert_eq!(k.up.calls().len(), 1);
}

/// WRK-1: every pool reports its workers; `currentJobId` is null exactly when idle (offline
/// ones aside), and a worker running a job shows it as busy with that job.
#[tokio::test]
async fn wrk_1_workers_report_status_and_current_job_consistently() {
    let u = user().await;
    let k = kit(&u).await;
    let tag = unique("busy");
    let p = hold_process(&u, &k, "w", &tag, 4500).await;
    let id = start(&u, &p, json!({})).await;
    let job = format!("{id}/w#1");

    let check = |items: &[Value]| {
        for w in items {
            let status = w["status"].as_str().unwrap();
            assert!(["idle", "busy", "offline"].contains(&status), "{w}");
            assert!(
                aiden_jobs::OperationType::parse(w["type"].as_str().unwrap()).is_some(),
                "{w}"
            );
            if status != "offline" {
                assert_eq!(w["currentJobId"].is_null(), status == "idle", "WRK-1: {w}");
            }
            assert!(w["id"].is_string() && w["lastHeartbeat"].is_string(), "{w}");
            assert!(w["processedCount"].is_u64(), "{w}");
        }
    };
    let deadline = Instant::now() + Duration::from_secs(8);
    let mut seen_busy = false;
    while !seen_busy {
        let items = u.get("/v1/workers").await.ok(200)["items"]
            .as_array()
            .unwrap()
            .clone();
        check(&items);
        for ty in aiden_jobs::OperationType::names() {
            assert!(
                items
                    .iter()
                    .any(|w| w["type"] == ty && w["status"] != "offline"),
                "no live {ty} worker: {items:?}"
            );
        }
        seen_busy = items.iter().any(|w| {
            w["currentJobId"] == job.as_str() && w["status"] == "busy" && w["type"] == "rest_api"
        });
        assert!(
            Instant::now() < deadline,
            "no worker showed {job} as busy: {items:?}"
        );
        if !seen_busy {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    // After the next heartbeat the job is gone from every worker.
    let deadline = Instant::now() + Duration::from_secs(6);
    loop {
        let items = u.get("/v1/workers").await.ok(200)["items"]
            .as_array()
            .unwrap()
            .clone();
        check(&items);
        if !items.iter().any(|w| w["currentJobId"] == job.as_str()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{job} still current after it finished"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
