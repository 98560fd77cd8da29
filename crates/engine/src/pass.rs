//! One engine pass: a batch of messages applied to the in-memory runs inside one graph
//! transaction. The pass records every state change as rows of one [`Batch`] plus the jobs to
//! publish after commit; the caller commits, publishes, then acks the messages.

use std::collections::{BTreeMap, HashMap, VecDeque};

use aiden_domain::execution::interpolate::render_tree;
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
    outcome: Result<Value, ErrorInfo>,
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

    /// GRAPH-4: a running attempt's worker lost it: it went silent (`by` None: the job is
    /// dispatched again), or another worker took the redelivered job (`by`).
    fn lost_on(&mut self, run_id: &str, step_run_id: &str, i: usize, by: Option<&str>) {
        let step = &self.run(run_id).steps[i];
        let Some(worker) = step.worker_id.clone() else {
            return;
        };
        if step.status != StepStatus::Running || by.is_some_and(|b| b == worker) {
            return;
        }
        let attempt = step.attempts;
        let at = self.now.clone();
        self.lost
            .entry(step_run_id.to_owned())
            .or_default()
            .push(json!({"workerId": worker, "attempt": attempt, "at": at}));
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
                    telemetry,
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
        let run = self.run(run_id).clone();
        let Some(i) = run.step_index(step_run_id) else {
            return Ok(());
        };
        if run.status.is_settled() || run.steps[i].status.is_settled() {
            return Ok(());
        }
        if let Some(mut job) = self.job_for(&run, i) {
            job.redispatch = true;
            self.lost_on(run_id, step_run_id, i, None);
            self.set_step(step_run_id, json!({"status": "queued"}));
            self.run(run_id).steps[i].status = StepStatus::Queued;
            self.event(
                run_id,
                "step.queued",
                Some(&run.plan.steps[i].id),
                json!({"attempt": job.attempt, "reason": "worker lost"}),
            );
            self.jobs.push(job);
        }
        Ok(())
    }

    fn start(&mut self, run_id: &str) {
        if self.run(run_id).status != RunStatus::Queued {
            self.to_advance.push_back(run_id.to_owned());
            return;
        }
        self.run(run_id).status = RunStatus::Running;
        self.set_run(run_id, json!({"status": "running", "startedAt": self.now}));
        self.links.push(run_id.to_owned());
        let (pid, version, depth) = {
            let r = self.run(run_id);
            (r.plan.process_id.clone(), r.plan.version, r.depth)
        };
        self.event(
            run_id,
            "run.started",
            None,
            json!({"processId": pid, "processVersion": version, "depth": depth}),
        );
        self.to_advance.push_back(run_id.to_owned());
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
        let step = &run.steps[i];
        if run.status.is_settled() || step.status.is_settled() || attempt < step.attempts {
            return; // a late or duplicate notice
        }
        self.lost_on(run_id, sr_id, i, Some(worker));
        let run = self.run(run_id);
        let step = &mut run.steps[i];
        step.status = StepStatus::Running;
        step.attempts = attempt;
        step.worker_id = Some(worker.to_owned());
        let first_start = step.started_at.is_none();
        if first_start {
            step.started_at = Some(at.to_owned());
        }
        // A tool step's StepRun is written when the step settles (or retries): its start is in
        // the run's event log, and in memory until then.
        let step_id = run.plan.steps[i].id.clone();
        self.event(
            run_id,
            "step.started",
            Some(&step_id),
            json!({"attempt": attempt, "workerId": worker}),
        );
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
        let status = run.steps[i].status;
        let unannounced = status == StepStatus::Queued
            || (status == StepStatus::Running && run.steps[i].attempts < call.attempt);
        if unannounced && call.attempt != u32::MAX {
            // A fast step's worker reports its start only inside the result.
            self.step_started(
                run_id,
                sr_id,
                call.attempt,
                &call.worker_id,
                &call.started_at,
            );
        }
        let run = self.run(run_id);
        let step_id = run.plan.steps[i].id.clone();
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
            .pointer("/tokenUsage/totalTokens")
            .and_then(Value::as_u64);
        self.rollup
            .tokens(&process_id, alternative_id.as_deref(), tokens.unwrap_or(0));
        self.lost_on(run_id, sr_id, i, Some(&call.worker_id));
        self.ran_on(sr_id, &call.worker_id);
        let mut telemetry = obj(call.telemetry.clone());
        telemetry.insert("retryCount".into(), json!(call.attempt.saturating_sub(1)));
        {
            let step = &mut self.run(run_id).steps[i];
            step.attempts = step.attempts.max(call.attempt);
            step.worker_id = Some(call.worker_id.clone());
        }
        let started = self.run(run_id).steps[i]
            .started_at
            .clone()
            .unwrap_or(call.started_at.clone());
        if !matches!(outcome, StepOutcome::Retrying { .. }) {
            let completed = matches!(outcome, StepOutcome::Completed { .. });
            self.settle_cost(run_id, i, &mut telemetry, completed);
        }
        match outcome {
            StepOutcome::Completed { output } => {
                let run = self.run(run_id);
                match accept_output(&run.plan, i, output, &run.variables) {
                    Ok((value, cut)) => {
                        telemetry.insert("finalState".into(), json!("completed"));
                        telemetry.insert("truncated".into(), json!(cut));
                        self.complete_step(run_id, i, value, telemetry, &call, &started);
                    }
                    Err(f) => {
                        telemetry.insert("finalState".into(), json!("failed"));
                        let error = ErrorInfo::new(f.code, f.message);
                        self.fail_step(run_id, i, error, telemetry, &call, &started);
                    }
                }
            }
            StepOutcome::Retrying {
                error,
                next_attempt,
                delay_ms,
            } => {
                self.run(run_id).steps[i].status = StepStatus::Queued;
                self.set_step(
                    sr_id,
                    json!({"status": "queued", "attempts": call.attempt,
                           "lastError": serde_json::to_string(&error).unwrap_or_default(),
                           "workerId": call.worker_id, "failedAt": call.finished_at}),
                );
                let log = json!({"attempt": call.attempt, "workerId": call.worker_id,
                                 "inputHash": call.input_hash, "durationMs": latency,
                                 "error": error, "at": call.finished_at});
                self.retries.entry(sr_id.to_owned()).or_default().push(
                    json!({"at": call.finished_at, "durationMs": latency, "log": log.to_string()}),
                );
                self.event(
                    run_id,
                    "step.retrying",
                    Some(&step_id),
                    json!({"attempt": call.attempt, "nextAttempt": next_attempt,
                           "delayMs": delay_ms, "error": error}),
                );
            }
            StepOutcome::Failed { error } => {
                telemetry.insert("finalState".into(), json!("failed"));
                self.fail_step(run_id, i, error, telemetry, &call, &started);
            }
        }
    }

    fn complete_step(
        &mut self,
        run_id: &str,
        i: usize,
        value: Value,
        telemetry: Map<String, Value>,
        call: &Call,
        started: &str,
    ) {
        let run = self.run(run_id);
        run.steps[i].status = StepStatus::Completed;
        if let Some(var) = run.plan.steps[i].output.variable.clone() {
            run.variables.insert(var, value.clone());
        }
        let sr_id = run.steps[i].id.clone();
        let step_id = run.plan.steps[i].id.clone();
        let mut set = json!({"status": "completed", "output": value.to_string(),
               "attempts": call.attempt, "startedAt": started, "finishedAt": call.finished_at,
               "telemetry": Value::Object(telemetry.clone()).to_string()});
        self.audit_facts(&mut set, run_id, i, call);
        self.set_step(&sr_id, set);
        self.event(
            run_id,
            "step.completed",
            Some(&step_id),
            json!({"attempt": call.attempt, "output": value.clone(), "telemetry": telemetry}),
        );
        self.to_advance.push_back(run_id.to_owned());
        self.call_settled(run_id, i, Ok(value), agent::Usage::of(&telemetry));
    }

    fn fail_step(
        &mut self,
        run_id: &str,
        i: usize,
        error: ErrorInfo,
        telemetry: Map<String, Value>,
        call: &Call,
        started: &str,
    ) {
        let run = self.run(run_id);
        run.steps[i].status = StepStatus::Failed;
        let sr_id = run.steps[i].id.clone();
        let step_id = run.plan.steps[i].id.clone();
        let mut set = json!({"status": "failed",
               "error": serde_json::to_string(&error).unwrap_or_default(),
               "attempts": call.attempt, "startedAt": started, "finishedAt": call.finished_at,
               "telemetry": Value::Object(telemetry).to_string()});
        self.audit_facts(&mut set, run_id, i, call);
        if !call.worker_id.is_empty() {
            // A failed tool call: indexed, so "failures since" reads only failed step runs.
            set["failedAt"] = json!(call.finished_at);
        }
        self.set_step(&sr_id, set);
        self.event(
            run_id,
            "step.failed",
            Some(&step_id),
            json!({"attempt": call.attempt, "error": error}),
        );
        self.to_advance.push_back(run_id.to_owned());
        let error = serde_json::to_value(&error).unwrap_or_default();
        self.call_settled(run_id, i, Err(error), agent::Usage::default());
    }

    /// A settled attempt's audit facts on its StepRun: when it was queued, the worker that ran
    /// it, the hash of its input and how long the call took (none for the engine's own
    /// failures and child runs, which no worker ran).
    fn audit_facts(&mut self, set: &mut Value, run_id: &str, i: usize, call: &Call) {
        if let Some(at) = &self.run(run_id).steps[i].queued_at {
            set["queuedAt"] = json!(at);
        }
        if !call.worker_id.is_empty() {
            set["workerId"] = json!(call.worker_id);
        }
        if let Some(hash) = &call.input_hash {
            set["inputHash"] = json!(hash);
        }
        if let Some(ms) = call.telemetry.get("latencyMs").filter(|v| v.is_number()) {
            set["durationMs"] = ms.clone();
        }
    }

    /// Fails step `i` for a reason the engine found itself (no worker attempt behind it).
    fn fail_step_now(&mut self, run_id: &str, i: usize, error: ErrorInfo) {
        let now = self.now.clone();
        self.fail_step(run_id, i, error, Map::new(), &Call::internal(&now), &now);
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
        let started = run.steps[i].started_at.clone();
        let started = started.unwrap_or_else(|| self.now.clone());
        let call = Call {
            attempt: 1,
            worker_id: String::new(),
            started_at: started.clone(),
            finished_at: self.now.clone(),
            telemetry: json!({}),
            input_hash: None,
        };
        let mut telemetry = Map::new();
        match child.outcome {
            Ok(output) => {
                let run = self.run(&run_id);
                match accept_output(&run.plan, i, output, &run.variables) {
                    Ok((value, cut)) => {
                        telemetry.insert("finalState".into(), json!("completed"));
                        telemetry.insert("truncated".into(), json!(cut));
                        self.complete_step(&run_id, i, value, telemetry, &call, &started)
                    }
                    Err(f) => {
                        telemetry.insert("finalState".into(), json!("failed"));
                        let e = ErrorInfo::new(f.code, f.message);
                        self.fail_step(&run_id, i, e, telemetry, &call, &started)
                    }
                }
            }
            Err(error) => {
                telemetry.insert("finalState".into(), json!("failed"));
                self.fail_step(&run_id, i, error, telemetry, &call, &started)
            }
        }
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
                Decision::Skip(i) => {
                    let run = self.run(run_id);
                    run.steps[i].status = StepStatus::Skipped;
                    let (sr, sid) = (run.steps[i].id.clone(), run.plan.steps[i].id.clone());
                    self.set_step(&sr, json!({"status": "skipped", "finishedAt": self.now}));
                    self.event(
                        run_id,
                        "step.skipped",
                        Some(&sid),
                        json!({"reason": "condition"}),
                    );
                }
                Decision::FailStep(i, f) => {
                    let run = self.run(run_id);
                    run.steps[i].status = StepStatus::Failed;
                    let (sr, sid) = (run.steps[i].id.clone(), run.plan.steps[i].id.clone());
                    let error = ErrorInfo::new(f.code, f.message);
                    self.set_step(
                        &sr,
                        json!({"status": "failed", "finishedAt": self.now,
                               "error": serde_json::to_string(&error).unwrap_or_default()}),
                    );
                    self.event(run_id, "step.failed", Some(&sid), json!({"error": error}));
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
                let Some(job) = self.job_for(&run, i) else {
                    return Ok(());
                };
                // Written when it settles: a step recorded `pending` whose inputs are ready is
                // dispatched again by a recovery, as a `queued` one was re-published.
                let now = self.now.clone();
                let step = &mut self.run(run_id).steps[i];
                step.status = StepStatus::Queued;
                step.queued_at = Some(now);
                self.event(
                    run_id,
                    "step.queued",
                    Some(&spec.id),
                    json!({"attempt": job.attempt}),
                );
                self.jobs.push(job);
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
            operation_type: operation_type.clone(),
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
        if self.run(run_id).status == RunStatus::Queued {
            // Canceled before it started: linked now, as a start would have.
            self.links.push(run_id.to_owned());
        }
        let run = self.run(run_id);
        run.status = status;
        let mut children = Vec::new();
        let mut canceled_steps = Vec::new();
        for step in run.steps.iter_mut() {
            if !step.status.is_settled() {
                step.status = StepStatus::Canceled;
                canceled_steps.push(step.id.clone());
                if let Some(c) = &step.child_run_id {
                    children.push(c.clone());
                }
            }
        }
        let parent = run
            .parent_run_id
            .clone()
            .zip(run.parent_step_run_id.clone());
        let generates_alternative = run.alternative_id.is_some();
        for sr in canceled_steps {
            self.set_step(&sr, json!({"status": "canceled", "finishedAt": self.now}));
        }
        let mut set = json!({"status": status.as_str(), "finishedAt": self.now});
        if let Some(o) = &output {
            set["output"] = json!(o.to_string());
            if generates_alternative {
                // The Alternative's content: a string output as is, anything else as JSON text.
                set["outputText"] = match o {
                    Value::String(s) => json!(s),
                    other => json!(other.to_string()),
                };
            }
        }
        if let Some(e) = &error {
            set["error"] = json!(serde_json::to_string(e).unwrap_or_default());
        }
        self.set_run(run_id, set);
        let kind = match status {
            RunStatus::Completed => "run.completed",
            RunStatus::Canceled => "run.canceled",
            _ => "run.failed",
        };
        self.event(
            run_id,
            kind,
            None,
            json!({"output": output, "error": error}),
        );
        if status == RunStatus::Canceled {
            self.cancels.push(run_id.to_owned());
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
        if let Some((parent_run_id, parent_step_run_id)) = parent {
            let outcome = match (status, output) {
                (RunStatus::Completed, Some(o)) => Ok(o),
                _ => Err(error.map_or_else(
                    || {
                        ErrorInfo::new(
                            "CHILD_RUN_FAILED",
                            format!("child run {run_id} did not complete"),
                        )
                    },
                    |e| ErrorInfo::new(&e.code, format!("child run {run_id}: {}", e.message)),
                )),
            };
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

/// One attempt's facts as a worker reported them.
struct Call {
    attempt: u32,
    worker_id: String,
    started_at: String,
    finished_at: String,
    telemetry: Value,
    input_hash: Option<String>,
}

impl Call {
    fn internal(now: &str) -> Self {
        Self {
            attempt: 1,
            worker_id: String::new(),
            started_at: now.to_owned(),
            finished_at: now.to_owned(),
            telemetry: json!({}),
            input_hash: None,
        }
    }
}
