//! Mapping HTTP statuses and reqwest errors to failure classes (EXEC-4, seed 002).

use crate::tool::{FailureClass, ToolFailure};

const EXCERPT: usize = 300;

/// The class of a non-success HTTP status.
pub fn class_of_status(status: u16) -> FailureClass {
    match status {
        429 => FailureClass::RateLimited,
        401 | 403 => FailureClass::AuthError,
        500..=599 => FailureClass::UpstreamError,
        _ => FailureClass::InvalidRequest,
    }
}

/// A failure for a non-success answer: the status and a short excerpt of the body.
pub fn status_failure(status: u16, body: &str) -> ToolFailure {
    ToolFailure::new(
        class_of_status(status),
        format!("HTTP {status}: {}", excerpt(body)),
    )
}

/// A failure for a transport error. The URL is dropped from the message (its query string
/// may carry a secret).
pub fn transport_failure(e: reqwest::Error) -> ToolFailure {
    let e = e.without_url();
    let class = if e.is_timeout() {
        FailureClass::Timeout
    } else if e.is_decode() {
        FailureClass::ToolError
    } else {
        FailureClass::ConnectionError
    };
    ToolFailure::new(class, e.to_string())
}

pub fn excerpt(text: &str) -> String {
    let t = text.trim();
    if t.chars().count() <= EXCERPT {
        t.to_owned()
    } else {
        format!("{}…", t.chars().take(EXCERPT).collect::<String>())
    }
}
