//! A cluster's nodes in one setting: `AIDEN_AMQP_URIS` (else `AIDEN_AMQP_URI`) may list several
//! AMQP URIs, comma-separated. A connection goes to the first node that answers, starting with
//! the one that answered last, so a client whose node died moves to another at its next connect
//! (every client reconnects after a lost connection: the pools, the engine, the relays, the API).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lapin::{Connection, ConnectionProperties};

/// The node that answered last (an index into the list).
static LAST: AtomicUsize = AtomicUsize::new(0);
/// A node that does not answer within this is passed over.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The URIs of a setting, in order.
pub fn nodes(uris: &str) -> Vec<&str> {
    uris.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .collect()
}

/// The setting to connect with: `AIDEN_AMQP_URIS` when set and not empty, else `single`.
pub fn from_env(single: &str) -> String {
    std::env::var("AIDEN_AMQP_URIS")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| single.to_owned())
}

/// lapin on the caller's tokio runtime instead of its default executor and `async-io` reactor:
/// those are threads of their own, and every frame then crossed two more threads (a futex wake
/// and a context switch each, which cost most on a VM). Must be called within a tokio runtime.
fn on_this_runtime() -> ConnectionProperties {
    ConnectionProperties::default()
        .with_executor(tokio_executor_trait::Tokio::current())
        .with_reactor(tokio_reactor_trait::Tokio::current())
}

/// Connects to the first of `uris` that answers.
pub async fn connect_any(uris: &str) -> Result<Connection, lapin::Error> {
    let list = nodes(uris);
    if list.is_empty() {
        return Err(std::io::Error::other("no AMQP URI given").into());
    }
    let first = LAST.load(Ordering::Relaxed) % list.len();
    let mut failed = None;
    for i in 0..list.len() {
        let at = (first + i) % list.len();
        let attempt = Connection::connect(list[at], on_this_runtime());
        match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
            Ok(Ok(connection)) => {
                LAST.store(at, Ordering::Relaxed);
                return Ok(connection);
            }
            Ok(Err(e)) => failed = Some(e),
            Err(_) => failed = Some(std::io::Error::from(std::io::ErrorKind::TimedOut).into()),
        }
        if list.len() > 1 {
            tracing::warn!(node = at, "AMQP node did not answer; trying the next");
        }
    }
    Err(failed.expect("at least one node was tried"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_lists_its_nodes_in_order() {
        assert_eq!(
            nodes("amqp://a, amqp://b,,amqp://c "),
            ["amqp://a", "amqp://b", "amqp://c"]
        );
        assert_eq!(nodes("amqp://only"), ["amqp://only"]);
        assert!(nodes(" , ").is_empty());
    }

    /// Against the stack's broker (scripts/test.sh starts it): a dead node first in the list
    /// is passed over, and the next connection starts at the node that answered.
    #[tokio::test]
    async fn a_dead_node_is_passed_over_and_the_one_that_answered_is_tried_first() {
        let live = std::env::var("AIDEN_AMQP_URI")
            .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/aiden-test".into());
        let list = format!("amqp://guest:guest@127.0.0.1:1/%2f,{live}");
        let connection = connect_any(&list).await.expect("the live node");
        assert_eq!(LAST.load(Ordering::Relaxed), 1);
        let _ = connection.close(200, "test").await;
        let again = connect_any(&list).await.expect("the live node again");
        assert_eq!(
            LAST.load(Ordering::Relaxed),
            1,
            "started at the node that answered"
        );
        let _ = again.close(200, "test").await;
        assert!(connect_any("amqp://127.0.0.1:1/%2f").await.is_err());
    }
}
