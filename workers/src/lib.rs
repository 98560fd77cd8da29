//! Worker pools: the consume loop (`pool`), Tool resolution with the execution-time checks
//! (`resolve`), the [`tool::Tool`] trait and one executor per operation type (`executors`).

pub mod episodes;
pub mod executors;
pub mod pool;
pub mod resolve;
pub mod tool;
