//! A step's lifecycle: the engine owns no step rule of its own: it turns what it hears (a
//! dispatch it decided, a worker's start or result, a lost worker, a skip or failure the
//! scheduler decided, an agent's loop or a child run it started, a cancel, an agent waiting for
//! an approval and going on) into a [`Message`], calls [`step`], keeps the new [`Step`] and
//! executes the [`Effect`]s in order: write the StepRun (a typed [`StepPatch`]), append a
//! retried attempt, record an event, add a `RAN_ON`/`LOST_ON` edge, publish the step's job,
//! tell the run the step settled. A message the step's state cannot take is [`Refused`].
//!
//! The lean journal is a rule of this table: dispatching and starting write
//! nothing to the StepRun (their facts travel in the run's event log and the returned state);
//! a retried attempt and a settled step each write it once, with the attempt's audit facts.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{props, string, text, Decided, Ignored, Machine, Refused};
use crate::execution::schedule::StepStatus;

/// What the machine knows of one step between messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    pub status: StepStatus,
    /// The highest attempt started or reported.
    pub attempts: u32,
    /// The worker that holds (or last held) the step.
    pub worker_id: Option<String>,
    /// The first attempt's start.
    pub started_at: Option<String>,
    /// When its job was last published.
    pub queued_at: Option<String>,
    /// The child run a Process step started.
    pub child_run_id: Option<String>,
}

/// One attempt's facts as a worker reported them (or the engine, for its own failures and
/// child runs: then `worker_id` is empty).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Call {
    pub attempt: u32,
    pub worker_id: String,
    pub started_at: String,
    pub finished_at: String,
    /// The worker's telemetry plus what the engine settled (cost); the machine adds
    /// `retryCount`, `finalState` and `truncated`.
    pub telemetry: Map<String, Value>,
    pub input_hash: Option<String>,
}

impl Call {
    /// An outcome no worker reported: the engine's own decision at `now`.
    pub fn internal(now: &str) -> Self {
        Self {
            attempt: 1,
            started_at: now.to_owned(),
            finished_at: now.to_owned(),
            ..Self::default()
        }
    }

    fn duration_ms(&self) -> Option<&Value> {
        self.telemetry.get("latencyMs").filter(|v| v.is_number())
    }
}

/// How an attempt ended, once the engine has checked a completed output against the step's
/// output rules (a rejected output arrives as `Failed`).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Completed {
        output: Value,
        truncated: bool,
    },
    Retrying {
        error: Value,
        next_attempt: u32,
        delay_ms: u64,
    },
    Failed {
        error: Value,
    },
}

/// An attempt's lifecycle ends one of three ways: the word a worker's result carries
/// (`outcome`) and the metrics' `outcome` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    Completed,
    /// Failed, and published again for a later attempt.
    Retrying,
    /// Failed for good.
    Failed,
}

impl AttemptOutcome {
    pub const ALL: [Self; 3] = [Self::Completed, Self::Retrying, Self::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Retrying => "retrying",
            Self::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Message<'a> {
    /// The scheduler made the step ready and the engine publishes its job (attempt + 1).
    Dispatch,
    /// A worker began an attempt.
    Started {
        attempt: u32,
        worker_id: &'a str,
        at: &'a str,
    },
    /// An attempt ended. `attempt == u32::MAX` marks an outcome with no worker start behind it.
    Finished { call: &'a Call, outcome: Outcome },
    /// The worker holding the step went silent: its job is published again.
    WorkerLost,
    /// The step's job was neither started nor waiting in its queue long after it was published
    /// (a message the broker lost): it is published again, the same attempt.
    JobLost,
    /// The step's condition did not hold.
    Skip,
    /// The engine failed the step itself (a budget, a scheduling rule): no attempt behind it.
    Fail { error: Value },
    /// The engine started an agent step's loop (its calls are steps of their own).
    StartAgent,
    /// The engine started the child run of a step that calls a Process.
    StartChild { child_run_id: &'a str },
    /// The step will not finish: its run settled, or its agent finished without it.
    Cancel,
    /// AGT-9: the agent step's loop holds a call until the owner approves a capability.
    AwaitApproval,
    /// AGT-9: the agent step's loop holds no call any more.
    Resume,
    /// FORK-1: a fork's step whose input is the one its original ran with takes the
    /// original's recorded output instead of being dispatched.
    Reuse {
        /// The original's StepRun.
        from: &'a str,
        input_hash: &'a str,
        output: &'a Value,
    },
}

/// A [`Message`]'s kind, for the table of decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    Dispatch,
    Started,
    Finished,
    WorkerLost,
    JobLost,
    Skip,
    Fail,
    StartAgent,
    StartChild,
    Cancel,
    AwaitApproval,
    Resume,
    Reuse,
}

impl MessageKind {
    pub const ALL: [Self; 13] = [
        Self::Dispatch,
        Self::Started,
        Self::Finished,
        Self::WorkerLost,
        Self::JobLost,
        Self::Skip,
        Self::Fail,
        Self::StartAgent,
        Self::StartChild,
        Self::Cancel,
        Self::AwaitApproval,
        Self::Resume,
        Self::Reuse,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dispatch => "dispatch",
            Self::Started => "started",
            Self::Finished => "finished",
            Self::WorkerLost => "worker_lost",
            Self::JobLost => "job_lost",
            Self::Skip => "skip",
            Self::Fail => "fail",
            Self::StartAgent => "start_agent",
            Self::StartChild => "start_child",
            Self::Cancel => "cancel",
            Self::AwaitApproval => "await_approval",
            Self::Resume => "resume",
            Self::Reuse => "reuse",
        }
    }
}

impl Message<'_> {
    pub fn kind(&self) -> MessageKind {
        match self {
            Self::Dispatch => MessageKind::Dispatch,
            Self::Started { .. } => MessageKind::Started,
            Self::Finished { .. } => MessageKind::Finished,
            Self::WorkerLost => MessageKind::WorkerLost,
            Self::JobLost => MessageKind::JobLost,
            Self::Skip => MessageKind::Skip,
            Self::Fail { .. } => MessageKind::Fail,
            Self::StartAgent => MessageKind::StartAgent,
            Self::StartChild { .. } => MessageKind::StartChild,
            Self::Cancel => MessageKind::Cancel,
            Self::AwaitApproval => MessageKind::AwaitApproval,
            Self::Resume => MessageKind::Resume,
            Self::Reuse { .. } => MessageKind::Reuse,
        }
    }
}

/// The properties of a StepRun to set: only what changed, typed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepPatch {
    pub status: Option<StepStatus>,
    pub attempts: Option<u32>,
    pub worker_id: Option<String>,
    pub queued_at: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub failed_at: Option<String>,
    pub input_hash: Option<String>,
    pub duration_ms: Option<Value>,
    pub output: Option<Value>,
    pub error: Option<Value>,
    pub last_error: Option<Value>,
    pub telemetry: Option<Map<String, Value>>,
    pub child_run_id: Option<String>,
    /// FORK-1: the original's StepRun whose output this step reused.
    pub reused_from: Option<String>,
}

impl StepPatch {
    /// The StepRun properties it sets (JSON values as JSON text, as the graph stores them).
    pub fn to_set(&self) -> Map<String, Value> {
        let telemetry = self.telemetry.clone().map(Value::Object);
        props([
            ("status", self.status.map(|s| json!(s.as_str()))),
            ("attempts", self.attempts.map(|a| json!(a))),
            ("workerId", string(&self.worker_id)),
            ("queuedAt", string(&self.queued_at)),
            ("startedAt", string(&self.started_at)),
            ("finishedAt", string(&self.finished_at)),
            ("failedAt", string(&self.failed_at)),
            ("inputHash", string(&self.input_hash)),
            ("durationMs", self.duration_ms.clone()),
            ("output", text(&self.output)),
            ("error", text(&self.error)),
            ("lastError", text(&self.last_error)),
            ("telemetry", text(&telemetry)),
            ("childRunId", string(&self.child_run_id)),
            ("reusedFrom", string(&self.reused_from)),
        ])
    }
}

/// A retried attempt's facts, appended to its StepRun.
#[derive(Debug, Clone, PartialEq)]
pub struct Retried {
    pub at: String,
    pub duration_ms: Option<Value>,
    /// `{attempt, workerId, inputHash, durationMs, error, at}`.
    pub record: Value,
    /// How long the retry waits in its delay queue (the worker's own delay).
    pub delay_ms: u64,
}

/// The kinds of event a step records in its run's log: the one table from transition to
/// event, and the words of the events an agent's loop records about its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Queued,
    Started,
    Retrying,
    Completed,
    Failed,
    Skipped,
    /// AGT-9: an agent's loop holds a call for the owner's approval of a capability.
    Waiting,
    /// AGT-9: the owner decided on a capability an agent's loop waited for.
    Approval,
    /// AGT-15: an agent's router chose an intent.
    Routed,
    /// An agent's loop asked for a tool call.
    ToolRequested,
    /// AGT-3 / AGT-15: a tool the policy or the loop does not let the agent call.
    ToolRefused,
    /// FORK-1: a fork's step took its original's recorded output; nothing was called.
    Reused,
}

impl EventKind {
    pub const ALL: [Self; 12] = [
        Self::Queued,
        Self::Started,
        Self::Retrying,
        Self::Completed,
        Self::Failed,
        Self::Skipped,
        Self::Waiting,
        Self::Approval,
        Self::Routed,
        Self::ToolRequested,
        Self::ToolRefused,
        Self::Reused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "step.queued",
            Self::Started => "step.started",
            Self::Retrying => "step.retrying",
            Self::Completed => "step.completed",
            Self::Failed => "step.failed",
            Self::Skipped => "step.skipped",
            Self::Waiting => "step.waiting",
            Self::Approval => "step.approval",
            Self::Routed => "step.routed",
            Self::ToolRequested => "tool.requested",
            Self::ToolRefused => "tool.refused",
            Self::Reused => "step.reused",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Set these properties on the StepRun.
    Write(Box<StepPatch>),
    /// Append a retried attempt to the StepRun.
    Retried(Retried),
    /// Record an event in the run's log.
    Event(EventKind, Value),
    /// A worker finished an attempt: `RAN_ON`.
    RanOn(String),
    /// A worker lost the attempt it held: `LOST_ON`.
    LostOn { worker_id: String, attempt: u32 },
    /// Publish the step's job (attempt = the state's attempts + 1).
    Publish { redispatch: bool },
    /// The step settled: the run advances, an agent loop hears the result.
    Settled(Result<Value, Value>),
    /// FORK-1: `REUSED_FROM` the original's StepRun.
    ReusedFrom(String),
}

/// The transition function: every (status, message) pair is decided.
///
/// | status | dispatch, skip, fail, start agent, start child | started | finished | worker lost | cancel | await approval | resume |
/// | --- | --- | --- | --- | --- | --- | --- | --- |
/// | pending | moves | running | settles | requeued | canceled | refused | refused |
/// (reuse moves like a dispatch: only a pending step takes it, and it settles it completed)
/// | queued | refused | running | settles | requeued | canceled | refused | refused |
/// | running | refused | running | settles | requeued | canceled | waiting | ignored |
/// | waiting_for_approval | refused | refused | settles | refused | canceled | ignored | running |
/// | settled | refused | ignored | ignored | ignored | ignored | refused | refused |
///
/// The scheduler decides a dispatch, skip or failure, and the engine starts an agent or a child
/// run, only for a pending step. A pending step may take a worker's start or result: dispatching
/// writes nothing, so a step dispatched before an engine restart reads as pending. A start of an
/// earlier attempt than the step's is ignored (stale), as is every worker message for a settled
/// step (EXEC-2) and a cancel of one; only an agent step waits, and no worker holds one. An
/// earlier attempt's retry only adds that attempt's facts (its retry overtook it).
pub fn step(
    state: Step,
    message: Message<'_>,
    now: &str,
) -> Result<Decided<Step, Effect>, Refused> {
    use StepStatus as S;
    let refused = Refused {
        machine: Machine::Step,
        state: state.status.as_str(),
        message: message.kind().as_str(),
    };
    let ignored = |why| Ok(Decided::Ignored(why));
    let mut s = state;
    let mut effects = Vec::new();
    match message {
        Message::Dispatch => match s.status {
            S::Pending => {
                s.status = S::Queued;
                s.queued_at = Some(now.to_owned());
                let attempt = s.attempts + 1;
                effects.push(Effect::Event(
                    EventKind::Queued,
                    json!({"attempt": attempt}),
                ));
                effects.push(Effect::Publish { redispatch: false });
            }
            S::Queued | S::Running | S::WaitingForApproval => return Err(refused),
            S::Completed | S::Failed | S::Skipped | S::Canceled => return Err(refused),
        },
        Message::Reuse {
            from,
            input_hash,
            output,
        } => match s.status {
            S::Pending => {
                s.status = S::Completed;
                s.started_at = Some(now.to_owned());
                effects.push(Effect::Write(Box::new(StepPatch {
                    status: Some(S::Completed),
                    started_at: Some(now.to_owned()),
                    finished_at: Some(now.to_owned()),
                    input_hash: Some(input_hash.to_owned()),
                    output: Some(output.clone()),
                    reused_from: Some(from.to_owned()),
                    ..StepPatch::default()
                })));
                effects.push(Effect::ReusedFrom(from.to_owned()));
                effects.push(Effect::Event(
                    EventKind::Reused,
                    json!({"from": from, "output": output}),
                ));
                effects.push(Effect::Settled(Ok(output.clone())));
            }
            S::Queued | S::Running | S::WaitingForApproval => return Err(refused),
            S::Completed | S::Failed | S::Skipped | S::Canceled => return Err(refused),
        },
        Message::Started {
            attempt,
            worker_id,
            at,
        } => match s.status {
            S::Pending | S::Queued | S::Running => {
                if attempt < s.attempts {
                    return ignored(Ignored::Stale);
                }
                start(&mut s, &mut effects, attempt, worker_id, at);
            }
            S::WaitingForApproval => return Err(refused),
            S::Completed | S::Failed | S::Skipped | S::Canceled => {
                return ignored(Ignored::Settled)
            }
        },
        Message::Finished { call, outcome } => match s.status {
            S::Pending | S::Queued | S::Running | S::WaitingForApproval => {
                finish(&mut s, &mut effects, call, outcome);
            }
            // EXEC-2: a duplicate or late result never records a second result.
            S::Completed | S::Failed | S::Skipped | S::Canceled => {
                return ignored(Ignored::Settled)
            }
        },
        Message::WorkerLost => match s.status {
            S::Pending | S::Queued | S::Running => {
                if let (S::Running, Some(w)) = (s.status, &s.worker_id) {
                    effects.push(Effect::LostOn {
                        worker_id: w.clone(),
                        attempt: s.attempts,
                    });
                }
                s.status = S::Queued;
                effects.push(Effect::Write(Box::new(StepPatch {
                    status: Some(S::Queued),
                    ..StepPatch::default()
                })));
                effects.push(Effect::Event(
                    EventKind::Queued,
                    json!({"attempt": s.attempts + 1, "reason": "worker lost"}),
                ));
                effects.push(Effect::Publish { redispatch: true });
            }
            S::WaitingForApproval => return Err(refused),
            S::Completed | S::Failed | S::Skipped | S::Canceled => {
                return ignored(Ignored::Settled)
            }
        },
        Message::JobLost => match s.status {
            // Nothing to write: the step stays queued, and its StepRun is written when it
            // settles. The event says why the same attempt was published again.
            S::Queued => {
                effects.push(Effect::Event(
                    EventKind::Queued,
                    json!({"attempt": s.attempts + 1, "reason": "job lost"}),
                ));
                effects.push(Effect::Publish { redispatch: true });
            }
            // A worker took the job after all (its notice came first).
            S::Running | S::WaitingForApproval => return ignored(Ignored::Stale),
            S::Pending => return Err(refused),
            S::Completed | S::Failed | S::Skipped | S::Canceled => {
                return ignored(Ignored::Settled)
            }
        },
        Message::Skip => match s.status {
            S::Pending => {
                s.status = S::Skipped;
                effects.push(Effect::Write(Box::new(StepPatch {
                    status: Some(S::Skipped),
                    finished_at: Some(now.to_owned()),
                    ..StepPatch::default()
                })));
                effects.push(Effect::Event(
                    EventKind::Skipped,
                    json!({"reason": "condition"}),
                ));
            }
            S::Queued | S::Running | S::WaitingForApproval => return Err(refused),
            S::Completed | S::Failed | S::Skipped | S::Canceled => return Err(refused),
        },
        Message::Fail { error } => match s.status {
            S::Pending => {
                s.status = S::Failed;
                effects.push(Effect::Write(Box::new(StepPatch {
                    status: Some(S::Failed),
                    finished_at: Some(now.to_owned()),
                    error: Some(error.clone()),
                    ..StepPatch::default()
                })));
                effects.push(Effect::Event(EventKind::Failed, json!({"error": error})));
            }
            S::Queued | S::Running | S::WaitingForApproval => return Err(refused),
            S::Completed | S::Failed | S::Skipped | S::Canceled => return Err(refused),
        },
        Message::StartAgent => match s.status {
            S::Pending => {
                let patch = begin(&mut s, now, None);
                effects.push(Effect::Write(Box::new(patch)));
                effects.push(Effect::Event(EventKind::Started, json!({"agent": true})));
            }
            S::Queued | S::Running | S::WaitingForApproval => return Err(refused),
            S::Completed | S::Failed | S::Skipped | S::Canceled => return Err(refused),
        },
        Message::StartChild { child_run_id } => match s.status {
            S::Pending => {
                let patch = begin(&mut s, now, Some(child_run_id));
                effects.push(Effect::Write(Box::new(patch)));
                effects.push(Effect::Event(
                    EventKind::Started,
                    json!({"childRunId": child_run_id}),
                ));
            }
            S::Queued | S::Running | S::WaitingForApproval => return Err(refused),
            S::Completed | S::Failed | S::Skipped | S::Canceled => return Err(refused),
        },
        Message::Cancel => match s.status {
            S::Pending | S::Queued | S::Running | S::WaitingForApproval => {
                s.status = S::Canceled;
                effects.push(Effect::Write(Box::new(StepPatch {
                    status: Some(S::Canceled),
                    finished_at: Some(now.to_owned()),
                    ..StepPatch::default()
                })));
            }
            S::Completed | S::Failed | S::Skipped | S::Canceled => {
                return ignored(Ignored::Settled)
            }
        },
        Message::AwaitApproval => match s.status {
            S::Running => set_status(&mut s, S::WaitingForApproval, &mut effects),
            S::WaitingForApproval => return ignored(Ignored::Already),
            S::Pending | S::Queued => return Err(refused),
            S::Completed | S::Failed | S::Skipped | S::Canceled => return Err(refused),
        },
        Message::Resume => match s.status {
            S::WaitingForApproval => set_status(&mut s, S::Running, &mut effects),
            S::Running => return ignored(Ignored::Already),
            S::Pending | S::Queued => return Err(refused),
            S::Completed | S::Failed | S::Skipped | S::Canceled => return Err(refused),
        },
    }
    Ok(Decided::Moved(s, effects))
}

/// The engine began the step itself (an agent's loop, a child run): its one attempt runs.
fn begin(s: &mut Step, now: &str, child_run_id: Option<&str>) -> StepPatch {
    s.status = StepStatus::Running;
    s.attempts = 1;
    s.started_at = Some(now.to_owned());
    s.child_run_id = child_run_id.map(str::to_owned);
    StepPatch {
        status: Some(StepStatus::Running),
        attempts: Some(1),
        started_at: Some(now.to_owned()),
        child_run_id: s.child_run_id.clone(),
        ..StepPatch::default()
    }
}

/// An agent step waits for an approval or goes on: its status only.
fn set_status(s: &mut Step, status: StepStatus, effects: &mut Vec<Effect>) {
    s.status = status;
    effects.push(Effect::Write(Box::new(StepPatch {
        status: Some(status),
        ..StepPatch::default()
    })));
}

/// A worker began `attempt`: a notice of an earlier attempt changes nothing; a running attempt
/// another worker held is lost to it.
fn start(s: &mut Step, effects: &mut Vec<Effect>, attempt: u32, worker: &str, at: &str) {
    if attempt < s.attempts {
        return;
    }
    lost_to(s, effects, worker);
    s.status = StepStatus::Running;
    s.attempts = attempt;
    s.worker_id = Some(worker.to_owned());
    if s.started_at.is_none() {
        s.started_at = Some(at.to_owned());
    }
    effects.push(Effect::Event(
        EventKind::Started,
        json!({"attempt": attempt, "workerId": worker}),
    ));
}

/// GRAPH-4: the running attempt's worker is not `by`: it lost the attempt.
fn lost_to(s: &Step, effects: &mut Vec<Effect>, by: &str) {
    if let (StepStatus::Running, Some(w)) = (s.status, &s.worker_id) {
        if w != by {
            effects.push(Effect::LostOn {
                worker_id: w.clone(),
                attempt: s.attempts,
            });
        }
    }
}

/// An attempt of an unsettled step ended.
fn finish(s: &mut Step, effects: &mut Vec<Effect>, call: &Call, outcome: Outcome) {
    if let Outcome::Retrying {
        error,
        next_attempt,
        delay_ms,
    } = &outcome
    {
        if call.attempt < s.attempts {
            // Its retry overtook it (a worker publishes the retry before the failed attempt's
            // result): a later attempt holds the step, which stays as it is. Only the failed
            // attempt's facts are added; no worker lost anything.
            if !call.worker_id.is_empty() {
                effects.push(Effect::RanOn(call.worker_id.clone()));
            }
            effects.extend(retried(call, error, *next_attempt, *delay_ms));
            return;
        }
    }
    let unannounced = s.status == StepStatus::Queued
        || (s.status == StepStatus::Running && s.attempts < call.attempt);
    if unannounced && call.attempt != u32::MAX && !call.worker_id.is_empty() {
        // A fast step's worker reports its start only inside the result.
        start(s, effects, call.attempt, &call.worker_id, &call.started_at);
    }
    if !call.worker_id.is_empty() {
        lost_to(s, effects, &call.worker_id);
        effects.push(Effect::RanOn(call.worker_id.clone()));
        s.worker_id = Some(call.worker_id.clone());
    }
    s.attempts = s.attempts.max(call.attempt);
    let started = s.started_at.clone().unwrap_or(call.started_at.clone());
    let mut telemetry = call.telemetry.clone();
    telemetry.insert("retryCount".into(), json!(call.attempt.saturating_sub(1)));
    let worker = (!call.worker_id.is_empty()).then(|| call.worker_id.clone());
    // The attempt's audit facts: the StepRun is the audit record of its tool calls.
    let audited = StepPatch {
        attempts: Some(call.attempt),
        worker_id: worker.clone(),
        input_hash: call.input_hash.clone(),
        duration_ms: call.duration_ms().cloned(),
        ..StepPatch::default()
    };
    match outcome {
        Outcome::Retrying {
            error,
            next_attempt,
            delay_ms,
        } => {
            s.status = StepStatus::Queued;
            effects.push(Effect::Write(Box::new(StepPatch {
                status: Some(StepStatus::Queued),
                last_error: Some(error.clone()),
                failed_at: Some(call.finished_at.clone()),
                input_hash: None,
                duration_ms: None,
                ..audited
            })));
            effects.extend(retried(call, &error, next_attempt, delay_ms));
        }
        Outcome::Completed { output, truncated } => {
            s.status = StepStatus::Completed;
            telemetry.insert("finalState".into(), json!("completed"));
            telemetry.insert("truncated".into(), json!(truncated));
            effects.push(Effect::Write(Box::new(StepPatch {
                status: Some(StepStatus::Completed),
                output: Some(output.clone()),
                started_at: Some(started),
                finished_at: Some(call.finished_at.clone()),
                queued_at: s.queued_at.clone(),
                telemetry: Some(telemetry.clone()),
                ..audited
            })));
            effects.push(Effect::Event(
                EventKind::Completed,
                json!({"attempt": call.attempt, "output": output, "telemetry": telemetry}),
            ));
            effects.push(Effect::Settled(Ok(output)));
        }
        Outcome::Failed { error } => {
            s.status = StepStatus::Failed;
            telemetry.insert("finalState".into(), json!("failed"));
            effects.push(Effect::Write(Box::new(StepPatch {
                status: Some(StepStatus::Failed),
                error: Some(error.clone()),
                started_at: Some(started),
                finished_at: Some(call.finished_at.clone()),
                // A failed tool call: indexed, so "failures since" reads only failed runs.
                failed_at: worker.map(|_| call.finished_at.clone()),
                queued_at: s.queued_at.clone(),
                telemetry: Some(telemetry),
                ..audited
            })));
            effects.push(Effect::Event(
                EventKind::Failed,
                json!({"attempt": call.attempt, "error": error}),
            ));
            effects.push(Effect::Settled(Err(error)));
        }
    }
}

/// A retried attempt's facts appended to its StepRun, and its `step.retrying` event.
fn retried(call: &Call, error: &Value, next_attempt: u32, delay_ms: u64) -> [Effect; 2] {
    [
        Effect::Retried(Retried {
            at: call.finished_at.clone(),
            duration_ms: call.duration_ms().cloned(),
            record: json!({"attempt": call.attempt, "workerId": call.worker_id,
                           "inputHash": call.input_hash, "durationMs": call.duration_ms(),
                           "error": error, "at": call.finished_at}),
            delay_ms,
        }),
        Effect::Event(
            EventKind::Retrying,
            json!({"attempt": call.attempt, "nextAttempt": next_attempt,
                   "delayMs": delay_ms, "error": error}),
        ),
    ]
}

#[cfg(test)]
#[path = "step_tests.rs"]
mod tests;
