//! A scripted model that speaks the OpenAI chat-completions and Anthropic Messages wire formats
//! with tool calls (issue #11's tests; no network, no cost). It reads its script from the
//! conversation's user message (`script:[…]`): entry k answers the loop's k-th model turn
//! (k = assistant messages so far): `{"calls": [{"name", "args"}]}` asks for tools,
//! `{"answer": "x"}` answers `x | <every tool message so far, in order>`. Call ids are
//! `call_<k>_<j>` (OpenAI) and `toolu_<k>_<j>` (Anthropic).

use std::sync::{Arc, Mutex};

use axum::{extract::State, routing::post, Json, Router};
use serde_json::{json, Value};

#[derive(Clone, Default)]
pub struct Model {
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Model {
    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

/// Serves the model on a free port; its base URL (`…/v1`, as an `llm_call` endpoint).
pub async fn start() -> (Model, String) {
    let model = Model::default();
    let app = Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .with_state(model.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (model, format!("http://{addr}/v1"))
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
        return json!({"answer": parts.join(" | ")});
    }
    entry
}

async fn openai(State(m): State<Model>, Json(body): Json<Value>) -> Json<Value> {
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
    Json(
        json!({"id": "chatcmpl-s", "object": "chat.completion", "model": "scripted-gpt",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
    )
}

async fn anthropic(State(m): State<Model>, Json(body): Json<Value>) -> Json<Value> {
    m.requests.lock().unwrap().push(body.clone());
    let mut neutral = Vec::new();
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
    Json(
        json!({"id": "msg_s", "type": "message", "role": "assistant", "model": "scripted-claude",
        "content": content, "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}),
    )
}
