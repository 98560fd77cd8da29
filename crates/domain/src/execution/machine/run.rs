//! A run's lifecycle: started once, settled once. Settling cancels the steps still open (and
//! through them their child runs), tells a parent step how its child ended, and writes the
//! Alternative's content for a run that generates one.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{props, string, text, Decided, Ignored, Machine, Refused};
use crate::execution::schedule::{StepStatus, UnknownStatus};

// A run's status: the word the graph stores is the one the API shows (the OpenAPI document's
// `RunStatus`, so plain comments here: a doc comment would be in the document too, and one on a
// variant would make the schema a `oneOf` instead of the plain enum clients read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    // An agent step of the run waits for the owner's approval (AGT-9).
    WaitingForApproval,
    Completed,
    Failed,
    Canceled,
}

impl RunStatus {
    /// Every run status, in lifecycle order (the run machine's table test walks it).
    pub const ALL: [Self; 6] = [
        Self::Queued,
        Self::Running,
        Self::WaitingForApproval,
        Self::Completed,
        Self::Failed,
        Self::Canceled,
    ];

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

    /// The stored word; a word no run status has is an error (it used to read as `queued`,
    /// and the engine then started the run).
    pub fn parse(word: &str) -> Result<Self, UnknownStatus> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == word)
            .ok_or_else(|| UnknownStatus::new("run", word))
    }

    /// The words of the statuses `pick` selects: a status set as a statement's parameter.
    pub fn words(pick: impl Fn(Self) -> bool) -> Vec<&'static str> {
        crate::execution::schedule::words_of(&Self::ALL, pick, Self::as_str)
    }

    pub fn is_settled(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled)
    }

    /// Started and not settled: its steps may move.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Running | Self::WaitingForApproval)
    }
}

/// How a run ends: the only statuses a run settles with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminal {
    Completed,
    Failed,
    Canceled,
}

impl Terminal {
    pub const ALL: [Self; 3] = [Self::Completed, Self::Failed, Self::Canceled];

    pub fn status(self) -> RunStatus {
        match self {
            Self::Completed => RunStatus::Completed,
            Self::Failed => RunStatus::Failed,
            Self::Canceled => RunStatus::Canceled,
        }
    }

    /// The event the run's log records when it settles so.
    pub fn event(self) -> RunEventKind {
        match self {
            Self::Completed => RunEventKind::Completed,
            Self::Failed => RunEventKind::Failed,
            Self::Canceled => RunEventKind::Canceled,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.status().as_str()
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
        outcome: Terminal,
        output: Option<Value>,
        /// An `ErrorInfo` as JSON.
        error: Option<Value>,
    },
    /// AGT-9: one of its agent steps waits for the owner's approval.
    AwaitApproval,
    /// AGT-9: none of its agent steps waits any more.
    Resume,
}

/// A [`RunMessage`]'s kind, for the table of decisions (a settle by its outcome).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMessageKind {
    Start,
    Settle(Terminal),
    AwaitApproval,
    Resume,
}

impl RunMessageKind {
    pub const ALL: [Self; 6] = [
        Self::Start,
        Self::Settle(Terminal::Completed),
        Self::Settle(Terminal::Failed),
        Self::Settle(Terminal::Canceled),
        Self::AwaitApproval,
        Self::Resume,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Settle(Terminal::Completed) => "settle_completed",
            Self::Settle(Terminal::Failed) => "settle_failed",
            Self::Settle(Terminal::Canceled) => "settle_canceled",
            Self::AwaitApproval => "await_approval",
            Self::Resume => "resume",
        }
    }
}

impl RunMessage {
    pub fn kind(&self) -> RunMessageKind {
        match self {
            Self::Start => RunMessageKind::Start,
            Self::Settle { outcome, .. } => RunMessageKind::Settle(*outcome),
            Self::AwaitApproval => RunMessageKind::AwaitApproval,
            Self::Resume => RunMessageKind::Resume,
        }
    }
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
    pub const ALL: [Self; 4] = [Self::Started, Self::Completed, Self::Failed, Self::Canceled];

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
///
/// | state | start | settle completed, failed | settle canceled | await approval | resume |
/// | --- | --- | --- | --- | --- | --- |
/// | queued | running | refused | canceled | refused | refused |
/// | running | advances | settles | settles | waiting | ignored |
/// | waiting_for_approval | advances | settles | settles | ignored | running |
/// | settled | ignored | refused | ignored | refused | refused |
///
/// A start of a started run (a redelivered start) only advances it; a start or a cancel of a
/// settled run comes late (a redelivery, a cancel racing the run's end) and is ignored. Only
/// the scheduler completes or fails a run, and only an active one: a completion or failure of
/// a queued or settled run is refused, as is an approval wait outside an active run.
pub fn run(
    state: RunCore,
    steps: &[StepStatus],
    message: RunMessage,
    now: &str,
) -> Result<Decided<RunCore, RunEffect>, Refused> {
    use RunStatus as S;
    let refused = Refused {
        machine: Machine::Run,
        state: state.status.as_str(),
        message: message.kind().as_str(),
    };
    let mut r = state;
    let mut effects = Vec::new();
    match message {
        RunMessage::Start => match r.status {
            S::Queued => {
                r.status = S::Running;
                effects.push(RunEffect::Write(RunPatch {
                    status: Some(S::Running),
                    started_at: Some(now.to_owned()),
                    ..RunPatch::default()
                }));
                effects.push(RunEffect::Link);
                effects.push(RunEffect::Event(
                    RunEventKind::Started,
                    json!({"processId": r.process_id, "processVersion": r.process_version,
                           "depth": r.depth}),
                ));
                effects.push(RunEffect::Advance);
            }
            S::Running | S::WaitingForApproval => effects.push(RunEffect::Advance),
            S::Completed | S::Failed | S::Canceled => {
                return Ok(Decided::Ignored(Ignored::Settled))
            }
        },
        RunMessage::Settle {
            outcome,
            output,
            error,
        } => match (r.status, outcome) {
            (S::Queued, Terminal::Canceled) => {
                // Canceled before it started: linked now, as a start would have.
                effects.push(RunEffect::Link);
                settle(&mut r, steps, outcome, output, error, now, &mut effects);
            }
            (S::Queued, Terminal::Completed | Terminal::Failed) => return Err(refused),
            (S::Running | S::WaitingForApproval, _) => {
                settle(&mut r, steps, outcome, output, error, now, &mut effects);
            }
            (S::Completed | S::Failed | S::Canceled, Terminal::Canceled) => {
                return Ok(Decided::Ignored(Ignored::Settled))
            }
            (S::Completed | S::Failed | S::Canceled, Terminal::Completed | Terminal::Failed) => {
                return Err(refused)
            }
        },
        RunMessage::AwaitApproval => match r.status {
            S::Running => set_status(&mut r, S::WaitingForApproval, &mut effects),
            S::WaitingForApproval => return Ok(Decided::Ignored(Ignored::Already)),
            S::Queued | S::Completed | S::Failed | S::Canceled => return Err(refused),
        },
        RunMessage::Resume => match r.status {
            S::WaitingForApproval => set_status(&mut r, S::Running, &mut effects),
            S::Running => return Ok(Decided::Ignored(Ignored::Already)),
            S::Queued | S::Completed | S::Failed | S::Canceled => return Err(refused),
        },
    }
    Ok(Decided::Moved(r, effects))
}

/// An active run waits for an approval or goes on: its status only.
fn set_status(r: &mut RunCore, status: RunStatus, effects: &mut Vec<RunEffect>) {
    r.status = status;
    effects.push(RunEffect::Write(RunPatch {
        status: Some(status),
        ..RunPatch::default()
    }));
}

/// The run ends with `outcome`: its open steps are canceled, its output written, its end
/// announced, the workers told of a cancel and a parent step of how it ended.
fn settle(
    r: &mut RunCore,
    steps: &[StepStatus],
    outcome: Terminal,
    output: Option<Value>,
    error: Option<Value>,
    now: &str,
    effects: &mut Vec<RunEffect>,
) {
    let status = outcome.status();
    r.status = status;
    for (i, s) in steps.iter().enumerate() {
        if !s.is_settled() {
            effects.push(RunEffect::CancelStep(i));
        }
    }
    let output_text = output
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
    effects.push(RunEffect::Event(
        outcome.event(),
        json!({"output": output, "error": error}),
    ));
    if outcome == Terminal::Canceled {
        effects.push(RunEffect::Canceled);
    }
    if r.has_parent {
        effects.push(RunEffect::TellParent(parent_outcome(
            &r.id, outcome, output, error,
        )));
    }
}

/// What a parent step hears of its child: the output, or the child's error (its message
/// prefixed with the child run), or CHILD_RUN_FAILED.
fn parent_outcome(
    id: &str,
    outcome: Terminal,
    output: Option<Value>,
    error: Option<Value>,
) -> Result<Value, Value> {
    match (outcome, output) {
        (Terminal::Completed, Some(o)) => Ok(o),
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
