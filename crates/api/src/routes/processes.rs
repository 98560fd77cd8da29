//! Routes: Processes, their versions and runs, run events and approvals, workers.

use aiden_service::Page;

use super::{route, Table};
use crate::handlers::{forks as f, processes as p, runs as r};
use crate::openapi::Op;

pub(super) fn routes(t: Table) -> Table {
    use aiden_domain::execution::agent::ApprovalRequest;
    use aiden_domain::process::{NewProcess, Process, ProcessPatch};
    use aiden_service::{
        views::{ApprovalAnswer, CancelAnswer, Items, RunView, WorkerView},
        ProcessVersion, RunStarted,
    };
    let t = route!(
        t,
        POST,
        "/v1/processes",
        p::create_process,
        Op::new("Create a Process (version 1)")
            .body::<NewProcess>()
            .created::<Process>()
            .links("/v1/processes", "id")
            .errors(&[403, 404, 409, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/processes",
        p::list_processes,
        Op::new("List visible Processes")
            .paged()
            .ok::<Page<Process>>()
    );
    let t = route!(
        t,
        GET,
        "/v1/processes/{id}",
        p::get_process,
        Op::new("Get a Process at its current version").ok::<Process>()
    );
    let t = route!(
        t,
        PUT,
        "/v1/processes/{id}",
        p::put_process,
        Op::new("Replace a Process; a changed definition is a new version (PROC-9)")
            .body::<NewProcess>()
            .if_match()
            .ok::<Process>()
            .errors(&[403, 422])
    );
    let t = route!(
        t,
        PATCH,
        "/v1/processes/{id}",
        p::patch_process,
        Op::new("Update a Process; a changed definition is a new version (PROC-9)")
            .body::<ProcessPatch>()
            .if_match()
            .ok::<Process>()
            .errors(&[403, 422])
    );
    let t = route!(
        t,
        DELETE,
        "/v1/processes/{id}",
        p::delete_process,
        Op::new("Delete an unreferenced Process (PROC-10)")
            .no_content()
            .errors(&[403, 409])
    );
    let t = route!(
        t,
        GET,
        "/v1/processes/{id}/versions",
        p::list_process_versions,
        Op::new("Every version of a Process").ok::<Page<ProcessVersion>>()
    );
    let t = route!(
        t,
        POST,
        "/v1/processes/{id}/runs",
        r::start_run,
        Op::new(
            "Start a run of the Process's current version (Idempotency-Key: same key, same run)"
        )
        .body::<r::StartRun>()
        .header(
            "Idempotency-Key",
            "Same key and caller: the same run (keys over 200 characters are ignored)",
            serde_json::json!({"type": "string", "maxLength": 200}),
        )
        .accepted::<RunStarted>()
        .links("/v1/runs", "runId")
        .errors(&[409, 422, 429])
    );
    let t = route!(
        t,
        GET,
        "/v1/runs",
        r::list_runs,
        Op::new("Runs, newest first: your own (every run for an admin), by Process and status")
            .query::<r::RunListQuery>()
            .ok::<Page<aiden_service::views::RunSummary>>()
    );
    let t = route!(
        t,
        GET,
        "/v1/runs/{id}",
        r::get_run,
        Op::new("A run with per-step status, output and telemetry").ok::<RunView>()
    );
    let t = route!(
        t,
        POST,
        "/v1/runs/{id}/cancel",
        r::cancel_run,
        Op::new("Cancel a run: pending work never starts, in-flight calls are abandoned")
            .accepted::<CancelAnswer>()
            .errors(&[409])
    );
    let t = route!(
        t,
        POST,
        "/v1/runs/{id}/approvals",
        r::approve_run,
        Op::new("Grant (for ttlSeconds, or the rest of the run) or deny a capability an agent step waits for (AGT-9)")
            .body::<ApprovalRequest>()
            .accepted::<ApprovalAnswer>()
            .errors(&[409, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/runs/{id}/events",
        r::run_events,
        Op::new("The run's events as Server-Sent Events (resume with Last-Event-ID)")
            .header(
                "Last-Event-ID",
                "Resume after this event sequence",
                serde_json::json!({"type": "string"}),
            )
            .event_stream()
    );
    let t = route!(
        t,
        POST,
        "/v1/runs/{id}/forks",
        f::fork_run,
        Op::new("Fork a settled run from a step: earlier steps whose input is unchanged reuse its results; the step and everything downstream run anew (FORK-1..3)")
            .body::<aiden_service::forks::ForkRequest>()
            .accepted::<aiden_service::forks::ForkStarted>()
            .links("/v1/runs", "runId")
            .errors(&[409, 422, 429])
    );
    let t = route!(
        t,
        GET,
        "/v1/runs/{id}/diff/{other}",
        f::diff_runs,
        Op::new("How run `other` differs from run `id`, step by step: same, reused, input changed, output changed")
            .ok::<aiden_service::forks::RunDiff>()
    );
    let t = route!(
        t,
        POST,
        "/v1/processes/{id}/versions/{n}/replay",
        f::replay_version,
        Op::new("Dry replay: drive version n over recorded runs' results, calling and writing nothing; per run, same or the first divergence (REPLAY-1)")
            .body::<aiden_service::forks::ReplayRequest>()
            .ok::<aiden_service::forks::ReplayReport>()
            .errors(&[422])
    );
    route!(
        t,
        GET,
        "/v1/workers",
        r::list_workers,
        Op::new("Worker slots with heartbeat, status and counts").ok::<Items<WorkerView>>()
    )
}
