//! `recall` executor: the search `GET /v1/search` answers, over what the run's owner
//! owns (SRCH-2), so that agent loops and Processes (enrichment, introspection) can search.
//! Input `{q}` (a `conversationId` beside it narrows the search); the operation fixes `kinds`
//! and `limit`. The query is embedded
//! by the Tool's Service — the Graphiti service, whose `POST /embed` is the embedder content was
//! embedded with; unreachable, the search runs on words and the graph and says so.
//! Output: `{hits, signals, embedder?, warning?}`.
//!
//! Failure classes: a bad input (no `q`, SRCH-1) is `InvalidRequest`; the graph unreachable is
//! `ConnectionError`; any other graph failure `UpstreamError`.

use aiden_domain::knowledge::recall::check_search;
use aiden_domain::tool::Operation;
use aiden_recall::{search, Embedder};
use serde_json::Value;

use crate::tool::{FailureClass, Invocation, Telemetry, Tool, ToolFailure, ToolOutput};

pub struct Recall {
    graph: aiden_graph::Graph,
}

impl Recall {
    pub fn new(graph: aiden_graph::Graph) -> Self {
        Self { graph }
    }
}

#[async_trait::async_trait]
impl Tool for Recall {
    async fn call(&self, inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        let Operation::Recall { kinds, limit } = inv.operation else {
            return Err(ToolFailure::new(
                FailureClass::InvalidRequest,
                "not a recall operation",
            ));
        };
        let text = |k: &str| inv.input.get(k).and_then(Value::as_str);
        let s = check_search(text("q"), text("conversationId"), kinds.as_deref(), *limit)
            .map_err(|e| ToolFailure::new(FailureClass::InvalidRequest, e.to_string()))?;
        let embedder = inv.endpoint().map(Embedder::for_queries);
        let answer = tokio::time::timeout(
            inv.timeout,
            search(&self.graph, embedder.as_ref(), inv.owner_id, &s),
        )
        .await
        .map_err(|_| ToolFailure::new(FailureClass::Timeout, "search timed out"))?
        .map_err(|e| {
            let class = match &e {
                aiden_graph::Error::Unavailable(_) => FailureClass::ConnectionError,
                _ => FailureClass::UpstreamError,
            };
            ToolFailure::new(class, e.to_string())
        })?;
        let value = serde_json::to_value(&answer)
            .map_err(|e| ToolFailure::new(FailureClass::ToolError, e.to_string()))?;
        Ok(ToolOutput {
            value,
            telemetry: Telemetry::default(),
        })
    }
}
