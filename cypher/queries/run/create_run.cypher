// A Run node only. Its StepRuns are listed in `stepRuns` (JSON) and created by the engine when it
// first writes the run (run/apply_batch.cypher, `$stepRuns`): the engine is the single writer of
// StepRun records, so the API's inserts never contend with the engine's updates. The edges into the
// definitions and the caller (RUN_OF, STARTED_BY, OF_STEP, INVOKES_TOOL) are added by the engine
// when it starts the run (`$links`): concurrent run creations appending edges to the same hot
// Process/User/Tool nodes conflicted and retried under load. With $expectedRevision (a plan from
// the API's cache), nothing is created unless the Process is still at that revision, enabled, and
// the version is its current one. A fork (FORK-1) names its original: FORKED_FROM {atStep}, and
// `reuse`, the original's results it may take instead of calling their Tools.
MATCH (p:Process {id: $processId})-[:HAS_VERSION]->(v:ProcessVersion {id: $versionId})
WHERE $expectedRevision IS NULL
   OR (p.revision = $expectedRevision AND p.enabled = true AND p.version = v.number)
CREATE (r:Run {id: $id, processId: $processId, processVersion: $number, versionId: $versionId,
               status: $queued, depth: $depth, parentRunId: $parentRunId,
               parentStepRunId: $parentStepRunId, ownerId: $ownerId, inputs: $inputs,
               plan: $plan, eventSeq: 0, version: 0, createdAt: $now, alternativeId: $alternativeId,
               triggerKind: $triggerKind, triggerSubjectId: $triggerSubjectId, linked: false,
               stepRuns: $stepRuns, ownerBudgetMicros: $ownerBudgetMicros,
               forkedFrom: $forkedFrom, forkStep: $forkStep, reuse: $reuse})
WITH r
OPTIONAL MATCH (o:Run {id: coalesce($forkedFrom, '')})
FOREACH (_ IN CASE WHEN o IS NULL THEN [] ELSE [1] END |
  CREATE (r)-[:FORKED_FROM {atStep: $forkStep}]->(o))
RETURN count(r) AS n
