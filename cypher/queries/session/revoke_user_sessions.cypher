// USR-6: a disabled user's sessions are revoked with the change.
MATCH (s:Session {userId: $userId})
WHERE s.revokedAt IS NULL
SET s.revokedAt = $now
RETURN count(s) AS n
