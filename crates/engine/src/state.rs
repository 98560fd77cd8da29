//! A run as the engine holds it in memory: rebuilt from the graph whenever it is not cached,
//! so a restart loses nothing.

use std::collections::BTreeMap;

use aiden_domain::execution::agent::Loop;
use aiden_domain::execution::fork::Reusable;
use aiden_domain::execution::schedule::{Plan, PlanStep, StepStatus};
use aiden_graph::runs::{RunRow, StepRunRecord};
use serde_json::{Map, Value};

pub use aiden_domain::execution::machine::RunStatus;

#[derive(Debug, Clone)]
pub struct StepState {
    pub id: String,
    pub status: StepStatus,
    pub attempts: u32,
    pub worker_id: Option<String>,
    pub started_at: Option<String>,
    /// When its job was last published: kept in memory, written when the step settles (a
    /// tool step's StepRun is written once then, not at each transition).
    pub queued_at: Option<String>,
    pub child_run_id: Option<String>,
    /// AGT-14: the estimate charged when a priced step was queued, until it settles.
    pub reserved_micros: u64,
    /// When the retry of its job leaves its delay queue (in memory only): until then a queued
    /// step's job is not in its type's queue (`undelivered`).
    pub retry_due: Option<std::time::Instant>,
}

impl StepState {
    /// What the step's state machine (`aiden_domain::execution::machine`) works on.
    pub fn machine(&self) -> aiden_domain::execution::machine::Step {
        aiden_domain::execution::machine::Step {
            status: self.status,
            attempts: self.attempts,
            worker_id: self.worker_id.clone(),
            started_at: self.started_at.clone(),
            queued_at: self.queued_at.clone(),
            child_run_id: self.child_run_id.clone(),
        }
    }

    /// Takes the state the machine returned.
    pub fn set_machine(&mut self, s: aiden_domain::execution::machine::Step) {
        self.status = s.status;
        self.attempts = s.attempts;
        self.worker_id = s.worker_id;
        self.started_at = s.started_at;
        self.queued_at = s.queued_at;
        self.child_run_id = s.child_run_id;
    }
}

#[derive(Debug, Clone)]
pub struct RunState {
    pub id: String,
    pub owner_id: String,
    pub depth: i64,
    pub parent_run_id: Option<String>,
    pub parent_step_run_id: Option<String>,
    pub plan: Plan,
    pub status: RunStatus,
    pub steps: Vec<StepState>,
    pub variables: Map<String, Value>,
    pub event_seq: i64,
    /// The agent Alternative the run generates, if any.
    pub alternative_id: Option<String>,
    /// Agent steps' loops by step index, as last written to their step runs.
    pub loops: std::collections::BTreeMap<usize, Loop>,
    /// StepRuns listed at creation that the graph does not hold yet: the engine's first write
    /// of the run creates them (`runs::create` says why).
    pub unwritten_step_runs: Vec<aiden_graph::runs::NewStepRun>,
    /// AGT-14: the owner's daily money budget (micro-dollars) when the run started.
    pub owner_budget_micros: Option<u64>,
    /// The write version of the run's record as last committed (`RunRow::version`).
    pub version: i64,
    /// FORK-1: a fork's steps that may take their original's recorded result, by step id.
    pub reuse: BTreeMap<String, Reusable>,
}

impl RunState {
    pub fn statuses(&self) -> Vec<StepStatus> {
        self.steps.iter().map(|s| s.status).collect()
    }

    /// What the run's state machine (`aiden_domain::execution::machine::run`) reads.
    pub fn core(&self) -> aiden_domain::execution::machine::RunCore {
        aiden_domain::execution::machine::RunCore {
            id: self.id.clone(),
            status: self.status,
            process_id: self.plan.process_id.clone(),
            process_version: self.plan.version,
            depth: self.depth,
            has_parent: self.parent_run_id.is_some() && self.parent_step_run_id.is_some(),
            generates_alternative: self.alternative_id.is_some(),
        }
    }

    pub fn step_index(&self, step_run_id: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.id == step_run_id)
    }

    /// The run as its typed record holds it (`runs::get` decoded and checked every field);
    /// what is still JSON text (plan, inputs, outputs, loops, call specs) fails loudly too.
    pub fn from_row(row: &RunRow) -> Result<Self, String> {
        let r = &row.run;
        let id = r.id.clone();
        let json = |what: &str, field: &str, text: &str| -> Result<Value, String> {
            serde_json::from_str(text).map_err(|e| format!("{what}: field `{field}`: {e}"))
        };
        let mut plan: Plan =
            serde_json::from_str(&r.plan).map_err(|e| format!("run {id}: field `plan`: {e}"))?;
        let mut variables: Map<String, Value> = serde_json::from_str(&r.inputs)
            .map_err(|e| format!("run {id}: field `inputs`: {e}"))?;
        let mut steps = Vec::with_capacity(plan.steps.len());
        let mut loops = std::collections::BTreeMap::new();
        for (i, spec) in plan.steps.iter().enumerate() {
            let sr_id = step_run_id(&id, &spec.id);
            let row = row.steps.iter().find(|s| s.id == sr_id);
            let what = format!("step run {sr_id}");
            if let Some(text) = row.and_then(|s| s.agent.as_deref()) {
                let l: Loop = serde_json::from_str(text)
                    .map_err(|e| format!("{what}: field `agent`: {e}"))?;
                loops.insert(i, l);
            }
            // Listed at creation, not written yet (`unwritten_step_runs`): pending.
            let status = row.map_or(StepStatus::Pending, |s| s.status);
            if let Some(var) = &spec.output.variable {
                match status {
                    StepStatus::Completed => {
                        let out = match row.and_then(|s| s.output.as_deref()) {
                            Some(text) => json(&what, "output", text)?,
                            None => Value::Null,
                        };
                        variables.insert(var.clone(), out);
                    }
                    StepStatus::Skipped => {
                        variables.insert(var.clone(), Value::Null);
                    }
                    _ => {}
                }
            }
            steps.push(step_state(sr_id, status, row)?);
        }
        // An agent's calls: step runs created by its loop, each carrying its spec.
        let mut calls = Vec::new();
        for s in &row.steps {
            if let Some(text) = &s.call_spec {
                let spec: PlanStep = serde_json::from_str(text)
                    .map_err(|e| format!("step run {}: field `callSpec`: {e}", s.id))?;
                calls.push((s.order, spec, s));
            }
        }
        calls.sort_by_key(|c| c.0);
        for (_, spec, s) in calls {
            let sr_id = step_run_id(&id, &spec.id);
            steps.push(step_state(sr_id, s.status, Some(s))?);
            plan.steps.push(spec);
        }
        let reuse = match &r.reuse {
            Some(text) => {
                serde_json::from_str(text).map_err(|e| format!("run {id}: field `reuse`: {e}"))?
            }
            None => BTreeMap::new(),
        };
        let owner_budget_micros = r
            .owner_budget_micros
            .map(u64::try_from)
            .transpose()
            .map_err(|e| format!("run {id}: field `ownerBudgetMicros`: {e}"))?;
        Ok(Self {
            owner_id: r.owner_id.clone(),
            depth: r.depth,
            parent_run_id: r.parent_run_id.clone(),
            parent_step_run_id: r.parent_step_run_id.clone(),
            status: r.status,
            event_seq: r.event_seq,
            alternative_id: r.alternative_id.clone(),
            unwritten_step_runs: row.unwritten_step_runs().map_err(|e| e.to_string())?,
            owner_budget_micros,
            version: row.version(),
            reuse,
            loops,
            plan,
            steps,
            variables,
            id,
        })
    }
}

fn step_state(
    id: String,
    status: StepStatus,
    row: Option<&StepRunRecord>,
) -> Result<StepState, String> {
    let number = |field: &str, n: Option<i64>| {
        n.map(u64::try_from)
            .transpose()
            .map_err(|e| format!("step run {id}: field `{field}`: {e}"))
    };
    let attempts = number("attempts", row.map(|s| s.attempts))?.unwrap_or(0);
    let reserved_micros = number("reservedMicros", row.and_then(|s| s.reserved_micros))?;
    Ok(StepState {
        status,
        attempts: u32::try_from(attempts)
            .map_err(|e| format!("step run {id}: field `attempts`: {e}"))?,
        worker_id: row.and_then(|s| s.worker_id.clone()),
        started_at: row.and_then(|s| s.started_at.clone()),
        queued_at: row.and_then(|s| s.queued_at.clone()),
        child_run_id: row.and_then(|s| s.child_run_id.clone()),
        reserved_micros: reserved_micros.unwrap_or(0),
        retry_due: None,
        id,
    })
}

pub fn step_run_id(run_id: &str, step_id: &str) -> String {
    format!("{run_id}/{step_id}")
}

#[cfg(test)]
mod tests {
    use aiden_domain::execution::schedule::Target;
    use aiden_domain::process::{Mode, StepOutput};
    use serde_json::json;

    use super::*;

    /// Run `r1` of one step `a`, with these stored statuses (no `step`: its StepRun is not
    /// written yet).
    fn row(run: &str, step: Option<&str>) -> RunRow {
        let plan = Plan {
            process_id: "p".into(),
            version: 1,
            steps: vec![PlanStep {
                id: "a".into(),
                mode: Mode::Sequential,
                depends_on: Vec::new(),
                condition: None,
                inputs: Map::new(),
                output: StepOutput::default(),
                timeout_ms: 1000,
                target: Target::Tool {
                    id: "t".into(),
                    operation_type: aiden_domain::OperationType::RestApi,
                    cost: Default::default(),
                },
                call_of: None,
                literal: None,
            }],
            output_template: None,
            token_budget: None,
            max_recursion_depth: 3,
            quota: None,
        };
        let r = json!({"id": "r1", "processId": "p", "processVersion": 1, "versionId": "v",
                       "status": run, "depth": 1, "ownerId": "u", "inputs": "{}",
                       "plan": serde_json::to_string(&plan).unwrap(), "eventSeq": 0,
                       "version": 1, "createdAt": "t"});
        let steps: Vec<Value> = step
            .map(|s| {
                json!({"id": "r1/a", "runId": "r1", "stepId": "a", "status": s,
                       "attempts": 1, "order": 0, "runVersion": 1})
            })
            .into_iter()
            .collect();
        serde_json::from_value(json!({"run": r, "steps": steps})).unwrap()
    }

    #[test]
    fn a_stored_status_is_read_as_it_is() {
        let state = RunState::from_row(&row("running", Some("queued"))).unwrap();
        assert_eq!(state.status, RunStatus::Running);
        assert_eq!(state.steps[0].status, StepStatus::Queued);
        assert_eq!(state.steps[0].attempts, 1);
        // A StepRun not written yet is pending.
        let state = RunState::from_row(&row("queued", None)).unwrap();
        assert_eq!(state.steps[0].status, StepStatus::Pending);
    }

    #[test]
    fn json_text_that_does_not_parse_is_an_error_naming_record_and_field() {
        let mut r = row("running", Some("queued"));
        r.run.inputs = "{not json".into();
        let e = RunState::from_row(&r).unwrap_err();
        assert!(e.starts_with("run r1: field `inputs`"), "{e}");
        let mut r = row("running", Some("running"));
        r.steps[0].agent = Some("[".into());
        let e = RunState::from_row(&r).unwrap_err();
        assert!(e.starts_with("step run r1/a: field `agent`"), "{e}");
    }
}
