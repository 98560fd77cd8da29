//! One executor per operation type, each behind [`crate::tool::Tool`].

pub mod graph_query;
pub mod http_status;
pub mod llm_agent;
pub mod llm_call;
pub mod mcp_call;
pub mod recall;
pub mod rest_api;

use std::sync::Arc;

use crate::tool::Tool;

/// The executor for an operation type (`graph_query`, `llm_call`, `rest_api`, `mcp_call`,
/// `recall`); `graph` is Aiden's own, which `recall` searches.
pub fn for_type(operation_type: &str, graph: &aiden_graph::Graph) -> Option<Arc<dyn Tool>> {
    Some(match operation_type {
        "recall" => Arc::new(recall::Recall::new(graph.clone())),
        "graph_query" => Arc::new(graph_query::GraphQuery::new()),
        "llm_call" => Arc::new(llm_call::LlmCall::new()),
        "rest_api" => Arc::new(rest_api::RestApi::new()),
        "mcp_call" => Arc::new(mcp_call::McpCall::new()),
        _ => return None,
    })
}
