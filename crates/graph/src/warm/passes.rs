//! Engine passes driven through Neo4j's JIT before `aiden serve` opens its port. A Neo4j just
//! started runs its Cypher runtime, its kernel and its commit path in the interpreter and C1
//! code for the first minute or so, and compiles them meanwhile on the two cores the runs need:
//! measured, throughput grew by half between 1,000 and 5,000 warm-up runs after a restart
//! (docs/dev/performance.md, "warm-up passes before the port opens"). Planning the statement
//! once (`run_statements`) does not do that: the code has to run thousands of times, and its
//! commits with it.
//!
//! The passes are the engine's own pass statement, with the run record's labels swapped for
//! twins no other statement reads (`WarmUpRun`, `WarmUpStepRun`, ...; schema 0023 gives them
//! the same kinds of index): the same operators, property writes, index seeks and updates and
//! commits, while no reader (an API, another instance's engine, `aiden check`) ever sees a
//! warm-up run. A round starts 8 three-step runs, moves each through its steps as the engine
//! does (dispatch, settle and dispatch, settle and complete), one committed pass per hop, and
//! deletes them, also after a failed pass; the definitions go when the warm-up ends. What a
//! killed or cut-short one left is deleted by the next start.

use std::time::{Duration, Instant};

use aiden_domain::execution::machine::RunStatus;
use aiden_domain::execution::schedule::StepStatus;
use serde_json::{json, Value};

use crate::runs::{self, Batch};
use crate::{cypher, query_file, Error, Graph};

/// Runs a round starts together: about what one pass holds under load (12.7 messages).
const RUNS_PER_ROUND: usize = 8;
const STEPS: [&str; 3] = ["a", "b", "c"];
/// The labels the pass statement names, each of which the warm-up swaps for its twin.
const LABELS: [&str; 11] = [
    "Run",
    "StepRun",
    "Worker",
    "Process",
    "ProcessVersion",
    "ProcessStep",
    "User",
    "Alternative",
    "IngestItem",
    "ToolCallAudit",
    "Tool",
];
/// The warm-up logs its progress (at debug) once per window.
const WINDOW: Duration = Duration::from_secs(5);
/// A warm-up lasts seconds: records older than this are a killed one's leftovers.
const LEFTOVER_AGE: chrono::TimeDelta = chrono::TimeDelta::minutes(10);
/// The longest warm-up: well within [`LEFTOVER_AGE`], or it would delete its own definitions.
const MOST: Duration = Duration::from_secs(300);

/// What a warm-up did: its passes, the records they created (the benchmark's and the test's
/// proof that every part of the statement ran), and the mean pass of its first and last rounds
/// (statement, commit and the round's delete), which say how far the JIT got.
#[derive(Debug, Default)]
pub struct Warmed {
    pub passes: u64,
    pub nodes_created: u64,
    pub edges_created: u64,
    pub first_round_pass: Duration,
    pub last_round_pass: Duration,
}

/// Drives rounds of passes for about `budget` (at most [`MOST`]; none for zero), then deletes
/// what they wrote. A warm-up's leftovers older than [`LEFTOVER_AGE`] are deleted first, also
/// when `budget` is zero. One cut short from outside (its future dropped) leaves its records to
/// that sweep.
pub async fn drive_passes(graph: &Graph, budget: Duration) -> Result<Warmed, Error> {
    let mut warmed = Warmed::default();
    forget(graph, &[]).await?;
    if budget.is_zero() {
        return Ok(warmed);
    }
    let budget = budget.min(MOST);
    let statement = twin_statement(query_file!("run/apply_batch.cypher"));
    let scaffold = Scaffold::new(&format!("warm-up-{}", uuid::Uuid::now_v7()));
    scaffold.create(graph).await?;
    // One round after the other: two side by side (each with its own definitions) drove a
    // third fewer passes in the same time, on two cores the JIT needs too.
    let started = Instant::now();
    let mut round = 0;
    let mut outcome = Ok(());
    let mut window = (Instant::now(), 0u64);
    while started.elapsed() < budget {
        let began = Instant::now();
        match drive_round(graph, &statement, &scaffold, round, &mut warmed).await {
            Ok(passes) => {
                let mean = began.elapsed() / passes as u32;
                if round == 0 {
                    warmed.first_round_pass = mean;
                }
                warmed.last_round_pass = mean;
                window.1 += passes;
                if window.0.elapsed() >= WINDOW {
                    // How the JIT gets on: the mean pass (and its round's delete) per window.
                    tracing::debug!(
                        at_ms = started.elapsed().as_millis() as u64,
                        passes = window.1,
                        mean_us = (window.0.elapsed() / window.1 as u32).as_micros() as u64,
                        "warm-up passes"
                    );
                    window = (Instant::now(), 0);
                }
            }
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
        round += 1;
    }
    // The scaffold goes even when a round failed: the next warm-up finds less to delete.
    let forgotten = forget(graph, &scaffold.ids()).await;
    outcome.and(forgotten).map(|()| warmed)
}

/// The pass statement on the twin labels: `:Run` becomes `:WarmUpRun`, and so on. Its first
/// line names it apart (statement latencies are recorded by that name).
fn twin_statement(text: &str) -> String {
    let body = text.split_once('\n').map_or(text, |(_, body)| body);
    let mut out = String::from("// aiden:warm/apply_batch.cypher (twin labels)\n");
    let mut rest = body;
    while let Some(at) = rest.find(':') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let name_len = rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(rest.len());
        if LABELS.contains(&&rest[..name_len]) {
            out.push_str("WarmUp");
        }
    }
    out.push_str(rest);
    out
}

/// The warm-up's definitions, created once per warm-up.
struct Scaffold {
    process: String,
    version: String,
    user: String,
    worker: String,
    nonce: String,
}

impl Scaffold {
    fn new(nonce: &str) -> Self {
        Scaffold {
            process: format!("{nonce}-process"),
            version: format!("{nonce}-process@v1"),
            user: format!("{nonce}-user"),
            worker: format!("{nonce}-worker"),
            nonce: nonce.to_owned(),
        }
    }

    fn step_id(&self, step: &str) -> String {
        format!("{}/{step}", self.version)
    }

    fn step_ids(&self) -> Vec<String> {
        STEPS.iter().map(|s| self.step_id(s)).collect()
    }

    fn ids(&self) -> Vec<String> {
        let mut ids = vec![
            self.process.clone(),
            self.version.clone(),
            self.user.clone(),
            self.worker.clone(),
        ];
        ids.extend(self.step_ids());
        ids
    }

    async fn create(&self, graph: &Graph) -> Result<(), Error> {
        let mut tx = graph.begin().await?;
        tx.run(
            cypher(query_file!("warm/scaffold.cypher"), None)
                .param("processId", self.process.as_str())
                .param("versionId", self.version.as_str())
                .param("userId", self.user.as_str())
                .param("workerId", self.worker.as_str())
                .param("stepIds", self.step_ids())
                .param("at", now()),
        )
        .await?;
        tx.commit().await
    }
}

/// Deletes the records named by `ids` (runs or definitions) and every warm-up record older
/// than [`LEFTOVER_AGE`].
async fn forget(graph: &Graph, ids: &[String]) -> Result<(), Error> {
    let before = stamp(chrono::Utc::now() - LEFTOVER_AGE);
    let mut tx = graph.begin().await?;
    tx.run(
        cypher(query_file!("warm/forget.cypher"), None)
            .param("ids", ids.to_vec())
            .param("before", before),
    )
    .await?;
    tx.commit().await
}

/// One round: [`RUNS_PER_ROUND`] runs started, their three steps, their completion, each hop a
/// committed pass; then the runs are deleted, also when a pass failed. Answers the passes it
/// committed, and counts them and their records in `warmed`.
async fn drive_round(
    graph: &Graph,
    statement: &str,
    scaffold: &Scaffold,
    round: u64,
    warmed: &mut Warmed,
) -> Result<u64, Error> {
    let runs: Vec<String> = (0..RUNS_PER_ROUND)
        .map(|i| format!("{}-run-{round}-{i}", scaffold.nonce))
        .collect();
    let mut passes = 0;
    let mut outcome = Ok(());
    for hop in 0..=STEPS.len() {
        outcome = drive_hop(graph, statement, &hop_batch(scaffold, &runs, hop), warmed).await;
        if outcome.is_err() {
            break;
        }
        passes += 1;
    }
    let forgotten = forget(graph, &runs).await;
    outcome.and(forgotten).map(|()| passes)
}

/// One committed pass of the twin statement.
async fn drive_hop(
    graph: &Graph,
    statement: &str,
    batch: &Batch,
    warmed: &mut Warmed,
) -> Result<(), Error> {
    let mut tx = graph.begin().await?;
    let made = runs::apply_statement(&mut tx, statement, batch).await?;
    if made.len() != batch.new_runs.len() {
        // The twin statement found none of its definitions: it would warm nothing.
        return Err(Error::Query(format!(
            "warm-up: {} of {} runs created",
            made.len(),
            batch.new_runs.len()
        )));
    }
    let written = tx.written();
    tx.commit().await?;
    warmed.passes += 1;
    warmed.nodes_created += written.nodes_created;
    warmed.edges_created += written.relationships_created;
    Ok(())
}

/// The pass of hop `hop` for every run: hop 0 starts the runs and dispatches their first
/// step; hop k settles step k-1 and dispatches step k, or completes the run after the last.
fn hop_batch(scaffold: &Scaffold, runs: &[String], hop: usize) -> Batch {
    let worker = scaffold.worker.as_str();
    let at = now();
    let mut batch = Batch::default();
    for (i, run) in runs.iter().enumerate() {
        let version = hop as i64 + 1;
        let seq = 1 + 3 * hop as i64;
        if hop == 0 {
            batch.new_runs.push(new_run(scaffold, run, &at));
            for mut row in step_rows(scaffold, run) {
                row["runId"] = json!(run);
                row["runVersion"] = json!(1);
                batch.step_runs.push(row);
            }
            batch.links.push(run.clone());
        }
        if let Some(done) = hop.checked_sub(1).map(|k| STEPS[k]) {
            batch.steps.push(json!({
                "id": format!("{run}/{done}"),
                "set": settled_step(worker, run, i, version, &at),
                "workers": [worker], "audits": [], "lost": [], "retries": [],
            }));
        }
        if let Some(next) = STEPS.get(hop) {
            batch.steps.push(json!({
                "id": format!("{run}/{next}"),
                "set": {"queuedAt": at, "runVersion": version},
                "workers": [], "audits": [], "lost": [], "retries": [],
            }));
        }
        let mut set = json!({"eventSeq": seq + 1, "version": version});
        if hop == 0 {
            set["status"] = json!(RunStatus::Running.as_str());
            set["startedAt"] = json!(at);
        } else if hop == STEPS.len() {
            set["status"] = json!(RunStatus::Completed.as_str());
            set["finishedAt"] = json!(at);
            set["output"] = json!("{\"ok\":true}");
        }
        let events = json!([
            {"seq": seq, "kind": "step.completed", "stepId": STEPS.get(hop), "at": at,
             "data": "{\"attempt\":1}"},
            {"seq": seq + 1, "kind": "step.queued", "stepId": STEPS.get(hop), "at": at,
             "data": "{\"attempt\":1}"},
        ]);
        batch.runs.push(json!({
            "id": run, "set": set,
            "events": {"text": events.to_string(), "range": [seq, seq + 1]},
        }));
    }
    batch
}

/// A started run's row, as `NewRun::batch_row` makes it (with a plan about as long as a
/// three-step Process's).
fn new_run(scaffold: &Scaffold, run: &str, at: &str) -> Value {
    let steps = step_rows(scaffold, run);
    let plan: Vec<Value> = STEPS
        .iter()
        .map(|step| {
            json!({"id": step, "mode": "sequential", "dependsOn": [], "condition": null,
                   "inputs": {"v": "{{steps.previous.output}}"},
                   "output": {"variable": step, "required": false}, "timeoutMs": 30000,
                   "target": {"kind": "tool", "id": "warm-up-tool", "operationType": "rest_api"}})
        })
        .collect();
    json!({
        "id": run, "processId": scaffold.process, "processVersion": 1,
        "versionId": scaffold.version, "depth": 1, "parentRunId": null,
        "parentStepRunId": null, "ownerId": scaffold.user, "inputs": "{}",
        "plan": json!({"processId": scaffold.process, "version": 1, "steps": plan}).to_string(),
        "createdAt": at, "alternativeId": null, "triggerKind": null, "triggerSubjectId": null,
        "stepRuns": Value::Array(steps).to_string(), "ownerBudgetMicros": null,
        "forkedFrom": null, "forkStep": null, "reuse": null, "expectedRevision": 1,
    })
}

/// A settled step's properties, as the engine writes them when a worker's result lands.
fn settled_step(worker: &str, run: &str, i: usize, version: i64, at: &str) -> Value {
    json!({
        "status": StepStatus::Completed.as_str(), "attempts": 1, "startedAt": at,
        "finishedAt": at, "durationMs": 1 + i as i64, "runVersion": version,
        "workerId": worker, "output": "{\"body\":{\"ok\":true},\"status\":200}",
        "inputHash": format!("{run}-{version}-input-hash-of-sixty-four-hex-characters-here"),
        "hops": json!({"statementUs": 800, "commitEndUs": 1, "deliveredUs": 2, "resultUs": 3})
            .to_string(),
        "telemetry": json!({"finalState": "completed", "latencyMs": 1, "retryCount": 0,
                            "truncated": false}).to_string(),
    })
}

/// A run's StepRuns as its `stepRuns` list names them (the batch's rows add the run's id and
/// version).
fn step_rows(scaffold: &Scaffold, run: &str) -> Vec<Value> {
    STEPS
        .iter()
        .enumerate()
        .map(|(order, step)| {
            json!({"id": format!("{run}/{step}"), "stepId": step,
                   "processStepId": scaffold.step_id(step), "order": order})
        })
        .collect()
}

fn now() -> String {
    stamp(chrono::Utc::now())
}

/// The one format the warm-up's dates take, so that `warm/forget.cypher` compares them as
/// strings.
fn stamp(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_twin_statement_swaps_labels_and_nothing_else() {
        let twin = twin_statement(
            "// aiden:run/apply_batch.cypher\nMATCH (r:Run {id: $id})-[:HAS_STEP_RUN]->(s:StepRun)\n\
             MERGE (w:Worker {id: x}) WITH r, s MATCH (:ProcessVersion), (:Tool), (t:Tools)",
        );
        assert_eq!(
            twin,
            "// aiden:warm/apply_batch.cypher (twin labels)\n\
             MATCH (r:WarmUpRun {id: $id})-[:HAS_STEP_RUN]->(s:WarmUpStepRun)\n\
             MERGE (w:WarmUpWorker {id: x}) WITH r, s MATCH (:WarmUpProcessVersion), \
             (:WarmUpTool), (t:Tools)"
        );
    }

    #[test]
    fn the_pass_statement_has_no_label_left_unswapped() {
        // Every `:Name` (a label: relationship types are UPPER_SNAKE) must be a twin, so a label
        // the pass statement gains later cannot make the warm-up write a real record.
        let twin = twin_statement(query_file!("run/apply_batch.cypher"));
        let mut labels = 0;
        for (at, _) in twin.match_indices(':') {
            let name: String = twin[at + 1..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let mut chars = name.chars();
            let is_label = chars.next().is_some_and(|c| c.is_ascii_uppercase())
                && chars.next().is_some_and(|c| c.is_ascii_lowercase());
            if is_label {
                assert!(
                    name.starts_with("WarmUp"),
                    ":{name} left in the twin statement"
                );
                labels += 1;
            }
        }
        assert!(labels >= 10, "only {labels} labels found");
    }
}
