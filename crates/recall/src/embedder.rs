//! The client of the Graphiti service's embedder: content is embedded with it at binding, and
//! queries with the same, so their vectors compare.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Deserialize;

/// The client of the Graphiti service's `POST /embed`.
#[derive(Clone)]
pub struct Embedder {
    base: String,
    http: reqwest::Client,
    /// Queries embedded lately (see [`Embedder::embed_query`]).
    queries: Arc<Mutex<Remembered>>,
}

/// Query vectors made lately, per asker and text, all by `model`: the one the service last
/// answered with.
struct Remembered {
    vectors: lru::LruCache<(String, String), (Vec<f32>, Instant)>,
    model: String,
}

/// How many query vectors are remembered: with their keys (a query is at most 1,000
/// characters) 3 KB each for a 384-dimension model, 16 MB at most for 3,072 dimensions.
const REMEMBERED_QUERIES: usize = 1_024;
/// How long one is (and all are forgotten once the service answers with another model).
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
            queries: Arc::new(Mutex::new(Remembered {
                vectors: lru::LruCache::new(
                    NonZeroUsize::new(REMEMBERED_QUERIES).expect("not zero"),
                ),
                model: String::new(),
            })),
        }
    }

    /// One query's vector and its model, remembered for a while per asker (`scope`, so one
    /// user's timing cannot tell what another asked): the same text and model give the same
    /// vector, so working memory read again for the same message does not embed it again.
    pub async fn embed_query(
        &self,
        scope: &str,
        q: &str,
    ) -> std::result::Result<(Vec<f32>, String), EmbedError> {
        let key = (scope.to_owned(), q.to_owned());
        if let Some(remembered) = self.remembered(&key) {
            return Ok(remembered);
        }
        let (values, model) = self.embed_one(q).await?;
        let mut queries = self.queries.lock().unwrap_or_else(PoisonError::into_inner);
        if queries.model != model {
            // The service's model changed (or this is its first answer): no vector of another
            // model is compared with content embedded by this one.
            queries.model.clone_from(&model);
            queries.vectors.clear();
        }
        queries.vectors.put(key, (values.clone(), Instant::now()));
        Ok((values, model))
    }

    fn remembered(&self, key: &(String, String)) -> Option<(Vec<f32>, String)> {
        let mut queries = self.queries.lock().unwrap_or_else(PoisonError::into_inner);
        let (values, at) = queries.vectors.get(key)?;
        if at.elapsed() < REMEMBERED_FOR {
            let values = values.clone();
            return Some((values, queries.model.clone()));
        }
        queries.vectors.pop(key);
        None
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

    /// A stand-in for the Graphiti service's `POST /embed` that counts its calls and answers
    /// with the model `model` names.
    async fn embedder() -> (Embedder, Arc<AtomicUsize>, Arc<Mutex<String>>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let model = Arc::new(Mutex::new("first".to_owned()));
        let (counted, named) = (calls.clone(), model.clone());
        let app = Router::new().route(
            "/embed",
            post(move |Json(body): Json<Value>| {
                let (calls, model) = (counted.clone(), named.lock().unwrap().clone());
                async move {
                    let n = calls.fetch_add(1, Ordering::SeqCst) as f32;
                    let texts = body["texts"].as_array().map_or(0, Vec::len);
                    Json(json!({"model": model, "vectors": vec![vec![n, 1.0]; texts]}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (
            Embedder::for_queries(&format!("http://{addr}")),
            calls,
            model,
        )
    }

    #[tokio::test]
    async fn a_query_asked_again_is_not_sent_again_but_content_always_is() {
        let (e, calls, _) = embedder().await;
        let first = e
            .embed_query("ann", "where does my brother live?")
            .await
            .unwrap();
        let again = e
            .embed_query("ann", "where does my brother live?")
            .await
            .unwrap();
        assert_eq!(first, again);
        assert_eq!(first.1, "first");
        assert_eq!(calls.load(Ordering::SeqCst), 1, "the second was remembered");
        let other = e.embed_query("ann", "and my sister?").await.unwrap();
        assert_ne!(other.0, first.0);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        // Another asker's same text is embedded for them: nobody learns what another asked.
        e.embed_query("bob", "where does my brother live?")
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        // A search's own query and content at binding are embedded afresh.
        e.embed_one("where does my brother live?").await.unwrap();
        e.embed(&["where does my brother live?"]).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 5);
    }

    #[tokio::test]
    async fn another_model_answering_forgets_every_query_vector() {
        let (e, calls, model) = embedder().await;
        e.embed_query("ann", "where does my brother live?")
            .await
            .unwrap();
        *model.lock().unwrap() = "second".into();
        let (_, answered) = e.embed_query("ann", "and my sister?").await.unwrap();
        assert_eq!(answered, "second");
        let (_, again) = e
            .embed_query("ann", "where does my brother live?")
            .await
            .unwrap();
        assert_eq!(again, "second", "the first model's vector was forgotten");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }
}
