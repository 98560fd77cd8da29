//! What a Process runs: its versioned definition, steps and agent settings, with the limits
//! they are bounded by and the quota a Process may carry.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Error, Id};

/// Timeouts, in ms: a Tool call's default and maximum, and the maximum for a called Process.
pub const TOOL_DEFAULT_TIMEOUT_MS: u64 = 30_000;
pub const TOOL_MAX_TIMEOUT_MS: u64 = 60_000;
pub const PROCESS_MAX_TIMEOUT_MS: u64 = 120_000;
pub const DEFAULT_MAX_RECURSION_DEPTH: u32 = 3;
pub const MAX_STEPS: usize = 200;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Sequential,
    Parallel,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum InteractionMode {
    #[default]
    Auto,
    Manual,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepOutput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
    #[serde(default)]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Execution {
    #[serde(default)]
    pub mode: Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = PROCESS_MAX_TIMEOUT_MS))]
    pub timeout: Option<u64>,
    #[serde(default)]
    pub interaction_mode: InteractionMode,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = crate::wire::tool_step_timeout)]
pub struct Step {
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]{1,128}$"))]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Id>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<Id>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    #[serde(default)]
    pub inputs: Map<String, Value>,
    #[serde(default)]
    pub output: StepOutput,
    #[serde(default)]
    pub execution: Execution,
    /// An agent step: `tool` is the model (an `llm_call` Tool) and the step runs
    /// the tool-call loop over `agent.tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentSpec>,
}

/// An agent step's tools, governed system prompt and caps (AGT-7, with defaults). Its
/// inputs: `message` (required: what to answer), `memory` (working memory, optional),
/// `preferences` (optional).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSpec {
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub tools: Vec<Id>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(default = "default_max_iterations")]
    #[schemars(range(min = 1, max = 20))]
    pub max_iterations: u32,
    #[serde(default = "default_max_tool_calls")]
    #[schemars(range(max = 50))]
    pub max_tool_calls: u32,
    #[serde(default = "default_tool_call_timeout")]
    #[schemars(range(min = 1, max = TOOL_MAX_TIMEOUT_MS))]
    pub tool_call_timeout_ms: u64,
    #[serde(default = "default_total_timeout")]
    #[schemars(range(min = 1, max = 600_000))]
    pub total_timeout_ms: u64,
    /// AGT-11: tokens the loop may spend in all (estimated before each model turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100_000_000))]
    pub token_budget: Option<u64>,
    /// AGT-14: USD the loop may spend in all (model turns at the configured prices, tool
    /// calls at their Tools' `costPerCallUsd`), estimated before each call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.000001, max = 1_000_000.0))]
    pub cost_budget_usd: Option<f64>,
    /// Tools whose calls need the run owner's approval, by tool id: the capability to approve
    /// (AGT-9; `POST /v1/runs/{id}/approvals`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::wire::approvals")]
    pub approvals: std::collections::BTreeMap<Id, String>,
    /// AGT-15: classify the message into an intent first; the gate offers only its tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<crate::execution::agent::router::RouterSpec>,
}

fn default_max_iterations() -> u32 {
    5
}
fn default_max_tool_calls() -> u32 {
    10
}
fn default_tool_call_timeout() -> u64 {
    TOOL_DEFAULT_TIMEOUT_MS
}
fn default_total_timeout() -> u64 {
    PROCESS_MAX_TIMEOUT_MS
}

impl AgentSpec {
    pub fn caps(&self) -> crate::execution::agent::Caps {
        crate::execution::agent::Caps {
            max_iterations: self.max_iterations,
            max_tool_calls: self.max_tool_calls,
            tool_call_timeout_ms: self.tool_call_timeout_ms,
            total_timeout_ms: self.total_timeout_ms,
            token_budget: self.token_budget,
            cost_budget_micros: self.cost_budget_usd.map(crate::execution::cost::micros),
        }
    }

    /// The caps stay within bounds (plain validation: 400s).
    pub(super) fn check_bounds(&self, path: &str) -> Result<(), Error> {
        let bad = |field: &str, range: &str| {
            Err(Error::validation(
                format!("{path}/agent/{field}"),
                format!("must be {range}"),
            ))
        };
        if !(1..=20).contains(&self.max_iterations) {
            return bad("maxIterations", "1-20");
        }
        if self.max_tool_calls > 50 {
            return bad("maxToolCalls", "0-50");
        }
        if !(1..=TOOL_MAX_TIMEOUT_MS).contains(&self.tool_call_timeout_ms) {
            return bad("toolCallTimeoutMs", "1-60000");
        }
        if !(1..=600_000).contains(&self.total_timeout_ms) {
            return bad("totalTimeoutMs", "1-600000");
        }
        if self.tools.len() > 64 {
            return bad("tools", "at most 64 tools");
        }
        if self
            .token_budget
            .is_some_and(|b| !(1..=100_000_000).contains(&b))
        {
            return bad("tokenBudget", "1-100000000");
        }
        if self
            .cost_budget_usd
            .is_some_and(|usd| !crate::execution::cost::valid_usd(usd, false))
        {
            return bad("costBudgetUsd", "more than 0 and at most 1000000 (USD)");
        }
        for (tool, capability) in &self.approvals {
            let ok = (1..=64).contains(&capability.len())
                && capability
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c));
            if !ok {
                return Err(Error::validation(
                    format!("{path}/agent/approvals/{tool}"),
                    "a capability is 1-64 letters, digits, '.', '_', ':' or '-'",
                ));
            }
        }
        Ok(())
    }
}

/// The versioned part of a Process: what runs. Any change makes a new version (PROC-9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Definition {
    #[serde(default)]
    #[schemars(inner(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")))]
    pub initial_context: Vec<String>,
    pub steps: Vec<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    #[serde(default = "default_depth")]
    pub max_recursion_depth: u32,
    /// AGT-10: how often and how many at once the Process may be started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<Quota>,
}

/// A Process's quota, enforced when a run is started through the API (a run, an agent turn),
/// counted in the graph so every API instance sees the same counts.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Quota {
    /// Starts per clock hour (UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_invocations_per_hour: Option<u32>,
    /// Runs queued, running or waiting at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_concurrent: Option<u32>,
    /// AGT-14: USD that runs may spend per UTC day (model tokens at the configured prices,
    /// Tools' `costPerCallUsd`), checked before each spend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.000001, max = 1_000_000.0))]
    pub max_cost_usd_per_day: Option<f64>,
}

/// What a quota reads as: an object only. Serde's derive would also take a sequence of the
/// fields (`[null, null]`), which the schema does not allow.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct QuotaFields {
    #[serde(default)]
    max_invocations_per_hour: Option<u32>,
    #[serde(default)]
    max_concurrent: Option<u32>,
    #[serde(default)]
    max_cost_usd_per_day: Option<f64>,
}

impl<'de> Deserialize<'de> for Quota {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let f: QuotaFields = serde_json::from_value(serde_json::Value::Object(map))
            .map_err(serde::de::Error::custom)?;
        Ok(Self {
            max_invocations_per_hour: f.max_invocations_per_hour,
            max_concurrent: f.max_concurrent,
            max_cost_usd_per_day: f.max_cost_usd_per_day,
        })
    }
}

impl Quota {
    /// Plain validation (400s) of a quota at `path` (a Process's or a user's).
    pub fn check(&self, path: &str) -> Result<(), Error> {
        for (field, v) in [
            ("maxInvocationsPerHour", self.max_invocations_per_hour),
            ("maxConcurrent", self.max_concurrent),
        ] {
            if v.is_some_and(|v| !(1..=1_000_000).contains(&v)) {
                return Err(Error::validation(
                    format!("{path}/{field}"),
                    "must be 1-1000000",
                ));
            }
        }
        if self
            .max_cost_usd_per_day
            .is_some_and(|usd| !crate::execution::cost::valid_usd(usd, false))
        {
            return Err(Error::validation(
                format!("{path}/maxCostUsdPerDay"),
                "must be more than 0 and at most 1000000 (USD)",
            ));
        }
        Ok(())
    }

    /// The daily money budget in micro-dollars, if any.
    pub fn cost_budget_micros(&self) -> Option<u64> {
        self.max_cost_usd_per_day
            .map(crate::execution::cost::micros)
    }
}

/// Whose limits a start or a spend counts against: a Process's, or a user's own (AGT-10,
/// AGT-14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    Process(&'a str),
    User(&'a str),
}

impl Subject<'_> {
    /// The `QuotaWindow` key of the clock hour `hour` (a Process's key predates users' quotas).
    pub fn quota_key(&self, hour: &str) -> String {
        match self {
            Self::Process(id) => format!("{id}#{hour}"),
            Self::User(id) => format!("user:{id}#{hour}"),
        }
    }

    /// The `SpendWindow` key of the UTC day `day` (`YYYY-MM-DD`).
    pub fn spend_key(&self, day: &str) -> String {
        match self {
            Self::Process(id) => format!("process:{id}#{day}"),
            Self::User(id) => format!("user:{id}#{day}"),
        }
    }
}

pub(super) fn default_depth() -> u32 {
    DEFAULT_MAX_RECURSION_DEPTH
}
