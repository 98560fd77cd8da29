//! Every transition of a step's lifecycle: what state it leaves and which effects
//! the engine executes, in order.

use serde_json::{json, Map, Value};

use super::*;

const NOW: &str = "2026-11-26T10:00:00.000Z";

fn call(attempt: u32, worker: &str) -> Call {
    let mut telemetry = Map::new();
    telemetry.insert("latencyMs".into(), json!(12));
    Call {
        attempt,
        worker_id: worker.to_owned(),
        started_at: "t-start".into(),
        finished_at: "t-end".into(),
        telemetry,
        input_hash: Some("h".into()),
    }
}

fn kinds(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .map(|e| match e {
            Effect::Write(p) => format!("write {:?}", p.status),
            Effect::Retried(_) => "retried".into(),
            Effect::Event(k, _) => k.as_str().into(),
            Effect::RanOn(w) => format!("ran_on {w}"),
            Effect::LostOn { worker_id, attempt } => format!("lost_on {worker_id} {attempt}"),
            Effect::Publish { redispatch } => format!("publish redispatch={redispatch}"),
            Effect::Settled(r) => format!("settled ok={}", r.is_ok()),
        })
        .collect()
}

fn queued() -> Step {
    step(Step::default(), Message::Dispatch, NOW).0
}

fn running(worker: &str) -> Step {
    let started = Message::Started {
        attempt: 1,
        worker_id: worker,
        at: "t-start",
    };
    step(queued(), started, NOW).0
}

fn completed(output: Value) -> Outcome {
    Outcome::Completed {
        output,
        truncated: false,
    }
}

fn write_of(effects: &[Effect]) -> &StepPatch {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::Write(p) => Some(p.as_ref()),
            _ => None,
        })
        .expect("a write")
}

#[test]
fn dispatch_queues_publishes_and_writes_nothing() {
    let (s, effects) = step(Step::default(), Message::Dispatch, NOW);
    assert_eq!(s.status, StepStatus::Queued);
    assert_eq!(s.queued_at.as_deref(), Some(NOW));
    assert_eq!(
        kinds(&effects),
        ["step.queued", "publish redispatch=false"],
        "the lean journal: no StepRun write at dispatch"
    );
    assert_eq!(
        effects[0],
        Effect::Event(EventKind::Queued, json!({"attempt": 1}))
    );
}

#[test]
fn a_start_is_an_event_and_state_only() {
    let s = running("w1");
    assert_eq!(s.status, StepStatus::Running);
    assert_eq!((s.attempts, s.worker_id.as_deref()), (1, Some("w1")));
    assert_eq!(s.started_at.as_deref(), Some("t-start"));
    let again = Message::Started {
        attempt: 1,
        worker_id: "w1",
        at: "later",
    };
    let (s2, effects) = step(s.clone(), again, NOW);
    assert_eq!(kinds(&effects), ["step.started"], "no write");
    assert_eq!(
        s2.started_at.as_deref(),
        Some("t-start"),
        "first start kept"
    );
}

#[test]
fn a_late_start_of_an_earlier_attempt_changes_nothing() {
    let mut s = running("w1");
    s.attempts = 2;
    let late = Message::Started {
        attempt: 1,
        worker_id: "w0",
        at: "x",
    };
    let (after, effects) = step(s.clone(), late, NOW);
    assert_eq!(after, s);
    assert!(effects.is_empty());
}

#[test]
fn a_fast_steps_result_carries_its_start_and_settles_once() {
    let c = call(1, "w1");
    let finished = Message::Finished {
        call: &c,
        outcome: completed(json!({"ok": true})),
    };
    let (s, effects) = step(queued(), finished, NOW);
    assert_eq!(s.status, StepStatus::Completed);
    assert_eq!(
        kinds(&effects),
        [
            "step.started",
            "ran_on w1",
            "write Some(Completed)",
            "step.completed",
            "settled ok=true"
        ]
    );
    let patch = write_of(&effects);
    assert_eq!(patch.attempts, Some(1));
    assert_eq!(patch.worker_id.as_deref(), Some("w1"));
    assert_eq!(patch.input_hash.as_deref(), Some("h"));
    assert_eq!(patch.duration_ms, Some(json!(12)));
    assert_eq!(patch.queued_at.as_deref(), Some(NOW));
    assert_eq!(patch.started_at.as_deref(), Some("t-start"));
    assert_eq!(patch.failed_at, None);
    let t = patch.telemetry.as_ref().unwrap();
    assert_eq!(
        (&t["finalState"], &t["retryCount"], &t["truncated"]),
        (&json!("completed"), &json!(0), &json!(false))
    );
    // EXEC-2: a duplicate result records nothing.
    let dup = Message::Finished {
        call: &c,
        outcome: completed(json!({"ok": false})),
    };
    let (s2, effects) = step(s.clone(), dup, NOW);
    assert_eq!(s2, s);
    assert!(effects.is_empty());
}

#[test]
fn a_retry_writes_the_failed_attempt_then_the_next_one_settles() {
    let c1 = call(1, "w1");
    let retry = Message::Finished {
        call: &c1,
        outcome: Outcome::Retrying {
            error: json!({"code": "TIMEOUT"}),
            next_attempt: 2,
            delay_ms: 100,
        },
    };
    let (s, effects) = step(running("w1"), retry, NOW);
    assert_eq!(s.status, StepStatus::Queued);
    assert_eq!(
        kinds(&effects),
        [
            "ran_on w1",
            "write Some(Queued)",
            "retried",
            "step.retrying"
        ]
    );
    let patch = write_of(&effects);
    assert_eq!(patch.failed_at.as_deref(), Some("t-end"));
    assert_eq!(patch.last_error, Some(json!({"code": "TIMEOUT"})));
    let Effect::Retried(r) = &effects[2] else {
        panic!("retried")
    };
    assert_eq!(r.record["attempt"], 1);
    assert_eq!(r.duration_ms, Some(json!(12)));
    // The second attempt runs on another worker and completes.
    let c2 = call(2, "w2");
    let done = Message::Finished {
        call: &c2,
        outcome: completed(json!(1)),
    };
    let (s, effects) = step(s, done, NOW);
    assert_eq!((s.status, s.attempts), (StepStatus::Completed, 2));
    assert_eq!(kinds(&effects)[0], "step.started");
    assert_eq!(
        write_of(&effects).telemetry.as_ref().unwrap()["retryCount"],
        1
    );
}

#[test]
fn a_failed_attempt_is_indexed_as_a_failure() {
    let c = call(3, "w1");
    let failed = Message::Finished {
        call: &c,
        outcome: Outcome::Failed {
            error: json!({"code": "UPSTREAM_ERROR"}),
        },
    };
    let (s, effects) = step(running("w1"), failed, NOW);
    assert_eq!(s.status, StepStatus::Failed);
    assert_eq!(
        kinds(&effects),
        [
            "step.started",
            "ran_on w1",
            "write Some(Failed)",
            "step.failed",
            "settled ok=false"
        ]
    );
    assert_eq!(write_of(&effects).failed_at.as_deref(), Some("t-end"));
}

#[test]
fn a_result_from_another_worker_marks_the_first_one_lost() {
    let c = call(1, "w2");
    let finished = Message::Finished {
        call: &c,
        outcome: completed(json!(null)),
    };
    let (_, effects) = step(running("w1"), finished, NOW);
    assert_eq!(kinds(&effects)[..2], ["lost_on w1 1", "ran_on w2"]);
}

#[test]
fn a_lost_worker_requeues_durably_and_redispatches() {
    let (s, effects) = step(running("w1"), Message::WorkerLost, NOW);
    assert_eq!(s.status, StepStatus::Queued);
    assert_eq!(
        kinds(&effects),
        [
            "lost_on w1 1",
            "write Some(Queued)",
            "step.queued",
            "publish redispatch=true"
        ]
    );
    assert_eq!(
        effects[2],
        Effect::Event(
            EventKind::Queued,
            json!({"attempt": 2, "reason": "worker lost"})
        )
    );
    // Not yet started: nobody lost it, it is published again all the same.
    let (_, effects) = step(queued(), Message::WorkerLost, NOW);
    assert_eq!(kinds(&effects)[0], "write Some(Queued)");
    // Settled: nothing to do.
    let done = Step {
        status: StepStatus::Completed,
        ..Step::default()
    };
    assert!(step(done, Message::WorkerLost, NOW).1.is_empty());
}

#[test]
fn a_skip_and_an_engine_failure_are_written_at_once() {
    let (s, effects) = step(Step::default(), Message::Skip, NOW);
    assert_eq!(s.status, StepStatus::Skipped);
    assert_eq!(kinds(&effects), ["write Some(Skipped)", "step.skipped"]);
    let error = json!({"code": "BUDGET_EXCEEDED"});
    let (s, effects) = step(Step::default(), Message::Fail { error }, NOW);
    assert_eq!(s.status, StepStatus::Failed);
    assert_eq!(kinds(&effects), ["write Some(Failed)", "step.failed"]);
    assert_eq!(write_of(&effects).finished_at.as_deref(), Some(NOW));
}

#[test]
fn a_child_runs_result_has_no_worker_and_no_start() {
    let child = Step {
        status: StepStatus::Running,
        started_at: Some("t0".into()),
        ..Step::default()
    };
    let c = Call::internal(NOW);
    let finished = Message::Finished {
        call: &c,
        outcome: completed(json!("out")),
    };
    let (s, effects) = step(child, finished, NOW);
    assert_eq!(s.status, StepStatus::Completed);
    assert_eq!(
        kinds(&effects),
        ["write Some(Completed)", "step.completed", "settled ok=true"]
    );
    let patch = write_of(&effects);
    assert_eq!(patch.worker_id, None);
    assert_eq!(patch.started_at.as_deref(), Some("t0"));
}

#[test]
fn a_patch_sets_only_what_changed_as_the_graph_stores_it() {
    let patch = StepPatch {
        status: Some(StepStatus::Failed),
        error: Some(json!({"code": "X"})),
        attempts: Some(2),
        ..StepPatch::default()
    };
    let set = patch.to_set();
    assert_eq!(set.len(), 3);
    assert_eq!(set["status"], "failed");
    assert_eq!(set["error"], json!("{\"code\":\"X\"}"));
    assert_eq!(set["attempts"], 2);
}

#[test]
fn a_timed_out_attempt_retries_and_the_last_one_fails_the_step() {
    // The worker decides retry or failure (its attempts and the step's policy); the machine
    // records each the same way, whatever the error.
    let timeout = json!({"code": "TIMEOUT", "message": "no answer within 30000 ms"});
    let c1 = call(1, "w1");
    let retry = Message::Finished {
        call: &c1,
        outcome: Outcome::Retrying {
            error: timeout.clone(),
            next_attempt: 2,
            delay_ms: 1000,
        },
    };
    // The worker publishes the retry itself (a delay queue): the engine dispatches nothing.
    let (s, effects) = step(running("w1"), retry, NOW);
    assert_eq!((s.status, s.attempts), (StepStatus::Queued, 1));
    assert!(!effects.iter().any(|e| matches!(e, Effect::Publish { .. })));
    let c2 = call(2, "w1");
    let last = Message::Finished {
        call: &c2,
        outcome: Outcome::Failed {
            error: timeout.clone(),
        },
    };
    let (s, effects) = step(s, last, NOW);
    assert_eq!((s.status, s.attempts), (StepStatus::Failed, 2));
    assert_eq!(write_of(&effects).error, Some(timeout));
    assert_eq!(
        write_of(&effects).telemetry.as_ref().unwrap()["retryCount"],
        1
    );
    assert!(matches!(effects.last(), Some(Effect::Settled(Err(_)))));
}
