// Runs: a Run per execution of a Process version, a StepRun per step, an append-only
// RunEvent log keyed `runId#seq`, Worker nodes, tool-call audit records, idempotency requests.
CREATE CONSTRAINT run_id IF NOT EXISTS FOR (n:Run) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT step_run_id IF NOT EXISTS FOR (n:StepRun) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT run_event_key IF NOT EXISTS FOR (n:RunEvent) REQUIRE n.key IS UNIQUE;
CREATE CONSTRAINT worker_id IF NOT EXISTS FOR (n:Worker) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT run_request_key IF NOT EXISTS FOR (n:RunRequest) REQUIRE n.key IS UNIQUE;
CREATE CONSTRAINT tool_call_audit_id IF NOT EXISTS FOR (n:ToolCallAudit) REQUIRE n.id IS UNIQUE;
CREATE INDEX run_status IF NOT EXISTS FOR (n:Run) ON (n.status);
CREATE INDEX step_run_run IF NOT EXISTS FOR (n:StepRun) ON (n.runId);
CREATE INDEX run_event_run IF NOT EXISTS FOR (n:RunEvent) ON (n.runId);
CREATE INDEX tool_call_audit_run IF NOT EXISTS FOR (n:ToolCallAudit) ON (n.runId)
