//! Forking a settled run from one of its steps (FORK-1..4): which of the original's recorded
//! results the fork may reuse, and the test the engine applies when it would dispatch one.
//!
//! A step is reused only when nothing about its call changed: it is not the fork's step or
//! downstream of it, the original completed it, and the input it renders now hashes to the
//! input hash the original recorded (the same `input_hash` a worker records, so a changed run
//! input or a changed upstream output re-runs it). An agent step or a step that calls a Process
//! is reused or re-run whole: its output is the unit, never its inner calls.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::audit_hash::input_hash;
use super::interpolate::render_tree;
use super::schedule::{Plan, PlanStep, StepStatus};
use crate::process::Mode;

/// One step of a recorded run, as the fork and the replay read it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedStep {
    pub step_id: String,
    pub step_run_id: String,
    pub status: StepStatus,
    /// The audit hash of the input it ran with, when a worker or the engine recorded one.
    pub input_hash: Option<String>,
    pub output: Option<Value>,
    /// FORK-1: the original StepRun whose output it took, if it was reused.
    pub reused_from: Option<String>,
}

/// A recorded result a fork may reuse for one step, kept on the fork's Run (`reuse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reusable {
    /// The original's StepRun: the fork's StepRun gets `REUSED_FROM` to it.
    pub step_run_id: String,
    pub input_hash: String,
    pub output: Value,
}

/// `downstream[j]`: step `j` waits, directly or through others, for step `from` (the
/// scheduler's own order: a sequential step waits for every earlier one, a parallel step for
/// its `dependsOn`), or is `from` itself.
pub fn downstream(plan: &Plan, from: usize) -> Vec<bool> {
    let mut marked = vec![false; plan.steps.len()];
    if from < marked.len() {
        marked[from] = true;
    }
    for j in 0..plan.steps.len() {
        if marked[j] || plan.steps[j].call_of.is_some() {
            continue;
        }
        let step = &plan.steps[j];
        marked[j] = match step.mode {
            Mode::Sequential => (0..j).any(|k| marked[k]),
            Mode::Parallel => step
                .depends_on
                .iter()
                .any(|d| plan.index_of(d).is_some_and(|k| k < j && marked[k])),
        };
    }
    // A parallel step may name a later step in `dependsOn`: settle the closure.
    loop {
        let mut changed = false;
        for j in 0..plan.steps.len() {
            let waits = plan.steps[j]
                .depends_on
                .iter()
                .any(|d| plan.index_of(d).is_some_and(|k| marked[k]));
            if !marked[j] && waits && plan.steps[j].call_of.is_none() {
                marked[j] = true;
                changed = true;
            }
        }
        if !changed {
            return marked;
        }
    }
}

/// The input step `spec` would run with on `variables`, as a worker renders it.
pub fn rendered_input(spec: &PlanStep, variables: &Map<String, Value>) -> Result<Value, String> {
    match &spec.literal {
        Some(literal) => Ok(literal.clone()),
        None => render_tree(
            &Value::Object(spec.inputs.clone()),
            &Value::Object(variables.clone()),
        )
        .map_err(|e| e.to_string()),
    }
}

/// The audit hash of that input; `None` when it does not render (the step then runs, and
/// fails as it would have).
pub fn rendered_hash(spec: &PlanStep, variables: &Map<String, Value>) -> Option<String> {
    rendered_input(spec, variables).ok().map(|v| input_hash(&v))
}

/// The original run as the fork and the replay read it: its plan, its final variables (inputs
/// and step outputs) and its steps.
pub struct Recorded<'a> {
    pub plan: &'a Plan,
    pub variables: &'a Map<String, Value>,
    pub steps: &'a [RecordedStep],
}

impl Recorded<'_> {
    pub fn step(&self, step_id: &str) -> Option<&RecordedStep> {
        self.steps.iter().find(|r| r.step_id == step_id)
    }

    /// The input the original's step ran with, rendered again from its plan and variables.
    pub fn input(&self, step_id: &str) -> Option<Value> {
        let spec = self.plan.steps.iter().find(|s| s.id == step_id)?;
        rendered_input(spec, self.variables).ok()
    }

    /// The input hash the original recorded for a step, or, for a step the engine began
    /// itself (an agent step, a Process step: no worker hashed an input), the hash of the input
    /// rendered again from its plan and variables.
    pub fn input_hash(&self, step_id: &str) -> Option<String> {
        let r = self.step(step_id)?;
        r.input_hash.clone().or_else(|| {
            let spec = self.plan.steps.iter().find(|s| s.id == step_id)?;
            rendered_hash(spec, self.variables)
        })
    }

    /// Whether the step calls the same thing, the same way, in `plan` as in the original (a
    /// newer version may bind another Tool or change an agent's prompt under the same id).
    pub fn same_call(&self, spec: &PlanStep) -> bool {
        self.plan
            .steps
            .iter()
            .find(|s| s.id == spec.id)
            .is_some_and(|o| o.target == spec.target && o.output == spec.output)
    }
}

/// What a fork of a run from step `from` of `plan` (the fork's) may reuse: every step that is
/// not downstream of `from`, calls what it called in the original, and that the original
/// completed with a known input hash.
pub fn reusable(plan: &Plan, from: usize, original: &Recorded<'_>) -> BTreeMap<String, Reusable> {
    let below = downstream(plan, from);
    plan.steps
        .iter()
        .enumerate()
        .filter(|(j, s)| !below[*j] && s.call_of.is_none() && original.same_call(s))
        .filter_map(|(_, s)| {
            let r = original.step(&s.id)?;
            if r.status != StepStatus::Completed {
                return None;
            }
            Some((
                s.id.clone(),
                Reusable {
                    step_run_id: r.step_run_id.clone(),
                    input_hash: original.input_hash(&s.id)?,
                    output: r.output.clone().unwrap_or(Value::Null),
                },
            ))
        })
        .collect()
}

/// The engine, about to dispatch `spec`: the recorded result it reuses instead, if the input
/// it renders now is the one the original ran with.
pub fn reuse_for<'a>(
    spec: &PlanStep,
    variables: &Map<String, Value>,
    reuse: &'a BTreeMap<String, Reusable>,
) -> Option<&'a Reusable> {
    let candidate = reuse.get(&spec.id)?;
    (rendered_hash(spec, variables).as_deref() == Some(candidate.input_hash.as_str()))
        .then_some(candidate)
}

#[cfg(test)]
#[path = "fork_tests.rs"]
pub(crate) mod tests;
