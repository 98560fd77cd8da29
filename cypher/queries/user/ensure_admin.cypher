// At every start: the bootstrap admin exists, is an enabled admin (USR-1), and its one
// bootstrap token is AIDEN_ADMIN_TOKEN's hash (a changed variable re-keys it; the old one stops).
MERGE (u:User {id: $id})
ON CREATE SET u.name = $name, u.createdAt = $now
SET u.role = 'admin', u.disabled = false
MERGE (t:ApiToken {id: $tokenId})
ON CREATE SET t.userId = $id, t.name = 'AIDEN_ADMIN_TOKEN', t.bootstrap = true, t.createdAt = $now
SET t.hash = $tokenHash, t.revokedAt = null
MERGE (u)-[:HAS_TOKEN]->(t)
RETURN u.id AS id
