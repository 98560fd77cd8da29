//! Identity: users with any number of bearer tokens, stored only as SHA-256 hashes (tokens are
//! 256-bit random, so a fast hash is enough and lets the token be looked up by index); the
//! bootstrap admin; disabling, roles, token rotation and revocation (USR-1..3); and
//! failed-authentication throttling per source (USR-4, `throttle.rs`).

use aiden_domain::{
    access::ensure_admin,
    user::{check_token_manager, check_user_patch, Caller, Role, UserPatch},
    Id,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{
    now,
    tx::{read_tx, write_tx},
    App, Page, PageRequest, Result,
};

/// The id of the admin that `AIDEN_ADMIN_TOKEN` authenticates.
pub const BOOTSTRAP_ADMIN_ID: &str = "admin";
/// The id of that admin's token (USR-3: not revocable through the API).
const BOOTSTRAP_TOKEN_ID: &str = "bootstrap-admin";

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewUser {
    pub id: Option<Id>,
    #[schemars(schema_with = "aiden_domain::wire::name")]
    pub name: String,
    pub role: Role,
}

/// A user as shown; `token` (and `tokenId`) only in the response that created it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct User {
    pub id: String,
    pub name: String,
    pub role: Role,
    pub disabled: bool,
    /// Limits on what the user starts (AGT-10, AGT-14), set by an admin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota: Option<aiden_domain::process::Quota>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_id: Option<String>,
    /// The Process the user's conversations answer with when none is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_process_id: Option<String>,
    /// USR-5: whether a password is set (in the admins' user list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_password: Option<bool>,
    /// `GET /v1/me` of an admin: where Neo4j Browser answers for this server's graph (its
    /// HTTP address, never a credential), so the console can open a lineage query there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neo4j_browser_url: Option<String>,
    /// In the admins' user list: what the user used (their spend today, their runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// What a user used, in the admins' list (`GET /v1/users`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// The UTC day (`YYYY-MM-DD`) `spentTodayUsd` counts.
    pub day: String,
    /// AGT-14: what the user's runs spent that day (model tokens at the configured prices,
    /// Tools' `costPerCallUsd`; a call still running counts at its estimate), against
    /// `quota.maxCostUsdPerDay` when they have one.
    pub spent_today_usd: f64,
    /// Runs the user started, of every depth (the runs `GET /v1/runs?ownerId=` lists), counted
    /// once the engine has begun them.
    pub runs: u64,
}

/// `POST /v1/users/{id}/tokens`.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewToken {
    /// What the token is for (e.g. "ci"); shown in the token list.
    #[serde(default)]
    #[schemars(schema_with = "aiden_domain::wire::name_or_null")]
    pub name: Option<String>,
}

/// A token as listed: its record (never its value or hash), and `token` only in the response
/// that created it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Token {
    #[serde(flatten)]
    pub record: aiden_graph::users::TokenRow,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl From<aiden_graph::users::TokenRow> for Token {
    fn from(record: aiden_graph::users::TokenRow) -> Self {
        Self {
            record,
            token: None,
        }
    }
}

fn user_view(r: aiden_graph::users::UserRow) -> Result<User> {
    Ok(User {
        role: Role::parse(&r.role)
            .ok_or_else(|| crate::Error::Internal(format!("user {} has role {}", r.id, r.role)))?,
        quota: quota_of(&r),
        id: r.id,
        name: r.name,
        disabled: r.disabled,
        created_at: r.created_at,
        token: None,
        token_id: None,
        default_process_id: r.default_process_id,
        has_password: r.has_password,
        neo4j_browser_url: None,
        usage: None,
    })
}

/// A stored user quota; one that no longer parses is treated as none and logged.
pub(crate) fn quota_of(r: &aiden_graph::users::UserRow) -> Option<aiden_domain::process::Quota> {
    let text = r.quota.as_deref()?;
    serde_json::from_str(text)
        .map_err(|e| tracing::error!(user = %r.id, error = %e, "stored user quota is unreadable"))
        .ok()
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
            aiden_graph::users::ensure_admin(
                &mut tx,
                BOOTSTRAP_ADMIN_ID,
                BOOTSTRAP_TOKEN_ID,
                &hash,
                &now(),
            )
            .await?;
            Ok(())
        })
    }

    /// The caller a bearer token from `source` stands for. USR-4: the failures are throttled,
    /// never a valid token: a source that has sent too many unknown tokens gets 401
    /// `RATE_LIMITED` with `Retry-After` for the next unknown ones until its budget refills,
    /// while a valid token from it (others behind the same proxy or NAT) still works. Guessing a
    /// 256-bit token is hopeless at any rate.
    pub async fn authenticate_from(
        &self,
        source: std::net::IpAddr,
        token: &str,
    ) -> std::result::Result<Caller, AuthRefusal> {
        match self.authenticate(token).await {
            Ok(Some(caller)) => Ok(caller),
            // Already refused: not counted again; else this failure takes a cell.
            Ok(None) => match self
                .auth_throttle
                .refused_for(source)
                .or_else(|| self.auth_throttle.failed(source))
            {
                Some(wait) => Err(AuthRefusal::Throttled(wait)),
                None => Err(AuthRefusal::Unknown),
            },
            Err(e) => Err(AuthRefusal::Failed(e)),
        }
    }

    /// The caller a bearer token stands for, if any.
    pub async fn authenticate(&self, token: &str) -> Result<Option<Caller>> {
        let hash = hash_token(token);
        if let Some(caller) = self.auth_cache.get(&hash) {
            return Ok(Some(caller));
        }
        // One read per token when its entry expires: the requests that missed with it wait for
        // that read instead of each making their own (a client with 32 requests in flight
        // made 32 at every expiry, each planned anew on a server just started).
        let _one_read = self.auth_cache.reading.lock(&hash).await;
        if let Some(caller) = self.auth_cache.get(&hash) {
            return Ok(Some(caller));
        }
        self.auth_cache.count_read();
        let row = read_tx!(self, |tx| {
            Ok(aiden_graph::users::find_by_token_hash(&mut tx, &hash).await?)
        })?;
        let caller = row.and_then(|r| {
            Some(Caller {
                quota: quota_of(&r),
                role: Role::parse(&r.role)?,
                id: Id::from_stored(r.id),
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
        let token_id = new_token_id();
        let created_at = now();
        write_tx!(self, |tx| {
            if aiden_graph::users::get(&mut tx, id.as_str())
                .await?
                .is_some()
            {
                return Err(aiden_domain::Error::conflict("id already taken").into());
            }
            let new = aiden_graph::users::NewToken {
                id: &token_id,
                hash: &hash,
                by: caller.id.as_str(),
                now: &created_at,
            };
            aiden_graph::users::create(
                &mut tx,
                id.as_str(),
                &input.name,
                input.role.as_str(),
                &new,
            )
            .await?;
            Ok(())
        })?;
        Ok(User {
            id: id.to_string(),
            name: input.name,
            role: input.role,
            disabled: false,
            quota: None,
            created_at: Some(created_at),
            token: Some(token),
            token_id: Some(token_id),
            default_process_id: None,
            has_password: Some(false),
            neo4j_browser_url: None,
            usage: None,
        })
    }

    /// `GET /v1/users` (admins): a page of users by name, those whose name contains `q` or
    /// whose id starts with it when given, each with their spend today (the App's clock's UTC
    /// day, the one AGT-14's start checks read) and their runs.
    pub async fn list_users(
        &self,
        caller: &Caller,
        q: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<User>> {
        ensure_admin(caller)?;
        let limit = page.limit()?;
        let day = aiden_domain::execution::cost::day_of(self.clock.now());
        let q = q.map(|q| q.trim().to_lowercase()).filter(|q| !q.is_empty());
        let filter = aiden_graph::users::UserFilter {
            q: q.as_deref(),
            cursor: page.cursor.as_deref(),
            limit: limit + 1,
        };
        let rows = read_tx!(self, |tx| {
            Ok(aiden_graph::users::list(&mut tx, &filter, &day).await?)
        })?;
        let items = rows
            .into_iter()
            .map(|r| {
                let mut user = user_view(r.user)?;
                user.usage = Some(Usage {
                    day: day.clone(),
                    spent_today_usd: aiden_domain::execution::cost::usd(
                        r.spent_micros.max(0) as u64
                    ),
                    runs: r.runs.max(0) as u64,
                });
                Ok(user)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Page::from_one_more(items, limit, |u| u.id.clone()))
    }

    /// `GET /v1/me`: the caller, and for an admin the Neo4j Browser's address.
    pub async fn me(&self, caller: &Caller) -> Result<User> {
        let mut me = self.user(caller, caller.id.as_str()).await?;
        if caller.is_admin() {
            me.neo4j_browser_url = self.neo4j_browser.as_deref().map(str::to_owned);
        }
        Ok(me)
    }

    /// `GET /v1/users/{id}`: an admin sees anyone, a user only themselves (404 otherwise).
    pub async fn user(&self, caller: &Caller, id: &str) -> Result<User> {
        check_token_manager(caller, id)?;
        let row = read_tx!(self, |tx| {
            Ok(aiden_graph::users::get(&mut tx, id).await?)
        })?;
        user_view(row.ok_or(aiden_domain::Error::NotFound)?)
    }

    /// `PATCH /v1/users/{id}` (USR-1). This instance forgets the user's cached tokens at once;
    /// other instances within [`AuthPolicy::cache_ttl`] (USR-2).
    pub async fn update_user(&self, caller: &Caller, id: &str, patch: UserPatch) -> Result<User> {
        check_user_patch(caller, id, &patch, BOOTSTRAP_ADMIN_ID)?;
        let change = aiden_graph::users::UserUpdate {
            role: patch.role.map(Role::as_str),
            disabled: patch.disabled,
            quota: patch
                .quota
                .map(|q| q.map(|q| serde_json::to_string(&q).unwrap_or_default())),
        };
        let row = write_tx!(self, |tx| {
            let row = aiden_graph::users::update(&mut tx, id, &change, caller.id.as_str(), &now())
                .await?;
            // USR-6: a disabled user's sessions end with the change.
            if patch.disabled == Some(true) {
                aiden_graph::sessions::revoke_user_sessions(&mut tx, id, &now()).await?;
            }
            Ok(row)
        })?;
        self.auth_cache.forget_user(id);
        user_view(row.ok_or(aiden_domain::Error::NotFound)?)
    }

    /// `POST /v1/users/{id}/tokens` (USR-3): one more token, shown once. Rotation is a new
    /// token, then the old one revoked.
    pub async fn create_token(
        &self,
        caller: &Caller,
        user: &str,
        input: NewToken,
    ) -> Result<Token> {
        check_token_manager(caller, user)?;
        let name = input.name.unwrap_or_else(|| "token".to_owned());
        aiden_domain::service::check_name(&name)?;
        let token = new_token();
        let hash = hash_token(&token);
        let token_id = new_token_id();
        let row = write_tx!(self, |tx| {
            let new = aiden_graph::users::NewToken {
                id: &token_id,
                hash: &hash,
                by: caller.id.as_str(),
                now: &now(),
            };
            Ok(aiden_graph::users::create_token(&mut tx, user, &name, &new).await?)
        })?;
        let mut view = Token::from(row.ok_or(aiden_domain::Error::NotFound)?);
        view.token = Some(token);
        Ok(view)
    }

    /// `GET /v1/users/{id}/tokens`: live and revoked, newest first.
    pub async fn tokens(&self, caller: &Caller, user: &str) -> Result<Vec<Token>> {
        check_token_manager(caller, user)?;
        let rows = read_tx!(self, |tx| {
            if aiden_graph::users::get(&mut tx, user).await?.is_none() {
                return Err(aiden_domain::Error::NotFound.into());
            }
            Ok(aiden_graph::users::list_tokens(&mut tx, user).await?)
        })?;
        Ok(rows.into_iter().map(Token::from).collect())
    }

    /// `DELETE /v1/users/{id}/tokens/{tokenId}` (USR-3): revoked for good; again is a no-op.
    /// The bootstrap token is re-keyed through `AIDEN_ADMIN_TOKEN`, never revoked here.
    pub async fn revoke_token(&self, caller: &Caller, user: &str, token: &str) -> Result<()> {
        check_token_manager(caller, user)?;
        write_tx!(self, |tx| {
            let row = aiden_graph::users::get_token(&mut tx, user, token)
                .await?
                .ok_or(aiden_domain::Error::NotFound)?;
            if row.bootstrap {
                return Err(aiden_domain::Error::invariant(
                    "USR-3",
                    "",
                    "the bootstrap token is AIDEN_ADMIN_TOKEN's: change the variable to re-key it",
                )
                .into());
            }
            aiden_graph::users::revoke_token(&mut tx, user, token, caller.id.as_str(), &now())
                .await?;
            Ok(())
        })?;
        self.auth_cache.forget_user(user);
        Ok(())
    }
}

/// Why a request carries no caller.
#[derive(Debug)]
pub enum AuthRefusal {
    /// No live token of an enabled user has this hash (401).
    Unknown,
    /// The source sent too many unknown tokens; retry after this long (401 `RATE_LIMITED`, USR-4).
    Throttled(std::time::Duration),
    /// The graph could not answer (503/500, as any request).
    Failed(crate::Error),
}

fn new_token_id() -> String {
    format!("tok-{}", uuid::Uuid::now_v7())
}

/// How this instance authenticates: how long a known token is trusted without a graph read,
/// and how many unknown tokens a source may send per minute.
#[derive(Debug, Clone)]
pub struct AuthPolicy {
    /// USR-2's bound: a disabled user, a demoted admin or a revoked token is refused by every
    /// instance within this long (at once by the instance that made the change).
    pub cache_ttl: std::time::Duration,
    /// USR-4: unknown tokens per source per minute before the source is refused; 0 turns the
    /// throttle off.
    pub failures_per_minute: u32,
    /// Behind a proxy: the header whose first address is the client's (e.g.
    /// `x-forwarded-for`). Unset: the TCP peer's address.
    pub source_header: Option<String>,
}

impl Default for AuthPolicy {
    fn default() -> Self {
        Self {
            cache_ttl: std::time::Duration::from_secs(5),
            failures_per_minute: 20,
            source_header: None,
        }
    }
}

/// Known token hashes for [`AuthPolicy::cache_ttl`], so a busy client costs one graph read per
/// TTL rather than one per request. Only positive answers are cached.
#[derive(Clone)]
pub(crate) struct AuthCache {
    map: std::sync::Arc<
        std::sync::Mutex<std::collections::HashMap<String, (Caller, std::time::Instant)>>,
    >,
    ttl: std::time::Duration,
    /// Held while a token's read is in flight (a stripe per token hash).
    reading: crate::stripes::Stripes,
    /// Token reads this instance made of the graph.
    reads: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl AuthCache {
    const MAX: usize = 10_000;

    pub(crate) fn new(ttl: std::time::Duration) -> Self {
        Self {
            map: Default::default(),
            ttl,
            reading: Default::default(),
            reads: Default::default(),
        }
    }

    fn get(&self, hash: &str) -> Option<Caller> {
        let map = self.map.lock().ok()?;
        let (caller, at) = map.get(hash)?;
        (at.elapsed() < self.ttl).then(|| caller.clone())
    }

    fn count_read(&self) {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        metrics::counter!("aiden_auth_token_reads_total").increment(1);
    }

    pub(crate) fn reads(&self) -> u64 {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// After a change to a user or their tokens: this instance asks the graph again.
    pub(crate) fn forget_user(&self, id: &str) {
        if let Ok(mut map) = self.map.lock() {
            map.retain(|_, (caller, _)| caller.id.as_str() != id);
        }
    }

    fn put(&self, hash: String, caller: Caller) {
        if let Ok(mut map) = self.map.lock() {
            if map.len() >= Self::MAX {
                map.clear();
            }
            map.insert(hash, (caller, std::time::Instant::now()));
        }
    }
}
