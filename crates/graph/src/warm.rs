//! Plans the statements a run's start, its first engine pass and a worker's first job use,
//! before a request needs them. Neo4j plans a statement on its first use after a start
//! (about a second for the engine's pass statement on a small machine) and holds the one
//! writer meanwhile: every run, of every type, waited behind the first run's plan.

mod passes;

pub use passes::{drive_passes, Warmed};

use std::time::Duration;

use crate::runs::{self, Batch};
use crate::{cypher, limits, query_file, users, Error, Graph};

/// No id the graph holds: every read answers nothing, and the batch writes nothing.
const NOTHING: &str = "aiden-warm-up";

/// Runs each statement once in a transaction that is rolled back (the worker's Tool read,
/// which its callers make outside one, after it). A plan is cached per statement and
/// parameter types (and a string's or list's size, rounded up to a power of ten), so each is
/// asked with the types its callers send (a run's start reads its Process's current version:
/// `number` null).
pub async fn run_statements(graph: &Graph) -> Result<(), Error> {
    let mut tx = graph.begin().await?;
    users::find_by_token_hash(&mut tx, NOTHING).await?;
    runs::plan_source(&mut tx, NOTHING, None).await?;
    runs::apply(&mut tx, &Batch::default()).await?;
    runs::get(&mut tx, NOTHING).await?;
    runs::step_runs_of(&mut tx, NOTHING).await?;
    limits::spent_on(&mut tx, NOTHING).await?;
    // The engine's sweep: a cutoff before every heartbeat marks no one.
    runs::mark_stale_workers_offline(&mut tx, "").await?;
    tx.rollback().await?;
    // A pool's slots each read their Tool on their first job, all at once: unplanned, Neo4j
    // planned the statement once per slot side by side (32 plans of 65-200 ms on two cores).
    runs::tool_for_call(graph, NOTHING).await?;
    Ok(())
}

/// How long the graph server's JVM has run.
pub async fn server_uptime(graph: &Graph) -> Result<Duration, Error> {
    #[derive(serde::Deserialize)]
    struct Row {
        ms: u64,
    }
    let q = cypher(query_file!("warm/server_uptime.cypher"), None);
    let rows: Vec<Row> = graph.read_rows(q).await?;
    let ms = rows
        .first()
        .map(|r| r.ms)
        .ok_or_else(|| Error::Decode("the graph server's JVM reported no uptime".to_owned()))?;
    Ok(Duration::from_millis(ms))
}
