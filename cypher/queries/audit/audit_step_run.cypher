// GRAPH-3: every tool-call audit record has exactly one HAS_AUDIT, from the step run it names.
MATCH (x:ToolCallAudit)
OPTIONAL MATCH (sr:StepRun)-[:HAS_AUDIT]->(x)
WITH x, collect(sr.id) AS stepRuns
WHERE size(stepRuns) <> 1 OR NOT x.stepRunId IN stepRuns
RETURN x.id AS id
