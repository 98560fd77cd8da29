MERGE (u:User {id: $id})
ON CREATE SET u.name = $name, u.role = 'admin', u.createdAt = $now
SET u.tokenHash = $tokenHash
RETURN u.id AS id
