//! Typed answers for the routes whose shape is assembled here rather than in the domain: the
//! types are what `/openapi.json` documents, so the document and the wire cannot drift.

use aiden_domain::conversation::tree::TurnView;
use aiden_domain::execution::schedule::StepStatus;
use aiden_domain::knowledge::entity::EntityReference;
/// A Summary as the API answers it (the graph's row is the view).
pub use aiden_graph::conversations::SummaryRecord;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A Conversation.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationView {
    pub id: String,
    pub title: Option<String>,
    pub status: ConversationStatus,
    pub owner_id: String,
    pub default_process_id: Option<String>,
    /// Where a fork came from (CONV-3); null for an original.
    pub forked_from: Option<ForkedFrom>,
    pub current_turn_id: Option<String>,
    pub current_alternative_id: Option<String>,
    pub turn_count: i64,
    /// Counts PATCHes: send it as `If-Match`.
    pub revision: i64,
    pub created_at: String,
    pub updated_at: String,
    /// Memory upkeep overrides (`GET /v1/settings` has the defaults); null inherits.
    pub compression_token_budget: Option<i64>,
    pub compression_process_id: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConversationStatus {
    Active,
    Archived,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    pub conversation_id: String,
    pub origin_turn_id: Option<String>,
    pub origin_alternative_id: Option<String>,
}

/// `GET /v1/conversations/{id}/tree`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeView {
    pub conversation: ConversationView,
    /// Present when `?fromSequence=&toSequence=` asked for a window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<TreeWindow>,
    pub turns: Vec<TurnView>,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeWindow {
    pub from_sequence: i64,
    pub to_sequence: i64,
}

/// An Entity with its provenance (`sources`: who created it, which Episodes mention it).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntityView {
    pub uuid: String,
    pub name: String,
    pub summary: Option<String>,
    pub category: Option<String>,
    /// Facet name → value (and confidence, once enriched).
    pub facets: serde_json::Map<String, Value>,
    pub sources: Vec<EntitySource>,
    pub created_at: Option<String>,
    pub status: EntityStatus,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EntityStatus {
    /// An agent's suggestion awaiting its owner (AGT-13).
    Proposed,
    Confirmed,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum EntitySource {
    /// Proposed by an agent run (AGT-13).
    Suggestion {
        created_at: Option<String>,
        created_by: Option<String>,
        run_id: Option<String>,
    },
    /// Created by a user (ENT-1).
    User {
        created_at: Option<String>,
        created_by: Option<String>,
    },
    /// Mentioned by an extracted Episode.
    Graphiti {
        created_at: Option<String>,
        episode_id: String,
    },
}

/// A list that is not paged (every item fits).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "{T}List")]
pub struct Items<T> {
    pub items: Vec<T>,
}

/// `POST /v1/entities/{uuid}/confirm` answers the Entity; `/reject` this.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ProposalDecision {
    Confirmed(EntityView),
    Rejected(Rejected),
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Rejected {
    pub uuid: String,
    pub status: RejectedStatus,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RejectedStatus {
    Rejected,
}

/// The Conversation's active entities (`GET /v1/conversations/{id}/entities`).
pub type ActiveEntities = Items<EntityReference>;

/// `POST /v1/runs/{id}/cancel`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelAnswer {
    pub run_id: String,
    /// The status the request met: a run not settled then settles `canceled` shortly after; a
    /// settled one keeps its final status.
    pub status: String,
    /// Whether a cancel was requested: `false` for a run that had already settled.
    pub cancel_requested: bool,
}

/// `POST /v1/runs/{id}/approvals`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalAnswer {
    pub run_id: String,
    pub capability: String,
    pub decision: Decision,
    /// When a grant ends; null for the rest of the run, or a denial.
    pub expires_at: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Grant,
    Deny,
}

/// `GET /v1/workers`: one slot of a pool.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerView {
    pub id: String,
    /// The operation type its pool serves.
    #[serde(rename = "type")]
    pub worker_type: String,
    pub status: String,
    pub current_job_id: Option<String>,
    pub last_heartbeat: Option<String>,
    pub processed_count: Option<i64>,
    pub error_count: Option<i64>,
}

/// `GET /v1/runs/{id}`: a run with per-step status, output and telemetry.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    pub id: String,
    pub process_id: String,
    pub process_version: i64,
    pub status: RunStatus,
    /// 1 for a top-level run, n + 1 for a child n levels down.
    pub depth: i64,
    pub parent_run_id: Option<String>,
    pub inputs: Value,
    pub output: Value,
    pub error: Value,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// Set when no request started the run (memory upkeep).
    #[serde(default)]
    pub trigger: Option<RunTrigger>,
    /// The run record's write version this view shows: the engine increments it with every
    /// commit that changes the run, and the view is that one commit's state.
    #[serde(default)]
    pub version: i64,
    /// FORK-1: the run this one was forked from, and the step it ran anew from.
    #[serde(default)]
    pub forked_from: Option<String>,
    #[serde(default)]
    pub fork_step: Option<String>,
    /// The agent Alternative the run generates, when it answers a conversation turn: the
    /// console links to that exact message.
    #[serde(default)]
    pub alternative_id: Option<String>,
    pub steps: Vec<StepView>,
}

/// What started a background run: `kind` (`compression`, `introspection`, `enrichment`) and
/// the Conversation, user or Entity it works on.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunTrigger {
    pub kind: String,
    pub subject_id: String,
}

impl RunTrigger {
    pub fn from_parts(kind: Option<String>, subject_id: Option<String>) -> Option<Self> {
        Some(Self {
            kind: kind?,
            subject_id: subject_id?,
        })
    }
}

/// One line of `GET /v1/runs`: a run without its steps.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub id: String,
    pub process_id: String,
    pub process_version: i64,
    pub status: RunStatus,
    pub depth: i64,
    pub parent_run_id: Option<String>,
    pub owner_id: String,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub trigger: Option<RunTrigger>,
    /// The run's Process's name (none once the Process is deleted).
    #[serde(default)]
    pub process_name: Option<String>,
    /// The name of the user who started it.
    #[serde(default)]
    pub owner_name: Option<String>,
    /// For a run that answers a conversation turn: the message it answered.
    #[serde(default)]
    pub message: Option<RunMessage>,
    /// Finished − started, or, while it runs, the time so far; none before it starts.
    #[serde(default)]
    pub duration_ms: Option<i64>,
}

/// The conversation message a run answered: the user's Alternative (`alternativeId`, in Turn
/// `turnId`, its text cut to a preview) and the agent Alternative the run generates
/// (`answerId`, in `answerTurnId`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunMessage {
    pub conversation_id: String,
    pub answer_id: String,
    pub answer_turn_id: Option<String>,
    pub alternative_id: Option<String>,
    pub turn_id: Option<String>,
    /// The answered message's first characters.
    pub text: Option<String>,
}

impl RunMessage {
    /// A run that generates no Alternative answered no message.
    pub fn from_parts(
        conversation_id: Option<String>,
        answer_id: Option<String>,
        answer_turn_id: Option<String>,
        alternative_id: Option<String>,
        turn_id: Option<String>,
        text: Option<String>,
    ) -> Option<Self> {
        Some(Self {
            conversation_id: conversation_id?,
            answer_id: answer_id?,
            answer_turn_id,
            alternative_id,
            turn_id,
            text,
        })
    }
}

/// The run machine's own status: what the graph stores is what the wire shows.
pub use aiden_domain::execution::machine::RunStatus;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepView {
    pub step_id: String,
    pub status: StepStatus,
    pub attempts: i64,
    pub worker_id: Option<String>,
    /// When the pass that dispatched its (last) attempt began.
    #[serde(default)]
    pub queued_at: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub output: Value,
    pub error: Value,
    pub telemetry: Value,
    /// Where its last attempt's time went, in microseconds since the Unix epoch: the
    /// dispatching pass's write (`statementStartUs`, `statementUs`), its commit
    /// (`commitEndUs`), the worker's delivery (`deliveredUs`) and result (`resultUs`).
    #[serde(default)]
    pub hops: Value,
    pub child_run_id: Option<String>,
    /// For an agent's calls (`<step>#m1`, `#t1`, `#r1`): `model`, `tool` or `router`.
    #[serde(default)]
    pub kind: Option<String>,
    /// The Tool the step names (for an agent's call, the one the loop chose).
    #[serde(default)]
    pub tool_id: Option<String>,
    /// An agent call's input as sent: a model turn's messages and tools, a tool call's
    /// arguments as the model wrote them. Null for a plan step (its inputs are the run's).
    #[serde(default)]
    pub input: Value,
    /// The audit hash of the input it ran with.
    #[serde(default)]
    pub input_hash: Option<String>,
    /// FORK-1: the original's StepRun whose output this step took (nothing was called).
    #[serde(default)]
    pub reused_from: Option<String>,
}
