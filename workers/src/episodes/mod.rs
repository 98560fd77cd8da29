//! The ingestion pool (issue #9): Alternatives and Summaries become Graphiti Episodes, bound
//! back to them, with their entities mirrored into our graph.

pub mod graphiti;
pub mod ingest;
pub mod pool;
