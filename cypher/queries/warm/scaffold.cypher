// The warm-up's definitions (crates/graph/src/warm/passes.rs): a Process at its version with its
// steps, the User its runs are started by and the Worker that runs their steps , all twins of
// the real labels. `warmUpAt` dates them for warm/forget.cypher.
CREATE (p:WarmUpProcess {id: $processId, revision: 1, enabled: true, version: 1, warmUpAt: $at})
CREATE (p)-[:HAS_VERSION]->(v:WarmUpProcessVersion {id: $versionId, number: 1, warmUpAt: $at})
CREATE (:WarmUpUser {id: $userId, warmUpAt: $at})
CREATE (:WarmUpWorker {id: $workerId, warmUpAt: $at})
WITH v
UNWIND $stepIds AS stepId
CREATE (v)-[:HAS_STEP]->(:WarmUpProcessStep {id: stepId, warmUpAt: $at})
