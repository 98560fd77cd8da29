//! The transaction unit: run a body in a fresh transaction, commit, and retry the whole unit
//! when a concurrent writer won: Neo4j answers a deadlock or a lock wait it gave up on with a
//! `Neo.TransientError.*`, and a lost revision check is `LostRace`. Bounded, with jittered
//! backoff; exhausted retries answer 409.

use std::time::Duration;

use aiden_graph::Tx;
use rand::Rng;

use crate::Error;

pub(crate) const MAX_ATTEMPTS: u32 = 12;

pub(crate) enum Settled<T> {
    Done(T),
    Retry(Error),
    Failed(Error),
}

pub(crate) async fn settle<T>(tx: Tx, outcome: Result<T, Error>) -> Settled<T> {
    match outcome {
        Ok(value) => match tx.commit().await.map_err(Error::from) {
            Ok(()) => Settled::Done(value),
            Err(e) if e.is_retryable() => Settled::Retry(e),
            Err(e) => Settled::Failed(e),
        },
        Err(e) => {
            let _ = tx.rollback().await;
            if e.is_retryable() {
                Settled::Retry(e)
            } else {
                Settled::Failed(e)
            }
        }
    }
}

pub(crate) async fn backoff(attempt: u32) {
    let base = 2u64.saturating_pow(attempt.min(6));
    let jitter = rand::rng().random_range(0..=base);
    tokio::time::sleep(Duration::from_millis(base + jitter)).await;
}

pub(crate) fn exhausted(e: Error) -> Error {
    tracing::warn!(error = %e, "write gave up after repeated concurrent conflicts");
    aiden_domain::Error::conflict("concurrent modification; retry the request").into()
}

/// Runs `$body` (which may use `?`) in a write transaction on `$app.graph`, retried as a unit.
macro_rules! write_tx {
    ($app:expr, |$tx:ident| $body:block) => {{
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            #[allow(unused_mut)]
            let mut $tx = $app.graph.begin().await.map_err($crate::Error::from)?;
            let outcome: Result<_, $crate::Error> = async { $body }.await;
            match $crate::tx::settle($tx, outcome).await {
                $crate::tx::Settled::Done(v) => break Ok::<_, $crate::Error>(v),
                $crate::tx::Settled::Retry(e) if attempt < $crate::tx::MAX_ATTEMPTS => {
                    tracing::debug!(attempt, error = %e, "retrying write transaction");
                    $crate::tx::backoff(attempt).await;
                }
                $crate::tx::Settled::Retry(e) => break Err($crate::tx::exhausted(e)),
                $crate::tx::Settled::Failed(e) => break Err(e),
            }
        }
    }};
}

/// Runs `$body` in a read transaction, retried like writes: a read that meets a node a
/// concurrent transaction is deleting can fail transiently (EntityNotFound).
macro_rules! read_tx {
    ($app:expr, |$tx:ident| $body:block) => {{
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            #[allow(unused_mut)]
            let mut $tx = $app.graph.begin().await.map_err($crate::Error::from)?;
            let outcome: Result<_, $crate::Error> = async { $body }.await;
            let _ = $tx.rollback().await;
            match outcome {
                Err(e) if e.is_retryable() && attempt < $crate::tx::MAX_ATTEMPTS => {
                    $crate::tx::backoff(attempt).await;
                }
                other => break other,
            }
        }
    }};
}

pub(crate) use {read_tx, write_tx};
