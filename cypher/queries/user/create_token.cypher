// POST /v1/users/{id}/tokens: one more token for the user (shown once; its hash stored).
MATCH (u:User {id: $userId})
CREATE (u)-[:HAS_TOKEN]->(t:ApiToken {id: $tokenId, userId: $userId, hash: $tokenHash,
                                      name: $name, bootstrap: false, createdAt: $now,
                                      createdBy: $by})
RETURN t.id AS id, t.name AS name, t.createdAt AS createdAt,
       coalesce(t.bootstrap, false) AS bootstrap,
       t.revokedAt AS revokedAt
