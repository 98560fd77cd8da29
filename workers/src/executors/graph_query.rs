//! `graph_query` executor (placeholder until implemented).

use crate::tool::{FailureClass, Invocation, Tool, ToolFailure, ToolOutput};

#[derive(Default)]
pub struct GraphQuery;

impl GraphQuery {
    pub fn new() -> Self {
        Self
    }
}

#[async_trait::async_trait]
impl Tool for GraphQuery {
    async fn call(&self, _inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        Err(ToolFailure::new(FailureClass::InvalidRequest, "graph_query executor not implemented"))
    }
}
