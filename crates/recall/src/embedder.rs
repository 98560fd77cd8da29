//! The client of the Graphiti service's embedder: content is embedded with it at binding, and
//! queries with the same, so their vectors compare.

use std::time::Duration;

use serde::Deserialize;

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

    /// For a query: a search (or an agent turn's retrieved context) goes on without meaning
    /// rather than wait long for it.
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
