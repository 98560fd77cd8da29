//! One engine pass: a batch of messages applied to the in-memory runs inside one graph
//! transaction. The pass records every state change as rows of one [`Batch`] plus the jobs to
//! publish after commit; the caller commits, publishes, then acks the messages.

use std::collections::{BTreeMap, HashMap, VecDeque};

use aiden_domain::execution::interpolate::render_tree;
use aiden_domain::execution::machine::{
    self, Call, Effect, Message, Outcome, RunEffect, RunMessage,
};
use aiden_domain::execution::schedule::{
    accept_output, advance, referenced_variables, Decision, StepStatus, Target,
};
use aiden_domain::process::PROCESS_MAX_TIMEOUT_MS;
use aiden_graph::runs::{self, Batch, NewRun, NewStepRun};
use aiden_graph::{Graph, Tx};
use aiden_jobs::{EngineMessage, ErrorInfo, Job, RetryPolicy, StepOutcome, JOB_VERSION};
use serde_json::{json, Map, Value};

use crate::plan;
use crate::state::{step_run_id, RunState, RunStatus, StepState};

mod agent;
mod money;

type Runs = HashMap<String, RunState>;

/// A settled child run reporting to its parent step.
struct ChildResult {
    parent_run_id: String,
    parent_step_run_id: String,
    /// The child's output, or the error (JSON) its parent step fails with.
    outcome: Result<Value, Value>,
}

pub struct Pass<'a> {
    graph: Graph,
    /// Begun on the first read or write; the caller commits it.
    tx: Option<Tx>,
    runs: &'a mut Runs,
    policy: RetryPolicy,
    now: String,
    now_ms: i64,
    step_sets: BTreeMap<String, Map<String, Value>>,
    run_sets: BTreeMap<String, Map<String, Value>>,
    /// Per run: its new events, in order.
    events: BTreeMap<String, Vec<runs::EventRow>>,
    /// Per step run: the workers that ran it and its new audit records.
    workers: BTreeMap<String, Vec<Value>>,
    audits: BTreeMap<String, Vec<Value>>,
    /// Per step run: its attempts that failed and were retried, `{at, durationMs, log}`.
    retries: BTreeMap<String, Vec<Value>>,
    /// Step runs of static steps that ran on another Tool than the step names (the caller's
    /// own Tool of its template): `{stepRunId, toolId}`, for their `INVOKES_TOOL` edge.
    invokes: Vec<Value>,
    /// Per step run: the attempts whose worker went silent (`LOST_ON`).
    lost: BTreeMap<String, Vec<Value>>,
    /// Agent calls decided in this pass: new StepRun nodes (`run/create_calls.cypher`).
    new_calls: Vec<Value>,
    /// Memory an agent's answer proposed (AGT-13): proposed Entities.
    proposals: Vec<Value>,
    /// SRCH-4: memories agent steps routed to a `memory: write` intent keep.
    memories: Vec<aiden_graph::memory::NewMemoryRecord>,
    pub new_runs: Vec<NewRun>,
    /// Runs handed to this pass to create (`Batch::new_runs`): the engine's door (issue #10).
    handed: Vec<Value>,
    pub jobs: Vec<Job>,
    pub cancels: Vec<String>,
    /// Runs started in this pass (linked to their definitions by the batch statement).
    links: Vec<String>,
    /// Per run: the events `write` sent to the graph, for live streams once committed.
    pub written_events: Vec<crate::Committed>,
    to_advance: VecDeque<String>,
    child_results: VecDeque<ChildResult>,
    /// Built-in measurements of this pass, kept by the engine once it commits (issue #12).
    pub rollup: crate::rollup::Rollup,
    /// Each run this pass used, as it was before (`None`: not cached then). A commit that
    /// fails puts these back, so the retry needs no read of the runs (issue #10).
    saved: HashMap<String, Option<RunState>>,
    /// AGT-14: the prices and the day's spend windows as committed before this pass.
    ledger: &'a crate::spend::Ledger,
    /// What this pass charged to spend windows (the ledger takes it once committed).
    pub charges: crate::spend::Charges,
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

impl<'a> Pass<'a> {
    pub fn new(
        graph: Graph,
        runs: &'a mut Runs,
        policy: RetryPolicy,
        ledger: &'a crate::spend::Ledger,
    ) -> Self {
        let now = chrono::Utc::now();
        Self {
            graph,
            tx: None,
            runs,
            policy,
            now: now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            now_ms: now.timestamp_millis(),
            step_sets: BTreeMap::new(),
            run_sets: BTreeMap::new(),
            events: BTreeMap::new(),
            workers: BTreeMap::new(),
            audits: BTreeMap::new(),
            retries: BTreeMap::new(),
            invokes: Vec::new(),
            lost: BTreeMap::new(),
            new_calls: Vec::new(),
            proposals: Vec::new(),
            memories: Vec::new(),
            new_runs: Vec::new(),
            handed: Vec::new(),
            jobs: Vec::new(),
            cancels: Vec::new(),
            links: Vec::new(),
            written_events: Vec::new(),
            to_advance: VecDeque::new(),
            child_results: VecDeque::new(),
            rollup: Default::default(),
            saved: HashMap::new(),
            ledger,
            charges: Default::default(),
        }
    }

    /// Keeps `run_id` as it is now, the first time this pass uses it.
    fn remember(&mut self, run_id: &str) {
        if !self.saved.contains_key(run_id) {
            let before = self.runs.get(run_id).cloned();
            self.saved.insert(run_id.to_owned(), before);
        }
    }

    /// The runs as they were before this pass (for a failed commit to put back).
    pub fn take_saved(&mut self) -> HashMap<String, Option<RunState>> {
        std::mem::take(&mut self.saved)
    }

    /// The run ids this pass changed (to evict on a failed commit, and to notify on success).
    pub fn touched(&self) -> Vec<String> {
        self.run_sets.keys().cloned().collect()
    }

    /// Loads a run into memory if it is not there. `false` if it does not exist.
    async fn ensure(&mut self, run_id: &str) -> Result<bool, aiden_graph::Error> {
        self.remember(run_id);
        if self.runs.contains_key(run_id) {
            return Ok(true);
        }
        let Some(row) = runs::get(self.tx().await?, run_id).await? else {
            return Ok(false);
        };
        match RunState::from_row(&row) {
            Ok(state) => {
                self.runs.insert(run_id.to_owned(), state);
                Ok(true)
            }
            Err(e) => {
                tracing::error!(run_id, error = %e, "cannot rebuild run");
                Ok(false)
            }
        }
    }

    /// Takes a just-created run from its start message instead of reading it back. The
    /// caller strips the snapshot from redeliveries and from runs it saw settle.
    fn adopt_created(&mut self, run_id: &str, created: &Value) {
        if self.runs.contains_key(run_id) {
            return;
        }
        self.remember(run_id);
        let state = serde_json::from_value::<runs::RunRow>(created.clone())
            .map_err(|e| e.to_string())
            .and_then(|row| RunState::from_row(&row));
        match state {
            Ok(state) if state.id == run_id && state.status == RunStatus::Queued => {
                self.runs.insert(run_id.to_owned(), state);
            }
            Ok(_) => tracing::warn!(run_id, "start snapshot does not match its run; reading it"),
            Err(e) => tracing::warn!(run_id, error = %e, "start snapshot unreadable; reading it"),
        }
    }

    fn run(&mut self, run_id: &str) -> &mut RunState {
        self.runs.get_mut(run_id).expect("run ensured")
    }

    fn set_run(&mut self, run_id: &str, props: Value) {
        self.run_sets
            .entry(run_id.to_owned())
            .or_default()
            .extend(obj(props));
    }

    fn set_step(&mut self, step_run_id: &str, props: Value) {
        self.step_sets
            .entry(step_run_id.to_owned())
            .or_default()
            .extend(obj(props));
    }

    fn ran_on(&mut self, step_run_id: &str, worker_id: &str) {
        let list = self.workers.entry(step_run_id.to_owned()).or_default();
        if !worker_id.is_empty() && !list.iter().any(|w| w == worker_id) {
            list.push(json!(worker_id));
        }
    }

    fn event(&mut self, run_id: &str, kind: &str, step_id: Option<&str>, data: Value) {
        let seq = {
            let run = self.run(run_id);
            run.event_seq += 1;
            run.event_seq
        };
        self.events
            .entry(run_id.to_owned())
            .or_default()
            .push(runs::EventRow {
                seq,
                kind: kind.to_owned(),
                step_id: step_id.map(str::to_owned),
                at: self.now.clone(),
                data: Some(data.to_string()),
            });
        self.set_run(run_id, json!({"eventSeq": seq}));
    }

    pub async fn handle(&mut self, message: EngineMessage) -> Result<(), aiden_graph::Error> {
        let run_id = message.run_id().to_owned();
        if let EngineMessage::RunStart {
            created: Some(created),
            ..
        } = &message
        {
            self.adopt_created(&run_id, created);
        }
        if !self.ensure(&run_id).await? {
            tracing::warn!(run_id, "message for an unknown run dropped");
            return Ok(());
        }
        match message {
            EngineMessage::RunStart { .. } => self.start(&run_id),
            EngineMessage::RunCancel { .. } => self.cancel(&run_id),
            EngineMessage::RunApproval {
                capability,
                grant,
                expires_ms,
                ..
            } => self.decide(
                &run_id,
                aiden_domain::execution::agent::Decision {
                    capability,
                    grant,
                    expires_ms,
                },
            ),
            EngineMessage::StepStarted {
                step_run_id,
                attempt,
                worker_id,
                at,
                ..
            } => self.step_started(&run_id, &step_run_id, attempt, &worker_id, &at),
            EngineMessage::StepFinished {
                step_run_id,
                attempt,
                worker_id,
                started_at,
                finished_at,
                outcome,
                telemetry,
                input_hash,
                ..
            } => {
                let call = Call {
                    attempt,
                    worker_id,
                    started_at,
                    finished_at,
                    telemetry: obj(telemetry),
                    input_hash,
                };
                self.step_finished(&run_id, &step_run_id, call, outcome);
            }
        }
        self.drain().await
    }

    /// Creates and starts a run handed over by this process's API: its Run node is written
    /// with the pass (`write` answers whether it was). `false` if its snapshot is unusable.
    pub async fn start_handed(&mut self, run: &NewRun) -> Result<bool, aiden_graph::Error> {
        let state = match RunState::from_row(&run.created_row(&self.now)) {
            Ok(state) => state,
            Err(e) => {
                tracing::error!(run_id = %run.id, error = %e, "handed run unusable");
                return Ok(false);
            }
        };
        self.remember(&run.id);
        self.runs.insert(run.id.clone(), state);
        self.handed.push(run.batch_row(&self.now));
        self.start(&run.id);
        self.drain().await?;
        Ok(true)
    }

    /// Runs a recovery pass for a run: starts it if queued, re-publishes the jobs of steps
    /// recorded `queued` (the worker checks the graph before running a re-dispatched job).
    pub async fn recover(&mut self, run_id: &str) -> Result<(), aiden_graph::Error> {
        if !self.ensure(run_id).await? {
            return Ok(());
        }
        let run = self.run(run_id).clone();
        match run.status {
            RunStatus::Queued => self.start(run_id),
            RunStatus::Running | RunStatus::WaitingForApproval => {
                for (i, step) in run.steps.iter().enumerate() {
                    if step.status == StepStatus::Queued {
                        if let Some(mut job) = self.job_for(&run, i) {
                            job.redispatch = true;
                            self.jobs.push(job);
                        }
                    }
                }
                self.to_advance.push_back(run_id.to_owned());
            }
            _ => {}
        }
        self.drain().await
    }

    /// Re-publishes the job of a step whose worker went silent (heartbeat lost).
    pub async fn redispatch_step(
        &mut self,
        run_id: &str,
        step_run_id: &str,
    ) -> Result<(), aiden_graph::Error> {
        if !self.ensure(run_id).await? {
            return Ok(());
        }
        let run = self.run(run_id);
        let Some(i) = run.step_index(step_run_id) else {
            return Ok(());
        };
        if run.status.is_settled() || run.steps[i].status.is_settled() {
            return Ok(());
        }
        // Only a worker's step (a Tool's) has a job to publish again.
        if matches!(run.plan.steps[i].target, Target::Tool { .. }) {
            self.transition(run_id, i, Message::WorkerLost);
        }
        Ok(())
    }

    fn start(&mut self, run_id: &str) {
        self.run_transition(run_id, RunMessage::Start);
    }

    fn cancel(&mut self, run_id: &str) {
        if self.run(run_id).status.is_settled() {
            return;
        }
        self.stop_run(
            run_id,
            RunStatus::Canceled,
            None,
            Some(ErrorInfo::new("CANCELED", "the run was canceled")),
        );
    }

    fn step_started(&mut self, run_id: &str, sr_id: &str, attempt: u32, worker: &str, at: &str) {
        let run = self.run(run_id);
        let Some(i) = run.step_index(sr_id) else {
            return;
        };
        if run.status.is_settled() {
            return; // a late notice
        }
        let started = Message::Started {
            attempt,
            worker_id: worker,
            at,
        };
        self.transition(run_id, i, started);
    }

    fn step_finished(&mut self, run_id: &str, sr_id: &str, call: Call, outcome: StepOutcome) {
        let run = self.run(run_id);
        let Some(i) = run.step_index(sr_id) else {
            return;
        };
        if run.steps[i].status.is_settled() || run.status.is_settled() {
            // EXEC-2: a duplicate or late result never records a second result.
            tracing::debug!(sr_id, "result for a settled step ignored");
            return;
        }
        let tool_id = match &run.plan.steps[i].target {
            Target::Tool { id, .. } => id.clone(),
            Target::Process { id } => id.clone(),
            Target::Agent { model, .. } => model.clone(),
        };
        let is_static = run.plan.steps[i].call_of.is_none();
        let process_id = run.plan.process_id.clone();
        let alternative_id = run.alternative_id.clone();
        let latency = call
            .telemetry
            .get("latencyMs")
            .cloned()
            .unwrap_or(Value::Null);
        let audit_status = match &outcome {
            StepOutcome::Completed { .. } => "completed",
            StepOutcome::Retrying { .. } => "retrying",
            StepOutcome::Failed { .. } => "failed",
        };
        // The StepRun is the audit record of its tool calls (who: the run's owner; the Tool:
        // its step's, or the one that ran, `INVOKES_TOOL`).
        let ran = call.telemetry.get("ranToolId").and_then(Value::as_str);
        if let Some(ran) = ran.filter(|r| is_static && *r != tool_id && audit_status != "retrying")
        {
            self.invokes
                .push(json!({"stepRunId": sr_id, "toolId": ran}));
        }
        self.rollup.step(&tool_id, audit_status, latency.as_f64());
        let tokens = call
            .telemetry
            .get("tokenUsage")
            .and_then(|u| u.get("totalTokens"))
            .and_then(Value::as_u64);
        self.rollup
            .tokens(&process_id, alternative_id.as_deref(), tokens.unwrap_or(0));
        let mut call = call;
        if !matches!(outcome, StepOutcome::Retrying { .. }) {
            let completed = matches!(outcome, StepOutcome::Completed { .. });
            self.settle_cost(run_id, i, &mut call.telemetry, completed);
        }
        let run = self.run(run_id);
        let outcome = match outcome {
            StepOutcome::Completed { output } => {
                match accept_output(&run.plan, i, output, &run.variables) {
                    Ok((output, truncated)) => Outcome::Completed { output, truncated },
                    Err(f) => Outcome::Failed {
                        error: error_value(&ErrorInfo::new(f.code, f.message)),
                    },
                }
            }
            StepOutcome::Retrying {
                error,
                next_attempt,
                delay_ms,
            } => Outcome::Retrying {
                error: error_value(&error),
                next_attempt,
                delay_ms,
            },
            StepOutcome::Failed { error } => Outcome::Failed {
                error: error_value(&error),
            },
        };
        self.finish(run_id, i, &call, outcome);
    }

    /// An attempt of step `i` ended (or the engine ended the step itself).
    fn finish(&mut self, run_id: &str, i: usize, call: &Call, outcome: Outcome) {
        self.transition(run_id, i, Message::Finished { call, outcome });
    }

    /// Runs step `i` of `run_id` through the state machine (`aiden_domain::execution::
    /// machine`) and executes what it decided, in order.
    fn transition(&mut self, run_id: &str, i: usize, message: Message<'_>) {
        let (sr_id, step_id, before) = {
            let run = self.run(run_id);
            let step = &run.steps[i];
            (
                step.id.clone(),
                run.plan.steps[i].id.clone(),
                step.machine(),
            )
        };
        let (after, effects) = machine::step(before, message, &self.now);
        self.run(run_id).steps[i].set_machine(after);
        let mut telemetry = Map::new();
        for effect in effects {
            match effect {
                Effect::Write(patch) => {
                    if let Some(t) = &patch.telemetry {
                        telemetry = t.clone();
                    }
                    self.set_step(&sr_id, Value::Object(patch.to_set()));
                }
                Effect::Retried(r) => self.retries.entry(sr_id.clone()).or_default().push(
                    json!({"at": r.at, "durationMs": r.duration_ms, "log": r.record.to_string()}),
                ),
                Effect::Event(kind, data) => {
                    self.event(run_id, kind.as_str(), Some(&step_id), data)
                }
                Effect::RanOn(worker) => self.ran_on(&sr_id, &worker),
                Effect::LostOn { worker_id, attempt } => {
                    let at = self.now.clone();
                    self.lost
                        .entry(sr_id.clone())
                        .or_default()
                        .push(json!({"workerId": worker_id, "attempt": attempt, "at": at}));
                }
                Effect::Publish { redispatch } => {
                    let job = self.runs.get(run_id).and_then(|run| self.job_for(run, i));
                    if let Some(mut job) = job {
                        job.redispatch = redispatch;
                        self.jobs.push(job);
                    }
                }
                Effect::Settled(result) => {
                    let usage = match &result {
                        Ok(value) => {
                            let run = self.run(run_id);
                            if let Some(var) = run.plan.steps[i].output.variable.clone() {
                                run.variables.insert(var, value.clone());
                            }
                            agent::Usage::of(&telemetry)
                        }
                        Err(_) => agent::Usage::default(),
                    };
                    self.to_advance.push_back(run_id.to_owned());
                    self.call_settled(run_id, i, result, usage);
                }
            }
        }
    }

    /// Completes step `i` with a result no worker reported (an agent's answer).
    fn complete_step(
        &mut self,
        run_id: &str,
        i: usize,
        value: Value,
        telemetry: Map<String, Value>,
    ) {
        let call = Call {
            telemetry,
            ..Call::internal(&self.now)
        };
        let outcome = Outcome::Completed {
            output: value,
            truncated: false,
        };
        self.finish(run_id, i, &call, outcome);
    }

    /// Fails step `i` for a reason the engine found itself (no worker attempt behind it).
    fn fail_step_now(&mut self, run_id: &str, i: usize, error: ErrorInfo) {
        let call = Call::internal(&self.now);
        let outcome = Outcome::Failed {
            error: error_value(&error),
        };
        self.finish(run_id, i, &call, outcome);
    }

    /// Applies queued advances and child results until nothing more can happen now.
    async fn drain(&mut self) -> Result<(), aiden_graph::Error> {
        loop {
            if let Some(child) = self.child_results.pop_front() {
                self.apply_child_result(child).await?;
                continue;
            }
            let Some(run_id) = self.to_advance.pop_front() else {
                return Ok(());
            };
            self.advance_run(&run_id).await?;
        }
    }

    async fn apply_child_result(&mut self, child: ChildResult) -> Result<(), aiden_graph::Error> {
        if !self.ensure(&child.parent_run_id).await? {
            return Ok(());
        }
        let run_id = child.parent_run_id;
        let Some(i) = self.run(&run_id).step_index(&child.parent_step_run_id) else {
            return Ok(());
        };
        let run = self.run(&run_id);
        if run.steps[i].status.is_settled() || run.status.is_settled() {
            return Ok(());
        }
        let outcome = match child.outcome {
            Ok(output) => match accept_output(&run.plan, i, output, &run.variables) {
                Ok((output, truncated)) => Outcome::Completed { output, truncated },
                Err(f) => Outcome::Failed {
                    error: error_value(&ErrorInfo::new(f.code, f.message)),
                },
            },
            Err(error) => Outcome::Failed { error },
        };
        let call = Call::internal(&self.now);
        self.finish(&run_id, i, &call, outcome);
        Ok(())
    }

    async fn advance_run(&mut self, run_id: &str) -> Result<(), aiden_graph::Error> {
        if !self.run(run_id).status.is_active() {
            return Ok(());
        }
        let decisions = {
            let run = self.run(run_id);
            let mut statuses = run.statuses();
            let mut vars = std::mem::take(&mut run.variables);
            let d = advance(&run.plan, &mut statuses, &mut vars);
            run.variables = vars;
            d
        };
        for decision in decisions {
            match decision {
                Decision::Dispatch(i) => self.dispatch(run_id, i).await?,
                Decision::Skip(i) => self.transition(run_id, i, Message::Skip),
                Decision::FailStep(i, f) => {
                    let error = error_value(&ErrorInfo::new(f.code, f.message));
                    self.transition(run_id, i, Message::Fail { error });
                }
                Decision::Complete(output) => {
                    self.stop_run(run_id, RunStatus::Completed, Some(output), None);
                }
                Decision::FailRun(f) => {
                    let error = self
                        .first_step_error(run_id)
                        .unwrap_or(ErrorInfo::new(f.code, f.message));
                    self.stop_run(run_id, RunStatus::Failed, None, Some(error));
                }
            }
        }
        Ok(())
    }

    /// The failing step's own error, so a run's error says what actually went wrong.
    fn first_step_error(&self, run_id: &str) -> Option<ErrorInfo> {
        let run = self.runs.get(run_id)?;
        let i = run
            .steps
            .iter()
            .position(|s| s.status == StepStatus::Failed)?;
        let set = self.step_sets.get(&run.steps[i].id)?;
        let text = set.get("error")?.as_str()?;
        let inner: ErrorInfo = serde_json::from_str(text).ok()?;
        Some(ErrorInfo::new(
            &inner.code,
            format!("step `{}`: {}", run.plan.steps[i].id, inner.message),
        ))
    }

    async fn dispatch(&mut self, run_id: &str, i: usize) -> Result<(), aiden_graph::Error> {
        let run = self.run(run_id).clone();
        let spec = &run.plan.steps[i];
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

    fn job_for(&self, run: &RunState, i: usize) -> Option<Job> {
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
        self.run(&run.id).steps[i].status = StepStatus::Running;
        let (loaded, inputs) = match child {
            Ok(ok) => ok,
            Err(error) => {
                self.fail_step_now(&run.id, i, error);
                return Ok(());
            }
        };
        let child_id = uuid::Uuid::now_v7().to_string();
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
                })
                .collect(),
            variables: obj(inputs),
            plan: loaded.plan,
            status: RunStatus::Queued,
            event_seq: 0,
            alternative_id: None,
            loops: Default::default(),
            unwritten_step_runs: new_run.steps.clone(),
            owner_budget_micros: run.owner_budget_micros,
        };
        self.new_runs.push(new_run);
        self.remember(&child_id);
        self.runs.insert(child_id.clone(), state);
        self.run(&run.id).steps[i].child_run_id = Some(child_id.clone());
        self.run(&run.id).steps[i].started_at = Some(self.now.clone());
        self.set_step(
            &sr_id,
            json!({"status": "running", "attempts": 1, "startedAt": self.now, "childRunId": child_id}),
        );
        self.event(
            &run.id,
            "step.started",
            Some(&spec.id),
            json!({"childRunId": child_id}),
        );
        self.start(&child_id);
        Ok(())
    }

    /// Settles a run: unstarted steps are canceled, children are canceled, a parent step hears.
    fn stop_run(
        &mut self,
        run_id: &str,
        status: RunStatus,
        output: Option<Value>,
        error: Option<ErrorInfo>,
    ) {
        let error = error.as_ref().map(error_value);
        let settle = RunMessage::Settle {
            status,
            output,
            error,
        };
        self.run_transition(run_id, settle);
    }

    /// Runs `run_id` through the run state machine and executes what it decided, in order;
    /// the child runs of canceled steps are canceled last, then the parent step hears.
    fn run_transition(&mut self, run_id: &str, message: RunMessage) {
        let (core, statuses) = {
            let run = self.run(run_id);
            (
                run.core(),
                run.steps.iter().map(|s| s.status).collect::<Vec<_>>(),
            )
        };
        let (after, effects) = machine::run(core, &statuses, message, &self.now);
        self.run(run_id).status = after.status;
        let mut children = Vec::new();
        let mut parent = None;
        for effect in effects {
            match effect {
                RunEffect::Write(patch) => self.set_run(run_id, Value::Object(patch.to_set())),
                RunEffect::Event(kind, data) => self.event(run_id, kind.as_str(), None, data),
                RunEffect::Link => self.links.push(run_id.to_owned()),
                RunEffect::CancelStep(i) => {
                    let now = self.now.clone();
                    let step = &mut self.run(run_id).steps[i];
                    step.status = StepStatus::Canceled;
                    let sr = step.id.clone();
                    children.extend(step.child_run_id.clone());
                    self.set_step(&sr, json!({"status": "canceled", "finishedAt": now}));
                }
                RunEffect::Canceled => self.cancels.push(run_id.to_owned()),
                RunEffect::TellParent(outcome) => parent = Some(outcome),
                RunEffect::Advance => self.to_advance.push_back(run_id.to_owned()),
            }
        }
        for child in children {
            if self
                .runs
                .get(&child)
                .is_some_and(|c| !c.status.is_settled())
            {
                self.stop_run(
                    &child,
                    RunStatus::Canceled,
                    None,
                    Some(ErrorInfo::new("CANCELED", "the parent run stopped")),
                );
            }
        }
        let run = self.run(run_id);
        let caller = run
            .parent_run_id
            .clone()
            .zip(run.parent_step_run_id.clone());
        if let (Some((parent_run_id, parent_step_run_id)), Some(outcome)) = (caller, parent) {
            self.child_results.push_back(ChildResult {
                parent_run_id,
                parent_step_run_id,
                outcome,
            });
        }
    }

    /// Writes the pass to the graph (child runs first, then every change). The caller commits.
    async fn tx(&mut self) -> Result<&mut Tx, aiden_graph::Error> {
        if self.tx.is_none() {
            self.tx = Some(self.graph.begin().await?);
        }
        Ok(self.tx.as_mut().expect("just begun"))
    }

    /// The open transaction, if the pass needed one; the caller commits or rolls it back.
    pub fn take_tx(&mut self) -> Option<Tx> {
        self.tx.take()
    }

    /// The StepRuns of runs this pass writes for the first time (`runs::create` says why the
    /// engine creates them), as the batch's `step_runs` rows.
    fn take_unwritten_step_runs(&mut self) -> Vec<Value> {
        let mut rows = Vec::new();
        for id in self.saved.keys() {
            if let Some(run) = self.runs.get_mut(id) {
                for s in run.unwritten_step_runs.drain(..) {
                    rows.push(json!({"id": s.id, "runId": id, "stepId": s.step_id,
                                     "processStepId": s.process_step_id, "order": s.order}));
                }
            }
        }
        rows
    }

    /// Writes the pass; answers the handed runs it could not create (their Process moved on:
    /// the caller rolls the pass back).
    pub async fn write(&mut self) -> Result<Vec<String>, aiden_graph::Error> {
        let new_runs = std::mem::take(&mut self.new_runs);
        // A child run's SPAWNED edge and an agent call's HAS_CALL start at a step run that may
        // be among these: then the existing runs' step runs go first, in a batch of their own
        // (the new child runs' own step runs need their Run, created below).
        let (mut step_runs, children): (Vec<Value>, Vec<Value>) = self
            .take_unwritten_step_runs()
            .into_iter()
            .partition(|s| !new_runs.iter().any(|r| s["runId"] == r.id.as_str()));
        let mut missed = Vec::new();
        if !step_runs.is_empty() && (!new_runs.is_empty() || !self.new_calls.is_empty()) {
            let first = Batch {
                new_runs: std::mem::take(&mut self.handed),
                step_runs: std::mem::take(&mut step_runs),
                ..Batch::default()
            };
            missed = unmade(&first, runs::apply(self.tx().await?, &first).await?);
        }
        step_runs.extend(children);
        for run in &new_runs {
            let now = self.now.clone();
            runs::create(self.tx().await?, run, &now).await?;
        }
        let calls = std::mem::take(&mut self.new_calls);
        if !calls.is_empty() {
            runs::create_calls(self.tx().await?, calls).await?;
        }
        let proposals = std::mem::take(&mut self.proposals);
        if !proposals.is_empty() {
            aiden_graph::knowledge::propose_entities(self.tx().await?, proposals).await?;
        }
        let memories = std::mem::take(&mut self.memories);
        if !memories.is_empty() {
            aiden_graph::memory::remember(self.tx().await?, &memories).await?;
        }
        if !self.charges.is_empty() {
            let rows = self.charges.rows(self.ledger.day());
            let now = self.now.clone();
            aiden_graph::limits::record_spend(self.tx().await?, rows, &now).await?;
        }
        let mut step_ids: Vec<String> = self.step_sets.keys().cloned().collect();
        step_ids.extend(self.workers.keys().cloned());
        step_ids.extend(self.audits.keys().cloned());
        step_ids.extend(self.lost.keys().cloned());
        step_ids.extend(self.retries.keys().cloned());
        step_ids.sort();
        step_ids.dedup();
        let steps: Vec<Value> = step_ids
            .into_iter()
            .map(|id| {
                json!({
                    "set": self.step_sets.remove(&id).unwrap_or_default(),
                    "workers": self.workers.remove(&id).unwrap_or_default(),
                    "audits": self.audits.remove(&id).unwrap_or_default(),
                    "lost": self.lost.remove(&id).unwrap_or_default(),
                    "retries": self.retries.remove(&id).unwrap_or_default(),
                    "id": id,
                })
            })
            .collect();
        let mut written = Vec::new();
        let runs: Vec<Value> = self
            .run_sets
            .iter()
            .map(|(id, set)| {
                let rows: Vec<runs::EventRow> = self.events.remove(id).unwrap_or_default();
                // The pass's events, appended to the Run's log (one JSON array per pass) with
                // their range of sequence numbers: no record of their own.
                let mut events = Value::Null;
                if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
                    events = json!({
                        "text": serde_json::to_string(&rows).unwrap_or_default(),
                        "range": [first.seq, last.seq],
                    });
                    let run = self.runs.get(id);
                    written.push(crate::Committed {
                        run_id: id.clone(),
                        owner_id: run.map(|r| r.owner_id.clone()).unwrap_or_default(),
                        settled: run.is_some_and(|r| r.status.is_settled()),
                        events: crate::EventBatch::from(rows),
                    });
                }
                json!({"id": id, "set": set, "events": events})
            })
            .collect();
        self.written_events = written;
        let updated = updated_nodes(&steps, &runs, &step_runs, &self.handed, &new_runs);
        let batch = Batch {
            new_runs: std::mem::take(&mut self.handed),
            step_runs,
            steps,
            runs,
            links: std::mem::take(&mut self.links),
            invokes: std::mem::take(&mut self.invokes),
        };
        if !batch.is_empty() {
            // Always in an explicit transaction: then only a failed commit leaves the outcome
            // unknown, and the engine recovers those runs from the graph (Engine::uncertain).
            let tx = self.tx().await?;
            tx.count_updates(updated);
            let made = runs::apply(tx, &batch).await?;
            missed.extend(unmade(&batch, made));
        }
        Ok(missed)
    }
}

/// The nodes a batch sets that it does not create: the benchmark's updates per step.
fn updated_nodes(
    steps: &[Value],
    runs: &[Value],
    step_runs: &[Value],
    handed: &[Value],
    new_runs: &[NewRun],
) -> u64 {
    let set = |row: &Value| row["set"].as_object().is_some_and(|m| !m.is_empty());
    let created_step = |id: &Value| step_runs.iter().any(|n| n["id"] == *id);
    let created_run = |id: &Value| {
        handed.iter().any(|n| n["id"] == *id) || new_runs.iter().any(|n| *id == n.id.as_str())
    };
    let steps = steps.iter().filter(|r| set(r) && !created_step(&r["id"]));
    let runs = runs.iter().filter(|r| set(r) && !created_run(&r["id"]));
    (steps.count() + runs.count()) as u64
}

/// The ids of the batch's new runs that its statement did not create.
fn unmade(batch: &Batch, made: Vec<String>) -> Vec<String> {
    batch
        .new_runs
        .iter()
        .filter_map(|r| r["id"].as_str())
        .filter(|id| !made.iter().any(|m| m == id))
        .map(str::to_owned)
        .collect()
}

/// An error as the state machine carries it (and the graph stores it, as JSON text).
fn error_value(error: &ErrorInfo) -> Value {
    serde_json::to_value(error).unwrap_or_default()
}
