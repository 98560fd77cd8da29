//! `mcp_call` executor with the official Rust MCP SDK (`rmcp`): stdio (a child process from
//! `connectionParams.command`/`args`/`env`, else the Service endpoint split on whitespace) or
//! streamable HTTP (`sse` endpoints are served by the same client: rmcp dropped the legacy
//! SSE transport). The Secret goes out per `secretScope` on HTTP (`bearer` by default).
//! Sessions are cached per server (and credential) and dropped on a transport error or once
//! closed, so the next call reconnects. Output: `{"content": [...], "structuredContent": …}`;
//! a result with `isError` fails the step with `TOOL_ERROR`.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::Arc;

use aiden_domain::execution::interpolate::render_tree;
use aiden_domain::service::Protocol;
use aiden_domain::tool::Operation;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{CallToolRequestParams, ErrorCode};
use rmcp::service::{ClientInitializeError, RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::{
    HttpStatusError, StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use crate::tool::{FailureClass, Invocation, Telemetry, Tool, ToolFailure, ToolOutput};

type Session = Arc<RunningService<RoleClient, ()>>;

/// Longest tool error text carried into a failure message.
const ERROR_TEXT_LIMIT: usize = 300;
/// Longest failure message (transport errors may quote a response body).
const MESSAGE_LIMIT: usize = 500;

#[derive(Default)]
pub struct McpCall {
    sessions: Mutex<HashMap<String, Session>>,
}

/// Where and how to reach one MCP server.
enum Target {
    Stdio {
        program: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        url: String,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    },
}

impl Target {
    fn from_invocation(inv: &Invocation<'_>) -> Result<Self, ToolFailure> {
        if inv.protocol == Protocol::Stdio {
            let (program, args) = stdio_command(inv)?;
            let env = inv
                .connection
                .get("env")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| {
                            let v = match v {
                                Value::String(s) => s.clone(),
                                Value::Null => return None,
                                other => other.to_string(),
                            };
                            Some((k.clone(), v))
                        })
                        .collect()
                })
                .unwrap_or_default();
            return Ok(Self::Stdio { program, args, env });
        }
        let mut url = inv
            .endpoint()
            .ok_or_else(|| invalid("no MCP endpoint configured"))?
            .to_owned();
        let mut bearer = None;
        let mut headers = HashMap::new();
        if let Some(secret) = inv.secret {
            match inv.secret_scope.unwrap_or("bearer") {
                "bearer" => bearer = Some(secret.as_str().to_owned()),
                scope => {
                    if let Some(name) = scope.strip_prefix("header:") {
                        let name = HeaderName::from_bytes(name.as_bytes())
                            .map_err(|_| invalid(format!("invalid secretScope `{scope}`")))?;
                        let mut value = HeaderValue::from_str(secret)
                            .map_err(|_| invalid("the Secret is not a valid header value"))?;
                        value.set_sensitive(true);
                        headers.insert(name, value);
                    } else if let Some(param) = scope.strip_prefix("query:") {
                        let mut parsed = reqwest::Url::parse(&url)
                            .map_err(|e| invalid(format!("invalid MCP endpoint: {e}")))?;
                        parsed.query_pairs_mut().append_pair(param, secret);
                        url = parsed.into();
                    } else {
                        return Err(invalid(format!("unknown secretScope `{scope}`")));
                    }
                }
            }
        }
        Ok(Self::Http {
            url,
            bearer,
            headers,
        })
    }

    /// The cache key: the command line and environment, or the URL plus a digest of the
    /// credential (two Tools with different Secrets never share a session).
    fn key(&self) -> String {
        match self {
            Self::Stdio { program, args, env } => {
                format!("stdio\0{program}\0{args:?}\0{env:?}")
            }
            Self::Http {
                url,
                bearer,
                headers,
            } => {
                let mut digest = Sha256::new();
                digest.update(url.as_bytes());
                if let Some(b) = bearer {
                    digest.update(b"\0bearer\0");
                    digest.update(b.as_bytes());
                }
                let mut headers: Vec<_> = headers.iter().collect();
                headers.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
                for (name, value) in headers {
                    digest.update(b"\0header\0");
                    digest.update(name.as_str().as_bytes());
                    digest.update(b"\0");
                    digest.update(value.as_bytes());
                }
                let digest: String = digest
                    .finalize()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                format!("http\0{digest}")
            }
        }
    }

    async fn connect(self) -> Result<RunningService<RoleClient, ()>, ToolFailure> {
        match self {
            Self::Stdio { program, args, env } => {
                let command = tokio::process::Command::new(&program).configure(|c| {
                    c.args(&args).envs(env).kill_on_drop(true);
                });
                let transport = TokioChildProcess::new(command).map_err(|e| {
                    ToolFailure::new(
                        FailureClass::ConnectionError,
                        format!("could not start MCP server `{program}`: {e}"),
                    )
                })?;
                ().serve(transport).await.map_err(init_failure)
            }
            Self::Http {
                url,
                bearer,
                headers,
            } => {
                let mut config =
                    StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
                if let Some(token) = bearer {
                    config = config.auth_header(token);
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                ().serve(transport).await.map_err(init_failure)
            }
        }
    }
}

fn invalid(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new(FailureClass::InvalidRequest, message)
}

fn stdio_command(inv: &Invocation<'_>) -> Result<(String, Vec<String>), ToolFailure> {
    if let Some(cmd) = inv.connection.get("command").and_then(Value::as_str) {
        let args = inv
            .connection
            .get("args")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        return Ok((cmd.to_owned(), args));
    }
    let mut words = inv
        .endpoint()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned);
    let program = words
        .next()
        .ok_or_else(|| invalid("no MCP command configured"))?;
    Ok((program, words.collect()))
}

fn is_alive(session: &Session) -> bool {
    !session.is_closed() && !session.peer().is_transport_closed()
}

impl McpCall {
    pub fn new() -> Self {
        Self::default()
    }

    /// The cached session for `key`, else a new one (connected outside the lock, so one slow
    /// server does not hold up calls to the others).
    async fn session(&self, key: &str, target: Target) -> Result<Session, ToolFailure> {
        {
            let mut sessions = self.sessions.lock().await;
            match sessions.get(key) {
                Some(s) if is_alive(s) => return Ok(s.clone()),
                Some(_) => {
                    sessions.remove(key);
                }
                None => {}
            }
        }
        let fresh = Arc::new(target.connect().await?);
        let mut sessions = self.sessions.lock().await;
        // A concurrent call may have connected first: keep one session per server.
        let session = match sessions.get(key) {
            Some(existing) if is_alive(existing) => existing.clone(),
            _ => {
                sessions.insert(key.to_owned(), fresh.clone());
                fresh
            }
        };
        Ok(session)
    }

    /// Forgets `session` if it is still the cached one for `key`.
    async fn evict(&self, key: &str, session: &Session) {
        let mut sessions = self.sessions.lock().await;
        if sessions.get(key).is_some_and(|s| Arc::ptr_eq(s, session)) {
            sessions.remove(key);
        }
    }

    async fn call_once(
        &self,
        inv: &Invocation<'_>,
        tool_name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolFailure> {
        let target = Target::from_invocation(inv)?;
        let key = target.key();
        let session = self.session(&key, target).await?;
        let mut params = CallToolRequestParams::new(tool_name.to_owned()).with_arguments(args);
        // The step run's idempotency key, the same on every re-delivery and retry, where MCP
        // allows request metadata (`_meta`): a server that honours it sees each step once.
        if let Some(key) = inv.idempotency_key {
            let mut meta = serde_json::Map::new();
            meta.insert(IDEMPOTENCY_META.into(), Value::String(key.to_owned()));
            params.meta = Some(meta.into());
        }
        let result = match session.call_tool(params).await {
            Ok(r) => r,
            Err(e) => {
                let failure = call_failure(e);
                if failure.class == FailureClass::ConnectionError || !is_alive(&session) {
                    self.evict(&key, &session).await;
                }
                return Err(failure);
            }
        };
        let content = serde_json::to_value(&result.content).unwrap_or_else(|_| json!([]));
        if result.is_error == Some(true) {
            return Err(ToolFailure::new(
                FailureClass::ToolError,
                format!(
                    "MCP tool `{tool_name}` failed: {}",
                    error_text(&content, ERROR_TEXT_LIMIT)
                ),
            ));
        }
        Ok(ToolOutput {
            value: json!({
                "content": content,
                "structuredContent": result.structured_content.unwrap_or(Value::Null),
            }),
            telemetry: telemetry(),
        })
    }
}

/// The `_meta` key of a call's idempotency key (the header `rest_api` sends is
/// `Idempotency-Key`, the IETF draft's).
pub const IDEMPOTENCY_META: &str = "io.aiden/idempotencyKey";

fn telemetry() -> Telemetry {
    Telemetry {
        provider: Some("mcp".into()),
        ..Telemetry::default()
    }
}

/// The text blocks of an error result (else the content as JSON), cut to `limit` characters.
fn error_text(content: &Value, limit: usize) -> String {
    let texts: Vec<&str> = content
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let text = if texts.is_empty() {
        content.to_string()
    } else {
        texts.join(" ")
    };
    text.chars().take(limit).collect()
}

fn status_class(status: u16) -> FailureClass {
    match status {
        401 | 403 => FailureClass::AuthError,
        429 => FailureClass::RateLimited,
        500..=599 => FailureClass::UpstreamError,
        400..=499 => FailureClass::InvalidRequest,
        _ => FailureClass::ConnectionError,
    }
}

/// Classifies a transport error by what it carries: HTTP auth refusals, 429, 5xx, other 4xx;
/// anything else (refused connection, broken pipe, closed stream) is a connection error.
fn transport_class(error: &(dyn StdError + 'static)) -> FailureClass {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(http) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            match http {
                StreamableHttpError::AuthRequired(_)
                | StreamableHttpError::InsufficientScope(_) => return FailureClass::AuthError,
                StreamableHttpError::HttpStatus(s) => return status_class(s.status),
                StreamableHttpError::ReservedHeaderConflict(_) => {
                    return FailureClass::InvalidRequest
                }
                // rmcp reports other non-2xx answers (a 401/403 without a challenge, a 404,
                // a 400) as `HTTP <status>: <body>`.
                StreamableHttpError::UnexpectedServerResponse(text) => {
                    if let Some(status) = text
                        .strip_prefix("HTTP ")
                        .and_then(|rest| rest.get(..3))
                        .and_then(|code| code.parse::<u16>().ok())
                    {
                        return status_class(status);
                    }
                }
                _ => {}
            }
        }
        if let Some(s) = e.downcast_ref::<HttpStatusError>() {
            return status_class(s.status);
        }
        if let Some(status) = e
            .downcast_ref::<reqwest::Error>()
            .and_then(reqwest::Error::status)
        {
            return status_class(status.as_u16());
        }
        current = e.source();
    }
    FailureClass::ConnectionError
}

/// A JSON-RPC error answer: an internal server error may pass, anything else (unknown tool,
/// invalid params) will not.
fn rpc_class(code: ErrorCode) -> FailureClass {
    if code == ErrorCode::INTERNAL_ERROR {
        FailureClass::UpstreamError
    } else {
        FailureClass::InvalidRequest
    }
}

fn init_failure(e: ClientInitializeError) -> ToolFailure {
    match &e {
        // The inner error, without the transport's (long) type name.
        ClientInitializeError::TransportError { error, context } => ToolFailure::new(
            transport_class(error.error.as_ref()),
            format!("MCP connect ({context}): {}", error.error),
        ),
        ClientInitializeError::JsonRpcError(data) => ToolFailure::new(
            rpc_class(data.code),
            format!("MCP initialize refused: {} {}", data.code.0, data.message),
        ),
        _ => ToolFailure::new(FailureClass::ConnectionError, format!("MCP connect: {e}")),
    }
}

fn call_failure(e: ServiceError) -> ToolFailure {
    match e {
        ServiceError::McpError(data) => ToolFailure::new(
            rpc_class(data.code),
            format!("MCP error {}: {}", data.code.0, data.message),
        ),
        ServiceError::Timeout { .. } => {
            ToolFailure::new(FailureClass::Timeout, "MCP request timed out")
        }
        ServiceError::TransportSend(error) => ToolFailure::new(
            transport_class(error.error.as_ref()),
            format!("MCP transport: {}", error.error),
        ),
        other => ToolFailure::new(
            FailureClass::ConnectionError,
            format!("MCP transport: {other}"),
        ),
    }
}

#[async_trait::async_trait]
impl Tool for McpCall {
    async fn call(&self, inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        let Operation::McpCall {
            tool_name,
            arguments,
        } = inv.operation
        else {
            return Err(invalid("not an mcp_call operation"));
        };
        let mut args = render_tree(arguments, inv.input).map_err(|e| invalid(e.to_string()))?;
        if args.as_object().is_some_and(Map::is_empty) && inv.input.is_object() {
            args = inv.input.clone();
        }
        let Value::Object(args) = args else {
            return Err(invalid("MCP arguments must be an object"));
        };
        // One deadline for connecting and calling.
        let outcome = tokio::time::timeout(inv.timeout, self.call_once(inv, tool_name, args))
            .await
            .unwrap_or_else(|_| {
                Err(ToolFailure::new(
                    FailureClass::Timeout,
                    format!("no MCP answer within {} ms", inv.timeout.as_millis()),
                ))
            });
        outcome.map_err(|mut failure| {
            // Transport errors may quote the URL, which carries a `query:` Secret.
            if let Some(secret) = inv.secret.filter(|s| !s.is_empty()) {
                failure.message = failure.message.replace(secret.as_str(), "***");
            }
            // Remote error bodies can be long.
            if failure.message.chars().count() > MESSAGE_LIMIT {
                failure.message = failure.message.chars().take(MESSAGE_LIMIT).collect();
            }
            failure.telemetry = telemetry();
            failure
        })
    }
}
