// Open claims with the status of the run each started (none yet: a crash between the claim
// and the run's start; the idempotency key finds the run if it was made).
// The run id is read once: the run found and the id returned are the same one.
MATCH (k:UpkeepClaim)
WITH k, k.runId AS runId
OPTIONAL MATCH (r:Run {id: coalesce(runId, '')})
RETURN k.key AS key, k.id AS id, k.kind AS kind, k.subjectId AS subjectId,
       k.ownerId AS ownerId, k.processId AS processId, k.payload AS payload, runId,
       k.createdAt AS createdAt, coalesce(k.attempts, 0) AS attempts, k.retryAt AS retryAt,
       r.status AS runStatus
ORDER BY k.createdAt
LIMIT $limit
