//! `rest_api` executor (placeholder until implemented).

use crate::tool::{FailureClass, Invocation, Tool, ToolFailure, ToolOutput};

#[derive(Default)]
pub struct RestApi;

impl RestApi {
    pub fn new() -> Self {
        Self
    }
}

#[async_trait::async_trait]
impl Tool for RestApi {
    async fn call(&self, _inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        Err(ToolFailure::new(FailureClass::InvalidRequest, "rest_api executor not implemented"))
    }
}
