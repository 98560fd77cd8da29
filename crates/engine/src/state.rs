//! A run as the engine holds it in memory: rebuilt from the graph whenever it is not cached,
//! so a restart loses nothing.

use aiden_domain::execution::agent::Loop;
use aiden_domain::execution::schedule::{Plan, PlanStep, StepStatus, UnknownStatus};
use aiden_graph::runs::RunRow;
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

    pub fn from_row(row: &RunRow) -> Result<Self, String> {
        let r = &row.run;
        let text = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_owned);
        let id = text("id").ok_or("run without id")?;
        let mut plan: Plan = serde_json::from_str(&text("plan").ok_or("run without plan")?)
            .map_err(|e| format!("run {id}: plan: {e}"))?;
        let mut variables: Map<String, Value> = text("inputs")
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let mut steps = Vec::with_capacity(plan.steps.len());
        let mut loops = std::collections::BTreeMap::new();
        for (i, spec) in plan.steps.iter().enumerate() {
            let sr_id = step_run_id(&id, &spec.id);
            let row = row
                .steps
                .iter()
                .find(|s| s.get("id").and_then(Value::as_str) == Some(sr_id.as_str()));
            let get = |k: &str| row.and_then(|s| s.get(k));
            if let Some(l) = get("agent")
                .and_then(Value::as_str)
                .and_then(|t| serde_json::from_str::<Loop>(t).ok())
            {
                loops.insert(i, l);
            }
            let status = match row {
                // Listed at creation, not written yet (`unwritten_step_runs`): pending.
                None => StepStatus::Pending,
                Some(s) => stored(s, "step run", &sr_id, StepStatus::parse)?,
            };
            if let Some(var) = &spec.output.variable {
                match status {
                    StepStatus::Completed => {
                        let out = get("output")
                            .and_then(Value::as_str)
                            .and_then(|t| serde_json::from_str(t).ok())
                            .unwrap_or(Value::Null);
                        variables.insert(var.clone(), out);
                    }
                    StepStatus::Skipped => {
                        variables.insert(var.clone(), Value::Null);
                    }
                    _ => {}
                }
            }
            steps.push(step_state(sr_id, status, row));
        }
        // An agent's calls: step runs created by its loop, each carrying its spec.
        let mut calls: Vec<(i64, PlanStep, &Value)> = row
            .steps
            .iter()
            .filter_map(|s| {
                let spec: PlanStep = serde_json::from_str(s.get("callSpec")?.as_str()?).ok()?;
                Some((s.get("order").and_then(Value::as_i64).unwrap_or(0), spec, s))
            })
            .collect();
        calls.sort_by_key(|c| c.0);
        for (_, spec, s) in calls {
            let sr_id = step_run_id(&id, &spec.id);
            let status = stored(s, "step run", &sr_id, StepStatus::parse)?;
            steps.push(step_state(sr_id, status, Some(s)));
            plan.steps.push(spec);
        }
        let status = stored(r, "run", &id, RunStatus::parse)?;
        Ok(Self {
            owner_id: text("ownerId").unwrap_or_default(),
            depth: r.get("depth").and_then(Value::as_i64).unwrap_or(1),
            parent_run_id: text("parentRunId"),
            parent_step_run_id: text("parentStepRunId"),
            status,
            event_seq: r.get("eventSeq").and_then(Value::as_i64).unwrap_or(0),
            alternative_id: text("alternativeId"),
            unwritten_step_runs: row.unwritten_step_runs(),
            owner_budget_micros: r.get("ownerBudgetMicros").and_then(Value::as_u64),
            version: row.version(),
            loops,
            plan,
            steps,
            variables,
            id,
        })
    }
}

/// A record's stored `status`: missing or a word its lifecycle does not know is an error that
/// names the record and the field, never a default (an unknown run status read as `queued`
/// once made the engine start the run).
fn stored<T>(
    record: &Value,
    what: &str,
    id: &str,
    parse: impl Fn(&str) -> Result<T, UnknownStatus>,
) -> Result<T, String> {
    let word = record
        .get("status")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{what} {id}: field `status` missing"))?;
    parse(word).map_err(|e| format!("{what} {id}: field `status`: {e}"))
}

fn step_state(id: String, status: StepStatus, row: Option<&Value>) -> StepState {
    let get = |k: &str| row.and_then(|s| s.get(k));
    StepState {
        id,
        status,
        attempts: get("attempts").and_then(Value::as_u64).unwrap_or(0) as u32,
        worker_id: get("workerId").and_then(Value::as_str).map(str::to_owned),
        started_at: get("startedAt").and_then(Value::as_str).map(str::to_owned),
        queued_at: get("queuedAt").and_then(Value::as_str).map(str::to_owned),
        child_run_id: get("childRunId").and_then(Value::as_str).map(str::to_owned),
        reserved_micros: get("reservedMicros").and_then(Value::as_u64).unwrap_or(0),
    }
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

    /// Run `r1` of one step `a`, with these stored statuses (`None`: the field is absent, no
    /// `step`: its StepRun is not written yet).
    fn row(run: Option<&str>, step: Option<Option<&str>>) -> RunRow {
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
        let mut r = json!({"id": "r1", "plan": serde_json::to_string(&plan).unwrap()});
        if let Some(s) = run {
            r["status"] = json!(s);
        }
        let steps: Vec<Value> = step
            .map(|s| {
                let mut sr = json!({"id": "r1/a"});
                if let Some(s) = s {
                    sr["status"] = json!(s);
                }
                sr
            })
            .into_iter()
            .collect();
        serde_json::from_value(json!({"run": r, "steps": steps})).unwrap()
    }

    #[test]
    fn a_stored_status_is_read_as_it_is() {
        let state = RunState::from_row(&row(Some("running"), Some(Some("queued")))).unwrap();
        assert_eq!(state.status, RunStatus::Running);
        assert_eq!(state.steps[0].status, StepStatus::Queued);
        // A StepRun not written yet is pending.
        let state = RunState::from_row(&row(Some("queued"), None)).unwrap();
        assert_eq!(state.steps[0].status, StepStatus::Pending);
    }

    #[test]
    fn an_unknown_or_missing_status_is_an_error_naming_record_and_field() {
        let e = RunState::from_row(&row(Some("paused"), None)).unwrap_err();
        assert_eq!(e, "run r1: field `status`: unknown run status `paused`");
        let e = RunState::from_row(&row(None, None)).unwrap_err();
        assert_eq!(e, "run r1: field `status` missing");
        let e = RunState::from_row(&row(Some("running"), Some(Some("bogus")))).unwrap_err();
        assert_eq!(
            e,
            "step run r1/a: field `status`: unknown step status `bogus`"
        );
        let e = RunState::from_row(&row(Some("running"), Some(None))).unwrap_err();
        assert_eq!(e, "step run r1/a: field `status` missing");
    }
}
