// Accounts (USR-5, USR-6): console sessions and one-time password links, each stored only as
// the SHA-256 of its secret (256 random bits, so a fast hash suffices and is looked up by
// index); users sign in by name.
CREATE CONSTRAINT session_hash IF NOT EXISTS FOR (n:Session) REQUIRE n.hash IS UNIQUE;
CREATE INDEX session_user IF NOT EXISTS FOR (n:Session) ON (n.userId);
CREATE CONSTRAINT password_link_hash IF NOT EXISTS FOR (n:PasswordLink) REQUIRE n.hash IS UNIQUE;
CREATE INDEX password_link_user IF NOT EXISTS FOR (n:PasswordLink) ON (n.userId);
CREATE INDEX user_name IF NOT EXISTS FOR (n:User) ON (n.name);
