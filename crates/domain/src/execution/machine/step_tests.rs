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
            Effect::ReusedFrom(from) => format!("reused_from {from}"),
        })
        .collect()
}

/// A message the step takes: the state it leaves and the effects.
fn step(state: Step, message: Message<'_>, now: &str) -> (Step, Vec<Effect>) {
    match super::step(state, message, now) {
        Ok(Decided::Moved(s, effects)) => (s, effects),
        other => panic!("not moved: {other:?}"),
    }
}

/// What the machine made of a message it did not move on.
fn decided(state: Step, message: Message<'_>) -> Result<Decided<Step, Effect>, Refused> {
    super::step(state, message, NOW)
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

/// `call`'s attempt failed with `code` and is retried after `delay_ms`.
fn retrying<'a>(call: &'a Call, code: &str, delay_ms: u64) -> Message<'a> {
    Message::Finished {
        call,
        outcome: Outcome::Retrying {
            error: json!({"code": code}),
            next_attempt: call.attempt + 1,
            delay_ms,
        },
    }
}

/// Attempt 2, on worker `w2`, completes with `1`.
fn second_attempt_completes(s: Step) -> (Step, Vec<Effect>) {
    let c2 = call(2, "w2");
    let done = Message::Finished {
        call: &c2,
        outcome: completed(json!(1)),
    };
    step(s, done, NOW)
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

/// EXEC-2: a job the broker lost (neither started nor waiting in its queue long after it was
/// published) is published again as the same attempt; the step stays queued, with nothing
/// written but the event that says why.
#[test]
fn exec_2_a_lost_job_is_published_again_as_the_same_attempt() {
    let (queued, _) = step(Step::default(), Message::Dispatch, "t-queued");
    let (s, effects) = step(queued.clone(), Message::JobLost, NOW);
    assert_eq!(s, queued, "still queued, the same attempt and queue time");
    assert_eq!(kinds(&effects), ["step.queued", "publish redispatch=true"]);
    assert_eq!(
        effects[0],
        Effect::Event(
            EventKind::Queued,
            json!({"attempt": 1, "reason": "job lost"})
        )
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
    assert_eq!(decided(s, late), Ok(Decided::Ignored(Ignored::Stale)));
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
    assert_eq!(decided(s, dup), Ok(Decided::Ignored(Ignored::Settled)));
}

#[test]
fn a_retry_writes_the_failed_attempt_then_the_next_one_settles() {
    let c1 = call(1, "w1");
    let (s, effects) = step(running("w1"), retrying(&c1, "TIMEOUT", 100), NOW);
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
    let (s, effects) = second_attempt_completes(s);
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
    assert_eq!(
        decided(done, Message::WorkerLost),
        Ok(Decided::Ignored(Ignored::Settled))
    );
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

/// What the table says a message does to a step.
#[derive(Debug, PartialEq)]
enum Expect {
    Moves(StepStatus),
    Drops(Ignored),
    Refuses,
}

/// The decision for every (status, message kind): exhaustive, so a new status or message does
/// not compile here until it is decided. The sample `Finished` completes; the sample `Started`
/// is of the step's own attempt.
fn expected(status: StepStatus, kind: MessageKind) -> Expect {
    use Expect::*;
    use MessageKind as K;
    use StepStatus as S;
    let only_pending = |to| match status {
        S::Pending => Moves(to),
        S::Queued | S::Running | S::WaitingForApproval => Refuses,
        S::Completed | S::Failed | S::Skipped | S::Canceled => Refuses,
    };
    match kind {
        K::Dispatch => only_pending(S::Queued),
        K::Reuse => only_pending(S::Completed),
        K::Skip => only_pending(S::Skipped),
        K::Fail => only_pending(S::Failed),
        K::StartAgent | K::StartChild => only_pending(S::Running),
        K::Started => match status {
            S::Pending | S::Queued | S::Running => Moves(S::Running),
            S::WaitingForApproval => Refuses,
            S::Completed | S::Failed | S::Skipped | S::Canceled => Drops(Ignored::Settled),
        },
        K::Finished => match status {
            S::Pending | S::Queued | S::Running | S::WaitingForApproval => Moves(S::Completed),
            S::Completed | S::Failed | S::Skipped | S::Canceled => Drops(Ignored::Settled),
        },
        K::WorkerLost => match status {
            S::Pending | S::Queued | S::Running => Moves(S::Queued),
            S::WaitingForApproval => Refuses,
            S::Completed | S::Failed | S::Skipped | S::Canceled => Drops(Ignored::Settled),
        },
        K::JobLost => match status {
            S::Queued => Moves(S::Queued),
            S::Running | S::WaitingForApproval => Drops(Ignored::Stale),
            S::Pending => Refuses,
            S::Completed | S::Failed | S::Skipped | S::Canceled => Drops(Ignored::Settled),
        },
        K::Cancel => match status {
            S::Pending | S::Queued | S::Running | S::WaitingForApproval => Moves(S::Canceled),
            S::Completed | S::Failed | S::Skipped | S::Canceled => Drops(Ignored::Settled),
        },
        K::AwaitApproval => match status {
            S::Running => Moves(S::WaitingForApproval),
            S::WaitingForApproval => Drops(Ignored::Already),
            S::Pending | S::Queued => Refuses,
            S::Completed | S::Failed | S::Skipped | S::Canceled => Refuses,
        },
        K::Resume => match status {
            S::WaitingForApproval => Moves(S::Running),
            S::Running => Drops(Ignored::Already),
            S::Pending | S::Queued => Refuses,
            S::Completed | S::Failed | S::Skipped | S::Canceled => Refuses,
        },
    }
}

/// A sample message of `kind` (borrowing `c` for a result).
fn sample(kind: MessageKind, c: &Call) -> Message<'_> {
    match kind {
        MessageKind::Dispatch => Message::Dispatch,
        MessageKind::Started => Message::Started {
            attempt: 1,
            worker_id: "w1",
            at: "t-start",
        },
        MessageKind::Finished => Message::Finished {
            call: c,
            outcome: completed(json!(1)),
        },
        MessageKind::WorkerLost => Message::WorkerLost,
        MessageKind::JobLost => Message::JobLost,
        MessageKind::Skip => Message::Skip,
        MessageKind::Fail => Message::Fail {
            error: json!({"code": "X"}),
        },
        MessageKind::StartAgent => Message::StartAgent,
        MessageKind::StartChild => Message::StartChild { child_run_id: "c1" },
        MessageKind::Cancel => Message::Cancel,
        MessageKind::AwaitApproval => Message::AwaitApproval,
        MessageKind::Resume => Message::Resume,
        MessageKind::Reuse => Message::Reuse {
            from: "r0/a",
            input_hash: "h",
            output: &REUSED,
        },
    }
}

#[test]
fn every_status_and_message_is_decided() {
    let c = call(1, "w1");
    let mut decided = 0;
    for status in StepStatus::ALL {
        for kind in MessageKind::ALL {
            let state = Step {
                status,
                attempts: 1,
                worker_id: Some("w1".into()),
                ..Step::default()
            };
            let msg = sample(kind, &c);
            assert_eq!(msg.kind(), kind);
            let got = match super::step(state, msg, NOW) {
                Ok(Decided::Moved(s, _)) => Expect::Moves(s.status),
                Ok(Decided::Ignored(why)) => Expect::Drops(why),
                Err(refused) => {
                    assert_eq!(
                        (refused.machine, refused.state, refused.message),
                        (Machine::Step, status.as_str(), kind.as_str())
                    );
                    Expect::Refuses
                }
            };
            assert_eq!(got, expected(status, kind), "{status:?} × {kind:?}");
            decided += 1;
        }
    }
    assert_eq!(decided, 8 * 13);
}

#[test]
fn the_lists_hold_each_value_once_and_words_read_back() {
    for (i, s) in StepStatus::ALL.iter().enumerate() {
        assert!(!StepStatus::ALL[..i].contains(s));
        assert_eq!(StepStatus::parse(s.as_str()), Ok(*s));
        // The serialized word (the API's) is the stored one.
        assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
    }
    // Every status the API's schema names is in the list the table walks.
    let schema = serde_json::to_value(schemars::schema_for!(StepStatus)).unwrap();
    let mut words = Vec::new();
    collect_enum_words(&schema, &mut words);
    words.sort_unstable();
    let mut listed: Vec<&str> = StepStatus::ALL.iter().map(|s| s.as_str()).collect();
    listed.sort_unstable();
    assert_eq!(words, listed);
    for (i, k) in MessageKind::ALL.iter().enumerate() {
        assert!(!MessageKind::ALL[..i].contains(k));
    }
}

fn collect_enum_words<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("enum", Value::Array(a)) => out.extend(a.iter().filter_map(Value::as_str)),
                    ("const", Value::String(w)) => out.push(w),
                    _ => collect_enum_words(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_enum_words(x, out)),
        _ => {}
    }
}

#[test]
fn an_unknown_stored_status_is_an_error() {
    let e = StepStatus::parse("paused").unwrap_err();
    assert_eq!(e.to_string(), "unknown step status `paused`");
    assert!(StepStatus::parse("").is_err());
}

#[test]
fn an_agent_step_starts_without_a_worker() {
    let (s, effects) = step(Step::default(), Message::StartAgent, NOW);
    assert_eq!((s.status, s.attempts), (StepStatus::Running, 1));
    assert_eq!(s.started_at.as_deref(), Some(NOW));
    assert_eq!(kinds(&effects), ["write Some(Running)", "step.started"]);
    // The StepRun properties and the event the engine wrote by hand before.
    assert_eq!(
        Value::Object(write_of(&effects).to_set()),
        json!({"status": "running", "attempts": 1, "startedAt": NOW})
    );
    assert_eq!(
        effects[1],
        Effect::Event(EventKind::Started, json!({"agent": true}))
    );
    // Started once: a second start is refused.
    let again = decided(s, Message::StartAgent).unwrap_err();
    assert_eq!((again.state, again.message), ("running", "start_agent"));
}

#[test]
fn a_child_run_step_starts_with_its_child() {
    let msg = Message::StartChild { child_run_id: "c1" };
    let (s, effects) = step(Step::default(), msg, NOW);
    assert_eq!((s.status, s.attempts), (StepStatus::Running, 1));
    assert_eq!(s.child_run_id.as_deref(), Some("c1"));
    assert_eq!(
        Value::Object(write_of(&effects).to_set()),
        json!({"status": "running", "attempts": 1, "startedAt": NOW, "childRunId": "c1"})
    );
    assert_eq!(
        effects[1],
        Effect::Event(EventKind::Started, json!({"childRunId": "c1"}))
    );
    // The child's result: its step completes, its start kept.
    let c = Call::internal("t-end");
    let done = Message::Finished {
        call: &c,
        outcome: completed(json!("out")),
    };
    let (s, effects) = step(s, done, NOW);
    assert_eq!(s.status, StepStatus::Completed);
    assert_eq!(write_of(&effects).started_at.as_deref(), Some(NOW));
    // A child that cannot start fails its step while pending: no worker, no start.
    let c = Call::internal(NOW);
    let failed = Message::Finished {
        call: &c,
        outcome: Outcome::Failed {
            error: json!({"code": "PROC-7"}),
        },
    };
    let (s, effects) = step(Step::default(), failed, NOW);
    assert_eq!(s.status, StepStatus::Failed);
    assert_eq!(
        kinds(&effects),
        ["write Some(Failed)", "step.failed", "settled ok=false"]
    );
}

#[test]
fn a_cancel_settles_any_open_step_once() {
    for status in [
        StepStatus::Pending,
        StepStatus::Queued,
        StepStatus::Running,
        StepStatus::WaitingForApproval,
    ] {
        let open = Step {
            status,
            ..Step::default()
        };
        let (s, effects) = step(open, Message::Cancel, NOW);
        assert_eq!(s.status, StepStatus::Canceled);
        assert_eq!(
            kinds(&effects),
            ["write Some(Canceled)"],
            "no event, as before"
        );
        assert_eq!(
            Value::Object(write_of(&effects).to_set()),
            json!({"status": "canceled", "finishedAt": NOW})
        );
        // Canceled twice: the second changes nothing.
        let again = decided(s, Message::Cancel);
        assert_eq!(again, Ok(Decided::Ignored(Ignored::Settled)));
    }
    // A worker's result after the cancel is dropped (EXEC-2).
    let canceled = Step {
        status: StepStatus::Canceled,
        ..Step::default()
    };
    let c = call(1, "w1");
    let late = Message::Finished {
        call: &c,
        outcome: completed(json!(1)),
    };
    assert_eq!(
        decided(canceled, late),
        Ok(Decided::Ignored(Ignored::Settled))
    );
}

#[test]
fn an_agent_loop_waits_for_an_approval_goes_on_and_cancels_its_calls() {
    // The agent step starts; its loop asks the model (a call step of its own), which asks for
    // a tool that needs the owner's approval.
    let (agent, _) = step(Step::default(), Message::StartAgent, NOW);
    let (model, _) = step(Step::default(), Message::Dispatch, NOW);
    let c = call(1, "w1");
    let answered = Message::Finished {
        call: &c,
        outcome: completed(json!({"toolCalls": []})),
    };
    let (model, _) = step(model, answered, NOW);
    assert_eq!(model.status, StepStatus::Completed);
    // Every pass of the loop tells the step whether it holds a call: running, it goes on.
    assert_eq!(
        decided(agent.clone(), Message::Resume),
        Ok(Decided::Ignored(Ignored::Already))
    );
    let (agent, effects) = step(agent, Message::AwaitApproval, NOW);
    assert_eq!(agent.status, StepStatus::WaitingForApproval);
    assert_eq!(
        Value::Object(write_of(&effects).to_set()),
        json!({"status": "waiting_for_approval"})
    );
    assert_eq!(
        decided(agent.clone(), Message::AwaitApproval),
        Ok(Decided::Ignored(Ignored::Already))
    );
    // No worker holds an agent step: a worker's start or loss is refused.
    let started = Message::Started {
        attempt: 1,
        worker_id: "w9",
        at: NOW,
    };
    assert!(decided(agent.clone(), started).is_err());
    assert!(decided(agent.clone(), Message::WorkerLost).is_err());
    // The owner approves: the loop goes on, and calls the tool.
    let (agent, effects) = step(agent, Message::Resume, NOW);
    assert_eq!(agent.status, StepStatus::Running);
    assert_eq!(
        Value::Object(write_of(&effects).to_set()),
        json!({"status": "running"})
    );
    let (tool, _) = step(Step::default(), Message::Dispatch, NOW);
    // The loop finishes before the tool's result: the outstanding call is canceled, then the
    // agent step completes with the loop's answer.
    let (tool, effects) = step(tool, Message::Cancel, NOW);
    assert_eq!(tool.status, StepStatus::Canceled);
    assert_eq!(kinds(&effects), ["write Some(Canceled)"]);
    let answer = Call::internal(NOW);
    let finished = Message::Finished {
        call: &answer,
        outcome: completed(json!({"text": "done"})),
    };
    let (agent, effects) = step(agent, finished, NOW);
    assert_eq!(agent.status, StepStatus::Completed);
    assert_eq!(write_of(&effects).attempts, Some(1));
    // The tool's late result changes nothing; the settled agent neither waits nor resumes.
    let c = call(1, "w2");
    let late = Message::Finished {
        call: &c,
        outcome: completed(json!(1)),
    };
    assert_eq!(decided(tool, late), Ok(Decided::Ignored(Ignored::Settled)));
    assert!(decided(agent.clone(), Message::AwaitApproval).is_err());
    assert!(decided(agent, Message::Resume).is_err());
}

#[test]
fn an_agent_failing_while_it_waits_fails_its_step() {
    let waiting = Step {
        status: StepStatus::WaitingForApproval,
        attempts: 1,
        started_at: Some("t0".into()),
        ..Step::default()
    };
    let c = Call::internal(NOW);
    let failed = Message::Finished {
        call: &c,
        outcome: Outcome::Failed {
            error: json!({"code": "BUDGET_EXCEEDED"}),
        },
    };
    let (s, effects) = step(waiting, failed, NOW);
    assert_eq!(s.status, StepStatus::Failed);
    assert_eq!(write_of(&effects).started_at.as_deref(), Some("t0"));
}

#[test]
fn the_scheduler_decides_only_for_a_pending_step() {
    for status in [StepStatus::Queued, StepStatus::Completed] {
        let s = Step {
            status,
            ..Step::default()
        };
        for msg in [
            Message::Dispatch,
            Message::Skip,
            Message::Fail { error: json!({}) },
        ] {
            let kind = msg.kind();
            let refused = decided(s.clone(), msg).unwrap_err();
            assert_eq!(
                refused.to_string(),
                format!(
                    "the step machine refuses `{}` in state `{}`",
                    kind.as_str(),
                    status.as_str()
                )
            );
        }
    }
}

static REUSED: Value = Value::Null;

#[test]
fn fork_1_a_reused_step_completes_with_the_original_output_and_names_its_source() {
    let out = json!({"answer": 42});
    let msg = Message::Reuse {
        from: "r0/a",
        input_hash: "h",
        output: &out,
    };
    let Ok(Decided::Moved(s, effects)) = super::step(Step::default(), msg, NOW) else {
        panic!("a pending step takes a reuse");
    };
    assert_eq!(s.status, StepStatus::Completed);
    assert_eq!(s.attempts, 0, "nothing was attempted");
    let Effect::Write(patch) = &effects[0] else {
        panic!("{effects:?}")
    };
    assert_eq!(patch.reused_from.as_deref(), Some("r0/a"));
    assert_eq!(patch.input_hash.as_deref(), Some("h"));
    // Nothing is published: no Tool is called.
    assert_eq!(
        kinds(&effects),
        [
            "write Some(Completed)",
            "reused_from r0/a",
            "step.reused",
            "settled ok=true"
        ]
    );
    assert_eq!(effects[3], Effect::Settled(Ok(out)));
}

/// A worker publishes a retry before its failed attempt's result, so the retry can start (or
/// settle) first: the late result of attempt 1 adds its facts and leaves attempt 2 running,
/// with no `LOST_ON` for attempt 2's worker and no write of the step's status or attempts.
#[test]
fn graph_4_a_retry_that_overtook_its_failed_attempts_result_keeps_the_step_and_its_worker() {
    let started = Message::Started {
        attempt: 2,
        worker_id: "w2",
        at: "t-2",
    };
    let (s, _) = step(running("w1"), started, NOW);
    let c1 = call(1, "w1");
    let (s, effects) = step(s, retrying(&c1, "UPSTREAM_ERROR", 1), NOW);
    assert_eq!(
        (s.status, s.attempts, s.worker_id.as_deref()),
        (StepStatus::Running, 2, Some("w2"))
    );
    assert_eq!(kinds(&effects), ["ran_on w1", "retried", "step.retrying"]);
    let Effect::Retried(r) = &effects[1] else {
        panic!("retried")
    };
    assert_eq!(r.record["attempt"], 1);
    // Attempt 2's result then settles the step.
    let (s, effects) = second_attempt_completes(s);
    assert_eq!((s.status, s.attempts), (StepStatus::Completed, 2));
    assert!(!kinds(&effects).iter().any(|k| k.starts_with("lost_on")));
}
