//! One binding, idempotently (EPI-1..5): read the Alternative or Summary, make sure the
//! Episodes of its extraction context are bound first, save its Episode through the Graphiti
//! service under the derived uuid (graphiti-core writes the `Episodic` node into this same
//! graph), bind it (`HAS_CONTENT` to that node, `episodeId`, once), extract with exactly the
//! context of its own path, and record the final state. Running it again at any point — a
//! redelivery, a duplicate, a restart after SIGKILL — converges on the same graph.

use aiden_domain::knowledge::currency;
use aiden_domain::knowledge::episode::{self, Binding};
use aiden_graph::knowledge::{self as kg, ContextItem, Target, TargetKind};
use aiden_graph::Graph;

use aiden_recall::merges;
use aiden_recall::{EmbedError, Embedder};

use super::graphiti::{Graphiti, GraphitiError};

/// Why a pass did not finish.
#[derive(Debug)]
pub enum Interrupted {
    /// Graphiti or the graph is unreachable: wait and try again, for as long as it takes.
    Wait(String),
    /// A failure that may pass: retried a bounded number of times, then the binding fails.
    Retry(String),
}

/// How a pass ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Final: `extracted`, `skipped` or a `failed` recorded earlier.
    Final(Binding),
    /// Cannot ever succeed (rejected, no content, bound to another Episode): to be recorded as
    /// `failed` and dead-lettered with this reason.
    Poison(String),
    /// The Alternative or Summary does not exist (an item of a wiped graph).
    Gone,
}

pub struct Ingestor {
    pub graph: Graph,
    pub graphiti: Graphiti,
    /// Embeds the content at binding, for recall.
    pub embedder: Embedder,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn graph_error(e: aiden_graph::Error) -> Interrupted {
    match e {
        aiden_graph::Error::Unavailable(m) => Interrupted::Wait(m),
        other => Interrupted::Retry(other.to_string()),
    }
}

fn graphiti_error(e: GraphitiError) -> Result<Outcome, Interrupted> {
    match e {
        GraphitiError::Unavailable(m) => Err(Interrupted::Wait(m)),
        GraphitiError::Failed(m) => Err(Interrupted::Retry(m)),
        GraphitiError::Rejected { status, message } => Ok(Outcome::Poison(format!(
            "graphiti rejected it ({status}): {message}"
        ))),
    }
}

/// EPI-5: the Episodes an extraction may see — those of its own path (or its Summary's
/// sources) that are bound, root-most first. Never a sibling branch's.
pub fn extraction_context(context: &[ContextItem]) -> Vec<String> {
    context
        .iter()
        .filter(|c| {
            matches!(
                c.binding.as_deref().and_then(Binding::parse),
                Some(Binding::Bound | Binding::Extracted | Binding::Skipped)
            )
        })
        .filter_map(|c| c.episode_id.clone())
        .collect()
}

impl Ingestor {
    /// One pass over `id`. `bind_context` first completes the bindings of its context (its
    /// path's Alternatives may have been relayed out of order, or still be on their way).
    pub async fn run(
        &self,
        kind: TargetKind,
        id: &str,
        bind_context: bool,
    ) -> Result<Outcome, Interrupted> {
        let Some(target) = kg::target(&self.graph, kind, id)
            .await
            .map_err(graph_error)?
        else {
            return Ok(Outcome::Gone);
        };
        if let Some(b) = target.binding.as_deref().and_then(Binding::parse) {
            if b.is_final() {
                return Ok(Outcome::Final(b));
            }
        }
        let target = if bind_context && self.complete_context(&target).await? {
            // Read again: the context's bindings changed.
            kg::target(&self.graph, kind, id)
                .await
                .map_err(graph_error)?
                .unwrap_or(target)
        } else {
            target
        };
        self.bind_and_extract(kind, &target).await
    }

    /// Binds what of the context is still pending (root-most first). Their own failures are
    /// theirs: only "unreachable" stops this item. Returns whether anything was done.
    async fn complete_context(&self, target: &Target) -> Result<bool, Interrupted> {
        let mut did = false;
        for c in &target.context {
            let pending = c
                .binding
                .as_deref()
                .and_then(Binding::parse)
                .is_some_and(|b| !b.is_final());
            let Some(kind) = TargetKind::parse(&c.kind).filter(|_| pending) else {
                continue;
            };
            match Box::pin(self.run(kind, &c.id, false)).await {
                Err(Interrupted::Wait(m)) => return Err(Interrupted::Wait(m)),
                _ => did = true,
            }
        }
        Ok(did)
    }

    async fn bind_and_extract(&self, kind: TargetKind, t: &Target) -> Result<Outcome, Interrupted> {
        let Some(text) = t.content.as_deref().filter(|c| !c.trim().is_empty()) else {
            return Ok(Outcome::Poison("nothing to ingest: no content".into()));
        };
        let draft = episode::draft(
            kind,
            &t.episode_key(),
            &t.conversation_id,
            t.speaker.as_deref(),
            text,
            &t.created_at,
        );
        if t.episode_id.as_deref().is_some_and(|e| e != draft.uuid) {
            return Ok(Outcome::Poison(format!(
                "EPI-4: already bound to Episode {}",
                t.episode_id.as_deref().unwrap_or_default()
            )));
        }
        // Always: idempotent, and it restores an Episode a reset Graphiti store lost.
        if let Err(e) = self.graphiti.put_episode(&draft).await {
            return graphiti_error(e);
        }
        if t.episode_id.is_none() || t.binding.as_deref() == Some("pending") {
            let bind = kg::Bind {
                kind,
                id: &t.id,
                uuid: &draft.uuid,
            };
            if !kg::bind(&self.graph, &bind, &now())
                .await
                .map_err(graph_error)?
            {
                return Ok(Outcome::Poison(
                    "EPI-4: bound to another Episode meanwhile".into(),
                ));
            }
            if draft.truncated_chars > 0 {
                tracing::info!(id = %t.id, cut = draft.truncated_chars, "episode content cut (EPI-6)");
            }
        }
        if !t.embedded {
            self.embed(kind, t, text).await?;
        }
        let previous = extraction_context(&t.context);
        let extraction = match self
            .graphiti
            .extract(&draft.uuid, &draft.group_id, &previous)
            .await
        {
            Ok(x) => x,
            Err(e) => return graphiti_error(e),
        };
        let binding = if extraction.status == "skipped" {
            Binding::Skipped
        } else {
            Binding::Extracted
        };
        kg::record_extraction(
            &self.graph,
            kind,
            &t.id,
            &draft.uuid,
            binding.as_str(),
            &extraction.entities,
            &extraction.edges,
            &now(),
        )
        .await
        .map_err(graph_error)?;
        self.merge(&extraction.entities).await;
        if kind == TargetKind::Memory {
            // SRCH-4: forgotten while this worker ingested it (after its content was read):
            // what Graphiti just kept of it goes, as the forgetting itself would have done.
            if let Err(e) =
                aiden_graph::memory::forget_episode_autocommit(&self.graph, &t.id, &now()).await
            {
                tracing::warn!(id = %t.id, error = %e, "a forgotten memory's episode not blanked");
            }
        }
        Ok(Outcome::Final(binding))
    }

    /// ENT-5: the Entities Graphiti extracted merge into their owner's Entities of the same
    /// thing. After the binding is recorded (a redelivery must find the extraction as
    /// Graphiti answered it); best-effort: the next extraction that mentions the same thing
    /// merges again, and a user creating such an Entity merges what exists.
    async fn merge(&self, entities: &[kg::ExtractedEntity]) {
        let uuids: Vec<String> = entities.iter().map(|e| e.uuid.clone()).collect();
        if let Err(e) = merges::after_extraction(&self.graph, &self.embedder, uuids).await {
            tracing::warn!(error = %e, "extracted entities not merged (ENT-5)");
        }
    }

    /// Recall: embeds the bound content (without the speaker prefix its Episode
    /// has; a model reads the first few hundred tokens only, so a long text is cut for the
    /// request's sake) and writes the vector, for this revision. After binding, so that the
    /// binding never waits for it. An unreachable service waits like the binding would; a
    /// service with no embedder configured, or an embedding that fails, is logged and the
    /// content stays findable by its words (embedding is not a reason to fail a binding).
    async fn embed(&self, kind: TargetKind, t: &Target, text: &str) -> Result<(), Interrupted> {
        let head: String = text.chars().take(8_000).collect();
        let embedded = match self.embedder.embed(&[head.as_str()]).await {
            Ok(e) => e,
            Err(EmbedError::Unavailable(m)) => return Err(Interrupted::Wait(m)),
            Err(e @ (EmbedError::NotConfigured | EmbedError::Failed(_))) => {
                tracing::warn!(id = %t.id, error = %e, "content not embedded: found by its words only");
                return Ok(());
            }
        };
        let Some(vector) = embedded.vectors.first() else {
            tracing::warn!(id = %t.id, "the embedder answered no vector");
            return Ok(());
        };
        let superseded = kg::embed(
            &self.graph,
            kind,
            &t.id,
            t.revision.unwrap_or(1),
            vector,
            &embedded.model,
            currency::says_change(text),
        )
        .await
        .map_err(graph_error)?;
        if let Some(old) = superseded {
            tracing::info!(id = %t.id, superseded = %old, "a newer message supersedes an older one (SRCH-7)");
        }
        Ok(())
    }

    /// Records a binding that gave up (EPI-3); its outbox item goes in the same statement.
    pub async fn give_up(
        &self,
        kind: TargetKind,
        id: &str,
        reason: &str,
    ) -> Result<(), Interrupted> {
        kg::record_failure(&self.graph, kind, id, reason, &now())
            .await
            .map_err(graph_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, binding: Option<&str>, episode: Option<&str>) -> ContextItem {
        ContextItem {
            id: id.into(),
            kind: "message".into(),
            episode_id: episode.map(str::to_owned),
            binding: binding.map(str::to_owned),
        }
    }

    #[test]
    fn epi_5_context_is_the_bound_episodes_of_the_path_in_order() {
        let ctx = vec![
            item("a", Some("extracted"), Some("ea")),
            item("b", Some("pending"), None),
            item("c", Some("failed"), Some("ec")),
            item("d", Some("skipped"), Some("ed")),
            item("e", Some("bound"), Some("ee")),
        ];
        assert_eq!(extraction_context(&ctx), ["ea", "ed", "ee"]);
    }
}
