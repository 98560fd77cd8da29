// Failed tool calls per Tool since $since (an RFC 3339 time, e.g. an hour ago): attempts that
// failed for good and attempts that were retried, from the tool-call audit records (an agent
// step's pipeline record, AGT-16, is not a call of its model).
MATCH (sr:StepRun)-[:HAS_AUDIT]->(x:ToolCallAudit)
WHERE x.at >= $since AND x.status IN ['failed', 'retrying'] AND x.kind IS NULL
MATCH (sr)-[:INVOKES_TOOL]->(t:Tool)
RETURN t.id AS toolId, t.name AS tool,
       sum(CASE WHEN x.status = 'failed' THEN 1 ELSE 0 END) AS failed,
       sum(CASE WHEN x.status = 'retrying' THEN 1 ELSE 0 END) AS retried,
       count(DISTINCT sr.runId) AS runs
ORDER BY failed + retried DESC, toolId
