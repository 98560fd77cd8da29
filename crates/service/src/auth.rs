//! Identity: users with bearer tokens stored only as SHA-256 hashes (tokens are 256-bit random,
//! so a fast hash is enough and lets the token be looked up by index), and the bootstrap admin.

use aiden_domain::{
    access::ensure_admin,
    user::{Caller, Role},
    Id,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{
    now,
    tx::{read_tx, write_tx},
    App, Result,
};

/// The id of the admin that `AIDEN_ADMIN_TOKEN` authenticates.
pub const BOOTSTRAP_ADMIN_ID: &str = "admin";

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewUser {
    pub id: Option<Id>,
    #[schemars(schema_with = "aiden_domain::wire::name")]
    pub name: String,
    pub role: Role,
}

/// A user as shown; `token` only in the response that created it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct User {
    pub id: String,
    pub name: String,
    pub role: Role,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("aiden_{}", URL_SAFE_NO_PAD.encode(bytes))
}

impl App {
    /// Creates or re-keys the bootstrap admin so `AIDEN_ADMIN_TOKEN` works.
    pub async fn bootstrap_admin(&self, token: &str) -> Result<()> {
        if token.len() < 16 {
            return Err(aiden_domain::Error::validation(
                "AIDEN_ADMIN_TOKEN",
                "must be at least 16 characters",
            )
            .into());
        }
        let hash = hash_token(token);
        write_tx!(self, |tx| {
            aiden_graph::users::ensure_admin(&mut tx, BOOTSTRAP_ADMIN_ID, &hash, &now()).await?;
            Ok(())
        })
    }

    /// The caller a bearer token stands for, if any.
    pub async fn authenticate(&self, token: &str) -> Result<Option<Caller>> {
        let hash = hash_token(token);
        if let Some(caller) = self.auth_cache.get(&hash) {
            return Ok(Some(caller));
        }
        let row = read_tx!(self, |tx| {
            Ok(aiden_graph::users::find_by_token_hash(&mut tx, &hash).await?)
        })?;
        let caller = row.and_then(|r| {
            Some(Caller {
                id: Id::from_stored(r.id),
                role: Role::parse(&r.role)?,
            })
        });
        if let Some(c) = &caller {
            self.auth_cache.put(hash, c.clone());
        }
        Ok(caller)
    }

    pub async fn create_user(&self, caller: &Caller, input: NewUser) -> Result<User> {
        ensure_admin(caller)?;
        aiden_domain::service::check_name(&input.name)?;
        let id = aiden_domain::ids::id_or_new(input.id);
        let token = new_token();
        let hash = hash_token(&token);
        write_tx!(self, |tx| {
            if aiden_graph::users::get(&mut tx, id.as_str())
                .await?
                .is_some()
            {
                return Err(aiden_domain::Error::conflict("id already taken").into());
            }
            aiden_graph::users::create(
                &mut tx,
                id.as_str(),
                &input.name,
                input.role.as_str(),
                &hash,
                &now(),
            )
            .await?;
            Ok(())
        })?;
        Ok(User {
            id: id.to_string(),
            name: input.name,
            role: input.role,
            token: Some(token),
        })
    }

    pub async fn me(&self, caller: &Caller) -> Result<User> {
        let row = read_tx!(self, |tx| {
            Ok(aiden_graph::users::get(&mut tx, caller.id.as_str()).await?)
        })?;
        let row = row.ok_or(aiden_domain::Error::NotFound)?;
        Ok(User {
            id: row.id,
            name: row.name,
            role: caller.role,
            token: None,
        })
    }
}

/// Known token hashes for a few seconds, so a busy client costs one graph read per TTL
/// rather than one per request. Only positive answers are cached; users are never deleted or
/// demoted through the API, so a cached caller cannot outlive its rights.
#[derive(Clone, Default)]
pub(crate) struct AuthCache(
    std::sync::Arc<
        std::sync::Mutex<std::collections::HashMap<String, (Caller, std::time::Instant)>>,
    >,
);

impl AuthCache {
    const TTL: std::time::Duration = std::time::Duration::from_secs(10);
    const MAX: usize = 10_000;

    fn get(&self, hash: &str) -> Option<Caller> {
        let map = self.0.lock().ok()?;
        let (caller, at) = map.get(hash)?;
        (at.elapsed() < Self::TTL).then(|| caller.clone())
    }

    fn put(&self, hash: String, caller: Caller) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= Self::MAX {
                map.clear();
            }
            map.insert(hash, (caller, std::time::Instant::now()));
        }
    }
}
