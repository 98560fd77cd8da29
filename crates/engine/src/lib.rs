//! The run engine.
