//! The engine lease's statements: which `aiden serve` drives runs.

use serde::Deserialize;

use crate::{cypher, query_file, Error, Graph};

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseRow {
    pub holder: Option<String>,
    pub epoch: Option<i64>,
    pub expires_at: Option<i64>,
}

#[derive(Deserialize)]
struct EpochRow {
    epoch: i64,
}

/// Acquires or renews the lease for `holder` until `expires_at` (epoch milliseconds): the
/// lease's epoch when granted, `None` when another holder's lease is still running.
pub async fn acquire(
    graph: &Graph,
    holder: &str,
    now_ms: i64,
    expires_at_ms: i64,
) -> Result<Option<i64>, Error> {
    let mut tx = graph.begin().await?;
    let q = cypher(query_file!("engine/lease_acquire.cypher"), None)
        .param("holder", holder)
        .param("now", now_ms)
        .param("expiresAt", expires_at_ms);
    let row = match tx.one::<EpochRow>(q).await {
        Ok(row) => row,
        Err(e) => {
            let _ = tx.rollback().await;
            return Err(e);
        }
    };
    tx.commit().await?;
    Ok(row.map(|r| r.epoch))
}

/// Gives the lease up if `holder` has it.
pub async fn release(graph: &Graph, holder: &str, now_ms: i64) -> Result<(), Error> {
    let q = cypher(query_file!("engine/lease_release.cypher"), None)
        .param("holder", holder)
        .param("now", now_ms);
    graph.run_autocommit(q).await
}

pub async fn current(graph: &Graph) -> Result<Option<LeaseRow>, Error> {
    let q = cypher(query_file!("engine/lease_get.cypher"), None);
    Ok(graph.read_rows(q).await?.into_iter().next())
}
