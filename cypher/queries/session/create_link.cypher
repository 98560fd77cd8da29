// USR-5: a one-time link to set the user's password; the links the user had are spent, so only
// the newest works. Only its hash is stored.
MATCH (u:User {id: $userId})
OPTIONAL MATCH (old:PasswordLink {userId: $userId})
WHERE old.usedAt IS NULL
SET old.usedAt = $now
WITH DISTINCT u
CREATE (u)-[:HAS_PASSWORD_LINK]->(l:PasswordLink {hash: $hash, userId: $userId,
        createdAt: $now, expiresAt: $expiresAt, createdBy: $by})
RETURN l.userId AS id
