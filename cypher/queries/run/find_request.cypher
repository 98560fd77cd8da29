MATCH (q:RunRequest {key: $key})
RETURN q.runId AS id
