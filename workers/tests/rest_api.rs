//! The `rest_api` executor called directly through the `Tool` trait, against a local axum
//! server acting as a plain HTTP upstream.

use std::time::{Duration, Instant};

use aiden_workers::executors::rest_api::RestApi;
use aiden_workers::tool::FailureClass;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use common::call::{assert_secret_absent, unique, unused_port, Call};
use common::http::{serve, Recorder};
use serde_json::{json, Value};

/// The helpers the executor test crates share (`tests/common/`); each crate declares only the
/// parts it uses.
mod common {
    pub mod call;
    pub mod http;
}

/// Only these tests choose a Secret scope, so the builder step lives here.
impl Call {
    fn scope(mut self, scope: &str) -> Self {
        self.scope = Some(scope.to_owned());
        self
    }
}

async fn upstream_handler(
    State(rec): State<Recorder>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let seen = rec.record(method, &uri, headers, body);
    let path = uri.path();
    if let Some(code) = path.strip_prefix("/status/") {
        // Echo everything received, as careless servers do, so redaction is put to the test.
        let status = StatusCode::from_u16(code.parse().unwrap()).unwrap();
        let echo = format!("rejected {} {:?}", seen.uri, seen.headers);
        return (status, echo).into_response();
    }
    match path {
        "/long-error" => (StatusCode::BAD_GATEWAY, "e".repeat(5000)).into_response(),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            Json(json!({"late": true})).into_response()
        }
        "/text" => "plain words".into_response(),
        "/empty" => StatusCode::NO_CONTENT.into_response(),
        "/home-redirect" => (StatusCode::FOUND, [("location", "/text")], "moved").into_response(),
        p if p.starts_with("/away-redirect") => {
            let target = percent_decode(uri.query().unwrap_or_default().trim_start_matches("to="));
            (
                StatusCode::FOUND,
                [("location", target.to_owned())],
                "moved",
            )
                .into_response()
        }
        _ => Json(json!({"ok": true, "path": path})).into_response(),
    }
}

fn percent_decode(s: &str) -> String {
    let mut bytes = Vec::new();
    let mut rest = s.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' && tail.len() >= 2 {
            let hex = std::str::from_utf8(&tail[..2]).unwrap();
            bytes.push(u8::from_str_radix(hex, 16).unwrap());
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).unwrap()
}

async fn upstream() -> (Recorder, String) {
    let rec = Recorder::default();
    let app = Router::new()
        .fallback(upstream_handler)
        .with_state(rec.clone());
    (rec.clone(), serve(app).await)
}

#[tokio::test]
async fn rest_get_renders_and_percent_encodes_the_path_and_renders_headers() {
    let (rec, base) = upstream().await;
    let call = Call::new(
        json!({"type": "rest_api", "method": "GET",
               "path": "/items/{{id}}?q={{query}}&limit={{limit}}",
               "headers": {"X-Trace": "trace {{trace}}"}}),
        json!({"endpoint": format!("{base}/api/")}),
        json!({"id": "a/b c", "query": "x&y=z ü", "limit": 5, "trace": "t/1 ü"}),
    );
    let out = call.run(&RestApi::new()).await.unwrap();
    let seen = rec.last();
    assert_eq!(seen.method, Method::GET);
    assert_eq!(
        seen.uri, "/api/items/a%2Fb%20c?q=x%26y%3Dz%20%C3%BC&limit=5",
        "interpolated values are percent-encoded, the template's own `?`/`&` are not"
    );
    // Headers are rendered with the raw values (no URL encoding there).
    assert_eq!(seen.headers["x-trace"].as_bytes(), "trace t/1 ü".as_bytes());
    assert!(seen.header("authorization").is_none(), "no Secret, no auth");
    assert_eq!(
        out.value,
        json!({"status": 200, "body": {"ok": true, "path": "/api/items/a%2Fb%20c"}})
    );
    assert_eq!(out.telemetry.provider, None);
    assert_eq!(out.telemetry.model, None);
    assert_eq!(out.telemetry.token_usage, None);
}

/// Every call carries its step run's idempotency key in `Idempotency-Key` (the IETF draft's
/// header) by default; a Tool can rename the header, give it a value of its own, or turn it off.
#[tokio::test]
async fn rest_calls_carry_the_step_runs_idempotency_key_unless_the_tool_says_otherwise() {
    let (rec, base) = upstream().await;
    let conn = json!({"endpoint": base});
    let sent = |op: Value| {
        let call = Call::new(op, conn.clone(), json!({}));
        let rec = rec.clone();
        async move {
            call.run(&RestApi::new()).await.unwrap();
            rec.last()
        }
    };
    let seen = sent(json!({"type": "rest_api", "method": "POST", "path": "/things"})).await;
    assert_eq!(seen.header("idempotency-key"), Some("steprun-under-test"));
    let seen = sent(
        json!({"type": "rest_api", "method": "POST", "path": "/things",
                           "idempotencyHeader": "X-Request-Key"}),
    )
    .await;
    assert_eq!(seen.header("x-request-key"), Some("steprun-under-test"));
    assert!(seen.header("idempotency-key").is_none());
    let seen = sent(
        json!({"type": "rest_api", "method": "POST", "path": "/things",
                           "headers": {"Idempotency-Key": "mine"}}),
    )
    .await;
    assert_eq!(seen.header("idempotency-key"), Some("mine"));
    assert_eq!(seen.headers.get_all("idempotency-key").iter().count(), 1);
    let seen = sent(
        json!({"type": "rest_api", "method": "POST", "path": "/things",
                           "idempotencyHeader": null}),
    )
    .await;
    assert!(seen.header("idempotency-key").is_none());
}

#[tokio::test]
async fn rest_bodies_are_rendered_and_answers_parsed() {
    let (rec, base) = upstream().await;
    let api = RestApi::new();
    // A JSON body template: sent with Content-Type application/json.
    let call = Call::new(
        json!({"type": "rest_api", "method": "POST", "path": "/things",
               "bodyTemplate": "{\"name\": \"{{name}}\", \"count\": {{count}}, \"tags\": {{json tags}}}"}),
        json!({"endpoint": base}),
        json!({"name": "Ada", "count": 3, "tags": ["x", "y"]}),
    );
    let out = call.run(&api).await.unwrap();
    let seen = rec.last();
    assert_eq!(seen.method, Method::POST);
    assert_eq!(seen.uri, "/things");
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(
        seen.json(),
        json!({"name": "Ada", "count": 3, "tags": ["x", "y"]})
    );
    assert_eq!(out.value["status"], 200);

    // A text body: sent as is, not labelled JSON; a text answer becomes a JSON string.
    let call = Call::new(
        json!({"type": "rest_api", "method": "PUT", "path": "/text",
               "bodyTemplate": "hello {{name}}"}),
        json!({"endpoint": base}),
        json!({"name": "Ada"}),
    );
    let out = call.run(&api).await.unwrap();
    let seen = rec.last();
    assert_eq!(seen.method, Method::PUT);
    assert_eq!(&seen.body[..], b"hello Ada");
    assert_ne!(seen.header("content-type"), Some("application/json"));
    assert_eq!(out.value, json!({"status": 200, "body": "plain words"}));

    // An empty answer is a null body.
    let call = Call::new(
        json!({"type": "rest_api", "method": "DELETE", "path": "/empty"}),
        json!({"endpoint": base}),
        json!({}),
    );
    let out = call.run(&api).await.unwrap();
    assert_eq!(rec.last().method, Method::DELETE);
    assert_eq!(out.value, json!({"status": 204, "body": null}));
}

#[tokio::test]
async fn rest_secret_is_applied_per_scope_and_never_in_failures() {
    let (rec, base) = upstream().await;
    let api = RestApi::new();
    let n = unique("");
    let secret = format!("sk-{n}/x+y");
    let encoded = format!("sk-{n}%2Fx%2By");
    let op = |path: &str| json!({"type": "rest_api", "method": "GET", "path": path});
    let conn = json!({"endpoint": base});

    // Default scope and explicit `bearer`: Authorization: Bearer <secret>.
    for scope in [None, Some("bearer")] {
        let mut call = Call::new(op("/ok"), conn.clone(), json!({})).secret(&secret);
        call.scope = scope.map(str::to_owned);
        call.run(&api).await.unwrap();
        assert_eq!(
            rec.last().header("authorization"),
            Some(format!("Bearer {secret}").as_str())
        );
    }
    // `header:<Name>`: that header carries the Secret, nothing else does.
    let call = Call::new(op("/ok"), conn.clone(), json!({}))
        .secret(&secret)
        .scope("header:X-Api-Key");
    call.run(&api).await.unwrap();
    let seen = rec.last();
    assert_eq!(seen.header("x-api-key"), Some(secret.as_str()));
    assert!(seen.header("authorization").is_none());
    // `query:<param>`: appended to the rendered query, percent-encoded.
    let call = Call::new(op("/ok?q={{q}}"), conn.clone(), json!({"q": "v"}))
        .secret(&secret)
        .scope("query:api_key");
    call.run(&api).await.unwrap();
    let seen = rec.last();
    assert_eq!(seen.uri, format!("/ok?q=v&api_key={encoded}"));
    assert!(seen.header("authorization").is_none());

    // A server that echoes what it received: the failure says so, without the Secret.
    for scope in ["bearer", "header:X-Api-Key", "query:api_key"] {
        let call = Call::new(op("/status/401"), conn.clone(), json!({}))
            .secret(&secret)
            .scope(scope);
        let f = call.fail(&api).await;
        assert_eq!(f.class, FailureClass::AuthError, "{scope}: {}", f.message);
        assert!(f.message.contains("401"), "{}", f.message);
        assert!(
            f.message.contains("[redacted]"),
            "{scope}: the echo reached the message, masked: {}",
            f.message
        );
        assert_secret_absent(&f, &[&secret, &encoded]);
    }
    // Transport failures never carry the URL (its query holds the Secret here).
    let refused = format!("http://127.0.0.1:{}", unused_port().await);
    let call = Call::new(op("/x"), json!({"endpoint": refused}), json!({}))
        .secret(&secret)
        .scope("query:api_key");
    let f = call.fail(&api).await;
    assert_eq!(f.class, FailureClass::ConnectionError, "{}", f.message);
    assert_secret_absent(&f, &[&secret, &encoded, "api_key"]);

    // An unknown scope is the Tool's mistake.
    let call = Call::new(op("/ok"), conn, json!({}))
        .secret(&secret)
        .scope("cookie:session");
    let before = rec.all().len();
    let f = call.fail(&api).await;
    assert_eq!(f.class, FailureClass::InvalidRequest);
    assert_eq!(rec.all().len(), before, "nothing was sent");
}

#[tokio::test]
async fn rest_statuses_map_to_failure_classes() {
    let (_rec, base) = upstream().await;
    let api = RestApi::new();
    for (code, class) in [
        (404, FailureClass::InvalidRequest),
        (400, FailureClass::InvalidRequest),
        (401, FailureClass::AuthError),
        (403, FailureClass::AuthError),
        (429, FailureClass::RateLimited),
        (500, FailureClass::UpstreamError),
        (503, FailureClass::UpstreamError),
    ] {
        let call = Call::new(
            json!({"type": "rest_api", "method": "GET", "path": format!("/status/{code}")}),
            json!({"endpoint": base}),
            json!({}),
        );
        let f = call.fail(&api).await;
        assert_eq!(f.class, class, "HTTP {code}: {}", f.message);
        assert_eq!(f.class.retryable(), code == 429 || code >= 500);
        assert!(
            f.message
                .starts_with(&format!("HTTP {code}: rejected /status/{code}")),
            "status and an excerpt of the body: {}",
            f.message
        );
    }
    // A long error body is cut to a short excerpt.
    let call = Call::new(
        json!({"type": "rest_api", "method": "GET", "path": "/long-error"}),
        json!({"endpoint": base}),
        json!({}),
    );
    let f = call.fail(&api).await;
    assert_eq!(f.class, FailureClass::UpstreamError);
    assert!(f.message.starts_with("HTTP 502: eee"), "{}", f.message);
    let excerpt = f.message.trim_start_matches("HTTP 502: ");
    assert!(excerpt.chars().count() <= 300, "{} chars", excerpt.len());
}

#[tokio::test]
async fn rest_transport_failures_timeouts_and_bad_templates() {
    let (rec, base) = upstream().await;
    let api = RestApi::new();
    let op = |path: &str| json!({"type": "rest_api", "method": "GET", "path": path});

    // Connection refused.
    let refused = format!("http://127.0.0.1:{}", unused_port().await);
    let f = Call::new(op("/x"), json!({"endpoint": refused}), json!({}))
        .fail(&api)
        .await;
    assert_eq!(f.class, FailureClass::ConnectionError, "{}", f.message);

    // The Service's endpoint is used when the Tool names none.
    let mut call = Call::new(op("/from-service"), json!({}), json!({}));
    call.service_endpoint = Some(base.clone());
    assert_eq!(call.run(&api).await.unwrap().value["status"], 200);
    assert_eq!(rec.last().uri, "/from-service");

    // The step's timeout, and a smaller `connectionParams.timeoutMs`, both cut a slow answer.
    let started = Instant::now();
    let f = Call::new(op("/slow"), json!({"endpoint": base}), json!({}))
        .timeout(Duration::from_millis(300))
        .fail(&api)
        .await;
    assert_eq!(f.class, FailureClass::Timeout, "{}", f.message);
    assert!(started.elapsed() < Duration::from_secs(2));
    let started = Instant::now();
    let f = Call::new(
        op("/slow"),
        json!({"endpoint": base, "timeoutMs": 300}),
        json!({}),
    )
    .timeout(Duration::from_secs(30))
    .fail(&api)
    .await;
    assert_eq!(f.class, FailureClass::Timeout, "{}", f.message);
    assert!(started.elapsed() < Duration::from_secs(2));

    // A missing variable is an error, never an empty path segment; nothing is sent.
    let before = rec.all().len();
    let f = Call::new(op("/items/{{id}}"), json!({"endpoint": base}), json!({}))
        .fail(&api)
        .await;
    assert_eq!(f.class, FailureClass::InvalidRequest);
    assert!(f.message.contains("id"), "{}", f.message);
    let f = Call::new(
        json!({"type": "rest_api", "method": "GET", "path": "/x",
               "headers": {"X-Bad": "line\nbreak {{v}}"}}),
        json!({"endpoint": base}),
        json!({"v": 1}),
    )
    .fail(&api)
    .await;
    assert_eq!(f.class, FailureClass::InvalidRequest, "{}", f.message);
    assert_eq!(rec.all().len(), before);
}

#[tokio::test]
async fn rest_follows_redirects_only_within_the_origin() {
    let (rec, base) = upstream().await;
    let (elsewhere, other) = upstream().await;
    let api = RestApi::new();
    let secret = unique("key-");
    let out = Call::new(
        json!({"type": "rest_api", "method": "GET", "path": "/home-redirect"}),
        json!({"endpoint": base}),
        json!({}),
    )
    .secret(&secret)
    .scope("header:X-Api-Key")
    .run(&api)
    .await
    .unwrap();
    assert_eq!(out.value, json!({"status": 200, "body": "plain words"}));
    assert_eq!(rec.last().uri, "/text");
    assert_eq!(rec.last().header("x-api-key"), Some(secret.as_str()));

    // To another origin: not followed, so the Secret header never travels there.
    let f = Call::new(
        json!({"type": "rest_api", "method": "GET", "path": "/away-redirect?to={{to}}"}),
        json!({"endpoint": base}),
        json!({"to": format!("{other}/steal")}),
    )
    .secret(&secret)
    .scope("header:X-Api-Key")
    .fail(&api)
    .await;
    assert_eq!(f.class, FailureClass::InvalidRequest, "{}", f.message);
    assert!(f.message.starts_with("HTTP 302"), "{}", f.message);
    assert!(elsewhere.all().is_empty(), "the other origin saw nothing");
}
