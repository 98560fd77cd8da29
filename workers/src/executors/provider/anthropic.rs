//! The Anthropic Messages wire.

use reqwest::header::HeaderValue;
use serde_json::{json, Map, Value};

use aiden_domain::provider_wire::{anthropic_url, ANTHROPIC_VERSION};

use super::{Call, Provider, Streamed};
use crate::tool::TokenUsage;

/// The Messages API requires `max_tokens`; this is ours when the Tool sets none.
const DEFAULT_MAX_TOKENS: u64 = 1024;

pub struct Anthropic;

impl Provider for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn request(
        &self,
        http: &reqwest::Client,
        endpoint: &str,
        secret: Option<&str>,
        call: &Call<'_>,
    ) -> Result<reqwest::RequestBuilder, &'static str> {
        let (system, messages) = messages(&call.conversation);
        let mut body = json!({"model": call.model,
            "max_tokens": call.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages});
        if let Some(t) = super::tools(&call.conversation, tool) {
            body["tools"] = json!(t);
        }
        if call.stream {
            body["stream"] = json!(true);
        }
        if let Some(s) = &system {
            body["system"] = json!(s);
        }
        if let Some(t) = call.temperature {
            body["temperature"] = json!(t);
        }
        let mut req = http
            .post(anthropic_url(endpoint, "messages"))
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&body);
        if let Some(secret) = secret {
            let mut key = HeaderValue::from_str(secret)
                .map_err(|_| "the Secret is not a valid x-api-key header value")?;
            key.set_sensitive(true);
            req = req.header("x-api-key", key);
        }
        Ok(req)
    }

    fn text(&self, answer: &Value) -> Option<String> {
        let blocks = answer.get("content")?.as_array()?;
        Some(texts(blocks))
    }

    fn turn(&self, answer: &Value) -> Option<Value> {
        let blocks = answer.get("content")?.as_array()?;
        let text = texts(blocks);
        let calls: Vec<Value> = blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                let input = b.get("input").cloned().unwrap_or(Value::Object(Map::new()));
                json!({"id": b["id"], "name": b["name"], "arguments": input})
            })
            .collect();
        let text = (!text.is_empty()).then_some(text);
        Some(json!({"text": text, "toolCalls": calls}))
    }

    fn usage(&self, answer: &Value) -> Option<TokenUsage> {
        answer.get("usage").map(|u| {
            let (i, o) = (
                u["input_tokens"].as_u64().unwrap_or(0),
                u["output_tokens"].as_u64().unwrap_or(0),
            );
            TokenUsage {
                prompt_tokens: i,
                completion_tokens: o,
                total_tokens: i + o,
            }
        })
    }

    fn stream_event(&self, into: &mut Streamed, data: &Value) -> Option<String> {
        match data["type"].as_str()? {
            "message_start" => {
                let m = &data["message"];
                into.model = m["model"].as_str().map(str::to_owned);
                let input = m.pointer("/usage/input_tokens").and_then(Value::as_u64);
                into.usage = Some((input.unwrap_or(0), 0));
                None
            }
            "content_block_start" => {
                let block = &data["content_block"];
                if block["type"] == "tool_use" {
                    let index = data["index"].as_u64().unwrap_or(0);
                    into.call_part(index, block["id"].as_str(), block["name"].as_str(), None);
                }
                None
            }
            "content_block_delta" => {
                let delta = &data["delta"];
                match delta["type"].as_str()? {
                    "text_delta" => into.push_text(delta["text"].as_str()?),
                    "input_json_delta" => {
                        let index = data["index"].as_u64().unwrap_or(0);
                        into.call_arguments(index, delta["partial_json"].as_str());
                        None
                    }
                    _ => None,
                }
            }
            "message_delta" => {
                if let Some(out) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    let input = into.usage.map_or(0, |u| u.0);
                    into.usage = Some((input, out));
                }
                None
            }
            _ => None,
        }
    }
}

/// The text blocks of an answer, joined.
fn texts(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect()
}

/// System messages joined into `system`; tool calls as `tool_use` blocks; each run of tool
/// results as one user message of `tool_result` blocks.
fn messages(conversation: &Value) -> (Option<String>, Vec<Value>) {
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for m in conversation["messages"].as_array().into_iter().flatten() {
        let text = m["content"].as_str().unwrap_or_default().to_owned();
        match m["role"].as_str() {
            Some("system") => system.push(text),
            Some("assistant") => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in m["toolCalls"].as_array().into_iter().flatten() {
                    blocks.push(json!({"type": "tool_use", "id": c["id"], "name": c["name"],
                                       "input": c["arguments"]}));
                }
                messages.push(json!({"role": "assistant", "content": blocks}));
            }
            Some("tool") => {
                let block = json!({"type": "tool_result", "tool_use_id": m["toolCallId"],
                                   "content": text});
                match messages.last_mut() {
                    Some(last) if last["role"] == "user" && last["content"].is_array() => {
                        last["content"].as_array_mut().expect("array").push(block)
                    }
                    _ => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
            _ => messages.push(json!({"role": "user", "content": text})),
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, messages)
}

/// A tool with its `input_schema`.
fn tool(t: &Value) -> Value {
    json!({"name": t["name"], "description": t["description"], "input_schema": t["parameters"]})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executors::provider::sample_turn;

    #[test]
    fn requests_join_system_and_group_tool_results() {
        let (system, messages) = messages(&sample_turn());
        assert_eq!(system.as_deref(), Some("core\n\nguardrail"));
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert_eq!(messages[1]["content"][1]["type"], "tool_use");
        assert_eq!(messages[2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(messages[2]["content"][1]["tool_use_id"], "c2");
        let tools = crate::executors::provider::tools(&sample_turn(), tool);
        assert_eq!(tools.unwrap()[0]["input_schema"], json!({"type": "object"}));
        let answer = json!({"content": [{"type": "text", "text": "let me look"},
            {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "z"}}]});
        assert_eq!(
            Anthropic.turn(&answer).unwrap(),
            json!({"text": "let me look", "toolCalls": [{"id": "t1", "name": "search", "arguments": {"q": "z"}}]})
        );
        assert_eq!(Anthropic.text(&answer).as_deref(), Some("let me look"));
    }

    #[test]
    fn streamed_answers_assemble_text_and_tool_calls() {
        let events = [
            json!({"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 7}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "clock"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"zone\":"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"UTC\"}"}}),
            json!({"type": "message_delta", "usage": {"output_tokens": 4}}),
        ];
        let mut a = Streamed::default();
        let texts: Vec<String> = events
            .iter()
            .filter_map(|e| Anthropic.stream_event(&mut a, e))
            .collect();
        assert_eq!(texts, ["Hi"]);
        assert_eq!(a.usage, Some((7, 4)));
        assert_eq!(a.model.as_deref(), Some("claude"));
        assert_eq!(
            a.answer(),
            json!({"text": "Hi", "toolCalls": [{"id": "t1", "name": "clock", "arguments": {"zone": "UTC"}}]})
        );
    }
}
