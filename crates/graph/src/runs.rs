//! Runs: `Run`, `StepRun` (the audit record of its tool calls), the run event log,
//! `RunRequest` idempotency keys. The engine writes a whole batch of state changes in one
//! transaction with a handful of UNWIND statements (one per kind of change), so a step costs
//! a few rows, not a few round trips.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use aiden_domain::conversation::AltState;
use aiden_domain::execution::machine::RunStatus;
use aiden_domain::execution::schedule::StepStatus;

use crate::run_record::decode;
pub use crate::run_record::{RunRecord, StepRunRecord};
use crate::{bolt, cypher, query_file, Error, IdRow, Tx};

/// A stored run status; an unknown word is an error naming the run, never a default.
pub fn parse_run_status(run_id: &str, word: &str) -> Result<RunStatus, Error> {
    RunStatus::parse(word).map_err(|e| Error::Decode(format!("Run {run_id}: status: {e}")))
}

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

/// The rows of a Process's version `number` (`None`: its current one) that make its plan.
pub async fn plan_source(
    tx: &mut Tx,
    process_id: &str,
    number: Option<i64>,
) -> Result<Vec<PlanSourceRow>, Error> {
    tx.rows(
        cypher(query_file!("run/plan_source.cypher"), None)
            .param("processId", process_id)
            .param("number", number),
    )
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
    /// FORK-1: the run this one forks, and what it may reuse of it.
    pub fork: Option<ForkOrigin>,
}

/// Where a fork comes from (`(fork)-[:FORKED_FROM {atStep}]->(original)`).
#[derive(Debug, Clone, PartialEq)]
pub struct ForkOrigin {
    pub run_id: String,
    pub at_step: String,
    /// JSON text: step id → `Reusable`.
    pub reuse: String,
}

impl NewRun {
    /// The run as a row of the engine's batch (`$newRuns`), created with the pass that starts
    /// it (the same properties and revision rule as [`create`]).
    pub fn batch_row(&self, now: &str) -> Result<Value, Error> {
        let mut row = serde_json::to_value(&self.created_row(now)?.run)
            .map_err(|e| Error::Decode(e.to_string()))?;
        row["expectedRevision"] = serde_json::json!(self.expected_process_revision);
        Ok(row)
    }

    /// The row [`get`] returns for this run right after [`create`] committed it.
    pub fn created_row(&self, now: &str) -> Result<RunRow, Error> {
        let step_runs =
            serde_json::to_string(&self.steps).map_err(|e| Error::Decode(e.to_string()))?;
        Ok(RunRow {
            run: RunRecord {
                id: self.id.clone(),
                process_id: self.process_id.clone(),
                process_version: self.number,
                version_id: self.version_id.clone(),
                status: RunStatus::Queued,
                depth: self.depth,
                parent_run_id: self.parent_run_id.clone(),
                parent_step_run_id: self.parent_step_run_id.clone(),
                owner_id: self.owner_id.clone(),
                inputs: self.inputs.clone(),
                plan: self.plan.clone(),
                event_seq: 0,
                version: 0,
                created_at: now.to_owned(),
                started_at: None,
                finished_at: None,
                alternative_id: self.alternative_id.clone(),
                trigger_kind: self.trigger.as_ref().map(|t| t.0.clone()),
                trigger_subject_id: self.trigger.as_ref().map(|t| t.1.clone()),
                step_runs: Some(step_runs),
                owner_budget_micros: self.owner_budget_micros,
                output: None,
                error: None,
                waiting_for: None,
                events: None,
                forked_from: self.fork.as_ref().map(|f| f.run_id.clone()),
                fork_step: self.fork.as_ref().map(|f| f.at_step.clone()),
                reuse: self.fork.as_ref().map(|f| f.reuse.clone()),
            },
            steps: Vec::new(),
        })
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
        .param("ownerBudgetMicros", run.owner_budget_micros)
        .param("forkedFrom", run.fork.as_ref().map(|f| f.run_id.clone()))
        .param("forkStep", run.fork.as_ref().map(|f| f.at_step.clone()))
        .param("reuse", run.fork.as_ref().map(|f| f.reuse.clone()))
        .param("queued", RunStatus::Queued.as_str());
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

/// A run with its step runs, as stored, typed (`run_record`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct RunRow {
    pub run: RunRecord,
    pub steps: Vec<StepRunRecord>,
}

impl RunRow {
    /// The write version of the commit this row shows: every engine pass that changes a run
    /// increments the Run's `version` and stamps the StepRuns it writes with it (`runVersion`).
    pub fn version(&self) -> i64 {
        self.run.version
    }

    /// A StepRun newer than its Run: a read that saw a later commit in part. The Run's lock
    /// ([`get`]) rules that out; this checks it, so a broken lock discipline is reported, not
    /// shown.
    fn torn(&self) -> Option<String> {
        let version = self.version();
        self.steps
            .iter()
            .find(|s| s.run_version > version)
            .map(|s| {
                format!(
                    "StepRun {} at write {}, its Run at {version}",
                    s.id, s.run_version
                )
            })
    }

    /// The StepRuns the engine has not created yet: those of a run it has not written since
    /// [`create`] (empty once they exist).
    pub fn unwritten_step_runs(&self) -> Result<Vec<NewStepRun>, Error> {
        match (&self.run.step_runs, self.steps.is_empty()) {
            (Some(text), true) => serde_json::from_str(text)
                .map_err(|e| Error::Decode(format!("Run {}: field `stepRuns`: {e}", self.run.id))),
            _ => Ok(Vec::new()),
        }
    }

    /// The run's step records, a not yet written StepRun as `pending` (how a view shows it).
    pub fn steps_or_planned(&self) -> Result<Vec<StepRunRecord>, Error> {
        if !self.steps.is_empty() {
            return Ok(self.steps.clone());
        }
        Ok(self
            .unwritten_step_runs()?
            .into_iter()
            .map(|s| StepRunRecord {
                process_step_id: Some(s.process_step_id),
                run_version: self.run.version,
                ..StepRunRecord::pending(s.id, self.run.id.clone(), s.step_id, s.order)
            })
            .collect())
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
    /// What the line names beside the run (read with it, never under its lock).
    #[serde(flatten)]
    pub names: RunListNames,
}

/// The names a run-list line shows beside the run: its Process's and owner's, and for a run
/// that answers a conversation turn, its Alternative and the message (Alternative) it answered.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunListNames {
    #[serde(default)]
    pub process_name: Option<String>,
    #[serde(default)]
    pub owner_name: Option<String>,
    #[serde(default)]
    pub conversation_id: Option<String>,
    #[serde(default)]
    pub answer_id: Option<String>,
    #[serde(default)]
    pub answer_turn_id: Option<String>,
    #[serde(default)]
    pub message_id: Option<String>,
    #[serde(default)]
    pub message_turn_id: Option<String>,
    #[serde(default)]
    pub message_text: Option<String>,
}

/// How many characters of the answered message a run-list line carries.
pub const MESSAGE_PREVIEW_CHARS: i64 = 200;

impl RunListRow {
    /// Whether the line shows one commit. A run's status, start and end move together: a run
    /// started has its `startedAt` (one canceled before it started has none), a settled one
    /// its `finishedAt`, and nothing else has either; a line read while a commit landed can
    /// break that, and is then read again under its Run's lock.
    fn is_whole(&self) -> Result<bool, Error> {
        let status = parse_run_status(&self.id, &self.status)?;
        let started = self.started_at.is_some();
        Ok(self.finished_at.is_some() == status.is_settled()
            && match status {
                RunStatus::Queued => !started,
                RunStatus::Running | RunStatus::WaitingForApproval => started,
                RunStatus::Completed | RunStatus::Failed | RunStatus::Canceled => true,
            })
    }
}

/// What the run list is narrowed to; `owner_id: None` lists every owner's runs.
pub struct RunFilter<'a> {
    pub owner_id: Option<&'a str>,
    pub process_id: Option<&'a str>,
    pub status: Option<&'a str>,
    /// Only runs whose id starts with this (the console's search box).
    pub id_prefix: Option<&'a str>,
    pub before: &'a str,
    pub limit: i64,
}

/// The run list, each line as of one commit: read without locks (the list must not hold the
/// locks of the runs the engine is writing), a line that shows a commit in part read again
/// under its Run's lock (`run/list_row.cypher`), counted (`aiden_graph_relocked_reads_total`).
pub async fn list(tx: &mut Tx, f: &RunFilter<'_>) -> Result<Vec<RunListRow>, Error> {
    let q = cypher(query_file!("run/list.cypher"), None)
        .param("ownerId", f.owner_id)
        .param("processId", f.process_id)
        .param("status", f.status)
        .param("idPrefix", f.id_prefix)
        .param("before", f.before)
        .param("limit", f.limit)
        .param("preview", MESSAGE_PREVIEW_CHARS);
    let mut rows: Vec<RunListRow> = tx.rows(q).await?;
    for row in &mut rows {
        if row.is_whole()? {
            continue;
        }
        metrics::counter!("aiden_graph_relocked_reads_total", "what" => "run_list").increment(1);
        let q = cypher(query_file!("run/list_row.cypher"), None).param("id", row.id.as_str());
        let mut locked: RunListRow = tx
            .one(q)
            .await?
            .ok_or_else(|| Error::Torn(format!("run {}: listed, then gone", row.id)))?;
        if !locked.is_whole()? {
            return Err(Error::Torn(format!("run {}: its line under lock", row.id)));
        }
        // The names are not the run's state: the first read's stand.
        locked.names = std::mem::take(&mut row.names);
        *row = locked;
    }
    Ok(rows)
}

/// A run and its step runs as of one commit: the Run is read under its write lock
/// (`run/get_run.cypher`), which every commit that changes the run holds until it has been
/// applied whole, then its StepRuns in the same transaction. The caller ends the transaction
/// (a read rolls back: the lock changed nothing). A read that still shows two commits is an
/// error, logged and counted (`aiden_graph_torn_reads_total`), never returned.
pub async fn get(tx: &mut Tx, id: &str) -> Result<Option<RunRow>, Error> {
    #[derive(Deserialize)]
    struct RunOnly {
        run: Value,
    }
    let run: Option<RunOnly> = tx
        .one(cypher(query_file!("run/get_run.cypher"), None).param("id", id))
        .await?;
    let Some(RunOnly { run }) = run.filter(|r| !r.run.is_null()) else {
        return Ok(None);
    };
    let row = RunRow {
        run: decode("Run", run)?,
        steps: step_runs_of(tx, id)
            .await?
            .into_iter()
            .map(|s| decode("StepRun", s))
            .collect::<Result<_, _>>()?,
    };
    if let Some(what) = row.torn() {
        metrics::counter!("aiden_graph_torn_reads_total", "what" => "run").increment(1);
        tracing::error!(run_id = %id, %what, "a run read showed two commits");
        return Err(Error::Torn(format!("run {id}: {what}")));
    }
    Ok(Some(row))
}

/// The StepRuns of run `id` (`run/step_runs.cypher`), as stored.
pub(crate) async fn step_runs_of(tx: &mut Tx, id: &str) -> Result<Vec<Value>, Error> {
    #[derive(Deserialize)]
    struct Steps {
        steps: Vec<Value>,
    }
    let q = cypher(query_file!("run/step_runs.cypher"), None).param("id", id);
    Ok(tx
        .one::<Steps>(q)
        .await?
        .map(|s| s.steps)
        .unwrap_or_default())
}

/// Settled runs among `ids`, each with its StepRuns (a settled record no longer changes, so
/// no lock is taken); ids of runs that are not settled or do not exist are left out.
pub async fn settled_many(tx: &mut Tx, ids: &[String]) -> Result<Vec<RunRow>, Error> {
    tx.rows(settled_query(ids))
        .await?
        .into_iter()
        .map(SettledRaw::decode)
        .collect()
}

/// One settled run as [`settled_many`] reads it, in an auto-commit read (one round trip: a
/// fork reads its original on the request's way).
pub async fn settled_one(graph: &crate::Graph, id: &str) -> Result<Option<RunRow>, Error> {
    let rows: Vec<SettledRaw> = graph.read_rows(settled_query(&[id.to_owned()])).await?;
    rows.into_iter().next().map(SettledRaw::decode).transpose()
}

fn settled_query(ids: &[String]) -> neo4rs::Query {
    cypher(query_file!("run/settled_many.cypher"), None)
        .param("ids", ids.to_vec())
        .param("settled", RunStatus::words(RunStatus::is_settled))
}

#[derive(Deserialize)]
struct SettledRaw {
    run: Value,
    steps: Vec<Value>,
}

impl SettledRaw {
    fn decode(self) -> Result<RunRow, Error> {
        Ok(RunRow {
            run: decode("Run", self.run)?,
            steps: self
                .steps
                .into_iter()
                .map(|s| decode("StepRun", s))
                .collect::<Result<_, _>>()?,
        })
    }
}

/// The newest settled top-level runs of `process_id` at versions below `below`; only
/// `owner_id`'s unless it is `None`.
pub async fn settled_of(
    tx: &mut Tx,
    process_id: &str,
    below: i64,
    owner_id: Option<&str>,
    limit: i64,
) -> Result<Vec<String>, Error> {
    let q = cypher(query_file!("run/settled_of.cypher"), None)
        .param("processId", process_id)
        .param("below", below)
        .param("ownerId", owner_id)
        .param("limit", limit)
        .param("settled", RunStatus::words(RunStatus::is_settled));
    let rows: Vec<IdRow> = tx.rows(q).await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
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
    let open = RunStatus::words(|s| !s.is_settled());
    tx.rows(cypher(query_file!("run/unfinished.cypher"), None).param("open", open))
        .await
}

/// What a cancel request met.
#[derive(Debug, Clone, Deserialize)]
pub struct CancelRequest {
    /// The run's status when the request was recorded (or found it settled).
    pub status: String,
    /// Recorded: the run was not settled (whatever it waited for).
    pub requested: bool,
}

/// Records a cancel request on a run that is not settled; `None` for an unknown run.
pub async fn request_cancel(tx: &mut Tx, id: &str) -> Result<Option<CancelRequest>, Error> {
    let settled = RunStatus::words(RunStatus::is_settled);
    let q = cypher(query_file!("run/request_cancel.cypher"), None)
        .param("id", id)
        .param("settled", settled);
    tx.one(q).await
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

/// Events written one node each, before the log was kept on the Run (`RunEvent`).
fn legacy_events_query(run_id: &str, after: i64, limit: i64) -> neo4rs::Query {
    cypher(query_file!("run/legacy_events_after.cypher"), None)
        .param("runId", run_id)
        .param("after", after)
        .param("limit", limit)
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
        RunStatus::parse(&self.status).is_ok_and(RunStatus::is_settled)
    }
}

/// A run's head and the events after `after` (at most `limit`), as of one commit
/// (`run/tail.cypher`): what an event stream reads of the graph.
pub async fn tail(
    tx: &mut Tx,
    run_id: &str,
    after: i64,
    limit: i64,
) -> Result<Option<(RunHead, Vec<EventRow>)>, Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Tail {
        owner_id: String,
        status: String,
        event_seq: i64,
        process_id: Option<String>,
        parts: Vec<String>,
    }
    let q = cypher(query_file!("run/tail.cypher"), None)
        .param("runId", run_id)
        .param("after", after)
        .param("limit", limit);
    let Some(t) = tx.one::<Tail>(q).await? else {
        return Ok(None);
    };
    let (head, parts) = (
        RunHead {
            owner_id: t.owner_id,
            status: t.status,
            event_seq: t.event_seq,
            process_id: t.process_id,
        },
        t.parts,
    );
    parse_run_status(run_id, &head.status)?;
    let single = tx.rows(legacy_events_query(run_id, after, limit)).await?;
    let events = merge_events(vec![LogRow { parts }], single, after, limit)?;
    Ok(Some((head, events)))
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
    /// FORK-1: `{stepRunId, from}`: a fork's reused StepRun `REUSED_FROM` the original's.
    pub reused: Vec<Value>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.new_runs.is_empty()
            && self.step_runs.is_empty()
            && self.steps.is_empty()
            && self.runs.is_empty()
            && self.links.is_empty()
            && self.invokes.is_empty()
            && self.reused.is_empty()
    }
}

/// Writes the batch; answers the ids of the `new_runs` it created (one whose Process moved on
/// since its plan was read is not).
pub async fn apply(tx: &mut Tx, batch: &Batch) -> Result<Vec<String>, Error> {
    apply_statement(tx, query_file!("run/apply_batch.cypher"), batch).await
}

/// [`apply`], then the commit, in one round trip (`Tx::run_and_commit`). The statement's rows
/// are not read, so a batch that creates runs fails its statement when one was not made (its
/// Process moved on): the server then ignores the COMMIT. `Ok(false)`: that happened, nothing
/// was committed, and the caller redoes the batch with [`apply`] to learn which.
pub async fn apply_and_commit(tx: Tx, batch: &Batch) -> Result<bool, Error> {
    let q = apply_query(query_file!("run/apply_batch.cypher"), batch)?.param("unmadeFails", true);
    match tx.run_and_commit(q).await {
        Ok(()) => Ok(true),
        Err(Error::Query(m)) if m.contains(UNMADE) && !batch.new_runs.is_empty() => Ok(false),
        Err(e) => Err(e),
    }
}

/// The code of the error `run/apply_batch.cypher` fails with when a run was not made.
const UNMADE: &str = "Statement.ArithmeticError";

/// `run/apply_batch.cypher`'s answer: the ids of the new runs it created.
#[derive(Deserialize)]
struct Made {
    made: Vec<String>,
}

/// [`apply`] with the pass statement's text given: the warm-up's twin of it (`warm/passes.rs`).
pub(crate) async fn apply_statement(
    tx: &mut Tx,
    statement: &str,
    batch: &Batch,
) -> Result<Vec<String>, Error> {
    let q = apply_query(statement, batch)?;
    Ok(tx.one::<Made>(q).await?.map(|m| m.made).unwrap_or_default())
}

/// The pass statement with its batch and status words bound.
fn apply_query(statement: &str, batch: &Batch) -> Result<neo4rs::Query, Error> {
    // One map parameter, not one list per part: Neo4j keys its plan cache by the parameters'
    // types, and an empty list is typed apart from a list of maps, so each mix of empty and
    // non-empty parts was planned anew (about a second each for this statement).
    let parts = serde_json::json!({
        "newRuns": batch.new_runs, "stepRuns": batch.step_runs, "steps": batch.steps,
        "runs": batch.runs, "links": batch.links, "invokes": batch.invokes,
        "reused": batch.reused,
    });
    let q = cypher(statement, None)
        .param("batch", bolt(parts)?)
        .param("queued", RunStatus::Queued.as_str())
        .param("stepPending", StepStatus::Pending.as_str())
        .param("settled", RunStatus::words(RunStatus::is_settled))
        .param("completed", RunStatus::Completed.as_str())
        .param("generating", AltState::Generating.as_str())
        .param("valid", AltState::Valid.as_str())
        .param("failed", AltState::Failed.as_str())
        .param("unmadeFails", false)
        .param("zero", 0);
    Ok(crate::knowledge::for_ingestion(q))
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
        .param("calls", bolt(Value::Array(calls))?)
        .param("queued", StepStatus::Queued.as_str());
    tx.run(q).await
}
