//! `aiden worker --type episode`: consumes the ingestion shards (`aiden.episodes.<n>`, one
//! active consumer each, so one process at a time owns a shard's conversations) and runs each
//! conversation's items strictly in delivery order on a lane of its own, conversations in
//! parallel up to the concurrency. An item is acked only when its binding is final — recorded
//! in the graph — or dead-lettered with its reason; a SIGKILL anywhere means a redelivery,
//! which converges (see `ingest.rs`).
//!
//! Retries happen in place, holding the lane: Graphiti requires one add at a time per group,
//! and a later Turn must not be extracted before an earlier one. While Graphiti or the graph is
//! unreachable an item waits without limit (nothing is wrong with it); any other failure is
//! retried [`MAX_ATTEMPTS`] times with backoff, then the binding is `failed` and the message
//! goes to `aiden.dlq.episode` — so a poison item never blocks its conversation for long.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aiden_graph::knowledge::{self as kg, TargetKind};
use aiden_jobs::episodes::{episode_queue, SHARDS};
use aiden_jobs::{Broker, IngestMessage};
use futures::StreamExt;
use lapin::{
    message::Delivery,
    options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions},
    types::FieldTable,
};
use tokio::sync::{mpsc, Mutex, Semaphore};

use super::ingest::{Ingestor, Interrupted, Outcome};

pub const MAX_ATTEMPTS: u32 = 5;
const BACKOFF_START: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(30);
/// While waiting for an unreachable Graphiti, look this often at most (it binds soon after it
/// is back).
const WAIT_CAP: Duration = Duration::from_secs(5);
/// A lane with nothing to do for this long goes away.
const LANE_IDLE: Duration = Duration::from_secs(30);

pub struct EpisodePoolConfig {
    pub amqp_uri: String,
    pub graph: aiden_graph::Graph,
    pub graphiti_url: String,
    /// Conversations processed at once.
    pub concurrency: usize,
    /// How long one extraction may take (an LLM call chain).
    pub extract_timeout: Duration,
}

/// A delivery and its decoded message (decoded once, on arrival).
type Item = (Delivery, IngestMessage);

struct Shared {
    ingestor: Ingestor,
    permits: Semaphore,
    lanes: Mutex<HashMap<String, mpsc::UnboundedSender<Item>>>,
}

/// Runs until the process ends, reconnecting after the broker goes away.
pub async fn run(config: EpisodePoolConfig) -> anyhow::Result<()> {
    let shared = Arc::new(Shared {
        ingestor: Ingestor {
            graph: config.graph.clone(),
            graphiti: super::graphiti::Graphiti::new(&config.graphiti_url, config.extract_timeout),
            embedder: aiden_recall::Embedder::new(&config.graphiti_url),
        },
        permits: Semaphore::new(config.concurrency.max(1)),
        lanes: Mutex::new(HashMap::new()),
    });
    tokio::spawn(super::backfill::run(
        config.graph.clone(),
        aiden_recall::Embedder::new(&config.graphiti_url),
    ));
    loop {
        if let Err(e) = session(&shared, &config).await {
            tracing::warn!(error = %e, "episode worker session ended; reconnecting");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn session(shared: &Arc<Shared>, config: &EpisodePoolConfig) -> anyhow::Result<()> {
    let broker = Broker::connect(&config.amqp_uri).await?;
    let channel = broker.connection().create_channel().await?;
    // Per consumer: enough for many conversations of a shard to be in flight at once.
    channel.basic_qos(64, BasicQosOptions::default()).await?;
    let tag = format!("episode-{}", std::process::id());
    let mut streams = Vec::new();
    for shard in 0..SHARDS {
        streams.push(
            channel
                .basic_consume(
                    &episode_queue(shard),
                    &format!("{tag}-{shard}"),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await?,
        );
    }
    tracing::info!(shards = SHARDS, "episode worker consuming");
    let mut all = futures::stream::select_all(streams);
    while let Some(d) = all.next().await {
        let d = d?;
        dispatch(shared, &broker, d).await;
    }
    Ok(())
}

/// Hands a delivery to its conversation's lane (made on first use).
async fn dispatch(shared: &Arc<Shared>, broker: &Broker, d: Delivery) {
    let msg: IngestMessage = match serde_json::from_slice(&d.data) {
        Ok(m) => m,
        Err(e) => {
            let reason = format!("malformed ingestion message: {e}");
            tracing::warn!(%reason);
            let _ = broker.dead_letter_ingest(&d.data, &reason).await;
            let _ = d.acker.ack(BasicAckOptions::default()).await;
            return;
        }
    };
    let conversation = msg.conversation_id.clone();
    let mut lanes = shared.lanes.lock().await;
    let tx = lanes
        .entry(conversation.clone())
        .or_insert_with(|| spawn_lane(shared.clone(), broker.clone(), conversation.clone()));
    if let Err(mpsc::error::SendError(item)) = tx.send((d, msg)) {
        // The lane ended between lookups: start a new one.
        let tx = spawn_lane(shared.clone(), broker.clone(), conversation.clone());
        let _ = tx.send(item);
        lanes.insert(conversation, tx);
    }
}

fn spawn_lane(
    shared: Arc<Shared>,
    broker: Broker,
    conversation_id: String,
) -> mpsc::UnboundedSender<Item> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Item>();
    tokio::spawn(async move {
        loop {
            let (d, msg) = match tokio::time::timeout(LANE_IDLE, rx.recv()).await {
                Ok(Some(item)) => item,
                Ok(None) => return,
                Err(_) => {
                    let mut lanes = shared.lanes.lock().await;
                    if rx.is_empty() {
                        lanes.remove(&conversation_id);
                        return;
                    }
                    continue;
                }
            };
            let _permit = shared.permits.acquire().await;
            handle(&shared, &broker, d, msg).await;
        }
    });
    tx
}

/// Runs one item to a final state (or the dead-letter queue), then acks it.
async fn handle(shared: &Shared, broker: &Broker, d: Delivery, msg: IngestMessage) {
    let Some(kind) = TargetKind::parse(&msg.kind) else {
        let reason = format!("unknown ingestion kind `{}`", msg.kind);
        let _ = broker.dead_letter_ingest(&d.data, &reason).await;
        let _ = d.acker.ack(BasicAckOptions::default()).await;
        return;
    };
    let ingestor = &shared.ingestor;
    let mut failures = 0u32;
    let mut delay = BACKOFF_START;
    let poison = loop {
        match ingestor.run(kind, &msg.target_id, true).await {
            Ok(Outcome::Final(b)) => {
                tracing::debug!(id = %msg.id, binding = b.as_str(), "ingested");
                metrics::counter!("aiden_episode_bindings_total", "outcome" => b.as_str())
                    .increment(1);
                break None;
            }
            Ok(Outcome::Gone) => {
                // Content that is gone: nothing else would ever forget its outbox item.
                let _ = kg::outbox_done(&ingestor.graph, &msg.id).await;
                break Some("the alternative or summary does not exist".to_owned());
            }
            Ok(Outcome::Poison(reason)) => break Some(reason),
            Err(Interrupted::Wait(why)) => {
                tracing::info!(id = %msg.id, %why, "ingestion waiting for graphiti or the graph");
                tokio::time::sleep(delay.min(WAIT_CAP)).await;
                delay = (delay * 2).min(WAIT_CAP);
                continue;
            }
            Err(Interrupted::Retry(why)) => {
                failures += 1;
                tracing::warn!(id = %msg.id, attempt = failures, %why, "ingestion attempt failed");
                metrics::counter!("aiden_episode_retries_total").increment(1);
                if failures >= MAX_ATTEMPTS {
                    break Some(format!("gave up after {failures} attempts: {why}"));
                }
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(BACKOFF_CAP);
    };
    if let Some(reason) = poison {
        tracing::warn!(id = %msg.id, %reason, "ingestion failed; dead-lettered");
        metrics::counter!("aiden_episode_bindings_total", "outcome" => "failed").increment(1);
        // The failure is recorded before the ack: redelivered, it is final and acked at once.
        loop {
            match ingestor.give_up(kind, &msg.target_id, &reason).await {
                Ok(()) => break,
                Err(e) => {
                    tracing::warn!(error = ?e, "recording a failed binding; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
        let _ = broker.dead_letter_ingest(&d.data, &reason).await;
    }
    // Final or failed: the statement that made it so also deleted its outbox item.
    let _ = d.acker.ack(BasicAckOptions::default()).await;
}
