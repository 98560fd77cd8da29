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

fn settle(status: RunStatus, output: Option<Value>, error: Option<Value>) -> RunMessage {
    RunMessage::Settle {
        status,
        output,
        error,
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
    let msg = settle(RunStatus::Completed, Some(json!({"a": 1})), None);
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
    let msg = settle(RunStatus::Failed, None, Some(error));
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
    let msg = settle(RunStatus::Canceled, None, Some(json!({"code": "CANCELED"})));
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
    let msg = settle(RunStatus::Canceled, None, None);
    let (r, effects) = run(core(RunStatus::Completed), &[], msg, NOW);
    assert_eq!(r.status, RunStatus::Completed);
    assert!(effects.is_empty());
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
        settle(RunStatus::Completed, Some(json!("out")), None),
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
        settle(RunStatus::Failed, None, Some(error)),
        NOW,
    );
    let Some(RunEffect::TellParent(Err(e))) = effects.last() else {
        panic!("{effects:?}")
    };
    assert_eq!(e["code"], "UPSTREAM_ERROR");
    assert_eq!(e["message"], "child run r1: down");
    let (_, effects) = run(child, &[], settle(RunStatus::Canceled, None, None), NOW);
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
        let msg = settle(RunStatus::Completed, Some(output), None);
        let (_, effects) = run(agent.clone(), &[], msg, NOW);
        let RunEffect::Write(patch) = &effects[0] else {
            panic!()
        };
        assert_eq!(patch.output_text.as_deref(), Some(text));
    }
}
