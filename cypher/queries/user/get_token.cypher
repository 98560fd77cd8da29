MATCH (t:ApiToken {id: $tokenId, userId: $userId})
RETURN t.id AS id, t.name AS name, t.createdAt AS createdAt, t.bootstrap AS bootstrap,
       t.revokedAt AS revokedAt
