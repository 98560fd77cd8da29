//! ENT-5: a user's Entity and an Entity Graphiti extracted of the same thing become one. Run
//! when Graphiti has extracted Entities (the episode pool, after the binding is recorded) and
//! when a user creates an Entity (`POST /v1/entities`): the graph finds the pairs whose names
//! match, the embedder says how alike their `name: summary` texts are, and the pairs at least
//! 0.85 alike merge into the user's Entity, in one transaction.

use aiden_domain::knowledge::merge::{choose, cosine, Candidate, Merge, MERGE_SIMILARITY};
use aiden_graph::{merges as store, Graph};

use crate::{EmbedError, Embedder};

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Graph(#[from] aiden_graph::Error),
}

/// Merges the pairs among `candidates` that are alike enough; the merges made.
pub async fn merge_similar(
    graph: &Graph,
    embedder: &Embedder,
    candidates: Vec<Candidate>,
) -> Result<Vec<Merge>, MergeError> {
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let mut texts: Vec<String> = Vec::new();
    let mut at = |t: String| match texts.iter().position(|x| *x == t) {
        Some(i) => i,
        None => {
            texts.push(t);
            texts.len() - 1
        }
    };
    let pairs: Vec<(usize, usize)> = candidates
        .iter()
        .map(|c| (at(c.extracted_text()), at(c.user_text())))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let embedded = embedder.embed(&refs).await?;
    let vector = |i: usize| embedded.vectors.get(i).map_or(&[][..], Vec::as_slice);
    let similarity: Vec<f64> = pairs
        .iter()
        .map(|&(x, u)| cosine(vector(x), vector(u)))
        .collect();
    let chosen = choose(&candidates, &similarity, MERGE_SIMILARITY);
    if chosen.is_empty() {
        return Ok(chosen);
    }
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut tx = graph.begin().await?;
    let mut done = Vec::new();
    for m in chosen {
        if let Some(moved) = store::merge(&mut tx, &m, &now).await? {
            tracing::info!(survivor = %m.survivor, merged = %m.merged,
                           similarity = m.similarity, moved, "entities merged (ENT-5)");
            done.push(m);
        }
    }
    tx.commit().await?;
    metrics::counter!("aiden_entity_merges_total").increment(done.len() as u64);
    Ok(done)
}

/// After Graphiti extracted `uuids`: merges them into their owner's Entities of the same thing.
pub async fn after_extraction(
    graph: &Graph,
    embedder: &Embedder,
    uuids: Vec<String>,
) -> Result<Vec<Merge>, MergeError> {
    if uuids.is_empty() {
        return Ok(Vec::new());
    }
    let candidates = store::candidates_for_extracted(graph, uuids).await?;
    merge_similar(graph, embedder, candidates).await
}

/// After a user's Entity `uuid` was created: merges the extracted Entities of the same thing
/// in their conversations into it.
pub async fn after_user_entity(
    graph: &Graph,
    embedder: &Embedder,
    uuid: &str,
) -> Result<Vec<Merge>, MergeError> {
    let candidates = store::candidates_for_user(graph, uuid).await?;
    merge_similar(graph, embedder, candidates).await
}
