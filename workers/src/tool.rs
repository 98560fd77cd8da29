//! The one interface every executor implements: a resolved Tool plus its interpolation-ready
//! input in, a JSON output (and telemetry) or a classified failure out.

use std::time::Duration;

use aiden_domain::service::Protocol;
use aiden_domain::tool::Operation;
use serde::Serialize;
use serde_json::Value;
use zeroize::Zeroizing;

/// Everything one call needs; built by the pool from the graph (Tool, Service, Secret).
pub struct Invocation<'a> {
    pub tool_id: &'a str,
    /// The run's owner: whose rights a `recall` search has (SRCH-2).
    pub owner_id: &'a str,
    /// The step run's idempotency key (its id: the same for every re-delivery and retry),
    /// sent by `rest_api` in the Tool's `idempotencyHeader`.
    pub idempotency_key: Option<&'a str>,
    pub operation: &'a Operation,
    /// The Tool's `connectionParams` (validated against the Service's `connectionSchema`).
    pub connection: &'a Value,
    /// The Service's own `endpoint`, used when `connection.endpoint` is absent.
    pub service_endpoint: Option<&'a str>,
    pub protocol: Protocol,
    /// The decrypted Secret value. Never log, format into an error, or return it.
    pub secret: Option<&'a Zeroizing<String>>,
    /// How the Secret is applied (`secretScope`): `bearer` (default), `header:<Name>`,
    /// `query:<param>`; executors that take a password (graph_query) ignore it.
    pub secret_scope: Option<&'a str>,
    /// The step's rendered input, validated against the Tool's `inputSchema`.
    pub input: &'a Value,
    /// Per-call deadline (step `execution.timeout`, else the Tool's default).
    pub timeout: Duration,
    /// A model turn of an agent loop: `input` is `{messages, tools}`, and an
    /// `llm_call` answers `{text, toolCalls}`.
    pub agent_turn: bool,
    /// Where a streaming executor sends text as it arrives (`step.delta`), when wanted.
    pub deltas: Option<&'a tokio::sync::mpsc::UnboundedSender<String>>,
}

impl Invocation<'_> {
    /// `connection.endpoint`, else the Service's endpoint.
    pub fn endpoint(&self) -> Option<&str> {
        self.connection
            .get("endpoint")
            .and_then(Value::as_str)
            .or(self.service_endpoint)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

/// The per-call telemetry the executor knows (the pool adds latency and retries).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Telemetry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<TokenUsage>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub value: Value,
    pub telemetry: Telemetry,
}

/// EXEC-4 failure classes. Only the first four are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FailureClass {
    /// The call exceeded its deadline.
    Timeout,
    /// Could not connect, or the connection broke before an answer.
    ConnectionError,
    /// HTTP 429 or a provider's rate-limit error.
    RateLimited,
    /// HTTP 5xx from the remote side.
    UpstreamError,
    /// The remote side refused our credentials (401/403, Bolt auth failure).
    AuthError,
    /// The remote side rejected the request (other 4xx, Cypher syntax error, unknown MCP tool).
    InvalidRequest,
    /// The remote side answered with something we cannot use (non-JSON where JSON was asked,
    /// an MCP tool result with `isError`).
    ToolError,
}

impl FailureClass {
    pub fn retryable(self) -> bool {
        matches!(
            self,
            Self::Timeout | Self::ConnectionError | Self::RateLimited | Self::UpstreamError
        )
    }
}

/// A failed call. `message` must never contain the Secret (executors build it from status
/// codes and remote error texts, never from request headers or URLs carrying credentials).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{class:?}: {message}")]
pub struct ToolFailure {
    pub class: FailureClass,
    pub message: String,
    /// Telemetry gathered before the failure (provider, model), when known.
    pub telemetry: Telemetry,
}

impl ToolFailure {
    pub fn new(class: FailureClass, message: impl Into<String>) -> Self {
        Self {
            class,
            message: message.into(),
            telemetry: Telemetry::default(),
        }
    }
}

#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// Runs one call. Implementations enforce `inv.timeout` themselves where the transport
    /// allows (the pool also wraps the call in the same deadline as a backstop).
    async fn call(&self, inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure>;
}
