//! `mcp_call` executor with the official Rust MCP SDK (`rmcp`): stdio (a child process from
//! `connectionParams.command`/`args`, else the Service endpoint split on whitespace) or
//! streamable HTTP (`sse` endpoints are served by the same client: rmcp dropped the legacy
//! SSE transport). Sessions are cached per server and dropped on a transport error. Output:
//! `{"content": [...], "structuredContent": …}`; a result with `isError` fails the step.

use std::collections::HashMap;
use std::sync::Arc;

use aiden_domain::execution::interpolate::render_tree;
use aiden_domain::service::Protocol;
use aiden_domain::tool::Operation;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::tool::{FailureClass, Invocation, Telemetry, Tool, ToolFailure, ToolOutput};

type Session = Arc<RunningService<RoleClient, ()>>;

#[derive(Default)]
pub struct McpCall {
    sessions: Mutex<HashMap<String, Session>>,
}

impl McpCall {
    pub fn new() -> Self {
        Self::default()
    }

    async fn session(&self, key: &str, inv: &Invocation<'_>) -> Result<Session, ToolFailure> {
        if let Some(s) = self.sessions.lock().await.get(key) {
            return Ok(s.clone());
        }
        let connect_error = |e: String| {
            ToolFailure::new(FailureClass::ConnectionError, format!("MCP connect: {e}"))
        };
        let session = match inv.protocol {
            Protocol::Stdio => {
                let (program, args) = stdio_command(inv)?;
                let env: Vec<(String, String)> = inv
                    .connection
                    .get("env")
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                            .collect()
                    })
                    .unwrap_or_default();
                let command = tokio::process::Command::new(program).configure(|c| {
                    c.args(&args).envs(env).kill_on_drop(true);
                });
                let transport =
                    TokioChildProcess::new(command).map_err(|e| connect_error(e.to_string()))?;
                ().serve(transport)
                    .await
                    .map_err(|e| connect_error(e.to_string()))?
            }
            _ => {
                let url = inv.endpoint().ok_or_else(|| {
                    ToolFailure::new(FailureClass::InvalidRequest, "no endpoint configured")
                })?;
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
                if let Some(secret) = inv.secret {
                    config = config.auth_header(secret.as_str());
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                ().serve(transport)
                    .await
                    .map_err(|e| connect_error(e.to_string()))?
            }
        };
        let session = Arc::new(session);
        self.sessions
            .lock()
            .await
            .insert(key.to_owned(), session.clone());
        Ok(session)
    }
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
        .ok_or_else(|| ToolFailure::new(FailureClass::InvalidRequest, "no command configured"))?;
    Ok((program, words.collect()))
}

fn session_key(inv: &Invocation<'_>) -> String {
    match inv.protocol {
        Protocol::Stdio => format!("stdio:{}", inv.connection),
        _ => format!("http:{}", inv.endpoint().unwrap_or_default()),
    }
}

fn classify(e: ServiceError) -> ToolFailure {
    match e {
        ServiceError::McpError(data) => ToolFailure::new(
            FailureClass::InvalidRequest,
            format!("MCP error {}: {}", data.code.0, data.message),
        ),
        ServiceError::Timeout { .. } => {
            ToolFailure::new(FailureClass::Timeout, "MCP request timed out")
        }
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
            return Err(ToolFailure::new(
                FailureClass::InvalidRequest,
                "not an mcp_call operation",
            ));
        };
        let mut args = render_tree(arguments, inv.input)
            .map_err(|e| ToolFailure::new(FailureClass::InvalidRequest, e.to_string()))?;
        if args.as_object().is_some_and(|m| m.is_empty()) && inv.input.is_object() {
            args = inv.input.clone();
        }
        let Value::Object(args) = args else {
            return Err(ToolFailure::new(
                FailureClass::InvalidRequest,
                "MCP arguments must be an object",
            ));
        };
        let key = session_key(inv);
        let session = self.session(&key, inv).await?;
        let params = CallToolRequestParams::new(tool_name.clone()).with_arguments(args);
        let called = tokio::time::timeout(inv.timeout, session.call_tool(params)).await;
        let result = match called {
            Err(_) => {
                return Err(ToolFailure::new(
                    FailureClass::Timeout,
                    format!("no MCP answer within {} ms", inv.timeout.as_millis()),
                ))
            }
            Ok(Err(e)) => {
                let failure = classify(e);
                if failure.class == FailureClass::ConnectionError {
                    self.sessions.lock().await.remove(&key);
                }
                return Err(failure);
            }
            Ok(Ok(r)) => r,
        };
        let content = serde_json::to_value(&result.content).unwrap_or(json!([]));
        if result.is_error == Some(true) {
            let text: String = content
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(" ");
            return Err(ToolFailure::new(
                FailureClass::ToolError,
                format!(
                    "MCP tool error: {}",
                    text.chars().take(300).collect::<String>()
                ),
            ));
        }
        Ok(ToolOutput {
            value: json!({"content": content, "structuredContent": result.structured_content}),
            telemetry: Telemetry {
                provider: Some("mcp".into()),
                ..Telemetry::default()
            },
        })
    }
}
