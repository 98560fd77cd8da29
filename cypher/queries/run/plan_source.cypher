// The Process's current version number and flags are read once, before its versions are
// walked: reads are read-committed, and reading them per row could meet an edit mid-statement
// (steps of two versions, or none). $number names an earlier version (a fork, a dry replay);
// null is the current one.
MATCH (p:Process {id: $processId})
WITH p, p.version AS current, p.enabled AS enabled, p.revision AS revision,
     p.ownerId AS ownerId, p.shared AS shared
MATCH (p)-[:HAS_VERSION]->(v:ProcessVersion)
WHERE v.number = coalesce($number, current)
MATCH (v)-[h:HAS_STEP]->(ps:ProcessStep)
OPTIONAL MATCH (ps)-[c:CALLS_TOOL]->(t:Tool)
OPTIONAL MATCH (ps)-[:CALLS_PROCESS]->(q:Process)
RETURN v.id AS versionId, v.number AS number, v.doc AS doc, enabled, revision,
       ownerId, shared,
       ps.stepId AS stepId, ps.id AS processStepId, t.id AS toolId, t.doc AS toolDoc,
       c.timeout AS timeout, q.id AS childProcessId
ORDER BY h.order
