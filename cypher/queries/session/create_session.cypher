// USR-6: a console session of an enabled user; only its hash is stored.
MATCH (u:User {id: $userId})
WHERE coalesce(u.disabled, false) = false
CREATE (u)-[:HAS_SESSION]->(s:Session {hash: $hash, userId: $userId, csrf: $csrf,
        createdAt: $now, expiresAt: $expiresAt, source: $source})
RETURN s.userId AS id
