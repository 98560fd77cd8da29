//! One pass handled and written, not yet committed: what `Engine::apply` commits in line and
//! `pipeline` commits in flight.

use std::collections::{HashMap, HashSet};

use aiden_graph::Tx;
use aiden_jobs::EngineMessage;

use crate::door;
use crate::landing::Outbound;
use crate::{rollup, spend, Engine, RunState};

/// A pass handled and written, not yet committed.
pub(crate) struct Written {
    pub outcome: Result<(), aiden_graph::Error>,
    /// Handed runs the statement could not create (their Process moved on).
    pub stale: Vec<String>,
    pub touched: Vec<String>,
    pub saved: HashMap<String, Option<RunState>>,
    /// `None` when nothing was written, or when the commit went with the statement.
    pub tx: Option<Tx>,
    /// The commit went with the pass's statement (`Pass::write`): when `outcome` is an error,
    /// whether it committed may be unknown, as after a failed commit.
    pub commit_sent: bool,
    pub measured: rollup::Rollup,
    pub charges: spend::Charges,
    pub out: Outbound,
    /// Every run it read or changed (`Pass::used_runs`).
    pub used: HashSet<String>,
    /// It used a run of the pass in flight, so it was handled but not written.
    pub waits: bool,
}

/// Whether a pass's commit may go with its last statement when no other commit is in flight
/// (`AIDEN_ENGINE_COMMIT_WITH_STATEMENT`, on unless `0`; off, every commit is a round trip of
/// its own, as before issue #49's seventeenth round).
fn commit_with_statement() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("AIDEN_ENGINE_COMMIT_WITH_STATEMENT").map_or(true, |v| v != "0")
    })
}

impl Engine {
    /// Handles `messages` and the `handed` starts in a new pass and writes it (uncommitted).
    /// With `busy`, a pass that uses one of those runs is not written (`waits`).
    pub(crate) async fn write_pass(
        &mut self,
        messages: &[EngineMessage],
        handed: &[door::LocalStart],
        busy: Option<&HashSet<String>>,
    ) -> Result<Written, aiden_graph::Error> {
        let clock = std::time::Instant::now();
        // A start message of a run this engine saw settle never trusts its snapshot: checked
        // here, as a pass that landed meanwhile may have settled it.
        let messages: Vec<EngineMessage> = messages
            .iter()
            .cloned()
            .map(|mut m| {
                if let EngineMessage::RunStart { created, run_id } = &mut m {
                    if self.settled.contains(run_id) {
                        *created = None;
                    }
                }
                m
            })
            .collect();
        // The commit rides with the last statement only when no other commit is in flight.
        let commit = self.in_flight.is_none() && commit_with_statement();
        let alone = self.alone;
        let mut pass = self.pass().await?;
        let mut outcome = Ok(());
        let mut unusable = Vec::new();
        for (i, s) in handed.iter().enumerate() {
            match pass.start_handed(&s.run).await {
                Ok(true) => {}
                Ok(false) => unusable.push(i),
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        for m in messages {
            if outcome.is_err() {
                break;
            }
            if let Err(e) = pass.handle(m).await {
                outcome = Err(e);
                break;
            }
        }
        let handled = clock.elapsed();
        let used = pass.used_runs();
        let waits = outcome.is_ok() && busy.is_some_and(|b| !used.is_disjoint(b));
        let mut stale = Vec::new();
        if outcome.is_ok() && !waits {
            outcome = pass.write(commit, alone).await.and_then(|missed| {
                stale = missed;
                match stale.is_empty() {
                    true => Ok(()),
                    false => Err(aiden_graph::Error::StalePlan),
                }
            });
        }
        let write = clock.elapsed() - handled;
        let out = Outbound {
            jobs: std::mem::take(&mut pass.jobs),
            cancels: std::mem::take(&mut pass.cancels),
            events: std::mem::take(&mut pass.written_events),
            unusable,
            clock,
            handle_us: handled.as_micros() as u64,
            write,
            statement_start_us: aiden_jobs::epoch_us() - write.as_micros() as i64,
        };
        Ok(Written {
            outcome,
            stale,
            touched: pass.touched(),
            measured: std::mem::take(&mut pass.rollup),
            charges: std::mem::take(&mut pass.charges),
            saved: pass.take_saved(),
            tx: pass.take_tx(),
            commit_sent: pass.commit_sent,
            out,
            used,
            waits,
        })
    }
}
