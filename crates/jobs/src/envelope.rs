//! Message bodies. JSON, versioned by `v`; unknown versions are poison (dead-lettered).

use aiden_domain::execution::machine::AttemptOutcome;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const JOB_VERSION: u32 = 1;

/// One ProcessStep execution (EXEC-1), published to the queue of its operation type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub v: u32,
    pub run_id: String,
    pub step_id: String,
    /// The StepRun node's id (`<runId>/<stepId>`): the idempotency key of the step's result.
    pub step_run_id: String,
    pub operation_type: aiden_domain::OperationType,
    /// 1-based; a retry publishes the same job with `attempt + 1`.
    pub attempt: u32,
    pub max_attempts: u32,
    pub tool_id: String,
    /// The run owner's id: the actor in the audit record.
    pub owner_id: String,
    /// The step's input templates (Handlebars), rendered by the worker over `variables`.
    pub inputs: Map<String, Value>,
    /// The run variables the templates refer to.
    pub variables: Map<String, Value>,
    pub timeout_ms: u64,
    /// Epoch milliseconds after which the job must not start.
    pub deadline_ms: i64,
    /// Set when the engine re-publishes a job it may already have published (recovery), so
    /// the worker checks the graph before running it.
    #[serde(default)]
    pub redispatch: bool,
    /// W3C trace context of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// An agent call's input, used as is instead of rendering `inputs`: a tool's
    /// arguments as the model wrote them, or a model turn's `{messages, tools}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub literal_input: Option<Value>,
    /// A model turn of an agent loop: the llm_call executor sends the conversation and the
    /// tool definitions and answers `{text, toolCalls}`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub agent_turn: bool,
    /// When the pass that dispatched it wrote and committed (set just before publishing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hops: Option<Hops>,
}

/// Where a step's time went from the pass that dispatched it to its result, in microseconds
/// since the Unix epoch: the engine fills the pass's part, the worker its own, and the engine
/// keeps the whole on the StepRun (`hops`). The two clocks are one machine's on a single-host
/// stack; across hosts the hops that span them include the clocks' skew.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hops {
    /// The dispatching pass began its write statement(s)...
    pub statement_start_us: i64,
    /// ...which took this long...
    pub statement_us: i64,
    /// ...and its commit returned (durable) at this time; the publish follows.
    pub commit_end_us: i64,
    /// The worker took the delivery.
    #[serde(default)]
    pub delivered_us: i64,
    /// The worker published the result.
    #[serde(default)]
    pub result_us: i64,
}

/// Now, in microseconds since the Unix epoch (the unit of [`Hops`]).
pub fn epoch_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

impl Job {
    /// The idempotency key (also the AMQP message id): one per step and attempt.
    pub fn message_id(&self) -> String {
        format!("{}#{}", self.step_run_id, self.attempt)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorInfo {
    /// `TIMEOUT`, `CONNECTION_ERROR`, `RATE_LIMITED`, `UPSTREAM_ERROR`, `AUTH_ERROR`,
    /// `INVALID_REQUEST`, `TOOL_ERROR`, `INTERPOLATION_ERROR`, `INPUT_INVALID`,
    /// `OUTPUT_INVALID`, `MALFORMED_JOB`, `NOT_RUNNABLE`, `CANCELED`, ...
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub retryable: bool,
}

impl ErrorInfo {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_owned(),
            message: message.into(),
            retryable: false,
        }
    }
}

/// A piece of a model turn's answer as it streams (`step.delta`): published by the
/// worker to the deltas fanout, relayed by every `aiden serve` to the run's live SSE streams,
/// never stored (the durable log keeps the final text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepDelta {
    pub run_id: String,
    pub step_id: String,
    /// 0-based, per model turn, in the order the provider sent them.
    pub index: u64,
    pub text: String,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "outcome",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum StepOutcome {
    Completed {
        output: Value,
    },
    /// A retryable failure; the job was re-published to the delay queue.
    Retrying {
        error: ErrorInfo,
        next_attempt: u32,
        delay_ms: u64,
    },
    /// Permanent, or attempts exhausted; the job is in the dead-letter queue.
    Failed {
        error: ErrorInfo,
    },
}

impl StepOutcome {
    /// How the attempt ended, without its facts: the word of the `outcome` tag.
    pub fn kind(&self) -> AttemptOutcome {
        match self {
            Self::Completed { .. } => AttemptOutcome::Completed,
            Self::Retrying { .. } => AttemptOutcome::Retrying,
            Self::Failed { .. } => AttemptOutcome::Failed,
        }
    }
}

/// Everything the engine reacts to arrives on its one queue, in order of arrival.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum EngineMessage {
    RunStart {
        run_id: String,
        /// The run exactly as the starting transaction created it (`{run, steps}` as the
        /// graph's run row), so the engine need not read it back. Used only on a first
        /// delivery of a run the engine has not seen; otherwise the graph is read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        created: Option<Value>,
    },
    RunCancel {
        run_id: String,
    },
    /// AGT-9: the run's owner granted (until `expiresMs`) or denied a capability its agent
    /// loop waits for (`POST /v1/runs/{id}/approvals`).
    RunApproval {
        run_id: String,
        capability: String,
        grant: bool,
        #[serde(default)]
        expires_ms: Option<i64>,
    },
    StepStarted {
        run_id: String,
        step_run_id: String,
        attempt: u32,
        worker_id: String,
        at: String,
    },
    StepFinished {
        run_id: String,
        step_run_id: String,
        attempt: u32,
        worker_id: String,
        started_at: String,
        finished_at: String,
        #[serde(flatten)]
        outcome: StepOutcome,
        /// The call's telemetry (provider, model, tokenUsage, latencyMs), kept on its StepRun.
        telemetry: Value,
        /// The audit hash of the rendered input (`aiden_domain::execution::audit_hash`), never the
        /// input itself.
        input_hash: Option<String>,
        /// The job's [`Hops`], completed by the worker.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hops: Option<Hops>,
    },
}

impl EngineMessage {
    pub fn run_id(&self) -> &str {
        match self {
            Self::RunStart { run_id, .. }
            | Self::RunCancel { run_id }
            | Self::RunApproval { run_id, .. }
            | Self::StepStarted { run_id, .. }
            | Self::StepFinished { run_id, .. } => run_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn engine_messages_round_trip_with_flattened_outcomes() {
        let msg = EngineMessage::StepFinished {
            run_id: "r".into(),
            step_run_id: "r/s".into(),
            attempt: 2,
            worker_id: "w".into(),
            started_at: "a".into(),
            finished_at: "b".into(),
            outcome: StepOutcome::Retrying {
                error: ErrorInfo::new("TIMEOUT", "slow"),
                next_attempt: 3,
                delay_ms: 2000,
            },
            telemetry: json!({"latencyMs": 5}),
            input_hash: Some("h".into()),
            hops: Some(Hops {
                statement_start_us: 1,
                statement_us: 2,
                commit_end_us: 3,
                delivered_us: 4,
                result_us: 5,
            }),
        };
        let text = serde_json::to_value(&msg).unwrap();
        assert_eq!(text["kind"], "step_finished");
        assert_eq!(text["outcome"], "retrying");
        assert_eq!(text["nextAttempt"], 3);
        assert_eq!(serde_json::from_value::<EngineMessage>(text).unwrap(), msg);
    }

    /// The `outcome` tag is the attempt lifecycle's word: one vocabulary on the wire and in
    /// the engine's metrics.
    #[test]
    fn an_outcome_is_tagged_with_its_attempt_word() {
        let error = || ErrorInfo::new("X", "x");
        for outcome in [
            StepOutcome::Completed { output: json!(1) },
            StepOutcome::Retrying {
                error: error(),
                next_attempt: 2,
                delay_ms: 1,
            },
            StepOutcome::Failed { error: error() },
        ] {
            let text = serde_json::to_value(&outcome).unwrap();
            assert_eq!(text["outcome"], outcome.kind().as_str(), "{text}");
        }
    }
}
