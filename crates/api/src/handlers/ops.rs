//! Liveness, readiness, metrics, the OpenAPI document, and answers for unknown routes.

use std::time::Duration;

use axum::{
    extract::State as S,
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde_json::json;

use crate::{error::ApiError, State};

pub async fn healthz() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

/// Ready when the graph answers a query and the broker accepts an AMQP connection.
pub async fn readyz(S(st): S<State>) -> Response {
    let graph = st.app.graph().ping().await.map_err(|e| e.to_string());
    let broker = tokio::time::timeout(
        Duration::from_secs(3),
        lapin::Connection::connect(&st.amqp_uri, lapin::ConnectionProperties::default()),
    )
    .await;
    let broker = match broker {
        Ok(Ok(conn)) => {
            let _ = conn.close(200, "readiness probe").await;
            Ok(())
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".to_owned()),
    };
    let status = if graph.is_ok() && broker.is_ok() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    if let Err(e) = &graph {
        tracing::warn!(error = %e, "readiness: graph");
    }
    if let Err(e) = &broker {
        tracing::warn!(error = %e, "readiness: broker");
    }
    let word = |r: &Result<(), String>| if r.is_ok() { "up" } else { "down" };
    (
        status,
        Json(json!({"graph": word(&graph), "broker": word(&broker)})),
    )
        .into_response()
}

pub async fn metrics() -> Response {
    let body = crate::metrics::render();
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        body,
    )
        .into_response()
}

pub async fn openapi(S(st): S<State>) -> Response {
    Json((*st.openapi).clone()).into_response()
}

pub async fn not_found() -> ApiError {
    aiden_domain::Error::NotFound.into()
}

pub async fn method_not_allowed() -> ApiError {
    aiden_domain::Error::not_allowed(None, "method not allowed on this route").into()
}
