//! A run's lifecycle: started once, settled once. Settling cancels the steps still open (and
//! through them their child runs), tells a parent step how its child ended, and writes the
//! Alternative's content for a run that generates one.

use serde_json::{json, Map, Value};

use super::{props, string, text};
use crate::execution::schedule::StepStatus;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Queued,
    Running,
    Completed,
    Failed,
    Canceled,
    /// An agent step of the run waits for the owner's approval (AGT-9).
    WaitingForApproval,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
            Self::WaitingForApproval => "waiting_for_approval",
        }
    }

    /// The stored word; anything unknown reads as `queued` (the engine then starts it).
    pub fn parse(s: &str) -> Self {
        match s {
            "running" => Self::Running,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "canceled" => Self::Canceled,
            "waiting_for_approval" => Self::WaitingForApproval,
            _ => Self::Queued,
        }
    }

    pub fn is_settled(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled)
    }

    /// Started and not settled: its steps may move.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Running | Self::WaitingForApproval)
    }
}

/// What the run machine reads of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunCore {
    pub id: String,
    pub status: RunStatus,
    pub process_id: String,
    pub process_version: i64,
    pub depth: i64,
    /// A child run: its parent step hears how it ended.
    pub has_parent: bool,
    /// The run generates an agent Alternative: its output is that Alternative's content.
    pub generates_alternative: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunMessage {
    /// The engine starts the run (a start of a run already started only advances it).
    Start,
    /// The run ends: the scheduler completed or failed it, or it was canceled.
    Settle {
        status: RunStatus,
        output: Option<Value>,
        /// An `ErrorInfo` as JSON.
        error: Option<Value>,
    },
}

/// The Run properties to set, typed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunPatch {
    pub status: Option<RunStatus>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub output: Option<Value>,
    /// The Alternative's content: a string output as is, anything else as JSON text.
    pub output_text: Option<String>,
    pub error: Option<Value>,
}

impl RunPatch {
    /// The Run properties it sets (JSON values as JSON text, as the graph stores them).
    pub fn to_set(&self) -> Map<String, Value> {
        props([
            ("status", self.status.map(|s| json!(s.as_str()))),
            ("startedAt", string(&self.started_at)),
            ("finishedAt", string(&self.finished_at)),
            ("output", text(&self.output)),
            ("outputText", string(&self.output_text)),
            ("error", text(&self.error)),
        ])
    }
}

/// The run event kinds: the one table from run transition to event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEventKind {
    Started,
    Completed,
    Failed,
    Canceled,
}

impl RunEventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "run.started",
            Self::Completed => "run.completed",
            Self::Failed => "run.failed",
            Self::Canceled => "run.canceled",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunEffect {
    Write(RunPatch),
    Event(RunEventKind, Value),
    /// Link the run to its definitions and caller (`RUN_OF`, `STARTED_BY`, `OF_STEP`).
    Link,
    /// Cancel step `i` (and the child run it started, if any).
    CancelStep(usize),
    /// Tell the workers the run was canceled.
    Canceled,
    /// A child run settled: its parent step completes with the output or fails.
    TellParent(Result<Value, Value>),
    /// Let the scheduler decide what happens next.
    Advance,
}

/// The transition function. `steps`: the statuses of the run's steps, in plan order.
pub fn run(
    state: RunCore,
    steps: &[StepStatus],
    message: RunMessage,
    now: &str,
) -> (RunCore, Vec<RunEffect>) {
    let mut r = state;
    let mut effects = Vec::new();
    match message {
        RunMessage::Start => {
            if r.status == RunStatus::Queued {
                r.status = RunStatus::Running;
                effects.push(RunEffect::Write(RunPatch {
                    status: Some(RunStatus::Running),
                    started_at: Some(now.to_owned()),
                    ..RunPatch::default()
                }));
                effects.push(RunEffect::Link);
                effects.push(RunEffect::Event(
                    RunEventKind::Started,
                    json!({"processId": r.process_id, "processVersion": r.process_version,
                           "depth": r.depth}),
                ));
            }
            effects.push(RunEffect::Advance);
        }
        RunMessage::Settle {
            status,
            output,
            error,
        } => {
            if r.status.is_settled() {
                return (r, effects);
            }
            if r.status == RunStatus::Queued {
                // Canceled before it started: linked now, as a start would have.
                effects.push(RunEffect::Link);
            }
            r.status = status;
            for (i, s) in steps.iter().enumerate() {
                if !s.is_settled() {
                    effects.push(RunEffect::CancelStep(i));
                }
            }
            let output_text =
                output
                    .as_ref()
                    .filter(|_| r.generates_alternative)
                    .map(|o| match o {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    });
            effects.push(RunEffect::Write(RunPatch {
                status: Some(status),
                finished_at: Some(now.to_owned()),
                output: output.clone(),
                output_text,
                error: error.clone(),
                ..RunPatch::default()
            }));
            let kind = match status {
                RunStatus::Completed => RunEventKind::Completed,
                RunStatus::Canceled => RunEventKind::Canceled,
                _ => RunEventKind::Failed,
            };
            effects.push(RunEffect::Event(
                kind,
                json!({"output": output, "error": error}),
            ));
            if status == RunStatus::Canceled {
                effects.push(RunEffect::Canceled);
            }
            if r.has_parent {
                effects.push(RunEffect::TellParent(parent_outcome(
                    &r.id, status, output, error,
                )));
            }
        }
    }
    (r, effects)
}

/// What a parent step hears of its child: the output, or the child's error (its message
/// prefixed with the child run), or CHILD_RUN_FAILED.
fn parent_outcome(
    id: &str,
    status: RunStatus,
    output: Option<Value>,
    error: Option<Value>,
) -> Result<Value, Value> {
    match (status, output) {
        (RunStatus::Completed, Some(o)) => Ok(o),
        _ => {
            let code = error.as_ref().and_then(|e| e["code"].as_str());
            let message = error.as_ref().and_then(|e| e["message"].as_str());
            Err(match (code, message) {
                (Some(code), Some(message)) => json!({"code": code,
                    "message": format!("child run {id}: {message}"), "retryable": false}),
                _ => json!({"code": "CHILD_RUN_FAILED",
                    "message": format!("child run {id} did not complete"), "retryable": false}),
            })
        }
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
