//! Runs: `Run`, `StepRun` (the audit record of its tool calls), the run event log,
//! `RunRequest` idempotency keys. The engine writes a whole batch of state changes in one
//! transaction with a handful of UNWIND statements (one per kind of change), so a step costs
//! a few rows, not a few round trips.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{bolt, cypher, query_file, Error, IdRow, Tx};

/// One step row of the current version of a Process, with what it calls.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanSourceRow {
    pub version_id: String,
    pub number: i64,
    pub doc: String,
    pub enabled: bool,
    pub revision: i64,
    pub owner_id: String,
    pub shared: bool,
    pub step_id: String,
    pub process_step_id: String,
    pub tool_id: Option<String>,
    pub tool_doc: Option<String>,
    pub timeout: Option<i64>,
    pub child_process_id: Option<String>,
}

pub async fn plan_source(tx: &mut Tx, process_id: &str) -> Result<Vec<PlanSourceRow>, Error> {
    tx.rows(cypher(query_file!("run/plan_source.cypher"), None).param("processId", process_id))
        .await
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewStepRun {
    pub id: String,
    pub step_id: String,
    pub process_step_id: String,
    pub order: i64,
}

#[derive(Debug, Clone)]
pub struct NewRun {
    pub id: String,
    pub process_id: String,
    pub number: i64,
    pub version_id: String,
    pub depth: i64,
    pub parent_run_id: Option<String>,
    pub parent_step_run_id: Option<String>,
    pub owner_id: String,
    /// JSON text of the initial context.
    pub inputs: String,
    /// JSON text of the resolved plan (so a run never depends on later edits).
    pub plan: String,
    pub steps: Vec<NewStepRun>,
    /// The agent Alternative this run generates (its content is written when the run settles).
    pub alternative_id: Option<String>,
    /// Create only if the Process is still at this revision, enabled and on this version (a
    /// plan from a cache); otherwise nothing is created and [`create`] answers `StalePlan`.
    pub expected_process_revision: Option<i64>,
    /// What started the run when no request did: `(kind, subjectId)`, e.g. memory upkeep's
    /// `("compression", conversationId)`.
    pub trigger: Option<(String, String)>,
    /// The owner's daily money budget when the run started, in micro-dollars (AGT-14: the
    /// engine holds the run's spend to it; child runs inherit it).
    pub owner_budget_micros: Option<i64>,
}

impl NewRun {
    /// The run as a row of the engine's batch (`$newRuns`), created with the pass that starts
    /// it (the same properties and revision rule as [`create`]).
    pub fn batch_row(&self, now: &str) -> Value {
        let mut row = self.created_row(now).run;
        row["expectedRevision"] = serde_json::json!(self.expected_process_revision);
        row
    }

    /// The row [`get`] returns for this run right after [`create`] committed it.
    pub fn created_row(&self, now: &str) -> RunRow {
        RunRow {
            run: serde_json::json!({
                "id": self.id, "processId": self.process_id, "processVersion": self.number,
                "versionId": self.version_id, "status": "queued", "depth": self.depth,
                "parentRunId": self.parent_run_id, "parentStepRunId": self.parent_step_run_id,
                "ownerId": self.owner_id, "inputs": self.inputs, "plan": self.plan,
                "eventSeq": 0, "createdAt": now, "alternativeId": self.alternative_id,
                "triggerKind": self.trigger.as_ref().map(|t| &t.0),
                "triggerSubjectId": self.trigger.as_ref().map(|t| &t.1),
                "stepRuns": serde_json::to_string(&self.steps).unwrap_or_default(),
                "ownerBudgetMicros": self.owner_budget_micros,
            }),
            steps: Vec::new(),
        }
    }
}

/// Creates the Run node only: its StepRuns are listed in `stepRuns` and created by the engine
/// when it first writes the run (the Batch's `step_runs`), so only the engine's single writer
/// ever writes StepRun records (API inserts and engine updates of the same records only
/// contended with each other).
pub async fn create(tx: &mut Tx, run: &NewRun, now: &str) -> Result<(), Error> {
    let steps = serde_json::to_string(&run.steps).map_err(|e| Error::Decode(e.to_string()))?;
    let q = cypher(query_file!("run/create_run.cypher"), None)
        .param("id", run.id.as_str())
        .param("processId", run.process_id.as_str())
        .param("alternativeId", run.alternative_id.clone())
        .param("number", run.number)
        .param("versionId", run.version_id.as_str())
        .param("depth", run.depth)
        .param("parentRunId", run.parent_run_id.clone())
        .param("parentStepRunId", run.parent_step_run_id.clone())
        .param("ownerId", run.owner_id.as_str())
        .param("inputs", run.inputs.as_str())
        .param("plan", run.plan.as_str())
        .param("now", now)
        .param("expectedRevision", run.expected_process_revision)
        .param("triggerKind", run.trigger.as_ref().map(|t| t.0.clone()))
        .param(
            "triggerSubjectId",
            run.trigger.as_ref().map(|t| t.1.clone()),
        )
        .param("stepRuns", steps)
        .param("ownerBudgetMicros", run.owner_budget_micros);
    #[derive(Deserialize)]
    struct N {
        n: i64,
    }
    let created = tx.one::<N>(q).await?.map_or(0, |r| r.n);
    if created == 0 && run.expected_process_revision.is_some() {
        return Err(Error::StalePlan);
    }
    if created != 1 {
        // The version vanished under us: let the caller's retry re-read it.
        return Err(Error::Transient(format!("run {}: not created", run.id)));
    }
    if let Some(parent) = &run.parent_step_run_id {
        tx.run(
            cypher(query_file!("run/link_child.cypher"), None)
                .param("stepRunId", parent.as_str())
                .param("childRunId", run.id.as_str()),
        )
        .await?;
    }
    Ok(())
}

/// Claims an idempotency key for a new run; `Error::Constraint` when it is taken.
pub async fn claim_request(tx: &mut Tx, key: &str, run_id: &str, now: &str) -> Result<(), Error> {
    tx.run(
        cypher(query_file!("run/claim_request.cypher"), None)
            .param("key", key)
            .param("runId", run_id)
            .param("now", now),
    )
    .await
}

pub async fn find_request(tx: &mut Tx, key: &str) -> Result<Option<String>, Error> {
    Ok(tx
        .one::<IdRow>(cypher(query_file!("run/find_request.cypher"), None).param("key", key))
        .await?
        .map(|r| r.id))
}

/// A run with its step runs, as stored (JSON-valued fields are JSON text).
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct RunRow {
    pub run: Value,
    pub steps: Vec<Value>,
}

impl RunRow {
    /// A settled Run with a StepRun not settled: the commit that settled it is only partly
    /// visible (`aiden check` reports one that stays so: unsettled_steps_of_settled_runs).
    fn settled_before_its_steps(&self) -> bool {
        let status = |v: &Value| v.get("status").and_then(Value::as_str).map(str::to_owned);
        let settled = matches!(
            status(&self.run).as_deref(),
            Some("completed" | "failed" | "canceled")
        );
        settled
            && self.steps.iter().any(|s| {
                !matches!(
                    status(s).as_deref(),
                    Some("completed" | "failed" | "skipped" | "canceled")
                )
            })
    }

    /// The StepRuns the engine has not created yet: those of a run it has not written since
    /// [`create`] (empty once they exist).
    pub fn unwritten_step_runs(&self) -> Vec<NewStepRun> {
        if !self.steps.is_empty() {
            return Vec::new();
        }
        self.run
            .get("stepRuns")
            .and_then(Value::as_str)
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default()
    }

    /// The run's step rows, a not yet written StepRun as `pending` (how a view shows it).
    pub fn steps_or_planned(&self) -> Vec<Value> {
        if !self.steps.is_empty() {
            return self.steps.clone();
        }
        let run_id = self.run.get("id").cloned().unwrap_or(Value::Null);
        self.unwritten_step_runs()
            .into_iter()
            .map(|s| {
                serde_json::json!({"id": s.id, "runId": run_id, "stepId": s.step_id,
                                   "processStepId": s.process_step_id, "status": "pending",
                                   "attempts": 0, "order": s.order})
            })
            .collect()
    }
}

/// One line of the run list.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunListRow {
    pub id: String,
    pub process_id: String,
    pub process_version: i64,
    pub status: String,
    pub depth: i64,
    pub parent_run_id: Option<String>,
    pub owner_id: String,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    #[serde(default)]
    pub trigger_kind: Option<String>,
    #[serde(default)]
    pub trigger_subject_id: Option<String>,
}

/// What the run list is narrowed to; `owner_id: None` lists every owner's runs.
pub struct RunFilter<'a> {
    pub owner_id: Option<&'a str>,
    pub process_id: Option<&'a str>,
    pub status: Option<&'a str>,
    pub before: &'a str,
    pub limit: i64,
}

pub async fn list(tx: &mut Tx, f: &RunFilter<'_>) -> Result<Vec<RunListRow>, Error> {
    let q = cypher(query_file!("run/list.cypher"), None)
        .param("ownerId", f.owner_id)
        .param("processId", f.process_id)
        .param("status", f.status)
        .param("before", f.before)
        .param("limit", f.limit);
    tx.rows(q).await
}

/// A run and its step runs: the Run, then its StepRuns in a second statement. Neo4j readers
/// take no locks, and a commit being applied can be seen in part, even across two statements
/// (the settling Run already written, some of its StepRuns not yet): a Run read as settled with
/// a StepRun that is not is read again, until the commit has landed whole.
pub async fn get(tx: &mut Tx, id: &str) -> Result<Option<RunRow>, Error> {
    let mut attempt = 0;
    loop {
        let Some(row) = get_once(tx, id).await? else {
            return Ok(None);
        };
        attempt += 1;
        if !row.settled_before_its_steps() || attempt >= TORN_READS {
            return Ok(Some(row));
        }
        tokio::time::sleep(std::time::Duration::from_millis(2 * attempt)).await;
    }
}

/// How often [`get`] reads a run that a commit was caught landing in.
const TORN_READS: u64 = 20;

async fn get_once(tx: &mut Tx, id: &str) -> Result<Option<RunRow>, Error> {
    #[derive(Deserialize)]
    struct RunOnly {
        run: Value,
    }
    #[derive(Deserialize)]
    struct Steps {
        steps: Vec<Value>,
    }
    let run: Option<RunOnly> = tx
        .one(cypher(query_file!("run/get_run.cypher"), None).param("id", id))
        .await?;
    let Some(RunOnly { run }) = run.filter(|r| !r.run.is_null()) else {
        return Ok(None);
    };
    let steps: Option<Steps> = tx
        .one(cypher(query_file!("run/step_runs.cypher"), None).param("id", id))
        .await?;
    Ok(Some(RunRow {
        run,
        steps: steps.map(|s| s.steps).unwrap_or_default(),
    }))
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Unfinished {
    pub id: String,
    pub status: String,
    pub cancel_requested: bool,
}

/// Runs not yet settled (for recovery after a restart, and durable cancel requests).
pub async fn unfinished(tx: &mut Tx) -> Result<Vec<Unfinished>, Error> {
    tx.rows(cypher(query_file!("run/unfinished.cypher"), None))
        .await
}

/// Records a cancel request on an unsettled run; `false` if it had already settled.
pub async fn request_cancel(tx: &mut Tx, id: &str) -> Result<bool, Error> {
    Ok(tx
        .one::<IdRow>(cypher(query_file!("run/request_cancel.cypher"), None).param("id", id))
        .await?
        .is_some())
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepState {
    pub status: String,
    pub run_status: String,
}

pub async fn step_state(tx: &mut Tx, step_run_id: &str) -> Result<Option<StepState>, Error> {
    tx.one(cypher(query_file!("run/step_state.cypher"), None).param("id", step_run_id))
        .await
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EventRow {
    pub seq: i64,
    pub kind: String,
    pub step_id: Option<String>,
    pub at: String,
    /// JSON text.
    pub data: Option<String>,
}

#[derive(Deserialize)]
struct LogRow {
    parts: Vec<String>,
}

/// One part of a run's event log (one engine pass's events: a JSON array of [`EventRow`]s),
/// as the Run's `events` list and older runs' chunks hold it.
pub fn log_part(text: &str) -> Result<Vec<EventRow>, Error> {
    serde_json::from_str(text).map_err(|e| Error::Decode(e.to_string()))
}

/// Decodes the log's parts (the Run's `events`, older runs' chunks) and adds the pre-chunk
/// single events: the `limit` first events after `after`, in order.
fn merge_events(
    log: Vec<LogRow>,
    single: Vec<EventRow>,
    after: i64,
    limit: i64,
) -> Result<Vec<EventRow>, Error> {
    let mut events = single;
    for part in log.into_iter().flat_map(|l| l.parts) {
        let rows = log_part(&part)?;
        events.extend(rows.into_iter().filter(|e| e.seq > after));
    }
    events.sort_by_key(|e| e.seq);
    events.truncate(limit.max(0) as usize);
    Ok(events)
}

fn events_queries(run_id: &str, after: i64, limit: i64) -> (neo4rs::Query, neo4rs::Query) {
    let chunks = cypher(query_file!("run/events_after.cypher"), None)
        .param("runId", run_id)
        .param("after", after)
        .param("limit", limit);
    let single = cypher(query_file!("run/legacy_events_after.cypher"), None)
        .param("runId", run_id)
        .param("after", after)
        .param("limit", limit);
    (chunks, single)
}

pub async fn events_after(
    tx: &mut Tx,
    run_id: &str,
    after: i64,
    limit: i64,
) -> Result<Vec<EventRow>, Error> {
    let (chunks, single) = events_queries(run_id, after, limit);
    let chunks = tx.rows(chunks).await?;
    let single = tx.rows(single).await?;
    merge_events(chunks, single, after, limit)
}

/// [`events_after`] as auto-commit reads, for event streams.
pub async fn events_after_autocommit(
    graph: &crate::Graph,
    run_id: &str,
    after: i64,
    limit: i64,
) -> Result<Vec<EventRow>, Error> {
    let (chunks, single) = events_queries(run_id, after, limit);
    let (chunks, single) = futures::try_join!(graph.read_rows(chunks), graph.read_rows(single))?;
    merge_events(chunks, single, after, limit)
}

/// A run's owner, status and the sequence number of its last event.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunHead {
    pub owner_id: String,
    pub status: String,
    pub event_seq: i64,
    #[serde(default)]
    pub process_id: Option<String>,
}

impl RunHead {
    pub fn is_settled(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "canceled")
    }
}

pub async fn head(graph: &crate::Graph, run_id: &str) -> Result<Option<RunHead>, Error> {
    let q = cypher(query_file!("run/head.cypher"), None).param("id", run_id);
    Ok(graph.read_rows(q).await?.into_iter().next())
}

/// [`head`] inside a write transaction.
pub async fn head_in(tx: &mut Tx, run_id: &str) -> Result<Option<RunHead>, Error> {
    tx.one(cypher(query_file!("run/head.cypher"), None).param("id", run_id))
        .await
}

/// Everything one engine pass changes, written by one statement (`run/apply_batch.cypher`).
#[derive(Debug, Default, Clone, Serialize)]
pub struct Batch {
    /// [`NewRun::batch_row`] per Run the engine creates in this pass.
    pub new_runs: Vec<Value>,
    /// `{id, runId, stepId, processStepId, order}` per StepRun to create (`pending`) before the
    /// changes below: those of runs the engine writes for the first time.
    pub step_runs: Vec<Value>,
    /// `{id, set: {prop: value}, workers: [workerId], lost: [{workerId, attempt, at}],
    /// retries: [{at, durationMs, log}], audits: [agent pipeline record]}` per StepRun.
    pub steps: Vec<Value>,
    /// `{id, set: {prop: value}, events: {text, range: [first, last]} | null}` per Run: `text`
    /// the JSON array of the pass's [`EventRow`]s, appended to the Run's `events` list.
    pub runs: Vec<Value>,
    /// Runs started in this pass, to link to their definitions and caller.
    pub links: Vec<String>,
    /// `{stepRunId, toolId}`: a static step that ran on another Tool than its step names.
    pub invokes: Vec<Value>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.new_runs.is_empty()
            && self.step_runs.is_empty()
            && self.steps.is_empty()
            && self.runs.is_empty()
            && self.links.is_empty()
            && self.invokes.is_empty()
    }
}

/// Writes the batch; answers the ids of the `new_runs` it created (one whose Process moved on
/// since its plan was read is not).
pub async fn apply(tx: &mut Tx, batch: &Batch) -> Result<Vec<String>, Error> {
    let q = cypher(query_file!("run/apply_batch.cypher"), None)
        .param("newRuns", bolt(Value::Array(batch.new_runs.clone()))?)
        .param("stepRuns", bolt(Value::Array(batch.step_runs.clone()))?)
        .param("steps", bolt(Value::Array(batch.steps.clone()))?)
        .param("runs", bolt(Value::Array(batch.runs.clone()))?)
        .param("links", batch.links.clone())
        .param("invokes", bolt(Value::Array(batch.invokes.clone()))?);
    #[derive(Deserialize)]
    struct Made {
        made: Vec<String>,
    }
    Ok(tx.one::<Made>(q).await?.map(|m| m.made).unwrap_or_default())
}

/// What a worker needs to call a Tool, and what the engine re-checks at execution.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRow {
    pub tool_doc: String,
    pub service_doc: String,
    pub secret_id: Option<String>,
    pub secret_owner_id: Option<String>,
    pub ciphertext: Option<String>,
    pub tool_revision: i64,
    pub service_revision: i64,
    pub secret_revision: Option<i64>,
}

pub async fn tool_for_call(
    graph: &crate::Graph,
    tool_id: &str,
) -> Result<Option<ToolCallRow>, Error> {
    let q = cypher(query_file!("run/tool_for_call.cypher"), None).param("toolId", tool_id);
    Ok(graph.read_rows(q).await?.into_iter().next())
}

/// The caller's own enabled Tool made from `template_id`, newest first: a shared Process step
/// runs on it for that caller instead of the Tool it names (docs/connections.md).
pub async fn callers_tool_of_template(
    graph: &crate::Graph,
    template_id: &str,
    owner_id: &str,
) -> Result<Option<String>, Error> {
    let q = callers_tool_query(template_id, owner_id);
    Ok(graph
        .read_rows::<IdRow>(q)
        .await?
        .into_iter()
        .next()
        .map(|r| r.id))
}

/// [`callers_tool_of_template`] inside a transaction (the engine, deciding a run's agent tools).
pub async fn callers_tool_of_template_in(
    tx: &mut Tx,
    template_id: &str,
    owner_id: &str,
) -> Result<Option<String>, Error> {
    let q = callers_tool_query(template_id, owner_id);
    Ok(tx.one::<IdRow>(q).await?.map(|r| r.id))
}

fn callers_tool_query(template_id: &str, owner_id: &str) -> neo4rs::Query {
    cypher(query_file!("run/callers_tool_of_template.cypher"), None)
        .param("templateId", template_id)
        .param("ownerId", owner_id)
}

/// Worker heartbeats: `{id, set: {type, status, currentJobId, lastHeartbeat, ...}}`.
pub async fn heartbeat(tx: &mut Tx, workers: Vec<Value>) -> Result<(), Error> {
    tx.run(
        cypher(query_file!("worker/heartbeat.cypher"), None)
            .param("workers", bolt(Value::Array(workers))?),
    )
    .await
}

#[derive(Debug, Clone, Deserialize)]
pub struct WorkerRow {
    pub worker: Value,
}

pub async fn list_workers(tx: &mut Tx) -> Result<Vec<Value>, Error> {
    Ok(tx
        .rows::<WorkerRow>(cypher(query_file!("worker/list.cypher"), None))
        .await?
        .into_iter()
        .map(|r| r.worker)
        .collect())
}

/// Marks workers whose last heartbeat is older than `cutoff` offline; returns their ids.
pub async fn mark_stale_workers_offline(tx: &mut Tx, cutoff: &str) -> Result<Vec<String>, Error> {
    Ok(tx
        .rows::<IdRow>(
            cypher(query_file!("worker/mark_stale_offline.cypher"), None).param("cutoff", cutoff),
        )
        .await?
        .into_iter()
        .map(|r| r.id)
        .collect())
}

/// Detaches past step runs from a Tool being deleted (history keeps the id, not the edge).
pub async fn forget_tool(tx: &mut Tx, tool_id: &str) -> Result<(), Error> {
    tx.run(cypher(query_file!("run/forget_tool.cypher"), None).param("toolId", tool_id))
        .await
}

/// An agent loop's new call step runs (`run/create_calls.cypher`): `{id, runId, stepId,
/// parentId, kind, toolId, order, at, spec}` each.
pub async fn create_calls(tx: &mut Tx, calls: Vec<Value>) -> Result<(), Error> {
    let q = cypher(query_file!("run/create_calls.cypher"), None)
        .param("calls", bolt(Value::Array(calls))?);
    tx.run(q).await
}
