MATCH (u:User {tokenHash: $tokenHash})
RETURN u.id AS id, u.name AS name, u.role AS role, u.createdAt AS createdAt
