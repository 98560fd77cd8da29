//! One executor per operation type, each behind [`crate::tool::Tool`].

pub mod graph_query;
pub mod http_status;
pub mod llm_call;
pub mod mcp_call;
pub mod provider;
pub mod recall;
pub mod rest_api;

use std::sync::Arc;

use aiden_domain::OperationType;

use crate::tool::Tool;

/// The executor for an operation type; `graph` is Aiden's own, which `recall` searches. A new
/// operation type does not compile until it has its arm here.
pub fn for_type(operation_type: OperationType, graph: &aiden_graph::Graph) -> Arc<dyn Tool> {
    match operation_type {
        OperationType::Recall => Arc::new(recall::Recall::new(graph.clone())),
        OperationType::GraphQuery => Arc::new(graph_query::GraphQuery::new()),
        OperationType::LlmCall => Arc::new(llm_call::LlmCall::new()),
        OperationType::RestApi => Arc::new(rest_api::RestApi::new()),
        OperationType::McpCall => Arc::new(mcp_call::McpCall::new()),
    }
}
