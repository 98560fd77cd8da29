//! ENT-5: the pairs of Entities a merge may join, and the merge itself
//! (`cypher/queries/entity/merge*.cypher`).

use aiden_domain::knowledge::merge::{Candidate, Merge};
use serde::Deserialize;

use crate::{cypher, query_file, Error, Graph, Tx};

/// Pairs for Entities Graphiti just extracted.
pub async fn candidates_for_extracted(
    graph: &Graph,
    uuids: Vec<String>,
) -> Result<Vec<Candidate>, Error> {
    let q = cypher(
        query_file!("entity/merge_candidates_extracted.cypher"),
        None,
    )
    .param("uuids", uuids);
    graph.read_rows(q).await
}

/// Pairs for a user Entity just created or confirmed.
pub async fn candidates_for_user(graph: &Graph, uuid: &str) -> Result<Vec<Candidate>, Error> {
    let q = cypher(query_file!("entity/merge_candidates_user.cypher"), None).param("uuid", uuid);
    graph.read_rows(q).await
}

/// Merges `m` in `tx`; how many edges moved, or `None` when there was nothing to merge (either
/// side gone, or merged already).
pub async fn merge(tx: &mut Tx, m: &Merge, now: &str) -> Result<Option<i64>, Error> {
    #[derive(Deserialize)]
    struct Row {
        moved: i64,
    }
    let q = cypher(query_file!("entity/merge.cypher"), None)
        .param("survivor", m.survivor.as_str())
        .param("merged", m.merged.as_str())
        .param("similarity", m.similarity)
        .param("now", now);
    Ok(tx.one::<Row>(q).await?.map(|r| r.moved))
}
