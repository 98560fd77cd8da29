// Durable cancel request: the engine's sweep honours it even if the cancel message is lost.
MATCH (r:Run {id: $id})
WHERE r.status IN ['queued', 'running']
SET r.cancelRequested = true
RETURN r.id AS id
