// Acquire or renew the engine lease. Granted when nobody holds it, when the caller
// already does, or when the holder's lease ran out; `epoch` grows with every change of holder.
// The first SET takes the node's write lock before the holder is read, so two instances racing
// for an expired lease cannot both see it expired (Neo4j reads committed data).
MERGE (l:EngineLease {id: 'engine'})
SET l.attemptedAt = $now
WITH l, coalesce(l.holder = $holder, false) AS renewing
WHERE l.holder IS NULL OR renewing OR l.expiresAt < $now
SET l.epoch = CASE WHEN renewing THEN l.epoch ELSE coalesce(l.epoch, 0) + 1 END,
    l.holder = $holder,
    l.expiresAt = $expiresAt,
    l.renewedAt = $now
RETURN l.epoch AS epoch
