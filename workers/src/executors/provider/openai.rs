//! The OpenAI chat-completions wire (also what Ollama, vLLM and most gateways speak).

use aiden_domain::execution::agent::parse_arguments;
use serde_json::{json, Value};

use super::{Call, Provider, Streamed};
use crate::tool::TokenUsage;

pub struct OpenAi;

impl Provider for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn request(
        &self,
        http: &reqwest::Client,
        endpoint: &str,
        secret: Option<&str>,
        call: &Call<'_>,
    ) -> Result<reqwest::RequestBuilder, &'static str> {
        let mut body = json!({"model": call.model, "messages": messages(&call.conversation)});
        if let Some(t) = super::tools(&call.conversation, tool) {
            body["tools"] = json!(t);
        }
        if call.stream {
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
        }
        if let Some(t) = call.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(m) = call.max_tokens {
            body["max_tokens"] = json!(m);
        }
        if call.json_mode {
            body["response_format"] = json!({"type": "json_object"});
        }
        let mut req = http
            .post(format!("{endpoint}/chat/completions"))
            .json(&body);
        if let Some(secret) = secret {
            req = req.bearer_auth(secret);
        }
        Ok(req)
    }

    fn text(&self, answer: &Value) -> Option<String> {
        answer
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    fn turn(&self, answer: &Value) -> Option<Value> {
        let message = answer.pointer("/choices/0/message")?;
        let text = message["content"].as_str().map(str::to_owned);
        let calls: Vec<Value> = message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let arguments = c.pointer("/function/arguments").unwrap_or(&Value::Null);
                json!({"id": c["id"], "name": c.pointer("/function/name"),
                       "arguments": parse_arguments(arguments)})
            })
            .collect();
        (text.is_some() || !calls.is_empty()).then(|| json!({"text": text, "toolCalls": calls}))
    }

    fn usage(&self, answer: &Value) -> Option<TokenUsage> {
        answer.get("usage").map(|u| TokenUsage {
            prompt_tokens: u["prompt_tokens"].as_u64().unwrap_or(0),
            completion_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
            total_tokens: u["total_tokens"].as_u64().unwrap_or(0),
        })
    }

    fn stream_event(&self, into: &mut Streamed, data: &Value) -> Option<String> {
        if let Some(m) = data["model"].as_str() {
            into.model = Some(m.to_owned());
        }
        if let Some(u) = data.get("usage").filter(|u| u.is_object()) {
            into.usage = Some((
                u["prompt_tokens"].as_u64().unwrap_or(0),
                u["completion_tokens"].as_u64().unwrap_or(0),
            ));
        }
        let delta = data.pointer("/choices/0/delta")?;
        for c in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = c["index"].as_u64().unwrap_or(0);
            into.call_part(
                index,
                c["id"].as_str(),
                c.pointer("/function/name").and_then(Value::as_str),
                c.pointer("/function/arguments").and_then(Value::as_str),
            );
        }
        let text = delta["content"].as_str().filter(|t| !t.is_empty())?;
        into.push_text(text)
    }
}

/// Messages with `tool_calls` (arguments as JSON text) and the `tool` role.
fn messages(conversation: &Value) -> Vec<Value> {
    conversation["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| match m["role"].as_str() {
            Some("assistant") => {
                let mut out = json!({"role": "assistant", "content": m["content"]});
                let calls: Vec<Value> = m["toolCalls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        json!({"id": c["id"], "type": "function",
                               "function": {"name": c["name"], "arguments": c["arguments"].to_string()}})
                    })
                    .collect();
                if !calls.is_empty() {
                    out["tool_calls"] = json!(calls);
                }
                out
            }
            Some("tool") => {
                json!({"role": "tool", "tool_call_id": m["toolCallId"], "content": m["content"]})
            }
            role => json!({"role": role.unwrap_or("user"), "content": m["content"]}),
        })
        .collect()
}

/// A tool as a function.
fn tool(t: &Value) -> Value {
    json!({"type": "function", "function": {"name": t["name"],
           "description": t["description"], "parameters": t["parameters"]}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executors::provider::{sample_turn, sse_payloads};

    #[test]
    fn requests_carry_tool_calls_as_functions_with_string_arguments() {
        let messages = messages(&sample_turn());
        assert_eq!(
            messages[2]["tool_calls"][0]["function"]["arguments"],
            "{\"q\":\"x\"}"
        );
        assert_eq!(messages[3]["role"], "tool");
        assert_eq!(messages[3]["tool_call_id"], "c1");
        let tools = crate::executors::provider::tools(&sample_turn(), tool);
        assert_eq!(tools.unwrap()[0]["function"]["name"], "search");
        let answer = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"y\"}"}}]}}]});
        assert_eq!(
            OpenAi.turn(&answer).unwrap(),
            json!({"text": null, "toolCalls": [{"id": "c9", "name": "search", "arguments": {"q": "y"}}]})
        );
        assert_eq!(OpenAi.turn(&json!({"choices": [{"message": {}}]})), None);
    }

    #[test]
    fn streamed_answers_assemble_text_and_tool_calls() {
        let mut buffer = String::from(concat!(
            "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"lo\",\"tool_calls\":[{\"index\":0,\"id\":\"c1\",",
            "\"function\":{\"name\":\"search\",\"arguments\":\"{\\\"q\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"x\\\"}\"}}]}}]}\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n",
            "data: [DONE]\ndata: {\"partial"
        ));
        let mut s = Streamed::default();
        let texts: Vec<String> = sse_payloads(&mut buffer)
            .iter()
            .filter_map(|d| OpenAi.stream_event(&mut s, d))
            .collect();
        assert_eq!(texts, ["Hel", "lo"]);
        assert_eq!(buffer, "data: {\"partial", "an unfinished line waits");
        assert_eq!(s.usage, Some((3, 2)));
        assert_eq!(s.model.as_deref(), Some("m"));
        assert_eq!(
            s.answer(),
            json!({"text": "Hello", "toolCalls": [{"id": "c1", "name": "search", "arguments": {"q": "x"}}]})
        );
    }
}
