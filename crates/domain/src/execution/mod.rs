//! Pure pieces of process execution: interpolation of step inputs, the token estimate and
//! budgets, the audit input hash, the scheduler that decides what a run does next, and the
//! state machine of a step's lifecycle.

pub mod agent;
pub mod audit_hash;
pub mod budget;
pub mod cost;
pub mod fork;
pub mod interpolate;
pub mod machine;
pub mod replay;
pub mod schedule;
