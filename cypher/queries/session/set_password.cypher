// USR-5: the user sets their own password (signed in); every other session is revoked (USR-6).
MATCH (u:User {id: $userId})
SET u.passwordHash = $passwordHash, u.passwordSetAt = $now
WITH u
OPTIONAL MATCH (s:Session {userId: u.id})
WHERE s.revokedAt IS NULL AND s.hash <> coalesce($keep, '')
SET s.revokedAt = $now
RETURN DISTINCT u.id AS id
