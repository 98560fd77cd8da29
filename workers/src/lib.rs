//! Worker pools: the consume loop (`pool`), the [`tool::Tool`] trait and one executor per
//! operation type (`executors`).

pub mod executors;
pub mod tool;
