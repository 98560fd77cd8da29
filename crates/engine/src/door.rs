//! Run starts handed to the engine in-process. The API of the instance whose
//! engine holds the lease gives a new run to the engine instead of writing it and publishing a
//! start message: the run's create then rides in the engine's group commit (one statement per
//! pass for every run started, stepped and settled in it), and the request is answered once
//! that commit is durable. Elsewhere (no lease here, or a start the door cannot take) the API
//! writes the run itself and publishes its start, as before.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use aiden_graph::runs::NewRun;
use tokio::sync::{mpsc, oneshot};

/// How a start handed to the engine ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    /// Created and started, durably: the run and its first jobs are committed.
    Created,
    /// Not created: its Process is no longer at the plan's revision, enabled and on its
    /// version. Read the plan again and retry.
    StalePlan,
    /// The engine never took it (no lease here, or its session ended first): nothing was
    /// written; the caller writes the run itself.
    NotTaken,
    /// The pass that carried it did not commit (the graph refused it after its retries).
    Failed(String),
}

pub(crate) struct LocalStart {
    pub run: NewRun,
    pub reply: oneshot::Sender<Started>,
}

impl LocalStart {
    pub fn answer(self, outcome: Started) {
        // The requester may have gone away; the run's fate does not depend on it.
        let _ = self.reply.send(outcome);
    }
}

/// The API's end of the door. Open only while this process's engine holds the lease and
/// consumes.
#[derive(Clone)]
pub struct Door {
    tx: mpsc::Sender<LocalStart>,
    open: Arc<AtomicBool>,
}

/// Starts waiting for a pass at most (beyond it a start waits for room).
pub(crate) const CAPACITY: usize = 4_096;

pub(crate) fn door() -> (Door, mpsc::Receiver<LocalStart>) {
    let (tx, rx) = mpsc::channel(CAPACITY);
    (
        Door {
            tx,
            open: Arc::default(),
        },
        rx,
    )
}

impl Door {
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    pub(crate) fn set_open(&self, open: bool) {
        self.open.store(open, Ordering::Release);
    }

    /// Hands `run` to the engine and waits for the pass that creates it to commit.
    pub async fn start(&self, run: NewRun) -> Started {
        if !self.is_open() {
            return Started::NotTaken;
        }
        let (reply, answer) = oneshot::channel();
        if self.tx.send(LocalStart { run, reply }).await.is_err() {
            return Started::NotTaken;
        }
        answer
            .await
            .unwrap_or_else(|_| Started::Failed("the engine stopped".into()))
    }
}

/// Starts taken from the door and waiting for a pass, one queue per Process, handed out in
/// turn: a burst of one Process's starts waits behind its own kind only, and no pass carries
/// more than it is given, so a pass (the one writer) stays short while a burst lasts.
/// Dropped with the engine's session: what still waits is answered `NotTaken` and written
/// by its API instead.
#[derive(Default)]
pub(crate) struct Waiting {
    queues: std::collections::HashMap<String, std::collections::VecDeque<LocalStart>>,
    /// Processes with starts waiting, in the order they are served next.
    turn: std::collections::VecDeque<String>,
    len: usize,
}

impl Waiting {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, start: LocalStart) {
        let key = start.run.process_id.clone();
        let queue = self.queues.entry(key.clone()).or_default();
        if queue.is_empty() {
            self.turn.push_back(key);
        }
        queue.push_back(start);
        self.len += 1;
    }

    /// The Processes with starts waiting.
    pub fn processes(&self) -> impl Iterator<Item = &str> {
        self.turn.iter().map(String::as_str)
    }

    /// Drops the starts nobody waits for any more: their request was dropped (its client went
    /// away) before a pass took them, so nothing was answered and nothing is written. A start
    /// is only durable once answered; writing one no client can learn of would leave a run
    /// its client may start again.
    fn let_go_abandoned(&mut self) {
        let before = self.len;
        self.queues.retain(|_, queue| {
            queue.retain(|s| !s.reply.is_closed());
            !queue.is_empty()
        });
        self.len = self.queues.values().map(|q| q.len()).sum();
        let queues = &self.queues;
        self.turn.retain(|p| queues.contains_key(p));
        if self.len < before {
            metrics::counter!("aiden_engine_starts_abandoned_total")
                .increment((before - self.len) as u64);
        }
    }

    /// At most `n` starts, one Process's at a time in turn, each only if `admit` lets its
    /// Process take one now (`pacing`); a Process refused keeps its place in turn. Starts
    /// whose requester has gone (the request dropped while it waited) are let go first.
    pub fn take_fair(&mut self, n: usize, mut admit: impl FnMut(&str) -> bool) -> Vec<LocalStart> {
        self.let_go_abandoned();
        let mut taken = Vec::with_capacity(n.min(self.len));
        // Processes refused since the last start taken: once every one was, none can be.
        let mut refused = 0;
        while taken.len() < n && refused < self.turn.len() {
            let Some(key) = self.turn.pop_front() else {
                break;
            };
            if !admit(&key) {
                self.turn.push_back(key);
                refused += 1;
                continue;
            }
            refused = 0;
            let queue = self
                .queues
                .get_mut(&key)
                .expect("a Process in turn has a queue");
            if let Some(start) = queue.pop_front() {
                taken.push(start);
                self.len -= 1;
            }
            match queue.is_empty() {
                true => {
                    self.queues.remove(&key);
                }
                false => self.turn.push_back(key),
            }
        }
        taken
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        metrics::gauge!("aiden_engine_starts_waiting").set(0.0);
        for (_, queue) in self.queues.drain() {
            for start in queue {
                start.answer(Started::NotTaken);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str) -> NewRun {
        of("p", id)
    }

    fn of(process_id: &str, id: &str) -> NewRun {
        NewRun {
            id: id.into(),
            process_id: process_id.into(),
            number: 1,
            version_id: "p@1".into(),
            depth: 1,
            parent_run_id: None,
            parent_step_run_id: None,
            owner_id: "u".into(),
            inputs: "{}".into(),
            plan: "{}".into(),
            steps: Vec::new(),
            alternative_id: None,
            expected_process_revision: Some(1),
            trigger: None,
            owner_budget_micros: None,
            fork: None,
        }
    }

    #[tokio::test]
    async fn a_closed_door_takes_nothing_and_nothing_waits_in_it() {
        let (door, mut starts) = door();
        assert_eq!(door.start(run("r1")).await, Started::NotTaken);
        assert!(starts.try_recv().is_err(), "a refused start must not queue");
    }

    #[tokio::test]
    async fn an_open_door_answers_what_the_engine_says_and_failed_if_it_never_does() {
        let (door, mut starts) = door();
        door.set_open(true);
        let engine = tokio::spawn(async move {
            let first = starts.recv().await.expect("handed");
            assert_eq!(first.run.id, "r1");
            first.answer(Started::StalePlan);
            // The second is dropped unanswered (the engine stopped mid-pass).
            drop(starts.recv().await.expect("handed"));
            starts
        });
        assert_eq!(door.start(run("r1")).await, Started::StalePlan);
        assert!(matches!(door.start(run("r2")).await, Started::Failed(_)));
        let starts = engine.await.unwrap();
        drop(starts);
        assert_eq!(
            door.start(run("r3")).await,
            Started::NotTaken,
            "no engine behind it"
        );
    }

    #[test]
    fn a_start_whose_request_went_away_is_let_go_before_it_is_taken() {
        let mut waiting = Waiting::default();
        let mut answers = Vec::new();
        for (process, id) in [("a", "a1"), ("b", "b1"), ("a", "a2")] {
            let (reply, answer) = oneshot::channel();
            waiting.push(LocalStart {
                run: of(process, id),
                reply,
            });
            answers.push(answer);
        }
        // The requests of a1 and of b's only start were dropped while they waited.
        drop(answers.remove(1));
        drop(answers.remove(0));
        let taken: Vec<String> = waiting
            .take_fair(10, |_| true)
            .into_iter()
            .map(|s| s.run.id.clone())
            .collect();
        assert_eq!(taken, ["a2"]);
        assert!(waiting.is_empty());
        assert_eq!(waiting.processes().count(), 0, "b left the turn");
    }

    #[tokio::test]
    async fn waiting_starts_are_served_one_process_at_a_time_and_never_dropped_silently() {
        let mut waiting = Waiting::default();
        let mut answers = Vec::new();
        for (p, id) in [
            ("burst", "b1"),
            ("burst", "b2"),
            ("burst", "b3"),
            ("other", "o1"),
            ("other", "o2"),
        ] {
            let (reply, answer) = oneshot::channel();
            waiting.push(LocalStart {
                run: of(p, id),
                reply,
            });
            answers.push(answer);
        }
        let ids = |v: Vec<LocalStart>| v.into_iter().map(|s| s.run.id).collect::<Vec<_>>();
        assert_eq!(
            ids(waiting.take_fair(2, |_| true)),
            ["b1", "o1"],
            "the other Process's start is not behind the burst"
        );
        assert_eq!(waiting.len(), 3);
        assert_eq!(
            ids(waiting.take_fair(2, |p| p != "other")),
            ["b2", "b3"],
            "a Process refused keeps its starts; the others go on"
        );
        assert_eq!(waiting.len(), 1);
        assert!(waiting.take_fair(2, |_| false).is_empty());
        drop(waiting);
        let o2 = answers.pop().unwrap().await;
        assert_eq!(
            o2.ok(),
            Some(Started::NotTaken),
            "a start left waiting is given back"
        );
        assert_eq!(
            answers.pop().unwrap().await.ok(),
            None,
            "o1 was taken: its sender went with it"
        );
    }
}
