// Authentication: a live token of an enabled user (USR-2, USR-3).
MATCH (t:ApiToken {hash: $tokenHash})
WHERE t.revokedAt IS NULL
MATCH (u:User {id: t.userId})
WHERE coalesce(u.disabled, false) = false
RETURN u.id AS id, u.name AS name, u.role AS role, u.createdAt AS createdAt,
       coalesce(u.disabled, false) AS disabled, u.quota AS quota
