MATCH (t:ApiToken {id: $tokenId, userId: $userId})
RETURN t.id AS id, t.name AS name, t.createdAt AS createdAt,
       coalesce(t.bootstrap, false) AS bootstrap,
       t.revokedAt AS revokedAt
