//! The client of the Graphiti service (`workers/graphiti/`): save an Episode under its derived
//! uuid if absent, then extract it with an explicit extraction context. Its answers are
//! classified for the ingestion loop: unreachable (wait, however long), failed (retry a bounded
//! number of times) or rejected (never retried).

use std::time::Duration;

use aiden_domain::knowledge::EpisodeDraft;
use aiden_graph::knowledge::{ExtractedEdge, ExtractedEntity};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum GraphitiError {
    /// Not reachable, or not ready (503): nothing is wrong with the item.
    #[error("graphiti unavailable: {0}")]
    Unavailable(String),
    /// It answered with a failure worth retrying (an LLM or embedder error, a 5xx).
    #[error("graphiti failed: {0}")]
    Failed(String),
    /// It refused the item (4xx): retrying cannot help.
    #[error("graphiti rejected the episode ({status}): {message}")]
    Rejected { status: u16, message: String },
}

/// What extraction produced.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Extraction {
    /// `extracted` or `skipped` (no LLM configured).
    pub status: String,
    #[serde(default)]
    pub already_extracted: bool,
    #[serde(default)]
    pub entities: Vec<ExtractedEntity>,
    #[serde(default)]
    pub edges: Vec<ExtractedEdge>,
}

#[derive(Clone)]
pub struct Graphiti {
    base: String,
    http: reqwest::Client,
    extract_timeout: Duration,
}

impl Graphiti {
    pub fn new(base: impl Into<String>, extract_timeout: Duration) -> Self {
        Self {
            base: base.into().trim_end_matches('/').to_owned(),
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(3))
                .build()
                .unwrap_or_default(),
            extract_timeout,
        }
    }

    /// Saves the Episodic node under `draft.uuid` unless it exists. `true` when created.
    pub async fn put_episode(&self, draft: &EpisodeDraft) -> Result<bool, GraphitiError> {
        #[derive(Deserialize)]
        struct Saved {
            created: bool,
        }
        let body = json!({
            "name": draft.name, "group_id": draft.group_id, "source": draft.source,
            "source_description": draft.source_description, "content": draft.content,
            "valid_at": draft.valid_at,
        });
        let r = self
            .http
            .put(format!("{}/episodes/{}", self.base, draft.uuid))
            .timeout(Duration::from_secs(30))
            .json(&body)
            .send()
            .await
            .map_err(transport)?;
        let saved: Saved = answer(r).await?;
        Ok(saved.created)
    }

    /// Runs (or, after a completed run, reports) extraction of `uuid` with the Episodes of
    /// `previous` as its context, root-most first.
    pub async fn extract(
        &self,
        uuid: &str,
        group_id: &str,
        previous: &[String],
    ) -> Result<Extraction, GraphitiError> {
        let r = self
            .http
            .post(format!("{}/episodes/{uuid}/extract", self.base))
            .timeout(self.extract_timeout)
            .json(&json!({"group_id": group_id, "previous_episode_uuids": previous}))
            .send()
            .await
            .map_err(transport)?;
        answer(r).await
    }
}

fn transport(e: reqwest::Error) -> GraphitiError {
    if e.is_timeout() {
        // A call that timed out may still finish there; it is retried like a failure (the
        // service answers a repeat from what it recorded).
        GraphitiError::Failed(format!("timed out: {e}"))
    } else {
        GraphitiError::Unavailable(e.to_string())
    }
}

async fn answer<T: serde::de::DeserializeOwned>(r: reqwest::Response) -> Result<T, GraphitiError> {
    let status = r.status();
    let text = r.text().await.map_err(transport)?;
    if status.is_success() {
        return serde_json::from_str(&text)
            .map_err(|e| GraphitiError::Failed(format!("unreadable answer: {e}")));
    }
    let message = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_owned))
        .unwrap_or_else(|| text.chars().take(300).collect());
    Err(match status.as_u16() {
        503 => GraphitiError::Unavailable(message),
        s if s >= 500 => GraphitiError::Failed(format!("{s}: {message}")),
        s => GraphitiError::Rejected { status: s, message },
    })
}
