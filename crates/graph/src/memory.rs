//! Memories (SRCH-4): kept in the engine's pass (an agent step's `memory: write` intent) or by
//! `POST /v1/memories`, listed and forgotten by their owner. Each is recorded for ingestion in
//! the transaction that keeps it (the outbox, EPI-3).

use serde::{Deserialize, Serialize};

use crate::knowledge::for_ingestion;
use crate::{cypher, query_file, tx::IdRow, Error, Graph, Tx};

/// A memory to keep.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewMemoryRecord {
    pub id: String,
    pub owner_id: String,
    pub content: String,
    /// The run whose agent step kept it, if one did.
    pub run_id: Option<String>,
    /// The Alternative that run answered with (its Conversation is the memory's).
    pub alternative_id: Option<String>,
    pub at: String,
}

/// A memory as its owner lists it.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryRow {
    pub id: String,
    pub content: String,
    pub created_at: String,
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// EPI-3: `pending` until its Episode is bound, then `bound`, `extracted` or `skipped`.
    #[serde(default)]
    pub binding: Option<String>,
    /// Whether it is embedded (found by meaning, not only by its words).
    #[serde(default)]
    pub embedded: bool,
}

pub async fn remember(tx: &mut Tx, items: &[NewMemoryRecord]) -> Result<(), Error> {
    let items = serde_json::to_value(items).map_err(|e| Error::Decode(e.to_string()))?;
    let items = neo4rs::BoltType::try_from(items).map_err(|e| Error::Decode(e.to_string()))?;
    let q = cypher(query_file!("memory/remember.cypher"), None).param("items", items);
    tx.run(for_ingestion(q)).await
}

pub async fn list(graph: &Graph, owner_id: &str, limit: i64) -> Result<Vec<MemoryRow>, Error> {
    let q = cypher(query_file!("memory/list.cypher"), None)
        .param("ownerId", owner_id)
        .param("limit", limit);
    graph.read_rows(q).await
}

/// Blanks what Graphiti keeps of the forgotten memory `id` (its Episode's text, the facts and
/// extracted Entities only that Episode supports); whether it had an Episode.
pub async fn forget_episode(tx: &mut Tx, id: &str, now: &str) -> Result<bool, Error> {
    Ok(!tx
        .rows::<IdRow>(forget_episode_query(id, now))
        .await?
        .is_empty())
}

/// [`forget_episode`] as its own transaction (the ingestion worker's, after an extraction).
pub async fn forget_episode_autocommit(graph: &Graph, id: &str, now: &str) -> Result<(), Error> {
    graph.run_autocommit(forget_episode_query(id, now)).await
}

fn forget_episode_query(id: &str, now: &str) -> neo4rs::Query {
    cypher(query_file!("memory/forget_episode.cypher"), None)
        .param("id", id)
        .param("now", now)
}

/// Whether the owner's memory `id` was there to forget.
pub async fn forget(tx: &mut Tx, id: &str, owner_id: &str, now: &str) -> Result<bool, Error> {
    let q = cypher(query_file!("memory/forget.cypher"), None)
        .param("id", id)
        .param("ownerId", owner_id)
        .param("now", now);
    Ok(!tx.rows::<IdRow>(q).await?.is_empty())
}
