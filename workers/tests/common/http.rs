//! Protocol-faithful local servers: axum on an ephemeral port, recording every request it sees.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Uri};
use axum::Router;
use serde_json::Value;

/// One request as a fake server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: Method,
    pub uri: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON request body")
    }
}

#[derive(Clone, Default)]
pub struct Recorder {
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    pub fn record(&self, method: Method, uri: &Uri, headers: HeaderMap, body: Bytes) -> Seen {
        let seen = Seen {
            method,
            uri: uri.to_string(),
            headers,
            body,
        };
        self.seen.lock().unwrap().push(seen.clone());
        seen
    }

    pub fn all(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn last(&self) -> Seen {
        self.all()
            .last()
            .cloned()
            .expect("the server saw a request")
    }
}

/// Serves `app` on an ephemeral local port; returns `http://127.0.0.1:<port>`.
pub async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}
