//! The deterministic policy gate (AGT-3; docs/agents.md, "The pipeline"): which declared tools
//! the model is offered, and why each other one is not.

use serde::{Deserialize, Serialize};

use super::{router, AgentTool};

/// Who asks, for the gate.
#[derive(Debug, Clone)]
pub struct Caller<'a> {
    pub id: &'a str,
    pub is_admin: bool,
}

/// The gate's decision: what the model is offered, and what it is not (and why).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyDecision {
    pub allowed: Vec<AgentTool>,
    pub forbidden: Vec<Forbidden>,
}

impl PolicyDecision {
    /// The permissions the offer requires: the capabilities the allowed tools need approved
    /// (AGT-9), each once.
    pub fn capabilities(&self) -> Vec<String> {
        let mut caps: Vec<String> = self
            .allowed
            .iter()
            .filter_map(|t| t.capability.clone())
            .collect();
        caps.sort();
        caps.dedup();
        caps
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Forbidden {
    pub tool_id: String,
    pub reason: String,
}

/// The gate (AGT-3): a pure function of the caller, the step's declared tools and, when the
/// step has a router, the intent it chose. A tool is allowed when it is enabled (PROC-8), the
/// caller may use it (TOOL-3: their own or shared) and the intent names it (AGT-15);
/// everything else is forbidden with the rule that says why.
pub fn gate(
    caller: &Caller<'_>,
    declared: &[AgentTool],
    intent: Option<&router::Intent>,
) -> PolicyDecision {
    let mut allowed = Vec::new();
    let mut forbidden = Vec::new();
    for tool in declared {
        let reason = if !tool.enabled {
            Some("PROC-8: the tool is disabled".to_owned())
        } else if !(tool.shared || tool.owner_id == caller.id || caller.is_admin) {
            Some("TOOL-3: the tool is not visible to the run's owner".to_owned())
        } else if tool
            .secret_owner_id
            .as_deref()
            .is_some_and(|o| o != caller.id)
            && !tool.caller_connected
        {
            Some(
                "SEC-6: the tool uses its owner's Secret and the run's owner has not connected \
                 their own"
                    .to_owned(),
            )
        } else {
            intent.and_then(|i| intent_forbids(i, tool))
        };
        match reason {
            Some(reason) => forbidden.push(Forbidden {
                tool_id: tool.id.clone(),
                reason,
            }),
            None => allowed.push(tool.clone()),
        }
    }
    PolicyDecision { allowed, forbidden }
}

/// AGT-15: why `intent` forbids `tool`, if it does.
pub(super) fn intent_forbids(intent: &router::Intent, tool: &AgentTool) -> Option<String> {
    (!intent.tools.iter().any(|t| t.as_str() == tool.id))
        .then(|| format!("AGT-15: intent `{}` does not use this tool", intent.name))
}
