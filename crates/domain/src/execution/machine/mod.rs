//! Run and step transitions as pure state machines: `(state, message, now) → (state,
//! effects)`. The engine buffers messages, calls these functions and executes the effects
//! they return (write, publish, notify); it decides nothing about a transition itself, and
//! every transition has a unit test here. Statuses and patches are typed; each transition's
//! event kind comes from one table per machine ([`EventKind`], [`RunEventKind`]).

mod run;
mod step;

pub use run::{run, RunCore, RunEffect, RunEventKind, RunMessage, RunPatch, RunStatus};
pub use step::{step, Call, Effect, EventKind, Message, Outcome, Retried, Step, StepPatch};

use serde_json::{Map, Value};

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
