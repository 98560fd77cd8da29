//! The pass's transaction and what it writes to the graph: every change it recorded, as one
//! batch, committed by the caller.

use aiden_graph::runs::{self, Batch, NewRun};
use aiden_graph::Tx;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::Pass;

impl Pass<'_> {
    /// Writes the pass to the graph (child runs first, then every change). The caller commits.
    pub(super) async fn tx(&mut self) -> Result<&mut Tx, aiden_graph::Error> {
        if self.tx.is_none() {
            self.tx = Some(self.graph.begin().await?);
        }
        Ok(self.tx.as_mut().expect("just begun"))
    }

    /// The open transaction, if the pass needed one; the caller commits or rolls it back.
    pub fn take_tx(&mut self) -> Option<Tx> {
        self.tx.take()
    }

    /// The StepRuns of runs this pass writes for the first time (`runs::create` says why the
    /// engine creates them), as the batch's `step_runs` rows.
    fn take_unwritten_step_runs(&mut self) -> Vec<Value> {
        let mut rows = Vec::new();
        for id in self.saved.keys() {
            if let Some(run) = self.runs.get_mut(id) {
                for s in run.unwritten_step_runs.drain(..) {
                    rows.push(json!({"id": s.id, "runId": id, "stepId": s.step_id,
                                     "processStepId": s.process_step_id, "order": s.order,
                                     "runVersion": run.version}));
                }
            }
        }
        rows
    }

    /// Gives every run this pass changes its next write version, on the Run and on each
    /// StepRun the pass writes or creates. The Run is thus written by every commit that changes
    /// its record, so its lock, which a reader takes (`runs::get`), covers the whole record.
    fn stamp_versions(&mut self) {
        let mut touched: BTreeSet<String> = self.run_sets.keys().cloned().collect();
        let step_ids: BTreeSet<String> = self.changed_step_runs().cloned().collect();
        touched.extend(step_ids.iter().map(|id| run_of(id).to_owned()));
        touched.extend(
            self.new_calls
                .iter()
                .filter_map(|c| c["runId"].as_str().map(str::to_owned)),
        );
        touched.extend(
            self.saved
                .keys()
                .filter(|id| {
                    self.runs
                        .get(*id)
                        .is_some_and(|r| !r.unwritten_step_runs.is_empty())
                })
                .cloned(),
        );
        let mut versions = BTreeMap::new();
        for id in touched {
            let Some(run) = self.runs.get_mut(&id) else {
                continue;
            };
            run.version += 1;
            let version = run.version;
            versions.insert(id.clone(), version);
            self.set_run(&id, json!({ "version": version }));
        }
        for id in step_ids {
            if let Some(v) = versions.get(run_of(&id)) {
                self.set_step(&id, json!({"runVersion": v}));
            }
        }
        for call in &mut self.new_calls {
            let v = call["runId"].as_str().and_then(|r| versions.get(r));
            call["runVersion"] = json!(v);
        }
    }

    /// Writes the pass; answers the handed runs it could not create (their Process moved on:
    /// the caller rolls the pass back).
    /// With `commit`, the pass sends its commit with its last statement, one round trip fewer
    /// (`runs::apply_and_commit`; `commit_sent` says so, and then no transaction is left to
    /// the caller). Only when no other pass's commit is in flight: commits keep the passes'
    /// order. A pass that creates runs does so only `alone` (nothing else was waiting: a lone
    /// start's latency), as its transaction's first statement; under load it leaves its
    /// commit in flight, and the next pass is written meanwhile (`pipeline`).
    pub async fn write(
        &mut self,
        commit: bool,
        alone: bool,
    ) -> Result<Vec<String>, aiden_graph::Error> {
        self.stamp_versions();
        let new_runs = std::mem::take(&mut self.new_runs);
        // A child run's SPAWNED edge and an agent call's HAS_CALL start at a step run that may
        // be among these: then the existing runs' step runs go first, in a batch of their own
        // (the new child runs' own step runs need their Run, created below).
        let (mut step_runs, children): (Vec<Value>, Vec<Value>) = self
            .take_unwritten_step_runs()
            .into_iter()
            .partition(|s| !new_runs.iter().any(|r| s["runId"] == r.id.as_str()));
        let mut missed = Vec::new();
        if !step_runs.is_empty() && (!new_runs.is_empty() || !self.new_calls.is_empty()) {
            let first = Batch {
                new_runs: std::mem::take(&mut self.handed),
                step_runs: std::mem::take(&mut step_runs),
                ..Batch::default()
            };
            missed = unmade(&first, runs::apply(self.tx().await?, &first).await?);
        }
        step_runs.extend(children);
        for run in &new_runs {
            let now = self.now.clone();
            runs::create(self.tx().await?, run, &now).await?;
        }
        let calls = std::mem::take(&mut self.new_calls);
        if !calls.is_empty() {
            runs::create_calls(self.tx().await?, calls).await?;
        }
        let proposals = std::mem::take(&mut self.proposals);
        if !proposals.is_empty() {
            aiden_graph::knowledge::propose_entities(self.tx().await?, proposals).await?;
        }
        let memories = std::mem::take(&mut self.memories);
        // Memories and a settled agent answer are recorded for ingestion (EPI-3).
        let remembers = !memories.is_empty();
        if remembers {
            aiden_graph::memory::remember(self.tx().await?, &memories).await?;
        }
        if !self.charges.is_empty() {
            let rows = self.charges.rows(self.ledger.day());
            let now = self.now.clone();
            aiden_graph::limits::record_spend(self.tx().await?, rows, &now).await?;
        }
        let mut step_ids: Vec<String> = self.step_sets.keys().cloned().collect();
        step_ids.extend(self.workers.keys().cloned());
        step_ids.extend(self.audits.keys().cloned());
        step_ids.extend(self.lost.keys().cloned());
        step_ids.extend(self.retries.keys().cloned());
        step_ids.sort();
        step_ids.dedup();
        let steps: Vec<Value> = step_ids
            .into_iter()
            .map(|id| {
                json!({
                    "set": self.step_sets.remove(&id).unwrap_or_default(),
                    "workers": self.workers.remove(&id).unwrap_or_default(),
                    "audits": self.audits.remove(&id).unwrap_or_default(),
                    "lost": self.lost.remove(&id).unwrap_or_default(),
                    "retries": self.retries.remove(&id).unwrap_or_default(),
                    "id": id,
                })
            })
            .collect();
        let mut written = Vec::new();
        let runs: Vec<Value> = self
            .run_sets
            .iter()
            .map(|(id, set)| {
                let rows: Vec<runs::EventRow> = self.events.remove(id).unwrap_or_default();
                // The pass's events, appended to the Run's log (one JSON array per pass) with
                // their range of sequence numbers: no record of their own.
                let mut events = Value::Null;
                if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
                    events = json!({
                        "text": serde_json::to_string(&rows).unwrap_or_default(),
                        "range": [first.seq, last.seq],
                    });
                    let run = self.runs.get(id);
                    let settled = run.is_some_and(|r| r.status.is_settled());
                    let answers = settled && run.is_some_and(|r| r.alternative_id.is_some());
                    written.push(crate::Committed {
                        run_id: id.clone(),
                        owner_id: run.map(|r| r.owner_id.clone()).unwrap_or_default(),
                        settled,
                        events: crate::EventBatch::from(rows),
                        content: remembers || answers,
                    });
                }
                json!({"id": id, "set": set, "events": events})
            })
            .collect();
        self.written_events = written;
        let updated = updated_nodes(&steps, &runs, &step_runs, &self.handed, &new_runs);
        let batch = Batch {
            new_runs: std::mem::take(&mut self.handed),
            step_runs,
            steps,
            runs,
            links: std::mem::take(&mut self.links),
            invokes: std::mem::take(&mut self.invokes),
            reused: std::mem::take(&mut self.reused),
        };
        if !batch.is_empty() {
            // As its transaction's first statement, one that creates runs can be redone alone
            // when one of them was not made (the server then ignores the COMMIT).
            let first = self.tx.is_none();
            // Always in an explicit transaction: then only a failed commit leaves the outcome
            // unknown, and the engine recovers those runs from the graph (Engine::uncertain).
            self.tx().await?.count_updates(updated);
            let creates = !batch.new_runs.is_empty();
            if commit && missed.is_empty() && (!creates || (alone && first)) {
                let tx = self.tx.take().expect("begun above");
                self.commit_sent = true;
                if runs::apply_and_commit(tx, &batch).await? {
                    return Ok(missed);
                }
                // A handed run was not made: the server ignored the COMMIT.
                let processes: Vec<&str> = batch
                    .new_runs
                    .iter()
                    .filter_map(|r| r["processId"].as_str())
                    .collect();
                tracing::info!(
                    ?processes,
                    "a run the pass was to create was not made: written again"
                );
                self.commit_sent = false;
                self.tx().await?.count_updates(updated);
            }
            let made = runs::apply(self.tx().await?, &batch).await?;
            missed.extend(unmade(&batch, made));
        }
        Ok(missed)
    }
}

/// The nodes a batch sets that it does not create: the benchmark's updates per step.
fn updated_nodes(
    steps: &[Value],
    runs: &[Value],
    step_runs: &[Value],
    handed: &[Value],
    new_runs: &[NewRun],
) -> u64 {
    let set = |row: &Value| row["set"].as_object().is_some_and(|m| !m.is_empty());
    let created_step = |id: &Value| step_runs.iter().any(|n| n["id"] == *id);
    let created_run = |id: &Value| {
        handed.iter().any(|n| n["id"] == *id) || new_runs.iter().any(|n| *id == n.id.as_str())
    };
    let steps = steps.iter().filter(|r| set(r) && !created_step(&r["id"]));
    let runs = runs.iter().filter(|r| set(r) && !created_run(&r["id"]));
    (steps.count() + runs.count()) as u64
}

/// The run a StepRun belongs to: its id is `{runId}/{stepId}` (`state::step_run_id`).
fn run_of(step_run_id: &str) -> &str {
    step_run_id
        .split_once('/')
        .map_or(step_run_id, |(run, _)| run)
}

/// The ids of the batch's new runs that its statement did not create.
fn unmade(batch: &Batch, made: Vec<String>) -> Vec<String> {
    batch
        .new_runs
        .iter()
        .filter_map(|r| r["id"].as_str())
        .filter(|id| !made.iter().any(|m| m == id))
        .map(str::to_owned)
        .collect()
}
