//! The API's one error shape and the one exhaustive mapping from errors to statuses.

use aiden_domain::{Error as Rule, Violation};
use axum::{
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde_json::json;

#[derive(Debug)]
pub enum ApiError {
    Service(aiden_service::Error),
    Unauthenticated,
    /// USR-4: too many unknown tokens from this source; retry after this long.
    RateLimited(std::time::Duration),
    PayloadTooLarge,
    UnsupportedMediaType(String),
    /// USR-6: a mutation made with a session cookie without its CSRF token.
    CsrfMissing,
}

impl From<aiden_service::Error> for ApiError {
    fn from(e: aiden_service::Error) -> Self {
        Self::Service(e)
    }
}

impl From<Rule> for ApiError {
    fn from(e: Rule) -> Self {
        Self::Service(e.into())
    }
}

struct Body {
    status: StatusCode,
    code: &'static str,
    message: String,
    details: Vec<Violation>,
    /// Seconds, for 429 and 503 (`Retry-After`).
    retry_after: Option<u64>,
}

impl ApiError {
    fn body(self) -> Body {
        use aiden_service::Error as S;
        let plain = |status, code, message: String| Body {
            status,
            code,
            message,
            details: Vec::new(),
            retry_after: (status == StatusCode::SERVICE_UNAVAILABLE).then_some(1),
        };
        match self {
            ApiError::Unauthenticated => plain(
                StatusCode::UNAUTHORIZED,
                "UNAUTHENTICATED",
                "missing or unknown bearer token".into(),
            ),
            // USR-4: still a 401 (the token is unknown), with the code and Retry-After saying
            // that this source is throttled; a valid token is never refused.
            ApiError::RateLimited(wait) => Body {
                retry_after: Some(wait.as_secs_f64().ceil().max(1.0) as u64),
                ..plain(
                    StatusCode::UNAUTHORIZED,
                    "RATE_LIMITED",
                    "unknown bearer token, and too many from this source; retry later".into(),
                )
            },
            ApiError::CsrfMissing => Body {
                details: vec![aiden_domain::Violation::rule(
                    "USR-6",
                    "X-CSRF-Token",
                    "a mutation made with a session cookie carries its CSRF token",
                )],
                ..plain(
                    StatusCode::FORBIDDEN,
                    "CSRF",
                    "send the session's CSRF token in X-CSRF-Token".into(),
                )
            },
            ApiError::PayloadTooLarge => plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                "request body too large".into(),
            ),
            ApiError::UnsupportedMediaType(m) => {
                plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "VALIDATION_ERROR", m)
            }
            ApiError::Service(S::Domain(rule)) => {
                let details = rule.details().to_vec();
                let (status, code) = match &rule {
                    Rule::Validation(_) => (StatusCode::BAD_REQUEST, "VALIDATION_ERROR"),
                    Rule::Invariant(_) => (StatusCode::UNPROCESSABLE_ENTITY, "INVARIANT_VIOLATION"),
                    Rule::NotFound => (StatusCode::NOT_FOUND, "NOT_FOUND"),
                    Rule::Forbidden(_) => (StatusCode::FORBIDDEN, "FORBIDDEN"),
                    Rule::Conflict { .. } => (StatusCode::CONFLICT, "CONFLICT"),
                    Rule::NotAllowed { .. } => (StatusCode::METHOD_NOT_ALLOWED, "NOT_ALLOWED"),
                    Rule::Quota { .. } => (StatusCode::TOO_MANY_REQUESTS, "QUOTA_EXCEEDED"),
                    Rule::Budget { .. } => (StatusCode::TOO_MANY_REQUESTS, "BUDGET_EXCEEDED"),
                };
                let retry_after = match &rule {
                    Rule::Quota {
                        retry_after_secs, ..
                    }
                    | Rule::Budget {
                        retry_after_secs, ..
                    } => Some((*retry_after_secs).max(1)),
                    _ => None,
                };
                Body {
                    status,
                    code,
                    message: rule.to_string(),
                    details,
                    retry_after,
                }
            }
            // Refused by admission under load: expected, so not logged as an error.
            ApiError::Service(S::Overloaded(why)) => {
                plain(StatusCode::SERVICE_UNAVAILABLE, "OVERLOADED", why.into())
            }
            ApiError::Service(S::Unavailable(what)) => {
                tracing::error!(what, "backing service unavailable");
                plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "UNAVAILABLE",
                    "a backing service is unavailable".into(),
                )
            }
            ApiError::Service(e) if e.graph_unavailable().is_some() => {
                let cause = e.graph_unavailable().unwrap_or_default();
                tracing::error!(%cause, "graph unavailable");
                plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "UNAVAILABLE",
                    "a backing service is unavailable".into(),
                )
            }
            ApiError::Service(e @ (S::Graph(_) | S::LostRace | S::Vault(_) | S::Internal(_))) => {
                tracing::error!(error = %e, "internal error");
                plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "INTERNAL",
                    "internal error".into(),
                )
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let b = self.body();
        let body = json!({"error": {"code": b.code, "message": b.message, "requestId": crate::request_id::current(), "details": b.details}});
        let mut response = (b.status, Json(body)).into_response();
        if let Some(secs) = b.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

/// A handler's result.
pub type ApiResult<T> = Result<T, ApiError>;
