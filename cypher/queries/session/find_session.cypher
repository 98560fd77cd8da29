// USR-6: authentication by session: live, not expired, of an enabled user (USR-2 as for tokens).
MATCH (s:Session {hash: $hash})
WHERE s.revokedAt IS NULL AND s.expiresAt > $now
MATCH (u:User {id: s.userId})
WHERE coalesce(u.disabled, false) = false
RETURN u.id AS id, u.name AS name, u.role AS role, u.createdAt AS createdAt,
       coalesce(u.disabled, false) AS disabled, u.quota AS quota, s.csrf AS csrf,
       s.expiresAt AS expiresAt
