//! Liveness, readiness, metrics, the OpenAPI document, and answers for unknown routes.

use std::time::Duration;

use axum::{
    extract::State as S,
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use schemars::JsonSchema;
use serde::Serialize;

use crate::{error::ApiError, State};

/// `GET /healthz`: the process answers.
#[derive(Serialize, JsonSchema)]
pub struct Health {
    status: Ok,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "LivenessStatus")]
enum Ok {
    Ok,
}

/// `GET /readyz`: each dependency, up or down.
#[derive(Serialize, JsonSchema)]
pub struct Readiness {
    graph: Up,
    broker: Up,
    engine: EngineLease,
}

/// Which `aiden serve` instance's engine drives runs; not part of readiness: every
/// instance serves the API, and one of them holds the engine lease.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EngineLease {
    /// The instance id holding the lease (`AIDEN_INSTANCE_ID`); null when none does or the graph
    /// is down.
    holder: Option<String>,
    /// When the holder's lease runs out unless renewed (epoch milliseconds).
    expires_at_ms: Option<i64>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "DependencyStatus")]
enum Up {
    Up,
    Down,
}

pub async fn healthz() -> Response {
    Json(Health { status: Ok::Ok }).into_response()
}

/// Ready when the graph answers a query and the broker accepts an AMQP connection.
pub async fn readyz(S(st): S<State>) -> Response {
    let graph = st.app.graph().ping().await.map_err(|e| e.to_string());
    let broker = tokio::time::timeout(
        Duration::from_secs(3),
        aiden_jobs::nodes::connect_any(&st.amqp_uri),
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
    let lease = match &graph {
        Ok(()) => st.app.engine_lease().await.ok().flatten(),
        Err(_) => None,
    };
    let lease = lease.filter(|l| l.holder.is_some());
    let word = |r: &Result<(), String>| if r.is_ok() { Up::Up } else { Up::Down };
    let body = Readiness {
        graph: word(&graph),
        broker: word(&broker),
        engine: EngineLease {
            holder: lease.as_ref().and_then(|l| l.holder.clone()),
            expires_at_ms: lease.and_then(|l| l.expires_at),
        },
    };
    (status, Json(body)).into_response()
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

/// `GET /docs`: a reference page that renders `/openapi.json` in the browser; its script and
/// styles are in the page, so it works offline and loads nothing from elsewhere.
pub async fn docs() -> Response {
    (
        [
            (axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                axum::http::header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'",
            ),
        ],
        include_str!("../../assets/docs.html"),
    )
        .into_response()
}

pub async fn not_found() -> ApiError {
    aiden_domain::Error::NotFound.into()
}

/// 405 with `Allow`: the methods the document lists for the path the request matched.
pub async fn method_not_allowed(S(st): S<State>, uri: axum::http::Uri) -> Response {
    let allow = allowed_methods(&st.openapi, uri.path()).join(", ");
    let refusal = ApiError::from(aiden_domain::Error::not_allowed(
        None,
        "method not allowed on this route",
    ));
    ([(axum::http::header::ALLOW, allow)], refusal).into_response()
}

fn allowed_methods(doc: &serde_json::Value, path: &str) -> Vec<String> {
    let Some(paths) = doc.get("paths").and_then(serde_json::Value::as_object) else {
        return Vec::new();
    };
    let segments: Vec<&str> = path.split('/').collect();
    paths
        .iter()
        .find(|(template, _)| {
            let t: Vec<&str> = template.split('/').collect();
            t.len() == segments.len()
                && t.iter()
                    .zip(&segments)
                    .all(|(t, s)| t == s || (t.starts_with('{') && !s.is_empty()))
        })
        .and_then(|(_, ops)| ops.as_object())
        .map(|ops| ops.keys().map(|m| m.to_ascii_uppercase()).collect())
        .unwrap_or_default()
}
