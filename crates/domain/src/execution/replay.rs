//! The dry replay (REPLAY-1): a Process version's plan driven through the scheduler with a
//! recorded run's step outputs as its results, calling nothing, to tell whether the version
//! would have made the same calls. Like Temporal's replayer, for Processes defined as data: the
//! first step where the new plan would act differently is the divergence.
//!
//! What it can tell: a step the version adds or drops on the recorded path, a step that now
//! gets a different input (its rendered input's audit hash differs from the recorded one), a
//! step whose condition now skips it or now runs it, a step bound to another Tool or Process,
//! a template that no longer renders. What it cannot: whether a re-run call would answer the
//! same (the recorded output stands in for it), anything past the first divergence, and the
//! inner calls of an agent step (its recorded output is reused whole).

use serde::Serialize;
use serde_json::{Map, Value};

use super::fork::{rendered_hash, rendered_input, Recorded};
use super::schedule::{advance, Decision, Plan, StepStatus};

/// How a replayed run first differs from its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DivergenceKind {
    /// The version runs a step the recorded run has no record of.
    New,
    /// The recorded run ran a step the version does not have.
    Gone,
    /// The step's rendered input differs from the one recorded.
    InputChanged,
    /// The step calls another Tool or Process, or an agent step changed, under the same id.
    CallChanged,
    /// The step's condition now skips a step the record ran.
    NowSkipped,
    /// The step's condition now runs a step the record skipped.
    NowRun,
    /// A condition, input or the output template no longer renders.
    RenderFailed,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Divergence {
    pub step_id: String,
    pub kind: DivergenceKind,
    /// The input the record ran the step with (rendered again from its plan and variables).
    pub recorded_input: Option<Value>,
    /// The input the version would run it with.
    pub replayed_input: Option<Value>,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Replayed {
    /// The steps whose recorded result the replay used.
    pub steps_replayed: usize,
    /// `None`: the version makes the same calls with the same inputs as the record.
    pub divergence: Option<Divergence>,
}

/// Replays `plan` over `record`, starting from the record's run inputs.
pub fn replay(plan: &Plan, inputs: &Map<String, Value>, record: &Recorded<'_>) -> Replayed {
    let mut statuses = vec![StepStatus::Pending; plan.steps.len()];
    let mut variables = inputs.clone();
    let mut replayed = 0;
    let diverged = |step_id: &str, kind, recorded_input, replayed_input, message: String| {
        Some(Divergence {
            step_id: step_id.to_owned(),
            kind,
            recorded_input,
            replayed_input,
            message,
        })
    };
    loop {
        let decisions = advance(plan, &mut statuses, &mut variables);
        if decisions.is_empty() {
            break;
        }
        let mut finished = false;
        for decision in decisions {
            let divergence = match decision {
                Decision::Dispatch(i) => {
                    let spec = &plan.steps[i];
                    let replayed_input = rendered_input(spec, &variables).ok();
                    let (id, input) = (spec.id.as_str(), replayed_input.clone());
                    match record.step(id) {
                        None => diverged(
                            id,
                            DivergenceKind::New,
                            None,
                            input,
                            "a step the record has no result for".into(),
                        ),
                        Some(r) if r.status == StepStatus::Skipped => diverged(
                            id,
                            DivergenceKind::NowRun,
                            None,
                            input,
                            "the record skipped it; its condition now holds".into(),
                        ),
                        Some(_) if !record.same_call(spec) => diverged(
                            id,
                            DivergenceKind::CallChanged,
                            record.input(id),
                            input,
                            "it calls another target, or its agent or output changed".into(),
                        ),
                        Some(_) if rendered_hash(spec, &variables) != record.input_hash(id) => {
                            diverged(
                                id,
                                DivergenceKind::InputChanged,
                                record.input(id),
                                input,
                                "its input differs from the recorded one".into(),
                            )
                        }
                        Some(r) => {
                            replayed += 1;
                            statuses[i] = r.status;
                            if let (Some(var), StepStatus::Completed) =
                                (&spec.output.variable, r.status)
                            {
                                variables
                                    .insert(var.clone(), r.output.clone().unwrap_or(Value::Null));
                            }
                            None
                        }
                    }
                }
                Decision::Skip(i) => {
                    let id = plan.steps[i].id.as_str();
                    match record.step(id) {
                        Some(r)
                            if r.status != StepStatus::Skipped
                                && r.status != StepStatus::Canceled =>
                        {
                            diverged(
                                id,
                                DivergenceKind::NowSkipped,
                                record.input(id),
                                None,
                                "its condition now skips a step the record ran".into(),
                            )
                        }
                        _ => None,
                    }
                }
                Decision::FailStep(i, failure) => diverged(
                    &plan.steps[i].id,
                    DivergenceKind::RenderFailed,
                    None,
                    None,
                    failure.message,
                ),
                Decision::Complete(_) | Decision::FailRun(_) => {
                    finished = true;
                    None
                }
            };
            if divergence.is_some() {
                return Replayed {
                    steps_replayed: replayed,
                    divergence,
                };
            }
        }
        if finished {
            break;
        }
    }
    // The record ran a step the version does not have.
    let gone = record.steps.iter().find(|r| {
        plan.index_of(&r.step_id).is_none()
            && !matches!(
                r.status,
                StepStatus::Skipped | StepStatus::Canceled | StepStatus::Pending
            )
    });
    Replayed {
        steps_replayed: replayed,
        divergence: gone.and_then(|r| {
            diverged(
                &r.step_id,
                DivergenceKind::Gone,
                record.input(&r.step_id),
                None,
                "the record ran a step the version does not have".into(),
            )
        }),
    }
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
