// Events written one node each, before RunEventChunk (migration 0006).
MATCH (e:RunEvent)
WHERE e.runId = $runId AND e.seq > $after
RETURN e.seq AS seq, e.kind AS kind, e.stepId AS stepId, e.at AS at, e.data AS data
ORDER BY e.seq
LIMIT $limit
