//! Handlers: `verb_noun`, each one service call.

pub mod catalog;
pub mod console;
pub mod conversations;
pub mod forks;
pub mod knowledge;
pub mod measurements;
pub mod ops;
pub mod processes;
pub mod runs;
pub mod upkeep;
pub mod users;
