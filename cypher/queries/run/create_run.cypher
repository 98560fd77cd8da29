// A Run with its StepRuns, each linked to its ProcessStep and to the Tool that step calls.
// With $expectedRevision (a plan from the API's cache), nothing is created unless the Process
// is still at that revision, enabled, and the version is its current one.
MATCH (p:Process {id: $processId})-[:HAS_VERSION]->(v:ProcessVersion {id: $versionId})
WHERE $expectedRevision IS NULL
   OR (p.revision = $expectedRevision AND p.enabled = true AND p.version = v.number)
MATCH (u:User {id: $ownerId})
CREATE (r:Run {id: $id, processId: $processId, processVersion: $number, versionId: $versionId,
               status: 'queued', depth: $depth, parentRunId: $parentRunId,
               parentStepRunId: $parentStepRunId, ownerId: $ownerId, inputs: $inputs,
               plan: $plan, eventSeq: 0, createdAt: $now, alternativeId: $alternativeId})
CREATE (r)-[:RUN_OF]->(v)
CREATE (r)-[:STARTED_BY]->(u)
WITH r
UNWIND $steps AS s
MATCH (ps:ProcessStep {id: s.processStepId})
CREATE (r)-[:HAS_STEP_RUN {order: s.order}]->(sr:StepRun {id: s.id, runId: r.id, stepId: s.stepId,
        status: 'pending', attempts: 0, order: s.order})-[:OF_STEP]->(ps)
WITH sr, ps
OPTIONAL MATCH (ps)-[:CALLS_TOOL]->(t:Tool)
FOREACH (_ IN CASE WHEN t IS NULL THEN [] ELSE [1] END | CREATE (sr)-[:INVOKES_TOOL]->(t))
RETURN count(DISTINCT sr) AS n
