//! `graph_query` executor: the Tool's Cypher against its own Neo4j (or Bolt-compatible) target,
//! authenticated with the Tool's Secret as password, every top-level input key a parameter, in
//! a read or write transaction per `access`. Output: `{"rows": [{column: value}]}`.

use std::collections::HashMap;
use std::time::Duration;

use aiden_domain::tool::{Access, Operation};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use crate::tool::{FailureClass, Invocation, Telemetry, Tool, ToolFailure, ToolOutput};

#[derive(Default)]
pub struct GraphQuery {
    /// Connection pools per (endpoint, user, database, password digest): the plain password
    /// never becomes a map key.
    pools: Mutex<HashMap<(String, String, String, String), neo4rs::Graph>>,
}

impl GraphQuery {
    pub fn new() -> Self {
        Self::default()
    }

    async fn graph(&self, inv: &Invocation<'_>) -> Result<neo4rs::Graph, ToolFailure> {
        let endpoint = inv.endpoint().ok_or_else(|| {
            ToolFailure::new(FailureClass::InvalidRequest, "no endpoint configured")
        })?;
        let password = inv.secret.ok_or_else(|| {
            ToolFailure::new(
                FailureClass::AuthError,
                "graph_query needs a password Secret",
            )
        })?;
        let text = |k: &str, d: &str| {
            inv.connection
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or(d)
                .to_owned()
        };
        let (user, database) = (text("user", "neo4j"), text("database", "neo4j"));
        let digest = hex_digest(password.as_bytes());
        let key = (endpoint.to_owned(), user.clone(), database.clone(), digest);
        if let Some(g) = self.pools.lock().await.get(&key) {
            return Ok(g.clone());
        }
        let max = inv
            .connection
            .get("maxConnectionPoolSize")
            .and_then(Value::as_u64)
            .unwrap_or(16) as usize;
        let config = neo4rs::ConfigBuilder::default()
            .uri(endpoint)
            .user(user.as_str())
            .password(password.as_str())
            .db(database.as_str())
            .max_connections(max)
            .connection_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| ToolFailure::new(FailureClass::InvalidRequest, e.to_string()))?;
        let graph = neo4rs::Graph::connect(config).map_err(classify)?;
        self.pools.lock().await.insert(key, graph.clone());
        Ok(graph)
    }
}

fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Driver errors by class: Cypher mistakes are the Tool's fault (permanent), transient server
/// errors and broken connections are retryable, refused credentials are an auth error.
fn classify(e: neo4rs::Error) -> ToolFailure {
    let class = match &e {
        neo4rs::Error::Neo4j(n) if n.code().contains("TransientError") => {
            FailureClass::ConnectionError
        }
        neo4rs::Error::Neo4j(n) if n.code().contains("Security") => FailureClass::AuthError,
        neo4rs::Error::Neo4j(_) => FailureClass::InvalidRequest,
        neo4rs::Error::AuthenticationError(_) => FailureClass::AuthError,
        neo4rs::Error::ConnectionTimedOut => FailureClass::Timeout,
        neo4rs::Error::IOError { .. }
        | neo4rs::Error::ConnectionError
        | neo4rs::Error::ServerUnavailableError(_) => FailureClass::ConnectionError,
        _ => FailureClass::ToolError,
    };
    ToolFailure::new(class, e.to_string())
}

#[async_trait::async_trait]
impl Tool for GraphQuery {
    async fn call(&self, inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        let Operation::GraphQuery { query, access } = inv.operation else {
            return Err(ToolFailure::new(
                FailureClass::InvalidRequest,
                "not a graph_query operation",
            ));
        };
        let graph = self.graph(inv).await?;
        let mut q = neo4rs::query(query);
        if let Some(params) = inv.input.as_object() {
            for (name, value) in params {
                let bolt = neo4rs::BoltType::try_from(value.clone()).map_err(|e| {
                    ToolFailure::new(
                        FailureClass::InvalidRequest,
                        format!("parameter `{name}`: {e}"),
                    )
                })?;
                q = q.param(name, bolt);
            }
        }
        // An explicit transaction: the driver's auto-commit helpers retry internally, which
        // could run a write twice; retries are the pool's decision (EXEC-4). A read is rolled
        // back, so a "read" Tool can never change the graph. (Routing reads to followers needs
        // neo4rs's unstable API; a single server or the cluster leader serves both.)
        let work = async {
            let mut txn = graph.start_txn().await.map_err(classify)?;
            let mut stream = txn.execute(q).await.map_err(classify)?;
            let mut rows = Vec::new();
            while let Some(row) = stream.next(&mut txn).await.map_err(classify)? {
                let value: Value = row
                    .to()
                    .map_err(|e| ToolFailure::new(FailureClass::ToolError, format!("row: {e}")))?;
                rows.push(value);
            }
            match access {
                Access::Read => txn.rollback().await.map_err(classify)?,
                Access::Write => txn.commit().await.map_err(classify)?,
            }
            Ok::<_, ToolFailure>(rows)
        };
        let rows = tokio::time::timeout(inv.timeout, work)
            .await
            .map_err(|_| {
                ToolFailure::new(FailureClass::Timeout, "the query did not finish in time")
            })??;
        Ok(ToolOutput {
            value: json!({"rows": rows}),
            telemetry: Telemetry {
                provider: Some("neo4j".into()),
                ..Telemetry::default()
            },
        })
    }
}
