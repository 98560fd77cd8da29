//! Calling an executor directly through the `Tool` trait ([`Call`]), and what every executor
//! test checks around such a call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aiden_domain::service::Protocol;
use aiden_domain::tool::Operation;
use aiden_workers::tool::{Invocation, Tool, ToolFailure, ToolOutput};
use serde_json::Value;
use zeroize::Zeroizing;

pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{prefix}{}x{nanos}x{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// One call's owned inputs; [`Call::run`] lends them to an [`Invocation`].
pub struct Call {
    pub operation: Operation,
    pub connection: Value,
    pub service_endpoint: Option<String>,
    pub protocol: Protocol,
    pub secret: Option<Zeroizing<String>>,
    pub scope: Option<String>,
    pub input: Value,
    pub timeout: Duration,
}

impl Call {
    /// `operation` is the Tool's stored JSON form (`{"type": "rest_api", …}`).
    pub fn new(operation: Value, connection: Value, input: Value) -> Self {
        Self {
            operation: serde_json::from_value(operation).expect("a valid operation"),
            connection,
            service_endpoint: None,
            protocol: Protocol::Http,
            secret: None,
            scope: None,
            input,
            timeout: Duration::from_secs(10),
        }
    }

    pub fn secret(mut self, secret: &str) -> Self {
        self.secret = Some(Zeroizing::new(secret.to_owned()));
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub async fn run(&self, tool: &dyn Tool) -> Result<ToolOutput, ToolFailure> {
        let inv = Invocation {
            tool_id: "tool-under-test",
            owner_id: "owner-under-test",
            idempotency_key: Some("steprun-under-test"),
            operation: &self.operation,
            connection: &self.connection,
            service_endpoint: self.service_endpoint.as_deref(),
            protocol: self.protocol,
            secret: self.secret.as_ref(),
            secret_scope: self.scope.as_deref(),
            input: &self.input,
            timeout: self.timeout,
            agent_turn: false,
            deltas: None,
        };
        tool.call(&inv).await
    }

    pub async fn fail(&self, tool: &dyn Tool) -> ToolFailure {
        match self.run(tool).await {
            Ok(out) => panic!("expected a failure, got {:?}", out.value),
            Err(f) => f,
        }
    }
}

/// A local port nothing listens on.
pub async fn unused_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

pub fn assert_secret_absent(f: &ToolFailure, secrets: &[&str]) {
    for s in secrets {
        assert!(
            !f.message.contains(s),
            "the secret leaked into the failure: {}",
            f.message
        );
        assert!(!format!("{f:?}").contains(s), "the secret leaked: {f:?}");
    }
}
