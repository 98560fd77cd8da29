//! The operation types (EXEC-1): what a Tool's `operation.type` names, and for each one RabbitMQ
//! queue (`aiden.jobs.<type>`), one worker pool (`aiden worker --type <type>`) and one executor
//! (`workers/src/executors/<type>.rs`). A new tool type is one arm here, its `Operation` variant
//! and one executor file (ARCHITECTURE.md, "Add a tool type"); everything that lists the types
//! — the broker topology, the pools `scripts/run.sh` starts, compose.yaml's check, WRK-1's audit
//! — reads [`OperationType::ALL`] (the CLI prints it: `aiden operation-types`).

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OperationType {
    /// A Cypher statement on a Neo4j Service.
    GraphQuery,
    /// A model call on an LLM provider (OpenAI- or Anthropic-wire).
    LlmCall,
    /// An HTTP call on a REST Service.
    RestApi,
    /// A tool of an MCP server.
    McpCall,
    /// A search of what the run's owner knows.
    Recall,
}

impl OperationType {
    pub const ALL: [OperationType; 5] = [
        OperationType::GraphQuery,
        OperationType::LlmCall,
        OperationType::RestApi,
        OperationType::McpCall,
        OperationType::Recall,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OperationType::GraphQuery => "graph_query",
            OperationType::LlmCall => "llm_call",
            OperationType::RestApi => "rest_api",
            OperationType::McpCall => "mcp_call",
            OperationType::Recall => "recall",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Every type's name, in [`OperationType::ALL`]'s order.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.map(Self::as_str).to_vec()
    }
}

impl fmt::Display for OperationType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for OperationType {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_1_each_operation_type_has_one_name_on_the_wire() {
        for t in OperationType::ALL {
            assert_eq!(OperationType::parse(t.as_str()), Some(t));
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        assert_eq!(OperationType::parse("episode"), None);
        assert_eq!(OperationType::names().len(), OperationType::ALL.len());
    }
}
