// MEM-6: a claim whose run failed (or could not start) waits until $retryAt, then starts a new
// run (the earlier runs stay linked by STARTED_RUN).
MATCH (k:UpkeepClaim {key: $key})
SET k.runId = null, k.attempts = coalesce(k.attempts, 0) + 1, k.retryAt = $retryAt,
    k.lastError = $error
RETURN k.id AS id
