//! The RabbitMQ topology, declared idempotently by every binary (EXEC-1, EXEC-4):
//!
//! - `aiden.jobs` (direct) → `aiden.jobs.<type>`: one durable queue per operation type, each
//!   dead-lettering to `aiden.dlx` → `aiden.dlq.<type>`.
//! - `aiden.retry` (direct) → `aiden.retry.<type>.<delayMs>`: delay queues whose TTL expiry
//!   dead-letters the job back to `aiden.jobs` (exponential backoff without a plugin).
//! - `aiden.engine`: the engine's queue (single active consumer: one engine drives runs).
//! - `aiden.control` (fanout): cancellations broadcast to every worker.
//!
//! Messages are persistent and every publish waits for the broker's confirm.

use lapin::{
    options::{
        BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions,
        QueueDeclareOptions,
    },
    publisher_confirm::Confirmation,
    types::{AMQPValue, FieldTable, LongString, ShortString},
    BasicProperties, Channel, Connection, ExchangeKind,
};
use serde::Serialize;

use crate::episodes::{
    episode_dead_letter_queue, episode_queue, shard_of, IngestMessage, EPISODE_DEAD_LETTER_KEY,
    EPISODE_EXCHANGE, SHARDS,
};
use crate::{EngineMessage, Job, StepDelta};

/// One job queue, dead-letter queue and worker pool per operation type (EXEC-1).
pub use aiden_domain::OperationType;
pub const JOBS_EXCHANGE: &str = "aiden.jobs";
pub const DEAD_LETTER_EXCHANGE: &str = "aiden.dlx";
pub const RETRY_EXCHANGE: &str = "aiden.retry";
pub const CONTROL_EXCHANGE: &str = "aiden.control";
pub const ENGINE_QUEUE: &str = "aiden.engine";
/// Streamed model text (`StepDelta`): a fanout every `aiden serve` binds a private queue to.
pub const DELTAS_EXCHANGE: &str = "aiden.deltas";
/// AMQP headers that let a worker attribute a message whose body it cannot decode.
pub const RUN_HEADER: &str = "x-aiden-run-id";
pub const STEP_RUN_HEADER: &str = "x-aiden-step-run-id";
pub const REASON_HEADER: &str = "x-aiden-reason";
/// Control messages carry their kind as the AMQP `type` property (none means a cancel).
pub const CONTROL_CANCEL: &str = "cancel";
pub const CONTROL_CATALOG_CHANGED: &str = "catalog_changed";

pub fn job_queue(operation_type: &str) -> String {
    format!("aiden.jobs.{operation_type}")
}

pub fn dead_letter_queue(operation_type: &str) -> String {
    format!("aiden.dlq.{operation_type}")
}

pub fn retry_queue(operation_type: &str, delay_ms: u64) -> String {
    format!("aiden.retry.{operation_type}.{delay_ms}")
}

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("broker: {0}")]
    Amqp(#[from] lapin::Error),
    #[error("broker refused the message (nack)")]
    Nacked,
    #[error("encode: {0}")]
    Encode(#[from] serde_json::Error),
}

/// Retries of retryable failures (EXEC-4), by default 3 attempts, 1 s initial delay, ×2, capped
/// at 30 s. Overridable by `AIDEN_RETRY_MAX_ATTEMPTS`, `AIDEN_RETRY_INITIAL_DELAY_MS`,
/// `AIDEN_RETRY_MAX_DELAY_MS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub initial_delay_ms: u64,
    pub max_delay_ms: u64,
    pub backoff_multiplier: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_delay_ms: 1_000,
            max_delay_ms: 30_000,
            backoff_multiplier: 2,
        }
    }
}

impl RetryPolicy {
    pub fn from_env() -> Self {
        let d = Self::default();
        let var = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        Self {
            max_attempts: var("AIDEN_RETRY_MAX_ATTEMPTS", d.max_attempts.into()).max(1) as u32,
            initial_delay_ms: var("AIDEN_RETRY_INITIAL_DELAY_MS", d.initial_delay_ms).max(1),
            max_delay_ms: var("AIDEN_RETRY_MAX_DELAY_MS", d.max_delay_ms).max(1),
            backoff_multiplier: d.backoff_multiplier,
        }
    }

    /// Delay before attempt `failed_attempt + 1`.
    pub fn delay_after(&self, failed_attempt: u32) -> u64 {
        let exp = failed_attempt.saturating_sub(1).min(30);
        self.initial_delay_ms
            .saturating_mul(self.backoff_multiplier.saturating_pow(exp))
            .min(self.max_delay_ms)
    }
}

/// One AMQP connection plus a confirm-mode publishing channel.
#[derive(Clone)]
pub struct Broker {
    connection: std::sync::Arc<Connection>,
    publisher: Channel,
    queue_type: QueueType,
}

impl Broker {
    /// Connects and declares the whole topology (idempotent).
    pub async fn connect(uri: &str) -> Result<Self, BrokerError> {
        Self::connect_with(uri, QueueType::from_env()).await
    }

    /// Connects and declares the topology with queues of `queue_type`.
    pub async fn connect_with(uri: &str, queue_type: QueueType) -> Result<Self, BrokerError> {
        let connection = crate::nodes::connect_any(uri).await?;
        let publisher = connection.create_channel().await?;
        publisher
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        let broker = Self {
            connection: std::sync::Arc::new(connection),
            publisher,
            queue_type,
        };
        broker.declare().await?;
        Ok(broker)
    }

    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    pub fn is_connected(&self) -> bool {
        self.connection.status().connected() && self.publisher.status().connected()
    }

    pub async fn declare(&self) -> Result<(), BrokerError> {
        let ch = &self.publisher;
        let durable = ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        };
        for (name, kind) in [
            (JOBS_EXCHANGE, ExchangeKind::Direct),
            (DEAD_LETTER_EXCHANGE, ExchangeKind::Direct),
            (RETRY_EXCHANGE, ExchangeKind::Direct),
            (CONTROL_EXCHANGE, ExchangeKind::Fanout),
            (EPISODE_EXCHANGE, ExchangeKind::Direct),
            (DELTAS_EXCHANGE, ExchangeKind::Fanout),
        ] {
            ch.exchange_declare(name, kind, durable, FieldTable::default())
                .await?;
        }
        for ty in OperationType::ALL.map(OperationType::as_str) {
            let mut args = FieldTable::default();
            args.insert("x-dead-letter-exchange".into(), text(DEAD_LETTER_EXCHANGE));
            args.insert("x-dead-letter-routing-key".into(), text(ty));
            declare_bound(ch, self.queue_type, &job_queue(ty), JOBS_EXCHANGE, ty, args).await?;
            declare_bound(
                ch,
                self.queue_type,
                &dead_letter_queue(ty),
                DEAD_LETTER_EXCHANGE,
                ty,
                FieldTable::default(),
            )
            .await?;
        }
        let mut args = FieldTable::default();
        args.insert("x-single-active-consumer".into(), AMQPValue::Boolean(true));
        ch.queue_declare(ENGINE_QUEUE, durable_queue(), self.queue_type.apply(args))
            .await?;
        for shard in 0..SHARDS {
            let mut args = FieldTable::default();
            args.insert("x-single-active-consumer".into(), AMQPValue::Boolean(true));
            args.insert("x-dead-letter-exchange".into(), text(DEAD_LETTER_EXCHANGE));
            args.insert(
                "x-dead-letter-routing-key".into(),
                text(EPISODE_DEAD_LETTER_KEY),
            );
            let queue = episode_queue(shard);
            declare_bound(ch, self.queue_type, &queue, EPISODE_EXCHANGE, &queue, args).await?;
        }
        declare_bound(
            ch,
            self.queue_type,
            &episode_dead_letter_queue(),
            DEAD_LETTER_EXCHANGE,
            EPISODE_DEAD_LETTER_KEY,
            FieldTable::default(),
        )
        .await?;
        Ok(())
    }

    /// Hands outbox items to their conversations' shards: every publish first, then every
    /// confirm (the relay marks them published only after this returns `Ok`). Order within a
    /// shard is the order given.
    pub async fn publish_ingest(&self, messages: &[IngestMessage]) -> Result<(), BrokerError> {
        let mut pending = Vec::with_capacity(messages.len());
        for m in messages {
            let props = BasicProperties::default()
                .with_delivery_mode(2)
                .with_content_type("application/json".into())
                .with_message_id(m.id.as_str().into());
            let queue = episode_queue(shard_of(&m.conversation_id));
            let bytes = serde_json::to_vec(m)?;
            pending.push(
                self.publisher
                    .basic_publish(
                        EPISODE_EXCHANGE,
                        &queue,
                        BasicPublishOptions::default(),
                        &bytes,
                        props,
                    )
                    .await?,
            );
        }
        for confirm in pending {
            if let Confirmation::Nack(_) = confirm.await? {
                return Err(BrokerError::Nacked);
            }
        }
        Ok(())
    }

    /// Parks an ingestion message in `aiden.dlq.episode` with the reason.
    pub async fn dead_letter_ingest(&self, body: &[u8], reason: &str) -> Result<(), BrokerError> {
        self.publish_dead_letter(EPISODE_DEAD_LETTER_KEY, body, FieldTable::default(), reason)
            .await
    }

    /// Every queue of the topology with its ready messages and consumers (passive declares on a
    /// channel of their own), for the queue-depth gauges.
    pub async fn queue_depths(&self) -> Result<Vec<(String, u32, u32)>, BrokerError> {
        let mut names = vec![ENGINE_QUEUE.to_owned(), episode_dead_letter_queue()];
        for ty in OperationType::ALL.map(OperationType::as_str) {
            names.push(job_queue(ty));
            names.push(dead_letter_queue(ty));
        }
        names.extend((0..SHARDS).map(episode_queue));
        let ch = self.connection.create_channel().await?;
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let q = ch
                .queue_declare(
                    &name,
                    QueueDeclareOptions {
                        passive: true,
                        ..Default::default()
                    },
                    FieldTable::default(),
                )
                .await?;
            out.push((name, q.message_count(), q.consumer_count()));
        }
        let _ = ch.close(200, "done").await;
        Ok(out)
    }

    /// Declares (idempotently) the delay queue for `delay_ms` of one type.
    async fn declare_retry_queue(&self, ty: &str, delay_ms: u64) -> Result<String, BrokerError> {
        let name = retry_queue(ty, delay_ms);
        let mut args = FieldTable::default();
        args.insert(
            "x-message-ttl".into(),
            AMQPValue::LongLongInt(delay_ms as i64),
        );
        args.insert("x-dead-letter-exchange".into(), text(JOBS_EXCHANGE));
        args.insert("x-dead-letter-routing-key".into(), text(ty));
        declare_bound(
            &self.publisher,
            self.queue_type,
            &name,
            RETRY_EXCHANGE,
            &name,
            args,
        )
        .await?;
        Ok(name)
    }

    pub async fn publish_job(&self, job: &Job) -> Result<(), BrokerError> {
        let props = job_properties(job);
        self.publish(JOBS_EXCHANGE, job.operation_type.as_str(), job, props)
            .await
    }

    /// Publishes a job without waiting for the broker's confirm (which for a persistent
    /// message comes after RabbitMQ's batched fsync, ~1-3 ms). For callers whose state in
    /// the graph already records the job as queued and re-publishes it on recovery: a job
    /// the broker loses costs a delay, never a step.
    pub async fn publish_job_unconfirmed(&self, job: &Job) -> Result<(), BrokerError> {
        let bytes = serde_json::to_vec(job)?;
        let confirm = self
            .publisher
            .basic_publish(
                JOBS_EXCHANGE,
                job.operation_type.as_str(),
                BasicPublishOptions::default(),
                &bytes,
                job_properties(job),
            )
            .await?;
        metrics::counter!("aiden_broker_unconfirmed_total", "exchange" => JOBS_EXCHANGE)
            .increment(1);
        let step = job.step_run_id.clone();
        tokio::spawn(async move {
            match confirm.await {
                Ok(Confirmation::Nack(_)) | Err(_) => {
                    tracing::warn!(
                        step,
                        "broker did not confirm a job; recovery re-publishes it"
                    )
                }
                _ => {}
            }
        });
        Ok(())
    }

    /// Re-publishes `job` (already carrying its next attempt) after `delay_ms`.
    pub async fn publish_retry(&self, job: &Job, delay_ms: u64) -> Result<(), BrokerError> {
        let queue = self
            .declare_retry_queue(job.operation_type.as_str(), delay_ms)
            .await?;
        self.publish(RETRY_EXCHANGE, &queue, job, job_properties(job))
            .await
    }

    /// Parks a job (or an undecodable body) in its type's dead-letter queue with the reason.
    pub async fn publish_dead_letter(
        &self,
        operation_type: &str,
        body: &[u8],
        mut headers: FieldTable,
        reason: &str,
    ) -> Result<(), BrokerError> {
        headers.insert(REASON_HEADER.into(), text(reason));
        let props = BasicProperties::default()
            .with_delivery_mode(2)
            .with_content_type("application/json".into())
            .with_headers(headers);
        self.publish_bytes(DEAD_LETTER_EXCHANGE, operation_type, body, props)
            .await
    }

    pub async fn publish_engine(&self, message: &EngineMessage) -> Result<(), BrokerError> {
        let props = BasicProperties::default()
            .with_delivery_mode(2)
            .with_content_type("application/json".into());
        self.publish("", ENGINE_QUEUE, message, props).await
    }

    /// Like [`Broker::publish_engine`] without waiting for the confirm, for messages whose loss
    /// the engine's sweep repairs (a run start: the sweep finds queued runs within seconds).
    pub async fn publish_engine_unconfirmed(
        &self,
        message: &EngineMessage,
    ) -> Result<(), BrokerError> {
        let bytes = serde_json::to_vec(message)?;
        let props = BasicProperties::default()
            .with_delivery_mode(2)
            .with_content_type("application/json".into());
        let confirm = self
            .publisher
            .basic_publish(
                "",
                ENGINE_QUEUE,
                BasicPublishOptions::default(),
                &bytes,
                props,
            )
            .await?;
        metrics::counter!("aiden_broker_unconfirmed_total", "exchange" => "default").increment(1);
        tokio::spawn(async move {
            if !matches!(confirm.await, Ok(Confirmation::Ack(_))) {
                tracing::warn!("broker did not confirm an engine message; the sweep repairs it");
            }
        });
        Ok(())
    }

    /// A streamed piece of a model turn (best effort: transient, unconfirmed; a lost delta only
    /// thins the live view, the final text is recorded with the step).
    pub async fn publish_delta(&self, delta: &StepDelta) -> Result<(), BrokerError> {
        let bytes = serde_json::to_vec(delta)?;
        let _unconfirmed = self
            .publisher
            .basic_publish(
                DELTAS_EXCHANGE,
                "",
                BasicPublishOptions::default(),
                &bytes,
                BasicProperties::default().with_content_type("application/json".into()),
            )
            .await?;
        Ok(())
    }

    /// Tells every worker that `run_id` was canceled (best effort; workers also check).
    pub async fn broadcast_cancel(&self, run_id: &str) -> Result<(), BrokerError> {
        self.publish_bytes(
            CONTROL_EXCHANGE,
            "",
            run_id.as_bytes(),
            BasicProperties::default().with_type(CONTROL_CANCEL.into()),
        )
        .await
    }

    /// Tells every worker that a Tool, Service or Secret changed, so cached resolutions are
    /// re-read before the next job uses them. Confirmed: the caller answers only after the
    /// broker has routed it, ahead of any job started afterwards.
    pub async fn broadcast_catalog_changed(&self) -> Result<(), BrokerError> {
        self.publish_bytes(
            CONTROL_EXCHANGE,
            "",
            b"",
            BasicProperties::default().with_type(CONTROL_CATALOG_CHANGED.into()),
        )
        .await
    }

    async fn publish<T: Serialize>(
        &self,
        exchange: &str,
        routing_key: &str,
        body: &T,
        props: BasicProperties,
    ) -> Result<(), BrokerError> {
        let bytes = serde_json::to_vec(body)?;
        self.publish_bytes(exchange, routing_key, &bytes, props)
            .await
    }

    async fn publish_bytes(
        &self,
        exchange: &str,
        routing_key: &str,
        body: &[u8],
        props: BasicProperties,
    ) -> Result<(), BrokerError> {
        let clock = std::time::Instant::now();
        let outcome = self
            .publish_confirmed(exchange, routing_key, body, props)
            .await;
        let label = if exchange.is_empty() {
            "default"
        } else {
            exchange
        };
        metrics::histogram!("aiden_broker_publish_seconds", "exchange" => label.to_owned())
            .record(clock.elapsed().as_secs_f64());
        outcome
    }

    async fn publish_confirmed(
        &self,
        exchange: &str,
        routing_key: &str,
        body: &[u8],
        props: BasicProperties,
    ) -> Result<(), BrokerError> {
        let confirm = self
            .publisher
            .basic_publish(
                exchange,
                routing_key,
                BasicPublishOptions::default(),
                body,
                props,
            )
            .await?
            .await?;
        match confirm {
            Confirmation::Nack(_) => Err(BrokerError::Nacked),
            _ => Ok(()),
        }
    }
}

fn job_properties(job: &Job) -> BasicProperties {
    let mut headers = FieldTable::default();
    headers.insert(RUN_HEADER.into(), text(&job.run_id));
    headers.insert(STEP_RUN_HEADER.into(), text(&job.step_run_id));
    BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_message_id(job.message_id().into())
        .with_headers(headers)
}

/// The type of every durable queue of the topology: `AIDEN_QUEUE_TYPE`, `classic` (the
/// default) or `quorum` (replicated by Raft across a RabbitMQ cluster, so an acknowledged message
/// survives the loss of a node). A broker refuses to redeclare a queue as another type, so
/// switching needs the queues drained and deleted first (docs/deploy.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueType {
    #[default]
    Classic,
    Quorum,
}

impl QueueType {
    pub fn from_env() -> Self {
        match std::env::var("AIDEN_QUEUE_TYPE").as_deref() {
            Ok("quorum") => Self::Quorum,
            Ok("classic") | Err(_) => Self::Classic,
            Ok(other) => {
                tracing::warn!(
                    value = other,
                    "AIDEN_QUEUE_TYPE is classic or quorum; using classic"
                );
                Self::Classic
            }
        }
    }

    /// Classic queues are declared without the argument, as they always were: a broker may
    /// refuse to redeclare an existing queue with an argument it was created without.
    fn apply(self, mut args: FieldTable) -> FieldTable {
        if self == Self::Quorum {
            args.insert("x-queue-type".into(), text("quorum"));
        }
        args
    }
}

fn durable_queue() -> QueueDeclareOptions {
    QueueDeclareOptions {
        durable: true,
        ..Default::default()
    }
}

async fn declare_bound(
    ch: &Channel,
    queue_type: QueueType,
    queue: &str,
    exchange: &str,
    routing_key: &str,
    args: FieldTable,
) -> Result<(), BrokerError> {
    ch.queue_declare(queue, durable_queue(), queue_type.apply(args))
        .await?;
    ch.queue_bind(
        queue,
        exchange,
        routing_key,
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await?;
    Ok(())
}

pub fn text(value: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(value.as_bytes().to_vec()))
}

/// A string header of a delivery, if present.
pub fn header(headers: Option<&FieldTable>, name: &str) -> Option<String> {
    let value = headers?.inner().get(&ShortString::from(name))?;
    match value {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy::default();
        assert_eq!(
            [1, 2, 3, 6, 7].map(|a| p.delay_after(a)),
            [1000, 2000, 4000, 30000, 30000]
        );
    }
}
