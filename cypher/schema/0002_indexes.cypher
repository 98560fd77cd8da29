// Lookups the queries make: bearer tokens by hash, listings by owner.
CREATE CONSTRAINT user_token_hash IF NOT EXISTS FOR (n:User) REQUIRE n.tokenHash IS UNIQUE;
CREATE INDEX service_owner IF NOT EXISTS FOR (n:Service) ON (n.ownerId);
CREATE INDEX tool_owner IF NOT EXISTS FOR (n:Tool) ON (n.ownerId);
CREATE INDEX process_owner IF NOT EXISTS FOR (n:Process) ON (n.ownerId);
CREATE INDEX secret_owner IF NOT EXISTS FOR (n:Secret) ON (n.ownerId)
