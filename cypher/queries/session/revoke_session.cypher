// USR-6: sign-out revokes the session for good.
MATCH (s:Session {hash: $hash})
WHERE s.revokedAt IS NULL
SET s.revokedAt = $now
RETURN s.userId AS id
