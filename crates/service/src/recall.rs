//! Recall: `GET /v1/search` — hybrid search over what the caller owns (meaning,
//! words and the graph, fused) — and working memory's `retrievedContext`, the same statements
//! by meaning alone for the message being answered. The query is embedded by the Graphiti service's
//! embedder (the one content is embedded with at binding); without it, words and the graph still
//! answer a search, and the answer says so, while retrieved context (by meaning only) is empty.

use std::collections::HashSet;

use aiden_domain::conversation::memory::WorkingMemory;
use aiden_domain::knowledge::recall::{self, ContextPolicy, HitKind, Search};
use aiden_domain::{user::Caller, Error as Rule};
use aiden_graph::conversations as conv;
use aiden_graph::recall as graph_recall;
use serde::Serialize;

pub use aiden_recall::{search, EmbedError, Embedded, Embedder, SearchAnswer};

use crate::conversations::ensure_own;
use crate::{App, Result};

/// A retrieved-context search made before a write transaction, for the message it searched.
pub(crate) struct Prefetched {
    message: String,
    /// `None`: the search failed (the answer goes on without retrieved context).
    hits: Option<Vec<recall::Hit>>,
}

/// What the search warm-up did (logged by `aiden serve`).
#[derive(Debug, Default)]
pub struct RecallWarmUp {
    pub took: std::time::Duration,
    pub searches: usize,
    /// The slower of the first two searches (as an owner of nothing: their plans).
    pub first: std::time::Duration,
    /// The last message's searches (as its owner, three of them).
    pub last: std::time::Duration,
}

/// What `aiden serve` configures: where queries are embedded, and how retrieved context is
/// chosen.
#[derive(Clone, Default)]
pub struct RecallSettings {
    pub embedder: Option<Embedder>,
    pub context: ContextPolicy,
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

    /// Warms what the first search after a start would otherwise pay for: the embedder's
    /// first call (its connection, its model's first pass), Neo4j's plans of the search
    /// statements, which a cold server compiles on their first use (about a second each on a
    /// small machine), and then, for `more`, the code that runs them, which a Neo4j just
    /// started runs in its interpreter until its JIT has compiled it.
    ///
    /// The plans: a plan is cached per statement and parameter types (and sizes: an owner's
    /// id of another length is planned apart), so both shapes are asked, across the owner's
    /// content and within one conversation, first as an owner of nothing (every answer empty)
    /// so that an empty graph is planned too. Then it searches as the owners of a few embedded
    /// messages for those messages, in both shapes and as working memory's retrieved context
    /// does, for `more` after the first message's searches (their plans): only rows that pass
    /// the owner's filter run the code after it (none when `more` is zero). The answers are
    /// discarded; nothing is written to the graph (the embedder client remembers the
    /// questions' vectors, as for working memory). Stops at a failed search as nobody, or at
    /// the third as an owner (the first ones after a start can outlast the driver's response
    /// timeout). When the first searches found no meaning (no embedder, or it did not answer),
    /// the owners' searches are made by words and the graph only: each would otherwise try the
    /// embedder again and warn that it could not (hundreds of lines at a start). `searches`
    /// counts the searches that answered.
    pub async fn warm_recall(&self, more: std::time::Duration) -> RecallWarmUp {
        const NOBODY: &str = "aiden-recall-warm-up";
        /// How many messages (and owners) the warm-up searches for, in turn.
        const QUESTIONS: i64 = 8;
        /// Failed searches as owners that end the warm-up (a graph that does not answer).
        const MAX_FAILED: u32 = 3;
        let started = std::time::Instant::now();
        let mut w = RecallWarmUp::default();
        let embedder = self.recall.embedder.as_ref();
        let warm_search = |by_meaning: bool,
                           owner: &str,
                           q: &str,
                           conversation_id: Option<&str>| {
            let s = Search {
                q: q.chars().take(recall::MAX_QUERY_CHARS).collect(),
                conversation_id: conversation_id.map(str::to_owned),
                kinds: HitKind::ALL.to_vec(),
                limit: 10,
            };
            let owner = owner.to_owned();
            let embedder = embedder.filter(|_| by_meaning);
            async move { aiden_recall::search_remembered(&self.graph, embedder, &owner, &s).await }
        };
        let mut by_meaning = false;
        for conversation_id in [None, Some(NOBODY)] {
            let one = std::time::Instant::now();
            match warm_search(true, NOBODY, "warming up the search", conversation_id).await {
                Ok(answer) => by_meaning |= answer.embedder.is_some(),
                Err(e) => {
                    tracing::warn!(error = %e, "recall warm-up: a search failed");
                    w.took = started.elapsed();
                    return w;
                }
            }
            w.first = w.first.max(one.elapsed());
            w.searches += 1;
        }
        if embedder.is_some() && !by_meaning && !more.is_zero() {
            tracing::info!(
                "recall warm-up: the embedder did not answer; searching as owners by words and \
                 the graph only"
            );
        }
        let questions = match more.is_zero() {
            true => Vec::new(),
            false => match graph_recall::warm_up_questions(&self.graph, QUESTIONS).await {
                Ok(q) => q,
                Err(e) => {
                    tracing::warn!(error = %e, "recall warm-up: no questions");
                    Vec::new()
                }
            },
        };
        // The time given runs from the end of the first message's searches: their shapes'
        // plans (parameters of other sizes are planned apart) are most of those. A search that
        // fails is not the end: on a graph just started the first ones can outlast the
        // driver's response timeout, and they warmed what the next ones need. Three failures
        // are.
        let mut planned: Option<std::time::Instant> = None;
        let mut failed = 0;
        'rounds: while !questions.is_empty() && planned.is_none_or(|p| p.elapsed() < more) {
            for q in &questions {
                let one = std::time::Instant::now();
                let (owner, within) = (&q.owner_id, Some(q.conversation_id.as_str()));
                let across = warm_search(by_meaning, owner, &q.text, None).await;
                let within = warm_search(by_meaning, owner, &q.text, within).await;
                let before = failed;
                for answer in [across, within] {
                    match answer {
                        Ok(_) => w.searches += 1,
                        Err(e) => {
                            failed += 1;
                            tracing::warn!(error = %e, failed, "recall warm-up: a search failed");
                        }
                    }
                }
                if failed >= MAX_FAILED {
                    break 'rounds;
                }
                // Retrieved context searches by meaning alone (its failure is logged inside).
                if by_meaning {
                    match self.context_hits(owner, &q.text, &q.conversation_id).await {
                        Some(_) => w.searches += 1,
                        None => failed += 1,
                    }
                }
                if failed == before {
                    w.last = one.elapsed();
                }
                if planned
                    .get_or_insert_with(std::time::Instant::now)
                    .elapsed()
                    >= more
                {
                    break 'rounds;
                }
            }
        }
        w.took = started.elapsed();
        w
    }

    /// The search itself, for `caller_id` (the API's caller).
    async fn recall(&self, caller_id: &str, s: &Search) -> Result<SearchAnswer> {
        Ok(search(&self.graph, self.recall.embedder.as_ref(), caller_id, s).await?)
    }

    /// AGT-5 layer 4 (SRCH-3): working memory's `retrievedContext` for the message it ends
    /// with — the owner's memories and knowledge most similar to it, within the token budget;
    /// of this conversation only Alternatives of `on_path` that the path does not show. A
    /// failed search leaves it empty (the turn goes on without it). `prefetched` is the search
    /// already made for that message, if it was (see [`App::prefetch_context`]).
    pub(crate) async fn with_retrieved_context(
        &self,
        wm: WorkingMemory,
        owner_id: &str,
        on_path: &HashSet<String>,
        prefetched: Option<&Prefetched>,
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
        let hits = match prefetched.filter(|p| p.message == message) {
            Some(p) => p.hits.clone(),
            None => {
                self.context_hits(owner_id, &message, &wm.conversation_id)
                    .await
            }
        };
        let Some(hits) = hits else {
            return wm;
        };
        let shown: HashSet<String> = wm
            .immediate_path
            .iter()
            .map(|p| p.alternative_id.clone())
            .collect();
        let items = recall::retrieved_context(
            hits,
            &wm.conversation_id,
            on_path,
            &shown,
            self.recall.context,
        );
        wm.with_retrieved(items)
    }

    /// The search behind `retrievedContext` for `message` (`None` when it failed). Only a
    /// query embedded is searched: retrieved context keeps only hits similar enough by meaning
    /// (SRCH-3), so without the query's vector there is nothing to keep.
    async fn context_hits(
        &self,
        owner_id: &str,
        message: &str,
        conversation_id: &str,
    ) -> Option<Vec<recall::Hit>> {
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
        let embedder = self.recall.embedder.as_ref();
        match aiden_recall::search_by_meaning(&self.graph, embedder, owner_id, &s).await {
            Ok(answer) => Some(answer.map(|a| a.hits).unwrap_or_default()),
            Err(e) => {
                tracing::warn!(error = %e, conversation = %conversation_id, "no retrieved context");
                None
            }
        }
    }

    /// The retrieved-context search for `message` (a path's last), made beside other reads;
    /// `None` when there is nothing to search for.
    pub(crate) async fn search_for_context(
        &self,
        owner_id: &str,
        conversation_id: &str,
        message: Option<&str>,
    ) -> Option<Prefetched> {
        let message = message.filter(|m| !m.trim().is_empty())?;
        if self.recall.context.max_tokens == 0 {
            return None;
        }
        let hits = self.context_hits(owner_id, message, conversation_id).await;
        Some(Prefetched {
            message: message.to_owned(),
            hits,
        })
    }

    /// The retrieved-context search for an agent answering the Alternative of `parent_turn_id`
    /// that `chosen` names (else its active one), made before the answer's write transaction
    /// opens: the search may wait on the embedder, and a transaction waiting with it would hold
    /// its locks that long. Only for the caller's own conversation; `None` when there is
    /// nothing to search for. The transaction uses it only if its path ends at the same
    /// message, and searches itself otherwise.
    pub(crate) async fn prefetch_context(
        &self,
        caller: &Caller,
        parent_turn_id: &str,
        chosen: Option<&str>,
    ) -> Option<Prefetched> {
        if self.recall.context.max_tokens == 0 {
            return None;
        }
        let rows = conv::turn_view_autocommit(&self.graph, parent_turn_id)
            .await
            .ok()?;
        let parent = rows.iter().find(|r| match chosen {
            Some(id) => r.alt.id == id,
            None => r.alt.is_active,
        })?;
        let owner = conv::get_autocommit(&self.graph, &parent.conversation_id)
            .await
            .ok()??
            .owner_id;
        if owner != caller.id.as_str() {
            return None;
        }
        let message = parent.alt.content.as_deref();
        self.search_for_context(&owner, &parent.conversation_id, message)
            .await
    }
}
