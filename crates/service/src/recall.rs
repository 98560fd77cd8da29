//! Recall: `GET /v1/search` — hybrid search over what the caller owns (meaning,
//! words and the graph, fused) — and working memory's `retrievedContext`, the same search
//! seeded with the message being answered. The query is embedded by the Graphiti service's
//! embedder (the one content is embedded with at binding); without it, words and the graph still
//! answer, and the answer says so.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use aiden_domain::conversation::memory::WorkingMemory;
use aiden_domain::knowledge::recall::{
    self, ContextPolicy, Hit, HitKind, Search, SignalRow, MAX_LIMIT,
};
use aiden_domain::{user::Caller, Error as Rule};
use aiden_graph::conversations as conv;
use aiden_graph::recall::{self as graph_recall, Ask};
use serde::{Deserialize, Serialize};

use crate::conversations::ensure_own;
use crate::{App, Result};

/// The client of the Graphiti service's `POST /embed`.
#[derive(Clone)]
pub struct Embedder {
    base: String,
    http: reqwest::Client,
}

/// Vectors and the model that made them.
pub struct Embedded {
    pub model: String,
    pub vectors: Vec<Vec<f32>>,
}

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// Not reachable, or not ready (503): nothing is wrong with the text.
    #[error("embedder unavailable: {0}")]
    Unavailable(String),
    /// The service has no embedder configured (an OpenAI-compatible one without a URL).
    #[error("no embedder configured")]
    NotConfigured,
    #[error("embedder failed: {0}")]
    Failed(String),
}

impl Embedder {
    /// For content at binding: a long text may take a while.
    pub fn new(base: &str) -> Self {
        Self::with_timeout(base, Duration::from_secs(30))
    }

    /// For a query: a search (or an agent turn's working memory, computed in its transaction)
    /// goes on without meaning rather than wait long for it.
    pub fn for_queries(base: &str) -> Self {
        Self::with_timeout(base, Duration::from_secs(2))
    }

    fn with_timeout(base: &str, timeout: Duration) -> Self {
        Self {
            base: base.trim_end_matches('/').to_owned(),
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(2))
                .timeout(timeout)
                .build()
                .unwrap_or_default(),
        }
    }

    pub async fn embed(&self, texts: &[&str]) -> std::result::Result<Embedded, EmbedError> {
        #[derive(Deserialize)]
        struct Answer {
            model: String,
            vectors: Vec<Vec<f32>>,
        }
        let r = self
            .http
            .post(format!("{}/embed", self.base))
            .json(&serde_json::json!({ "texts": texts }))
            .send()
            .await
            .map_err(|e| EmbedError::Unavailable(e.to_string()))?;
        let status = r.status();
        if status.as_u16() == 503 {
            let body = r.text().await.unwrap_or_default();
            if body.contains("no embedder") {
                return Err(EmbedError::NotConfigured);
            }
            return Err(EmbedError::Unavailable(body.chars().take(300).collect()));
        }
        if !status.is_success() {
            let body = r.text().await.unwrap_or_default();
            return Err(EmbedError::Failed(format!(
                "{status}: {}",
                body.chars().take(300).collect::<String>()
            )));
        }
        let a: Answer = r
            .json()
            .await
            .map_err(|e| EmbedError::Failed(format!("unreadable answer: {e}")))?;
        if a.vectors.len() != texts.len() {
            return Err(EmbedError::Failed(format!(
                "{} vectors for {} texts",
                a.vectors.len(),
                texts.len()
            )));
        }
        Ok(Embedded {
            model: a.model,
            vectors: a.vectors,
        })
    }
}

/// What `aiden serve` configures: where queries are embedded, and how retrieved context is
/// chosen.
#[derive(Clone, Default)]
pub struct RecallSettings {
    pub embedder: Option<Embedder>,
    pub context: ContextPolicy,
}

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

/// `GET /v1/entities/{uuid}/context`: an Entity with what its page shows.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntityPage {
    pub entity: crate::views::EntityView,
    /// The caller's Alternatives that mention it, latest first (at most 20).
    pub mentions: Vec<graph_recall::Mention>,
    /// Its facts still valid in the caller's conversations (at most 50).
    pub facts: Vec<graph_recall::EntityFact>,
    /// The Entities those facts link it to.
    pub neighbours: Vec<graph_recall::Neighbour>,
}

/// How many Entities found for the query lead to the content that mentions them.
const GRAPH_SEEDS: usize = 5;

impl App {
    /// `GET /v1/search` (SRCH-1, SRCH-2): the caller's own content and knowledge, ranked.
    pub async fn search(&self, caller: &Caller, s: Search) -> Result<SearchAnswer> {
        if let Some(id) = &s.conversation_id {
            let c = conv::get_autocommit(&self.graph, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_own(caller, &c.owner_id)?;
        }
        self.recall(caller.id.as_str(), &s).await
    }

    /// `GET /v1/entities/{uuid}/context` (ENT-2: 404 unless the caller may see it).
    pub async fn entity_page(&self, caller: &Caller, uuid: &str) -> Result<EntityPage> {
        let entity = self.get_entity(caller, uuid).await?;
        let ctx = graph_recall::entity_context(&self.graph, caller.id.as_str(), uuid).await?;
        let (mentions, facts) = ctx.map(|c| (c.mentions, c.facts)).unwrap_or_default();
        let mut neighbours: Vec<graph_recall::Neighbour> = Vec::new();
        for f in &facts {
            if f.other.uuid != uuid && !neighbours.contains(&f.other) {
                neighbours.push(f.other.clone());
            }
        }
        Ok(EntityPage {
            entity,
            mentions,
            facts,
            neighbours,
        })
    }

    /// The search itself, for `caller_id` (the API's caller, or a conversation's owner).
    async fn recall(&self, caller_id: &str, s: &Search) -> Result<SearchAnswer> {
        search(&self.graph, self.recall.embedder.as_ref(), caller_id, s).await
    }

    /// AGT-5 layer 4 (SRCH-3): working memory's `retrievedContext` for the message it ends
    /// with — the owner's memories and knowledge most similar to it, within the token budget;
    /// of this conversation only Alternatives of `on_path` that the path does not show. A
    /// failed search leaves it empty (the turn goes on without it).
    pub(crate) async fn with_retrieved_context(
        &self,
        wm: WorkingMemory,
        owner_id: &str,
        on_path: &HashSet<String>,
    ) -> WorkingMemory {
        let Some(message) = wm
            .immediate_path
            .last()
            .and_then(|p| p.content.clone())
            .filter(|c| !c.trim().is_empty())
        else {
            return wm;
        };
        if self.recall.context.max_tokens == 0 {
            return wm;
        }
        let s = Search {
            q: message.chars().take(recall::MAX_QUERY_CHARS).collect(),
            conversation_id: None,
            kinds: vec![
                HitKind::Episode,
                HitKind::Entity,
                HitKind::Fact,
                HitKind::Summary,
                HitKind::Memory,
            ],
            limit: 20,
        };
        let shown: HashSet<String> = wm
            .immediate_path
            .iter()
            .map(|p| p.alternative_id.clone())
            .collect();
        match self.recall(owner_id, &s).await {
            Ok(answer) => {
                let items = recall::retrieved_context(
                    answer.hits,
                    &wm.conversation_id,
                    on_path,
                    &shown,
                    self.recall.context,
                );
                wm.with_retrieved(items)
            }
            Err(e) => {
                tracing::warn!(error = %e, conversation = %wm.conversation_id, "no retrieved context");
                wm
            }
        }
    }
}

/// The search (SRCH-2: over what `caller_id` owns): the API's, working memory's, and the
/// `recall` operation type's in the worker pools.
pub async fn search(
    graph: &aiden_graph::Graph,
    embedder: Option<&Embedder>,
    caller_id: &str,
    s: &Search,
) -> Result<SearchAnswer> {
    let (vector, model) = match embedder {
        None => (None, None),
        Some(e) => match e.embed(&[s.q.as_str()]).await {
            Ok(mut x) => (x.vectors.pop(), Some(x.model)),
            Err(err) => {
                // The detail (an address, an upstream's words) is for the log, not the caller.
                tracing::warn!(error = %err, "search without meaning: the query was not embedded");
                (None, None)
            }
        },
    };
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
        Err(crate::Error::Graph(aiden_graph::Error::Query(e))) if vector.is_some() => {
            tracing::warn!(error = %e, "search without meaning: the vector query failed");
            let mut answer = ranked(graph, caller_id, s, None).await?;
            answer.warning = Some(NO_MEANING.into());
            Ok(answer)
        }
        Err(e) => Err(e),
    }
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
    if wants(HitKind::Entity) || wants(HitKind::Episode) {
        let entities = graph_recall::entities(graph, &ask).await?;
        let ranked = recall::fuse(entities.clone(), &HashMap::new(), GRAPH_SEEDS);
        seeds = ranked.into_iter().map(|h| h.id).collect();
        if wants(HitKind::Entity) {
            rows.extend(entities);
        }
    }
    if wants(HitKind::Fact) {
        rows.extend(graph_recall::facts(graph, &ask).await?);
    }
    let knowledge_ms = started.elapsed().as_secs_f64() * 1000.0;
    let mut exact = false;
    if !content_kinds.is_empty() {
        let graph_seeds = if wants(HitKind::Episode) {
            &seeds[..]
        } else {
            &[]
        };
        let mut content =
            graph_recall::content(graph, &ask, &content_kinds, graph_seeds, false).await?;
        // The index's nearest may be mostly other users' content: then scan the caller's own.
        let by_meaning = content.iter().filter(|r| r.signal == "vector").count();
        if vector.is_some() && by_meaning < s.limit {
            exact = true;
            content = graph_recall::content(graph, &ask, &content_kinds, graph_seeds, true).await?;
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
        hits: recall::fuse(rows, &entity_rank, s.limit),
        signals,
        embedder: None,
        warning: None,
    })
}
