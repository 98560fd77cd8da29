// Sign-in: the enabled users of this name with a password set (the caller refuses a name two
// users share), and the argon2id hash to verify against.
MATCH (u:User {name: $name})
WHERE coalesce(u.disabled, false) = false AND u.passwordHash IS NOT NULL
RETURN u.id AS id, u.passwordHash AS passwordHash
LIMIT 2
