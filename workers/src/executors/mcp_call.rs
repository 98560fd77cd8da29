//! `mcp_call` executor (placeholder until implemented).

use crate::tool::{FailureClass, Invocation, Tool, ToolFailure, ToolOutput};

#[derive(Default)]
pub struct McpCall;

impl McpCall {
    pub fn new() -> Self {
        Self
    }
}

#[async_trait::async_trait]
impl Tool for McpCall {
    async fn call(&self, _inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        Err(ToolFailure::new(
            FailureClass::InvalidRequest,
            "mcp_call executor not implemented",
        ))
    }
}
