//! A run's record as stored, typed: the Run and its StepRuns decoded field by field, so a
//! missing or mistyped field, or a status word its lifecycle does not know, is an error naming
//! the record and the field (never a default: an unknown run status once read as `queued` and
//! made the engine start the run). JSON-valued fields are JSON text, as the graph stores them.

use aiden_domain::execution::machine::RunStatus;
use aiden_domain::execution::schedule::StepStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Error;

/// A Run node's properties.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub id: String,
    pub process_id: String,
    pub process_version: i64,
    pub version_id: String,
    #[serde(with = "run_status")]
    pub status: RunStatus,
    pub depth: i64,
    #[serde(default)]
    pub parent_run_id: Option<String>,
    #[serde(default)]
    pub parent_step_run_id: Option<String>,
    pub owner_id: String,
    /// JSON text of the initial context.
    pub inputs: String,
    /// JSON text of the resolved plan.
    pub plan: String,
    pub event_seq: i64,
    /// The write version of the last commit that changed the run (`runs::get` says how it is
    /// used).
    pub version: i64,
    pub created_at: String,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub finished_at: Option<String>,
    #[serde(default)]
    pub alternative_id: Option<String>,
    #[serde(default)]
    pub trigger_kind: Option<String>,
    #[serde(default)]
    pub trigger_subject_id: Option<String>,
    /// JSON text: the StepRuns listed at creation, which the engine's first write creates.
    #[serde(default)]
    pub step_runs: Option<String>,
    #[serde(default)]
    pub owner_budget_micros: Option<i64>,
    /// JSON text.
    #[serde(default)]
    pub output: Option<String>,
    /// JSON text of an `ErrorInfo`.
    #[serde(default)]
    pub error: Option<String>,
    /// AGT-9: the capabilities the run waits for the owner to approve.
    #[serde(default)]
    pub waiting_for: Option<Vec<String>>,
    /// The event log: one JSON array of events per engine pass.
    #[serde(default)]
    pub events: Option<Vec<String>>,
    /// FORK-1: the run this one was forked from, and at which step.
    #[serde(default)]
    pub forked_from: Option<String>,
    #[serde(default)]
    pub fork_step: Option<String>,
    /// FORK-1: JSON text, step id → the original's result it may reuse
    /// (`aiden_domain::execution::fork::Reusable`).
    #[serde(default)]
    pub reuse: Option<String>,
}

/// A StepRun node's properties (the audit-only ones, such as the retry log, are not read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRunRecord {
    pub id: String,
    pub run_id: String,
    pub step_id: String,
    /// Absent on an agent's calls, which no ProcessStep names.
    #[serde(default)]
    pub process_step_id: Option<String>,
    #[serde(with = "step_status")]
    pub status: StepStatus,
    pub attempts: i64,
    pub order: i64,
    /// The write version of the commit that last wrote it.
    pub run_version: i64,
    #[serde(default)]
    pub worker_id: Option<String>,
    #[serde(default)]
    pub queued_at: Option<String>,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub finished_at: Option<String>,
    /// JSON text.
    #[serde(default)]
    pub output: Option<String>,
    /// JSON text of an `ErrorInfo`.
    #[serde(default)]
    pub error: Option<String>,
    /// JSON text.
    #[serde(default)]
    pub telemetry: Option<String>,
    /// JSON text of the result's `aiden_jobs::Hops`: where the step's time went.
    #[serde(default)]
    pub hops: Option<String>,
    #[serde(default)]
    pub child_run_id: Option<String>,
    /// An agent's call: the JSON text of the plan step it is dispatched from.
    #[serde(default)]
    pub call_spec: Option<String>,
    /// An agent's call: `model` or `tool`.
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub parent_step_run_id: Option<String>,
    /// An agent step's loop, JSON text.
    #[serde(default)]
    pub agent: Option<String>,
    /// AGT-14: the estimate charged when a priced step was queued.
    #[serde(default)]
    pub reserved_micros: Option<i64>,
    /// The audit hash of the input the step ran with (EXEC-2's record).
    #[serde(default)]
    pub input_hash: Option<String>,
    /// FORK-1: the original's StepRun whose output this step reused.
    #[serde(default)]
    pub reused_from: Option<String>,
}

impl StepRunRecord {
    /// A StepRun listed at its run's creation and not written yet, as a view shows it.
    pub fn pending(id: String, run_id: String, step_id: String, order: i64) -> Self {
        Self {
            id,
            run_id,
            step_id,
            process_step_id: None,
            status: StepStatus::Pending,
            attempts: 0,
            order,
            run_version: 0,
            worker_id: None,
            queued_at: None,
            started_at: None,
            finished_at: None,
            output: None,
            error: None,
            telemetry: None,
            hops: None,
            child_run_id: None,
            call_spec: None,
            kind: None,
            parent_step_run_id: None,
            agent: None,
            reserved_micros: None,
            input_hash: None,
            reused_from: None,
        }
    }
}

/// Decodes a record read as a JSON map; `what` and `id` name it in the error, with the field.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(what: &str, value: Value) -> Result<T, Error> {
    let id = value
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        Error::Decode(format!("{what} {id}: field `{field}`: {}", e.inner()))
    })
}

/// A status as its stored word, through the lifecycle's own table (`as_str`, `parse`).
macro_rules! status_word {
    ($module:ident, $status:ty) => {
        mod $module {
            use serde::{de::Error as _, Deserialize, Deserializer, Serializer};

            pub fn serialize<S: Serializer>(s: &$status, out: S) -> Result<S::Ok, S::Error> {
                out.serialize_str(s.as_str())
            }

            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<$status, D::Error> {
                let word = String::deserialize(d)?;
                <$status>::parse(&word).map_err(D::Error::custom)
            }
        }
    };
}

status_word!(run_status, aiden_domain::execution::machine::RunStatus);
status_word!(step_status, aiden_domain::execution::schedule::StepStatus);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run() -> Value {
        json!({"id": "r1", "processId": "p", "processVersion": 1, "versionId": "v",
               "status": "running", "depth": 1, "ownerId": "u", "inputs": "{}", "plan": "{}",
               "eventSeq": 3, "version": 2, "createdAt": "t"})
    }

    #[test]
    fn a_stored_record_decodes_with_its_typed_status() {
        let r: RunRecord = decode("Run", run()).unwrap();
        assert_eq!(r.status, RunStatus::Running);
        assert_eq!(r.version, 2);
        let s: StepRunRecord = decode(
            "StepRun",
            json!({"id": "r1/a", "runId": "r1", "stepId": "a", "status": "skipped",
                   "attempts": 0, "order": 0, "runVersion": 2}),
        )
        .unwrap();
        assert_eq!(s.status, StepStatus::Skipped);
    }

    #[test]
    fn a_missing_mistyped_or_unknown_field_is_an_error_naming_record_and_field() {
        let mut r = run();
        r["status"] = json!("paused");
        let e = decode::<RunRecord>("Run", r).unwrap_err().to_string();
        assert!(
            e.contains("Run r1: field `status`") && e.contains("paused"),
            "{e}"
        );
        let mut r = run();
        r.as_object_mut().unwrap().remove("ownerId");
        let e = decode::<RunRecord>("Run", r).unwrap_err().to_string();
        assert!(e.contains("Run r1") && e.contains("ownerId"), "{e}");
        let mut r = run();
        r["depth"] = json!("deep");
        let e = decode::<RunRecord>("Run", r).unwrap_err().to_string();
        assert!(e.contains("Run r1: field `depth`"), "{e}");
        let e = decode::<StepRunRecord>(
            "StepRun",
            json!({"id": "r1/a", "runId": "r1", "stepId": "a", "status": "bogus",
                   "attempts": 0, "order": 0, "runVersion": 2}),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("StepRun r1/a: field `status`") && e.contains("bogus"),
            "{e}"
        );
    }
}
