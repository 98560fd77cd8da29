MATCH (v:ProcessVersion {id: $versionId})
UNWIND $steps AS s
CREATE (v)-[:HAS_STEP {order: s.order}]->(:ProcessStep {id: s.key, stepId: s.stepId, versionId: $versionId, mode: s.mode, outputVariable: s.outputVariable})
