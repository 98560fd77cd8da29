// Where the time goes in version $version of Process $processId: per step, the calls, the
// failures and the latency of its tool calls (ms). A step run is its calls' audit record: its
// retried attempts (`retriedMs`) and, once settled by a worker's result, its last one
// (`durationMs`). An agent step's pipeline and a child run are not tool calls: no worker ran
// them.
MATCH (:Process {id: $processId})-[:HAS_VERSION]->(v:ProcessVersion {number: $version})
MATCH (v)<-[:RUN_OF]-(:Run)-[:HAS_STEP_RUN]->(sr:StepRun)
WITH sr, sr.status IN ['completed', 'failed'] AND sr.workerId IS NOT NULL AS last,
     coalesce(sr.retriedMs, []) AS retried
WHERE last OR size(retried) > 0
WITH sr.stepId AS stepId,
     sum(size(retried) + CASE WHEN last THEN 1 ELSE 0 END) AS calls,
     sum(size(retried) + CASE WHEN last AND sr.status = 'failed' THEN 1 ELSE 0 END) AS failures,
     collect(retried + CASE WHEN last AND sr.durationMs IS NOT NULL
                            THEN [toFloat(sr.durationMs)] ELSE [] END) AS lists
WITH stepId, calls, failures, reduce(all = [], l IN lists | all + l) AS ms
UNWIND CASE WHEN size(ms) = 0 THEN [null] ELSE ms END AS m
RETURN stepId, calls, failures, min(m) AS minMs, avg(m) AS avgMs, max(m) AS maxMs
ORDER BY stepId
