// Users and tokens: a user holds any number of bearer tokens, each an ApiToken node
// with its own id (to revoke one) and only the SHA-256 of the token (USR-3). Tokens stored on
// the User before this migration move to an ApiToken each; the bootstrap admin's keeps the id
// `bootstrap-admin`, which `aiden serve` re-keys from AIDEN_ADMIN_TOKEN at every start.
CREATE CONSTRAINT api_token_id IF NOT EXISTS FOR (n:ApiToken) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT api_token_hash IF NOT EXISTS FOR (n:ApiToken) REQUIRE n.hash IS UNIQUE;
CREATE INDEX api_token_user IF NOT EXISTS FOR (n:ApiToken) ON (n.userId);
MATCH (u:User)
WHERE u.tokenHash IS NOT NULL
CREATE (u)-[:HAS_TOKEN]->(:ApiToken {id: CASE WHEN u.id = 'admin' THEN 'bootstrap-admin' ELSE 'initial-' + u.id END,
                                     userId: u.id, hash: u.tokenHash, name: 'initial',
                                     bootstrap: u.id = 'admin', createdAt: coalesce(u.createdAt, '')})
REMOVE u.tokenHash
