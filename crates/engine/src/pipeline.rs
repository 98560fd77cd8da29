//! Passes pipelined across their commit (issue #49): while one pass's commit is in flight, the
//! next pass is handled and written in a transaction of its own; its commit is sent only once
//! the first one has landed. A step's outcome is still durable before its job or ack goes out
//! (`Landing::land` runs after the commit), commits keep the passes' order, and a pass never
//! writes a run the pass in flight used: it waits for that commit first, so it never misses a
//! node the other created and has not committed. A commit that fails undoes the pass built on
//! it too, and both are redone one after the other, in line, as without pipelining.

use std::collections::{HashMap, HashSet};

use aiden_jobs::{Broker, EngineMessage};
use lapin::acker::Acker;
use lapin::options::{BasicAckOptions, BasicNackOptions};

use crate::door::{self, Started};
use crate::landing::Landing;
use crate::{rollup, spend, Engine, RunState};

type Landed = Result<Result<(), lapin::Error>, (aiden_graph::Error, Landing)>;

/// A pass whose commit (and landing) runs beside the next pass.
pub(crate) struct InFlight {
    task: tokio::task::JoinHandle<Landed>,
    messages: Vec<EngineMessage>,
    /// The runs it used: the next pass waits for this commit before writing one of them.
    used: HashSet<String>,
    touched: Vec<String>,
    saved: HashMap<String, Option<RunState>>,
    measured: rollup::Rollup,
    charges: spend::Charges,
}

/// A pass whose commit failed in flight, kept for `redo_failed`.
pub(crate) struct Failed {
    messages: Vec<EngineMessage>,
    touched: Vec<String>,
    saved: HashMap<String, Option<RunState>>,
    error: aiden_graph::Error,
    landing: Landing,
}

/// Whether passes are pipelined (`AIDEN_ENGINE_PIPELINE`, on unless `0`).
pub(crate) fn enabled() -> bool {
    std::env::var("AIDEN_ENGINE_PIPELINE").map_or(true, |v| v != "0")
}

impl Engine {
    /// One pass, its commit left in flight while the caller gathers the next one. It acks its
    /// deliveries up to `ack` once landed; an error means they were not applied (the caller
    /// nacks them).
    pub(crate) async fn apply_pipelined(
        &mut self,
        broker: &Broker,
        messages: Vec<EngineMessage>,
        handed: Vec<door::LocalStart>,
        ack: Option<Acker>,
    ) -> anyhow::Result<()> {
        // The ledger must hold every charge before a pass checks a budget against it (AGT-14);
        // and a pass that has landed already frees its runs for this one.
        if self
            .in_flight
            .as_ref()
            .is_some_and(|f| !f.charges.is_empty() || f.task.is_finished())
        {
            self.land_in_flight(broker).await?;
        }
        let busy = self.in_flight.as_ref().map(|f| f.used.clone());
        let w = match self.write_pass(&messages, &handed, busy.as_ref()).await {
            Ok(w) if w.outcome.is_ok() && !w.waits => w,
            other => {
                // Not written (it waits for the pass in flight, or failed): undone, and done in
                // line once the pass in flight has landed (with the retries of `apply`).
                if let Ok(w) = other {
                    let why = if w.waits { "waited" } else { "error" };
                    metrics::counter!("aiden_engine_passes_in_line_total", "why" => why)
                        .increment(1);
                    if let Some(tx) = w.tx {
                        let _ = tx.rollback().await;
                    }
                    if let (Err(e), true) = (&w.outcome, w.commit_sent) {
                        self.not_committed(e, true, &w.touched);
                    }
                    self.restore(&w.touched, w.saved);
                }
                self.land_in_flight(broker).await?;
                return self.apply_in_line(broker, messages, handed, ack).await;
            }
        };
        // The pass in flight must land first: its commit precedes this one's.
        let landed = self.land_in_flight_unless_failed().await;
        if !matches!(landed, Ok(true)) {
            // It failed (or its landing did), and this pass was built on it: undone too.
            if let Some(tx) = w.tx {
                let _ = tx.rollback().await;
            }
            self.restore(&w.touched, w.saved);
            if let Err(e) = landed {
                for s in handed {
                    s.answer(Started::Failed(e.to_string()));
                }
                return Err(e);
            }
            // Both are redone in line.
            self.redo_failed(broker).await?;
            return self.apply_in_line(broker, messages, handed, ack).await;
        }
        let Some(tx) = w.tx else {
            // Nothing to commit: lands at once.
            let landing = w.out.into_landing(handed, ack, messages.len());
            landing.land(broker, &self.notifier).await?;
            self.committed(w.measured, &w.charges, &w.used);
            return Ok(());
        };
        let landing = w.out.into_landing(handed, ack, messages.len());
        let (broker, notifier) = (broker.clone(), self.notifier.clone());
        metrics::counter!("aiden_engine_passes_pipelined_total").increment(1);
        let task = tokio::spawn(async move {
            match tx.commit().await {
                Ok(()) => Ok(landing.land(&broker, &notifier).await),
                Err(e) => Err((e, landing)),
            }
        });
        self.in_flight = Some(InFlight {
            task,
            messages,
            used: w.used,
            touched: w.touched,
            saved: w.saved,
            measured: w.measured,
            charges: w.charges,
        });
        Ok(())
    }

    /// `apply`, then the ack of its deliveries.
    async fn apply_in_line(
        &mut self,
        broker: &Broker,
        messages: Vec<EngineMessage>,
        handed: Vec<door::LocalStart>,
        ack: Option<Acker>,
    ) -> anyhow::Result<()> {
        self.apply(broker, messages, handed).await?;
        if let Some(ack) = ack {
            ack.ack(BasicAckOptions { multiple: true }).await?;
        }
        Ok(())
    }

    /// Waits for the pass in flight, if any, to land; one whose commit failed is redone in
    /// line. An error: its deliveries were nacked, or the broker failed.
    pub(crate) async fn land_in_flight(&mut self, broker: &Broker) -> anyhow::Result<()> {
        if !self.land_in_flight_unless_failed().await? {
            self.redo_failed(broker).await?;
        }
        Ok(())
    }

    /// When the engine stops leading (the lease lost, the session ended): waits for a commit
    /// in flight to end and redoes nothing, as another engine may write already. A pass that
    /// did not commit is nacked (redelivered to whoever leads) and its starts refused; the
    /// next session rebuilds every run from the graph.
    pub(crate) async fn abandon_in_flight(&mut self) {
        let Some(f) = self.in_flight.take() else {
            return;
        };
        if let Ok(Err((e, landing))) = f.task.await {
            self.not_committed(&e, true, &f.touched);
            let Landing { handed, ack, .. } = landing;
            for s in handed {
                s.answer(Started::Failed(e.to_string()));
            }
            if let Some(ack) = ack {
                let requeue = BasicNackOptions {
                    multiple: true,
                    requeue: true,
                };
                let _ = ack.nack(requeue).await;
            }
        }
    }

    /// `false`: the pass in flight did not commit; it is kept in `failed` for `redo_failed`.
    async fn land_in_flight_unless_failed(&mut self) -> anyhow::Result<bool> {
        let Some(f) = self.in_flight.take() else {
            return Ok(true);
        };
        let InFlight {
            task,
            messages,
            used,
            touched,
            saved,
            measured,
            charges,
        } = f;
        match task.await {
            Ok(Ok(acked)) => {
                self.committed(measured, &charges, &used);
                acked?;
                Ok(true)
            }
            Ok(Err((error, landing))) => {
                self.failed = Some(Failed {
                    messages,
                    touched,
                    saved,
                    error,
                    landing,
                });
                Ok(false)
            }
            Err(joined) => {
                // Whether it committed is unknown: its runs leave the cache, the sweep recovers
                // them from the graph, and its deliveries are nacked.
                self.uncertain.extend(touched.iter().cloned());
                for id in used.iter().chain(saved.keys()) {
                    self.runs.remove(id);
                }
                anyhow::bail!("an engine commit task ended abnormally: {joined}")
            }
        }
    }

    /// Redoes, in line, the pass whose commit failed in flight, after the cache is put back
    /// as it was before it. When that fails too its deliveries are nacked (redelivered).
    async fn redo_failed(&mut self, broker: &Broker) -> anyhow::Result<()> {
        let Some(f) = self.failed.take() else {
            return Ok(());
        };
        self.not_committed(&f.error, true, &f.touched);
        self.restore(&f.touched, f.saved);
        tracing::debug!(error = %f.error, "a pipelined commit failed; the pass is redone in line");
        let Landing { handed, ack, .. } = f.landing;
        match self.apply(broker, f.messages, handed).await {
            Ok(()) => {
                if let Some(ack) = ack {
                    ack.ack(BasicAckOptions { multiple: true }).await?;
                }
                Ok(())
            }
            Err(e) => {
                if let Some(ack) = ack {
                    ack.nack(BasicNackOptions {
                        multiple: true,
                        requeue: true,
                    })
                    .await?;
                }
                Err(e)
            }
        }
    }
}
