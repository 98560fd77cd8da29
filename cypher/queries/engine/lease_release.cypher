// Give the engine lease up at shutdown, so a standby takes over at its next try
// instead of after the lease runs out.
MATCH (l:EngineLease {id: 'engine'})
WHERE l.holder = $holder
SET l.holder = null, l.expiresAt = 0, l.releasedAt = $now
RETURN l.id AS id
