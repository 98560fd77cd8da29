//! The call itself: resolve the Tool (PROC-8/TOOL-3/SEC-6 re-checked), render and validate the
//! input, call within the timeout, validate the output (EXEC-3), classify a failure.

use std::time::Duration;

use aiden_domain::execution::{audit_hash::input_hash, interpolate::render_tree};
use aiden_domain::tool::{Access, Operation};
use aiden_jobs::{ErrorInfo, Job};
use serde_json::Value;
use tracing::Instrument;

use super::Shared;
use crate::resolve::NotRunnable;
use crate::tool::{FailureClass, Invocation, ToolFailure};

type Telemetry = crate::tool::Telemetry;
type Executed = Result<(Value, Telemetry), (ErrorInfo, Telemetry)>;

pub(super) async fn execute(
    shared: &Shared,
    job: &Job,
    deltas: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    ran_tool: &std::sync::Mutex<Option<String>>,
) -> (Executed, Option<String>) {
    if chrono::Utc::now().timestamp_millis() > job.deadline_ms {
        let e = ErrorInfo::new("TIMEOUT", "the job's deadline passed before it could start");
        return (Err((e, Telemetry::default())), None);
    }
    let resolved = match shared.resolver.resolve(&job.tool_id, &job.owner_id).await {
        Ok(r) => r,
        Err(NotRunnable::Rule { invariant, message }) => {
            return (
                Err((ErrorInfo::new(invariant, message), Telemetry::default())),
                None,
            )
        }
        Err(NotRunnable::Graph(e)) => {
            let mut err = ErrorInfo::new("CONNECTION_ERROR", format!("graph: {e}"));
            err.retryable = true;
            return (Err((err, Telemetry::default())), None);
        }
    };
    let vars = Value::Object(job.variables.clone());
    // An agent call's input is used as is: model-written text is never a template.
    let rendered = match &job.literal_input {
        Some(literal) => Ok(literal.clone()),
        None => render_tree(&Value::Object(job.inputs.clone()), &vars),
    };
    let input = match rendered {
        Ok(v) => v,
        Err(e) => {
            let err = ErrorInfo::new("INTERPOLATION_ERROR", e.to_string());
            return (Err((err, Telemetry::default())), None);
        }
    };
    let hash = Some(input_hash(&input));
    // A model turn's input is the engine's `{messages, tools}`, not the model Tool's input.
    let problem = if job.agent_turn {
        None
    } else {
        resolved.input_validator.iter_errors(&input).next()
    };
    if let Some(problem) = problem {
        let err = ErrorInfo::new(
            "INPUT_INVALID",
            format!("input{}: {problem}", problem.instance_path),
        );
        return (Err((err, Telemetry::default())), hash);
    }
    let tool = &resolved.tool;
    // Which Tool runs, when the caller's own takes the named one's place (docs/connections.md).
    if tool.id.as_str() != job.tool_id {
        *ran_tool.lock().unwrap_or_else(|e| e.into_inner()) = Some(tool.id.to_string());
    }
    let timeout = Duration::from_millis(job.timeout_ms.max(1));
    let inv = Invocation {
        tool_id: &job.tool_id,
        owner_id: &job.owner_id,
        idempotency_key: Some(&job.step_run_id),
        operation: &tool.structure.operation,
        connection: &tool.connection_params,
        service_endpoint: resolved.service.endpoint.as_deref(),
        protocol: resolved.service.structure.protocol,
        secret: resolved.secret.as_ref(),
        secret_scope: tool.secret_scope.as_deref(),
        input: &input,
        timeout,
        agent_turn: job.agent_turn,
        deltas: deltas.as_ref(),
    };
    let span = if aiden_jobs::trace::enabled() {
        tracing::info_span!(
            "tool.call",
            tool.id = %job.tool_id,
            operation.type = %shared.ty,
            attempt = job.attempt,
        )
    } else {
        tracing::Span::none()
    };
    let called = tokio::time::timeout(
        timeout + Duration::from_millis(250),
        shared.executor.call(&inv).instrument(span),
    )
    .await
    .unwrap_or_else(|_| {
        Err(ToolFailure::new(
            FailureClass::Timeout,
            format!("no answer within {} ms", timeout.as_millis()),
        ))
    });
    let result = match called {
        Ok(out) => {
            let problem = resolved
                .output_validator
                .iter_errors(&out.value)
                .next()
                .filter(|_| !job.agent_turn)
                .map(|p| format!("output{}: {p}", p.instance_path));
            match problem {
                None => Ok((out.value, out.telemetry)),
                Some(p) => Err((ErrorInfo::new("OUTPUT_INVALID", p), out.telemetry)),
            }
        }
        Err(f) => {
            let write = matches!(
                tool.structure.operation,
                Operation::GraphQuery {
                    access: Access::Write,
                    ..
                }
            );
            // A write that timed out may have committed: never retried, or it could apply twice.
            let retryable = f.class.retryable() && !(write && f.class == FailureClass::Timeout);
            let mut err = ErrorInfo::new(class_code(f.class), f.message);
            err.retryable = retryable;
            Err((err, f.telemetry))
        }
    };
    (result, hash)
}

fn class_code(class: FailureClass) -> &'static str {
    match class {
        FailureClass::Timeout => "TIMEOUT",
        FailureClass::ConnectionError => "CONNECTION_ERROR",
        FailureClass::RateLimited => "RATE_LIMITED",
        FailureClass::UpstreamError => "UPSTREAM_ERROR",
        FailureClass::AuthError => "AUTH_ERROR",
        FailureClass::InvalidRequest => "INVALID_REQUEST",
        FailureClass::ToolError => "TOOL_ERROR",
    }
}
