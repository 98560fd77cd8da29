//! The search (SRCH-1, SRCH-2): hybrid over what one caller owns — meaning (the query's
//! embedding against the vector indexes), words (full-text) and the graph (content that mentions
//! the Entities the query finds) — fused into one ranking. Without an embedder, or when the
//! stored vectors do not fit the query's, words and the graph still answer, and the answer says
//! so.

use std::collections::HashMap;

use aiden_domain::knowledge::currency;
use aiden_domain::knowledge::recall::{self, Hit, HitKind, Search, SignalRow, MAX_LIMIT};
use aiden_graph::recall::{self as graph_recall, Ask};
use serde::Serialize;

use crate::Embedder;

type Result<T> = std::result::Result<T, aiden_graph::Error>;

/// `GET /v1/search`'s answer.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchAnswer {
    /// Best first.
    pub hits: Vec<Hit>,
    /// The signals that ran: `vector` (meaning), `text` (words), `graph` (through Entities).
    pub signals: Vec<String>,
    /// The embedder's model, when the query was embedded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
    /// Why a signal did not run (the embedder unreachable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// How many Entities found for the query lead to the content that mentions them.
const GRAPH_SEEDS: usize = 5;

/// The search (SRCH-2: over what `caller_id` owns): the API's, and the `recall` operation
/// type's in the worker pools.
pub async fn search(
    graph: &aiden_graph::Graph,
    embedder: Option<&Embedder>,
    caller_id: &str,
    s: &Search,
) -> Result<SearchAnswer> {
    let (vector, model) = embedded(embedder, &s.q, None).await.unzip();
    match ranked(graph, caller_id, s, vector.as_deref()).await {
        Ok(mut answer) => {
            if vector.is_some() {
                answer.embedder = model;
            } else {
                answer.warning = Some(NO_MEANING.into());
            }
            Ok(answer)
        }
        // The query's vector does not fit the stored ones (the embedder changed): words and
        // the graph still answer.
        Err(aiden_graph::Error::Query(e)) if vector.is_some() => {
            tracing::warn!(error = %e, "search without meaning: the vector query failed");
            let mut answer = ranked(graph, caller_id, s, None).await?;
            answer.warning = Some(NO_MEANING.into());
            Ok(answer)
        }
        Err(e) => Err(e),
    }
}

/// The search behind working memory's retrieved context (SRCH-3), which keeps only hits
/// similar enough by meaning: a query that could not be embedded has none, so it is not made
/// (`None`), nor when the stored vectors do not fit the query's.
pub async fn search_by_meaning(
    graph: &aiden_graph::Graph,
    embedder: Option<&Embedder>,
    caller_id: &str,
    s: &Search,
) -> Result<Option<SearchAnswer>> {
    let Some((vector, model)) = embedded(embedder, &s.q, Some(caller_id)).await else {
        return Ok(None);
    };
    match ranked(graph, caller_id, s, Some(&vector)).await {
        Ok(mut answer) => {
            answer.embedder = Some(model);
            Ok(Some(answer))
        }
        Err(aiden_graph::Error::Query(e)) => {
            tracing::warn!(error = %e, "no search by meaning: the vector query failed");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The query's vector and the model that made it; `None` without an embedder or when it
/// failed (logged: the detail, an address or an upstream's words, is not the caller's).
/// `remembered_for`: a vector the embedder made for the same asker and text lately will do
/// (working memory's search repeats its message at every read; a user's search is embedded
/// afresh).
async fn embedded(
    embedder: Option<&Embedder>,
    q: &str,
    remembered_for: Option<&str>,
) -> Option<(Vec<f32>, String)> {
    let embedder = embedder?;
    let answer = match remembered_for {
        Some(asker) => embedder.embed_query(asker, q).await,
        None => embedder.embed_one(q).await,
    };
    match answer {
        Ok(x) => Some(x),
        Err(err) => {
            tracing::warn!(error = %err, "search without meaning: the query was not embedded");
            None
        }
    }
}

/// Whether a scan of the caller's own content could find what the vector index's answer
/// missed: fewer than `limit` of its nearest were the caller's, and the index holds more than
/// it was asked for (`indexed`, its count; `None` when that was not read: then scan).
fn scan_needed(by_meaning: usize, limit: usize, indexed: Option<i64>, asked: i64) -> bool {
    by_meaning < limit && indexed.is_none_or(|n| n > asked)
}

/// What a search without its vector signal says.
const NO_MEANING: &str = "searched by words and the graph only: the query could not be embedded";

/// The signals, fused.
async fn ranked(
    graph: &aiden_graph::Graph,
    caller_id: &str,
    s: &Search,
    vector: Option<&[f32]>,
) -> Result<SearchAnswer> {
    let started = std::time::Instant::now();
    let text = recall::text_query(&s.q);
    let ask = Ask {
        caller_id,
        conversation_id: s.conversation_id.as_deref(),
        vector,
        text: &text,
        k: (s.limit as i64 * 10).clamp(50, (MAX_LIMIT * 10) as i64),
    };
    let wants = |k: HitKind| s.kinds.contains(&k);
    let content_kinds: Vec<HitKind> = s.kinds.iter().copied().filter(|k| k.is_content()).collect();
    let mut rows: Vec<SignalRow> = Vec::new();
    let mut seeds: Vec<String> = Vec::new();
    // Entities and facts are independent reads: one round between them.
    let entities = async {
        match wants(HitKind::Entity) || wants(HitKind::Episode) {
            true => graph_recall::entities(graph, &ask).await.map(Some),
            false => Ok(None),
        }
    };
    let facts = async {
        match wants(HitKind::Fact) {
            true => graph_recall::facts(graph, &ask).await,
            false => Ok(Vec::new()),
        }
    };
    let (entities, facts) = tokio::join!(entities, facts);
    if let Some(entities) = entities? {
        let ranked = recall::fuse(entities.clone(), &HashMap::new(), GRAPH_SEEDS, false);
        seeds = ranked.into_iter().map(|h| h.id).collect();
        if wants(HitKind::Entity) {
            rows.extend(entities);
        }
    }
    rows.extend(facts?);
    let knowledge_ms = started.elapsed().as_secs_f64() * 1000.0;
    let mut exact = false;
    if !content_kinds.is_empty() {
        let graph_seeds = if wants(HitKind::Episode) {
            &seeds[..]
        } else {
            &[]
        };
        let (content, indexed) = tokio::join!(
            graph_recall::content(graph, &ask, &content_kinds, graph_seeds, None),
            async {
                match vector {
                    Some(_) => graph_recall::embedded_total(graph).await.ok(),
                    None => None,
                }
            }
        );
        let mut content = content?;
        // The index's nearest may be mostly other users' content: then scan the caller's own,
        // unless the index holds no more than it was asked for (its answer held them all).
        let by_meaning = content.iter().filter(|r| r.signal == "vector").count();
        if vector.is_some() && scan_needed(by_meaning, s.limit, indexed, ask.k) {
            exact = true;
            let scan = Some(graph_recall::EXACT_SCAN_CAP);
            content = graph_recall::content(graph, &ask, &content_kinds, graph_seeds, scan).await?;
        }
        rows.extend(content);
    }
    tracing::debug!(
        knowledge_ms,
        total_ms = started.elapsed().as_secs_f64() * 1000.0,
        exact,
        rows = rows.len(),
        "recall"
    );
    let entity_rank: HashMap<String, usize> = seeds
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), i + 1))
        .collect();
    let mut signals: Vec<String> = Vec::new();
    if vector.is_some() {
        signals.push("vector".into());
    }
    if !text.is_empty() {
        signals.push("text".into());
    }
    if !seeds.is_empty() && wants(HitKind::Episode) {
        signals.push("graph".into());
    }
    Ok(SearchAnswer {
        hits: recall::fuse(
            rows,
            &entity_rank,
            s.limit,
            !currency::asks_about_past(&s.q),
        ),
        signals,
        embedder: None,
        warning: None,
    })
}

#[cfg(test)]
mod tests {
    use super::scan_needed;

    #[test]
    fn the_callers_own_are_scanned_only_when_the_index_may_have_left_some_out() {
        assert!(
            !scan_needed(10, 10, Some(5_000), 100),
            "enough found by meaning"
        );
        assert!(
            !scan_needed(3, 10, Some(100), 100),
            "the index answered with all it holds"
        );
        assert!(!scan_needed(0, 10, Some(0), 100), "nothing embedded yet");
        assert!(
            scan_needed(3, 10, Some(101), 100),
            "more held than asked for"
        );
        assert!(scan_needed(3, 10, None, 100), "the count was not read");
    }
}
