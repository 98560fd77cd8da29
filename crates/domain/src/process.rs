//! Processes: workflows as data, versioned (PROC-1..7, PROC-9).

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{
    error::Violations,
    schema::{check_instance, property_names, required_names},
    service::check_name,
    template_vars::{is_templated, template_variables},
    Checked, Error, Id,
};

/// Seed 000 §7.3: per-tool default and maximum, per-workflow (a called Process) maximum, in ms.
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
    /// An agent step (issue #11): `tool` is the model (an `llm_call` Tool) and the step runs
    /// the tool-call loop over `agent.tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentSpec>,
}

/// An agent step's tools, governed system prompt and caps (seed 000 §8.1 defaults). Its
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
    fn check_bounds(&self, path: &str) -> Result<(), Error> {
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
    /// Seed 000 §5.5 (AGT-10): how often and how many at once the Process may be started.
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

fn default_depth() -> u32 {
    DEFAULT_MAX_RECURSION_DEPTH
}

/// A Process as stored and shown: its current definition inline, plus `version`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Process {
    pub id: Id,
    pub name: String,
    pub description: Option<String>,
    #[serde(flatten)]
    pub definition: Definition,
    pub version: i64,
    pub enabled: bool,
    pub shared: bool,
    pub owner_id: Id,
    pub created_at: String,
    pub updated_at: String,
    pub revision: i64,
}

/// Create or PUT body.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewProcess {
    pub id: Option<Id>,
    #[schemars(schema_with = "crate::wire::name")]
    pub name: String,
    pub description: Option<String>,
    #[serde(default)]
    #[schemars(inner(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")))]
    pub initial_context: Vec<String>,
    pub steps: Vec<Step>,
    #[serde(default)]
    pub output_template: Option<String>,
    #[serde(default)]
    pub token_budget: Option<u64>,
    #[serde(default = "default_depth")]
    #[schemars(range(min = 1, max = 32))]
    pub max_recursion_depth: u32,
    #[serde(default)]
    pub quota: Option<Quota>,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub shared: bool,
}

impl NewProcess {
    /// The versioned part of the body.
    pub fn definition(&self) -> Definition {
        Definition {
            initial_context: self.initial_context.clone(),
            steps: self.steps.clone(),
            output_template: self.output_template.clone(),
            token_budget: self.token_budget,
            max_recursion_depth: self.max_recursion_depth,
            quota: self.quota,
        }
    }
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcessPatch {
    pub id: Option<Id>,
    #[serde(default)]
    #[schemars(schema_with = "crate::wire::name_or_null")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub description: Option<Option<String>>,
    #[schemars(inner(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")))]
    pub initial_context: Option<Vec<String>>,
    pub steps: Option<Vec<Step>>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub output_template: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub token_budget: Option<Option<u64>>,
    #[schemars(range(min = 1, max = 32))]
    pub max_recursion_depth: Option<u32>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub quota: Option<Option<Quota>>,
    pub enabled: Option<bool>,
    pub shared: Option<bool>,
}

/// What the rules know about a step's target.
#[derive(Debug, Clone)]
pub enum Target {
    Tool {
        owner_id: Id,
        shared: bool,
        input_schema: Value,
        /// AGT-1: an agent step's model is an `llm_call` Tool.
        operation_type: crate::OperationType,
    },
    /// `depth`: the length of the longest static CALLS_PROCESS chain starting at that Process
    /// (1 when it calls none); `None` when the chain reaches back to the Process being defined.
    Process {
        owner_id: Id,
        shared: bool,
        initial_context: Vec<String>,
        depth: Option<u32>,
    },
}

/// Targets by id, looked up by the service before deciding. Absent ids are missing here.
pub struct Targets {
    pub tools: HashMap<Id, Target>,
    pub processes: HashMap<Id, Target>,
}

impl Definition {
    /// The Tools the steps call, agent steps' tools included.
    pub fn tool_ids(&self) -> BTreeSet<Id> {
        let agent_tools = self
            .steps
            .iter()
            .filter_map(|s| s.agent.as_ref())
            .flat_map(|a| a.tools.iter().cloned());
        self.steps
            .iter()
            .filter_map(|s| s.tool.clone())
            .chain(agent_tools)
            .collect()
    }

    pub fn process_ids(&self) -> BTreeSet<Id> {
        self.steps
            .iter()
            .filter_map(|s| s.process.clone())
            .collect()
    }

    /// The static depth of this definition given its callees' depths (PROC-7).
    pub fn depth(&self, targets: &Targets) -> Option<u32> {
        let mut deepest = 0;
        for id in self.process_ids() {
            match targets.processes.get(&id) {
                Some(Target::Process { depth: Some(d), .. }) => deepest = deepest.max(*d),
                Some(Target::Process { depth: None, .. }) => return None,
                _ => {}
            }
        }
        Some(deepest + 1)
    }

    /// Every rule of PROC-1..7 for this definition owned by `owner`.
    pub fn check(&self, owner: &Id, targets: &Targets) -> Result<(), Error> {
        let mut v = Violations::default();
        self.check_shape(&mut v)?;
        self.check_dependencies(&mut v);
        self.check_targets(owner, targets, &mut v);
        self.check_variables(&mut v);
        match self.depth(targets) {
            None => v.rule(
                "PROC-7",
                "/steps",
                "the CALLS_PROCESS chain leads back to this Process",
            ),
            Some(d) if d > self.max_recursion_depth => v.rule(
                "PROC-7",
                "/maxRecursionDepth",
                format!(
                    "the static CALLS_PROCESS chain is {d} deep, above maxRecursionDepth {}",
                    self.max_recursion_depth
                ),
            ),
            Some(_) => {}
        }
        v.into_result()
    }

    /// PROC-1 plus plain field validation (400s).
    fn check_shape(&self, v: &mut Violations) -> Result<(), Error> {
        if self.steps.is_empty() {
            v.rule("PROC-1", "/steps", "a Process needs at least one step");
        }
        if self.steps.len() > MAX_STEPS {
            return Err(Error::validation(
                "/steps",
                format!("at most {MAX_STEPS} steps"),
            ));
        }
        if !(1..=32).contains(&self.max_recursion_depth) {
            return Err(Error::validation("/maxRecursionDepth", "must be 1-32"));
        }
        if let Some(q) = &self.quota {
            q.check("/quota")?;
        }
        let mut seen = BTreeSet::new();
        for (i, step) in self.steps.iter().enumerate() {
            if Id::parse(&step.id).is_err() {
                return Err(Error::validation(
                    format!("/steps/{i}/id"),
                    "step ids are 1-128 letters, digits, '-', '_' or '.'",
                ));
            }
            if !seen.insert(step.id.as_str()) {
                v.rule(
                    "PROC-1",
                    format!("/steps/{i}/id"),
                    format!("step id '{}' is used twice", step.id),
                );
            }
            if let Some(agent) = &step.agent {
                agent.check_bounds(&format!("/steps/{i}"))?;
            }
            let max = if step.process.is_some() {
                PROCESS_MAX_TIMEOUT_MS
            } else {
                TOOL_MAX_TIMEOUT_MS
            };
            if let Some(t) = step.execution.timeout {
                if t == 0 || t > max {
                    return Err(Error::validation(
                        format!("/steps/{i}/execution/timeout"),
                        format!("must be 1-{max} ms"),
                    ));
                }
            }
        }
        for (i, name) in self.initial_context.iter().enumerate() {
            if !is_identifier(name) {
                return Err(Error::validation(
                    format!("/initialContext/{i}"),
                    "must be an identifier",
                ));
            }
        }
        Ok(())
    }

    /// PROC-3 and PROC-4.
    fn check_dependencies(&self, v: &mut Violations) {
        let position: HashMap<&str, usize> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i))
            .collect();
        for (i, step) in self.steps.iter().enumerate() {
            for (k, dep) in step.depends_on.iter().enumerate() {
                let path = format!("/steps/{i}/dependsOn/{k}");
                match position.get(dep.as_str()) {
                    Some(&j) if j == i => v.rule("PROC-3", path, "a step cannot depend on itself"),
                    Some(&j) if j > i => {
                        v.rule("PROC-3", path, format!("'{dep}' is listed after this step"))
                    }
                    Some(_) => {}
                    None => v.rule("PROC-3", path, format!("no step '{dep}' in this Process")),
                }
            }
        }
        for group in parallel_groups(&self.steps) {
            let members: BTreeSet<&str> =
                group.iter().map(|&i| self.steps[i].id.as_str()).collect();
            for &i in &group {
                for (k, dep) in self.steps[i].depends_on.iter().enumerate() {
                    if members.contains(dep.as_str()) {
                        v.rule(
                            "PROC-4",
                            format!("/steps/{i}/dependsOn/{k}"),
                            format!("'{dep}' is in the same parallel group"),
                        );
                    }
                }
            }
        }
    }

    /// PROC-2 and PROC-5.
    fn check_targets(&self, owner: &Id, targets: &Targets, v: &mut Violations) {
        for (i, step) in self.steps.iter().enumerate() {
            let path = format!("/steps/{i}");
            let target = match (&step.tool, &step.process) {
                (Some(_), Some(_)) | (None, None) => {
                    v.rule(
                        "PROC-2",
                        &path,
                        "a step calls exactly one of `tool` or `process`",
                    );
                    continue;
                }
                (Some(id), None) => targets.tools.get(id).map(|t| (t, "tool")),
                (None, Some(id)) => targets.processes.get(id).map(|t| (t, "process")),
            };
            let visible = |o: &Id, shared: bool| o == owner || shared;
            match target {
                Some((
                    Target::Tool {
                        owner_id,
                        shared,
                        operation_type,
                        ..
                    },
                    _,
                )) if visible(owner_id, *shared) && step.agent.is_some() => {
                    check_agent(&path, step, *operation_type, owner, targets, v);
                }
                Some((
                    Target::Tool {
                        owner_id,
                        shared,
                        input_schema,
                        ..
                    },
                    _,
                )) if visible(owner_id, *shared) => {
                    check_tool_inputs(&path, &step.inputs, input_schema, v);
                }
                Some((
                    Target::Process {
                        owner_id,
                        shared,
                        initial_context,
                        ..
                    },
                    _,
                )) if visible(owner_id, *shared) => {
                    check_process_inputs(&path, &step.inputs, initial_context, v);
                }
                _ => {
                    let field = if step.tool.is_some() {
                        "tool"
                    } else {
                        "process"
                    };
                    v.rule(
                        "PROC-2",
                        format!("{path}/{field}"),
                        format!("no {field} with this id that the Process owner can use"),
                    );
                }
            }
        }
    }

    /// PROC-6: every variable comes from initialContext or a step guaranteed to finish first.
    fn check_variables(&self, v: &mut Violations) {
        let initial: BTreeSet<&str> = self.initial_context.iter().map(String::as_str).collect();
        let mut producer: HashMap<&str, usize> = HashMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            if let Some(var) = &step.output.variable {
                let path = format!("/steps/{i}/output/variable");
                if !is_identifier(var) {
                    v.rule("PROC-6", path, "must be an identifier");
                } else if initial.contains(var.as_str()) || producer.insert(var, i).is_some() {
                    v.rule("PROC-6", path, format!("'{var}' is already defined"));
                }
            }
        }
        let before = self.guaranteed_before();
        let defined_for = |i: Option<usize>, var: &str| -> bool {
            initial.contains(var)
                || producer.get(var).is_some_and(|&p| match i {
                    Some(i) => before[i].contains(&p),
                    None => true,
                })
        };
        for (i, step) in self.steps.iter().enumerate() {
            let mut used: Vec<(String, String)> = Vec::new();
            for (key, value) in &step.inputs {
                let mut vars = BTreeSet::new();
                collect_vars(value, &mut vars);
                used.extend(
                    vars.into_iter()
                        .map(|var| (format!("/steps/{i}/inputs/{key}"), var)),
                );
            }
            if let Some(c) = &step.execution.condition {
                used.extend(
                    template_variables(c)
                        .into_iter()
                        .map(|var| (format!("/steps/{i}/execution/condition"), var)),
                );
            }
            for (path, var) in used {
                if !defined_for(Some(i), &var) {
                    v.rule("PROC-6", path, format!("'{var}' is not in initialContext nor produced by a step that finishes before this one"));
                }
            }
        }
        if let Some(t) = &self.output_template {
            for var in template_variables(t) {
                if !defined_for(None, &var) {
                    v.rule(
                        "PROC-6",
                        "/outputTemplate",
                        format!("'{var}' is not in initialContext nor produced by any step"),
                    );
                }
            }
        }
    }

    /// For each step, the steps certain to have finished before it starts: a sequential step
    /// waits for every earlier step; a parallel one only for its `dependsOn` (transitively).
    pub fn guaranteed_before(&self) -> Vec<BTreeSet<usize>> {
        let position: HashMap<&str, usize> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i))
            .collect();
        let mut before: Vec<BTreeSet<usize>> = Vec::with_capacity(self.steps.len());
        for (i, step) in self.steps.iter().enumerate() {
            let set = match step.execution.mode {
                Mode::Sequential => (0..i).collect(),
                Mode::Parallel => {
                    let mut set = BTreeSet::new();
                    for dep in &step.depends_on {
                        if let Some(&j) = position.get(dep.as_str()).filter(|&&j| j < i) {
                            set.insert(j);
                            set.extend(before[j].iter().copied());
                        }
                    }
                    set
                }
            };
            before.push(set);
        }
        before
    }
}

/// Maximal runs of consecutive parallel steps (PROC-4).
pub fn parallel_groups(steps: &[Step]) -> Vec<Vec<usize>> {
    let mut groups = Vec::new();
    let mut current = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if step.execution.mode == Mode::Parallel {
            current.push(i);
        } else if !current.is_empty() {
            groups.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

fn collect_vars(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => out.extend(template_variables(s)),
        Value::Array(items) => items.iter().for_each(|i| collect_vars(i, out)),
        Value::Object(map) => map.values().for_each(|i| collect_vars(i, out)),
        _ => {}
    }
}

fn is_templated_value(value: &Value) -> bool {
    match value {
        Value::String(s) => is_templated(s),
        Value::Array(items) => items.iter().any(is_templated_value),
        Value::Object(map) => map.values().any(is_templated_value),
        _ => false,
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// PROC-5 for a Tool: required keys present, no unknown keys, literals type-checked now.
fn check_tool_inputs(path: &str, inputs: &Map<String, Value>, schema: &Value, v: &mut Violations) {
    for key in required_names(schema) {
        if !inputs.contains_key(&key) {
            v.rule(
                "PROC-5",
                format!("{path}/inputs"),
                format!("the Tool requires input '{key}'"),
            );
        }
    }
    let declared: BTreeSet<String> = property_names(schema).into_iter().collect();
    let properties = schema.get("properties");
    for (key, value) in inputs {
        if !declared.contains(key) {
            v.rule(
                "PROC-5",
                format!("{path}/inputs/{key}"),
                format!("the Tool has no input '{key}'"),
            );
            continue;
        }
        if is_templated_value(value) {
            continue; // checked at execution time, once interpolated
        }
        if let Some(prop) = properties.and_then(|p| p.get(key)) {
            v.extend(check_instance(
                "PROC-5",
                &format!("{path}/inputs/{key}"),
                prop,
                value,
            ));
        }
    }
}

/// PROC-5 for a called Process: every initialContext variable provided, nothing unknown.
fn check_process_inputs(
    path: &str,
    inputs: &Map<String, Value>,
    initial_context: &[String],
    v: &mut Violations,
) {
    for name in initial_context {
        if !inputs.contains_key(name) {
            v.rule(
                "PROC-5",
                format!("{path}/inputs"),
                format!("the called Process requires '{name}'"),
            );
        }
    }
    for key in inputs.keys() {
        if !initial_context.contains(key) {
            v.rule(
                "PROC-5",
                format!("{path}/inputs/{key}"),
                format!("the called Process has no initialContext '{key}'"),
            );
        }
    }
}

pub fn decide_create(
    input: NewProcess,
    targets: &Targets,
    owner: &Id,
    now: &str,
) -> Result<Checked<Process>, Error> {
    check_name(&input.name)?;
    let definition = input.definition();
    definition.check(owner, targets)?;
    Ok(Checked::new(Process {
        id: crate::ids::id_or_new(input.id),
        name: input.name,
        description: input.description,
        definition,
        version: 1,
        enabled: input.enabled,
        shared: input.shared,
        owner_id: owner.clone(),
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
        revision: 1,
    }))
}

/// Merges a PATCH into a whole-Process body (PUT takes the body as it is).
pub fn merge_patch(current: &Process, patch: ProcessPatch) -> Result<NewProcess, Error> {
    if patch.id.as_ref().is_some_and(|id| *id != current.id) {
        return Err(Error::invariant("PROC-9", "/id", "a Process keeps its id"));
    }
    let d = &current.definition;
    Ok(NewProcess {
        id: Some(current.id.clone()),
        name: patch.name.unwrap_or_else(|| current.name.clone()),
        description: patch
            .description
            .unwrap_or_else(|| current.description.clone()),
        initial_context: patch
            .initial_context
            .unwrap_or_else(|| d.initial_context.clone()),
        steps: patch.steps.unwrap_or_else(|| d.steps.clone()),
        output_template: patch
            .output_template
            .unwrap_or_else(|| d.output_template.clone()),
        token_budget: patch.token_budget.unwrap_or(d.token_budget),
        max_recursion_depth: patch.max_recursion_depth.unwrap_or(d.max_recursion_depth),
        quota: patch.quota.unwrap_or(d.quota),
        enabled: patch.enabled.unwrap_or(current.enabled),
        shared: patch.shared.unwrap_or(current.shared),
    })
}

/// The result of an update: the Process, and whether it made a new version (PROC-9).
pub struct Update {
    pub process: Process,
    pub new_version: bool,
}

pub fn decide_update(
    current: &Process,
    input: NewProcess,
    targets: &Targets,
    now: &str,
) -> Result<Checked<Update>, Error> {
    if input.id.as_ref().is_some_and(|id| *id != current.id) {
        return Err(Error::invariant("PROC-9", "/id", "a Process keeps its id"));
    }
    check_name(&input.name)?;
    let definition = input.definition();
    let new_version = definition != current.definition;
    if new_version {
        definition.check(&current.owner_id, targets)?;
    }
    let mut next = current.clone();
    next.name = input.name;
    next.description = input.description;
    next.enabled = input.enabled;
    next.shared = input.shared;
    if new_version {
        next.definition = definition;
        next.version += 1;
    }
    if next != *current {
        next.updated_at = now.to_owned();
        next.revision += 1;
    }
    Ok(Checked::new(Update {
        process: next,
        new_version,
    }))
}

#[cfg(test)]
mod tests;

/// AGT-1 / AGT-2: an agent step's model is an `llm_call` Tool, it is given a `message`, and
/// every tool it may call exists and is usable by the Process owner (the policy gate decides
/// per run what the model is actually offered).
fn check_agent(
    path: &str,
    step: &Step,
    model_operation: crate::OperationType,
    owner: &Id,
    targets: &Targets,
    v: &mut Violations,
) {
    if model_operation != crate::OperationType::LlmCall {
        v.rule(
            "AGT-1",
            format!("{path}/tool"),
            format!("an agent step's model must be an llm_call Tool, not {model_operation}"),
        );
    }
    if step.process.is_some() {
        v.rule(
            "AGT-1",
            format!("{path}/process"),
            "an agent step calls a model Tool, not a Process",
        );
    }
    if !step.inputs.contains_key("message") {
        v.rule(
            "AGT-1",
            format!("{path}/inputs"),
            "an agent step needs a `message` input",
        );
    }
    if let Some(k) = step
        .inputs
        .keys()
        .find(|k| !matches!(k.as_str(), "message" | "memory" | "preferences"))
    {
        v.rule(
            "AGT-1",
            format!("{path}/inputs/{k}"),
            "an agent step takes `message`, `memory` and `preferences`",
        );
    }
    let Some(agent) = &step.agent else { return };
    if let Some(router) = &agent.router {
        router.check(&format!("{path}/agent/router"), &agent.tools, v);
    }
    for tool in agent.approvals.keys() {
        if !agent.tools.contains(tool) {
            v.rule(
                "AGT-2",
                format!("{path}/agent/approvals/{tool}"),
                format!("`{tool}` is not one of the agent's tools"),
            );
        }
    }
    let mut seen = BTreeSet::new();
    for (k, id) in agent.tools.iter().enumerate() {
        let tool_path = format!("{path}/agent/tools/{k}");
        if !seen.insert(id) {
            v.rule("AGT-2", tool_path, format!("`{id}` is listed twice"));
            continue;
        }
        match targets.tools.get(id) {
            Some(Target::Tool {
                owner_id, shared, ..
            }) if owner_id == owner || *shared => {}
            _ => v.rule(
                "AGT-2",
                tool_path,
                format!("no tool `{id}` that the Process owner can use"),
            ),
        }
    }
}
