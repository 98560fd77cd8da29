//! Exactly one active engine across `aiden serve` instances.
//!
//! The instances compete for one `EngineLease` node in the graph. The holder renews it every
//! `ttl / 3`; the others try as often and take it over once it has run out, so a dead holder is
//! replaced within `ttl + ttl / 3` (then recovery re-dispatches what it left). A holder that has
//! not renewed for `2 * ttl / 3` stops its engine before anyone can take over: the last third of
//! the lease is the margin for a pass still in flight and for clock skew between hosts.

use std::time::Duration;

use aiden_graph::Graph;
use tokio::sync::watch;

#[derive(Clone)]
pub struct Lease {
    graph: Graph,
    holder: String,
    ttl: Duration,
}

impl Lease {
    pub fn new(graph: Graph, holder: impl Into<String>, ttl: Duration) -> Self {
        Self {
            graph,
            holder: holder.into(),
            ttl: ttl.max(Duration::from_millis(300)),
        }
    }

    fn every(&self) -> Duration {
        self.ttl / 3
    }

    /// One acquire-or-renew: the epoch when held (transient conflicts retried a few times).
    async fn try_hold(&self) -> Result<Option<i64>, aiden_graph::Error> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let now = chrono::Utc::now().timestamp_millis();
            let until = now + self.ttl.as_millis() as i64;
            match aiden_graph::lease::acquire(&self.graph, &self.holder, now, until).await {
                // Two instances creating the node at once: one meets the unique constraint.
                Err(e)
                    if (e.is_transient() || matches!(e, aiden_graph::Error::Constraint(_)))
                        && attempt < 3 =>
                {
                    tokio::time::sleep(Duration::from_millis(20 * attempt)).await;
                }
                other => return other,
            }
        }
    }

    /// Waits until this instance holds the lease; returns its epoch.
    pub async fn acquire(&self) -> i64 {
        let mut waiting_logged = false;
        loop {
            match self.try_hold().await {
                Ok(Some(epoch)) => {
                    tracing::info!(holder = %self.holder, epoch, "engine lease held: this instance drives runs");
                    return epoch;
                }
                Ok(None) if !waiting_logged => {
                    tracing::info!(holder = %self.holder, "engine lease held elsewhere: standing by");
                    waiting_logged = true;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "engine lease: graph unavailable"),
            }
            tokio::time::sleep(self.every()).await;
        }
    }

    /// Renews the lease until it is lost; then sets `lost` and returns.
    pub async fn keep(&self, lost: watch::Sender<bool>) {
        let mut renewed = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.every()).await;
            // A graph that does not answer counts as a failed renewal, not a wait.
            let tried = tokio::time::timeout(self.every(), self.try_hold()).await;
            match tried.unwrap_or(Err(aiden_graph::Error::Unavailable(
                "lease renewal timed out".into(),
            ))) {
                Ok(Some(_)) => renewed = tokio::time::Instant::now(),
                Ok(None) => {
                    tracing::warn!(holder = %self.holder, "engine lease taken over: stopping the engine");
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "engine lease not renewed");
                    if renewed.elapsed() >= self.ttl * 2 / 3 {
                        tracing::warn!("engine lease about to run out: stopping the engine");
                        break;
                    }
                }
            }
        }
        let _ = lost.send(true);
    }

    /// Gives the lease up (at shutdown), so a standby takes over at its next try.
    pub async fn release(&self) {
        let now = chrono::Utc::now().timestamp_millis();
        if let Err(e) = aiden_graph::lease::release(&self.graph, &self.holder, now).await {
            tracing::warn!(error = %e, "engine lease not released; it runs out by itself");
        }
    }
}
