//! `graph_query` executor: the Tool's Cypher against its own Neo4j (or Bolt-compatible) target,
//! authenticated with the Tool's Secret as password, every top-level input key a parameter, in
//! a read or write transaction per `access`. Output: `{"rows": [{column: value}]}`.
//!
//! Failure classes: refused or broken connections and `Neo.TransientError.*` are
//! `ConnectionError`, refused credentials (`Neo.ClientError.Security.*`, a failed HELLO) are
//! `AuthError`, any other `Neo.ClientError.*` (syntax, semantics, constraint violations) is
//! `InvalidRequest`, `Neo.DatabaseError.*` is `UpstreamError`, and a call that outlives
//! `inv.timeout` is `Timeout`.
//!
//! A timed-out *write* stays `Timeout` here although it may have committed on the server: the
//! executor cannot know, and whether to retry is the pool's decision (it never retries a
//! `graph_query` write that timed out).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aiden_domain::tool::{Access, Operation};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use super::http_status::redact;
use crate::tool::{FailureClass, Invocation, Telemetry, Tool, ToolFailure, ToolOutput};

/// How long the driver waits for a TCP connection or any single Bolt response. The per-call
/// deadline is `inv.timeout`, enforced around the whole call; this only bounds a stuck socket
/// of a pooled connection, so it must not cut a legitimately long query short (neo4rs uses the
/// same value for connecting and for every receive).
const SOCKET_TIMEOUT: Duration = Duration::from_secs(600);

/// How long credentials the server refused are refused here without asking it again. Bolt
/// servers lock a user out after repeated failures (Neo4j: `dbms.security.auth_max_failed_attempts`,
/// 3 by default, lock it for `dbms.security.auth_lock_time`),
/// and the user may be shared with other Tools or the engine: one Tool with a wrong password,
/// run in a loop, must not lock them all out.
const AUTH_BACKOFF: Duration = Duration::from_secs(60);

/// (endpoint, user, database, password digest): the plain password never becomes a map key.
type Key = (String, String, String, String);

#[derive(Default)]
pub struct GraphQuery {
    /// Connection pools per target and credentials.
    pools: Mutex<HashMap<Key, neo4rs::Graph>>,
    /// Credentials the server refused, and when.
    refused: std::sync::Mutex<HashMap<Key, Instant>>,
}

impl GraphQuery {
    pub fn new() -> Self {
        Self::default()
    }

    async fn graph(&self, inv: &Invocation<'_>) -> Result<(Key, neo4rs::Graph), ToolFailure> {
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
        if let Some(at) = self.refused.lock().unwrap().get(&key) {
            if at.elapsed() < AUTH_BACKOFF {
                return Err(ToolFailure::new(
                    FailureClass::AuthError,
                    format!(
                        "the server refused these credentials for user `{user}` less than {} s \
                         ago; not trying them again yet",
                        AUTH_BACKOFF.as_secs()
                    ),
                ));
            }
        }
        if let Some(g) = self.pools.lock().await.get(&key) {
            return Ok((key, g.clone()));
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
            .connection_timeout(SOCKET_TIMEOUT)
            .build()
            .map_err(|e| ToolFailure::new(FailureClass::InvalidRequest, e.to_string()))?;
        let graph = neo4rs::Graph::connect(config).map_err(classify)?;
        self.pools.lock().await.insert(key.clone(), graph.clone());
        Ok((key, graph))
    }
}

fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The server refused the credentials themselves (not one query's permissions).
fn is_login_failure(e: &neo4rs::Error) -> bool {
    use neo4rs::{Neo4jClientErrorKind as Client, Neo4jErrorKind as Kind};
    match e {
        neo4rs::Error::AuthenticationError(_) => true,
        neo4rs::Error::Neo4j(n) => matches!(
            n.kind(),
            Kind::Client(Client::Security(
                neo4rs::Neo4jSecurityErrorKind::Authentication
            ))
        ),
        _ => false,
    }
}

/// Driver errors by class: Cypher mistakes are the Tool's fault (permanent), transient server
/// errors and broken connections are retryable, refused credentials are an auth error.
fn classify(e: neo4rs::Error) -> ToolFailure {
    use neo4rs::{Neo4jClientErrorKind as Client, Neo4jErrorKind as Kind};
    let class = match &e {
        neo4rs::Error::Neo4j(n) => match n.kind() {
            Kind::Transient | Kind::Client(Client::SessionExpired) => FailureClass::ConnectionError,
            Kind::Client(Client::Security(_)) => FailureClass::AuthError,
            Kind::Client(_) => FailureClass::InvalidRequest,
            Kind::Database => FailureClass::UpstreamError,
            Kind::Unknown => FailureClass::ToolError,
        },
        neo4rs::Error::AuthenticationError(_) => FailureClass::AuthError,
        neo4rs::Error::ConnectionTimedOut => FailureClass::Timeout,
        neo4rs::Error::IOError { .. }
        | neo4rs::Error::ConnectionError
        | neo4rs::Error::IncompleteBoltExchange
        | neo4rs::Error::RequestIgnoredError
        | neo4rs::Error::ServerUnavailableError(_) => FailureClass::ConnectionError,
        neo4rs::Error::UrlParseError(_)
        | neo4rs::Error::UnsupportedScheme(_)
        | neo4rs::Error::InvalidDnsName(_)
        | neo4rs::Error::InvalidConfig => FailureClass::InvalidRequest,
        _ => FailureClass::ToolError,
    };
    ToolFailure::new(class, e.to_string())
}

#[async_trait::async_trait]
impl Tool for GraphQuery {
    async fn call(&self, inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        let password = inv.secret.map(|s| s.as_str());
        self.run(inv)
            .await
            .map_err(|failure| redact(failure, password))
    }
}

impl GraphQuery {
    /// One call. A timed-out write is still `Timeout` (see the module docs): whether it
    /// committed is unknown, and the pool, which knows the access mode, does not retry it.
    async fn run(&self, inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        let Operation::GraphQuery { query, access } = inv.operation else {
            return Err(ToolFailure::new(
                FailureClass::InvalidRequest,
                "not a graph_query operation",
            ));
        };
        let (key, graph) = self.graph(inv).await?;
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
        let login_refused = AtomicBool::new(false);
        let work = async {
            let mut txn = graph.start_txn().await.map_err(|e| {
                login_refused.store(is_login_failure(&e), Ordering::Relaxed);
                classify(e)
            })?;
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
        let rows = match tokio::time::timeout(inv.timeout, work).await {
            Err(_) => {
                return Err(ToolFailure::new(
                    FailureClass::Timeout,
                    "the query did not finish in time",
                ))
            }
            Ok(Err(f)) if login_refused.load(Ordering::Relaxed) => {
                self.pools.lock().await.remove(&key);
                self.refused.lock().unwrap().insert(key, Instant::now());
                return Err(f);
            }
            Ok(result) => result?,
        };
        Ok(ToolOutput {
            value: json!({"rows": rows}),
            telemetry: Telemetry {
                provider: Some("neo4j".into()),
                ..Telemetry::default()
            },
        })
    }
}
