//! Recall: what a search asks, how its signals fuse into one ranking, and which hits
//! become an agent's retrieved context. Pure: the graph queries give one row per hit and signal
//! (`vector`, `text`, `graph`); this decides the order.
//!
//! Rules: SRCH-1 (a query is 1..=1000 characters, `limit` 1..=50, `kinds` from the closed list),
//! SRCH-2 (only what the caller owns: the graph queries filter, the tests check), SRCH-3 (an
//! agent's retrieved context takes from the current conversation only what lies on the path it
//! answers, never a sibling branch's content).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::execution::budget::estimate_text_tokens;
use crate::Error;

/// What a hit is: an Alternative's content (its Episode), an Entity, a fact between Entities,
/// a Summary, an introspection note, a memory its owner asked to keep (SRCH-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HitKind {
    Episode,
    Entity,
    Fact,
    Summary,
    Introspection,
    Memory,
}

impl HitKind {
    pub const ALL: [HitKind; 6] = [
        HitKind::Episode,
        HitKind::Entity,
        HitKind::Fact,
        HitKind::Summary,
        HitKind::Introspection,
        HitKind::Memory,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HitKind::Episode => "episode",
            HitKind::Entity => "entity",
            HitKind::Fact => "fact",
            HitKind::Summary => "summary",
            HitKind::Introspection => "introspection",
            HitKind::Memory => "memory",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Content the caller wrote or was answered with (the `content` query), as opposed to what
    /// Graphiti extracted from it.
    pub fn is_content(self) -> bool {
        matches!(
            self,
            HitKind::Episode | HitKind::Summary | HitKind::Introspection | HitKind::Memory
        )
    }
}

pub const MAX_QUERY_CHARS: usize = 1000;
pub const MAX_LIMIT: usize = 50;
pub const DEFAULT_LIMIT: usize = 10;

/// A checked search.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    pub q: String,
    pub conversation_id: Option<String>,
    pub kinds: Vec<HitKind>,
    pub limit: usize,
}

/// SRCH-1: checks `GET /v1/search`'s parameters.
pub fn check_search(
    q: Option<&str>,
    conversation_id: Option<&str>,
    kinds: Option<&str>,
    limit: Option<i64>,
) -> Result<Search, Error> {
    let q = q.map(str::trim).unwrap_or_default();
    if q.is_empty() || q.chars().count() > MAX_QUERY_CHARS {
        return Err(Error::invariant(
            "SRCH-1",
            "/q",
            format!("`q` is 1 to {MAX_QUERY_CHARS} characters of text to search for"),
        ));
    }
    let kinds = match kinds.map(str::trim).filter(|k| !k.is_empty()) {
        None => HitKind::ALL.to_vec(),
        Some(list) => {
            let mut out = Vec::new();
            for k in list.split(',').map(str::trim) {
                let kind = HitKind::parse(k).ok_or_else(|| {
                    Error::invariant(
                        "SRCH-1",
                        "/kinds",
                        format!(
                            "unknown kind `{k}`: kinds are {}",
                            HitKind::ALL.map(HitKind::as_str).join(", ")
                        ),
                    )
                })?;
                if !out.contains(&kind) {
                    out.push(kind);
                }
            }
            out
        }
    };
    let limit = match limit {
        None => DEFAULT_LIMIT,
        Some(l) if (1..=MAX_LIMIT as i64).contains(&l) => l as usize,
        Some(_) => {
            return Err(Error::invariant(
                "SRCH-1",
                "/limit",
                format!("`limit` is 1 to {MAX_LIMIT}"),
            ))
        }
    };
    Ok(Search {
        q: q.to_owned(),
        conversation_id: conversation_id.filter(|c| !c.is_empty()).map(str::to_owned),
        kinds,
        limit,
    })
}

/// The words of a query as a Lucene query the full-text index can take: letters and digits
/// only, lower-cased (no operator of the user's, `AND` included, reaches the parser), at most
/// 32 terms, OR-ed.
pub fn text_query(q: &str) -> String {
    q.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(32)
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Where a hit came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alternative_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub introspection_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub episode_id: Option<String>,
    /// Whether the Alternative is its Turn's active one (only for Alternatives).
    #[serde(
        rename = "activeBranch",
        alias = "active",
        skip_serializing_if = "Option::is_none"
    )]
    pub active: Option<bool>,
}

/// One row of a recall query: a hit as one signal saw it.
#[derive(Debug, Clone)]
pub struct SignalRow {
    pub id: String,
    pub kind: HitKind,
    /// `vector`, `text` or `graph`.
    pub signal: String,
    /// The index's score: for `vector`, Neo4j's normalised cosine (1 + cos) / 2.
    pub score: Option<f64>,
    /// For `graph`: the Entity that led here.
    pub via: Option<String>,
    pub name: Option<String>,
    pub content: String,
    pub created_at: Option<String>,
    pub sources: Vec<Source>,
    /// The conversation an Entity or fact was extracted in (its Graphiti group), whatever
    /// Alternatives `sources` lists.
    pub group: Option<String>,
    /// For content: whether its vector is written (the node is `Embedded`), so meaning can
    /// find it; `None` for Entities and facts.
    pub indexed: Option<bool>,
    /// SRCH-7: the newer message of the same user that supersedes this one.
    pub superseded_by: Option<Version>,
    /// SRCH-7: the older message this one supersedes.
    pub supersedes: Option<Version>,
}

/// SRCH-7: a message that superseded a hit, or that a hit superseded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    /// The Alternative's id.
    pub id: String,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// When it was said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

/// Which signal found a hit, as the console says it: `meaning` (its cosine similarity reached
/// [`MIN_SIMILARITY`]), `words` (its full-text score reached [`MIN_TEXT_SHARE`] of the best),
/// `entity` (it mentions an Entity found for the query).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FoundBy {
    Meaning,
    Words,
    Entity,
}

/// A search hit: one per thing found, with the fused score and each signal's own.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    pub id: String,
    pub kind: HitKind,
    /// Similarity to the query plus what words and the graph add ([`fuse`]); higher is better,
    /// comparable within one answer.
    pub score: f64,
    /// The content; an Entity's summary; a fact's sentence.
    pub text: String,
    /// An Entity's name, a fact's relation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Cosine similarity of the query and the hit (-1..1), when the vector signal saw it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// The full-text index's BM25 score, when the words matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_score: Option<f64>,
    /// The Entities found for the query that mention this content (the graph signal).
    pub via_entities: Vec<String>,
    /// The signals strong enough to list it (SRCH-6), in this order: meaning, words, entity.
    /// Never empty.
    pub found_by: Vec<FoundBy>,
    /// For content: `false` while it is not embedded yet (just said, its binding pending, or
    /// no embedder), so only words and Entities can find it; `None` for Entities and facts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// Where it came from: content's own place; for an entity or fact, its latest mention.
    #[serde(flatten)]
    pub origin: Source,
    /// Every place it came from (an entity or fact: up to five mentioning Alternatives).
    pub sources: Vec<Source>,
    /// SRCH-7: superseded by this newer message of the same user, so no longer current
    /// (ranked below it unless the question asks about the past).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<Version>,
    /// SRCH-7: the older message this one superseded (its history: "was: …").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<Version>,
    /// An Entity's or fact's conversation (SRCH-3 decides on it; `origin` shows it).
    #[serde(skip)]
    pub group: Option<String>,
}

/// How much the words and the graph add to a hit's similarity: enough to order near ties
/// (a name said word for word, content about an Entity the query names), not enough to lift a
/// weak meaning over a strong one. A paraphrase shares no word with what it asks about, so
/// words that do match are mostly other content's: rank-based fusion (RRF), which counts a
/// single shared word as much as the best meaning, put the right answer in the top 5 for 61 %
/// of the recall corpus's questions; this, for all of them (docs/knowledge.md, "Recall").
const TEXT_WEIGHT: f64 = 0.1;
const GRAPH_WEIGHT: f64 = 0.1;

/// SRCH-6, the relevance floor for meaning: a hit whose cosine similarity to the query is
/// under this is not found by meaning. all-MiniLM-L6-v2 (the default embedder) puts unrelated
/// sentences at about −0.1..0.15 and a paraphrase of the question above 0.3; retrieved context,
/// which goes into a prompt unseen, asks for 0.3 ([`ContextPolicy`]); a list a person reads can
/// afford the margin between.
pub const MIN_SIMILARITY: f64 = 0.2;

/// SRCH-6, the relevance floor for words: a hit whose full-text (BM25) score is under this
/// share of the answer's best is not found by words. The query's words are OR-ed, so a hit that
/// shares only a common word ("the", "is") with the query scores a small fraction of one that
/// shares its rare words; BM25's scale differs from index to index, hence a share, not a number.
pub const MIN_TEXT_SHARE: f64 = 0.25;

/// SRCH-6: the signals that found a hit strongly enough to list it; empty means it is dropped.
pub fn found_by(similarity: Option<f64>, text_share: f64, via_entity: bool) -> Vec<FoundBy> {
    let mut by = Vec::new();
    // The index's scores are single precision and turned back into a cosine: a hair of slack.
    if similarity.is_some_and(|s| s >= MIN_SIMILARITY - 1e-6) {
        by.push(FoundBy::Meaning);
    }
    if text_share >= MIN_TEXT_SHARE - 1e-6 {
        by.push(FoundBy::Words);
    }
    if via_entity {
        by.push(FoundBy::Entity);
    }
    by
}

/// Fuses the rows of the signals into one ranking. A hit's score is its cosine similarity to
/// the query, plus up to [`TEXT_WEIGHT`] for its full-text score relative to the best one, plus
/// up to [`GRAPH_WEIGHT`] when it mentions an Entity found for the query (1 / that Entity's
/// rank). A hit the vector signal did not return counts the least similarity it did return
/// (nothing it missed was closer), but never below 0; with no vector signal at all, words and
/// the graph decide.
///
/// SRCH-6, the relevance floor: a hit is listed only when [`found_by`] names a signal for it
/// (a cosine of at least [`MIN_SIMILARITY`], a full-text score of at least [`MIN_TEXT_SHARE`]
/// of the best, or an Entity found for the query) and its score is above 0: near-zero and
/// negative matches are noise, not answers.
///
/// SRCH-7: with `prefer_current` (a question not about the past), a message another one
/// superseded ranks below it ([`prefer_current_versions`]).
pub fn fuse(
    rows: Vec<SignalRow>,
    entity_rank: &HashMap<String, usize>,
    limit: usize,
    prefer_current: bool,
) -> Vec<Hit> {
    let best_text = rows
        .iter()
        .filter(|r| r.signal == "text")
        .filter_map(|r| r.score)
        .fold(0.0f64, f64::max);
    let floor = rows
        .iter()
        .filter(|r| r.signal == "vector")
        .filter_map(|r| r.score)
        .map(|s| 2.0 * s - 1.0)
        .reduce(f64::min)
        .unwrap_or(0.0)
        .max(0.0);
    let mut hits: HashMap<(HitKind, String), (Hit, f64)> = HashMap::new();
    for r in rows {
        let key = (r.kind, r.id.clone());
        let (hit, graph) = hits.entry(key).or_insert_with(|| {
            let hit = Hit {
                id: r.id.clone(),
                kind: r.kind,
                score: 0.0,
                text: r.content.clone(),
                name: r.name.clone(),
                similarity: None,
                text_score: None,
                via_entities: Vec::new(),
                found_by: Vec::new(),
                indexed: r.indexed,
                created_at: r.created_at.clone(),
                origin: r.sources.first().cloned().unwrap_or_else(|| Source {
                    conversation_id: r.group.clone(),
                    ..Source::default()
                }),
                sources: r.sources.clone(),
                group: r.group.clone(),
                superseded_by: r.superseded_by.clone(),
                supersedes: r.supersedes.clone(),
            };
            (hit, 0.0)
        });
        match r.signal.as_str() {
            "vector" => {
                let cos = r.score.map(|s| 2.0 * s - 1.0);
                hit.similarity = max_of(hit.similarity, cos);
            }
            "text" => hit.text_score = max_of(hit.text_score, r.score),
            _ => {
                if let Some(v) = r.via {
                    let rank = entity_rank.get(&v).copied().unwrap_or(usize::MAX);
                    *graph = graph.max(1.0 / rank.max(1) as f64);
                    if !hit.via_entities.contains(&v) {
                        hit.via_entities.push(v);
                    }
                }
            }
        }
    }
    let mut out: Vec<Hit> = hits
        .into_values()
        .filter_map(|(mut h, graph)| {
            let text = match (h.text_score, best_text > 0.0) {
                (Some(t), true) => t / best_text,
                _ => 0.0,
            };
            h.score = h.similarity.unwrap_or(floor) + TEXT_WEIGHT * text + GRAPH_WEIGHT * graph;
            h.found_by = found_by(h.similarity, text, !h.via_entities.is_empty());
            (!h.found_by.is_empty() && h.score > 0.0).then_some(h)
        })
        .collect();
    if prefer_current {
        prefer_current_versions(&mut out);
        // SRCH-6 holds after it: a hit the penalty took to 0 or below is not listed.
        out.retain(|h| h.score > 0.0);
    }
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(
                b.similarity
                    .unwrap_or(-1.0)
                    .total_cmp(&a.similarity.unwrap_or(-1.0)),
            )
            .then(a.id.cmp(&b.id))
    });
    out.truncate(limit);
    out
}

/// SRCH-7: how much a superseded message's score loses, in cosine units, when the message that
/// superseded it is not among the hits: about the margin by which a question about now matches
/// the older wording better than the newer ("which city is my home" is closer to "I live in
/// Lisbon" than to "I moved from Lisbon to Porto").
pub const SUPERSEDED_PENALTY: f64 = 0.15;

/// SRCH-7: the current version first. Hits linked by `superseded_by` form chains (Lisbon ←
/// Porto ← Madrid); the newest version found heads its chain with the best score of the chain,
/// and each older version comes right under the one that superseded it (its history). When the
/// head was itself superseded by a message not found here, the whole chain loses
/// [`SUPERSEDED_PENALTY`].
pub fn prefer_current_versions(hits: &mut [Hit]) {
    let index: HashMap<&str, usize> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| (h.id.as_str(), i))
        .collect();
    // Each hit's chain head and its distance from it (a cycle, which the rule cannot draw,
    // stops at the chain's length).
    let placed: Vec<(usize, usize)> = (0..hits.len())
        .map(|i| {
            let (mut at, mut depth) = (i, 0);
            while let Some(&next) = hits[at]
                .superseded_by
                .as_ref()
                .and_then(|v| index.get(v.id.as_str()))
            {
                if depth >= hits.len() {
                    break;
                }
                (at, depth) = (next, depth + 1);
            }
            (at, depth)
        })
        .collect();
    let mut best: HashMap<usize, f64> = HashMap::new();
    for (i, (head, _)) in placed.iter().enumerate() {
        let b = best.entry(*head).or_insert(f64::MIN);
        *b = b.max(hits[i].score);
    }
    let scores: Vec<f64> = placed
        .iter()
        .map(|(head, depth)| {
            let penalty = match hits[*head].superseded_by {
                Some(_) => SUPERSEDED_PENALTY,
                None => 0.0,
            };
            best[head] - penalty - *depth as f64 * HISTORY_GAP
        })
        .collect();
    for (h, s) in hits.iter_mut().zip(scores) {
        h.score = s;
    }
}

/// How far below its current version a superseded hit ranks: enough to order them, too little
/// to let another hit in between.
const HISTORY_GAP: f64 = 1e-6;

fn max_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// One item of an agent's retrieved context (working memory's `retrievedContext`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Retrieved {
    pub kind: HitKind,
    pub id: String,
    /// Cosine similarity to the message being answered (-1..1).
    pub score: f64,
    /// The text the prompt carries (an entity as `name: summary`).
    pub text: String,
    pub tokens: u64,
    /// Where it came from (for an entity or fact, its latest mention).
    pub source: Source,
}

/// How retrieved context is chosen: a token budget and a similarity floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextPolicy {
    pub max_tokens: u64,
    pub min_similarity: f64,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self {
            max_tokens: 400,
            min_similarity: 0.3,
        }
    }
}

/// SRCH-3 and the budget: from hits (any order), those similar enough, ordered by similarity,
/// that fit the token budget. Of the current conversation only Alternatives are taken, and only
/// those in `on_path` (the path answered, covered by a Summary or not) that working memory does
/// not show already (`shown`): never a sibling branch's content, nor an Entity, fact or Summary
/// of the conversation (working memory has its own, drawn from the path). A memory its owner
/// asked to keep (SRCH-4) is never a branch's: it qualifies wherever it was said.
pub fn retrieved_context(
    hits: Vec<Hit>,
    conversation_id: &str,
    on_path: &HashSet<String>,
    shown: &HashSet<String>,
    policy: ContextPolicy,
) -> Vec<Retrieved> {
    let here = |s: &Source| s.conversation_id.as_deref() == Some(conversation_id);
    let mut candidates: Vec<Hit> = hits
        .into_iter()
        .filter(|h| h.similarity.is_some_and(|s| s >= policy.min_similarity))
        .filter(|h| h.kind != HitKind::Introspection)
        .filter(|h| {
            if h.kind == HitKind::Memory {
                return true;
            }
            let of_here = h.group.as_deref() == Some(conversation_id) || h.sources.iter().any(here);
            if !of_here {
                return true;
            }
            h.kind == HitKind::Episode
                && h.sources.iter().all(|s| {
                    here(s)
                        && s.alternative_id
                            .as_ref()
                            .is_some_and(|a| on_path.contains(a) && !shown.contains(a))
                })
        })
        .collect();
    candidates.sort_by(|a, b| {
        b.similarity
            .unwrap_or(0.0)
            .total_cmp(&a.similarity.unwrap_or(0.0))
            .then(a.id.cmp(&b.id))
    });
    let mut used = 0u64;
    let mut out: Vec<Retrieved> = Vec::new();
    // SRCH-3 for a version (SRCH-7): of this conversation, only one on the path answered.
    let may_show = |v: &Version| {
        v.conversation_id.as_deref() != Some(conversation_id) || on_path.contains(&v.id)
    };
    for h in candidates {
        let Some((id, text, source)) = current_version(&h, shown, &may_show) else {
            continue;
        };
        if out.iter().any(|r| r.id == id) {
            continue;
        }
        let tokens = estimate_text_tokens(&text);
        if used + tokens > policy.max_tokens {
            continue;
        }
        used += tokens;
        out.push(Retrieved {
            kind: h.kind,
            id,
            score: h.similarity.unwrap_or(0.0),
            text,
            tokens,
            source,
        });
    }
    out
}

/// SRCH-7: what retrieved context shows for a hit: a superseded message as its current version
/// with the old one as history ("I moved to Porto (was: I live in Lisbon)"), nothing when the
/// path already shows the current version; a message that superseded another, with that
/// history. `None`: nothing to show.
fn current_version(
    h: &Hit,
    shown: &HashSet<String>,
    may_show: &impl Fn(&Version) -> bool,
) -> Option<(String, String, Source)> {
    let was = |now: &str, old: &str| format!("{now} (was: {old})");
    match (&h.superseded_by, &h.supersedes) {
        (Some(v), _) if may_show(v) => {
            if shown.contains(&v.id) {
                return None;
            }
            let source = Source {
                conversation_id: v.conversation_id.clone(),
                turn_id: v.turn_id.clone(),
                alternative_id: Some(v.id.clone()),
                ..Source::default()
            };
            Some((v.id.clone(), was(&v.text, &h.text), source))
        }
        (_, Some(old)) if may_show(old) => {
            Some((h.id.clone(), was(&h.text, &old.text), h.origin.clone()))
        }
        _ => {
            let text = match (&h.name, h.kind) {
                (Some(n), HitKind::Entity) if !h.text.is_empty() => format!("{n}: {}", h.text),
                (Some(n), HitKind::Entity) => n.clone(),
                _ => h.text.clone(),
            };
            Some((h.id.clone(), text, h.origin.clone()))
        }
    }
}

#[cfg(test)]
mod tests;
