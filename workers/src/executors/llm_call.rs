//! `llm_call` executor (placeholder until implemented).

use crate::tool::{FailureClass, Invocation, Tool, ToolFailure, ToolOutput};

#[derive(Default)]
pub struct LlmCall;

impl LlmCall {
    pub fn new() -> Self {
        Self
    }
}

#[async_trait::async_trait]
impl Tool for LlmCall {
    async fn call(&self, _inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        Err(ToolFailure::new(FailureClass::InvalidRequest, "llm_call executor not implemented"))
    }
}
