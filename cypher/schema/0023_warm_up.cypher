// The engine's warm-up at `aiden serve`'s start (crates/graph/src/warm/passes.rs) drives passes of
// the pass statement through Neo4j's JIT on twins of the run record's labels, which no other
// statement reads: its ids are found through the same kind of index as the real ones, and its
// commits update the same kinds of index.
CREATE CONSTRAINT warm_up_run_id IF NOT EXISTS FOR (n:WarmUpRun) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT warm_up_step_run_id IF NOT EXISTS FOR (n:WarmUpStepRun) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT warm_up_worker_id IF NOT EXISTS FOR (n:WarmUpWorker) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT warm_up_process_id IF NOT EXISTS FOR (n:WarmUpProcess) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT warm_up_process_version_id IF NOT EXISTS FOR (n:WarmUpProcessVersion) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT warm_up_process_step_id IF NOT EXISTS FOR (n:WarmUpProcessStep) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT warm_up_user_id IF NOT EXISTS FOR (n:WarmUpUser) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT warm_up_alternative_id IF NOT EXISTS FOR (n:WarmUpAlternative) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT warm_up_tool_id IF NOT EXISTS FOR (n:WarmUpTool) REQUIRE n.id IS UNIQUE;
CREATE INDEX warm_up_run_status IF NOT EXISTS FOR (n:WarmUpRun) ON (n.status);
CREATE INDEX warm_up_run_process IF NOT EXISTS FOR (n:WarmUpRun) ON (n.processId);
CREATE INDEX warm_up_step_run_run IF NOT EXISTS FOR (n:WarmUpStepRun) ON (n.runId)
