//! Jobs that end in the dead-letter queue: a poison message no worker can run, and a failure
//! with no retry left (EXEC-4), each with its reason.

use aiden_jobs::topology::{header, RUN_HEADER, STEP_RUN_HEADER};
use aiden_jobs::{Broker, EngineMessage, ErrorInfo, Job, StepOutcome};
use lapin::message::Delivery;
use lapin::options::BasicAckOptions;
use serde_json::json;

use super::nodes::set_job;
use super::{now, Shared};

/// A message no worker can run: park it in the dead-letter queue with the reason, and fail
/// its step if the headers say which one.
pub(super) async fn poison(
    shared: &Shared,
    broker: &Broker,
    slot: usize,
    d: &Delivery,
    reason: &str,
) {
    tracing::warn!(reason, "poison message dead-lettered");
    let headers = d.properties.headers().clone().unwrap_or_default();
    let parked = broker
        .publish_dead_letter(shared.ty.as_str(), &d.data, headers, reason)
        .await;
    let run_id = header(d.properties.headers().as_ref(), RUN_HEADER);
    let step_run_id = header(d.properties.headers().as_ref(), STEP_RUN_HEADER);
    if let (Some(run_id), Some(step_run_id)) = (run_id, step_run_id) {
        let at = now();
        let msg = EngineMessage::StepFinished {
            run_id,
            step_run_id,
            attempt: u32::MAX,
            worker_id: shared.worker_id(slot),
            started_at: at.clone(),
            finished_at: at,
            outcome: StepOutcome::Failed {
                error: ErrorInfo::new("MALFORMED_JOB", reason),
            },
            telemetry: json!({}),
            input_hash: None,
            hops: None,
        };
        let _ = broker.publish_engine(&msg).await;
    }
    if parked.is_ok() {
        let _ = d.acker.ack(BasicAckOptions::default()).await;
    }
    set_job(shared, slot, None, Some(true)).await;
}

/// EXEC-4: a retryable failure with attempts left goes to the delay queue; anything else is
/// dead-lettered with its reason. Returns what to tell the engine.
pub(super) async fn fail_or_retry(
    shared: &Shared,
    broker: &Broker,
    job: &Job,
    d: &Delivery,
    error: ErrorInfo,
) -> StepOutcome {
    if error.retryable && job.attempt < job.max_attempts {
        let delay = shared.policy.delay_after(job.attempt);
        let mut next = job.clone();
        next.attempt += 1;
        next.redispatch = false;
        // No pass dispatched the retry: its hops would be the first attempt's.
        next.hops = None;
        if broker.publish_retry(&next, delay).await.is_ok() {
            metrics::counter!("aiden_step_retries_total", "type" => shared.ty.as_str())
                .increment(1);
            return StepOutcome::Retrying {
                error,
                next_attempt: next.attempt,
                delay_ms: delay,
            };
        }
    }
    let mut error = error;
    if error.retryable {
        error.message = format!("{} (after {} attempts)", error.message, job.attempt);
    }
    let headers = d.properties.headers().clone().unwrap_or_default();
    let reason = format!("{}: {}", error.code, error.message);
    metrics::counter!("aiden_dead_letters_total", "type" => shared.ty.as_str()).increment(1);
    if let Err(e) = broker
        .publish_dead_letter(shared.ty.as_str(), &d.data, headers, &reason)
        .await
    {
        tracing::warn!(error = %e, "could not dead-letter a failed job");
    }
    StepOutcome::Failed { error }
}
