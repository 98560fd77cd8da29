//! A scripted model that speaks the OpenAI chat-completions and Anthropic Messages wire formats
//! with tool calls (for the agent tests; no network, no cost). It reads its script from the
//! conversation's user message (`script:[…]`): entry k answers the loop's k-th model turn
//! (k = assistant messages so far): `{"calls": [{"name", "args"}]}` asks for tools,
//! `{"answer": "x"}` answers `x | <every tool message so far, in order>`; with `"failOnce":
//! "why"` beside it, the first request (OpenAI wire) gets a 400 error instead. A router turn (AGT-15:
//! its system prompt is the intent router's) answers the script's `{"route": …}` entry (a
//! string as is, anything else as JSON text); the loop's turns skip that entry. Call ids are
//! `call_<k>_<j>` (OpenAI) and `toolu_<k>_<j>` (Anthropic). With `"stream": true` it answers
//! in each API's streaming format (server-sent events: the text word by word, tool arguments in
//! two fragments), 15 ms apart.
//!
//! `GET /v1/models` answers as OpenAI's and Anthropic's do: the model list for the key [`KEY`]
//! (`Authorization: Bearer …` or `x-api-key`), 401 with the providers' error shape for any
//! other key or none, so a key check (SEC-7) can succeed and fail here. The chat routes take any
//! key, as before.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::{
    body::{Body, Bytes},
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use futures::StreamExt;
use serde_json::{json, Value};

/// The text in pieces as a model streams it: word by word, each with its trailing space.
pub fn pieces(text: &str) -> Vec<String> {
    text.split_inclusive(' ').map(str::to_owned).collect()
}

fn sse(frames: Vec<String>, frame: Duration) -> Response {
    let body = futures::stream::iter(frames).then(move |f| async move {
        tokio::time::sleep(frame).await;
        Ok::<_, std::convert::Infallible>(Bytes::from(f))
    });
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(body),
    )
        .into_response()
}

fn halves(s: &str) -> (String, String) {
    let mid = s.len() / 2;
    let mid = (0..=mid)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    (s[..mid].to_owned(), s[mid..].to_owned())
}

/// An OpenAI chat-completion `message` as chat.completion.chunk frames.
fn openai_stream(message: &Value, frame: Duration) -> Response {
    let chunk = |delta: Value| {
        let c = json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "scripted-gpt",
                       "choices": [{"index": 0, "delta": delta}]});
        format!("data: {c}\n\n")
    };
    let mut frames = vec![chunk(json!({"role": "assistant"}))];
    if let Some(text) = message["content"].as_str() {
        frames.extend(
            pieces(text)
                .into_iter()
                .map(|p| chunk(json!({"content": p}))),
        );
    }
    for (j, c) in message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let (a, b) = halves(c["function"]["arguments"].as_str().unwrap_or_default());
        frames.push(chunk(
            json!({"tool_calls": [{"index": j, "id": c["id"], "type": "function",
            "function": {"name": c["function"]["name"], "arguments": a}}]}),
        ));
        frames.push(chunk(
            json!({"tool_calls": [{"index": j, "function": {"arguments": b}}]}),
        ));
    }
    let usage = json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "choices": [],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}});
    frames.push(format!("data: {usage}\n\n"));
    frames.push("data: [DONE]\n\n".into());
    sse(frames, frame)
}

/// Anthropic `content` blocks as Messages stream events.
fn anthropic_stream(content: &Value, frame: Duration) -> Response {
    let event = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
    let mut frames = vec![event(
        json!({"type": "message_start", "message": {"id": "msg_s",
        "type": "message", "role": "assistant", "model": "scripted-claude", "content": [],
        "usage": {"input_tokens": 10, "output_tokens": 0}}}),
    )];
    for (i, block) in content.as_array().into_iter().flatten().enumerate() {
        if let Some(text) = block["text"].as_str() {
            frames.push(event(json!({"type": "content_block_start", "index": i,
                "content_block": {"type": "text", "text": ""}})));
            frames.extend(pieces(text).into_iter().map(|p| {
                event(json!({"type": "content_block_delta",
                "index": i, "delta": {"type": "text_delta", "text": p}}))
            }));
        } else {
            frames.push(event(json!({"type": "content_block_start", "index": i,
                "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})));
            let (a, b) = halves(&block["input"].to_string());
            for part in [a, b] {
                frames.push(event(json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": part}})));
            }
        }
        frames.push(event(json!({"type": "content_block_stop", "index": i})));
    }
    frames.push(event(
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 5}}),
    ));
    frames.push(event(json!({"type": "message_stop"})));
    sse(frames, frame)
}

#[derive(Clone)]
pub struct Model {
    requests: Arc<Mutex<Vec<Value>>>,
    /// `failOnce` messages already failed: the next request with one is answered.
    failed_once: Arc<Mutex<std::collections::HashSet<String>>>,
    /// Pause before each streamed frame.
    frame: Duration,
}

impl Model {
    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

/// Serves the model on a free port; its base URL (`…/v1`, as an `llm_call` endpoint).
pub async fn start() -> (Model, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (model, url) = serve(listener, Duration::from_millis(15));
    (model, url)
}

/// Serves the model on `listener`, pausing `frame` before each streamed frame; its base URL.
pub fn serve(listener: tokio::net::TcpListener, frame: Duration) -> (Model, String) {
    let model = Model {
        requests: Arc::default(),
        failed_once: Arc::default(),
        frame,
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .route("/v1/models", get(models))
        .with_state(model.clone());
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (model, format!("http://{addr}/v1"))
}

/// An OpenAI-compatible provider with no model list (`GET /v1/models` is 404, as on some
/// gateways) whose chat route authenticates first, as OpenAI's does: a request without the key
/// [`KEY`] is 401, one with it but without messages 400 (`invalid_request_error`). Its base URL.
pub async fn start_without_model_list() -> String {
    async fn chat(headers: HeaderMap, Json(body): Json<Value>) -> Response {
        let bearer = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if bearer != Some(KEY) {
            return unauthorized();
        }
        if body["messages"].as_array().is_none_or(Vec::is_empty) {
            let error = json!({"error": {"message": "[] is too short - 'messages'",
                "type": "invalid_request_error", "param": "messages", "code": null}});
            return (StatusCode::BAD_REQUEST, Json(error)).into_response();
        }
        Json(
            json!({"id": "chatcmpl-0", "object": "chat.completion", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}),
        )
        .into_response()
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().route("/v1/chat/completions", post(chat));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

/// OpenAI's answer to a wrong key.
fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        Json(json!({"error": {"message": "Incorrect API key provided.",
                              "type": "invalid_request_error", "code": "invalid_api_key"}})),
    )
        .into_response()
}

/// The one key `GET /v1/models` accepts.
pub const KEY: &str = "sk-scripted-model-key";

async fn models(headers: HeaderMap) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let bearer = header("authorization").and_then(|v| v.strip_prefix("Bearer "));
    if bearer == Some(KEY) || header("x-api-key") == Some(KEY) {
        return Json(json!({"object": "list", "data": [
            {"id": "scripted", "object": "model", "created": 0, "owned_by": "aiden-tests"}]}))
        .into_response();
    }
    unauthorized()
}

/// The script entry for this turn and the tool results so far, from neutral messages
/// `(role, content)`.
fn scripted(messages: &[(String, String)]) -> Value {
    let script = messages
        .iter()
        .rev()
        .find(|(r, c)| r == "user" && c.starts_with("script:"))
        .map(|(_, c)| c.trim_start_matches("script:").to_owned())
        .unwrap_or_else(|| "[{\"answer\": \"no script\"}]".into());
    let script: Vec<Value> = serde_json::from_str(&script).expect("script JSON");
    let (routes, script): (Vec<Value>, Vec<Value>) =
        script.into_iter().partition(|e| e.get("route").is_some());
    let router_turn = messages
        .iter()
        .any(|(r, c)| r == "system" && c.starts_with("You are the intent router"));
    if router_turn {
        let route = routes.first().map_or(Value::Null, |e| e["route"].clone());
        let text = route
            .as_str()
            .map_or_else(|| route.to_string(), str::to_owned);
        return json!({"answer": text});
    }
    let turn = messages.iter().filter(|(r, _)| r == "assistant").count();
    let entry = script
        .get(turn)
        .cloned()
        .unwrap_or(json!({"answer": "script over"}));
    if let Some(prefix) = entry["answer"].as_str() {
        let mut parts = vec![prefix.to_owned()];
        parts.extend(
            messages
                .iter()
                .filter(|(r, _)| r == "tool")
                .map(|(_, c)| c.clone()),
        );
        return json!({"answer": parts.join(" | "), "failOnce": entry["failOnce"]});
    }
    entry
}

async fn openai(State(m): State<Model>, Json(body): Json<Value>) -> Response {
    m.requests.lock().unwrap().push(body.clone());
    let neutral: Vec<(String, String)> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["role"].as_str().unwrap_or_default().to_owned(),
                x["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let turn = neutral.iter().filter(|(r, _)| r == "assistant").count();
    let entry = scripted(&neutral);
    // `{"failOnce": "why", "answer": …}`: the first such request gets the API's 400 error.
    if let Some(why) = entry["failOnce"].as_str() {
        if m.failed_once.lock().unwrap().insert(why.to_owned()) {
            let error = json!({"error": {"message": why, "type": "invalid_request_error",
                "param": null, "code": null}});
            return (axum::http::StatusCode::BAD_REQUEST, Json(error)).into_response();
        }
    }
    let message = match entry["answer"].as_str() {
        Some(a) => json!({"role": "assistant", "content": a}),
        None => {
            let calls: Vec<Value> = entry["calls"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    json!({"id": format!("call_{turn}_{j}"), "type": "function",
                    "function": {"name": c["name"], "arguments": c["args"].to_string()}})
                })
                .collect();
            json!({"role": "assistant", "content": null, "tool_calls": calls})
        }
    };
    if body["stream"] == true {
        return openai_stream(&message, m.frame);
    }
    Json(
        json!({"id": "chatcmpl-s", "object": "chat.completion", "model": "scripted-gpt",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
    )
    .into_response()
}

async fn anthropic(State(m): State<Model>, Json(body): Json<Value>) -> Response {
    m.requests.lock().unwrap().push(body.clone());
    let mut neutral = Vec::new();
    if let Some(system) = body["system"].as_str() {
        neutral.push(("system".to_owned(), system.to_owned()));
    }
    for x in body["messages"].as_array().unwrap() {
        let role = x["role"].as_str().unwrap_or_default();
        match &x["content"] {
            Value::String(s) => neutral.push((role.to_owned(), s.clone())),
            Value::Array(blocks) => {
                for b in blocks {
                    if b["type"] == "tool_result" {
                        let text = b["content"].as_str().unwrap_or_default().to_owned();
                        neutral.push(("tool".to_owned(), text));
                    }
                }
                if role == "assistant" {
                    neutral.push(("assistant".to_owned(), String::new()));
                }
            }
            _ => {}
        }
    }
    let turn = neutral.iter().filter(|(r, _)| r == "assistant").count();
    let entry = scripted(&neutral);
    let content = match entry["answer"].as_str() {
        Some(a) => json!([{"type": "text", "text": a}]),
        None => json!(entry["calls"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(
                |(j, c)| json!({"type": "tool_use", "id": format!("toolu_{turn}_{j}"),
                                 "name": c["name"], "input": c["args"]})
            )
            .collect::<Vec<_>>()),
    };
    if body["stream"] == true {
        return anthropic_stream(&content, m.frame);
    }
    Json(
        json!({"id": "msg_s", "type": "message", "role": "assistant", "model": "scripted-claude",
        "content": content, "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}),
    )
    .into_response()
}
