//! Live run events for SSE streams: after each commit the engine hands every run's new events
//! to the streams subscribed to that run, so a stream following a live run never reads the
//! graph; the graph is read only to catch up (a resumed stream, a gap, a lagging stream, or
//! an engine that lives in another process).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aiden_graph::runs::EventRow;
use tokio::sync::broadcast;

/// Events of one run committed by one pass, in sequence order.
pub type EventBatch = Arc<[EventRow]>;

/// Per-run channels, created by the first subscriber and removed with the last.
#[derive(Clone, Default)]
pub struct Notifier {
    runs: Arc<Mutex<HashMap<String, broadcast::Sender<EventBatch>>>>,
}

/// A stream's view of one run's live events; unsubscribes when dropped.
pub struct Subscription {
    run_id: String,
    notifier: Notifier,
    pub events: broadcast::Receiver<EventBatch>,
}

/// Batches a slow stream may fall behind by before it catches up from the graph instead.
const BACKLOG: usize = 256;

impl Notifier {
    pub fn subscribe(&self, run_id: &str) -> Subscription {
        let mut runs = self.runs.lock().expect("notifier lock");
        let events = runs
            .entry(run_id.to_owned())
            .or_insert_with(|| broadcast::channel(BACKLOG).0)
            .subscribe();
        Subscription {
            run_id: run_id.to_owned(),
            notifier: self.clone(),
            events,
        }
    }

    /// Called after a commit: the run's new events, in order.
    pub(crate) fn publish(&self, run_id: &str, events: EventBatch) {
        let runs = self.runs.lock().expect("notifier lock");
        if let Some(tx) = runs.get(run_id) {
            let _ = tx.send(events);
        }
    }

    /// How many runs have live subscribers (for tests and metrics).
    pub fn watched_runs(&self) -> usize {
        self.runs.lock().expect("notifier lock").len()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut runs = self.notifier.runs.lock().expect("notifier lock");
        // Our own receiver is still counted here: remove the channel when it is the last.
        if runs
            .get(&self.run_id)
            .is_some_and(|tx| tx.receiver_count() <= 1)
        {
            runs.remove(&self.run_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seq: i64) -> EventRow {
        EventRow {
            seq,
            kind: "step.queued".into(),
            step_id: None,
            at: "t".into(),
            data: None,
        }
    }

    #[tokio::test]
    async fn subscribers_get_their_runs_events_and_the_channel_goes_with_the_last() {
        let n = Notifier::default();
        let mut a = n.subscribe("r1");
        let b = n.subscribe("r1");
        let mut other = n.subscribe("r2");
        n.publish("r1", Arc::from(vec![row(1), row(2)]));
        n.publish("nobody", Arc::from(vec![row(1)]));
        assert_eq!(a.events.recv().await.unwrap().len(), 2);
        assert!(other.events.try_recv().is_err(), "r2 saw r1's events");
        assert_eq!(n.watched_runs(), 2);
        drop(b);
        assert_eq!(n.watched_runs(), 2, "r1 still has a subscriber");
        drop(a);
        drop(other);
        assert_eq!(n.watched_runs(), 0);
    }
}
