//! The run's event log over SSE (EXEC-5): ordered, gapless, resumable, audited.

use std::time::Duration;

use aiden_tests::{server, step_of, user};
use serde_json::json;

use super::*;

/// EXEC-5: the event log is ordered and gapless from 1, starts with run.started, ends with
/// run.completed, and the stream then ends, both live (subscribed before the run finishes) and
/// replayed once it has; `Last-Event-ID` resumes after the given event.
#[tokio::test]
async fn exec_5_sse_replays_an_ordered_gapless_log_and_resumes_after_last_event_id() {
    let u = user().await;
    let k = kit(&u).await;
    let id = start_echo_pair(&u, &k.echo).await;
    // Subscribed at once: the stream delivers the live events and ends by itself.
    let live = sse(&u, &id, None).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed");
    let all = sse(&u, &id, None).await;
    for (i, e) in &all {
        assert!(e["at"].is_string(), "{e}");
        assert_eq!(e["seq"], *i);
    }
    for log in [&live, &all] {
        let ids: Vec<i64> = log.iter().map(|(i, _)| *i).collect();
        assert_eq!(ids, (1..=log.len() as i64).collect::<Vec<_>>(), "{log:?}");
        for (i, e) in log {
            assert_eq!(e["seq"], *i, "SSE id: is the sequence");
        }
        assert_eq!(
            kinds(log),
            vec![
                "run.started",
                "step.queued a",
                "step.started a",
                "step.completed a",
                "step.queued b",
                "step.started b",
                "step.completed b",
                "run.completed"
            ]
        );
    }
    let last = &all.last().unwrap().1;
    assert_eq!(last["data"]["output"], run["output"]);

    let resumed = sse(&u, &id, Some("3")).await;
    assert_eq!(resumed, all[3..].to_vec(), "exactly the events after 3");

    // The event stream is private too.
    let other = user().await;
    let r = other
        .raw(reqwest::Method::GET, &format!("/v1/runs/{id}/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

/// EXEC-5 (audit): the log is the Run's `events` list, one part per engine pass, with each
/// part's first and last sequence number in `eventRanges`; `aiden check` reports a settled run
/// whose parts do not cover exactly 1..eventSeq, and stops once the part is back.
#[tokio::test]
async fn exec_5_check_reports_a_run_whose_event_chunks_leave_a_gap() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"steps": [step(&k.echo, "a", json!({"q": "c1"})), step(&k.echo, "b", json!({"q": "c2"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    assert_eq!(u.settled_run(&id).await["status"], "completed");
    assert!(
        findings(&[&id]).await.is_empty(),
        "a fresh run's log is whole"
    );
    let graph = aiden_graph::Graph::connect(&server().graph).await.unwrap();
    // A gap: the run's last part is taken off its log (kept aside), then put back.
    let detach = neo4rs::query(
        "MATCH (r:Run {id: $id}) WHERE size(r.events) > 1 \
         SET r.detachedPart = r.events[-1], r.detachedRange = r.eventRanges[-2..], \
             r.events = r.events[..-1], r.eventRanges = r.eventRanges[..-2]",
    )
    .param("id", id.clone());
    let mut tx = graph.begin().await.unwrap();
    tx.run(detach).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(findings(&[&id]).await, vec![format!("EXEC-5 {id}")]);
    let reattach = neo4rs::query(
        "MATCH (r:Run {id: $id}) SET r.events = r.events + r.detachedPart, \
         r.eventRanges = r.eventRanges + r.detachedRange REMOVE r.detachedPart, r.detachedRange",
    )
    .param("id", id.clone());
    let mut tx = graph.begin().await.unwrap();
    tx.run(reattach).await.unwrap();
    tx.commit().await.unwrap();
    assert!(findings(&[&id]).await.is_empty(), "repaired");
}

/// EXEC-5: a client that resumes after the terminal event (as an EventSource does when the
/// stream ends) gets an empty stream that ends at once, not one held open forever.
#[tokio::test]
async fn exec_5_resuming_after_the_terminal_event_ends_the_stream_at_once() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"steps": [step(&k.echo, "a", json!({"q": "1"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    assert_eq!(u.settled_run(&id).await["status"], "completed");
    let all = sse(&u, &id, None).await;
    let last = all.last().unwrap().0.to_string();
    let tail = sse_within(&u, &id, Some(&last), Duration::from_secs(5)).await;
    assert_eq!(
        tail,
        Some(vec![]),
        "resuming after the terminal event {last} should end the stream at once"
    );
}

/// Engine passes whose commit ran beside the next pass, so far (0 before the first).
async fn pipelined_passes() -> f64 {
    let name = "aiden_engine_passes_pipelined_total";
    let text = aiden_tests::admin().get("/metrics").await.body;
    text.as_str()
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// EXEC-5 with passes pipelined across their commit (docs/execution.md): runs started together
/// are carried by passes whose commits run beside the next pass's write, and each still ends
/// completed with its whole log in order, gapless and audited clean.
#[tokio::test]
async fn exec_5_runs_started_together_keep_gapless_logs_while_passes_are_pipelined() {
    let u = user().await;
    let k = kit(&u).await;
    let before = pipelined_passes().await;
    let starts = (0..30).map(|_| start_echo_pair(&u, &k.echo));
    let ids: Vec<String> = futures::future::join_all(starts).await;
    for id in &ids {
        assert_eq!(u.settled_run(id).await["status"], "completed", "{id}");
        let log = sse(&u, id, None).await;
        let seqs: Vec<i64> = log.iter().map(|(i, _)| *i).collect();
        assert_eq!(seqs, (1..=log.len() as i64).collect::<Vec<_>>(), "{id}");
        assert_eq!(kinds(&log).first().map(String::as_str), Some("run.started"));
        assert_eq!(
            kinds(&log).last().map(String::as_str),
            Some("run.completed")
        );
        assert_eq!(log.len(), 8, "{id}: {log:?}");
    }
    let after = pipelined_passes().await;
    assert!(after > before, "passes were pipelined: {before} -> {after}");
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    assert_eq!(findings(&refs).await, Vec::<String>::new());
}

/// A worker announces a call only once it has run for `STARTED_NOTICE_AFTER` (500 ms): before
/// that the step reads `queued`, then `running` on its worker while the call is still held; the
/// log has its `step.started` before its `step.completed` either way (a fast call reports its
/// start inside its result: `exec_5_sse_replays_…` above).
#[tokio::test]
async fn exec_5_a_long_call_is_shown_running_while_it_runs_and_not_before_its_notice() {
    let notice = aiden_workers::pool::STARTED_NOTICE_AFTER;
    let u = user().await;
    let k = kit(&u).await;
    let tag = unique("notice");
    let p = hold_process(&u, &k, "h", &tag, 3000).await;
    let id = start(&u, &p, json!({})).await;
    k.up.arrived(&tag).await;
    let held_since = k.up.hold(&tag).expect("held").start;
    let early = u.get(&format!("/v1/runs/{id}")).await.ok(200).clone();
    // Only a read that ended well inside the notice's delay says anything about it.
    if held_since.elapsed() < notice * 4 / 5 {
        assert_eq!(
            step_of(&early, "h")["status"],
            "queued",
            "not announced before {notice:?}: {early}"
        );
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let running = loop {
        let run = u.get(&format!("/v1/runs/{id}")).await.ok(200).clone();
        if step_of(&run, "h")["status"] == "running" {
            break run;
        }
        assert!(Instant::now() < deadline, "never shown running: {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        k.up.hold(&tag).expect("held").end.is_none(),
        "shown running while the call is still held"
    );
    assert!(step_of(&running, "h")["workerId"].is_string(), "{running}");
    assert_eq!(u.settled_run(&id).await["status"], "completed");
    let log = kinds(&sse(&u, &id, None).await);
    assert_eq!(
        log,
        vec![
            "run.started",
            "step.queued h",
            "step.started h",
            "step.completed h",
            "run.completed"
        ]
    );
}
