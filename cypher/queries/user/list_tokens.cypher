// GET /v1/users/{id}/tokens: every token the user ever had, newest first (never the hash).
MATCH (t:ApiToken {userId: $userId})
RETURN t.id AS id, t.name AS name, t.createdAt AS createdAt,
       coalesce(t.bootstrap, false) AS bootstrap,
       t.revokedAt AS revokedAt
ORDER BY t.createdAt DESC, t.id
