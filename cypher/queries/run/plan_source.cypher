MATCH (p:Process {id: $processId})-[:HAS_VERSION]->(v:ProcessVersion)
WHERE v.number = p.version
MATCH (v)-[h:HAS_STEP]->(ps:ProcessStep)
OPTIONAL MATCH (ps)-[c:CALLS_TOOL]->(t:Tool)
OPTIONAL MATCH (ps)-[:CALLS_PROCESS]->(q:Process)
RETURN v.id AS versionId, v.number AS number, v.doc AS doc, p.enabled AS enabled, p.revision AS revision,
       p.ownerId AS ownerId, p.shared AS shared,
       ps.stepId AS stepId, ps.id AS processStepId, t.id AS toolId, t.doc AS toolDoc,
       c.timeout AS timeout, q.id AS childProcessId
ORDER BY h.order
