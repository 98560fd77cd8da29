//! One engine pass: a batch of messages applied to the in-memory runs inside one graph
//! transaction. The pass records every state change as rows of one [`Batch`](runs::Batch)
//! plus the jobs to publish after commit; the caller commits, publishes, then acks the
//! messages.

use std::collections::{BTreeMap, HashMap, VecDeque};

use aiden_domain::execution::machine::{
    self, AnyEventKind, AttemptOutcome, Call, Decided, Effect, Message, Outcome, RunMessage,
    Terminal,
};
use aiden_domain::execution::schedule::{accept_output, StepStatus, Target};
use aiden_graph::runs::{self, NewRun};
use aiden_graph::{Graph, Tx};
use aiden_jobs::{EngineMessage, ErrorInfo, Job, RetryPolicy, StepOutcome};
use serde_json::{json, Map, Value};

use crate::state::{RunState, RunStatus};

mod advance;
mod agent;
mod dispatch;
mod money;
mod write;

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
    /// FORK-1: `{stepRunId, from}`: reused StepRuns and the original's they took.
    reused: Vec<Value>,
    /// Agent calls decided in this pass: new StepRun nodes (`run/create_calls.cypher`).
    new_calls: Vec<Value>,
    /// Memory an agent's answer proposed (AGT-13): proposed Entities.
    proposals: Vec<Value>,
    /// SRCH-4: memories agent steps routed to a `memory: write` intent keep.
    memories: Vec<aiden_graph::memory::NewMemoryRecord>,
    pub new_runs: Vec<NewRun>,
    /// Runs handed to this pass to create (`Batch::new_runs`): the engine's door.
    handed: Vec<Value>,
    pub jobs: Vec<Job>,
    pub cancels: Vec<String>,
    /// Runs started in this pass (linked to their definitions by the batch statement).
    links: Vec<String>,
    /// Per run: the events `write` sent to the graph, for live streams once committed.
    pub written_events: Vec<crate::Committed>,
    to_advance: VecDeque<String>,
    child_results: VecDeque<ChildResult>,
    /// Built-in measurements of this pass, kept by the engine once it commits.
    pub rollup: crate::rollup::Rollup,
    /// Each run this pass used, as it was before (`None`: not cached then). A commit that
    /// fails puts these back, so the retry needs no read of the runs.
    saved: HashMap<String, Option<RunState>>,
    /// AGT-14: the prices and the day's spend windows as committed before this pass.
    ledger: &'a crate::spend::Ledger,
    /// What this pass charged to spend windows (the ledger takes it once committed).
    pub charges: crate::spend::Charges,
    /// `write` sent the commit with the pass's statement: an error since may have committed.
    pub commit_sent: bool,
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
            reused: Vec::new(),
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
            commit_sent: false,
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

    /// The ids of the step runs this pass changes (properties, edges, audits, retries).
    fn changed_step_runs(&self) -> impl Iterator<Item = &String> {
        self.step_sets
            .keys()
            .chain(self.workers.keys())
            .chain(self.audits.keys())
            .chain(self.lost.keys())
            .chain(self.retries.keys())
    }

    /// Every run this pass read or changed: those it kept as they were, those it changed, and
    /// the runs of the step runs it changed or created.
    pub fn used_runs(&self) -> std::collections::HashSet<String> {
        let steps = self
            .changed_step_runs()
            .map(|id| id.split_once('/').map_or(id.as_str(), |(run, _)| run));
        let calls = self.new_calls.iter().filter_map(|c| c["runId"].as_str());
        self.saved
            .keys()
            .chain(self.run_sets.keys())
            .map(String::as_str)
            .chain(steps)
            .chain(calls)
            .chain(self.new_runs.iter().map(|r| r.id.as_str()))
            .map(str::to_owned)
            .collect()
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

    fn event(
        &mut self,
        run_id: &str,
        kind: impl Into<AnyEventKind>,
        step_id: Option<&str>,
        data: Value,
    ) {
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
                kind: kind.into().as_str().to_owned(),
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
                hops,
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
                // Kept on the StepRun the result settled (or retried), never on one it left alone.
                if let Some(h) = hops.filter(|_| self.step_sets.contains_key(&step_run_id)) {
                    let text = serde_json::to_string(&h).unwrap_or_default();
                    self.set_step(&step_run_id, json!({ "hops": text }));
                }
            }
        }
        self.drain().await
    }

    /// Creates and starts a run handed over by this process's API: its Run node is written
    /// with the pass (`write` answers whether it was). `false` if its snapshot is unusable.
    pub async fn start_handed(&mut self, run: &NewRun) -> Result<bool, aiden_graph::Error> {
        let state = run
            .created_row(&self.now)
            .map_err(|e| e.to_string())
            .and_then(|row| RunState::from_row(&row));
        let state = match state {
            Ok(state) => state,
            Err(e) => {
                tracing::error!(run_id = %run.id, error = %e, "handed run unusable");
                return Ok(false);
            }
        };
        self.remember(&run.id);
        self.runs.insert(run.id.clone(), state);
        self.handed.push(run.batch_row(&self.now)?);
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

    /// Publishes a worker step's job again: `why` is `WorkerLost` (its worker went silent) or
    /// `JobLost` (its job was never delivered).
    pub async fn redispatch_step(
        &mut self,
        run_id: &str,
        step_run_id: &str,
        why: Message<'static>,
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
            self.transition(run_id, i, why);
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
            Terminal::Canceled,
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
        let ended = outcome.kind();
        // The StepRun is the audit record of its tool calls (who: the run's owner; the Tool:
        // its step's, or the one that ran, `INVOKES_TOOL`).
        let ran = call.telemetry.get("ranToolId").and_then(Value::as_str);
        let retrying = ended == AttemptOutcome::Retrying;
        if let Some(ran) = ran.filter(|r| is_static && *r != tool_id && !retrying) {
            self.invokes
                .push(json!({"stepRunId": sr_id, "toolId": ran}));
        }
        self.rollup.step(&tool_id, ended.as_str(), latency.as_f64());
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
    /// machine`) and executes what it decided, in order. `false`: the machine ignored the
    /// message (a late or duplicate one) or refused it (logged and counted), and nothing changed.
    fn transition(&mut self, run_id: &str, i: usize, message: Message<'_>) -> bool {
        let (sr_id, step_id, before) = {
            let run = self.run(run_id);
            let step = &run.steps[i];
            (
                step.id.clone(),
                run.plan.steps[i].id.clone(),
                step.machine(),
            )
        };
        let (after, effects) = match machine::step(before, message, &self.now) {
            Ok(Decided::Moved(after, effects)) => (after, effects),
            Ok(Decided::Ignored(why)) => {
                tracing::debug!(run_id, step_id, why = why.as_str(), "step message ignored");
                return false;
            }
            Err(refused) => {
                self.refused(run_id, Some(&step_id), &refused);
                return false;
            }
        };
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
                Effect::Retried(r) => {
                    let due = std::time::Duration::from_millis(r.delay_ms);
                    self.run(run_id).steps[i].retry_due = Some(std::time::Instant::now() + due);
                    self.retries.entry(sr_id.clone()).or_default().push(
                        json!({"at": r.at, "durationMs": r.duration_ms, "log": r.record.to_string()}),
                    );
                }
                Effect::Event(kind, data) => self.event(run_id, kind, Some(&step_id), data),
                Effect::RanOn(worker) => self.ran_on(&sr_id, &worker),
                Effect::ReusedFrom(from) => {
                    self.reused.push(json!({"stepRunId": sr_id, "from": from}))
                }
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
        true
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
}

/// An error as the state machine carries it (and the graph stores it, as JSON text).
fn error_value(error: &ErrorInfo) -> Value {
    serde_json::to_value(error).unwrap_or_default()
}
