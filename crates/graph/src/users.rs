//! Users and their bearer tokens (ApiToken nodes holding only SHA-256 hashes).

use serde::Deserialize;

use crate::{cypher, query_file, tx::IdRow, Error, Tx};

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserRow {
    pub id: String,
    pub name: String,
    pub role: String,
    pub created_at: Option<String>,
    #[serde(default)]
    pub disabled: bool,
    /// The user's quota (JSON text), set by an admin.
    #[serde(default)]
    pub quota: Option<String>,
    /// The Process the user's conversations answer with when none is named.
    #[serde(default)]
    pub default_process_id: Option<String>,
    /// USR-5: a password is set (read by the user list only).
    #[serde(default)]
    pub has_password: Option<bool>,
}

/// A user in the admins' list, with what they used.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedUser {
    #[serde(flatten)]
    pub user: UserRow,
    /// AGT-14: micro-dollars in the user's spend window of the day asked for.
    pub spent_micros: i64,
    /// Runs the user started (the engine's STARTED_BY edges).
    pub runs: i64,
}

/// Which users the admins' list shows: at most `limit` by name after the user `cursor`, those
/// whose name contains `q` (lower case) or whose id starts with it when given.
pub struct UserFilter<'a> {
    pub q: Option<&'a str>,
    pub cursor: Option<&'a str>,
    pub limit: i64,
}

/// A page of users by name (admins' list), with their spend on the UTC day `day`
/// (`YYYY-MM-DD`) and their runs.
pub async fn list(
    tx: &mut Tx,
    filter: &UserFilter<'_>,
    day: &str,
) -> Result<Vec<ListedUser>, Error> {
    let q = cypher(query_file!("user/list_users.cypher"), None)
        .param("day", day)
        .param("q", filter.q)
        .param("cursor", filter.cursor)
        .param("limit", filter.limit);
    tx.rows(q).await
}

/// Sets (or clears) the user's default chat Process.
pub async fn set_default_process(
    tx: &mut Tx,
    id: &str,
    process_id: Option<&str>,
) -> Result<(), Error> {
    let q = cypher(query_file!("user/set_default_process.cypher"), None)
        .param("id", id)
        .param("processId", process_id);
    tx.one::<IdRow>(q).await.map(|_| ())
}

/// What `PATCH /v1/users/{id}` changes (`None`: left as is).
pub struct UserUpdate<'a> {
    pub role: Option<&'a str>,
    pub disabled: Option<bool>,
    /// The quota as JSON text; `Some(None)` clears it.
    pub quota: Option<Option<String>>,
}

/// A token as recorded: never its hash.
#[derive(Debug, Clone, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenRow {
    pub id: String,
    pub name: Option<String>,
    pub created_at: Option<String>,
    /// The token `AIDEN_ADMIN_TOKEN` stands for (re-keyed by the variable, not the API).
    pub bootstrap: bool,
    pub revoked_at: Option<String>,
}

/// A new token's identity: its id, hash and who made it.
pub struct NewToken<'a> {
    pub id: &'a str,
    pub hash: &'a str,
    pub by: &'a str,
    pub now: &'a str,
}

pub async fn create(
    tx: &mut Tx,
    id: &str,
    name: &str,
    role: &str,
    token: &NewToken<'_>,
) -> Result<(), Error> {
    let q = cypher(query_file!("user/create_user.cypher"), None)
        .param("id", id)
        .param("name", name)
        .param("role", role)
        .param("tokenId", token.id)
        .param("tokenHash", token.hash)
        .param("by", token.by)
        .param("now", token.now);
    tx.one::<IdRow>(q).await.map(|_| ())
}

/// The bootstrap admin: created once, enabled and admin, its token kept in step with
/// `AIDEN_ADMIN_TOKEN`.
pub async fn ensure_admin(
    tx: &mut Tx,
    id: &str,
    token_id: &str,
    token_hash: &str,
    now: &str,
) -> Result<(), Error> {
    let q = cypher(query_file!("user/ensure_admin.cypher"), None)
        .param("id", id)
        .param("name", "admin")
        .param("tokenId", token_id)
        .param("tokenHash", token_hash)
        .param("now", now);
    tx.one::<IdRow>(q).await.map(|_| ())
}

pub async fn find_by_token_hash(tx: &mut Tx, token_hash: &str) -> Result<Option<UserRow>, Error> {
    tx.one(
        cypher(query_file!("user/find_user_by_token_hash.cypher"), None)
            .param("tokenHash", token_hash),
    )
    .await
}

pub async fn get(tx: &mut Tx, id: &str) -> Result<Option<UserRow>, Error> {
    tx.one(cypher(query_file!("user/get_user.cypher"), None).param("id", id))
        .await
}

pub async fn update(
    tx: &mut Tx,
    id: &str,
    change: &UserUpdate<'_>,
    by: &str,
    now: &str,
) -> Result<Option<UserRow>, Error> {
    tx.one(
        cypher(query_file!("user/update_user.cypher"), None)
            .param("id", id)
            .param("role", change.role)
            .param("disabled", change.disabled)
            .param("setQuota", change.quota.is_some())
            .param("quota", change.quota.clone().flatten())
            .param("by", by)
            .param("now", now),
    )
    .await
}

pub async fn create_token(
    tx: &mut Tx,
    user: &str,
    name: &str,
    token: &NewToken<'_>,
) -> Result<Option<TokenRow>, Error> {
    tx.one(
        cypher(query_file!("user/create_token.cypher"), None)
            .param("userId", user)
            .param("name", name)
            .param("tokenId", token.id)
            .param("tokenHash", token.hash)
            .param("by", token.by)
            .param("now", token.now),
    )
    .await
}

pub async fn list_tokens(tx: &mut Tx, user: &str) -> Result<Vec<TokenRow>, Error> {
    tx.rows(cypher(query_file!("user/list_tokens.cypher"), None).param("userId", user))
        .await
}

pub async fn get_token(tx: &mut Tx, user: &str, token: &str) -> Result<Option<TokenRow>, Error> {
    tx.one(
        cypher(query_file!("user/get_token.cypher"), None)
            .param("userId", user)
            .param("tokenId", token),
    )
    .await
}

pub async fn revoke_token(
    tx: &mut Tx,
    user: &str,
    token: &str,
    by: &str,
    now: &str,
) -> Result<Option<TokenRow>, Error> {
    tx.one(
        cypher(query_file!("user/revoke_token.cypher"), None)
            .param("userId", user)
            .param("tokenId", token)
            .param("by", by)
            .param("now", now),
    )
    .await
}
