//! The deltas relay: every `aiden serve` binds a private queue to the deltas
//! fanout and hands each streamed piece of a model turn to its own live SSE streams. Nothing
//! is stored; a stream opened later sees the turn's final text in its `step.completed`.

use std::time::Duration;

use aiden_jobs::{Broker, StepDelta, DELTAS_EXCHANGE};
use futures::StreamExt;
use lapin::options::{BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;

use crate::Notifier;

/// Runs forever, reconnecting.
pub async fn relay_deltas(amqp_uri: String, notifier: Notifier) {
    loop {
        if let Err(e) = session(&amqp_uri, &notifier).await {
            tracing::debug!(error = %e, "deltas relay reconnecting");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn session(amqp_uri: &str, notifier: &Notifier) -> anyhow::Result<()> {
    let broker = Broker::connect(amqp_uri).await?;
    let ch = broker.connection().create_channel().await?;
    let private = QueueDeclareOptions {
        exclusive: true,
        auto_delete: true,
        ..Default::default()
    };
    let queue = ch.queue_declare("", private, FieldTable::default()).await?;
    ch.queue_bind(
        queue.name().as_str(),
        DELTAS_EXCHANGE,
        "",
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await?;
    let no_ack = BasicConsumeOptions {
        no_ack: true,
        ..Default::default()
    };
    let mut consumer = ch
        .basic_consume(
            queue.name().as_str(),
            "aiden-deltas",
            no_ack,
            FieldTable::default(),
        )
        .await?;
    while let Some(delivery) = consumer.next().await {
        if let Ok(delta) = serde_json::from_slice::<StepDelta>(&delivery?.data) {
            notifier.delta(delta);
        }
    }
    Ok(())
}
