CREATE (u:User {id: $id, name: $name, role: $role, tokenHash: $tokenHash, createdAt: $now})
RETURN u.id AS id
