//! Mapping HTTP statuses and reqwest errors to failure classes (EXEC-4), shared by the
//! HTTP executors (`rest_api`, `llm_call`).
//!
//! Messages carry the status and a short excerpt of the remote body, never a request header or
//! a URL (a query string may carry a Secret); [`redact`] additionally masks a Secret that a
//! remote side echoed back.

use std::error::Error as _;

use crate::tool::{FailureClass, ToolFailure};

/// The longest remote-body excerpt a failure message carries, in characters.
pub const EXCERPT: usize = 300;

const REDACTED: &str = "[redacted]";

/// The class of a non-success HTTP status: 429 → rate limited, 5xx → upstream error,
/// 401/403 → auth error, any other status → invalid request.
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

/// A failure for a transport error: a timeout is `Timeout`, a request that could not be built
/// (bad URL, bad header) is `InvalidRequest`, an unusable response body is `ToolError`, and
/// anything else (refused, reset, DNS, TLS) is `ConnectionError`. The URL is dropped from the
/// message (its query string may carry a Secret); the cause chain is kept.
pub fn transport_failure(e: reqwest::Error) -> ToolFailure {
    let e = e.without_url();
    let class = if e.is_timeout() {
        FailureClass::Timeout
    } else if e.is_builder() {
        FailureClass::InvalidRequest
    } else if e.is_decode() {
        FailureClass::ToolError
    } else {
        FailureClass::ConnectionError
    };
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    ToolFailure::new(class, message)
}

/// `text` trimmed and cut to at most [`EXCERPT`] characters (an ellipsis marks a cut).
pub fn excerpt(text: &str) -> String {
    let t = text.trim();
    if t.chars().count() <= EXCERPT {
        t.to_owned()
    } else {
        format!("{}…", t.chars().take(EXCERPT - 1).collect::<String>())
    }
}

/// `failure` with every occurrence of `secret` (as is and percent-encoded) masked in its
/// message: a remote side may echo what it received.
pub fn redact(mut failure: ToolFailure, secret: Option<&str>) -> ToolFailure {
    let Some(secret) = secret.filter(|s| !s.is_empty()) else {
        return failure;
    };
    for form in [secret.to_owned(), percent_encode(secret)] {
        if failure.message.contains(&form) {
            failure.message = failure.message.replace(&form, REDACTED);
        }
    }
    failure
}

/// The redirect policy of the HTTP executors: up to 10 redirects within the same origin; a
/// redirect to another origin is not followed (its 3xx answer becomes the result). reqwest
/// strips only `Authorization` and cookies on a cross-host redirect, so a Secret sent in a
/// custom header (`header:<Name>`, Anthropic's `x-api-key`) would otherwise travel along.
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if attempt.previous().len() > 10 {
            attempt.error("too many redirects")
        } else if same_origin {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// RFC 3986 percent-encoding of everything but the unreserved characters.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_classes() {
        assert_eq!(class_of_status(429), FailureClass::RateLimited);
        assert_eq!(class_of_status(500), FailureClass::UpstreamError);
        assert_eq!(class_of_status(529), FailureClass::UpstreamError);
        assert_eq!(class_of_status(401), FailureClass::AuthError);
        assert_eq!(class_of_status(403), FailureClass::AuthError);
        assert_eq!(class_of_status(404), FailureClass::InvalidRequest);
        assert_eq!(class_of_status(422), FailureClass::InvalidRequest);
    }

    #[test]
    fn excerpts_are_short_and_secrets_masked() {
        let long = "x".repeat(1000);
        let f = status_failure(502, &long);
        assert!(f.message.starts_with("HTTP 502: "));
        assert_eq!(f.message.chars().count(), "HTTP 502: ".len() + EXCERPT);
        let f = redact(
            status_failure(401, "bad key s3cr/t (s3cr%2Ft)"),
            Some("s3cr/t"),
        );
        assert_eq!(f.message, "HTTP 401: bad key [redacted] ([redacted])");
        assert_eq!(percent_encode("a b/ü"), "a%20b%2F%C3%BC");
    }
}
