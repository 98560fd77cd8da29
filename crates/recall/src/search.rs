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
/// By meaning alone the hits are ranked by similarity, then current versions are preferred
/// (SRCH-7), which can demote a few superseded messages: the caller's nearest `limit` times
/// this much (and the messages that supersede another, whatever their rank) fill `limit`
/// after that.
const MEANING_ONLY_MARGIN: usize = 2;

/// The search (SRCH-2: over what `caller_id` owns): the API's, and the `recall` operation
/// type's in the worker pools.
pub async fn search(
    graph: &aiden_graph::Graph,
    embedder: Option<&Embedder>,
    caller_id: &str,
    s: &Search,
) -> Result<SearchAnswer> {
    searched(graph, embedder, caller_id, s, false).await
}

/// [`search`], with the query's vector remembered for the caller as working memory's is:
/// `aiden serve`'s warm-up repeats its questions, and spends its time in Neo4j, not the embedder.
pub async fn search_remembered(
    graph: &aiden_graph::Graph,
    embedder: Option<&Embedder>,
    caller_id: &str,
    s: &Search,
) -> Result<SearchAnswer> {
    searched(graph, embedder, caller_id, s, true).await
}

async fn searched(
    graph: &aiden_graph::Graph,
    embedder: Option<&Embedder>,
    caller_id: &str,
    s: &Search,
    remember: bool,
) -> Result<SearchAnswer> {
    let asker = remember.then_some(caller_id);
    let (vector, model) = embedded(embedder, &s.q, asker).await.unzip();
    match ranked(graph, caller_id, s, vector.as_deref(), Signals::All).await {
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
            let mut answer = ranked(graph, caller_id, s, None, Signals::All).await?;
            answer.warning = Some(NO_MEANING.into());
            Ok(answer)
        }
        Err(e) => Err(e),
    }
}

/// The search behind working memory's retrieved context (SRCH-3), which keeps only hits
/// similar enough by meaning, most similar first: a query that could not be embedded has none,
/// so it is not made (`None`), nor when the stored vectors do not fit the query's. Only the
/// meaning signal is asked for: a hit found by words or through an Entity alone has no
/// similarity, and would only push similar ones out of the `limit` best.
pub async fn search_by_meaning(
    graph: &aiden_graph::Graph,
    embedder: Option<&Embedder>,
    caller_id: &str,
    s: &Search,
) -> Result<Option<SearchAnswer>> {
    let Some((vector, model)) = embedded(embedder, &s.q, Some(caller_id)).await else {
        return Ok(None);
    };
    match ranked(graph, caller_id, s, Some(&vector), Signals::MeaningOnly).await {
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
    let started = std::time::Instant::now();
    let answer = match remembered_for {
        Some(asker) => embedder.embed_query(asker, q).await,
        None => embedder.embed_one(q).await,
    };
    tracing::debug!(
        embed_ms = started.elapsed().as_secs_f64() * 1000.0,
        "recall: the query embedded"
    );
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

/// Which signals a search asks the graph for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Signals {
    /// Meaning, words and the graph (`GET /v1/search`).
    All,
    /// Meaning alone (working memory's retrieved context).
    MeaningOnly,
}

/// The signals, fused.
async fn ranked(
    graph: &aiden_graph::Graph,
    caller_id: &str,
    s: &Search,
    vector: Option<&[f32]>,
    signals_asked: Signals,
) -> Result<SearchAnswer> {
    let started = std::time::Instant::now();
    // The statements skip their full-text part for an empty text.
    let text = match signals_asked {
        Signals::All => recall::text_query(&s.q),
        Signals::MeaningOnly => String::new(),
    };
    let k = (s.limit as i64 * 10).clamp(50, (MAX_LIMIT * 10) as i64);
    let ask = Ask {
        caller_id,
        conversation_id: s.conversation_id.as_deref(),
        vector,
        text: &text,
        k,
        keep_by_meaning: match signals_asked {
            Signals::All => k,
            Signals::MeaningOnly => (s.limit * MEANING_ONLY_MARGIN) as i64,
        },
    };
    let wants = |k: HitKind| s.kinds.contains(&k);
    let content_kinds: Vec<HitKind> = s.kinds.iter().copied().filter(|k| k.is_content()).collect();
    let mut rows: Vec<SignalRow> = Vec::new();
    let mut seeds: Vec<String> = Vec::new();
    // Entities and facts are independent reads: one round between them.
    let entities = async {
        match wants(HitKind::Entity) || (wants(HitKind::Episode) && signals_asked == Signals::All) {
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
    // Content found through the Entities waits for them; by meaning alone it goes beside them.
    let (entities, facts, content) = match signals_asked {
        Signals::All => {
            let (entities, facts) = tokio::join!(entities, facts);
            (entities, facts, None)
        }
        Signals::MeaningOnly => {
            let content = content_rows(graph, &ask, &content_kinds, &[], s.limit);
            let (entities, facts, content) = tokio::join!(entities, facts, content);
            (entities, facts, Some(content))
        }
    };
    if let Some(entities) = entities? {
        if signals_asked == Signals::All {
            let ranked = recall::fuse(entities.clone(), &HashMap::new(), GRAPH_SEEDS, false);
            seeds = ranked.into_iter().map(|h| h.id).collect();
        }
        if wants(HitKind::Entity) {
            rows.extend(entities);
        }
    }
    rows.extend(facts?);
    // By meaning alone the content statement ran beside these: then this is all three.
    let knowledge_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (content, exact) = match content {
        Some(content) => content?,
        None => {
            let graph_seeds = if wants(HitKind::Episode) {
                &seeds[..]
            } else {
                &[]
            };
            content_rows(graph, &ask, &content_kinds, graph_seeds, s.limit).await?
        }
    };
    rows.extend(content);
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

/// Content's rows (none when no content kind is asked for), and whether the caller's own were
/// scanned because the vector index's nearest were mostly other users'.
async fn content_rows(
    graph: &aiden_graph::Graph,
    ask: &Ask<'_>,
    kinds: &[HitKind],
    graph_seeds: &[String],
    limit: usize,
) -> Result<(Vec<SignalRow>, bool)> {
    if kinds.is_empty() {
        return Ok((Vec::new(), false));
    }
    let content = graph_recall::content(graph, ask, kinds, graph_seeds, None).await?;
    // The index's nearest may be mostly other users' content: then scan the caller's own,
    // unless the index holds no more than it was asked for (its answer held them all). Its
    // size is read only then: most searches find enough of the caller's own without it.
    let by_meaning = content.iter().filter(|r| r.signal == "vector").count();
    if ask.vector.is_none() || by_meaning >= limit {
        return Ok((content, false));
    }
    let indexed = graph_recall::embedded_total(graph).await.ok();
    if scan_needed(by_meaning, limit, indexed, ask.k) {
        let scan = Some(graph_recall::EXACT_SCAN_CAP);
        let scanned = graph_recall::content(graph, ask, kinds, graph_seeds, scan).await?;
        return Ok((scanned, true));
    }
    Ok((content, false))
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
