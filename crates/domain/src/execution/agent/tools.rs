//! The tools as the agent loop knows and calls them: their model-safe names, the kinds of call
//! a loop makes, and the arguments of a call.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A Tool as the agent knows it, resolved when the run's plan was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentTool {
    pub id: String,
    /// The name the model sees: the Tool's name made safe for function names, unique.
    pub call_name: String,
    pub description: Option<String>,
    pub input_schema: Value,
    pub operation_type: crate::OperationType,
    pub owner_id: String,
    pub shared: bool,
    pub enabled: bool,
    /// A capability the run's owner must approve before a call runs (AGT-9), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
    /// AGT-14: what one call costs (the Tool's `costPerCallUsd`), in micro-dollars.
    #[serde(default)]
    pub cost_micros: u64,
    /// The user whose Secret the Tool uses (its owner, SEC-6), if it uses one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_owner_id: Option<String>,
    /// The ToolTemplate the Tool was made from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    /// Whether the run's owner has their own Tool of this Tool's template, which a call then
    /// runs on (docs/connections.md). Set per run, not in the cached plan.
    #[serde(default)]
    pub caller_connected: bool,
}

/// What a call of an agent loop is, from its step id (`<step>#m<n>`, `#r<n>`, `#t<n>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// A model turn of the loop.
    Model,
    /// The router's turn (AGT-15): a model turn that classifies the message.
    Router,
    Tool,
}

impl CallKind {
    pub fn of(step_id: &str) -> Option<Self> {
        let tail = &step_id[step_id.rfind('#')? + 1..];
        match tail.chars().next()? {
            'm' => Some(Self::Model),
            'r' => Some(Self::Router),
            't' => Some(Self::Tool),
            _ => None,
        }
    }

    /// Whether the call asks the model (its job is an agent turn on the llm_call pool).
    pub fn asks_model(self) -> bool {
        matches!(self, Self::Model | Self::Router)
    }
}

/// A model-safe function name for `name` (OpenAI and Anthropic accept `[A-Za-z0-9_-]{1,64}`),
/// unique among `taken`.
pub fn call_name(name: &str, taken: &[String]) -> String {
    let mut base: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    if base.is_empty() {
        base = "tool".into();
    }
    let mut candidate = base.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    candidate
}

/// The first way `arguments` fail `schema`, if any.
pub(super) fn schema_problem(schema: &Value, arguments: &Value) -> Option<String> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => return Some(format!("the tool's inputSchema is unusable: {e}")),
    };
    let problem = validator
        .iter_errors(arguments)
        .next()
        .map(|e| format!("{e} (at `{}`)", e.instance_path));
    problem
}

/// The arguments object the model sent (a JSON string in OpenAI's wire format).
pub fn parse_arguments(raw: &Value) -> Value {
    match raw {
        Value::String(s) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
        Value::Null => Value::Object(Map::new()),
        other => other.clone(),
    }
}
