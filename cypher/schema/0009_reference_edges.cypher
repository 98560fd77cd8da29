// One graph you can ask: references that were only properties become edges too
// (GRAPH-1..4, docs/queries.md). New records get them in the statement that writes them; this
// gives records written before it theirs. The properties stay: hot paths look them up by index.
CREATE INDEX tool_call_audit_at IF NOT EXISTS FOR (n:ToolCallAudit) ON (n.at);
MATCH (a:Alternative)
WHERE a.runId IS NOT NULL
MATCH (r:Run {id: a.runId})
OPTIONAL MATCH (a)-[g:GENERATED_BY]->(r)
WITH a, r, count(g) AS n
WHERE n = 0
CREATE (a)-[:GENERATED_BY]->(r);
MATCH (x:ToolCallAudit)
MATCH (sr:StepRun {id: x.stepRunId})
OPTIONAL MATCH (sr)-[h:HAS_AUDIT]->(x)
WITH x, sr, count(h) AS n
WHERE n = 0
CREATE (sr)-[:HAS_AUDIT]->(x)
