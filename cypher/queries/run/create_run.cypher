MATCH (v:ProcessVersion {id: $versionId}), (u:User {id: $ownerId})
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
RETURN count(sr) AS n
