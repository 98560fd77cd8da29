//! Live run events for SSE streams, kept in memory by the engine that commits them.
//!
//! After each commit the engine appends every run's new events here: streams subscribed to
//! the run get them at once, and a stream that starts (or resumes) while the run is live or
//! recently settled catches up from the in-memory log instead of the graph. The graph is read
//! only when the log here cannot answer: a run this process's engine did not drive from its
//! first event, one evicted from memory, a gap, a stream that lagged, or an engine that lives
//! in another `aiden serve` (then streams poll).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiden_graph::runs::EventRow;
use aiden_jobs::StepDelta;
use tokio::sync::broadcast;

/// Events of one run committed by one pass, in sequence order.
pub type EventBatch = Arc<[EventRow]>;

/// Batches a slow stream may fall behind by before it catches up from the graph instead.
const BACKLOG: usize = 256;
/// Deltas a slow stream may fall behind by (older ones are skipped: they are not replayed).
const DELTA_BACKLOG: usize = 1024;
/// Runs whose log is kept in memory at most; beyond it, settled and idle ones go first.
const MAX_LOGS: usize = 10_000;
/// How long a settled run's log stays (a client that opens its stream late still finds it).
const KEEP_SETTLED: Duration = Duration::from_secs(15);
/// A log nobody appended to for this long is dropped (its run is driven elsewhere).
const KEEP_IDLE: Duration = Duration::from_secs(300);

#[derive(Default)]
struct RunEntry {
    /// The run's owner, once known: who may read the log from memory.
    owner_id: Option<String>,
    /// Every event from seq 1 on, when `complete`.
    events: Vec<EventRow>,
    complete: bool,
    settled: bool,
    touched: Option<Instant>,
    live: Option<broadcast::Sender<EventBatch>>,
    /// Streamed model text for the live streams; never kept.
    deltas: Option<broadcast::Sender<Arc<StepDelta>>>,
}

impl RunEntry {
    fn last_seq(&self) -> i64 {
        self.events.last().map_or(0, |e| e.seq)
    }
}

/// What memory holds of a run, for a stream starting after `after`.
pub struct Snapshot {
    pub owner_id: String,
    /// Events after `after`, in order.
    pub events: Vec<EventRow>,
    pub settled: bool,
    pub last_seq: i64,
}

/// The in-memory run logs and live channels, shared by the engine and the API.
#[derive(Clone, Default)]
pub struct Notifier {
    runs: Arc<Mutex<HashMap<String, RunEntry>>>,
    /// Whether this process's engine holds the lease: then every commit of a run passes here,
    /// and a stream of a run whose whole log is here need not poll the graph when it is quiet.
    leading: Arc<std::sync::atomic::AtomicBool>,
    /// Woken after a commit that recorded content for ingestion (an agent's answer, a
    /// memory): this process's outbox relay publishes it now instead of at its next poll.
    content: Arc<tokio::sync::Notify>,
}

/// A stream's view of one run's live events; unsubscribes when dropped.
pub struct Subscription {
    run_id: String,
    notifier: Notifier,
    pub events: broadcast::Receiver<EventBatch>,
    pub deltas: broadcast::Receiver<Arc<StepDelta>>,
}

/// One run's events from one committed pass.
pub struct Committed {
    pub run_id: String,
    pub owner_id: String,
    pub settled: bool,
    pub events: EventBatch,
    /// The pass recorded content for ingestion with these events (EPI-3's outbox).
    pub content: bool,
}

impl Notifier {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, RunEntry>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A process that stops leading may miss commits from then on: no log here is whole.
    pub(crate) fn set_leading(&self, leading: bool) {
        let mut runs = self.lock();
        self.leading
            .store(leading, std::sync::atomic::Ordering::Release);
        if !leading {
            for entry in runs.values_mut() {
                entry.complete = false;
                entry.events.clear();
            }
        }
    }

    /// Whether every commit of `run_id` reaches this process: its engine leads and holds the
    /// run's whole log. A quiet stream then waits for live events instead of polling the graph.
    pub fn drives(&self, run_id: &str) -> bool {
        self.leading.load(std::sync::atomic::Ordering::Acquire)
            && self.lock().get(run_id).is_some_and(|e| e.complete)
    }

    pub fn subscribe(&self, run_id: &str) -> Subscription {
        let mut runs = self.lock();
        let entry = runs.entry(run_id.to_owned()).or_default();
        let events = entry
            .live
            .get_or_insert_with(|| broadcast::channel(BACKLOG).0)
            .subscribe();
        let deltas = entry
            .deltas
            .get_or_insert_with(|| broadcast::channel(DELTA_BACKLOG).0)
            .subscribe();
        Subscription {
            run_id: run_id.to_owned(),
            notifier: self.clone(),
            events,
            deltas,
        }
    }

    /// A streamed piece of a model turn: to the run's live streams, if it has any here.
    pub fn delta(&self, delta: StepDelta) {
        let runs = self.lock();
        if let Some(tx) = runs.get(&delta.run_id).and_then(|e| e.deltas.as_ref()) {
            let _ = tx.send(Arc::new(delta));
        }
    }

    /// A run was just created (by the API in this process): its log starts empty and
    /// complete, so the stream its client opens next needs no graph read to start.
    pub fn expect(&self, run_id: &str, owner_id: &str) {
        let mut runs = self.lock();
        Self::prune(&mut runs);
        let entry = runs.entry(run_id.to_owned()).or_default();
        if entry.owner_id.is_none() && entry.events.is_empty() {
            entry.owner_id = Some(owner_id.to_owned());
            entry.complete = true;
            entry.touched = Some(Instant::now());
        }
    }

    /// What memory holds of the run after `after`, if it holds the whole log.
    pub fn snapshot(&self, run_id: &str, after: i64) -> Option<Snapshot> {
        let runs = self.lock();
        let entry = runs.get(run_id)?;
        if !entry.complete {
            return None;
        }
        Some(Snapshot {
            owner_id: entry.owner_id.clone()?,
            events: entry
                .events
                .iter()
                .filter(|e| e.seq > after)
                .cloned()
                .collect(),
            settled: entry.settled,
            last_seq: entry.last_seq(),
        })
    }

    /// What the outbox relay waits on besides its poll (`aiden serve` wires it).
    pub fn content_wake(&self) -> Arc<tokio::sync::Notify> {
        self.content.clone()
    }

    /// Called after a commit with each run's new events, in order.
    pub(crate) fn committed(&self, c: Committed) {
        if c.content {
            self.content.notify_one();
        }
        let mut runs = self.lock();
        Self::prune(&mut runs);
        let entry = runs.entry(c.run_id).or_default();
        let first = c.events.first().map_or(0, |e| e.seq);
        if entry.events.is_empty() && first == 1 {
            // The engine drove this run from its first event: the log is whole.
            entry.complete = true;
        } else if first != entry.last_seq() + 1 {
            entry.complete = false;
        }
        if entry.complete {
            entry.events.extend(c.events.iter().cloned());
        }
        entry.owner_id = Some(c.owner_id);
        entry.settled = c.settled;
        entry.touched = Some(Instant::now());
        if let Some(live) = &entry.live {
            let _ = live.send(c.events);
        }
    }

    /// Drops logs that served their purpose, when there are too many.
    fn prune(runs: &mut HashMap<String, RunEntry>) {
        if runs.len() < MAX_LOGS {
            return;
        }
        let now = Instant::now();
        runs.retain(|_, e| {
            let age = e.touched.map_or(Duration::MAX, |t| now.duration_since(t));
            let expired = if e.settled {
                age > KEEP_SETTLED
            } else {
                age > KEEP_IDLE
            };
            e.live.is_some() || !expired
        });
        if runs.len() >= MAX_LOGS {
            // Still full: forget settled logs first, whatever their age.
            runs.retain(|_, e| e.live.is_some() || !e.settled);
        }
    }

    /// How many runs memory holds something for (for tests and metrics).
    pub fn tracked_runs(&self) -> usize {
        self.lock().len()
    }
}

impl Subscription {
    /// [`Notifier::drives`] for this stream's run.
    pub fn drives(&self) -> bool {
        self.notifier.drives(&self.run_id)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut runs = self.notifier.lock();
        let Some(entry) = runs.get_mut(&self.run_id) else {
            return;
        };
        // Our own receiver is still counted here: the channel goes with the last one.
        if entry
            .live
            .as_ref()
            .is_some_and(|tx| tx.receiver_count() <= 1)
        {
            entry.live = None;
            entry.deltas = None;
            if entry.owner_id.is_none() {
                runs.remove(&self.run_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seq: i64, kind: &str) -> EventRow {
        EventRow {
            seq,
            kind: kind.into(),
            step_id: None,
            at: "t".into(),
            data: None,
        }
    }

    fn committed(run: &str, seqs: &[i64], settled: bool) -> Committed {
        Committed {
            run_id: run.into(),
            owner_id: "u".into(),
            settled,
            events: seqs.iter().map(|s| row(*s, "step.queued")).collect(),
            content: false,
        }
    }

    #[tokio::test]
    async fn a_commit_that_recorded_content_wakes_the_outbox_relay() {
        let n = Notifier::default();
        let wake = n.content_wake();
        n.committed(committed("r1", &[1], false));
        let quiet = tokio::time::timeout(Duration::from_millis(50), wake.notified()).await;
        assert!(
            quiet.is_err(),
            "a pass without content must not wake the relay"
        );
        n.committed(Committed {
            content: true,
            ..committed("r2", &[1], true)
        });
        tokio::time::timeout(Duration::from_secs(1), wake.notified())
            .await
            .expect("a pass that recorded content wakes the relay");
    }

    #[tokio::test]
    async fn subscribers_get_only_their_runs_events() {
        let n = Notifier::default();
        let mut a = n.subscribe("r1");
        let mut other = n.subscribe("r2");
        n.committed(committed("r1", &[1, 2], false));
        assert_eq!(a.events.recv().await.unwrap().len(), 2);
        assert!(other.events.try_recv().is_err(), "r2 saw r1's events");
    }

    #[test]
    fn a_log_driven_from_its_first_event_is_served_from_memory() {
        let n = Notifier::default();
        n.expect("r", "u");
        let s = n.snapshot("r", 0).unwrap();
        assert!(s.events.is_empty() && !s.settled && s.owner_id == "u");
        n.committed(committed("r", &[1, 2], false));
        n.committed(committed("r", &[3], true));
        let s = n.snapshot("r", 1).unwrap();
        assert_eq!(s.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3]);
        assert!(s.settled);
        assert_eq!(s.last_seq, 3);
    }

    #[test]
    fn a_log_with_a_gap_or_a_late_start_is_not_trusted() {
        let n = Notifier::default();
        n.committed(committed("late", &[4, 5], false));
        assert!(n.snapshot("late", 0).is_none(), "started mid-run");
        n.committed(committed("gap", &[1], false));
        n.committed(committed("gap", &[3], false));
        assert!(n.snapshot("gap", 0).is_none(), "missed seq 2");
        assert!(n.snapshot("unknown", 0).is_none());
    }

    #[test]
    fn only_a_leading_engine_with_the_whole_log_drives_a_run() {
        let n = Notifier::default();
        n.committed(committed("r", &[1], false));
        n.committed(committed("late", &[4], false));
        assert!(!n.drives("r"), "not leading");
        n.set_leading(true);
        assert!(n.drives("r"));
        assert!(!n.drives("late"), "its log began mid-run");
        assert!(!n.drives("unknown"));
        n.set_leading(false);
        n.set_leading(true);
        assert!(
            !n.drives("r"),
            "commits made elsewhere meanwhile were missed"
        );
    }

    #[test]
    fn a_subscription_alone_leaves_nothing_behind() {
        let n = Notifier::default();
        let s = n.subscribe("r");
        assert_eq!(n.tracked_runs(), 1);
        drop(s);
        assert_eq!(n.tracked_runs(), 0);
    }
}
