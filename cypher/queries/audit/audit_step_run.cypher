// GRAPH-3: every audit record has exactly one HAS_AUDIT, from the step run it names, and is an
// agent step's pipeline record (`kind`): a tool call is audited on its StepRun.
MATCH (x:ToolCallAudit)
OPTIONAL MATCH (sr:StepRun)-[:HAS_AUDIT]->(x)
WITH x, collect(sr.id) AS stepRuns
WHERE size(stepRuns) <> 1 OR NOT x.stepRunId IN stepRuns OR x.kind IS NULL
RETURN x.id AS id
