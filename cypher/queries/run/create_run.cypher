// A Run with its StepRuns: new nodes and the edges between them only. The edges into the
// definitions and the caller (RUN_OF, STARTED_BY, OF_STEP, INVOKES_TOOL) are added by the
// engine when it starts the run (run/apply_batch.cypher, `$links`): concurrent run creations
// appending edges to the same hot Process/User/Tool nodes conflicted and retried under load.
// With $expectedRevision (a plan from the API's cache), nothing is created unless the Process
// is still at that revision, enabled, and the version is its current one.
MATCH (p:Process {id: $processId})-[:HAS_VERSION]->(v:ProcessVersion {id: $versionId})
WHERE $expectedRevision IS NULL
   OR (p.revision = $expectedRevision AND p.enabled = true AND p.version = v.number)
CREATE (r:Run {id: $id, processId: $processId, processVersion: $number, versionId: $versionId,
               status: 'queued', depth: $depth, parentRunId: $parentRunId,
               parentStepRunId: $parentStepRunId, ownerId: $ownerId, inputs: $inputs,
               plan: $plan, eventSeq: 0, createdAt: $now, alternativeId: $alternativeId,
               triggerKind: $triggerKind, triggerSubjectId: $triggerSubjectId, linked: false})
WITH r
UNWIND $steps AS s
CREATE (r)-[:HAS_STEP_RUN {order: s.order}]->(sr:StepRun {id: s.id, runId: r.id, stepId: s.stepId,
        processStepId: s.processStepId, status: 'pending', attempts: 0, order: s.order})
RETURN count(sr) AS n
