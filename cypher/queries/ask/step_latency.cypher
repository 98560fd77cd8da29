// Where the time goes in version $version of Process $processId: per step, the calls, the
// failures and the latency of its tool calls (ms), from the audit records of its runs (not an
// agent step's pipeline record, AGT-16: it is not a tool call).
MATCH (:Process {id: $processId})-[:HAS_VERSION]->(v:ProcessVersion {number: $version})
MATCH (v)<-[:RUN_OF]-(:Run)-[:HAS_STEP_RUN]->(sr:StepRun)-[:HAS_AUDIT]->(x:ToolCallAudit)
WHERE x.kind IS NULL
RETURN sr.stepId AS stepId, count(x) AS calls,
       sum(CASE WHEN x.status = 'completed' THEN 0 ELSE 1 END) AS failures,
       min(x.durationMs) AS minMs, avg(x.durationMs) AS avgMs, max(x.durationMs) AS maxMs
ORDER BY stepId
