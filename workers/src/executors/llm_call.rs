//! `llm_call` executor: one model exchange through the Tool's [`provider`] (OpenAI-compatible
//! chat completions or the Anthropic Messages API) over reqwest. A plain step's prompt is the
//! Tool's `promptTemplate` (and `systemPrompt`) rendered over the input; an agent turn's is the
//! loop's `{messages, tools}`. Model, temperature and max tokens come from `connectionParams`.
//! Output: `{"text": …}`, the parsed JSON with `responseFormat: json`, or an agent turn's
//! `{text, toolCalls}`. Telemetry: provider, model, token usage.

use aiden_domain::execution::interpolate::render_string;
use aiden_domain::tool::{Operation, ResponseFormat};
use serde_json::{json, Value};

use super::http_status::{
    class_of_status, redact, same_origin_redirects, status_failure, transport_failure,
};
use super::provider::{self, sse_payloads, Provider, Streamed};
use crate::tool::{FailureClass, Invocation, Telemetry, TokenUsage, Tool, ToolFailure, ToolOutput};

pub struct LlmCall {
    http: reqwest::Client,
}

impl Default for LlmCall {
    fn default() -> Self {
        Self::new()
    }
}

impl LlmCall {
    pub fn new() -> Self {
        Self {
            http: reqwest::Client::builder()
                .tcp_nodelay(true)
                .redirect(same_origin_redirects())
                .build()
                .unwrap_or_default(),
        }
    }
}

fn fail(class: FailureClass, message: impl Into<String>, telemetry: &Telemetry) -> ToolFailure {
    let mut f = ToolFailure::new(class, message);
    f.telemetry = telemetry.clone();
    f
}

#[async_trait::async_trait]
impl Tool for LlmCall {
    async fn call(&self, inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        let secret = inv.secret.map(|s| s.as_str());
        self.exchange(inv)
            .await
            .map_err(|failure| redact(failure, secret))
    }
}

impl LlmCall {
    async fn exchange(&self, inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        let Operation::LlmCall {
            api,
            system_prompt,
            prompt_template,
            response_format,
        } = inv.operation
        else {
            return Err(ToolFailure::new(
                FailureClass::InvalidRequest,
                "not an llm_call operation",
            ));
        };
        let provider = provider::for_api(api);
        let model = inv.connection.get("model").and_then(Value::as_str);
        let mut telemetry = Telemetry {
            provider: Some(provider.name().into()),
            model: model.map(str::to_owned),
            token_usage: None,
        };
        let invalid = |message: &str, telemetry: &Telemetry| {
            fail(FailureClass::InvalidRequest, message, telemetry)
        };
        let model =
            model.ok_or_else(|| invalid("connectionParams.model is required", &telemetry))?;
        let endpoint = inv
            .endpoint()
            .ok_or_else(|| invalid("no endpoint configured", &telemetry))?
            .trim_end_matches('/');
        let json_mode = *response_format == ResponseFormat::Json;
        // An agent turn's conversation is the loop's own; a plain step's is its rendered prompt.
        let conversation = if inv.agent_turn {
            inv.input.clone()
        } else {
            let render = |t: &str| {
                render_string(t, inv.input).map_err(|e| invalid(&e.to_string(), &telemetry))
            };
            let mut messages = Vec::new();
            if let Some(system) = system_prompt.as_deref().map(render).transpose()? {
                messages.push(json!({"role": "system", "content": system}));
            }
            messages.push(json!({"role": "user", "content": render(prompt_template)?}));
            json!({"messages": messages})
        };
        let call = provider::Call {
            model,
            conversation,
            temperature: inv.connection.get("temperature").and_then(Value::as_f64),
            max_tokens: inv.connection.get("maxTokens").and_then(Value::as_u64),
            json_mode,
            // Model answers stream (`step.delta`) unless the Tool says its server cannot; a
            // plain step in JSON mode does not (its answer is data, read whole).
            stream: inv.deltas.is_some()
                && (inv.agent_turn || !json_mode)
                && inv.connection.get("stream").and_then(Value::as_bool) != Some(false),
        };
        let secret = inv.secret.map(|s| s.as_str());
        let request = provider
            .request(&self.http, endpoint, secret, &call)
            .map_err(|m| invalid(m, &telemetry))?;
        let resp = request.timeout(inv.timeout).send().await.map_err(|e| {
            let mut f = transport_failure(e);
            f.telemetry = telemetry.clone();
            f
        })?;
        let status = resp.status().as_u16();
        // A server that ignores `stream` answers with one JSON body: read that instead.
        let streaming = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if call.stream && streaming && (200..300).contains(&status) {
            return read_stream(provider, resp, inv, telemetry).await;
        }
        let text = resp.text().await.map_err(|e| {
            let mut f = transport_failure(e);
            f.telemetry = telemetry.clone();
            f
        })?;
        if !(200..300).contains(&status) {
            let mut f = status_failure(status, &text);
            f.class = provider_error_class(status, &text);
            f.telemetry = telemetry;
            return Err(f);
        }
        let answer: Value = serde_json::from_str(&text).map_err(|_| {
            fail(
                FailureClass::ToolError,
                "provider answered with non-JSON",
                &telemetry,
            )
        })?;
        if let Some(m) = answer.get("model").and_then(Value::as_str) {
            telemetry.model = Some(m.to_owned());
        }
        telemetry.token_usage = provider.usage(&answer);
        if inv.agent_turn {
            let value = provider.turn(&answer).ok_or_else(|| {
                fail(
                    FailureClass::ToolError,
                    "provider answer has neither text nor tool calls",
                    &telemetry,
                )
            })?;
            return Ok(ToolOutput { value, telemetry });
        }
        let content = provider.text(&answer).ok_or_else(|| {
            fail(
                FailureClass::ToolError,
                "provider answer has no message content",
                &telemetry,
            )
        })?;
        let value = if json_mode {
            parse_json_answer(&content).ok_or_else(|| {
                fail(
                    FailureClass::ToolError,
                    "the model did not answer with JSON",
                    &telemetry,
                )
            })?
        } else {
            json!({"text": content})
        };
        Ok(ToolOutput { value, telemetry })
    }
}

/// A streamed answer: text goes to the deltas sink as it arrives; the output is what the
/// non-streamed answer gives (`{text, toolCalls}` for an agent turn, `{text}` otherwise).
async fn read_stream(
    provider: &dyn Provider,
    resp: reqwest::Response,
    inv: &Invocation<'_>,
    mut telemetry: Telemetry,
) -> Result<ToolOutput, ToolFailure> {
    use futures::StreamExt;
    let mut body = resp.bytes_stream();
    let mut buffer = String::new();
    let mut answer = Streamed::default();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| {
            let mut f = transport_failure(e);
            f.telemetry = telemetry.clone();
            f
        })?;
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        for data in sse_payloads(&mut buffer) {
            let text = provider.stream_event(&mut answer, &data);
            if let (Some(text), Some(sink)) = (text, inv.deltas) {
                let _ = sink.send(text);
            }
        }
    }
    if let Some(m) = answer.model.clone() {
        telemetry.model = Some(m);
    }
    telemetry.token_usage = answer.usage.map(|(i, o)| TokenUsage {
        prompt_tokens: i,
        completion_tokens: o,
        total_tokens: i + o,
    });
    let mut value = answer.answer();
    if !inv.agent_turn {
        if value["text"].is_null() {
            return Err(fail(
                FailureClass::ToolError,
                "provider answer has no message content",
                &telemetry,
            ));
        }
        value = json!({"text": value["text"]});
    }
    Ok(ToolOutput { value, telemetry })
}

/// The class of a provider's error answer: by status (429 rate limited, 5xx and Anthropic's
/// 529 `overloaded_error` upstream, 401/403 auth), refined by the error `type` both APIs put
/// in the body when the status alone is ambiguous (a proxy answering 400 for a rate limit).
fn provider_error_class(status: u16, body: &str) -> FailureClass {
    let by_status = class_of_status(status);
    if by_status != FailureClass::InvalidRequest {
        return by_status;
    }
    let kind = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        v.pointer("/error/type")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    match kind.as_deref() {
        Some("overloaded_error" | "api_error") => FailureClass::UpstreamError,
        Some("rate_limit_error" | "rate_limit_exceeded") => FailureClass::RateLimited,
        Some("authentication_error" | "permission_error") => FailureClass::AuthError,
        _ => by_status,
    }
}

/// The JSON in a model's answer, tolerating a Markdown code fence around it.
fn parse_json_answer(content: &str) -> Option<Value> {
    let t = content.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .map(|r| r.trim_end().trim_end_matches("```"))
        .unwrap_or(t);
    serde_json::from_str(t.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::{parse_json_answer, provider_error_class};
    use crate::tool::FailureClass;
    use serde_json::json;

    #[test]
    fn provider_errors_classify_by_status_then_error_type() {
        assert_eq!(provider_error_class(529, ""), FailureClass::UpstreamError);
        assert_eq!(provider_error_class(429, ""), FailureClass::RateLimited);
        assert_eq!(provider_error_class(401, "{}"), FailureClass::AuthError);
        let body = |t: &str| json!({"type": "error", "error": {"type": t}}).to_string();
        assert_eq!(
            provider_error_class(400, &body("rate_limit_error")),
            FailureClass::RateLimited
        );
        assert_eq!(
            provider_error_class(400, &body("overloaded_error")),
            FailureClass::UpstreamError
        );
        assert_eq!(
            provider_error_class(400, &body("invalid_request_error")),
            FailureClass::InvalidRequest
        );
        assert_eq!(
            provider_error_class(404, "not json"),
            FailureClass::InvalidRequest
        );
    }

    #[test]
    fn json_answers_may_come_fenced() {
        assert_eq!(parse_json_answer("{\"a\":1}"), Some(json!({"a": 1})));
        assert_eq!(
            parse_json_answer("```json\n{\"a\":1}\n```"),
            Some(json!({"a": 1}))
        );
        assert_eq!(parse_json_answer("not json"), None);
    }
}
