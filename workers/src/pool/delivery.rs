//! One delivered job, from decode to ack: the skips (canceled run, duplicate, settled step), the
//! call with its cancel and start notice, and the result reported to the engine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aiden_domain::OperationType;
use aiden_graph::runs;
use aiden_jobs::{Broker, EngineMessage, Job, StepOutcome, JOB_VERSION};
use lapin::message::Delivery;
use lapin::options::BasicAckOptions;
use serde_json::json;
use tracing::Instrument;

use super::dead_letter::{fail_or_retry, poison};
use super::execute::execute;
use super::nodes::set_job;
use super::{now, CancelFlag, Shared};

pub(super) async fn handle(shared: &Shared, broker: &Broker, slot: usize, delivery: Delivery) {
    let delivered_us = aiden_jobs::epoch_us();
    let mut job = match decode(shared.ty, &delivery.data) {
        Ok(job) => job,
        Err(reason) => return poison(shared, broker, slot, &delivery, &reason).await,
    };
    // Traced: the step's span in its run's trace, a child of the engine's dispatch.
    let span = aiden_jobs::trace::run_span(&job.run_id, job.traceparent.as_deref(), || {
        tracing::info_span!(
            "step",
            run.id = %job.run_id,
            step.id = %job.step_id,
            tool.id = %job.tool_id,
            attempt = job.attempt,
            operation.type = %shared.ty,
            outcome = tracing::field::Empty,
        )
    });
    if let Some(hops) = &mut job.hops {
        hops.delivered_us = delivered_us;
    }
    run_job(shared, broker, slot, delivery, job)
        .instrument(span)
        .await
}

async fn run_job(shared: &Shared, broker: &Broker, slot: usize, delivery: Delivery, job: Job) {
    if shared.canceled.lock().await.contains(&job.run_id) {
        tracing::Span::current().record("outcome", "skipped");
        let _ = delivery.acker.ack(BasicAckOptions::default()).await;
        return;
    }
    // EXEC-2. A job that may repeat one that ran already checks the graph first (one indexed
    // read): a redelivery, an engine re-dispatch, or a retry (which can be queued before a
    // failed result publish). A fresh first attempt was published once, after its step was
    // recorded `queued`: only a plain duplicate repeats it, and one this pool took is skipped
    // from memory. (The engine drops any second result regardless.)
    let may_repeat = delivery.redelivered || job.redispatch || job.attempt > 1;
    let first_take = shared.seen.lock().await.insert(job.message_id());
    // A restarted engine re-dispatches the steps it finds unsettled (a tool step's start is not
    // written to the graph, only its settling is). When this pool is running that attempt now,
    // the copy waits for it: a result that reached the broker will be recorded, so the copy is
    // skipped; one that could not be published leaves the step to the copy.
    if may_repeat && reported_here(shared, &job).await {
        tracing::info!(step = %job.step_run_id, "re-dispatched job for a step run here skipped");
        tracing::Span::current().record("outcome", "skipped");
        let _ = delivery.acker.ack(BasicAckOptions::default()).await;
        return;
    }
    if may_repeat {
        if already_settled(shared, &job).await {
            tracing::info!(step = %job.step_run_id, "redelivered job for a settled step skipped");
            tracing::Span::current().record("outcome", "skipped");
            let _ = delivery.acker.ack(BasicAckOptions::default()).await;
            return;
        }
    } else if !first_take {
        tracing::info!(step = %job.step_run_id, "duplicate job skipped");
        tracing::Span::current().record("outcome", "skipped");
        let _ = delivery.acker.ack(BasicAckOptions::default()).await;
        return;
    }
    let worker_id = shared.worker_id(slot);
    set_job(shared, slot, Some(job.message_id()), None).await;
    let started_at = now();
    let clock = Instant::now();
    let flag = Arc::new(CancelFlag::default());
    shared
        .in_flight
        .lock()
        .await
        .insert(job.step_run_id.clone(), (job.run_id.clone(), flag.clone()));
    let (report, reported) = tokio::sync::watch::channel(None);
    shared
        .reports
        .lock()
        .await
        .insert(job.message_id(), reported);
    let report = Reported(shared, job.message_id(), report);
    // A cancel that arrived before the job was registered.
    if shared.canceled.lock().await.contains(&job.run_id) {
        flag.raise();
    }
    let canceled = flag.raised();
    tokio::pin!(canceled);
    // A step that finishes quickly is reported once, with its start time, in its result; a
    // slower one is also announced as started, so `running` shows while it works.
    // A model's streamed text goes to the deltas fanout as it arrives, in order,
    // from one forwarding task; it ends when the call drops its sender.
    let deltas = (job.agent_turn || job.operation_type == OperationType::LlmCall).then(|| {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let (broker, run_id, step_id) = (broker.clone(), job.run_id.clone(), job.step_id.clone());
        tokio::spawn(async move {
            let mut index = 0;
            while let Some(text) = rx.recv().await {
                let delta = aiden_jobs::StepDelta {
                    run_id: run_id.clone(),
                    step_id: step_id.clone(),
                    index,
                    text,
                };
                if let Err(e) = broker.publish_delta(&delta).await {
                    tracing::debug!(error = %e, "a streamed delta was not published");
                }
                index += 1;
            }
        });
        tx
    });
    let ran_tool = std::sync::Mutex::new(None);
    let work = execute(shared, &job, deltas, &ran_tool);
    tokio::pin!(work);
    let announce = tokio::time::sleep(shared.started_notice_after);
    tokio::pin!(announce);
    let mut announced = false;
    let result = loop {
        tokio::select! {
            r = &mut work => break Some(r),
            _ = &mut canceled => break None,
            _ = &mut announce, if !announced => {
                announced = true;
                let started = EngineMessage::StepStarted {
                    run_id: job.run_id.clone(),
                    step_run_id: job.step_run_id.clone(),
                    attempt: job.attempt,
                    worker_id: worker_id.clone(),
                    at: started_at.clone(),
                };
                if let Err(e) = broker.publish_engine(&started).await {
                    tracing::warn!(error = %e, "could not report step start");
                }
            }
        }
    };
    shared.in_flight.lock().await.remove(&job.step_run_id);
    let Some((result, hash)) = result else {
        // Canceled mid-call: the engine already settled the step.
        let _ = delivery.acker.ack(BasicAckOptions::default()).await;
        tracing::debug!(step = %job.step_run_id, "job canceled mid-call; acked");
        report.done(true).await;
        set_job(shared, slot, None, Some(true)).await;
        return;
    };
    let latency = clock.elapsed().as_millis() as u64;
    let (outcome, telemetry) = match result {
        Ok((output, telemetry)) => (StepOutcome::Completed { output }, telemetry),
        Err((failure, telemetry)) => (
            fail_or_retry(shared, broker, &job, &delivery, failure).await,
            telemetry,
        ),
    };
    let mut telemetry = serde_json::to_value(telemetry).unwrap_or(json!({}));
    telemetry["latencyMs"] = json!(latency);
    if let Some(ran) = ran_tool.lock().unwrap_or_else(|e| e.into_inner()).take() {
        telemetry["ranToolId"] = json!(ran);
    }
    let failed = !matches!(outcome, StepOutcome::Completed { .. });
    let outcome_label = outcome.kind().as_str();
    tracing::Span::current().record("outcome", outcome_label);
    metrics::histogram!(
        "aiden_step_duration_seconds",
        "type" => shared.ty.as_str(),
        "tool" => job.tool_id.clone(),
        "outcome" => outcome_label
    )
    .record(latency as f64 / 1e3);
    let finished = EngineMessage::StepFinished {
        run_id: job.run_id.clone(),
        step_run_id: job.step_run_id.clone(),
        attempt: job.attempt,
        worker_id,
        started_at,
        finished_at: now(),
        outcome,
        telemetry,
        input_hash: hash,
        hops: job.hops.clone().map(|h| aiden_jobs::Hops {
            result_us: aiden_jobs::epoch_us(),
            ..h
        }),
    };
    match broker.publish_engine(&finished).await {
        Ok(()) => {
            let _ = delivery.acker.ack(BasicAckOptions::default()).await;
            report.done(true).await;
        }
        Err(e) => {
            // Not acked: the broker redelivers and the step runs again (it is not recorded).
            tracing::warn!(error = %e, "could not report step result");
            report.done(false).await;
        }
    }
    set_job(shared, slot, None, Some(failed)).await;
}

/// Tells the copies of a job waiting on it whether its result reached the broker; a job that
/// ends without saying (a panic) closes the channel, which its waiters read as `false`.
struct Reported<'a>(&'a Shared, String, tokio::sync::watch::Sender<Option<bool>>);

impl Reported<'_> {
    async fn done(self, published: bool) {
        let _ = self.2.send(Some(published));
        self.0.reports.lock().await.remove(&self.1);
    }
}

/// `true` when this pool runs the job's attempt now and its result reached the broker
/// (waiting for it at most the job's timeout and 30 s more). Only the same attempt: a retry of
/// an attempt that failed here is a new call, whatever that attempt's report says.
async fn reported_here(shared: &Shared, job: &Job) -> bool {
    let held = shared.reports.lock().await.get(&job.message_id()).cloned();
    let Some(mut reported) = held else {
        return false;
    };
    let within = Duration::from_millis(job.timeout_ms) + Duration::from_secs(30);
    let published = match tokio::time::timeout(within, reported.wait_for(Option::is_some)).await {
        Ok(Ok(value)) => *value == Some(true),
        _ => false,
    };
    published
}

fn decode(ty: OperationType, body: &[u8]) -> Result<Job, String> {
    let job: Job = serde_json::from_slice(body).map_err(|e| format!("malformed job: {e}"))?;
    if job.v != JOB_VERSION {
        return Err(format!("unsupported job version {}", job.v));
    }
    if job.operation_type != ty {
        return Err(format!(
            "job of type `{}` on the `{ty}` queue",
            job.operation_type
        ));
    }
    Ok(job)
}

async fn already_settled(shared: &Shared, job: &Job) -> bool {
    let state = async {
        let mut tx = shared.graph.begin().await?;
        let s = runs::step_state(&mut tx, &job.step_run_id).await;
        let _ = tx.rollback().await;
        s
    }
    .await;
    match state {
        Ok(Some(s)) => {
            matches!(
                s.status.as_str(),
                "completed" | "failed" | "skipped" | "canceled"
            ) || matches!(s.run_status.as_str(), "completed" | "failed" | "canceled")
        }
        Ok(None) => true,
        Err(_) => false,
    }
}
