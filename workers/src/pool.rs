//! `aiden worker --type T --concurrency N`: consumes the queue of one operation type with a
//! prefetch of N, runs up to N jobs at once, reports to the engine and heartbeats N Worker
//! nodes (one per slot, so `currentJobId` is exact, WRK-1).
//!
//! Per job: decode (poison → dead-letter) → skip if the run was canceled, if this pool already
//! holds or ran the same job (step run and attempt), or — for a job that may be a duplicate
//! (redelivered, re-dispatched, or a retry) — if the graph shows the step settled → resolve
//! the Tool from the cache (PROC-8/TOOL-3/SEC-6 re-checked) → render inputs → validate → call → validate output
//! (EXEC-3) → publish the result (and the retry or dead letter, EXEC-4) → ack. The ack comes
//! last: a worker killed mid-step leaves the job unacked and RabbitMQ redelivers it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aiden_domain::execution::{audit_hash::input_hash, interpolate::render_tree};
use aiden_domain::tool::{Access, Operation};
use aiden_domain::OperationType;
use aiden_graph::{runs, Graph};
use aiden_jobs::topology::{
    header, job_queue, CONTROL_CATALOG_CHANGED, CONTROL_EXCHANGE, RUN_HEADER, STEP_RUN_HEADER,
};
use aiden_jobs::{Broker, EngineMessage, ErrorInfo, Job, RetryPolicy, StepOutcome, JOB_VERSION};
use aiden_service::Vault;
use futures::StreamExt;
use lapin::message::Delivery;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicQosOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use serde_json::{json, Value};
use tokio::sync::{Mutex, Notify, Semaphore};
use tracing::Instrument;

use crate::resolve::{NotRunnable, Resolver};
use crate::tool::{FailureClass, Invocation, Tool, ToolFailure};

pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);
/// A call still running after this is announced with a `step_started` message.
pub const STARTED_NOTICE_AFTER: Duration = Duration::from_millis(25);

pub struct PoolConfig {
    pub operation_type: OperationType,
    pub concurrency: usize,
    pub amqp_uri: String,
    pub graph: Graph,
    pub vault: Vault,
}

#[derive(Debug, Clone, Default)]
struct Slot {
    current_job: Option<String>,
    processed: u64,
    errors: u64,
}

struct Shared {
    ty: OperationType,
    worker_prefix: String,
    started_at: String,
    executor: Arc<dyn Tool>,
    resolver: Resolver,
    graph: Graph,
    policy: RetryPolicy,
    slots: Mutex<Vec<Slot>>,
    canceled: Mutex<HashSet<String>>,
    /// Per step run in progress: its run and the flag a cancel of that run raises.
    in_flight: Mutex<HashMap<String, (String, Arc<CancelFlag>)>>,
    /// Per step run in progress here: whether its result reached the broker (`Some(true)`),
    /// could not (`Some(false)`), or is not reported yet (`None`).
    reports: Mutex<HashMap<String, tokio::sync::watch::Receiver<Option<bool>>>>,
    seen: Mutex<SeenJobs>,
}

/// Raised once when a job's run is canceled; a call waiting on it stops. A flag plus a
/// `Notify`, so a cancel that lands while the job is between polls is never lost.
#[derive(Default)]
struct CancelFlag {
    raised: std::sync::atomic::AtomicBool,
    notify: Notify,
}

impl CancelFlag {
    fn raise(&self) {
        self.raised.store(true, std::sync::atomic::Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    async fn raised(&self) {
        loop {
            // Created before the check: `notify_waiters` reaches a created `Notified`.
            let notified = self.notify.notified();
            if self.raised.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// Job ids (step run and attempt) this pool has taken, newest last, bounded: a plain
/// duplicate of a job this pool holds or ran is skipped without reading the graph.
#[derive(Default)]
struct SeenJobs {
    ids: HashSet<String>,
    order: std::collections::VecDeque<String>,
}

impl SeenJobs {
    const CAPACITY: usize = 100_000;

    /// `false` if the id was already there.
    fn insert(&mut self, id: String) -> bool {
        if !self.ids.insert(id.clone()) {
            return false;
        }
        self.order.push_back(id);
        if self.order.len() > Self::CAPACITY {
            if let Some(old) = self.order.pop_front() {
                self.ids.remove(&old);
            }
        }
        true
    }
}

impl Shared {
    fn worker_id(&self, slot: usize) -> String {
        format!("{}-{slot}", self.worker_prefix)
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Runs the pool until SIGTERM/ctrl-c, reconnecting to the broker when it goes away.
pub async fn run(config: PoolConfig) -> anyhow::Result<()> {
    let executor = crate::executors::for_type(config.operation_type, &config.graph);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "host".into());
    let shared = Arc::new(Shared {
        worker_prefix: format!("{}-{host}-{}", config.operation_type, std::process::id()),
        ty: config.operation_type,
        started_at: now(),
        executor,
        resolver: Resolver::new(config.graph.clone(), config.vault.clone()),
        graph: config.graph.clone(),
        policy: RetryPolicy::from_env(),
        slots: Mutex::new(vec![Slot::default(); config.concurrency.max(1)]),
        canceled: Mutex::new(HashSet::new()),
        in_flight: Mutex::new(HashMap::new()),
        reports: Mutex::new(HashMap::new()),
        seen: Mutex::new(SeenJobs::default()),
    });
    metrics::gauge!("aiden_worker_slots", "type" => shared.ty.as_str())
        .set(config.concurrency.max(1) as f64);
    heartbeat(&shared, "idle").await;
    let beat = {
        let shared = shared.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT_EVERY).await;
                heartbeat(&shared, "idle").await;
            }
        })
    };
    let consume = {
        let shared = shared.clone();
        async move {
            loop {
                if let Err(e) = session(&shared, &config).await {
                    tracing::warn!(error = %e, "worker session ended; reconnecting");
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    };
    tokio::select! {
        _ = consume => {}
        _ = shutdown_signal() => tracing::info!("worker pool shutting down"),
    }
    beat.abort();
    heartbeat(&shared, "offline").await;
    Ok(())
}

async fn session(shared: &Arc<Shared>, config: &PoolConfig) -> anyhow::Result<()> {
    let broker = Broker::connect(&config.amqp_uri).await?;
    // Catalog changes broadcast while this pool was disconnected were missed.
    shared.resolver.invalidate().await;
    let channel = broker.connection().create_channel().await?;
    let slots = shared.slots.lock().await.len();
    channel
        .basic_qos(slots as u16, BasicQosOptions::default())
        .await?;
    let mut jobs = channel
        .basic_consume(
            &job_queue(shared.ty.as_str()),
            &format!("{}-consumer", shared.worker_prefix),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let control = channel
        .queue_declare(
            "",
            QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await?;
    channel
        .queue_bind(
            control.name().as_str(),
            CONTROL_EXCHANGE,
            "",
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let mut cancels = channel
        .basic_consume(
            control.name().as_str(),
            "",
            lapin::options::BasicConsumeOptions {
                no_ack: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await?;
    let permits = Arc::new(Semaphore::new(slots));
    loop {
        tokio::select! {
            // Control first: a catalog change or cancel routed before a job applies to it.
            biased;
            c = cancels.next() => {
                let Some(c) = c else { return Ok(()) };
                let c = c?;
                let kind = c.properties.kind().as_ref().map(|k| k.as_str().to_owned());
                if kind.as_deref() == Some(CONTROL_CATALOG_CHANGED) {
                    shared.resolver.invalidate().await;
                } else {
                    let run_id = String::from_utf8_lossy(&c.data).into_owned();
                    cancel_run(shared, &run_id).await;
                }
            }
            d = jobs.next() => {
                let Some(d) = d else { return Ok(()) };
                let delivery = d?;
                let permit = permits.clone().acquire_owned().await?;
                let slot = take_slot(shared).await;
                let (shared, broker) = (shared.clone(), broker.clone());
                tokio::spawn(async move {
                    handle(&shared, &broker, slot, delivery).await;
                    release_slot(&shared, slot).await;
                    drop(permit);
                });
            }
        }
    }
}

async fn cancel_run(shared: &Shared, run_id: &str) {
    let mut canceled = shared.canceled.lock().await;
    if canceled.len() > 10_000 {
        canceled.clear();
    }
    canceled.insert(run_id.to_owned());
    for (run, flag) in shared.in_flight.lock().await.values() {
        if run == run_id {
            flag.raise();
        }
    }
}

async fn take_slot(shared: &Shared) -> usize {
    let mut slots = shared.slots.lock().await;
    let i = slots
        .iter()
        .position(|s| s.current_job.is_none())
        .unwrap_or(0);
    slots[i].current_job = Some(String::new());
    i
}

async fn release_slot(shared: &Shared, slot: usize) {
    shared.slots.lock().await[slot].current_job = None;
}

async fn set_job(shared: &Shared, slot: usize, job: Option<String>, failed: Option<bool>) {
    let mut slots = shared.slots.lock().await;
    slots[slot].current_job = job;
    // Set from the slots themselves (one pool per `aiden worker` process), so a gauge never
    // drifts, whenever the exporter was installed.
    let busy = slots.iter().filter(|s| s.current_job.is_some()).count();
    metrics::gauge!("aiden_worker_slots_busy", "type" => shared.ty.as_str()).set(busy as f64);
    metrics::gauge!("aiden_worker_slots", "type" => shared.ty.as_str()).set(slots.len() as f64);
    match failed {
        Some(true) => {
            slots[slot].processed += 1;
            slots[slot].errors += 1;
        }
        Some(false) => slots[slot].processed += 1,
        None => {}
    }
}

/// Writes every slot's state. `status` is the pool's state; a slot with a job is `busy`.
async fn heartbeat(shared: &Shared, status: &str) {
    let at = now();
    let rows: Vec<Value> = shared
        .slots
        .lock()
        .await
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let job = s.current_job.clone().filter(|j| !j.is_empty());
            let st = match (status, &job) {
                ("offline", _) => "offline",
                (_, Some(_)) => "busy",
                _ => "idle",
            };
            json!({"id": shared.worker_id(i), "set": {
                "type": shared.ty, "status": st, "currentJobId": job, "lastHeartbeat": at,
                "processedCount": s.processed, "errorCount": s.errors,
                "startedAt": shared.started_at, "slot": i}})
        })
        .collect();
    let result = async {
        let mut tx = shared.graph.begin().await?;
        runs::heartbeat(&mut tx, rows).await?;
        tx.commit().await
    }
    .await;
    if let Err(e) = result {
        tracing::warn!(error = %e, "heartbeat failed");
    }
}

async fn handle(shared: &Shared, broker: &Broker, slot: usize, delivery: Delivery) {
    let job = match decode(shared.ty, &delivery.data) {
        Ok(job) => job,
        Err(reason) => return poison(shared, broker, slot, &delivery, &reason).await,
    };
    // Traced (issue #12): the step's span in its run's trace, a child of the engine's dispatch.
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
    // written: issue #36). When this pool is running that step now, the copy waits for it: a
    // result that reached the broker will be recorded, so the copy is skipped; one that could
    // not be published leaves the step to the copy.
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
        .insert(job.step_run_id.clone(), reported);
    let report = Reported(shared, job.step_run_id.clone(), report);
    // A cancel that arrived before the job was registered.
    if shared.canceled.lock().await.contains(&job.run_id) {
        flag.raise();
    }
    let canceled = flag.raised();
    tokio::pin!(canceled);
    // A step that finishes quickly is reported once, with its start time, in its result; a
    // slower one is also announced as started, so `running` shows while it works.
    // A model's streamed text goes to the deltas fanout as it arrives (issue #11), in order,
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
    let announce = tokio::time::sleep(STARTED_NOTICE_AFTER);
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
    let outcome_label = match &outcome {
        StepOutcome::Completed { .. } => "completed",
        StepOutcome::Retrying { .. } => "retrying",
        _ => "failed",
    };
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

/// `true` when this pool runs the job's step now and that attempt's result reached the broker
/// (waiting for it at most the job's timeout and 30 s more).
async fn reported_here(shared: &Shared, job: &Job) -> bool {
    let held = shared.reports.lock().await.get(&job.step_run_id).cloned();
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

/// A message no worker can run: park it in the dead-letter queue with the reason, and fail
/// its step if the headers say which one.
async fn poison(shared: &Shared, broker: &Broker, slot: usize, d: &Delivery, reason: &str) {
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
        };
        let _ = broker.publish_engine(&msg).await;
    }
    if parked.is_ok() {
        let _ = d.acker.ack(BasicAckOptions::default()).await;
    }
    set_job(shared, slot, None, Some(true)).await;
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

type Telemetry = crate::tool::Telemetry;
type Executed = Result<(Value, Telemetry), (ErrorInfo, Telemetry)>;

async fn execute(
    shared: &Shared,
    job: &Job,
    deltas: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    ran_tool: &std::sync::Mutex<Option<String>>,
) -> (Executed, Option<String>) {
    if chrono::Utc::now().timestamp_millis() > job.deadline_ms {
        let e = ErrorInfo::new("TIMEOUT", "the job's deadline passed before it could start");
        return (Err((e, Telemetry::default())), None);
    }
    let resolved = match shared.resolver.resolve(&job.tool_id, &job.owner_id).await {
        Ok(r) => r,
        Err(NotRunnable::Rule { invariant, message }) => {
            return (
                Err((ErrorInfo::new(invariant, message), Telemetry::default())),
                None,
            )
        }
        Err(NotRunnable::Graph(e)) => {
            let mut err = ErrorInfo::new("CONNECTION_ERROR", format!("graph: {e}"));
            err.retryable = true;
            return (Err((err, Telemetry::default())), None);
        }
    };
    let vars = Value::Object(job.variables.clone());
    // An agent call's input is used as is: model-written text is never a template.
    let rendered = match &job.literal_input {
        Some(literal) => Ok(literal.clone()),
        None => render_tree(&Value::Object(job.inputs.clone()), &vars),
    };
    let input = match rendered {
        Ok(v) => v,
        Err(e) => {
            let err = ErrorInfo::new("INTERPOLATION_ERROR", e.to_string());
            return (Err((err, Telemetry::default())), None);
        }
    };
    let hash = Some(input_hash(&input));
    // A model turn's input is the engine's `{messages, tools}`, not the model Tool's input.
    let problem = if job.agent_turn {
        None
    } else {
        resolved.input_validator.iter_errors(&input).next()
    };
    if let Some(problem) = problem {
        let err = ErrorInfo::new(
            "INPUT_INVALID",
            format!("input{}: {problem}", problem.instance_path),
        );
        return (Err((err, Telemetry::default())), hash);
    }
    let tool = &resolved.tool;
    // Which Tool runs, when the caller's own takes the named one's place (docs/connections.md).
    if tool.id.as_str() != job.tool_id {
        *ran_tool.lock().unwrap_or_else(|e| e.into_inner()) = Some(tool.id.to_string());
    }
    let timeout = Duration::from_millis(job.timeout_ms.max(1));
    let inv = Invocation {
        tool_id: &job.tool_id,
        owner_id: &job.owner_id,
        idempotency_key: Some(&job.step_run_id),
        operation: &tool.structure.operation,
        connection: &tool.connection_params,
        service_endpoint: resolved.service.endpoint.as_deref(),
        protocol: resolved.service.structure.protocol,
        secret: resolved.secret.as_ref(),
        secret_scope: tool.secret_scope.as_deref(),
        input: &input,
        timeout,
        agent_turn: job.agent_turn,
        deltas: deltas.as_ref(),
    };
    let span = if aiden_jobs::trace::enabled() {
        tracing::info_span!(
            "tool.call",
            tool.id = %job.tool_id,
            operation.type = %shared.ty,
            attempt = job.attempt,
        )
    } else {
        tracing::Span::none()
    };
    let called = tokio::time::timeout(
        timeout + Duration::from_millis(250),
        shared.executor.call(&inv).instrument(span),
    )
    .await
    .unwrap_or_else(|_| {
        Err(ToolFailure::new(
            FailureClass::Timeout,
            format!("no answer within {} ms", timeout.as_millis()),
        ))
    });
    let result = match called {
        Ok(out) => {
            let problem = resolved
                .output_validator
                .iter_errors(&out.value)
                .next()
                .filter(|_| !job.agent_turn)
                .map(|p| format!("output{}: {p}", p.instance_path));
            match problem {
                None => Ok((out.value, out.telemetry)),
                Some(p) => Err((ErrorInfo::new("OUTPUT_INVALID", p), out.telemetry)),
            }
        }
        Err(f) => {
            let write = matches!(
                tool.structure.operation,
                Operation::GraphQuery {
                    access: Access::Write,
                    ..
                }
            );
            // A write that timed out may have committed: never retried (seed 002).
            let retryable = f.class.retryable() && !(write && f.class == FailureClass::Timeout);
            let mut err = ErrorInfo::new(class_code(f.class), f.message);
            err.retryable = retryable;
            Err((err, f.telemetry))
        }
    };
    (result, hash)
}

fn class_code(class: FailureClass) -> &'static str {
    match class {
        FailureClass::Timeout => "TIMEOUT",
        FailureClass::ConnectionError => "CONNECTION_ERROR",
        FailureClass::RateLimited => "RATE_LIMITED",
        FailureClass::UpstreamError => "UPSTREAM_ERROR",
        FailureClass::AuthError => "AUTH_ERROR",
        FailureClass::InvalidRequest => "INVALID_REQUEST",
        FailureClass::ToolError => "TOOL_ERROR",
    }
}

/// EXEC-4: a retryable failure with attempts left goes to the delay queue; anything else is
/// dead-lettered with its reason. Returns what to tell the engine.
async fn fail_or_retry(
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

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
