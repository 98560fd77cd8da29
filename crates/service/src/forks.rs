//! Runs you can replay: fork a settled run from a step (FORK-1..3), see how two runs differ,
//! and replay a Process version over recorded runs without calling anything (REPLAY-1).
//! The decisions are the domain's (`execution::fork`, `execution::replay`); this module reads
//! the records, checks who may, and creates the fork on the usual start path.

use aiden_domain::execution::fork::{self, Recorded, RecordedStep};
use aiden_domain::execution::replay::{self, Replayed};
use aiden_domain::execution::schedule::Plan;
use aiden_domain::user::Caller;
use aiden_domain::Error as Domain;
use aiden_engine::plan::{self, LoadError};
use aiden_engine::RunState;
use aiden_graph::runs::{self, ForkOrigin, NewRun, RunRow};
use aiden_jobs::EngineMessage;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::runs::{check_runnable, top_level_run};
use crate::tx::{read_tx, write_tx};
use crate::{App, Result};

/// `POST /v1/runs/{id}/forks`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForkRequest {
    /// The step to run anew, with everything downstream of it.
    pub from_step: String,
    /// Run inputs to replace (the others are the original's).
    #[serde(default)]
    pub inputs: Option<Map<String, Value>>,
    /// The version of the run's Process to run (default: the original's).
    #[serde(default)]
    pub process_version: Option<i64>,
    /// Names the Process the version is of, when given: it must be the run's (FORK-3).
    #[serde(default)]
    pub process_id: Option<String>,
}

/// What a fork started with.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkStarted {
    pub run_id: String,
    pub status: String,
    pub forked_from: String,
    pub from_step: String,
    pub process_version: i64,
    /// The steps that may reuse the original's result (each does if its input, rendered when
    /// it is ready, is the original's).
    pub reusable: Vec<String>,
}

/// A recorded run as the domain reads it.
struct Record {
    plan: Plan,
    inputs: Map<String, Value>,
    variables: Map<String, Value>,
    steps: Vec<RecordedStep>,
}

impl Record {
    pub(crate) fn of(row: &RunRow) -> Result<Self> {
        let state = RunState::from_row(row).map_err(crate::Error::Internal)?;
        let inputs = serde_json::from_str(&row.run.inputs)
            .map_err(|e| crate::Error::Internal(format!("run {}: inputs: {e}", row.run.id)))?;
        let mut steps = Vec::new();
        // An agent's calls are inside its step: the step is the unit.
        for s in row.steps.iter().filter(|s| s.call_spec.is_none()) {
            let output = match &s.output {
                Some(t) => Some(serde_json::from_str(t).map_err(|e| {
                    crate::Error::Internal(format!("step run {}: output: {e}", s.id))
                })?),
                None => None,
            };
            steps.push(RecordedStep {
                step_id: s.step_id.clone(),
                step_run_id: s.id.clone(),
                status: s.status,
                input_hash: s.input_hash.clone(),
                output,
                reused_from: s.reused_from.clone(),
            });
        }
        Ok(Self {
            plan: state.plan,
            inputs,
            variables: state.variables,
            steps,
        })
    }

    fn recorded(&self) -> Recorded<'_> {
        Recorded {
            plan: &self.plan,
            variables: &self.variables,
            steps: &self.steps,
        }
    }
}

fn version_error(process_id: &str, number: i64, e: LoadError) -> crate::Error {
    match e {
        LoadError::NotFound => Domain::invariant(
            "FORK-3",
            "/processVersion",
            format!("process `{process_id}` has no version {number}"),
        )
        .into(),
        LoadError::Corrupt(m) => Domain::invariant("PROC-2", "/steps", m).into(),
        LoadError::Graph(g) => g.into(),
    }
}

/// What a fork of a settled run runs: from which step (default: the version's last, the step
/// that answers), on which version (default: the original's), with which run inputs, and for
/// which Alternative (a regenerated answer).
pub(crate) struct ForkSpec {
    pub from_step: Option<String>,
    pub process_version: Option<i64>,
    pub inputs: Map<String, Value>,
    pub alternative_id: Option<String>,
}

/// A fork created in the caller's transaction, for the engine to start once it commits.
pub(crate) struct Forked {
    pub run_id: String,
    pub created: RunRow,
    pub from_step: String,
    pub process_version: i64,
    pub version_id: String,
    pub reusable: Vec<String>,
}

/// FORK-2, FORK-3: only a settled top-level run is forked, and only onto its own Process.
pub(crate) fn check_forkable(row: &RunRow, process_id: Option<&str>) -> Result<()> {
    let o = &row.run;
    let refuse = |m: String| Err(Domain::referenced("FORK-2", m).into());
    if !o.status.is_settled() {
        return refuse(format!(
            "run `{}` is {}: only a settled run can be forked",
            o.id,
            o.status.as_str()
        ));
    }
    if o.depth != 1 {
        return refuse(format!(
            "run `{}` is a child run: fork the run that called it",
            o.id
        ));
    }
    if let Some(other) = process_id.filter(|p| *p != o.process_id) {
        return Err(Domain::invariant(
            "FORK-3",
            "/processId",
            format!(
                "run `{}` is of process `{}`, not `{other}`: a fork runs its run's Process",
                o.id, o.process_id
            ),
        )
        .into());
    }
    Ok(())
}

/// The fork of `original` on `loaded` (FORK-3: `fromStep` in it; PROC-5), with what it may
/// reuse (FORK-1): the run to create, not yet written.
fn fork_of(
    caller: &Caller,
    original: &RunRow,
    spec: &ForkSpec,
    loaded: &plan::Loaded,
) -> Result<(NewRun, Forked)> {
    let o = &original.run;
    let (process_id, number) = (o.process_id.as_str(), loaded.plan.version);
    let last = loaded.plan.steps.last().map(|s| s.id.clone());
    let from_step = spec.from_step.clone().or(last).unwrap_or_default();
    let Some(from) = loaded.plan.index_of(&from_step) else {
        return Err(Domain::invariant(
            "FORK-3",
            "/fromStep",
            format!("version {number} of process `{process_id}` has no step `{from_step}`"),
        )
        .into());
    };
    for name in &loaded.initial_context {
        if !spec.inputs.contains_key(name) {
            return Err(Domain::invariant(
                "PROC-5",
                format!("/inputs/{name}"),
                "required by the process's initialContext",
            )
            .into());
        }
    }
    let record = Record::of(original)?;
    let reuse = fork::reusable(&loaded.plan, from, &record.recorded());
    let run_id = uuid::Uuid::now_v7().to_string();
    let mut new_run = top_level_run(
        &run_id,
        caller,
        process_id,
        loaded,
        &spec.inputs,
        spec.alternative_id.clone(),
    );
    new_run.fork = Some(ForkOrigin {
        run_id: o.id.clone(),
        at_step: from_step.clone(),
        reuse: serde_json::to_string(&reuse).map_err(|e| crate::Error::Internal(e.to_string()))?,
    });
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let forked = Forked {
        created: new_run.created_row(&now)?,
        run_id,
        from_step,
        process_version: number,
        version_id: loaded.version_id.clone(),
        reusable: reuse.into_keys().collect(),
    };
    Ok((new_run, forked))
}

impl App {
    /// Creates a fork of `original` (checked by [`check_forkable`]) in `tx`: the version's
    /// plan (visibility and PROC-8 as for any start, quotas too), the fork's step in it
    /// (FORK-3), and what it may reuse (FORK-1).
    pub(crate) async fn create_fork(
        &self,
        tx: &mut aiden_graph::Tx,
        caller: &Caller,
        original: &RunRow,
        spec: &ForkSpec,
    ) -> Result<Forked> {
        let o = &original.run;
        let process_id = o.process_id.as_str();
        let number = spec.process_version.unwrap_or(o.process_version);
        let loaded = plan::load_version(tx, process_id, Some(number))
            .await
            .map_err(|e| version_error(process_id, number, e))?;
        check_runnable(caller, process_id, &loaded)?;
        let (new_run, forked) = fork_of(caller, original, spec, &loaded)?;
        let quota = loaded.plan.quota.as_ref();
        crate::limits::check_start(tx, caller, process_id, quota, self.clock.now()).await?;
        runs::create(tx, &new_run, &forked.created.run.created_at).await?;
        metrics::counter!("aiden_runs_started_total").increment(1);
        metrics::counter!("aiden_runs_forked_total").increment(1);
        Ok(forked)
    }

    /// A fork handed to this instance's engine, created in its next group commit (as a start
    /// through the door is): `None` when the door cannot take it (no engine lease here, a quota
    /// to check in the graph, a plan the caller may not run); then the caller writes it itself,
    /// and says why it refuses. The plan comes from the cache when the fork runs the Process's
    /// current version.
    async fn fork_through_engine(
        &self,
        caller: &Caller,
        original: &RunRow,
        spec: &ForkSpec,
    ) -> Result<Option<Forked>> {
        let Some(door) = self.door.as_ref().filter(|d| d.is_open()) else {
            return Ok(None);
        };
        if caller.quota.is_some() {
            return Ok(None);
        }
        let o = &original.run;
        let process_id = o.process_id.as_str();
        let number = spec.process_version.unwrap_or(o.process_version);
        let cached = self
            .plans
            .get(process_id)
            .filter(|c| c.loaded.plan.version == number);
        let read;
        let loaded = match &cached {
            Some(c) => &c.loaded,
            None => {
                read = read_tx!(self, |tx| {
                    Ok(plan::load_version(&mut tx, process_id, Some(number))
                        .await
                        .ok())
                })?;
                match &read {
                    Some(loaded) => loaded,
                    None => return Ok(None),
                }
            }
        };
        if loaded.plan.quota.is_some() || check_runnable(caller, process_id, loaded).is_err() {
            return Ok(None);
        }
        let (mut new_run, forked) = fork_of(caller, original, spec, loaded)?;
        // A cached plan is created only while the Process is still at its revision (the
        // engine's create checks); a version read now is the version asked for, current or not.
        if let Some(c) = &cached {
            new_run.plan = c.plan_json.clone();
            new_run.expected_process_revision = Some(c.loaded.revision);
        }
        if !self.taken_by_door(door.start(new_run).await, process_id)? {
            return Ok(None);
        }
        metrics::counter!("aiden_runs_started_total").increment(1);
        metrics::counter!("aiden_runs_forked_total").increment(1);
        Ok(Some(forked))
    }

    /// FORK-1..3, `POST /v1/runs/{id}/forks`: a new run of the original's Process (at the
    /// original's version unless another is named) that reuses the original's results up to
    /// `fromStep` and runs it and everything downstream anew. The owner or an admin; the fork
    /// is the caller's run.
    pub async fn fork_run(
        &self,
        caller: &Caller,
        run_id: &str,
        req: ForkRequest,
    ) -> Result<ForkStarted> {
        self.admission.admit()?;
        let original = self.forkable_run(caller, run_id).await?;
        check_forkable(&original, req.process_id.as_deref())?;
        let mut inputs: Map<String, Value> = serde_json::from_str(&original.run.inputs)
            .map_err(|e| crate::Error::Internal(format!("run {run_id}: inputs: {e}")))?;
        inputs.extend(req.inputs.clone().unwrap_or_default());
        let spec = ForkSpec {
            from_step: Some(req.from_step.clone()),
            process_version: req.process_version,
            inputs,
            alternative_id: None,
        };
        let forked = match self.fork_through_engine(caller, &original, &spec).await? {
            Some(forked) => forked,
            None => {
                let forked = write_tx!(self, |tx| {
                    self.create_fork(&mut tx, caller, &original, &spec).await
                })?;
                self.start_fork(&forked).await;
                forked
            }
        };
        Ok(ForkStarted {
            run_id: forked.run_id,
            status: aiden_domain::execution::machine::RunStatus::Queued
                .as_str()
                .to_owned(),
            forked_from: run_id.to_owned(),
            from_step: forked.from_step,
            process_version: forked.process_version,
            reusable: forked.reusable,
        })
    }

    /// The run to fork: a settled record is read in one statement without its lock (it no
    /// longer changes); any other is read as every run view is, for the refusal to say why.
    async fn forkable_run(&self, caller: &Caller, run_id: &str) -> Result<RunRow> {
        match runs::settled_one(&self.graph, run_id).await? {
            Some(row) if row.run.owner_id == caller.id.as_str() || caller.is_admin() => Ok(row),
            Some(_) => Err(Domain::NotFound.into()),
            None => self.visible_run(caller, run_id).await,
        }
    }

    /// Hands a committed fork to the engine.
    pub(crate) async fn start_fork(&self, forked: &Forked) {
        let start = EngineMessage::RunStart {
            run_id: forked.run_id.clone(),
            created: serde_json::to_value(&forked.created).ok(),
        };
        self.notify_engine(&start, false).await;
    }

    /// `GET /v1/runs/{a}/diff/{b}`: per step, how run `b` differs from run `a`.
    pub async fn diff_runs(&self, caller: &Caller, a: &str, b: &str) -> Result<RunDiff> {
        let left = self.visible_run(caller, a).await?;
        let right = self.visible_run(caller, b).await?;
        let (ra, rb) = (Record::of(&left)?, Record::of(&right)?);
        let mut ids: Vec<&str> = rb.plan.steps.iter().map(|s| s.id.as_str()).collect();
        for s in &ra.plan.steps {
            if !ids.contains(&s.id.as_str()) {
                ids.push(&s.id);
            }
        }
        let steps: Vec<StepDiff> = ids
            .into_iter()
            .filter(|id| !id.contains('#'))
            .map(|id| step_diff(id, &ra.recorded(), &rb.recorded()))
            .collect();
        Ok(RunDiff {
            a: a.to_owned(),
            b: b.to_owned(),
            a_process_version: left.run.process_version,
            b_process_version: right.run.process_version,
            b_forked_from: right.run.forked_from.clone(),
            differing: steps.iter().filter(|s| s.verdict.differs()).count(),
            steps,
        })
    }

    /// REPLAY-1, `POST /v1/processes/{id}/versions/{n}/replay`: version `n`'s plan driven over
    /// recorded runs, calling nothing and writing nothing.
    pub async fn replay_version(
        &self,
        caller: &Caller,
        process_id: &str,
        number: i64,
        req: ReplayRequest,
    ) -> Result<ReplayReport> {
        let clock = std::time::Instant::now();
        let owner = (!caller.is_admin()).then(|| caller.id.as_str().to_owned());
        let (loaded_plan, rows) = read_tx!(self, |tx| {
            let loaded = plan::load_version(&mut tx, process_id, Some(number))
                .await
                .map_err(|e| match e {
                    LoadError::NotFound => crate::Error::from(Domain::NotFound),
                    other => version_error(process_id, number, other),
                })?;
            aiden_domain::access::ensure_readable(
                caller,
                &aiden_domain::access::Owned {
                    owner_id: &loaded.owner_id,
                    shared: loaded.shared,
                    sharing: aiden_domain::access::Sharing::Shareable,
                },
            )?;
            let ids = match (&req.runs, req.last) {
                (Some(ids), None) => ids.clone(),
                (None, Some(n)) => {
                    runs::settled_of(&mut tx, process_id, number, owner.as_deref(), i64::from(n))
                        .await?
                }
                _ => return Err(Domain::invariant(
                    "REPLAY-1",
                    "/runs",
                    "name the runs to replay (`runs`) or how many of the latest (`last`), not both",
                )
                .into()),
            };
            Ok((loaded.plan, runs::settled_many(&mut tx, &ids).await?))
        })?;
        if let Some(ids) = &req.runs {
            check_replayable(ids, &rows, process_id, owner.as_deref())?;
        }
        let mut report = Vec::with_capacity(rows.len());
        for row in &rows {
            let record = Record::of(row)?;
            let replayed = replay::replay(&loaded_plan, &record.inputs, &record.recorded());
            report.push(RunReplay {
                run_id: row.run.id.clone(),
                process_version: row.run.process_version,
                verdict: if replayed.divergence.is_none() {
                    ReplayVerdict::Same
                } else {
                    ReplayVerdict::Diverged
                },
                replayed,
            });
        }
        let diverged = report
            .iter()
            .filter(|r| r.verdict == ReplayVerdict::Diverged)
            .count();
        Ok(ReplayReport {
            process_id: process_id.to_owned(),
            version: number,
            same: report.len() - diverged,
            diverged,
            elapsed_ms: clock.elapsed().as_secs_f64() * 1000.0,
            runs: report,
        })
    }
}

/// REPLAY-1: every named run exists, is settled, is visible to the caller and is of the Process.
fn check_replayable(
    ids: &[String],
    rows: &[RunRow],
    process_id: &str,
    owner: Option<&str>,
) -> Result<()> {
    for (i, id) in ids.iter().enumerate() {
        let row = rows
            .iter()
            .find(|r| r.run.id == *id)
            .filter(|r| owner.is_none_or(|o| r.run.owner_id == o));
        let problem = match row {
            None => Some("is not a settled run you can read".to_owned()),
            Some(r) if r.run.process_id != process_id => {
                Some(format!("is a run of process `{}`", r.run.process_id))
            }
            Some(_) => None,
        };
        if let Some(p) = problem {
            return Err(Domain::invariant(
                "REPLAY-1",
                format!("/runs/{i}"),
                format!("run `{id}` {p}"),
            )
            .into());
        }
    }
    Ok(())
}

/// `POST /v1/processes/{id}/versions/{n}/replay`: `runs` (ids) or `last` (the newest settled
/// runs of earlier versions), one of the two.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplayRequest {
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub runs: Option<Vec<String>>,
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub last: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReplayVerdict {
    Same,
    Diverged,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunReplay {
    pub run_id: String,
    pub process_version: i64,
    pub verdict: ReplayVerdict,
    #[serde(flatten)]
    pub replayed: Replayed,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplayReport {
    pub process_id: String,
    pub version: i64,
    pub same: usize,
    pub diverged: usize,
    /// The replay's own time, the reads included.
    pub elapsed_ms: f64,
    pub runs: Vec<RunReplay>,
}

/// How one step of run `b` compares with the same step of run `a`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepVerdict {
    /// Same input, same outcome, same output.
    Same,
    /// One took the other's recorded output (`REUSED_FROM`).
    Reused,
    InputChanged,
    /// Same input; another status or output.
    OutputChanged,
    OnlyInA,
    OnlyInB,
}

impl StepVerdict {
    fn differs(self) -> bool {
        !matches!(self, Self::Same | Self::Reused)
    }
}

/// One run's side of a step.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepSide {
    pub step_run_id: String,
    pub status: aiden_domain::execution::schedule::StepStatus,
    /// The input, rendered again from the run's plan and variables.
    pub input: Value,
    pub input_hash: Option<String>,
    pub output: Value,
    /// FORK-1: the StepRun whose output it took.
    pub reused_from: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepDiff {
    pub step_id: String,
    pub verdict: StepVerdict,
    pub a: Option<StepSide>,
    pub b: Option<StepSide>,
}

/// `GET /v1/runs/{a}/diff/{b}`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunDiff {
    pub a: String,
    pub b: String,
    pub a_process_version: i64,
    pub b_process_version: i64,
    /// Set when `b` is a fork (of `a` or another run).
    pub b_forked_from: Option<String>,
    /// Steps whose verdict is neither `same` nor `reused`.
    pub differing: usize,
    pub steps: Vec<StepDiff>,
}

fn side(rec: &Recorded<'_>, step_id: &str) -> Option<StepSide> {
    let s = rec.step(step_id)?;
    Some(StepSide {
        step_run_id: s.step_run_id.clone(),
        status: s.status,
        input: rec.input(step_id).unwrap_or(Value::Null),
        input_hash: rec.input_hash(step_id),
        output: s.output.clone().unwrap_or(Value::Null),
        reused_from: s.reused_from.clone(),
    })
}

fn step_diff(step_id: &str, a: &Recorded<'_>, b: &Recorded<'_>) -> StepDiff {
    let (sa, sb) = (side(a, step_id), side(b, step_id));
    let verdict = match (&sa, &sb) {
        (Some(_), None) => StepVerdict::OnlyInA,
        (None, Some(_)) | (None, None) => StepVerdict::OnlyInB,
        (Some(x), Some(y)) => {
            let took =
                |s: &StepSide, from: &StepSide| s.reused_from.as_ref() == Some(&from.step_run_id);
            if took(y, x) || took(x, y) {
                StepVerdict::Reused
            } else if x.input_hash != y.input_hash {
                StepVerdict::InputChanged
            } else if x.status != y.status || x.output != y.output {
                StepVerdict::OutputChanged
            } else {
                StepVerdict::Same
            }
        }
    };
    StepDiff {
        step_id: step_id.to_owned(),
        verdict,
        a: sa,
        b: sb,
    }
}
