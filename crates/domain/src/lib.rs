//! The domain: pure types and the rules of `invariants.md`, as functions from a snapshot and a
//! command to a checked change. Owns every rule; must not do I/O (no graph, no network, no clock
//! reads beyond what callers pass in).

pub mod access;
pub mod checked;
pub mod clock;
pub mod conversation;
pub mod error;
pub mod execution;
pub mod ids;
pub mod knowledge;
pub mod metric;
pub mod nullable;
pub mod operation;
pub mod process;
pub mod provider_wire;
pub mod schema;
pub mod secret;
pub mod service;
pub mod template;
pub mod template_vars;
pub mod tool;
pub mod user;
pub mod wire;

pub use checked::Checked;
pub use error::{Error, Violation};
pub use ids::Id;
pub use operation::OperationType;
