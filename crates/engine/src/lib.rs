//! The run engine, hosted by `aiden serve`. It is the only writer of run state: it consumes
//! `aiden.engine` (run starts, cancels, step notices and results from workers) as the single
//! active consumer, applies each batch of messages in one graph transaction, then publishes
//! the jobs that became ready and acks the batch. In-memory run state is a cache of the graph:
//! on start, on reconnect and on a failed commit it is rebuilt from the graph.

mod deltas;
pub mod door;
mod landing;
pub mod lease;
mod notify;
mod pacing;
mod pass;
mod pipeline;
pub mod plan;
pub mod rollup;
mod spend;
mod state;
mod undelivered;
mod written;

use std::collections::HashMap;
use std::time::Duration;

use aiden_domain::execution::machine::Message;
use aiden_domain::execution::schedule::{StepStatus, Target};
use aiden_graph::Graph;
use aiden_jobs::topology::ENGINE_QUEUE;
pub use aiden_jobs::StepDelta;
use aiden_jobs::{Broker, EngineMessage, RetryPolicy};
pub use deltas::relay_deltas;
pub use door::{Door, Started};
use futures::{FutureExt, StreamExt};
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions};
use lapin::types::FieldTable;
pub use lease::Lease;
pub use notify::{Committed, EventBatch, Notifier, Snapshot, Subscription};
pub use pass::Pass;
pub use state::{step_run_id, RunState, RunStatus};

/// How many engine messages one pass (one graph transaction) takes at most.
const MAX_BATCH: usize = 256;
/// How many runs one pass creates at most: a run's create is the costliest part of a pass, and
/// a burst of starts must not hold the one writer for long (another type's result waits).
const MAX_STARTS: usize = 32;
/// A pass that also carries messages (results that free other runs' steps) creates at most as
/// many runs as it carries messages, and at least this many: it stays short, so a burst of
/// starts does not hold another type's next step behind the creation of 32 runs.
const MIN_STARTS_BESIDE_PROGRESS: usize = 4;
/// A pass this slow is logged at `info` (with where its time went).
const SLOW_PASS: Duration = Duration::from_millis(250);
/// A worker that has not heartbeated for this long is offline and its job is re-dispatched.
pub const WORKER_STALE_AFTER: Duration = Duration::from_secs(15);
const SWEEP_EVERY: Duration = Duration::from_secs(3);
/// Starts a second a Process is always given while another Process has runs in flight (beyond
/// it, 1.5 times its runs settled a second), unless configured
/// (`AIDEN_ENGINE_SHARED_START_FLOOR`, `pacing`).
pub const DEFAULT_SHARED_START_FLOOR: u32 = 50;
/// The engine lease's time to live unless configured (`AIDEN_ENGINE_LEASE_MS`).
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

pub struct Engine {
    graph: Graph,
    amqp_uri: String,
    policy: RetryPolicy,
    notifier: Notifier,
    /// Only the lease's holder consumes `aiden.engine`.
    lease: Lease,
    runs: HashMap<String, RunState>,
    /// Runs this process saw settle (bounded): a late start message for one of them never
    /// trusts the snapshot it carries.
    settled: RecentIds,
    /// Built-in measurements not yet written, and when they last were.
    rollup: rollup::Rollup,
    rollup_written: std::time::Instant,
    rollup_every: Duration,
    definitions_ensured: bool,
    /// When the graph last failed to answer: workers' heartbeats could not be
    /// written then either, so none is judged stale until they have had time to resume.
    graph_failed_at: Option<std::time::Instant>,
    /// Runs of passes whose commit failed in flight (the graph went away): the commit may have
    /// landed all the same, and then the redelivered message is a duplicate that moves nothing
    /// on. The next sweep recovers them from the graph (recovery re-publishes only steps
    /// recorded `queued`, which workers check before running).
    uncertain: std::collections::HashSet<String>,
    /// AGT-14: model prices and the day's spend windows.
    ledger: spend::Ledger,
    /// Run starts this process's API hands over, and its end of that door.
    door: Door,
    starts: Option<tokio::sync::mpsc::Receiver<door::LocalStart>>,
    /// Starts taken at a bounded rate while Processes share the engine (`None`: never paced).
    pacing: Option<pacing::Pacing>,
    /// Pipelining (`pipeline`): the pass whose commit is in flight, and one whose commit failed.
    pipelined: bool,
    in_flight: Option<pipeline::InFlight>,
    failed: Option<pipeline::Failed>,
    /// The pass being written takes one start at most, and nothing else was ready when it was
    /// gathered: a pass that creates a run may then send its commit with its statement
    /// (`Pass::write`); under load it leaves its commit in flight for the next pass instead.
    alone: bool,
    /// Queued tool steps the sweep watches for a job the broker lost.
    undelivered: undelivered::Watch,
}

/// The model price table (`AIDEN_MODEL_PRICES`, AGT-14). `aiden serve` checks it at start;
/// here a table that does not parse prices nothing, loudly.
fn prices() -> aiden_domain::execution::cost::PriceTable {
    aiden_domain::execution::cost::PriceTable::from_env().unwrap_or_else(|e| {
        tracing::error!(error = %e, "model prices unusable: model turns are not priced");
        Default::default()
    })
}

/// Plans what the engine's first pass and sweep would otherwise plan while every run waits:
/// the statements of a run's start and pass (`aiden_graph::warm`), and the built-in metric
/// definitions (created if missing). `aiden serve` runs it before it opens its port.
pub async fn warm_up(graph: &Graph) -> Result<(), aiden_graph::Error> {
    aiden_graph::warm::run_statements(graph).await?;
    if let Err(e) = ensure_definitions(graph).await {
        // Another instance starting at once may have created one first (their ids are unique);
        // the engine ensures them again on its first sweep.
        tracing::debug!(error = %e, "built-in metric definitions not ensured at start");
    }
    Ok(())
}

async fn ensure_definitions(graph: &Graph) -> Result<(), aiden_graph::Error> {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut tx = graph.begin().await?;
    for (id, name, scope, data_type, aggregation, description) in rollup::DEFINITIONS {
        let definition = aiden_graph::measurements::DefinitionState {
            id,
            name,
            description: Some(description),
            scope,
            aggregation,
            data_type,
            retention_days: Some(90),
            by: "system",
            now: &now,
        };
        let made = aiden_graph::measurements::ensure_builtin_definition(&mut tx, &definition).await;
        match made {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                name,
                scope,
                "a metric of this name exists: the built-in one is left out"
            ),
            Err(e) => {
                let _ = tx.rollback().await;
                return Err(e);
            }
        }
    }
    tx.commit().await
}

async fn record(
    graph: &Graph,
    values: &[aiden_graph::measurements::BuiltinValue],
) -> Result<i64, aiden_graph::Error> {
    let mut tx = graph.begin().await?;
    match aiden_graph::measurements::record_builtin(&mut tx, values).await {
        Ok(n) => tx.commit().await.map(|_| n),
        Err(e) => {
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

/// The Processes of the top-level runs with a step in flight (queued or running): a sub-run is
/// its parent's work, and a run parked on an approval or a timer uses no CPU (`pacing`).
fn top_level_processes(runs: &HashMap<String, RunState>) -> impl Iterator<Item = &str> {
    use aiden_domain::execution::schedule::StepStatus;
    runs.values()
        .filter(|r| r.parent_run_id.is_none())
        .filter(|r| {
            r.steps
                .iter()
                .any(|s| matches!(s.status, StepStatus::Queued | StepStatus::Running))
        })
        .map(|r| r.plan.process_id.as_str())
}

/// Ready at `at`: at once when it has passed (a timer would round up to the next millisecond).
async fn until(at: Option<std::time::Instant>) {
    if let Some(at) = at.filter(|at| *at > std::time::Instant::now()) {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
    }
}

/// Publishes a committed pass's jobs and its runs' cancels.
pub(crate) async fn publish(broker: &Broker, mut jobs: Vec<aiden_jobs::Job>, cancels: Vec<String>) {
    // Traced: a span per dispatched job in the run's trace, the worker's step
    // span its child. They end once the batch is published.
    let _spans: Vec<tracing::Span> = if aiden_jobs::trace::enabled() {
        jobs.iter_mut().map(dispatch_span).collect()
    } else {
        Vec::new()
    };
    let sends = jobs.iter().map(|job| broker.publish_job_unconfirmed(job));
    for (job, result) in jobs.iter().zip(futures::future::join_all(sends).await) {
        if let Err(e) = result {
            // Recorded as queued; recovery after reconnect re-publishes it.
            tracing::warn!(step = %job.step_run_id, error = %e, "job publish failed");
        }
    }
    for run_id in cancels {
        let _ = broker.broadcast_cancel(&run_id).await;
    }
}

fn dispatch_span(job: &mut aiden_jobs::Job) -> tracing::Span {
    let span = aiden_jobs::trace::run_span(&job.run_id, job.traceparent.as_deref(), || {
        tracing::info_span!(
            "step.dispatch",
            run.id = %job.run_id,
            step.id = %job.step_id,
            tool.id = %job.tool_id,
            attempt = job.attempt,
            operation.type = %job.operation_type,
        )
    });
    if let Some(tp) = aiden_jobs::trace::traceparent_of(&span) {
        job.traceparent = Some(tp);
    }
    span
}

/// A bounded set of ids, oldest forgotten first.
#[derive(Default)]
struct RecentIds {
    ids: std::collections::HashSet<String>,
    order: std::collections::VecDeque<String>,
}

impl RecentIds {
    const CAPACITY: usize = 200_000;

    fn insert(&mut self, id: String) {
        if self.ids.insert(id.clone()) {
            self.order.push_back(id);
            if self.order.len() > Self::CAPACITY {
                if let Some(old) = self.order.pop_front() {
                    self.ids.remove(&old);
                }
            }
        }
    }

    fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }
}

impl Engine {
    pub fn new(graph: Graph, amqp_uri: String, notifier: Notifier) -> Self {
        let lease = Lease::new(
            graph.clone(),
            format!("pid-{}", std::process::id()),
            DEFAULT_LEASE_TTL,
        );
        let (door, starts) = door::door();
        Self {
            door,
            starts: Some(starts),
            graph,
            amqp_uri,
            policy: RetryPolicy::from_env(),
            notifier,
            lease,
            runs: HashMap::new(),
            settled: RecentIds::default(),
            rollup: rollup::Rollup::default(),
            rollup_written: std::time::Instant::now(),
            rollup_every: Duration::from_millis(
                std::env::var("AIDEN_BUILTIN_METRICS_INTERVAL_MS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(60_000),
            ),
            definitions_ensured: false,
            graph_failed_at: None,
            uncertain: Default::default(),
            ledger: spend::Ledger::new(prices()),
            pacing: pacing::Pacing::new(DEFAULT_SHARED_START_FLOOR),
            pipelined: pipeline::enabled(),
            in_flight: None,
            alone: false,
            undelivered: undelivered::Watch::from_env(),
            failed: None,
        }
    }

    /// Starts a second each Process is always given while another Process has runs in flight
    /// (`pacing`; 0: never paced).
    pub fn with_shared_start_floor(mut self, floor: u32) -> Self {
        self.pacing = pacing::Pacing::new(floor);
        self
    }

    /// Competes for the engine lease with this one (an instance id and its time to live).
    pub fn with_lease(mut self, lease: Lease) -> Self {
        self.lease = lease;
        self
    }

    /// The clock that says which day's spend windows (AGT-14) the engine charges: the system
    /// clock unless a test pins one (the same the API's start checks read).
    pub fn with_clock(mut self, clock: aiden_domain::clock::Clock) -> Self {
        self.ledger.clock = clock;
        self
    }

    pub fn lease(&self) -> Lease {
        self.lease.clone()
    }

    /// Where this process's API hands its run starts to this engine (open while it leads).
    pub fn door(&self) -> Door {
        self.door.clone()
    }

    /// Runs forever: waits for the lease, (re)connects to the broker, recovers runs from the
    /// graph, then consumes until the lease or the connection is lost.
    pub async fn run(mut self) {
        let mut starts = self.starts.take().expect("the engine runs once");
        loop {
            {
                // Not leading: a start handed over meanwhile is refused, and its API writes it.
                let acquired = self.lease.acquire();
                tokio::pin!(acquired);
                loop {
                    tokio::select! {
                        _ = &mut acquired => break,
                        Some(s) = starts.recv() => s.answer(Started::NotTaken),
                    }
                }
            }
            metrics::gauge!("aiden_engine_active").set(1.0);
            let (lost_tx, lost) = tokio::sync::watch::channel(false);
            let keeper = tokio::spawn({
                let lease = self.lease.clone();
                async move { lease.keep(lost_tx).await }
            });
            let ended = self.session(lost, &mut starts).await;
            // A commit still in flight (the session failed) ends before the runs are dropped.
            self.abandon_in_flight().await;
            self.door.set_open(false);
            self.notifier.set_leading(false);
            while let Ok(s) = starts.try_recv() {
                s.answer(Started::NotTaken);
            }
            match ended {
                Ok(()) => tracing::warn!("engine consumer ended; reconnecting"),
                Err(e) => tracing::warn!(error = %e, "engine session failed; reconnecting"),
            }
            keeper.abort();
            metrics::gauge!("aiden_engine_active").set(0.0);
            self.runs.clear();
            self.ledger.forget();
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn session(
        &mut self,
        mut lost: tokio::sync::watch::Receiver<bool>,
        starts: &mut tokio::sync::mpsc::Receiver<door::LocalStart>,
    ) -> anyhow::Result<()> {
        let broker = Broker::connect(&self.amqp_uri).await?;
        let channel = broker.connection().create_channel().await?;
        channel
            .basic_qos(MAX_BATCH as u16 * 2, BasicQosOptions::default())
            .await?;
        let mut consumer = channel
            .basic_consume(
                ENGINE_QUEUE,
                "aiden-engine",
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await?;
        self.notifier.set_leading(true);
        self.door.set_open(true);
        let mut recovered = false;
        // The first tick (recovery, when no backlog arrives) comes shortly after connecting.
        let first_tick = tokio::time::Instant::now() + Duration::from_millis(300);
        let mut sweep = tokio::time::interval_at(first_tick, SWEEP_EVERY);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Starts handed over by this process's API, waiting for a pass (fair between Processes).
        let mut waiting = door::Waiting::default();
        loop {
            let mut deliveries = Vec::new();
            let start_at = self.next_start_at(&waiting);
            tokio::select! {
                d = consumer.next() => match d {
                    Some(d) => deliveries.push(d?),
                    None => {
                        self.land_in_flight(&broker).await?;
                        return Ok(());
                    }
                },
                // Beyond the door's capacity a start waits in its channel (backpressure).
                Some(s) = starts.recv(), if waiting.len() < door::CAPACITY => waiting.push(s),
                // Starts are waiting: the next pass takes them without waiting for more (or once
                // their pacing lets one be taken).
                _ = until(start_at), if start_at.is_some() => {}
                _ = lost.changed() => {
                    // Another instance may take over: stop consuming at once, so the broker
                    // hands unacked messages to the next engine. A commit in flight ends first;
                    // nothing is redone (`abandon_in_flight`).
                    self.abandon_in_flight().await;
                    let _ = broker.connection().close(200, "engine lease lost").await;
                    return Ok(());
                }
                _ = sweep.tick() => {
                    // Nothing arrived for a while: the backlog is applied. The sweep reads the
                    // graph, so the pass in flight lands first.
                    if let Err(e) = self.land_in_flight(&broker).await {
                        tracing::warn!(error = %e, "engine pass failed; messages requeued");
                        continue;
                    }
                    if recovered {
                        self.sweep(&broker).await;
                    } else {
                        self.recover(&broker).await;
                        recovered = true;
                    }
                    continue;
                }
            }
            // Nothing of this pass is written when the broker fails: the starts waiting go back
            // to their API (dropping `waiting`), which writes their runs itself.
            while deliveries.len() < MAX_BATCH {
                match consumer.next().now_or_never() {
                    Some(Some(d)) => deliveries.push(d?),
                    _ => break,
                }
            }
            while waiting.len() < door::CAPACITY {
                match starts.try_recv() {
                    Ok(s) => waiting.push(s),
                    Err(_) => break,
                }
            }
            // A pass carries every message that is ready (results are what frees the other
            // types' steps) but at most MAX_STARTS starts, in turn between Processes, and
            // beside messages no more starts than messages (MIN_STARTS_BESIDE_PROGRESS).
            let cap = match deliveries.is_empty() {
                true => MAX_STARTS,
                false => deliveries
                    .len()
                    .clamp(MIN_STARTS_BESIDE_PROGRESS, MAX_STARTS),
            };
            let room = MAX_BATCH
                .saturating_sub(deliveries.len())
                .max(MIN_STARTS_BESIDE_PROGRESS)
                .min(cap);
            let handed = self.take_starts(&mut waiting, room);
            if deliveries.is_empty() && handed.is_empty() {
                // Every start waiting is paced: the next one is taken when its time comes.
                continue;
            }
            let mut messages = Vec::with_capacity(deliveries.len());
            for d in &deliveries {
                match serde_json::from_slice::<EngineMessage>(&d.data) {
                    Ok(mut m) => {
                        // A redelivered start may describe a run that has moved on since (one
                        // of a run seen to settle is stripped when handled: `write_pass`).
                        if let EngineMessage::RunStart { created, .. } = &mut m {
                            if d.redelivered {
                                *created = None;
                            }
                        }
                        messages.push(m)
                    }
                    Err(e) => tracing::error!(error = %e, "undecodable engine message dropped"),
                }
            }
            let drained = deliveries.len() < MAX_BATCH && waiting.is_empty();
            self.alone = drained && handed.len() <= 1;
            let last = deliveries.last();
            let applied = match self.pipelined {
                true => {
                    let ack = last.map(|d| d.acker.clone());
                    self.apply_pipelined(&broker, messages, handed, ack).await
                }
                false => self.apply(&broker, messages, handed).await,
            };
            match applied {
                Ok(()) => {
                    if let (false, Some(last)) = (self.pipelined, last) {
                        last.acker.ack(BasicAckOptions { multiple: true }).await?;
                    }
                    // Recover only once the backlog is applied: step notices already queued
                    // (a step a worker is running) must land before recovery re-dispatches
                    // what the graph still shows as queued.
                    if !recovered && drained {
                        self.land_in_flight(&broker).await?;
                        self.recover(&broker).await;
                        recovered = true;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "engine pass failed; messages requeued");
                    if let Some(last) = last {
                        last.acker
                            .nack(BasicNackOptions {
                                multiple: true,
                                requeue: true,
                            })
                            .await?;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    /// When a waiting start may next be taken: `None` when none waits.
    fn next_start_at(&mut self, waiting: &door::Waiting) -> Option<std::time::Instant> {
        if waiting.is_empty() {
            return None;
        }
        let now = std::time::Instant::now();
        let Some(pacing) = self.pacing.as_mut() else {
            return Some(now);
        };
        let live = pacing.live(now, || top_level_processes(&self.runs));
        waiting
            .processes()
            .map(|p| pacing.ready_at(p, live.shared_with(p), now))
            .min()
    }

    /// At most `room` of the waiting starts, in turn between Processes, as their pacing lets.
    fn take_starts(&mut self, waiting: &mut door::Waiting, room: usize) -> Vec<door::LocalStart> {
        let taken = match self.pacing.as_mut().filter(|_| !waiting.is_empty()) {
            None => waiting.take_fair(room, |_| true),
            Some(pacing) => {
                let now = std::time::Instant::now();
                let live = pacing.live(now, || top_level_processes(&self.runs));
                let (mut refused, mut paced) = (0, Vec::<String>::new());
                let taken = waiting.take_fair(room, |p| {
                    let admitted = pacing.admit(p, live.shared_with(p), now);
                    if !admitted {
                        refused += 1;
                        if !paced.iter().any(|q| q == p) {
                            paced.push(p.to_owned());
                        }
                    }
                    admitted
                });
                if refused > 0 {
                    metrics::counter!("aiden_engine_starts_paced_total").increment(refused);
                    tracing::debug!(processes = ?paced, "starts held for their pacing");
                }
                taken
            }
        };
        metrics::gauge!("aiden_engine_starts_waiting").set(waiting.len() as f64);
        taken
    }

    /// A new pass over the cached runs, with today's spend windows in memory (AGT-14).
    async fn pass(&mut self) -> Result<Pass<'_>, aiden_graph::Error> {
        self.ledger.ensure_today(&self.graph).await?;
        Ok(Pass::new(
            self.graph.clone(),
            &mut self.runs,
            self.policy,
            &self.ledger,
        ))
    }

    /// One pass: apply, commit (retrying transient conflicts from scratch), publish, notify.
    /// The runs `handed` over by this process's API are created in it, and each hears once
    /// the pass is durable (or why not).
    async fn apply(
        &mut self,
        broker: &Broker,
        messages: Vec<EngineMessage>,
        mut handed: Vec<door::LocalStart>,
    ) -> anyhow::Result<()> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let w = match self.write_pass(&messages, &handed, None).await {
                Ok(w) => w,
                Err(e) => {
                    for s in handed {
                        s.answer(Started::Failed(e.to_string()));
                    }
                    return Err(e.into());
                }
            };
            let mut commit_sent = w.commit_sent;
            let committed = match (w.outcome, w.tx) {
                (Ok(()), Some(tx)) => {
                    commit_sent = true;
                    tx.commit().await
                }
                (Ok(()), None) => Ok(()),
                (Err(e), Some(tx)) => {
                    let _ = tx.rollback().await;
                    Err(e)
                }
                (Err(e), None) => Err(e),
            };
            let (touched, stale) = (w.touched, w.stale);
            match committed {
                Ok(()) => {
                    let landing = w.out.into_landing(handed, None, messages.len());
                    // The caller acks (`ack: None`): landing cannot fail.
                    let _ = landing.land(broker, &self.notifier).await;
                    self.committed(w.measured, &w.charges, &w.used);
                    return Ok(());
                }
                Err(e) => {
                    self.not_committed(&e, commit_sent, &touched);
                    self.restore(&touched, w.saved);
                    if !stale.is_empty() {
                        // Handed runs whose Process moved on: they go back to their API, which
                        // reads the plan again; the rest of the pass is redone without them.
                        let (gone, kept) =
                            handed.into_iter().partition(|s| stale.contains(&s.run.id));
                        handed = kept;
                        for s in gone {
                            s.answer(Started::StalePlan);
                        }
                        continue;
                    }
                    if !e.is_transient() || attempt >= 8 {
                        for s in handed {
                            s.answer(Started::Failed(e.to_string()));
                        }
                        return Err(e.into());
                    }
                    metrics::counter!("aiden_engine_pass_retries_total").increment(1);
                    tracing::debug!(error = %e, attempt, runs = touched.len(), "engine pass retried");
                    tokio::time::sleep(Duration::from_millis(5 * attempt)).await;
                }
            }
        }
    }

    /// What the engine keeps once a pass's commit is durable: its measurements and charges;
    /// the settled runs it used leave the cache (a late message reloads one from the graph).
    /// Only the runs it `used`: a pass written since may have settled others, uncommitted.
    fn committed(
        &mut self,
        measured: rollup::Rollup,
        charges: &spend::Charges,
        used: &std::collections::HashSet<String>,
    ) {
        self.rollup.merge(measured);
        self.ledger.add(charges);
        for id in used {
            let Some(r) = self.runs.get(id).filter(|r| r.status.is_settled()) else {
                continue;
            };
            if !self.settled.contains(id) {
                if let (Some(pacing), None) = (self.pacing.as_mut(), &r.parent_run_id) {
                    pacing.settled(&r.plan.process_id, std::time::Instant::now());
                }
                metrics::counter!("aiden_runs_settled_total", "outcome" => r.status.as_str())
                    .increment(1);
                self.rollup
                    .run_settled(&r.plan.process_id, r.status.as_str());
            }
            self.settled.insert(id.clone());
            self.runs.remove(id);
        }
    }

    /// A pass that did not commit. When the graph went away after its commit was sent, the
    /// commit may have landed: its runs are recovered from the graph by the next sweep.
    fn not_committed(&mut self, e: &aiden_graph::Error, commit_sent: bool, touched: &[String]) {
        if let aiden_graph::Error::Unavailable(_) = e {
            self.graph_failed_at = Some(std::time::Instant::now());
            if commit_sent {
                self.uncertain.extend(touched.iter().cloned());
            }
        }
    }

    /// After a pass that did not commit: the cache may hold its uncommitted changes. Runs the
    /// pass saved get their state from before it back (a conflict's retry then reads nothing);
    /// any other run it touched is dropped, and the next message about it reloads it.
    fn restore(&mut self, touched: &[String], saved: HashMap<String, Option<RunState>>) {
        for id in touched {
            if !saved.contains_key(id) {
                self.runs.remove(id);
            }
        }
        for (id, before) in saved {
            match before {
                Some(state) => self.runs.insert(id, state),
                None => self.runs.remove(&id),
            };
        }
    }

    /// Hands each run's committed events to its live SSE streams.
    fn notify(&self, events: Vec<Committed>) {
        for c in events {
            self.notifier.committed(c);
        }
    }

    /// After (re)connecting: every unsettled run is rebuilt from the graph and pushed on.
    async fn recover(&mut self, broker: &Broker) {
        // Runs this session already drives dispatched their own jobs: only the others (left by
        // a previous session) are re-dispatched.
        let ids = match self.unfinished().await {
            Ok(rows) => rows
                .into_iter()
                .map(|r| r.id)
                .filter(|id| !self.runs.contains_key(id))
                .collect::<Vec<_>>(),
            Err(e) => {
                tracing::warn!(error = %e, "recovery could not list runs");
                return;
            }
        };
        if !ids.is_empty() {
            tracing::info!(runs = ids.len(), "recovering unfinished runs");
        }
        for chunk in ids.chunks(64) {
            if let Err(e) = self.recover_runs(broker, chunk, &[], &[], &[]).await {
                tracing::warn!(error = %e, "recovery pass failed");
            }
        }
    }

    async fn unfinished(&self) -> Result<Vec<aiden_graph::runs::Unfinished>, aiden_graph::Error> {
        let mut tx = self.graph.begin().await?;
        let ids = aiden_graph::runs::unfinished(&mut tx).await;
        let _ = tx.rollback().await;
        ids
    }

    async fn recover_runs(
        &mut self,
        broker: &Broker,
        run_ids: &[String],
        lost_steps: &[(String, String)],
        lost_jobs: &[undelivered::Queued],
        cancels: &[String],
    ) -> anyhow::Result<()> {
        let mut pass = self.pass().await?;
        let mut outcome = Ok(());
        for id in run_ids {
            outcome = pass.recover(id).await;
            if outcome.is_err() {
                break;
            }
        }
        for (run_id, step_run_id) in lost_steps {
            if outcome.is_ok() {
                outcome = pass
                    .redispatch_step(run_id, step_run_id, Message::WorkerLost)
                    .await;
            }
        }
        for q in lost_jobs {
            if outcome.is_ok() {
                outcome = pass
                    .redispatch_step(&q.run_id, &q.step_run_id, Message::JobLost)
                    .await;
            }
        }
        for run_id in cancels {
            if outcome.is_ok() {
                let cancel = EngineMessage::RunCancel {
                    run_id: run_id.clone(),
                };
                outcome = pass.handle(cancel).await;
            }
        }
        if outcome.is_ok() {
            // A recovery pass is handed no runs: nothing to miss. (Committed by the caller.)
            outcome = pass.write(false, false).await.map(drop);
        }
        let touched = pass.touched();
        let jobs = std::mem::take(&mut pass.jobs);
        let cancels = std::mem::take(&mut pass.cancels);
        let events = std::mem::take(&mut pass.written_events);
        let charges = std::mem::take(&mut pass.charges);
        let saved = pass.take_saved();
        let tx = pass.take_tx();
        drop(pass);
        match outcome {
            Ok(()) => {
                if let Some(tx) = tx {
                    tx.commit().await?;
                }
                self.ledger.add(&charges);
            }
            Err(e) => {
                if let Some(tx) = tx {
                    let _ = tx.rollback().await;
                }
                self.restore(&touched, saved);
                return Err(e.into());
            }
        }
        publish(broker, jobs, cancels).await;
        self.notify(events);
        Ok(())
    }

    /// Writes the built-in measurements once per interval (one statement per scope); on failure
    /// they are kept for the next interval.
    async fn write_measurements(&mut self) {
        if !self.definitions_ensured {
            match ensure_definitions(&self.graph).await {
                Ok(()) => self.definitions_ensured = true,
                Err(e) => {
                    tracing::warn!(error = %e, "built-in metric definitions not created yet");
                    return;
                }
            }
        }
        if self.rollup_written.elapsed() < self.rollup_every {
            return;
        }
        self.rollup_written = std::time::Instant::now();
        if self.rollup.is_empty() {
            return;
        }
        let now = chrono::Utc::now();
        let stamp = now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let values = self.rollup.values(now.timestamp_millis(), &stamp);
        match record(&self.graph, &values).await {
            Ok(written) => {
                self.rollup = rollup::Rollup::default();
                tracing::debug!(written, "built-in measurements written");
            }
            Err(e) => {
                tracing::warn!(error = %e, "built-in measurements kept for the next interval")
            }
        }
    }

    /// Periodic upkeep: workers that stopped heartbeating go offline and the steps they held
    /// are re-dispatched; runs the engine has not seen (a lost start message) are started.
    async fn sweep(&mut self, broker: &Broker) {
        self.write_measurements().await;
        let cutoff = (chrono::Utc::now()
            - chrono::Duration::from_std(WORKER_STALE_AFTER).unwrap_or_default())
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        // After a graph outage every heartbeat looks old: wait until workers could write theirs.
        let heartbeats_trusted = self
            .graph_failed_at
            .is_none_or(|t| t.elapsed() > WORKER_STALE_AFTER);
        let began = if heartbeats_trusted {
            Some(self.graph.begin().await)
        } else {
            None
        };
        let offline = match began {
            None => Vec::new(),
            Some(Ok(mut tx)) => {
                let r = aiden_graph::runs::mark_stale_workers_offline(&mut tx, &cutoff).await;
                match r {
                    Ok(ids) => tx.commit().await.map(|_| ids).unwrap_or_default(),
                    Err(_) => {
                        let _ = tx.rollback().await;
                        Vec::new()
                    }
                }
            }
            Some(Err(e)) => {
                if let aiden_graph::Error::Unavailable(_) = e {
                    self.graph_failed_at = Some(std::time::Instant::now());
                }
                Vec::new()
            }
        };
        let mut lost = Vec::new();
        if !offline.is_empty() {
            tracing::warn!(workers = ?offline, "workers went offline");
            for run in self.runs.values() {
                for step in &run.steps {
                    let held = step.worker_id.as_ref().is_some_and(|w| offline.contains(w));
                    if held && step.status == aiden_domain::execution::schedule::StepStatus::Running
                    {
                        lost.push((run.id.clone(), step.id.clone()));
                    }
                }
            }
        }
        let lost_jobs = self.lost_jobs(broker).await;
        let Ok(unfinished) = self.unfinished().await else {
            return;
        };
        // Runs still `queued` that this engine never saw: their start message was lost.
        // (A running run missing from the cache was evicted after a failed commit; the next
        // message about it reloads it.) And runs whose commit outcome is unknown (`uncertain`):
        // if it landed, no message will move them on.
        let uncertain = std::mem::take(&mut self.uncertain);
        let unseen: Vec<String> = unfinished
            .iter()
            .filter(|r| {
                (r.status == RunStatus::Queued.as_str() && !self.runs.contains_key(&r.id))
                    || uncertain.contains(&r.id)
            })
            .map(|r| r.id.clone())
            .collect();
        // Cancel requests whose message was lost (the API also records them in the graph).
        let cancels: Vec<String> = unfinished
            .into_iter()
            .filter(|r| r.cancel_requested)
            .map(|r| r.id)
            .collect();
        if unseen.is_empty() && lost.is_empty() && lost_jobs.is_empty() && cancels.is_empty() {
            return;
        }
        match self
            .recover_runs(broker, &unseen, &lost, &lost_jobs, &cancels)
            .await
        {
            Ok(()) => {
                if !lost_jobs.is_empty() {
                    let steps: Vec<&str> =
                        lost_jobs.iter().map(|q| q.step_run_id.as_str()).collect();
                    tracing::warn!(?steps, "jobs lost by the broker published again");
                    metrics::counter!("aiden_engine_jobs_lost_total")
                        .increment(lost_jobs.len() as u64);
                    self.undelivered
                        .republished(&lost_jobs, std::time::Instant::now());
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "sweep pass failed");
                self.uncertain.extend(uncertain);
            }
        }
    }

    /// Tool steps whose job was lost (`undelivered`): queued at one attempt for longer than
    /// the watch allows while their type's queue, and the engine's, held nothing ready at two
    /// checks in a row. The queues are read only when a step is overdue.
    async fn lost_jobs(&mut self, broker: &Broker) -> Vec<undelivered::Queued> {
        let queued = self
            .runs
            .values()
            .filter(|r| !r.status.is_settled())
            .flat_map(|r| {
                r.steps.iter().enumerate().filter_map(move |(i, step)| {
                    let Target::Tool { operation_type, .. } = &r.plan.steps[i].target else {
                        return None;
                    };
                    (step.status == StepStatus::Queued).then(|| undelivered::Queued {
                        run_id: r.id.clone(),
                        step_run_id: step.id.clone(),
                        attempts: step.attempts,
                        operation_type: *operation_type,
                        retry_due: step.retry_due,
                    })
                })
            })
            .collect();
        let now = std::time::Instant::now();
        let overdue = self.undelivered.overdue(queued, now);
        if overdue.is_empty() {
            return Vec::new();
        }
        let depths = match broker.queue_depths().await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "queue depths unread: overdue jobs checked next sweep");
                return Vec::new();
            }
        };
        let ready = |queue: &str| depths.iter().find(|d| d.0 == queue).map(|d| d.1);
        // Notices the engine has not read yet may be about these very steps.
        let caught_up = ready(ENGINE_QUEUE) == Some(0);
        let idle = |q: &undelivered::Queued| {
            let queue = aiden_jobs::topology::job_queue(q.operation_type.as_str());
            caught_up && ready(&queue) == Some(0)
        };
        self.undelivered.checked(overdue, idle, now)
    }
}
