//! The wire format of an agent's model turn: the loop's provider-neutral
//! `{messages, tools}` as an OpenAI chat-completions or Anthropic Messages request, and the
//! answer back as `{text, toolCalls: [{id, name, arguments}]}`.

use serde_json::{json, Map, Value};

use aiden_domain::execution::agent::parse_arguments;

/// OpenAI: `messages` with `tool_calls` / `tool` roles, `tools` as functions.
pub fn openai_request(input: &Value) -> (Vec<Value>, Option<Vec<Value>>) {
    let messages = input["messages"]
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
        .collect();
    let tools: Vec<Value> = input["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            json!({"type": "function", "function": {"name": t["name"],
                   "description": t["description"], "parameters": t["parameters"]}})
        })
        .collect();
    (messages, (!tools.is_empty()).then_some(tools))
}

/// Anthropic: system messages joined into `system`; tool calls as `tool_use` blocks; each run
/// of tool results as one user message of `tool_result` blocks.
pub fn anthropic_request(input: &Value) -> (Option<String>, Vec<Value>, Option<Vec<Value>>) {
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for m in input["messages"].as_array().into_iter().flatten() {
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
    let tools: Vec<Value> = input["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| json!({"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}))
        .collect();
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, messages, (!tools.is_empty()).then_some(tools))
}

/// `{text, toolCalls}` from an OpenAI answer; `None` when it has neither.
pub fn openai_answer(answer: &Value) -> Option<Value> {
    let message = answer.pointer("/choices/0/message")?;
    let text = message["content"].as_str().map(str::to_owned);
    let calls: Vec<Value> = message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            json!({"id": c["id"], "name": c.pointer("/function/name"),
                   "arguments": parse_arguments(c.pointer("/function/arguments").unwrap_or(&Value::Null))})
        })
        .collect();
    (text.is_some() || !calls.is_empty()).then(|| json!({"text": text, "toolCalls": calls}))
}

/// `{text, toolCalls}` from an Anthropic answer's content blocks.
pub fn anthropic_answer(answer: &Value) -> Option<Value> {
    let blocks = answer.get("content")?.as_array()?;
    let text: String = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
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

/// An answer being assembled from a streamed response (server-sent events).
#[derive(Default)]
pub struct Streamed {
    text: String,
    /// Tool calls by their index in the answer: `(id, name, arguments as JSON text)`.
    calls: std::collections::BTreeMap<u64, (String, String, String)>,
    pub usage: Option<(u64, u64)>,
    pub model: Option<String>,
}

impl Streamed {
    /// One `data:` payload of an OpenAI chat-completions stream; the text it adds, if any.
    pub fn openai(&mut self, data: &Value) -> Option<String> {
        if let Some(m) = data["model"].as_str() {
            self.model = Some(m.to_owned());
        }
        if let Some(u) = data.get("usage").filter(|u| u.is_object()) {
            self.usage = Some((
                u["prompt_tokens"].as_u64().unwrap_or(0),
                u["completion_tokens"].as_u64().unwrap_or(0),
            ));
        }
        let delta = data.pointer("/choices/0/delta")?;
        for c in delta["tool_calls"].as_array().into_iter().flatten() {
            let entry = self
                .calls
                .entry(c["index"].as_u64().unwrap_or(0))
                .or_default();
            if let Some(id) = c["id"].as_str() {
                entry.0 = id.to_owned();
            }
            if let Some(name) = c.pointer("/function/name").and_then(Value::as_str) {
                entry.1.push_str(name);
            }
            if let Some(args) = c.pointer("/function/arguments").and_then(Value::as_str) {
                entry.2.push_str(args);
            }
        }
        let text = delta["content"].as_str().filter(|t| !t.is_empty())?;
        self.text.push_str(text);
        Some(text.to_owned())
    }

    /// One event of an Anthropic Messages stream; the text it adds, if any.
    pub fn anthropic(&mut self, data: &Value) -> Option<String> {
        match data["type"].as_str()? {
            "message_start" => {
                let m = &data["message"];
                self.model = m["model"].as_str().map(str::to_owned);
                let input = m.pointer("/usage/input_tokens").and_then(Value::as_u64);
                self.usage = Some((input.unwrap_or(0), 0));
                None
            }
            "content_block_start" => {
                let block = &data["content_block"];
                if block["type"] == "tool_use" {
                    let index = data["index"].as_u64().unwrap_or(0);
                    let id = block["id"].as_str().unwrap_or_default().to_owned();
                    let name = block["name"].as_str().unwrap_or_default().to_owned();
                    self.calls.insert(index, (id, name, String::new()));
                }
                None
            }
            "content_block_delta" => {
                let delta = &data["delta"];
                match delta["type"].as_str()? {
                    "text_delta" => {
                        let text = delta["text"].as_str()?.to_owned();
                        self.text.push_str(&text);
                        Some(text)
                    }
                    "input_json_delta" => {
                        let index = data["index"].as_u64().unwrap_or(0);
                        if let Some(c) = self.calls.get_mut(&index) {
                            c.2.push_str(delta["partial_json"].as_str().unwrap_or_default());
                        }
                        None
                    }
                    _ => None,
                }
            }
            "message_delta" => {
                if let Some(out) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    let input = self.usage.map_or(0, |u| u.0);
                    self.usage = Some((input, out));
                }
                None
            }
            _ => None,
        }
    }

    /// `{text, toolCalls}`, as the non-streaming answers give it.
    pub fn answer(self) -> Value {
        let calls: Vec<Value> = self
            .calls
            .into_values()
            .map(|(id, name, args)| {
                let arguments = if args.trim().is_empty() {
                    Value::Object(Map::new())
                } else {
                    parse_arguments(&Value::String(args))
                };
                json!({"id": id, "name": name, "arguments": arguments})
            })
            .collect();
        let text = (!self.text.is_empty()).then_some(self.text);
        json!({"text": text, "toolCalls": calls})
    }
}

/// The `data:` payloads of a server-sent-events body, as they complete in `buffer` (which
/// keeps any unfinished line for the next chunk).
pub fn sse_payloads(buffer: &mut String) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(end) = buffer.find('\n') {
        let line: String = buffer.drain(..=end).collect();
        let line = line.trim_end_matches(['\r', '\n']);
        if let Some(data) = line.strip_prefix("data:") {
            let data = data.trim_start();
            if data != "[DONE]" {
                if let Ok(v) = serde_json::from_str(data) {
                    out.push(v);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn() -> Value {
        json!({"messages": [
            {"role": "system", "content": "core"},
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": null, "toolCalls": [
                {"id": "c1", "name": "search", "arguments": {"q": "x"}},
                {"id": "c2", "name": "lookup", "arguments": {"id": 1}}]},
            {"role": "tool", "toolCallId": "c1", "name": "search", "content": "{\"r\":1}"},
            {"role": "tool", "toolCallId": "c2", "name": "lookup", "content": "{\"r\":2}"},
            {"role": "system", "content": "guardrail"}],
            "tools": [{"name": "search", "description": "d", "parameters": {"type": "object"}}]})
    }

    #[test]
    fn openai_requests_carry_tool_calls_as_functions_with_string_arguments() {
        let (messages, tools) = openai_request(&turn());
        assert_eq!(
            messages[2]["tool_calls"][0]["function"]["arguments"],
            "{\"q\":\"x\"}"
        );
        assert_eq!(messages[3]["role"], "tool");
        assert_eq!(messages[3]["tool_call_id"], "c1");
        assert_eq!(tools.unwrap()[0]["function"]["name"], "search");
        let answer = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"y\"}"}}]}}]});
        assert_eq!(
            openai_answer(&answer).unwrap(),
            json!({"text": null, "toolCalls": [{"id": "c9", "name": "search", "arguments": {"q": "y"}}]})
        );
    }

    #[test]
    fn streamed_answers_assemble_text_and_tool_calls_in_both_formats() {
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
            .filter_map(|d| s.openai(d))
            .collect();
        assert_eq!(texts, ["Hel", "lo"]);
        assert_eq!(buffer, "data: {\"partial", "an unfinished line waits");
        assert_eq!(s.usage, Some((3, 2)));
        assert_eq!(
            s.answer(),
            json!({"text": "Hello", "toolCalls": [{"id": "c1", "name": "search", "arguments": {"q": "x"}}]})
        );
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
        let texts: Vec<String> = events.iter().filter_map(|e| a.anthropic(e)).collect();
        assert_eq!(texts, ["Hi"]);
        assert_eq!(a.usage, Some((7, 4)));
        assert_eq!(
            a.answer(),
            json!({"text": "Hi", "toolCalls": [{"id": "t1", "name": "clock", "arguments": {"zone": "UTC"}}]})
        );
    }

    #[test]
    fn anthropic_requests_join_system_and_group_tool_results() {
        let (system, messages, tools) = anthropic_request(&turn());
        assert_eq!(system.as_deref(), Some("core\n\nguardrail"));
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert_eq!(messages[1]["content"][1]["type"], "tool_use");
        assert_eq!(messages[2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(messages[2]["content"][1]["tool_use_id"], "c2");
        assert_eq!(tools.unwrap()[0]["input_schema"], json!({"type": "object"}));
        let answer = json!({"content": [{"type": "text", "text": "let me look"},
            {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "z"}}]});
        assert_eq!(
            anthropic_answer(&answer).unwrap(),
            json!({"text": "let me look", "toolCalls": [{"id": "t1", "name": "search", "arguments": {"q": "z"}}]})
        );
    }
}
