// An agent loop's new calls: each model turn and tool call is a StepRun of the run,
// `queued`, carrying the spec it is dispatched from (`callSpec`, so a restarted engine can
// dispatch it again), HAS_CALL from the agent's step run and INVOKES_TOOL to what it calls.
// Written by the engine's single writer, before the pass's batch that may update them.
UNWIND $calls AS c
MATCH (r:Run {id: c.runId})
MATCH (p:StepRun {id: c.parentId})
CREATE (r)-[:HAS_STEP_RUN {order: c.order}]->(sr:StepRun {
  id: c.id, runId: c.runId, stepId: c.stepId, parentStepRunId: c.parentId, kind: c.kind,
  callSpec: c.spec, status: $queued, attempts: 0, order: c.order, queuedAt: c.at,
  runVersion: c.runVersion})
CREATE (p)-[:HAS_CALL {order: c.order}]->(sr)
WITH sr, c
OPTIONAL MATCH (t:Tool {id: c.toolId})
FOREACH (_ IN CASE WHEN t IS NULL THEN [] ELSE [1] END | CREATE (sr)-[:INVOKES_TOOL]->(t))
RETURN count(*) AS n
