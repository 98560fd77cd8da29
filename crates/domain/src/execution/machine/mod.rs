//! Run and step transitions as pure state machines: `(state, message, now) → decision`. The
//! engine buffers messages, calls these functions and executes the effects they return (write,
//! publish, notify); it decides nothing about a transition itself, and sets no status by hand.
//! Statuses and patches are typed; each transition's event kind comes from one table per
//! machine ([`EventKind`], [`RunEventKind`]).
//!
//! Every (state, message) pair is decided, one of three ways (each machine's table test walks
//! them all):
//! - **moved** ([`Decided::Moved`]): the new state and the effects to execute, in order;
//! - **ignored** ([`Decided::Ignored`]): a message that may lawfully arrive late, twice or when
//!   what it asks for already holds (a worker's result for a settled step, EXEC-2; a start of a
//!   settled run): nothing changes and nothing is wrong;
//! - **refused** ([`Refused`]): a message the state cannot take (a dispatch of a running step,
//!   a completion of a settled run): an error, never a silent change. The engine logs it,
//!   counts it and applies nothing.

mod run;
mod step;

pub use run::{
    run, RunCore, RunEffect, RunEventKind, RunMessage, RunMessageKind, RunPatch, RunStatus,
    Terminal,
};
pub use step::{
    step, AttemptOutcome, Call, Effect, EventKind, Message, MessageKind, Outcome, Retried, Step,
    StepPatch,
};

pub use crate::execution::schedule::UnknownStatus;

use serde_json::{Map, Value};

/// What a machine made of a message it accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum Decided<S, E> {
    /// The message applies: the state it leaves and the effects to execute, in order.
    Moved(S, Vec<E>),
    /// The message changes nothing, lawfully.
    Ignored(Ignored),
}

/// Why a message changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// The step or run settled: a late or duplicate message (EXEC-2 for a result).
    Settled,
    /// A notice about an earlier attempt than the one the step is at.
    Stale,
    /// What the message asks for holds already (waiting while waiting, running while running).
    Already,
}

impl Ignored {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Settled => "settled",
            Self::Stale => "stale",
            Self::Already => "already",
        }
    }
}

/// The machine a decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Machine {
    Run,
    Step,
}

impl Machine {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Run => "run",
            Self::Step => "step",
        }
    }
}

/// A message the state cannot take: the transition does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {} machine refuses `{message}` in state `{state}`", machine.as_str())]
pub struct Refused {
    pub machine: Machine,
    /// The status word of the state it was in.
    pub state: &'static str,
    /// The message's kind ([`MessageKind`], [`RunMessageKind`]).
    pub message: &'static str,
}

/// Any kind of event a run's log records: a step's or the run's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnyEventKind {
    Step(EventKind),
    Run(RunEventKind),
}

impl AnyEventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Step(k) => k.as_str(),
            Self::Run(k) => k.as_str(),
        }
    }
}

impl From<EventKind> for AnyEventKind {
    fn from(k: EventKind) -> Self {
        Self::Step(k)
    }
}

impl From<RunEventKind> for AnyEventKind {
    fn from(k: RunEventKind) -> Self {
        Self::Run(k)
    }
}

/// A node's properties to set: only those given a value.
fn props<const N: usize>(pairs: [(&str, Option<Value>); N]) -> Map<String, Value> {
    pairs
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v?)))
        .collect()
}

/// A JSON value as the graph stores it: JSON text.
fn text(v: &Option<Value>) -> Option<Value> {
    v.as_ref().map(|v| Value::String(v.to_string()))
}

/// A string property.
fn string(v: &Option<String>) -> Option<Value> {
    v.clone().map(Value::String)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_kind_has_its_own_word() {
        let words: Vec<&str> = EventKind::ALL
            .iter()
            .map(|k| AnyEventKind::from(*k).as_str())
            .chain(
                RunEventKind::ALL
                    .iter()
                    .map(|k| AnyEventKind::from(*k).as_str()),
            )
            .collect();
        let mut unique = words.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), words.len(), "{words:?}");
        assert!(words.contains(&"tool.requested") && words.contains(&"run.started"));
    }
}
