//! The `rest_api`, `llm_call` and `graph_query` executors called directly through the `Tool`
//! trait: local axum servers speaking the real wire formats (a plain HTTP upstream, an
//! OpenAI-compatible and an Anthropic-compatible API with scripted replies) and the real Bolt
//! server of the local stack (`.stack/env`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aiden_domain::service::Protocol;
use aiden_domain::tool::Operation;
use aiden_workers::executors::graph_query::GraphQuery;
use aiden_workers::executors::llm_call::LlmCall;
use aiden_workers::executors::rest_api::RestApi;
use aiden_workers::tool::{FailureClass, Invocation, TokenUsage, Tool, ToolFailure, ToolOutput};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::{json, Value};
use zeroize::Zeroizing;

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{prefix}{}x{nanos}x{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// One call's owned inputs; [`Call::run`] lends them to an [`Invocation`].
struct Call {
    operation: Operation,
    connection: Value,
    service_endpoint: Option<String>,
    protocol: Protocol,
    secret: Option<Zeroizing<String>>,
    scope: Option<String>,
    input: Value,
    timeout: Duration,
}

impl Call {
    /// `operation` is the Tool's stored JSON form (`{"type": "rest_api", …}`).
    fn new(operation: Value, connection: Value, input: Value) -> Self {
        Self {
            operation: serde_json::from_value(operation).expect("a valid operation"),
            connection,
            service_endpoint: None,
            protocol: Protocol::Http,
            secret: None,
            scope: None,
            input,
            timeout: Duration::from_secs(10),
        }
    }

    fn secret(mut self, secret: &str) -> Self {
        self.secret = Some(Zeroizing::new(secret.to_owned()));
        self
    }

    fn scope(mut self, scope: &str) -> Self {
        self.scope = Some(scope.to_owned());
        self
    }

    fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn run(&self, tool: &dyn Tool) -> Result<ToolOutput, ToolFailure> {
        let inv = Invocation {
            tool_id: "tool-under-test",
            owner_id: "owner-under-test",
            idempotency_key: Some("steprun-under-test"),
            operation: &self.operation,
            connection: &self.connection,
            service_endpoint: self.service_endpoint.as_deref(),
            protocol: self.protocol,
            secret: self.secret.as_ref(),
            secret_scope: self.scope.as_deref(),
            input: &self.input,
            timeout: self.timeout,
            agent_turn: false,
            deltas: None,
        };
        tool.call(&inv).await
    }

    async fn fail(&self, tool: &dyn Tool) -> ToolFailure {
        match self.run(tool).await {
            Ok(out) => panic!("expected a failure, got {:?}", out.value),
            Err(f) => f,
        }
    }
}

/// One request as a fake server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    uri: String,
    headers: HeaderMap,
    body: Bytes,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON request body")
    }
}

#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    fn record(&self, method: Method, uri: &Uri, headers: HeaderMap, body: Bytes) -> Seen {
        let seen = Seen {
            method,
            uri: uri.to_string(),
            headers,
            body,
        };
        self.seen.lock().unwrap().push(seen.clone());
        seen
    }

    fn all(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn last(&self) -> Seen {
        self.all()
            .last()
            .cloned()
            .expect("the server saw a request")
    }
}

/// Serves `app` on an ephemeral local port; returns `http://127.0.0.1:<port>`.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// A local port nothing listens on.
async fn unused_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

fn assert_secret_absent(f: &ToolFailure, secrets: &[&str]) {
    for s in secrets {
        assert!(
            !f.message.contains(s),
            "the secret leaked into the failure: {}",
            f.message
        );
        assert!(!format!("{f:?}").contains(s), "the secret leaked: {f:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// rest_api against a plain HTTP upstream
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// llm_call against OpenAI- and Anthropic-compatible servers
// ---------------------------------------------------------------------------------------------

fn last_user_prompt(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// A scripted failure named in the prompt (`case:<name>`), in each API's own error shape.
async fn scripted(prompt: &str, anthropic: bool, headers: &HeaderMap) -> Option<Response> {
    let case = prompt.split("case:").nth(1)?.split_whitespace().next()?;
    let key = headers
        .get(if anthropic {
            "x-api-key"
        } else {
            "authorization"
        })
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let error = |status: u16, kind: &str, message: String| {
        let body = if anthropic {
            json!({"type": "error", "error": {"type": kind, "message": message}})
        } else {
            json!({"error": {"message": message, "type": kind, "code": kind}})
        };
        Some((StatusCode::from_u16(status).unwrap(), Json(body)).into_response())
    };
    match case {
        "rate-limit" => error(429, "rate_limit_error", "slow down".into()),
        "server-error" => error(500, "api_error", "boom".into()),
        "overloaded" => error(529, "overloaded_error", "Overloaded".into()),
        // Echoes the credential it rejects, as some providers do.
        "bad-key" => error(
            401,
            "authentication_error",
            format!("Incorrect API key provided: {key}"),
        ),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            None
        }
        _ => None,
    }
}

async fn openai_handler(
    State(rec): State<Recorder>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let seen = rec.record(method, &uri, headers.clone(), body);
    let body = seen.json();
    let prompt = last_user_prompt(&body);
    if let Some(reply) = scripted(&prompt, false, &headers).await {
        return reply;
    }
    let content = if prompt.contains("case:not-json") {
        "I'd rather not".to_owned()
    } else if body["response_format"]["type"] == "json_object" {
        "```json\n{\"answer\": 42, \"topic\": \"graphs\"}\n```".to_owned()
    } else {
        format!("echo: {prompt}")
    };
    Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "fake-gpt-1",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    }))
    .into_response()
}

async fn anthropic_handler(
    State(rec): State<Recorder>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let seen = rec.record(method, &uri, headers.clone(), body);
    let body = seen.json();
    let prompt = last_user_prompt(&body);
    if let Some(reply) = scripted(&prompt, true, &headers).await {
        return reply;
    }
    let text = if prompt.contains("case:json") {
        "{\"verdict\": \"yes\", \"score\": 0.5}".to_owned()
    } else if prompt.contains("case:not-json") {
        "sure thing".to_owned()
    } else {
        prompt
    };
    Json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "fake-claude-1",
        "content": [{"type": "text", "text": "claude says "},
                    {"type": "tool_use", "id": "t1", "name": "noop", "input": {}},
                    {"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 5, "output_tokens": 3}
    }))
    .into_response()
}

/// One server answering both APIs under their real paths; returns its origin.
async fn llm_server() -> (Recorder, String) {
    let rec = Recorder::default();
    let app = Router::new()
        .route("/v1/chat/completions", axum::routing::post(openai_handler))
        .route("/v1/messages", axum::routing::post(anthropic_handler))
        .with_state(rec.clone());
    (rec.clone(), serve(app).await)
}

fn llm_op(api: &str, format: &str) -> Value {
    json!({"type": "llm_call", "api": api, "systemPrompt": "Be brief about {{topic}}.",
           "promptTemplate": "{{instruction}} {{topic}}", "responseFormat": format})
}

#[tokio::test]
async fn openai_chat_completion_sends_model_prompts_and_key_and_reports_usage() {
    let (rec, origin) = llm_server().await;
    let key = unique("sk-test-");
    let call = Call::new(
        llm_op("openai", "text"),
        json!({"endpoint": format!("{origin}/v1/"), "model": "requested-model",
               "temperature": 0.2, "maxTokens": 64}),
        json!({"instruction": "Explain", "topic": "graphs"}),
    )
    .secret(&key);
    let out = call.run(&LlmCall::new()).await.unwrap();
    let seen = rec.last();
    assert_eq!(seen.method, Method::POST);
    assert_eq!(seen.uri, "/v1/chat/completions");
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    assert_eq!(seen.header("content-type"), Some("application/json"));
    let body = seen.json();
    assert_eq!(body["model"], "requested-model");
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "Be brief about graphs."},
               {"role": "user", "content": "Explain graphs"}])
    );
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["max_tokens"], 64);
    assert!(body.get("response_format").is_none(), "{body}");

    assert_eq!(out.value, json!({"text": "echo: Explain graphs"}));
    assert_eq!(out.telemetry.provider.as_deref(), Some("openai"));
    assert_eq!(
        out.telemetry.model.as_deref(),
        Some("fake-gpt-1"),
        "the model that answered"
    );
    assert_eq!(
        out.telemetry.token_usage,
        Some(TokenUsage {
            prompt_tokens: 11,
            completion_tokens: 7,
            total_tokens: 18
        })
    );
}

#[tokio::test]
async fn openai_json_response_format_is_requested_and_parsed() {
    let (rec, origin) = llm_server().await;
    let llm = LlmCall::new();
    let conn = json!({"endpoint": format!("{origin}/v1"), "model": "m"});
    let call = Call::new(
        llm_op("openai", "json"),
        conn.clone(),
        json!({"instruction": "Rate", "topic": "graphs"}),
    );
    let out = call.run(&llm).await.unwrap();
    assert_eq!(
        rec.last().json()["response_format"],
        json!({"type": "json_object"})
    );
    assert!(
        rec.last().header("authorization").is_none(),
        "no Secret, no auth header"
    );
    assert_eq!(
        out.value,
        json!({"answer": 42, "topic": "graphs"}),
        "the fenced JSON answer is parsed"
    );

    // An answer that is not JSON when JSON was asked is a tool error (not retried).
    let call = Call::new(
        llm_op("openai", "json"),
        conn,
        json!({"instruction": "case:not-json", "topic": "graphs"}),
    );
    let f = call.fail(&llm).await;
    assert_eq!(f.class, FailureClass::ToolError, "{}", f.message);
    assert_eq!(f.telemetry.provider.as_deref(), Some("openai"));
    assert_eq!(f.telemetry.model.as_deref(), Some("fake-gpt-1"));
    assert_eq!(f.telemetry.token_usage.unwrap().total_tokens, 18);
}

#[tokio::test]
async fn openai_errors_map_to_failure_classes_without_the_key() {
    let (rec, origin) = llm_server().await;
    let llm = LlmCall::new();
    let key = unique("sk-secret-");
    for (case, class, status) in [
        ("rate-limit", FailureClass::RateLimited, 429),
        ("server-error", FailureClass::UpstreamError, 500),
        ("bad-key", FailureClass::AuthError, 401),
    ] {
        let call = Call::new(
            llm_op("openai", "text"),
            json!({"endpoint": format!("{origin}/v1"), "model": "requested-model"}),
            json!({"instruction": format!("case:{case}"), "topic": "t"}),
        )
        .secret(&key);
        let f = call.fail(&llm).await;
        assert_eq!(f.class, class, "{case}: {}", f.message);
        assert!(
            f.message.contains(&status.to_string()),
            "{case}: {}",
            f.message
        );
        assert_eq!(f.telemetry.provider.as_deref(), Some("openai"));
        assert_eq!(f.telemetry.model.as_deref(), Some("requested-model"));
        assert_secret_absent(&f, &[&key]);
    }
    let f = Call::new(
        llm_op("openai", "text"),
        json!({"endpoint": format!("{origin}/v1"), "model": "requested-model"}),
        json!({"instruction": "case:bad-key", "topic": "t"}),
    )
    .secret(&key)
    .fail(&llm)
    .await;
    assert!(
        f.message
            .contains("Incorrect API key provided: Bearer [redacted]"),
        "the provider's words stay, the key does not: {}",
        f.message
    );

    // A reply slower than the timeout.
    let started = Instant::now();
    let f = Call::new(
        llm_op("openai", "text"),
        json!({"endpoint": format!("{origin}/v1"), "model": "m"}),
        json!({"instruction": "case:slow", "topic": "t"}),
    )
    .timeout(Duration::from_millis(300))
    .fail(&llm)
    .await;
    assert_eq!(f.class, FailureClass::Timeout, "{}", f.message);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(f.telemetry.provider.as_deref(), Some("openai"));

    // Nothing to send without a model, or with a variable the input lacks.
    let before = rec.all().len();
    let f = Call::new(
        llm_op("openai", "text"),
        json!({"endpoint": format!("{origin}/v1")}),
        json!({"instruction": "x", "topic": "t"}),
    )
    .fail(&llm)
    .await;
    assert_eq!(f.class, FailureClass::InvalidRequest);
    assert!(f.message.contains("model"), "{}", f.message);
    let f = Call::new(
        llm_op("openai", "text"),
        json!({"endpoint": format!("{origin}/v1"), "model": "m"}),
        json!({"instruction": "x"}),
    )
    .fail(&llm)
    .await;
    assert_eq!(f.class, FailureClass::InvalidRequest);
    assert!(f.message.contains("topic"), "{}", f.message);
    assert_eq!(rec.all().len(), before, "nothing was sent");

    // Connection refused.
    let refused = format!("http://127.0.0.1:{}/v1", unused_port().await);
    let f = Call::new(
        llm_op("openai", "text"),
        json!({"endpoint": refused, "model": "m"}),
        json!({"instruction": "x", "topic": "t"}),
    )
    .fail(&llm)
    .await;
    assert_eq!(f.class, FailureClass::ConnectionError, "{}", f.message);
}

#[tokio::test]
async fn anthropic_messages_send_key_version_and_system_and_report_usage() {
    let (rec, origin) = llm_server().await;
    let llm = LlmCall::new();
    let key = unique("sk-ant-");
    // The Service's endpoint without `/v1`: the executor adds it.
    let mut call = Call::new(
        llm_op("anthropic", "text"),
        json!({"model": "claude-requested"}),
        json!({"instruction": "Summarize", "topic": "Bolt"}),
    )
    .secret(&key);
    call.service_endpoint = Some(origin.clone());
    let out = call.run(&llm).await.unwrap();
    let seen = rec.last();
    assert_eq!(seen.uri, "/v1/messages");
    assert_eq!(seen.header("x-api-key"), Some(key.as_str()));
    assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
    assert!(seen.header("authorization").is_none());
    let body = seen.json();
    assert_eq!(body["model"], "claude-requested");
    assert_eq!(body["max_tokens"], 1024, "the default");
    assert_eq!(body["system"], "Be brief about Bolt.");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "Summarize Bolt"}])
    );
    assert!(body.get("temperature").is_none());
    assert_eq!(
        out.value,
        json!({"text": "claude says Summarize Bolt"}),
        "text blocks joined, other blocks skipped"
    );
    assert_eq!(out.telemetry.provider.as_deref(), Some("anthropic"));
    assert_eq!(out.telemetry.model.as_deref(), Some("fake-claude-1"));
    assert_eq!(
        out.telemetry.token_usage,
        Some(TokenUsage {
            prompt_tokens: 5,
            completion_tokens: 3,
            total_tokens: 8
        })
    );

    // An endpoint already ending in `/v1` is not doubled; parameters are passed on.
    let call = Call::new(
        llm_op("anthropic", "json"),
        json!({"endpoint": format!("{origin}/v1"), "model": "claude-requested",
               "temperature": 0.7, "maxTokens": 200}),
        json!({"instruction": "case:json", "topic": "Bolt"}),
    )
    .secret(&key);
    let out = call.run(&llm).await;
    let seen = rec.last();
    assert_eq!(seen.uri, "/v1/messages");
    assert_eq!(seen.json()["max_tokens"], 200);
    assert_eq!(seen.json()["temperature"], 0.7);
    // "claude says " + the JSON text: not JSON as a whole, so a tool error…
    let f = out.unwrap_err();
    assert_eq!(f.class, FailureClass::ToolError, "{}", f.message);
    assert_eq!(f.telemetry.model.as_deref(), Some("fake-claude-1"));
}

#[tokio::test]
async fn anthropic_json_answers_and_errors() {
    // A server whose only text block is the JSON.
    async fn json_only(
        State(rec): State<Recorder>,
        uri: Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        rec.record(Method::POST, &uri, headers, body);
        Json(
            json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "fake-claude-2",
            "content": [{"type": "text", "text": "```json\n{\"verdict\": \"yes\"}\n```"}],
            "usage": {"input_tokens": 9, "output_tokens": 4}}),
        )
        .into_response()
    }
    let rec = Recorder::default();
    let json_origin = serve(
        Router::new()
            .route("/v1/messages", axum::routing::post(json_only))
            .with_state(rec.clone()),
    )
    .await;
    let llm = LlmCall::new();
    let out = Call::new(
        llm_op("anthropic", "json"),
        json!({"endpoint": json_origin, "model": "c"}),
        json!({"instruction": "Judge", "topic": "x"}),
    )
    .secret("k")
    .run(&llm)
    .await
    .unwrap();
    assert_eq!(out.value, json!({"verdict": "yes"}));
    assert_eq!(out.telemetry.token_usage.unwrap().total_tokens, 13);
    assert_eq!(rec.last().uri, "/v1/messages");

    let (_rec, origin) = llm_server().await;
    let key = unique("sk-ant-");
    for (case, class, status) in [
        ("overloaded", FailureClass::UpstreamError, 529),
        ("rate-limit", FailureClass::RateLimited, 429),
        ("server-error", FailureClass::UpstreamError, 500),
        ("bad-key", FailureClass::AuthError, 401),
    ] {
        let f = Call::new(
            llm_op("anthropic", "text"),
            json!({"endpoint": origin, "model": "claude-requested"}),
            json!({"instruction": format!("case:{case}"), "topic": "t"}),
        )
        .secret(&key)
        .fail(&llm)
        .await;
        assert_eq!(f.class, class, "{case}: {}", f.message);
        assert!(f.message.contains(&status.to_string()), "{}", f.message);
        assert_eq!(f.telemetry.provider.as_deref(), Some("anthropic"));
        assert_eq!(f.telemetry.model.as_deref(), Some("claude-requested"));
        assert_secret_absent(&f, &[&key]);
    }
    let started = Instant::now();
    let f = Call::new(
        llm_op("anthropic", "text"),
        json!({"endpoint": origin, "model": "c"}),
        json!({"instruction": "case:slow", "topic": "t"}),
    )
    .timeout(Duration::from_millis(300))
    .fail(&llm)
    .await;
    assert_eq!(f.class, FailureClass::Timeout, "{}", f.message);
    assert!(started.elapsed() < Duration::from_secs(2));
}

// ---------------------------------------------------------------------------------------------
// graph_query against the local Bolt server
// ---------------------------------------------------------------------------------------------

/// The Bolt settings from `AIDEN_NEO4J_*`, else `.stack/env` (lines
/// `export NAME=${NAME:-value}`).
fn bolt_settings() -> HashMap<&'static str, String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../.stack/env");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "graph_query tests need the local stack's settings in {path} ({e}); \
             start the stack (scripts/stack.sh up)"
        )
    });
    let mut file = HashMap::new();
    for line in text.lines() {
        let line = line.trim().trim_start_matches("export ").trim();
        if let Some((name, value)) = line.split_once('=') {
            let default = format!("${{{name}:-");
            let value = value
                .strip_prefix(&default)
                .and_then(|v| v.strip_suffix('}'))
                .unwrap_or(value)
                .trim_matches('"');
            file.insert(name.to_owned(), value.to_owned());
        }
    }
    let mut out = HashMap::new();
    for name in [
        "AIDEN_NEO4J_URI",
        "AIDEN_NEO4J_USER",
        "AIDEN_NEO4J_PASSWORD",
        "AIDEN_NEO4J_DATABASE",
    ] {
        let value = std::env::var(name)
            .ok()
            .or_else(|| file.get(name).cloned())
            .unwrap_or_else(|| panic!("{name} is neither set nor in {path}"));
        out.insert(name, value);
    }
    out
}

fn graph_call(query: &str, access: &str, input: Value) -> Call {
    let s = bolt_settings();
    let mut call = Call::new(
        json!({"type": "graph_query", "query": query, "access": access}),
        json!({"endpoint": s["AIDEN_NEO4J_URI"], "user": s["AIDEN_NEO4J_USER"],
               "database": s["AIDEN_NEO4J_DATABASE"]}),
        input,
    )
    .secret(&s["AIDEN_NEO4J_PASSWORD"])
    .timeout(Duration::from_secs(20));
    call.protocol = Protocol::Bolt;
    call
}

/// One probe login per test binary before any graph test runs: with stale settings every
/// test would fail its own login, and Neo4j locks a user out after 3 failures in a row
/// (`dbms.security.auth_max_failed_attempts`), which would also stall anyone else using it.
async fn bolt_ready() {
    static PROBE: tokio::sync::OnceCell<Result<(), String>> = tokio::sync::OnceCell::const_new();
    let probe = PROBE
        .get_or_init(|| async {
            graph_call("RETURN 1 AS one", "read", json!({}))
                .run(&GraphQuery::new())
                .await
                .map(|_| ())
                .map_err(|f| format!("{:?}: {}", f.class, f.message))
        })
        .await;
    if let Err(e) = probe {
        panic!(
            "the Bolt server at {} rejects the stack's settings ({e}); is .stack/env current \
             (or set AIDEN_NEO4J_*)?",
            bolt_settings()["AIDEN_NEO4J_URI"]
        );
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

async fn count_nodes(graph: &GraphQuery, id: &str) -> i64 {
    let out = graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.id = $id RETURN count(n) AS c",
        "read",
        json!({"id": id}),
    )
    .run(graph)
    .await
    .unwrap();
    out.value["rows"][0]["c"].as_i64().unwrap()
}

#[tokio::test]
async fn graph_query_writes_then_reads_rows_with_parameters() {
    bolt_ready().await;
    let graph = GraphQuery::new();
    // Leftovers of earlier, aborted runs of these tests (never other data).
    graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.created < $cutoff DETACH DELETE n",
        "write",
        json!({"cutoff": now_ms() - 600_000}),
    )
    .run(&graph)
    .await
    .unwrap();

    let id = unique("node-");
    let out = graph_call(
        "CREATE (n:ExecutorTestNode {id: $id, name: $name, n: $n, score: $score, tags: $tags, \
         created: $created}) RETURN n.id AS id, n.n AS n",
        "write",
        json!({"id": id, "name": "Ada \"Lovelace\"", "n": 7, "score": 0.25,
               "tags": ["a", "b"], "created": now_ms()}),
    )
    .run(&graph)
    .await
    .unwrap();
    assert_eq!(out.value, json!({"rows": [{"id": id, "n": 7}]}));
    assert_eq!(out.telemetry.provider.as_deref(), Some("neo4j"));

    let out = graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.id = $id \
         RETURN n.name AS name, n.n AS n, n.score AS score, n.tags AS tags, $meta AS meta",
        "read",
        json!({"id": id, "meta": {"nested": [1, "two", null, true]}}),
    )
    .run(&graph)
    .await
    .unwrap();
    assert_eq!(
        out.value,
        json!({"rows": [{"name": "Ada \"Lovelace\"", "n": 7, "score": 0.25, "tags": ["a", "b"],
                         "meta": {"nested": [1, "two", null, true]}}]})
    );

    // A node column becomes its properties.
    let out = graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.id = $id RETURN n AS node",
        "read",
        json!({"id": id}),
    )
    .run(&graph)
    .await
    .unwrap();
    let node = &out.value["rows"][0]["node"];
    assert_eq!(node["id"], json!(id), "{out:?}");
    assert_eq!(node["tags"], json!(["a", "b"]));
    assert!(node["created"].is_i64(), "{node}");

    // No match: no rows.
    let out = graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.id = $id RETURN n.id AS id",
        "read",
        json!({"id": unique("absent-")}),
    )
    .run(&graph)
    .await
    .unwrap();
    assert_eq!(out.value, json!({"rows": []}));

    // Cleanup through the executor itself.
    graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.id = $id DETACH DELETE n",
        "write",
        json!({"id": id}),
    )
    .run(&graph)
    .await
    .unwrap();
    assert_eq!(count_nodes(&graph, &id).await, 0);
}

#[tokio::test]
async fn graph_query_read_access_never_changes_the_graph() {
    bolt_ready().await;
    let graph = GraphQuery::new();
    let id = unique("node-");
    let out = graph_call(
        "CREATE (n:ExecutorTestNode {id: $id, created: $created}) RETURN n.id AS id",
        "read",
        json!({"id": id, "created": now_ms()}),
    )
    .run(&graph)
    .await;
    let created = count_nodes(&graph, &id).await;
    if created != 0 {
        // Do not leave it behind, then fail.
        graph_call(
            "MATCH (n:ExecutorTestNode) WHERE n.id = $id DETACH DELETE n",
            "write",
            json!({"id": id}),
        )
        .run(&graph)
        .await
        .unwrap();
    }
    assert_eq!(
        created, 0,
        "a read Tool's transaction is rolled back ({out:?})"
    );
}

#[tokio::test]
async fn graph_query_cypher_errors_are_invalid_requests() {
    bolt_ready().await;
    let graph = GraphQuery::new();
    let f = graph_call("MATCH (n:ExecutorTestNode RETURN n", "read", json!({}))
        .fail(&graph)
        .await;
    assert_eq!(f.class, FailureClass::InvalidRequest, "{}", f.message);
    // The pooled connection is still good afterwards.
    let out = graph_call("RETURN $x AS x", "read", json!({"x": 1}))
        .run(&graph)
        .await
        .unwrap();
    assert_eq!(out.value, json!({"rows": [{"x": 1}]}));
}

#[tokio::test]
async fn graph_query_credentials_and_connection_failures() {
    bolt_ready().await;
    let graph = GraphQuery::new();
    // A wrong password.
    let wrong = unique("wrong-password-");
    let mut call = graph_call("RETURN 1 AS one", "read", json!({}))
        .secret(&wrong)
        .timeout(Duration::from_secs(15));
    let started = Instant::now();
    let f = call.fail(&graph).await;
    assert_eq!(
        f.class,
        FailureClass::AuthError,
        "{} (after {:?})",
        f.message,
        started.elapsed()
    );
    assert_secret_absent(&f, &[&wrong]);
    // The same refused credentials are not tried again right away (the server would lock the
    // user out after a few failures); other credentials for the same user still are.
    let f = call.fail(&graph).await;
    assert_eq!(f.class, FailureClass::AuthError);
    assert!(
        f.message.contains("refused these credentials"),
        "{}",
        f.message
    );
    assert_secret_absent(&f, &[&wrong]);
    let good = graph_call("RETURN 1 AS one", "read", json!({}));
    assert_eq!(
        good.run(&graph).await.unwrap().value,
        json!({"rows": [{"one": 1}]})
    );

    // No Secret at all.
    call.secret = None;
    let f = call.fail(&graph).await;
    assert_eq!(f.class, FailureClass::AuthError);
    assert_eq!(f.message, "graph_query needs a password Secret");

    // Nothing listening.
    let mut call = graph_call("RETURN 1 AS one", "read", json!({}));
    call.connection["endpoint"] = json!(format!("bolt://127.0.0.1:{}", unused_port().await));
    let f = call.fail(&graph).await;
    assert_eq!(f.class, FailureClass::ConnectionError, "{}", f.message);
}
