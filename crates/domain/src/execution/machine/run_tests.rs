//! Every transition of a run's lifecycle.

use serde_json::json;

use super::*;

const NOW: &str = "2026-11-26T10:00:00.000Z";

fn core(status: RunStatus) -> RunCore {
    RunCore {
        id: "r1".into(),
        status,
        process_id: "p".into(),
        process_version: 2,
        depth: 1,
        has_parent: false,
        generates_alternative: false,
    }
}

fn settle(outcome: Terminal, output: Option<Value>, error: Option<Value>) -> RunMessage {
    RunMessage::Settle {
        outcome,
        output,
        error,
    }
}

/// A message the run takes: the state it leaves and the effects.
fn run(
    state: RunCore,
    steps: &[StepStatus],
    message: RunMessage,
    now: &str,
) -> (RunCore, Vec<RunEffect>) {
    match super::run(state, steps, message, now) {
        Ok(Decided::Moved(r, effects)) => (r, effects),
        other => panic!("not moved: {other:?}"),
    }
}

fn names(effects: &[RunEffect]) -> Vec<String> {
    effects
        .iter()
        .map(|e| match e {
            RunEffect::Write(p) => format!("write {:?}", p.status),
            RunEffect::Event(k, _) => k.as_str().into(),
            RunEffect::Link => "link".into(),
            RunEffect::CancelStep(i) => format!("cancel step {i}"),
            RunEffect::Canceled => "canceled".into(),
            RunEffect::TellParent(r) => format!("tell parent ok={}", r.is_ok()),
            RunEffect::Advance => "advance".into(),
        })
        .collect()
}

#[test]
fn a_start_writes_links_and_announces_once() {
    let (r, effects) = run(core(RunStatus::Queued), &[], RunMessage::Start, NOW);
    assert_eq!(r.status, RunStatus::Running);
    assert_eq!(
        names(&effects),
        ["write Some(Running)", "link", "run.started", "advance"]
    );
    assert_eq!(
        effects[2],
        RunEffect::Event(
            RunEventKind::Started,
            json!({"processId": "p", "processVersion": 2, "depth": 1})
        )
    );
    // A start of a started run (a redelivered start message) only advances it.
    let (_, again) = run(r, &[], RunMessage::Start, NOW);
    assert_eq!(names(&again), ["advance"]);
}

#[test]
fn completing_cancels_nothing_settled_and_writes_the_output() {
    let steps = [StepStatus::Completed, StepStatus::Skipped];
    let msg = settle(Terminal::Completed, Some(json!({"a": 1})), None);
    let (r, effects) = run(core(RunStatus::Running), &steps, msg, NOW);
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(names(&effects), ["write Some(Completed)", "run.completed"]);
    let RunEffect::Write(patch) = &effects[0] else {
        panic!()
    };
    assert_eq!(patch.to_set()["output"], json!("{\"a\":1}"));
    assert_eq!(patch.output_text, None, "no Alternative to fill");
}

#[test]
fn failing_cancels_the_open_steps() {
    let steps = [StepStatus::Failed, StepStatus::Running, StepStatus::Pending];
    let error = json!({"code": "X", "message": "m"});
    let msg = settle(Terminal::Failed, None, Some(error));
    let (_, effects) = run(core(RunStatus::Running), &steps, msg, NOW);
    assert_eq!(
        names(&effects),
        [
            "cancel step 1",
            "cancel step 2",
            "write Some(Failed)",
            "run.failed"
        ]
    );
}

#[test]
fn a_cancel_before_the_start_links_the_run_and_tells_the_workers() {
    let msg = settle(Terminal::Canceled, None, Some(json!({"code": "CANCELED"})));
    let (_, effects) = run(core(RunStatus::Queued), &[StepStatus::Pending], msg, NOW);
    assert_eq!(
        names(&effects),
        [
            "link",
            "cancel step 0",
            "write Some(Canceled)",
            "run.canceled",
            "canceled"
        ]
    );
}

#[test]
fn a_settled_run_never_settles_again() {
    // A cancel racing the run's end comes late: ignored.
    let msg = settle(Terminal::Canceled, None, None);
    let decided = super::run(core(RunStatus::Completed), &[], msg, NOW);
    assert_eq!(decided, Ok(Decided::Ignored(Ignored::Settled)));
    // Only the scheduler completes or fails a run, and only an active one.
    let msg = settle(Terminal::Failed, None, None);
    let refused = super::run(core(RunStatus::Completed), &[], msg, NOW).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "the run machine refuses `settle_failed` in state `completed`"
    );
}

#[test]
fn a_child_tells_its_parent_step() {
    let child = RunCore {
        has_parent: true,
        ..core(RunStatus::Running)
    };
    let (_, effects) = run(
        child.clone(),
        &[],
        settle(Terminal::Completed, Some(json!("out")), None),
        NOW,
    );
    assert_eq!(
        effects.last(),
        Some(&RunEffect::TellParent(Ok(json!("out"))))
    );
    let error = json!({"code": "UPSTREAM_ERROR", "message": "down"});
    let (_, effects) = run(
        child.clone(),
        &[],
        settle(Terminal::Failed, None, Some(error)),
        NOW,
    );
    let Some(RunEffect::TellParent(Err(e))) = effects.last() else {
        panic!("{effects:?}")
    };
    assert_eq!(e["code"], "UPSTREAM_ERROR");
    assert_eq!(e["message"], "child run r1: down");
    let (_, effects) = run(child, &[], settle(Terminal::Canceled, None, None), NOW);
    let Some(RunEffect::TellParent(Err(e))) = effects.last() else {
        panic!("{effects:?}")
    };
    assert_eq!(e["code"], "CHILD_RUN_FAILED");
}

#[test]
fn an_alternatives_content_is_the_output_as_text() {
    let agent = RunCore {
        generates_alternative: true,
        ..core(RunStatus::Running)
    };
    for (output, text) in [(json!("hello"), "hello"), (json!({"a": 1}), "{\"a\":1}")] {
        let msg = settle(Terminal::Completed, Some(output), None);
        let (_, effects) = run(agent.clone(), &[], msg, NOW);
        let RunEffect::Write(patch) = &effects[0] else {
            panic!()
        };
        assert_eq!(patch.output_text.as_deref(), Some(text));
    }
}

/// What the table says a message does to a run.
#[derive(Debug, PartialEq)]
enum Expect {
    Moves(RunStatus),
    Drops(Ignored),
    Refuses,
}

/// The decision for every (state, message kind): exhaustive, so a new state or message does
/// not compile here until it is decided.
fn expected(state: RunStatus, kind: RunMessageKind) -> Expect {
    use Expect::*;
    use RunMessageKind as K;
    use RunStatus as S;
    match kind {
        K::Start => match state {
            S::Queued | S::Running => Moves(S::Running),
            // A redelivered start only advances a started run.
            S::WaitingForApproval => Moves(S::WaitingForApproval),
            S::Completed | S::Failed | S::Canceled => Drops(Ignored::Settled),
        },
        K::Settle(outcome) => match (state, outcome) {
            (S::Queued, Terminal::Canceled) => Moves(S::Canceled),
            (S::Queued, Terminal::Completed | Terminal::Failed) => Refuses,
            (S::Running | S::WaitingForApproval, t) => Moves(t.status()),
            (S::Completed | S::Failed | S::Canceled, Terminal::Canceled) => Drops(Ignored::Settled),
            (S::Completed | S::Failed | S::Canceled, Terminal::Completed | Terminal::Failed) => {
                Refuses
            }
        },
        K::AwaitApproval => match state {
            S::Running => Moves(S::WaitingForApproval),
            S::WaitingForApproval => Drops(Ignored::Already),
            S::Queued | S::Completed | S::Failed | S::Canceled => Refuses,
        },
        K::Resume => match state {
            S::WaitingForApproval => Moves(S::Running),
            S::Running => Drops(Ignored::Already),
            S::Queued | S::Completed | S::Failed | S::Canceled => Refuses,
        },
    }
}

fn message(kind: RunMessageKind) -> RunMessage {
    match kind {
        RunMessageKind::Start => RunMessage::Start,
        RunMessageKind::Settle(outcome) => settle(outcome, Some(json!("out")), None),
        RunMessageKind::AwaitApproval => RunMessage::AwaitApproval,
        RunMessageKind::Resume => RunMessage::Resume,
    }
}

#[test]
fn every_state_and_message_is_decided() {
    let mut decided = 0;
    for state in RunStatus::ALL {
        for kind in RunMessageKind::ALL {
            let msg = message(kind);
            assert_eq!(msg.kind(), kind);
            let got = match super::run(core(state), &[StepStatus::Running], msg, NOW) {
                Ok(Decided::Moved(r, _)) => Expect::Moves(r.status),
                Ok(Decided::Ignored(why)) => Expect::Drops(why),
                Err(refused) => {
                    assert_eq!(
                        (refused.machine, refused.state, refused.message),
                        (Machine::Run, state.as_str(), kind.as_str())
                    );
                    Expect::Refuses
                }
            };
            assert_eq!(got, expected(state, kind), "{state:?} × {kind:?}");
            decided += 1;
        }
    }
    assert_eq!(decided, 6 * 6);
}

#[test]
fn the_lists_hold_each_value_once_and_words_read_back() {
    for (i, s) in RunStatus::ALL.iter().enumerate() {
        assert!(!RunStatus::ALL[..i].contains(s));
        assert_eq!(RunStatus::parse(s.as_str()), Ok(*s));
    }
    for (i, k) in RunMessageKind::ALL.iter().enumerate() {
        assert!(!RunMessageKind::ALL[..i].contains(k));
    }
    for t in Terminal::ALL {
        assert!(t.status().is_settled());
        assert!(RunMessageKind::ALL.contains(&RunMessageKind::Settle(t)));
    }
}

#[test]
fn an_unknown_stored_status_is_an_error_not_queued() {
    let e = RunStatus::parse("paused").unwrap_err();
    assert_eq!(e.to_string(), "unknown run status `paused`");
    assert_eq!(e.word, "paused");
    assert!(RunStatus::parse("").is_err());
    assert!(
        RunStatus::parse("Queued").is_err(),
        "the stored words are lower case"
    );
}

#[test]
fn a_run_waits_for_an_approval_and_goes_on() {
    let (r, effects) = run(
        core(RunStatus::Running),
        &[],
        RunMessage::AwaitApproval,
        NOW,
    );
    assert_eq!(r.status, RunStatus::WaitingForApproval);
    assert_eq!(names(&effects), ["write Some(WaitingForApproval)"]);
    let RunEffect::Write(patch) = &effects[0] else {
        panic!()
    };
    assert_eq!(
        Value::Object(patch.to_set()),
        json!({"status": "waiting_for_approval"}),
        "the status only, as the engine wrote it by hand"
    );
    // Waiting again (another call held) changes nothing.
    let again = super::run(r.clone(), &[], RunMessage::AwaitApproval, NOW);
    assert_eq!(again, Ok(Decided::Ignored(Ignored::Already)));
    // A redelivered start advances a waiting run without moving it.
    let (w, effects) = run(r.clone(), &[], RunMessage::Start, NOW);
    assert_eq!(
        (w.status, names(&effects)),
        (r.status, vec!["advance".into()])
    );
    let (r, effects) = run(r, &[], RunMessage::Resume, NOW);
    assert_eq!(r.status, RunStatus::Running);
    let RunEffect::Write(patch) = &effects[0] else {
        panic!()
    };
    assert_eq!(Value::Object(patch.to_set()), json!({"status": "running"}));
    // A running run resumed (every loop's pass says so) changes nothing.
    let again = super::run(r, &[], RunMessage::Resume, NOW);
    assert_eq!(again, Ok(Decided::Ignored(Ignored::Already)));
}

#[test]
fn a_waiting_run_is_canceled_with_its_waiting_step() {
    let steps = [StepStatus::Completed, StepStatus::WaitingForApproval];
    let msg = settle(Terminal::Canceled, None, Some(json!({"code": "CANCELED"})));
    let (r, effects) = run(core(RunStatus::WaitingForApproval), &steps, msg, NOW);
    assert_eq!(r.status, RunStatus::Canceled);
    assert_eq!(
        names(&effects),
        [
            "cancel step 1",
            "write Some(Canceled)",
            "run.canceled",
            "canceled"
        ]
    );
}

#[test]
fn a_queued_run_neither_completes_nor_fails_nor_waits() {
    for msg in [
        settle(Terminal::Completed, Some(json!(1)), None),
        settle(Terminal::Failed, None, None),
        RunMessage::AwaitApproval,
        RunMessage::Resume,
    ] {
        let kind = msg.kind();
        let refused = super::run(core(RunStatus::Queued), &[], msg, NOW).unwrap_err();
        assert_eq!((refused.state, refused.message), ("queued", kind.as_str()));
    }
    // A settled run's start is a redelivery: ignored, not an error.
    let late = super::run(core(RunStatus::Failed), &[], RunMessage::Start, NOW);
    assert_eq!(late, Ok(Decided::Ignored(Ignored::Settled)));
}
