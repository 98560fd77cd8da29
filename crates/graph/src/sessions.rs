//! Accounts (USR-5, USR-6): password links, passwords (argon2id hashes only) and console
//! sessions (SHA-256 hashes only) of users.

use serde::Deserialize;

use crate::{cypher, query_file, tx::IdRow, users::UserRow, Error, Tx};

/// A user's password hash, to verify a sign-in against.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInFacts {
    pub id: String,
    pub password_hash: String,
}

/// The user a live session stands for, with the session's CSRF token.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    #[serde(flatten)]
    pub user: UserRow,
    pub csrf: String,
    pub expires_at: String,
}

/// A new one-time password link for `user_id` (the user's earlier ones are spent); `None`
/// when the user does not exist.
pub async fn create_link(
    tx: &mut Tx,
    user_id: &str,
    hash: &str,
    expires_at: &str,
    by: &str,
    now: &str,
) -> Result<Option<IdRow>, Error> {
    let q = cypher(query_file!("session/create_link.cypher"), None)
        .param("userId", user_id)
        .param("hash", hash)
        .param("expiresAt", expires_at)
        .param("by", by)
        .param("now", now);
    tx.one(q).await
}

/// Spends a live link and sets its user's password; `None` for an unknown, spent or expired
/// link (or a disabled user).
pub async fn use_link(
    tx: &mut Tx,
    hash: &str,
    password_hash: &str,
    now: &str,
) -> Result<Option<IdRow>, Error> {
    let q = cypher(query_file!("session/use_link.cypher"), None)
        .param("hash", hash)
        .param("passwordHash", password_hash)
        .param("now", now);
    tx.one(q).await
}

/// The user sets their own password; every session but `keep` is revoked.
pub async fn set_password(
    tx: &mut Tx,
    user_id: &str,
    password_hash: &str,
    keep: Option<&str>,
    now: &str,
) -> Result<Option<IdRow>, Error> {
    let q = cypher(query_file!("session/set_password.cypher"), None)
        .param("userId", user_id)
        .param("passwordHash", password_hash)
        .param("keep", keep)
        .param("now", now);
    tx.one(q).await
}

/// Enabled users called `name` with a password (at most two: a shared name signs nobody in).
pub async fn sign_in_facts(tx: &mut Tx, name: &str) -> Result<Vec<SignInFacts>, Error> {
    tx.rows(cypher(query_file!("session/sign_in_facts.cypher"), None).param("name", name))
        .await
}

/// A new session: its hash, CSRF token, expiry and where it signed in from.
pub struct NewSession<'a> {
    pub user_id: &'a str,
    pub hash: &'a str,
    pub csrf: &'a str,
    pub expires_at: &'a str,
    pub source: &'a str,
}

pub async fn create_session(
    tx: &mut Tx,
    s: &NewSession<'_>,
    now: &str,
) -> Result<Option<IdRow>, Error> {
    let q = cypher(query_file!("session/create_session.cypher"), None)
        .param("userId", s.user_id)
        .param("hash", s.hash)
        .param("csrf", s.csrf)
        .param("expiresAt", s.expires_at)
        .param("source", s.source)
        .param("now", now);
    tx.one(q).await
}

pub async fn find_session(tx: &mut Tx, hash: &str, now: &str) -> Result<Option<SessionRow>, Error> {
    let q = cypher(query_file!("session/find_session.cypher"), None)
        .param("hash", hash)
        .param("now", now);
    tx.one(q).await
}

pub async fn revoke_session(tx: &mut Tx, hash: &str, now: &str) -> Result<Option<IdRow>, Error> {
    let q = cypher(query_file!("session/revoke_session.cypher"), None)
        .param("hash", hash)
        .param("now", now);
    tx.one(q).await
}

pub async fn revoke_user_sessions(tx: &mut Tx, user_id: &str, now: &str) -> Result<(), Error> {
    let q = cypher(query_file!("session/revoke_user_sessions.cypher"), None)
        .param("userId", user_id)
        .param("now", now);
    tx.run(q).await
}
