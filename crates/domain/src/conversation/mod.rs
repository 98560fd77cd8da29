//! Conversations, Turns, Alternatives, working memory and Summaries (docs/domain.md,
//! "Conversations"): the commands the API accepts, the facts the graph hands back, and the rules
//! CONV-*, TURN-*, WM-* and SUM-1 as pure functions over them.

pub mod memory;
pub mod rules;
pub mod tree;
pub mod upkeep;

use serde::{Deserialize, Serialize};

use crate::{nullable, Id};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Active,
    Archived,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Archived => "archived",
        }
    }
}

/// Who speaks a Turn. Agents speak only through a Process run (`agent-turns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    User,
    Agent,
    System,
}

impl Speaker {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Agent => "agent",
            Self::System => "system",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "user" => Some(Self::User),
            "agent" => Some(Self::Agent),
            "system" => Some(Self::System),
            _ => None,
        }
    }
}

/// The speakers a client may write content for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HumanSpeaker {
    User,
    System,
}

impl From<HumanSpeaker> for Speaker {
    fn from(s: HumanSpeaker) -> Self {
        match s {
            HumanSpeaker::User => Speaker::User,
            HumanSpeaker::System => Speaker::System,
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TurnType {
    #[default]
    Message,
    ToolResult,
    Summary,
}

impl TurnType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::ToolResult => "tool_result",
            Self::Summary => "summary",
        }
    }
}

/// An Alternative's stored lifecycle: user content is `valid` at once; an agent Alternative is
/// `generating` until its run settles, then `valid` (content written once) or `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AltState {
    Generating,
    Valid,
    Failed,
}

impl AltState {
    pub const ALL: [Self; 3] = [Self::Generating, Self::Valid, Self::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Generating => "generating",
            Self::Valid => "valid",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Self {
        match s {
            "generating" => Self::Generating,
            "failed" => Self::Failed,
            _ => Self::Valid,
        }
    }
}

/// Longest content accepted for one Alternative (characters).
pub const MAX_CONTENT_CHARS: usize = 200_000;
pub const MAX_TITLE_CHARS: usize = 500;

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewConversation {
    pub id: Option<Id>,
    #[schemars(length(max = 500))]
    pub title: Option<String>,
    pub default_process_id: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConversationPatch {
    #[serde(default, deserialize_with = "nullable::deserialize")]
    #[schemars(length(max = 500))]
    pub title: Option<Option<String>>,
    pub status: Option<Status>,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub default_process_id: Option<Option<String>>,
    /// Memory upkeep (MEM-1): this conversation's compression budget; null inherits.
    #[serde(default, deserialize_with = "nullable::deserialize")]
    #[schemars(schema_with = "upkeep::budget_schema")]
    pub compression_token_budget: Option<Option<serde_json::Value>>,
    /// Memory upkeep (MEM-5): this conversation's compression Process; null inherits.
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub compression_process_id: Option<Option<String>>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewTurn {
    pub speaker: HumanSpeaker,
    #[schemars(schema_with = "crate::wire::content")]
    pub content: String,
    #[serde(default)]
    pub turn_type: TurnType,
    pub parent_turn_id: Option<String>,
    pub parent_alternative_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewAgentTurn {
    /// The Process that answers; left out, the conversation's default, else the caller's
    /// (`PUT /v1/me/default-process`).
    #[serde(default)]
    pub process_id: Option<String>,
    pub parent_turn_id: String,
    pub parent_alternative_id: Option<String>,
}

/// `POST /v1/turns/{id}/alternatives`: `content` for user/system Turns, `processId` for agent
/// Turns (which one is checked against the Turn's speaker).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = crate::wire::content_xor_process)]
pub struct NewAlternative {
    #[serde(default)]
    #[schemars(schema_with = "crate::wire::content_or_null")]
    pub content: Option<String>,
    pub process_id: Option<String>,
    pub parent_alternative_id: Option<String>,
    /// FORK-1: regenerate from a fork of the run that produced another Alternative of this
    /// Turn: its retrieval and tool steps are reused, and only `fromStep` (default: the last,
    /// the one that answers) and what follows it run again.
    #[serde(default)]
    pub regenerate: Option<Regenerate>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Regenerate {
    /// The agent Alternative of this Turn whose run is forked.
    pub alternative_id: String,
    /// The step to run anew, with everything downstream (default: the version's last step).
    #[serde(default)]
    pub from_step: Option<String>,
    /// The version of the Process to run (default: the one the run ran).
    #[serde(default)]
    pub process_version: Option<i64>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SwitchActive {
    pub alternative_id: String,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForkRequest {
    pub turn_id: String,
    pub alternative_id: String,
    #[schemars(length(max = 500))]
    pub title: Option<String>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewSummary {
    #[schemars(schema_with = "crate::wire::content")]
    pub content: String,
    pub covers_up_to_turn_id: String,
    pub sources: Vec<String>,
    pub created_by_process_id: Option<String>,
    /// The run that made it (a compression run); its Process is `createdByProcessId`.
    #[serde(default)]
    pub run_id: Option<String>,
    #[schemars(range(min = 0))]
    pub token_count: Option<i64>,
}

/// `PATCH /v1/summaries/{id}` (admin repair of a Summary, SUM-1): `tokenCount`, and/or
/// corrected `content` (a new Episode; the old content and Episode are kept).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SummaryPatch {
    #[schemars(range(min = 0))]
    pub token_count: Option<i64>,
    #[serde(default)]
    #[schemars(schema_with = "crate::wire::content_or_null")]
    pub content: Option<String>,
}

/// The names an agent run's initial context offers (`POST …/agent-turns`, AGT-8).
pub const AGENT_CONTEXT: [&str; 5] = [
    "conversationId",
    "turnId",
    "alternativeId",
    "userMessage",
    "workingMemory",
];
