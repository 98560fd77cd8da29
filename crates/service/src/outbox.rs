//! The outbox relay (EPI-3): moves IngestItems — content recorded for Graphiti in the
//! transaction that made it — to RabbitMQ, confirmed, then marks them published. A crash
//! between commit and publish loses nothing (the item is still `new`); a crash between publish
//! and mark publishes it again, which the ingestion worker absorbs (bindings are idempotent).
//! Hosted by `aiden serve`; woken right after a commit that wrote items (this process's API
//! and engine both wake it), else it polls, for items another process wrote.

use std::sync::Arc;
use std::time::Duration;

use aiden_graph::knowledge::{self, OutboxItem};
use aiden_graph::Graph;
use aiden_jobs::{Broker, IngestMessage};
use tokio::sync::Notify;

/// Items per relay pass.
const BATCH: i64 = 500;
/// How often the relay looks without being woken: for items another process wrote (an engine
/// in another `aiden serve`, a migration's backfill). Every 100 ms would cost an idle server
/// ten statements a second.
const POLL: Duration = Duration::from_secs(1);
/// A published item not final after this long is published again.
const REPUBLISH_AFTER: chrono::Duration = chrono::Duration::minutes(5);
const STALE_SCAN_EVERY: Duration = Duration::from_secs(30);

pub struct Relay {
    graph: Graph,
    amqp_uri: String,
    wake: Arc<Notify>,
}

impl Relay {
    pub fn new(graph: Graph, amqp_uri: impl Into<String>, wake: Arc<Notify>) -> Self {
        Self {
            graph,
            amqp_uri: amqp_uri.into(),
            wake,
        }
    }

    /// Runs until the process ends, reconnecting to the broker and the graph as needed.
    pub async fn run(self) {
        let mut broker: Option<Broker> = None;
        let mut last_stale_scan = tokio::time::Instant::now();
        loop {
            let stale = last_stale_scan.elapsed() >= STALE_SCAN_EVERY;
            if stale {
                last_stale_scan = tokio::time::Instant::now();
            }
            match self.pass(&mut broker, stale).await {
                // A full batch: more may be waiting.
                Ok(n) if n as i64 >= BATCH => continue,
                Ok(_) => {}
                Err(e) => {
                    broker = None;
                    tracing::warn!(error = %e, "outbox relay pass failed; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
            }
        }
    }

    async fn pass(
        &self,
        broker: &mut Option<Broker>,
        stale: bool,
    ) -> Result<usize, Box<dyn std::error::Error + Send + Sync>> {
        let mut items = knowledge::outbox_new(&self.graph, BATCH).await?;
        if stale {
            let before = (chrono::Utc::now() - REPUBLISH_AFTER)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            items.extend(knowledge::outbox_stale(&self.graph, &before, BATCH).await?);
        }
        if items.is_empty() {
            return Ok(0);
        }
        let b = match broker {
            Some(b) if b.is_connected() => b.clone(),
            _ => {
                let b = Broker::connect(&self.amqp_uri).await?;
                *broker = Some(b.clone());
                b
            }
        };
        let messages: Vec<IngestMessage> = items.iter().map(message).collect();
        b.publish_ingest(&messages).await?;
        let ids = items.into_iter().map(|i| i.id).collect::<Vec<_>>();
        let n = ids.len();
        knowledge::outbox_mark_published(&self.graph, ids, &crate::now()).await?;
        metrics::counter!("aiden_outbox_published_total").increment(n as u64);
        tracing::debug!(items = n, "outbox relayed");
        Ok(n)
    }
}

fn message(i: &OutboxItem) -> IngestMessage {
    IngestMessage {
        v: aiden_jobs::episodes::INGEST_VERSION,
        id: i.id.clone(),
        kind: i.kind.clone(),
        target_id: i.target_id.clone(),
        conversation_id: i.conversation_id.clone(),
        created_at: i.created_at.clone(),
    }
}
