//! Extractors that answer in our error shape: JSON bodies, the caller, `If-Match`, paging.

use aiden_domain::{user::Caller, Error as Rule, Violation};
use aiden_service::{AuthRefusal, PageRequest};
use axum::{
    extract::{rejection::JsonRejection, FromRequest, FromRequestParts, Query, Request},
    http::{request::Parts, StatusCode},
};
use serde::{de::DeserializeOwned, Deserialize};

use crate::{ApiError, State};

/// `Json<T>` whose rejections are 400/413/415 in our shape, with the serde path of the problem.
pub struct AppJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<State> for AppJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &State) -> Result<Self, Self::Rejection> {
        match axum::Json::<serde_json::Value>::from_request(req, state).await {
            Ok(axum::Json(mut value)) => {
                // Every body is an object (serde would also read a struct from an array).
                if !value.is_object() {
                    return Err(Rule::validation("", "the body must be a JSON object").into());
                }
                whole_floats_as_integers(&mut value);
                let mut track = serde_path_to_error::Track::new();
                let de = serde_path_to_error::Deserializer::new(value, &mut track);
                T::deserialize(de).map(AppJson).map_err(|e| {
                    let path = pointer(&track.path());
                    Rule::Validation(vec![Violation::field(path, e.to_string())]).into()
                })
            }
            Err(rejection) => Err(reject(rejection)),
        }
    }
}

/// JSON has one number type and JSON Schema counts `3.0` as an integer; serde does not, so a
/// whole float is read as the integer it is.
fn whole_floats_as_integers(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64() {
                if f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64 {
                    *v = Value::from(f as i64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_floats_as_integers),
        Value::Object(map) => map.values_mut().for_each(whole_floats_as_integers),
        _ => {}
    }
}

fn pointer(path: &serde_path_to_error::Path) -> String {
    let s = path.to_string();
    if s == "." {
        String::new()
    } else {
        format!("/{}", s.replace('.', "/"))
    }
}

fn reject(rejection: JsonRejection) -> ApiError {
    match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            ApiError::UnsupportedMediaType("expected Content-Type: application/json".into())
        }
        _ => Rule::validation("", format!("malformed JSON: {}", rejection.body_text())).into(),
    }
}

/// The authenticated caller (401 otherwise).
pub struct Auth(pub Caller);

impl FromRequestParts<State> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &State) -> Result<Self, Self::Rejection> {
        let token = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let Some(token) = token else {
            // A person in the console: the session cookie (USR-6).
            session_cookie(parts).ok_or(ApiError::Unauthenticated)?;
            let s = Session::from_request_parts(parts, state).await?;
            return Ok(Auth(s.0.caller));
        };
        match state
            .app
            .authenticate_from(source(parts, state), token)
            .await
        {
            Ok(caller) => Ok(Auth(caller)),
            Err(AuthRefusal::Unknown) => Err(ApiError::Unauthenticated),
            Err(AuthRefusal::Throttled(wait)) => Err(ApiError::RateLimited(wait)),
            Err(AuthRefusal::Failed(e)) => Err(e.into()),
        }
    }
}

/// The session cookie's value, if the request carries one.
pub fn session_cookie(parts: &Parts) -> Option<String> {
    session_cookie_in(&parts.headers)
}

/// [`session_cookie`] from headers.
pub fn session_cookie_in(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == aiden_service::accounts::SESSION_COOKIE)
        .map(|(_, v)| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// A caller signed in with a session cookie (USR-6): live, unexpired, of an enabled user; a
/// mutation (any method but GET, HEAD, OPTIONS) must carry the session's CSRF token in
/// `X-CSRF-Token` (403 `CSRF` otherwise). With SameSite=Strict on the cookie, this is defence
/// in depth against a cross-site form.
pub struct Session(pub aiden_service::accounts::SessionCaller, pub String);

impl FromRequestParts<State> for Session {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &State) -> Result<Self, Self::Rejection> {
        let id = session_cookie(parts).ok_or(ApiError::Unauthenticated)?;
        let s = match state
            .app
            .authenticate_session(source(parts, state), &id)
            .await
        {
            Ok(s) => s,
            Err(AuthRefusal::Unknown) => return Err(ApiError::Unauthenticated),
            Err(AuthRefusal::Throttled(wait)) => return Err(ApiError::RateLimited(wait)),
            Err(AuthRefusal::Failed(e)) => return Err(e.into()),
        };
        let safe = matches!(
            parts.method,
            axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
        );
        let echoed = parts
            .headers
            .get("x-csrf-token")
            .and_then(|v| v.to_str().ok());
        if !safe && echoed != Some(s.csrf.as_str()) {
            return Err(ApiError::CsrfMissing);
        }
        Ok(Session(s, id))
    }
}

/// The source address of a request (USR-4), for the sign-in handlers.
pub struct Source(pub std::net::IpAddr);

impl FromRequestParts<State> for Source {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &State) -> Result<Self, Self::Rejection> {
        Ok(Source(source(parts, state)))
    }
}

/// Where a request comes from (USR-4): the configured proxy header's first address, else the
/// TCP peer (unspecified when neither is known, e.g. a request built in a test).
fn source(parts: &Parts, state: &State) -> std::net::IpAddr {
    let from_header = state.app.auth_source_header().and_then(|name| {
        parts
            .headers
            .get(name)?
            .to_str()
            .ok()?
            .split(',')
            .next()?
            .trim()
            .parse()
            .ok()
    });
    from_header
        .or_else(|| {
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|c| c.0.ip())
        })
        .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
}

/// `If-Match: "<revision>"` (quotes optional): the revision the client last read.
pub struct IfMatch(pub Option<i64>);

impl FromRequestParts<State> for IfMatch {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &State) -> Result<Self, Self::Rejection> {
        match parts.headers.get(axum::http::header::IF_MATCH) {
            None => Ok(IfMatch(None)),
            Some(v) => v
                .to_str()
                .ok()
                .map(|s| s.trim().trim_start_matches("W/").trim_matches('"'))
                .and_then(|s| s.parse::<i64>().ok())
                .map(|r| IfMatch(Some(r)))
                .ok_or_else(|| Rule::validation("If-Match", "must be a revision number").into()),
        }
    }
}

/// `?limit=&cursor=&includeArchived=`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageQuery {
    /// Items per page.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<i64>,
    /// `nextCursor` of the previous page.
    cursor: Option<String>,
    /// Archived ones too.
    #[serde(default)]
    include_archived: bool,
}

/// `?limit=&cursor=&includeArchived=`.
pub struct Paging(pub PageRequest);

impl FromRequestParts<State> for Paging {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &State) -> Result<Self, Self::Rejection> {
        let Query(q) = Query::<PageQuery>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::from(Rule::validation("query", e.body_text())))?;
        Ok(Paging(PageRequest {
            limit: q.limit,
            cursor: q.cursor,
            include_archived: q.include_archived,
        }))
    }
}
