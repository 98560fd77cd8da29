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
use std::time::Duration;

use aiden_domain::OperationType;
use aiden_graph::Graph;
use aiden_jobs::topology::{job_queue, CONTROL_CATALOG_CHANGED, CONTROL_EXCHANGE};
use aiden_jobs::{Broker, RetryPolicy};
use aiden_vault::Vault;
use futures::StreamExt;
use lapin::options::{BasicConsumeOptions, BasicQosOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use tokio::sync::{Mutex, Notify, Semaphore};

use crate::resolve::Resolver;
use crate::tool::Tool;

mod dead_letter;
mod delivery;
mod execute;
mod nodes;

use delivery::handle;
use nodes::{heartbeat, release_slot, take_slot};

pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);
/// A call still running after this is announced with a `step_started` message (the pool's
/// default: `PoolConfig::started_notice_after`). A call that ends sooner reports its start in
/// its result, so the run's log is the same either way; only a live view sees `running` later.
/// Half a second: below it, a notice is work (a message, an engine pass, a write) for a state
/// nobody watching sees for long; a burst of 100 ms model calls spent a seventh of its CPU on
/// them (docs/dev/performance.md, twentieth round).
pub const STARTED_NOTICE_AFTER: Duration = Duration::from_millis(500);

pub struct PoolConfig {
    pub operation_type: OperationType,
    pub concurrency: usize,
    pub amqp_uri: String,
    pub graph: Graph,
    pub vault: Vault,
    /// How long a call runs before the engine is told it started (`step_started`); a call that
    /// ends sooner is reported by its result alone.
    pub started_notice_after: Duration,
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
    started_notice_after: Duration,
    slots: Mutex<Vec<Slot>>,
    canceled: Mutex<HashSet<String>>,
    /// Per step run in progress: its run and the flag a cancel of that run raises.
    in_flight: Mutex<HashMap<String, (String, Arc<CancelFlag>)>>,
    /// Per attempt in progress here (by the job's message id, `stepRun#attempt`): whether its
    /// result reached the broker (`Some(true)`), could not (`Some(false)`), or is not reported
    /// yet (`None`). By attempt, not by step run: a retry is published before its failed
    /// attempt's result, and may arrive first; it must never wait on that result and be taken
    /// for its copy.
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
        started_notice_after: config.started_notice_after,
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
