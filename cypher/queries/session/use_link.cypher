// USR-5: a live one-time link sets its user's password once: the link is spent, the argon2id
// hash stored, and every session of the user revoked (USR-6). Nothing matches an unknown,
// spent or expired link, nor a disabled user's.
MATCH (l:PasswordLink {hash: $hash})
WHERE l.usedAt IS NULL AND l.expiresAt > $now
MATCH (u:User {id: l.userId})
WHERE coalesce(u.disabled, false) = false
SET l.usedAt = $now, u.passwordHash = $passwordHash, u.passwordSetAt = $now
WITH u
OPTIONAL MATCH (s:Session {userId: u.id})
WHERE s.revokedAt IS NULL
SET s.revokedAt = $now
RETURN DISTINCT u.id AS id
