//! Users and their bearer-token hashes.

use serde::Deserialize;

use crate::{cypher, query_file, tx::IdRow, Error, Tx};

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserRow {
    pub id: String,
    pub name: String,
    pub role: String,
    pub created_at: Option<String>,
}

pub async fn create(
    tx: &mut Tx,
    id: &str,
    name: &str,
    role: &str,
    token_hash: &str,
    now: &str,
) -> Result<(), Error> {
    let q = cypher(query_file!("user/create_user.cypher"), None)
        .param("id", id)
        .param("name", name)
        .param("role", role)
        .param("tokenHash", token_hash)
        .param("now", now);
    tx.one::<IdRow>(q).await.map(|_| ())
}

/// The bootstrap admin: created once, its token hash kept in step with `AIDEN_ADMIN_TOKEN`.
pub async fn ensure_admin(tx: &mut Tx, id: &str, token_hash: &str, now: &str) -> Result<(), Error> {
    let q = cypher(query_file!("user/ensure_admin.cypher"), None)
        .param("id", id)
        .param("name", "admin")
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
