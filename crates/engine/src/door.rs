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
const CAPACITY: usize = 4_096;

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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str) -> NewRun {
        NewRun {
            id: id.into(),
            process_id: "p".into(),
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
}
