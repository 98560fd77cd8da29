//! The wire format of an agent's model turn (issue #11): the loop's provider-neutral
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
