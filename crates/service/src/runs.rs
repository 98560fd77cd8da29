//! Runs on the mutation path: start (with `Idempotency-Key`), read, cancel, the event log and
//! the worker list. A start is handed to this process's engine when it leads (created in its
//! group commit, answered once durable); otherwise it writes the Run in one transaction, then
//! tells the engine, and if that message is lost the engine's sweep finds the queued run within
//! seconds.

use aiden_domain::access::{ensure_readable, Owned, Sharing};
use aiden_domain::execution::agent::{ApprovalDecision, ApprovalRequest, MAX_APPROVAL_TTL_SECONDS};
use aiden_domain::execution::machine::{self, EventKind};
use aiden_domain::execution::schedule::StepStatus;
use aiden_domain::user::Caller;
use aiden_domain::Error as Domain;
use aiden_engine::plan::{self, LoadError};
use aiden_engine::{step_run_id, Started};
use aiden_graph::runs::{self, EventRow, NewRun, NewStepRun};
use aiden_jobs::EngineMessage;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::{
    tx::{read_tx, write_tx},
    views::{ApprovalAnswer, CancelAnswer, Decision, RunTrigger, RunView, WorkerView},
    App, Error, Result,
};

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunStarted {
    pub run_id: String,
    pub status: String,
    /// The run as created; `None` when an `Idempotency-Key` returned an existing run.
    #[serde(skip)]
    pub created: Option<runs::RunRow>,
}

fn load_error(e: LoadError) -> Error {
    match e {
        LoadError::NotFound => Domain::NotFound.into(),
        LoadError::Corrupt(m) => Domain::invariant("PROC-2", "/steps", m).into(),
        LoadError::Graph(g) => g.into(),
    }
}

/// The current version of a Process the caller may run now: visible (OWN-2, else 404) and
/// enabled (PROC-8).
pub(crate) async fn load_runnable(
    tx: &mut aiden_graph::Tx,
    caller: &Caller,
    process_id: &str,
) -> Result<plan::Loaded> {
    let loaded = plan::load(tx, process_id).await.map_err(load_error)?;
    check_runnable(caller, process_id, &loaded)?;
    Ok(loaded)
}

/// OWN-2 (404 when not visible) and PROC-8 (disabled) for a loaded plan.
pub(crate) fn check_runnable(
    caller: &Caller,
    process_id: &str,
    loaded: &plan::Loaded,
) -> Result<()> {
    ensure_readable(
        caller,
        &Owned {
            owner_id: &loaded.owner_id,
            shared: loaded.shared,
            sharing: Sharing::Shareable,
        },
    )?;
    if !loaded.enabled {
        return Err(Domain::invariant(
            "PROC-8",
            "/enabled",
            format!("process `{process_id}` is disabled"),
        )
        .into());
    }
    Ok(())
}

/// A depth-1 run of `loaded` started by the caller, optionally generating an agent Alternative.
pub(crate) fn top_level_run(
    run_id: &str,
    caller: &Caller,
    process_id: &str,
    loaded: &plan::Loaded,
    inputs: &Map<String, Value>,
    alternative_id: Option<String>,
) -> NewRun {
    NewRun {
        id: run_id.to_owned(),
        process_id: process_id.to_owned(),
        number: loaded.plan.version,
        version_id: loaded.version_id.clone(),
        depth: 1,
        parent_run_id: None,
        parent_step_run_id: None,
        owner_id: caller.id.as_str().to_owned(),
        inputs: Value::Object(inputs.clone()).to_string(),
        plan: serde_json::to_string(&loaded.plan).unwrap_or_default(),
        steps: loaded
            .steps
            .iter()
            .enumerate()
            .map(|(order, (step_id, ps))| NewStepRun {
                id: step_run_id(run_id, step_id),
                step_id: step_id.clone(),
                process_step_id: ps.clone(),
                order: order as i64,
            })
            .collect(),
        alternative_id,
        expected_process_revision: None,
        trigger: None,
        owner_budget_micros: caller
            .quota
            .and_then(|q| q.cost_budget_micros())
            .map(|m| m as i64),
        fork: None,
    }
}

/// Traced: the run's first span, handing it to the engine.
fn start_span(run_id: &str, process_id: &str) -> tracing::Span {
    aiden_jobs::trace::run_span(
        run_id,
        None,
        || tracing::info_span!("run.start", run.id = %run_id, process.id = %process_id),
    )
}

/// A depth-1 run from a cached plan, created only if the Process is still at its revision.
fn cached_run(
    caller: &Caller,
    process_id: &str,
    cached: &crate::plans::CachedPlan,
    inputs: &Map<String, Value>,
    trigger: Option<(String, String)>,
) -> Result<NewRun> {
    let loaded = &cached.loaded;
    for name in &loaded.initial_context {
        if !inputs.contains_key(name) {
            return Err(Domain::invariant(
                "PROC-5",
                format!("/inputs/{name}"),
                "required by the process's initialContext",
            )
            .into());
        }
    }
    let run_id = uuid::Uuid::now_v7().to_string();
    let mut new_run = top_level_run(&run_id, caller, process_id, loaded, inputs, None);
    new_run.plan = cached.plan_json.clone();
    new_run.expected_process_revision = Some(loaded.revision);
    new_run.trigger = trigger;
    Ok(new_run)
}

/// Whether `caller` may start `process_id` on the cached `plan` without reading it again.
fn usable(caller: &Caller, process_id: &str, plan: &crate::plans::CachedPlan) -> bool {
    plan.loaded.plan.quota.is_none() && check_runnable(caller, process_id, &plan.loaded).is_ok()
}

impl App {
    pub async fn start_run(
        &self,
        caller: &Caller,
        process_id: &str,
        inputs: Map<String, Value>,
        idempotency_key: Option<&str>,
    ) -> Result<RunStarted> {
        self.admission.admit()?;
        self.start_run_for(caller, process_id, inputs, idempotency_key, None)
            .await
    }

    /// A run started on `caller`'s behalf by something other than a request (memory upkeep):
    /// `trigger` says what, and shows in the run's views.
    pub(crate) async fn start_run_for(
        &self,
        caller: &Caller,
        process_id: &str,
        inputs: Map<String, Value>,
        idempotency_key: Option<&str>,
        trigger: Option<(String, String)>,
    ) -> Result<RunStarted> {
        if idempotency_key.is_none() {
            if let Some(started) = self
                .start_through_engine(caller, process_id, &inputs, &trigger)
                .await?
            {
                metrics::counter!("aiden_runs_started_total").increment(1);
                return Ok(started);
            }
        }
        let request_key = idempotency_key.map(|k| format!("{}#{k}", caller.id.as_str()));
        let total = std::time::Instant::now();
        let started = write_tx!(self, |tx| {
            if let Some(key) = &request_key {
                if let Some(existing) = runs::find_request(&mut tx, key).await? {
                    let status = runs::get(&mut tx, &existing)
                        .await?
                        .map_or(machine::RunStatus::Queued, |r| r.run.status)
                        .as_str()
                        .to_owned();
                    return Ok(RunStarted {
                        run_id: existing,
                        status,
                        created: None,
                    });
                }
            }
            let clock = std::time::Instant::now();
            // The slow path reads the plan again once it is old (`PlanCache::fresh`).
            let fresh = self.plans.fresh(process_id);
            let cached = match fresh.filter(|p| usable(caller, process_id, p)) {
                Some(c) => c,
                None => {
                    let loaded = plan::load(&mut tx, process_id).await.map_err(load_error)?;
                    self.plans.put(process_id, loaded)
                }
            };
            let loaded = &cached.loaded;
            check_runnable(caller, process_id, loaded)?;
            let quota = loaded.plan.quota.as_ref();
            let at = self.clock.now();
            crate::limits::check_start(&mut tx, caller, process_id, quota, at).await?;
            let loaded_us = clock.elapsed().as_micros() as u64;
            let new_run = cached_run(caller, process_id, &cached, &inputs, trigger.clone())?;
            let run_id = new_run.id.clone();
            let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            if let Err(e) = runs::create(&mut tx, &new_run, &now).await {
                // The Process changed since its plan was read: read it again (the retry).
                self.plans.forget(process_id);
                return Err(e.into());
            }
            tracing::debug!(
                loaded_us,
                created_us = clock.elapsed().as_micros() as u64 - loaded_us,
                "start_run"
            );
            if let Some(key) = &request_key {
                runs::claim_request(&mut tx, key, &run_id, &now).await?;
            }
            Ok(RunStarted {
                run_id,
                status: machine::RunStatus::Queued.as_str().into(),
                created: Some(new_run.created_row(&now)?),
            })
        })?;
        metrics::counter!("aiden_runs_started_total").increment(1);
        let committed_us = total.elapsed().as_micros() as u64;
        if let Some(row) = &started.created {
            let start = EngineMessage::RunStart {
                run_id: started.run_id.clone(),
                created: serde_json::to_value(row).ok(),
            };
            let span = start_span(&started.run_id, process_id);
            tracing::Instrument::instrument(self.notify_engine(&start, false), span).await;
        }
        tracing::debug!(
            committed_us,
            notified_us = total.elapsed().as_micros() as u64 - committed_us,
            "start_run total"
        );
        Ok(started)
    }

    /// The engine's door: a start this instance's engine can take is handed to it, and created in the
    /// engine's next group commit instead of by a statement of its own here; the answer comes
    /// once that commit is durable. `None` when it cannot be: no engine lease here, no plan in
    /// the cache (the slow path reads one), or a start that counts against a quota or an
    /// idempotency key (those are checked in the graph, in the slow path's transaction).
    async fn start_through_engine(
        &self,
        caller: &Caller,
        process_id: &str,
        inputs: &Map<String, Value>,
        trigger: &Option<(String, String)>,
    ) -> Result<Option<RunStarted>> {
        let Some(door) = self.door.as_ref().filter(|d| d.is_open()) else {
            return Ok(None);
        };
        if caller.quota.is_some() {
            return Ok(None);
        }
        let cached = match self.usable_cached_plan(caller, process_id) {
            Some(cached) => cached,
            None => match self.read_plan_once(process_id).await {
                Some(plan) if usable(caller, process_id, &plan) => plan,
                // Refusals (and their errors) are the slow path's to decide.
                _ => return Ok(None),
            },
        };
        let new_run = cached_run(caller, process_id, &cached, inputs, trigger.clone())?;
        let run_id = new_run.id.clone();
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let created = new_run.created_row(&now)?;
        let started =
            tracing::Instrument::instrument(door.start(new_run), start_span(&run_id, process_id))
                .await;
        if !self.taken_by_door(started, process_id)? {
            return Ok(None);
        }
        tracing::debug!(run_id, process_id, "run created by the engine's pass");
        // `queued`, as from the slow path: the state the run was accepted in (by now the
        // engine has started it; its progress is in its view and events).
        Ok(Some(RunStarted {
            run_id,
            status: machine::RunStatus::Queued.as_str().into(),
            created: Some(created),
        }))
    }

    /// What the door's answer means to a start or a fork handed to it: `true` when the
    /// engine's pass created the run, `false` when the caller writes it in its own transaction
    /// (no engine here, or the Process changed since its plan was read: the slow path reads
    /// it again).
    pub(crate) fn taken_by_door(&self, started: Started, process_id: &str) -> Result<bool> {
        match started {
            Started::Created => Ok(true),
            Started::StalePlan => {
                tracing::debug!(
                    process_id,
                    "stale plan refused by the engine; reading it again"
                );
                self.plans.forget(process_id);
                Ok(false)
            }
            Started::NotTaken => Ok(false),
            Started::Failed(m) => Err(aiden_graph::Error::Unavailable(m).into()),
        }
    }

    /// Only a cached plan the caller may run is used (the create re-validates it); a refusal
    /// is always decided on a fresh read. So is the start of a Process with a quota: its limits
    /// may have changed since (AGT-10, AGT-14).
    fn usable_cached_plan(
        &self,
        caller: &Caller,
        process_id: &str,
    ) -> Option<std::sync::Arc<crate::plans::CachedPlan>> {
        (self.plans.get(process_id)).filter(|p| usable(caller, process_id, p))
    }

    /// Reads `process_id`'s plan into the cache unless a start that held the lock before
    /// did; `None` if it cannot be read (the slow path then reads it and says why).
    async fn read_plan_once(
        &self,
        process_id: &str,
    ) -> Option<std::sync::Arc<crate::plans::CachedPlan>> {
        let lock = self.plans.loading(process_id);
        let _reading = lock.lock().await;
        if let Some(plan) = self.plans.fresh(process_id) {
            return Some(plan);
        }
        let read = async {
            read_tx!(self, |tx| {
                plan::load(&mut tx, process_id).await.map_err(load_error)
            })
        };
        read.await.ok().map(|l| self.plans.put(process_id, l))
    }

    pub(crate) async fn notify_engine(&self, message: &EngineMessage, confirmed: bool) {
        match &self.broker {
            Some(broker) => {
                if let Err(e) = broker.publish_engine(message, confirmed).await {
                    tracing::warn!(error = %e, "engine message not published; the sweep will pick the run up");
                }
            }
            None => tracing::warn!("no broker configured; the engine sweep will pick the run up"),
        }
    }

    pub(crate) async fn visible_run(&self, caller: &Caller, run_id: &str) -> Result<runs::RunRow> {
        let row = read_tx!(self, |tx| { Ok(runs::get(&mut tx, run_id).await?) })?
            .ok_or(Domain::NotFound)?;
        let owner = row.run.owner_id.as_str();
        // Runs are private to whoever started them; admins see every run.
        if owner != caller.id.as_str() && !caller.is_admin() {
            return Err(Domain::NotFound.into());
        }
        Ok(row)
    }

    /// `GET /v1/runs/{id}`.
    pub async fn get_run(&self, caller: &Caller, run_id: &str) -> Result<RunView> {
        let row = self.visible_run(caller, run_id).await?;
        run_view(&row)
    }

    /// `POST /v1/runs/{id}/cancel`: a run not settled, whatever it waits for (a worker, a
    /// child run, an approval), gets a durable cancel request and the engine settles it
    /// `canceled`; a settled run is left as it is. Answers the status the request met and
    /// whether it was recorded.
    pub async fn cancel_run(&self, caller: &Caller, run_id: &str) -> Result<CancelAnswer> {
        self.visible_run(caller, run_id).await?;
        let met = write_tx!(self, |tx| {
            Ok(runs::request_cancel(&mut tx, run_id).await?)
        })?
        .ok_or(Domain::NotFound)?;
        if met.requested {
            self.notify_engine(
                &EngineMessage::RunCancel {
                    run_id: run_id.to_owned(),
                },
                true,
            )
            .await;
        }
        Ok(CancelAnswer {
            run_id: run_id.to_owned(),
            status: met.status,
            cancel_requested: met.requested,
        })
    }

    /// AGT-9, `POST /v1/runs/{id}/approvals`: the run's owner (or an admin) grants, for
    /// `ttlSeconds` or the rest of the run, or denies a capability the run waits for. The
    /// decision goes to the engine on its durable queue (confirmed) before the 202.
    pub async fn approve_run(
        &self,
        caller: &Caller,
        run_id: &str,
        b: ApprovalRequest,
    ) -> Result<ApprovalAnswer> {
        if b.ttl_seconds
            .is_some_and(|t| t == 0 || t > MAX_APPROVAL_TTL_SECONDS)
        {
            return Err(Domain::validation(
                "/ttlSeconds",
                format!("must be 1-{MAX_APPROVAL_TTL_SECONDS}"),
            )
            .into());
        }
        let row = self.visible_run(caller, run_id).await?;
        let waiting = row.run.waiting_for.clone().unwrap_or_default();
        let status = row.run.status.as_str();
        if row.run.status != machine::RunStatus::WaitingForApproval
            || !waiting.contains(&b.capability)
        {
            return Err(Domain::referenced(
                "AGT-9",
                format!(
                    "run {run_id} is {status} and waits for no approval of `{}` (waiting for: {})",
                    b.capability,
                    if waiting.is_empty() {
                        "nothing".to_owned()
                    } else {
                        waiting.join(", ")
                    }
                ),
            )
            .into());
        }
        let grant = b.decision == ApprovalDecision::Grant;
        let expires_ms = b
            .ttl_seconds
            .filter(|_| grant)
            .map(|t| chrono::Utc::now().timestamp_millis() + (t as i64) * 1000);
        let message = EngineMessage::RunApproval {
            run_id: run_id.to_owned(),
            capability: b.capability.clone(),
            grant,
            expires_ms,
        };
        let Some(broker) = &self.broker else {
            return Err(Error::Unavailable("broker"));
        };
        if let Err(e) = broker.publish_engine(&message, true).await {
            tracing::warn!(error = %e, "approval not published");
            return Err(Error::Unavailable("broker"));
        }
        let expires_at = expires_ms
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
        Ok(ApprovalAnswer {
            run_id: run_id.to_owned(),
            capability: b.capability,
            decision: if grant {
                Decision::Grant
            } else {
                Decision::Deny
            },
            expires_at,
        })
    }

    /// The head of a run the caller may see (404 otherwise), for its event stream.
    pub async fn run_head(&self, caller: &Caller, run_id: &str) -> Result<runs::RunHead> {
        let head = self
            .run_head_unchecked(run_id)
            .await?
            .ok_or(Domain::NotFound)?;
        // Runs are private to whoever started them; admins see every run.
        if head.owner_id != caller.id.as_str() && !caller.is_admin() {
            return Err(Domain::NotFound.into());
        }
        Ok(head)
    }

    /// The head of a run whose visibility was already checked.
    pub async fn run_head_unchecked(&self, run_id: &str) -> Result<Option<runs::RunHead>> {
        Ok(runs::head(&self.graph, run_id).await?)
    }

    /// The head and the events after `after` (at most `limit`) as of one commit, for a stream
    /// whose visibility was already checked.
    pub async fn run_tail_unchecked(
        &self,
        run_id: &str,
        after: i64,
        limit: i64,
    ) -> Result<Option<(runs::RunHead, Vec<EventRow>)>> {
        read_tx!(self, |tx| {
            Ok(runs::tail(&mut tx, run_id, after, limit).await?)
        })
    }

    /// `GET /v1/workers`.
    pub async fn list_workers(&self, _caller: &Caller) -> Result<Vec<WorkerView>> {
        let rows = read_tx!(self, |tx| { Ok(runs::list_workers(&mut tx).await?) })?;
        rows.into_iter()
            .map(|w| {
                typed(json!({
                    "id": w.get("id"), "type": w.get("type"), "status": w.get("status"),
                    "currentJobId": w.get("currentJobId").cloned().unwrap_or(Value::Null),
                    "lastHeartbeat": w.get("lastHeartbeat"),
                    "processedCount": w.get("processedCount"), "errorCount": w.get("errorCount"),
                }))
            })
            .collect()
    }
}

/// A view assembled from graph rows, checked against its documented type (a row that does
/// not fit is a bug of ours: 500 with the field in the log, never a silently different shape).
pub(crate) fn typed<T: serde::de::DeserializeOwned>(v: Value) -> Result<T> {
    serde_json::from_value(v).map_err(|e| {
        crate::Error::Internal(format!(
            "{} does not fit its documented shape: {e}",
            std::any::type_name::<T>()
        ))
    })
}

/// What a tool step's latest events say of it while its StepRun is not written.
#[derive(Debug, Clone, Default, PartialEq)]
struct Live {
    status: Option<StepStatus>,
    attempts: Option<i64>,
    worker_id: Option<String>,
    started_at: Option<String>,
}

/// A tool step's StepRun is written when it settles (the lean journal): until then its status,
/// attempt and worker are those its latest event in the run's log says.
fn in_flight(events: &[String]) -> Result<std::collections::HashMap<String, Live>> {
    let mut live: std::collections::HashMap<String, Live> = std::collections::HashMap::new();
    for part in events {
        for event in runs::log_part(part)? {
            let Some(step_id) = event.step_id else {
                continue;
            };
            let data: Value = match event.data.as_deref() {
                Some(d) => serde_json::from_str(d).map_err(|e| {
                    crate::Error::Internal(format!("run event {}: data: {e}", event.seq))
                })?,
                None => Value::Null,
            };
            let entry = live.entry(step_id).or_default();
            let kind = event.kind.as_str();
            if kind == EventKind::Queued.as_str() || kind == EventKind::Retrying.as_str() {
                entry.status = Some(StepStatus::Queued);
            } else if kind == EventKind::Started.as_str() {
                entry.status = Some(StepStatus::Running);
                entry.started_at.get_or_insert(event.at);
                if let Some(a) = data.get("attempt").and_then(Value::as_i64) {
                    entry.attempts = Some(a);
                }
                if let Some(w) = data.get("workerId").and_then(Value::as_str) {
                    entry.worker_id = Some(w.to_owned());
                }
            }
        }
    }
    Ok(live)
}

/// A step run's record with what its live events add: only a record the engine has not written
/// since dispatch (a tool step between dispatch and settling); agent and child steps write
/// their own states.
fn merged(mut s: runs::StepRunRecord, live: Option<&Live>) -> runs::StepRunRecord {
    let Some(l) = live.filter(|_| matches!(s.status, StepStatus::Pending | StepStatus::Queued))
    else {
        return s;
    };
    if let Some(status) = l.status {
        s.status = status;
    }
    if let Some(a) = l.attempts {
        s.attempts = a;
    }
    if l.worker_id.is_some() {
        s.worker_id.clone_from(&l.worker_id);
    }
    if l.started_at.is_some() {
        s.started_at.clone_from(&l.started_at);
    }
    s
}

/// JSON text as the value it holds (`null` when absent).
fn json_text(what: &str, text: Option<&str>) -> Result<Value> {
    match text {
        Some(t) => serde_json::from_str(t)
            .map_err(|e| crate::Error::Internal(format!("{what}: stored JSON unreadable: {e}"))),
        None => Ok(Value::Null),
    }
}

/// A run as the API shows it.
pub fn run_view(row: &runs::RunRow) -> Result<RunView> {
    let r = &row.run;
    let live = in_flight(r.events.as_deref().unwrap_or_default())?;
    let mut steps = Vec::new();
    for s in row.steps_or_planned()? {
        let s = merged(s.clone(), live.get(&s.step_id));
        let field = |f: &str| format!("StepRun {} field `{f}`", s.id);
        // An agent's call carries the spec it was dispatched from: its Tool and input.
        let spec = json_text(&field("callSpec"), s.call_spec.as_deref())?;
        steps.push(json!({
            "stepId": s.step_id, "status": s.status.as_str(), "kind": s.kind,
            "toolId": spec.pointer("/target/id").cloned().unwrap_or(Value::Null),
            "input": spec.get("literal").cloned().unwrap_or(Value::Null),
            "attempts": s.attempts, "workerId": s.worker_id,
            "queuedAt": s.queued_at, "startedAt": s.started_at, "finishedAt": s.finished_at,
            "hops": json_text(&field("hops"), s.hops.as_deref())?,
            "output": json_text(&field("output"), s.output.as_deref())?,
            "error": json_text(&field("error"), s.error.as_deref())?,
            "telemetry": json_text(&field("telemetry"), s.telemetry.as_deref())?,
            "childRunId": s.child_run_id,
            "inputHash": s.input_hash, "reusedFrom": s.reused_from,
        }));
    }
    let field = |f: &str| format!("Run {} field `{f}`", r.id);
    typed(json!({
        "id": r.id, "processId": r.process_id,
        "processVersion": r.process_version, "status": r.status.as_str(),
        "depth": r.depth, "parentRunId": r.parent_run_id,
        "inputs": json_text(&field("inputs"), Some(&r.inputs))?,
        "output": json_text(&field("output"), r.output.as_deref())?,
        "error": json_text(&field("error"), r.error.as_deref())?,
        "createdAt": r.created_at, "startedAt": r.started_at, "finishedAt": r.finished_at,
        "trigger": RunTrigger::from_parts(r.trigger_kind.clone(), r.trigger_subject_id.clone()),
        "version": r.version,
        "forkedFrom": r.forked_from, "forkStep": r.fork_step,
        "alternativeId": r.alternative_id,
        "steps": steps,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool step's StepRun is written when it settles: until then its run's view takes the
    /// status, attempt and worker from the run's event log.
    #[test]
    fn an_unsettled_steps_view_follows_its_latest_event() {
        let event = |seq: i64, kind: EventKind, step: &str, data: Value| {
            json!({"seq": seq, "kind": kind.as_str(), "stepId": step, "at": format!("t{seq}"),
                   "data": data.to_string()})
        };
        let parts = [
            json!([
                event(1, EventKind::Queued, "a", json!({"attempt": 1})),
                event(2, EventKind::Queued, "b", json!({"attempt": 1}))
            ]),
            json!([
                event(
                    3,
                    EventKind::Started,
                    "a",
                    json!({"attempt": 1, "workerId": "w1"})
                ),
                event(
                    4,
                    EventKind::Started,
                    "b",
                    json!({"attempt": 1, "workerId": "w1"})
                ),
                event(5, EventKind::Retrying, "b", json!({"attempt": 1})),
                event(
                    6,
                    EventKind::Started,
                    "b",
                    json!({"attempt": 2, "workerId": "w2"})
                )
            ]),
        ]
        .map(|p| p.to_string());
        let live = in_flight(&parts).unwrap();
        assert_eq!(live["a"].status, Some(StepStatus::Running));
        assert_eq!(live["a"].worker_id.as_deref(), Some("w1"));
        assert_eq!(live["a"].started_at.as_deref(), Some("t3"));
        assert_eq!(live["b"].status, Some(StepStatus::Running));
        assert_eq!(live["b"].attempts, Some(2));
        assert_eq!(live["b"].worker_id.as_deref(), Some("w2"));
        assert_eq!(
            live["b"].started_at.as_deref(),
            Some("t4"),
            "the first start stays the step's start"
        );
        let pending = runs::StepRunRecord::pending("r/a".into(), "r".into(), "a".into(), 0);
        let view = merged(pending.clone(), live.get("a"));
        assert_eq!(view.status, StepStatus::Running);
        assert_eq!(view.step_id, "a");
        let settled = runs::StepRunRecord {
            status: StepStatus::Completed,
            ..pending
        };
        assert_eq!(
            merged(settled.clone(), live.get("a")),
            settled,
            "a written StepRun is shown as written"
        );
    }
}
