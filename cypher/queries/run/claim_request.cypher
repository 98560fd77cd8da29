CREATE (q:RunRequest {key: $key, runId: $runId, createdAt: $now})
RETURN q.runId AS id
