//! The scheduler: given a run's plan, its step statuses and its variables, what happens next.
//! Pure; the engine persists whatever it decides. Semantics:
//! - a `sequential` step waits for every earlier step to settle, a `parallel` step only for
//!   its `dependsOn`;
//! - a ready step whose `condition` renders empty/`false`/`0` is `skipped`, its variable `null`;
//! - the run completes when every step has settled, rendering `outputTemplate`;
//! - a failed step fails the run; the steps not yet started are `canceled`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::budget::{estimate_tokens, fit_to_budget};
use super::interpolate::{condition_holds, render_value};
use crate::process::{Definition, Mode, StepOutput};

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    #[default]
    Pending,
    Queued,
    Running,
    Completed,
    Failed,
    Skipped,
    Canceled,
    /// An agent step whose loop waits for the owner to approve a capability (AGT-9).
    #[serde(rename = "waiting_for_approval")]
    WaitingForApproval,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::Canceled => "canceled",
            Self::WaitingForApproval => "waiting_for_approval",
        }
    }

    /// Every step status, in lifecycle order (the machines' table tests walk it).
    pub const ALL: [Self; 8] = [
        Self::Pending,
        Self::Queued,
        Self::Running,
        Self::WaitingForApproval,
        Self::Completed,
        Self::Failed,
        Self::Skipped,
        Self::Canceled,
    ];

    /// The stored word; a word no step status has is an error, never a default.
    pub fn parse(word: &str) -> Result<Self, UnknownStatus> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == word)
            .ok_or_else(|| UnknownStatus::new("step", word))
    }

    /// The words of the statuses `pick` selects: a status set as a statement's parameter.
    pub fn words(pick: impl Fn(Self) -> bool) -> Vec<&'static str> {
        words_of(&Self::ALL, pick, Self::as_str)
    }

    /// Settled: will not change again.
    pub fn is_settled(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Skipped | Self::Canceled
        )
    }
}

/// The words of the members of a lifecycle's `all` that `pick` selects: a status set as a
/// statement's parameter.
pub fn words_of<T: Copy>(
    all: &[T],
    pick: impl Fn(T) -> bool,
    word: fn(T) -> &'static str,
) -> Vec<&'static str> {
    all.iter().copied().filter(|s| pick(*s)).map(word).collect()
}

/// A stored status word that no status of its lifecycle has: reading it is an error (a run
/// whose status is unknown is not started, a step whose status is unknown is not guessed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {lifecycle} status `{word}`")]
pub struct UnknownStatus {
    /// `run` or `step`.
    pub lifecycle: &'static str,
    pub word: String,
}

impl UnknownStatus {
    pub fn new(lifecycle: &'static str, word: &str) -> Self {
        Self {
            lifecycle,
            word: word.to_owned(),
        }
    }
}

/// What a step calls, resolved when the run was created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Target {
    Tool {
        id: String,
        operation_type: crate::OperationType,
        /// AGT-14: what a call costs when the step calls it itself (an agent's calls are
        /// priced by its loop, and carry none).
        #[serde(default, skip_serializing_if = "super::cost::StepCost::is_free")]
        cost: super::cost::StepCost,
    },
    Process {
        id: String,
    },
    /// An agent step: `model` is the llm_call Tool the loop asks; `tools` what it may offer.
    Agent {
        model: String,
        model_operation_type: crate::OperationType,
        tools: Vec<super::agent::AgentTool>,
        caps: super::agent::Caps,
        system_prompt: Option<String>,
        /// The model Tool's `connectionParams.model`: what its turns are priced by (AGT-14).
        #[serde(default)]
        model_name: Option<String>,
        /// AGT-15: the step's router, if it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        router: Option<super::agent::router::RouterSpec>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    pub id: String,
    pub mode: Mode,
    pub depends_on: Vec<String>,
    pub condition: Option<String>,
    pub inputs: Map<String, Value>,
    pub output: StepOutput,
    pub timeout_ms: u64,
    pub target: Target,
    /// Set on the model turns and tool calls of an agent step: the agent step's
    /// id. They are dispatched by the loop, never by the scheduler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_of: Option<String>,
    /// A call's input, used as is (never rendered: model-written text is not a template).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub literal: Option<Value>,
}

/// One Process version, ready to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub process_id: String,
    pub version: i64,
    pub steps: Vec<PlanStep>,
    pub output_template: Option<String>,
    pub token_budget: Option<u64>,
    pub max_recursion_depth: u32,
    /// Checked when a run is started (AGT-10), not by the engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<crate::process::Quota>,
}

impl Plan {
    /// `targets[i]` and `timeouts[i]` belong to `definition.steps[i]` (from the version's
    /// `CALLS_TOOL`/`CALLS_PROCESS` edges; the edge's timeout wins over the default).
    pub fn new(
        process_id: &str,
        version: i64,
        definition: &Definition,
        targets: Vec<Target>,
        timeouts: Vec<u64>,
    ) -> Self {
        let steps = definition
            .steps
            .iter()
            .zip(targets)
            .zip(timeouts)
            .map(|((s, target), timeout_ms)| PlanStep {
                id: s.id.clone(),
                mode: s.execution.mode,
                depends_on: s.depends_on.clone(),
                condition: s.execution.condition.clone(),
                inputs: s.inputs.clone(),
                output: s.output.clone(),
                timeout_ms,
                target,
                call_of: None,
                literal: None,
            })
            .collect();
        Self {
            process_id: process_id.to_owned(),
            version,
            steps,
            output_template: definition.output_template.clone(),
            token_budget: definition.token_budget,
            max_recursion_depth: definition.max_recursion_depth,
            quota: definition.quota,
        }
    }

    pub fn index_of(&self, step_id: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.id == step_id)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Step `i` is ready: send it to its queue (or start its child run).
    Dispatch(usize),
    /// Step `i` was skipped by its condition (its variable is now `null`).
    Skip(usize),
    /// Step `i` cannot start (its condition failed to render); the run fails.
    FailStep(usize, Failure),
    /// Every step settled: the run's output.
    Complete(Value),
    /// The run fails (a step failed, or the output template could not render).
    FailRun(Failure),
}

/// Advances the run as far as it can without waiting: marks dispatched steps `queued`,
/// skipped ones `skipped` (setting their variable to `null`) and returns what happened.
pub fn advance(
    plan: &Plan,
    statuses: &mut [StepStatus],
    variables: &mut Map<String, Value>,
) -> Vec<Decision> {
    let mut decisions = Vec::new();
    // A failed agent call is the loop's to handle (the model reads the error), not the run's.
    let failed = (0..statuses.len())
        .find(|&i| statuses[i] == StepStatus::Failed && plan.steps[i].call_of.is_none());
    if let Some(i) = failed {
        decisions.push(FailRun(Failure {
            code: "STEP_FAILED",
            message: format!("step `{}` failed", plan.steps[i].id),
        }));
        return decisions;
    }
    loop {
        let mut progressed = false;
        for i in 0..plan.steps.len() {
            if statuses[i] != StepStatus::Pending
                || plan.steps[i].call_of.is_some()
                || !is_ready(plan, statuses, i)
            {
                continue;
            }
            let step = &plan.steps[i];
            let runs = match &step.condition {
                None => Ok(true),
                Some(c) => condition_holds(c, &Value::Object(variables.clone())),
            };
            match runs {
                Ok(true) => {
                    statuses[i] = StepStatus::Queued;
                    decisions.push(Decision::Dispatch(i));
                }
                Ok(false) => {
                    statuses[i] = StepStatus::Skipped;
                    if let Some(var) = &step.output.variable {
                        variables.insert(var.clone(), Value::Null);
                    }
                    decisions.push(Decision::Skip(i));
                    progressed = true;
                }
                Err(e) => {
                    statuses[i] = StepStatus::Failed;
                    let failure = Failure {
                        code: "INTERPOLATION_ERROR",
                        message: format!("condition of step `{}`: {e}", step.id),
                    };
                    decisions.push(Decision::FailStep(i, failure.clone()));
                    decisions.push(FailRun(failure));
                    return decisions;
                }
            }
        }
        if !progressed {
            break;
        }
    }
    if statuses.iter().all(|s| s.is_settled()) {
        decisions.push(match render_output(plan, variables) {
            Ok(v) => Decision::Complete(v),
            Err(f) => FailRun(f),
        });
    }
    decisions
}

use Decision::FailRun;

fn is_ready(plan: &Plan, statuses: &[StepStatus], i: usize) -> bool {
    let step = &plan.steps[i];
    match step.mode {
        Mode::Sequential => statuses[..i].iter().all(|s| s.is_settled()),
        Mode::Parallel => step
            .depends_on
            .iter()
            .all(|dep| plan.index_of(dep).is_none_or(|j| statuses[j].is_settled())),
    }
}

fn render_output(plan: &Plan, variables: &Map<String, Value>) -> Result<Value, Failure> {
    let vars = Value::Object(variables.clone());
    match &plan.output_template {
        Some(t) => render_value(t, &vars).map_err(|e| Failure {
            code: "OUTPUT_TEMPLATE",
            message: format!("outputTemplate: {e}"),
        }),
        None => Ok(Value::Object(
            plan.steps
                .iter()
                .filter_map(|s| s.output.variable.as_ref())
                .map(|v| (v.clone(), variables.get(v).cloned().unwrap_or(Value::Null)))
                .collect(),
        )),
    }
}

/// What a step's output becomes when it is recorded (EXEC-3): a missing `required` output
/// fails the step; `output.tokenBudget` cuts what is passed on; the Process `tokenBudget`
/// bounds the sum of all step outputs. Returns the value to store and whether it was cut.
pub fn accept_output(
    plan: &Plan,
    step: usize,
    output: Value,
    variables: &Map<String, Value>,
) -> Result<(Value, bool), Failure> {
    let spec: &StepOutput = &plan.steps[step].output;
    if spec.required && is_empty(substance(&plan.steps[step].target, &output)) {
        return Err(Failure {
            code: "OUTPUT_REQUIRED",
            message: format!("step `{}` produced no output", plan.steps[step].id),
        });
    }
    let (value, cut) = match spec.token_budget {
        Some(budget) => fit_to_budget(output, budget),
        None => (output, false),
    };
    if let Some(budget) = plan.token_budget {
        let used: u64 = plan
            .steps
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != step)
            .filter_map(|(_, s)| s.output.variable.as_ref())
            .filter_map(|v| variables.get(v))
            .map(estimate_tokens)
            .sum();
        let total = used + estimate_tokens(&value);
        if total > budget {
            return Err(Failure {
                code: "TOKEN_BUDGET_EXCEEDED",
                message: format!(
                    "step outputs total ~{total} tokens, over the process tokenBudget of {budget}"
                ),
            });
        }
    }
    Ok((value, cut))
}

/// The part of a result `output.required` asks for: a `rest_api` call answers `{status, body}`,
/// and a 200 with an empty body has produced nothing.
fn substance<'a>(target: &Target, output: &'a Value) -> &'a Value {
    match target {
        Target::Tool { operation_type, .. }
            if *operation_type == crate::OperationType::RestApi
                && output.get("status").is_some() =>
        {
            output.get("body").unwrap_or(&Value::Null)
        }
        _ => output,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// The variables a step's templates refer to (what a job must carry).
pub fn referenced_variables(step: &PlanStep, variables: &Map<String, Value>) -> Map<String, Value> {
    let mut names = std::collections::BTreeSet::new();
    for v in step.inputs.values() {
        collect(v, &mut names);
    }
    names
        .into_iter()
        .filter_map(|n| variables.get(&n).map(|v| (n, v.clone())))
        .collect()
}

fn collect(v: &Value, names: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::String(s) => names.extend(crate::template_vars::template_variables(s)),
        Value::Array(items) => items.iter().for_each(|i| collect(i, names)),
        Value::Object(m) => m.values().for_each(|i| collect(i, names)),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
