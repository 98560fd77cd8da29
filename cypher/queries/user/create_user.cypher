// POST /v1/users: the user and its first token (only the token's hash is stored, USR-3).
CREATE (u:User {id: $id, name: $name, role: $role, disabled: false, createdAt: $now})
CREATE (u)-[:HAS_TOKEN]->(:ApiToken {id: $tokenId, userId: $id, hash: $tokenHash,
                                     name: 'initial', bootstrap: false, createdAt: $now,
                                     createdBy: $by})
RETURN u.id AS id
