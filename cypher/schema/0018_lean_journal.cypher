// The lean journal: a tool step's StepRun is the audit record of its calls, and a
// static step's Tool is reached through OF_STEP->CALLS_TOOL. Records written before it move to
// that shape: each tool-call ToolCallAudit's facts onto its StepRun (the last attempt's input
// hash and duration; retried attempts as `retriedAt`, `retriedMs` and a JSON `retryLog`; the
// latest failure as `failedAt`, indexed), then the audit node goes; a static step's
// INVOKES_TOOL to its own step's Tool goes. Agent pipeline records (`kind` set) stay. Event
// chunks (RunEventChunk) stay where they are: the log reader reads them beside the Run's own.
CREATE INDEX step_run_failed_at IF NOT EXISTS FOR (n:StepRun) ON (n.failedAt);
MATCH (sr:StepRun)-[:HAS_AUDIT]->(x:ToolCallAudit)
WHERE x.kind IS NULL AND x.status = 'retrying'
WITH sr, x
ORDER BY x.attempt
WITH sr, collect(x) AS xs
SET sr.retriedAt = [x IN xs | x.at],
    sr.retriedMs = [x IN xs | toFloat(coalesce(x.durationMs, 0))],
    sr.retryLog = [x IN xs | '{"attempt":' + toString(x.attempt) + ',"inputHash":'
                   + CASE WHEN x.inputHash IS NULL THEN 'null' ELSE '"' + x.inputHash + '"' END
                   + ',"durationMs":' + coalesce(toString(x.durationMs), 'null')
                   + ',"at":"' + x.at + '"}'],
    sr.failedAt = xs[size(xs) - 1].at;
MATCH (sr:StepRun)-[:HAS_AUDIT]->(x:ToolCallAudit)
WHERE x.kind IS NULL AND x.status IN ['completed', 'failed']
SET sr.inputHash = x.inputHash,
    sr.durationMs = x.durationMs,
    sr.failedAt = CASE WHEN x.status = 'failed' THEN x.at ELSE sr.failedAt END;
MATCH (x:ToolCallAudit)
WHERE x.kind IS NULL
DETACH DELETE x;
MATCH (sr:StepRun)-[e:INVOKES_TOOL]->(t:Tool)
WHERE sr.callSpec IS NULL AND (sr)-[:OF_STEP]->(:ProcessStep)-[:CALLS_TOOL]->(t)
DELETE e
