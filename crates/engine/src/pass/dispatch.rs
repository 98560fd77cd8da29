//! Starting a step the schedule decided to run: a Tool step's job, a called Process's child run,
//! or an agent's loop with the tools the gate sees now.

use aiden_domain::execution::fork;
use aiden_domain::execution::interpolate::render_tree;
use aiden_domain::execution::machine::Message;
use aiden_domain::execution::schedule::{referenced_variables, StepStatus, Target};
use aiden_domain::process::PROCESS_MAX_TIMEOUT_MS;
use aiden_graph::runs::{NewRun, NewStepRun};
use aiden_jobs::{ErrorInfo, Job, JOB_VERSION};
use serde_json::Value;

use super::{obj, Pass};
use crate::plan;
use crate::state::{step_run_id, RunState, RunStatus, StepState};

impl Pass<'_> {
    pub(super) async fn dispatch(
        &mut self,
        run_id: &str,
        i: usize,
    ) -> Result<(), aiden_graph::Error> {
        let run = self.run(run_id).clone();
        let spec = &run.plan.steps[i];
        // FORK-1: a fork's step whose input is the one its original ran with takes the
        // original's recorded output; its Tool (agent, child Process) is not called.
        if let Some(r) = fork::reuse_for(spec, &run.variables, &run.reuse) {
            let reuse = Message::Reuse {
                from: &r.step_run_id,
                input_hash: &r.input_hash,
                output: &r.output,
            };
            self.transition(run_id, i, reuse);
            return Ok(());
        }
        match &spec.target {
            Target::Tool { .. } => {
                if let Err(message) = self.charge_dispatch(run_id, i) {
                    let error = ErrorInfo::new("BUDGET_EXCEEDED", message);
                    self.fail_step_now(run_id, i, error);
                    return Ok(());
                }
                // Written when it settles: a step recorded `pending` whose inputs are ready is
                // dispatched again by a recovery, as a `queued` one was re-published.
                self.transition(run_id, i, Message::Dispatch);
            }
            Target::Process { id } => self.start_child(&run, i, id).await?,
            Target::Agent { tools, .. } => {
                // The gate decides on the tools as they are now (a tool disabled since the
                // plan was cached is not offered), not as the plan captured them.
                let ids: Vec<aiden_domain::Id> = tools
                    .iter()
                    .filter_map(|t| aiden_domain::Id::parse(&t.id).ok())
                    .collect();
                let planned = |id: &aiden_domain::Id| {
                    let t = tools.iter().find(|t| t.id == id.as_str());
                    t.and_then(|t| t.capability.clone())
                };
                let mut fresh = match plan::agent_tools(self.tx().await?, &ids, &planned).await {
                    Ok(fresh) => fresh,
                    Err(plan::LoadError::Graph(e)) => return Err(e),
                    Err(_) => tools.clone(),
                };
                plan::mark_connected(self.tx().await?, &mut fresh, &run.owner_id).await?;
                self.start_agent(run_id, i, fresh)
            }
        }
        Ok(())
    }

    pub(super) fn job_for(&self, run: &RunState, i: usize) -> Option<Job> {
        let spec = &run.plan.steps[i];
        let Target::Tool {
            id, operation_type, ..
        } = &spec.target
        else {
            return None;
        };
        Some(Job {
            v: JOB_VERSION,
            run_id: run.id.clone(),
            step_id: spec.id.clone(),
            step_run_id: run.steps[i].id.clone(),
            operation_type: *operation_type,
            attempt: run.steps[i].attempts + 1,
            max_attempts: self.policy.max_attempts,
            tool_id: id.clone(),
            owner_id: run.owner_id.clone(),
            inputs: spec.inputs.clone(),
            variables: referenced_variables(spec, &run.variables),
            timeout_ms: spec.timeout_ms,
            deadline_ms: self.now_ms + PROCESS_MAX_TIMEOUT_MS as i64,
            redispatch: false,
            traceparent: Some(aiden_jobs::trace::run_traceparent(&run.id)),
            literal_input: spec.literal.clone(),
            agent_turn: spec.call_of.is_some()
                && aiden_domain::execution::agent::CallKind::of(&spec.id)
                    .is_some_and(aiden_domain::execution::agent::CallKind::asks_model),
            hops: None,
        })
    }

    async fn start_child(
        &mut self,
        run: &RunState,
        i: usize,
        process_id: &str,
    ) -> Result<(), aiden_graph::Error> {
        let spec = &run.plan.steps[i];
        let sr_id = run.steps[i].id.clone();
        let fail = |code: &str, message: String| ErrorInfo::new(code, message);
        let depth = run.depth + 1;
        let child = if depth > i64::from(run.plan.max_recursion_depth) {
            Err(fail(
                "PROC-7",
                format!(
                    "calling `{process_id}` would run at depth {depth}, past maxRecursionDepth {}",
                    run.plan.max_recursion_depth
                ),
            ))
        } else {
            match plan::load(self.tx().await?, process_id).await {
                Ok(l) if !l.enabled => Err(fail(
                    "PROC-8",
                    format!("process `{process_id}` is disabled"),
                )),
                Ok(l) if l.owner_id != run.owner_id && !l.shared => Err(fail(
                    "TOOL-3",
                    format!("process `{process_id}` is not visible to the run's owner"),
                )),
                Ok(l) => match render_tree(
                    &Value::Object(spec.inputs.clone()),
                    &Value::Object(run.variables.clone()),
                ) {
                    Ok(inputs) => Ok((l, inputs)),
                    Err(e) => Err(fail("INTERPOLATION_ERROR", e.to_string())),
                },
                Err(plan::LoadError::Graph(e)) => return Err(e),
                Err(e) => Err(fail("NOT_RUNNABLE", format!("process `{process_id}`: {e}"))),
            }
        };
        let (loaded, inputs) = match child {
            Ok(ok) => ok,
            Err(error) => {
                self.fail_step_now(&run.id, i, error);
                return Ok(());
            }
        };
        let child_id = uuid::Uuid::now_v7().to_string();
        let started = Message::StartChild {
            child_run_id: &child_id,
        };
        if !self.transition(&run.id, i, started) {
            return Ok(());
        }
        // PROC-7: the caller's limit bounds the whole chain below it, not just one call.
        let mut loaded = loaded;
        loaded.plan.max_recursion_depth = loaded
            .plan
            .max_recursion_depth
            .min(run.plan.max_recursion_depth);
        let new_run = NewRun {
            id: child_id.clone(),
            process_id: process_id.to_owned(),
            number: loaded.plan.version,
            version_id: loaded.version_id.clone(),
            depth,
            parent_run_id: Some(run.id.clone()),
            parent_step_run_id: Some(sr_id.clone()),
            owner_id: run.owner_id.clone(),
            inputs: inputs.to_string(),
            plan: serde_json::to_string(&loaded.plan).unwrap_or_default(),
            steps: loaded
                .steps
                .iter()
                .enumerate()
                .map(|(order, (step_id, ps))| NewStepRun {
                    id: step_run_id(&child_id, step_id),
                    step_id: step_id.clone(),
                    process_step_id: ps.clone(),
                    order: order as i64,
                })
                .collect(),
            alternative_id: None,
            expected_process_revision: None,
            trigger: None,
            owner_budget_micros: run.owner_budget_micros.map(|m| m as i64),
            fork: None,
        };
        let state = RunState {
            id: child_id.clone(),
            owner_id: run.owner_id.clone(),
            depth,
            parent_run_id: Some(run.id.clone()),
            parent_step_run_id: Some(sr_id.clone()),
            steps: new_run
                .steps
                .iter()
                .map(|s| StepState {
                    reserved_micros: 0,
                    id: s.id.clone(),
                    status: StepStatus::Pending,
                    attempts: 0,
                    worker_id: None,
                    started_at: None,
                    queued_at: None,
                    child_run_id: None,
                    retry_due: None,
                })
                .collect(),
            variables: obj(inputs),
            plan: loaded.plan,
            status: RunStatus::Queued,
            event_seq: 0,
            alternative_id: None,
            loops: Default::default(),
            unwritten_step_runs: new_run.steps.clone(),
            version: 0,
            reuse: Default::default(),
            owner_budget_micros: run.owner_budget_micros,
        };
        self.new_runs.push(new_run);
        self.remember(&child_id);
        self.runs.insert(child_id.clone(), state);
        self.start(&child_id);
        Ok(())
    }
}
