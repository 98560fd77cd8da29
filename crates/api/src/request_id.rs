//! `x-request-id`: echoed when the client sends one, else minted; visible to error bodies
//! through a task-local, since errors are rendered far from the request.

use axum::{
    extract::{MatchedPath, Request},
    http::HeaderValue,
    middleware::Next,
    response::Response,
};
use tracing::Instrument;

tokio::task_local! {
    static REQUEST_ID: String;
}

pub const HEADER: &str = "x-request-id";

pub fn current() -> String {
    REQUEST_ID.try_with(Clone::clone).unwrap_or_default()
}

pub async fn layer(req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.chars().all(|c| c.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    // The route template, not the path: ids would make every request its own series.
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let method = req.method().as_str().to_owned();
    let span = tracing::info_span!("request", request_id = %id, method = %req.method(), path = %req.uri().path());
    let work = async move {
        let started = std::time::Instant::now();
        let response = next.run(req).await;
        let elapsed = started.elapsed();
        tracing::info!(
            route = %route,
            status = response.status().as_u16(),
            elapsed_ms = elapsed.as_millis() as u64,
            "handled"
        );
        crate::metrics::record_request(
            &method,
            route,
            response.status().as_u16(),
            elapsed.as_secs_f64(),
        );
        response
    };
    let mut response = REQUEST_ID.scope(id.clone(), work.instrument(span)).await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, v);
    }
    response
}
