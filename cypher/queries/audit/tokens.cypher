// USR-3: every token is an ApiToken with a hash, held by its user through HAS_TOKEN; no token
// (or hash) is kept on a User node.
MATCH (t:ApiToken)
WHERE t.hash IS NULL OR NOT EXISTS { MATCH (:User {id: t.userId})-[:HAS_TOKEN]->(t) }
RETURN t.id AS id
UNION
MATCH (u:User)
WHERE u.tokenHash IS NOT NULL OR u.token IS NOT NULL
RETURN u.id AS id
