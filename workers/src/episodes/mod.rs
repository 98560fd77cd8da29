//! The ingestion pool: Alternatives and Summaries become Graphiti Episodes, bound
//! back to them; graphiti-core writes the Episodes and the Entities it extracts into this same
//! graph.

pub mod backfill;
pub mod graphiti;
pub mod ingest;
pub mod pool;
