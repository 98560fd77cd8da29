//! The `llm_call` executor called directly through the `Tool` trait, against local axum servers
//! speaking the real wire formats: an OpenAI-compatible and an Anthropic-compatible API with
//! scripted replies.

use std::time::{Duration, Instant};

use aiden_workers::executors::llm_call::LlmCall;
use aiden_workers::tool::{FailureClass, TokenUsage};
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
