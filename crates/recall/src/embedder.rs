//! The client of the Graphiti service's embedder: content is embedded with it at binding, and
//! queries with the same, so their vectors compare.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;

/// The client of the Graphiti service's `POST /embed`.
#[derive(Clone)]
pub struct Embedder {
    base: String,
    http: reqwest::Client,
    /// Queries embedded lately: working memory searches for the message it ends with at every
    /// read, and an agent's turn for the message it answers, which its prefetch embedded.
    queries: Arc<Mutex<lru::LruCache<String, Remembered>>>,
}

/// A query's vector, the model that made it, and when.
#[derive(Clone)]
struct Remembered {
    vector: Vec<f32>,
    model: String,
    at: Instant,
}

/// How many query vectors are remembered (1.5 KB each for a 384-dimension model).
const REMEMBERED_QUERIES: usize = 1_024;
/// How long one is: the service's model may change when it restarts, and a vector of another
/// model must not outlive that by long.
const REMEMBERED_FOR: Duration = Duration::from_secs(300);

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
            queries: Arc::new(Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(REMEMBERED_QUERIES).expect("not zero"),
            ))),
        }
    }

    /// One query's vector and its model, remembered for a while: the same text and model
    /// give the same vector, so a query asked again (working memory read again, an agent's
    /// turn after its prefetch) is not sent again.
    pub async fn embed_query(
        &self,
        q: &str,
    ) -> std::result::Result<(Vec<f32>, String), EmbedError> {
        if let Some(r) = self.remembered(q) {
            return Ok((r.vector, r.model));
        }
        let (vector, model) = self.embed_one(q).await?;
        let remembered = Remembered {
            vector: vector.clone(),
            model: model.clone(),
            at: Instant::now(),
        };
        self.queries
            .lock()
            .expect("not poisoned")
            .put(q.to_owned(), remembered);
        Ok((vector, model))
    }

    /// One text's vector and its model.
    pub async fn embed_one(&self, q: &str) -> std::result::Result<(Vec<f32>, String), EmbedError> {
        let mut answer = self.embed(&[q]).await?;
        let vector = answer
            .vectors
            .pop()
            .ok_or_else(|| EmbedError::Failed("no vector".into()))?;
        Ok((vector, answer.model))
    }

    fn remembered(&self, q: &str) -> Option<Remembered> {
        let mut queries = self.queries.lock().expect("not poisoned");
        match queries.get(q) {
            Some(r) if r.at.elapsed() < REMEMBERED_FOR => Some(r.clone()),
            Some(_) => {
                queries.pop(q);
                None
            }
            None => None,
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::{routing::post, Json, Router};
    use serde_json::{json, Value};

    use super::*;

    /// A stand-in for the Graphiti service's `POST /embed` that counts its calls.
    async fn embedder() -> (Embedder, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let app = Router::new().route(
            "/embed",
            post(move |Json(body): Json<Value>| {
                let calls = counted.clone();
                async move {
                    let n = calls.fetch_add(1, Ordering::SeqCst) as f32;
                    let texts = body["texts"].as_array().map_or(0, Vec::len);
                    Json(json!({"model": "counted", "vectors": vec![vec![n, 1.0]; texts]}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (Embedder::for_queries(&format!("http://{addr}")), calls)
    }

    #[tokio::test]
    async fn a_query_asked_again_is_not_sent_again_but_content_always_is() {
        let (e, calls) = embedder().await;
        let first = e.embed_query("where does my brother live?").await.unwrap();
        let again = e.embed_query("where does my brother live?").await.unwrap();
        assert_eq!(first, again);
        assert_eq!(first.1, "counted");
        assert_eq!(calls.load(Ordering::SeqCst), 1, "the second was remembered");
        let other = e.embed_query("and my sister?").await.unwrap();
        assert_ne!(other.0, first.0);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        // A search's own query and content at binding are embedded afresh.
        e.embed_one("where does my brother live?").await.unwrap();
        e.embed(&["where does my brother live?"]).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }
}
