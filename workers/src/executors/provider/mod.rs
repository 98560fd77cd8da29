//! Model providers: one [`Provider`] per wire format (OpenAI chat completions, Anthropic
//! Messages). `llm_call` speaks through it for plain steps and for the agent loop's model turns
//! alike: both hand it one provider-neutral [`Call`] — `{messages, tools}` with roles `system`,
//! `user`, `assistant` (with `toolCalls`) and `tool` (with `toolCallId`) — and read back the
//! answer's text, an agent turn's `{text, toolCalls: [{id, name, arguments}]}`, token usage and
//! the model that answered. A new wire format is one file implementing the trait and one arm
//! in [`for_api`].

mod anthropic;
mod openai;
mod stream;

use aiden_domain::tool::LlmApi;
use serde_json::Value;

use crate::tool::TokenUsage;

pub use stream::{sse_payloads, Streamed};

/// One model exchange, provider-neutral.
pub struct Call<'a> {
    pub model: &'a str,
    /// `{messages, tools}` (tools may be absent).
    pub conversation: Value,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    /// Ask for a JSON object where the wire can say so.
    pub json_mode: bool,
    /// Ask for server-sent events.
    pub stream: bool,
}

/// A wire format: how a [`Call`] becomes an HTTP request, and how an answer reads back.
pub trait Provider: Sync {
    /// The provider name telemetry reports.
    fn name(&self) -> &'static str;

    /// The request of one exchange against `endpoint` (the Service's base URL, no trailing
    /// slash), authenticated with `secret`. `Err` says why the request cannot be made.
    fn request(
        &self,
        http: &reqwest::Client,
        endpoint: &str,
        secret: Option<&str>,
        call: &Call<'_>,
    ) -> Result<reqwest::RequestBuilder, &'static str>;

    /// The text of a whole (not streamed) answer, if it has a message.
    fn text(&self, answer: &Value) -> Option<String>;

    /// An agent turn's `{text, toolCalls}` from a whole answer; `None` when it has neither.
    fn turn(&self, answer: &Value) -> Option<Value>;

    /// The token usage a whole answer reports.
    fn usage(&self, answer: &Value) -> Option<TokenUsage>;

    /// One `data:` payload of a streamed answer into `into`; the text it adds, if any.
    fn stream_event(&self, into: &mut Streamed, data: &Value) -> Option<String>;
}

/// The provider of a Tool's `api`.
pub fn for_api(api: &LlmApi) -> &'static dyn Provider {
    match api {
        LlmApi::Openai => &openai::OpenAi,
        LlmApi::Anthropic => &anthropic::Anthropic,
    }
}

/// The tools of a neutral conversation, each mapped to the wire's shape; `None` when empty.
fn tools(conversation: &Value, shape: impl Fn(&Value) -> Value) -> Option<Vec<Value>> {
    let tools: Vec<Value> = conversation["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(shape)
        .collect();
    (!tools.is_empty()).then_some(tools)
}

#[cfg(test)]
pub(crate) fn sample_turn() -> Value {
    serde_json::json!({"messages": [
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
