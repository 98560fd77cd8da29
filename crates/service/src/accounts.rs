//! Accounts for people (USR-5, USR-6): a user signs in to the console with a name and a
//! password and gets a session; API tokens stay for programs (USR-3).
//!
//! - Passwords are stored only as argon2id hashes (the `argon2` crate's defaults, OWASP's
//!   recommended 19 MiB, 2 passes), set by the user: from a one-time link an admin creates
//!   (24 h, used once, the newest only) or signed in, for themselves. Never logged or returned.
//! - A session is 256 random bits, stored only as its SHA-256 (like tokens), carried in an
//!   HttpOnly, SameSite=Strict cookie; every mutation made with it must echo its CSRF token in
//!   `X-CSRF-Token` (the API edge checks). It expires after [`SESSION_TTL`], and is revoked on
//!   sign-out, when its user is disabled and when the password changes.
//! - Failed sign-ins and unknown links count against the source's USR-4 budget.

use std::net::IpAddr;
use std::sync::OnceLock;

use aiden_domain::{
    access::ensure_admin,
    user::{check_password, Caller, Role},
    Id,
};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::auth::AuthRefusal;
use crate::{now, tx::read_tx, tx::write_tx, App, Result};

/// How long a console session lasts.
pub const SESSION_TTL: chrono::Duration = chrono::Duration::hours(12);
/// How long a password link works.
pub const LINK_TTL: chrono::Duration = chrono::Duration::hours(24);
/// The session cookie's name.
pub const SESSION_COOKIE: &str = "aiden_session";

/// `POST /v1/sessions`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignIn {
    /// The user's name.
    pub name: String,
    pub password: String,
}

/// `POST /v1/password`: a one-time link's token and the new password.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PasswordReset {
    pub token: String,
    pub password: String,
}

/// `PUT /v1/users/{id}/password`: the signed-in user's new password.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewPassword {
    pub password: String,
}

/// A one-time link to set a password, shown once to the admin who made it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordLink {
    pub user_id: String,
    pub token: String,
    /// The console page that takes it.
    pub path: String,
    pub expires_at: String,
}

/// A session as its owner sees it: who, its CSRF token, when it ends. The session id itself
/// only ever travels in the cookie.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub user_id: String,
    pub name: String,
    pub role: Role,
    /// Echo it in `X-CSRF-Token` on every mutation made with the session cookie.
    pub csrf_token: String,
    pub expires_at: String,
}

/// A new session: its view and the id for the cookie.
pub struct Session {
    pub view: SessionView,
    pub id: String,
}

/// The caller a session cookie stands for, and the CSRF token its mutations must carry.
pub struct SessionCaller {
    pub caller: Caller,
    pub csrf: String,
    pub expires_at: String,
    pub name: String,
}

fn secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

fn sha256(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

fn stamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// argon2id with a fresh salt, off the async threads (it is meant to be slow).
async fn hash_password(password: String) -> Result<String> {
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>())
            .map_err(|e| crate::Error::Internal(format!("salt: {e}")))?;
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| crate::Error::Internal(format!("argon2: {e}")))
    })
    .await
    .map_err(|e| crate::Error::Internal(format!("argon2 task: {e}")))?
}

/// Whether `password` matches the stored hash; an unknown user is checked against a dummy
/// hash, so the answer takes as long either way (no user enumeration by timing).
async fn verify_password(password: String, stored: Option<String>) -> bool {
    static DUMMY: OnceLock<String> = OnceLock::new();
    tokio::task::spawn_blocking(move || {
        let dummy = DUMMY.get_or_init(|| {
            let salt = SaltString::encode_b64(&[7u8; 16]).expect("a fixed salt encodes");
            Argon2::default()
                .hash_password(b"not anyone's password", &salt)
                .map(|h| h.to_string())
                .unwrap_or_default()
        });
        let text = stored.as_deref().unwrap_or(dummy);
        let ok = PasswordHash::new(text)
            .map(|h| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &h)
                    .is_ok()
            })
            .unwrap_or(false);
        ok && stored.is_some()
    })
    .await
    .unwrap_or(false)
}

impl App {
    /// A failure from `source` (a wrong password, an unknown link or session): counted against
    /// its USR-4 budget; the refusal to answer.
    fn refuse(&self, source: IpAddr) -> AuthRefusal {
        match self
            .auth_throttle
            .refused_for(source)
            .or_else(|| self.auth_throttle.failed(source))
        {
            Some(wait) => AuthRefusal::Throttled(wait),
            None => AuthRefusal::Unknown,
        }
    }

    /// USR-5, `POST /v1/users/{id}/password-link` (admins): a one-time link for the user to
    /// set a password (first sign-in, or a reset); the user's earlier links stop working.
    pub async fn create_password_link(
        &self,
        caller: &Caller,
        user_id: &str,
    ) -> Result<PasswordLink> {
        ensure_admin(caller)?;
        let token = secret();
        let hash = sha256(&token);
        let expires_at = stamp(self.clock.now() + LINK_TTL);
        write_tx!(self, |tx| {
            aiden_graph::sessions::create_link(
                &mut tx,
                user_id,
                &hash,
                &expires_at,
                caller.id.as_str(),
                &now(),
            )
            .await?
            .ok_or(aiden_domain::Error::NotFound)?;
            Ok(())
        })?;
        Ok(PasswordLink {
            user_id: user_id.to_owned(),
            path: format!("/#/password?token={token}"),
            token,
            expires_at,
        })
    }

    /// USR-5, `POST /v1/password`: a live link sets its user's password, once; the user's
    /// sessions are revoked (USR-6). An unknown, spent or expired link is a 401 (throttled).
    pub async fn reset_password(
        &self,
        source: IpAddr,
        req: PasswordReset,
    ) -> std::result::Result<(), AuthRefusal> {
        if let Some(wait) = self.auth_throttle.refused_for(source) {
            return Err(AuthRefusal::Throttled(wait));
        }
        check_password(&req.password).map_err(|e| AuthRefusal::Failed(e.into()))?;
        let password_hash = hash_password(req.password)
            .await
            .map_err(AuthRefusal::Failed)?;
        let hash = sha256(&req.token);
        let now = stamp(self.clock.now());
        let used: Result<_> = async {
            write_tx!(self, |tx| {
                Ok(aiden_graph::sessions::use_link(&mut tx, &hash, &password_hash, &now).await?)
            })
        }
        .await;
        let used = used.map_err(AuthRefusal::Failed)?;
        match used {
            Some(user) => {
                self.auth_cache.forget_user(&user.id);
                Ok(())
            }
            None => Err(self.refuse(source)),
        }
    }

    /// USR-5, `PUT /v1/users/{id}/password`: a user sets their own password (an admin resets
    /// another's with a link); the user's other sessions are revoked.
    pub async fn set_own_password(
        &self,
        caller: &Caller,
        user_id: &str,
        req: NewPassword,
        keep_session: Option<&str>,
    ) -> Result<()> {
        if caller.id.as_str() != user_id {
            // Another user's password: an admin sends a link; to anyone else the user is not there.
            aiden_domain::user::check_token_manager(caller, user_id)?;
            return Err(aiden_domain::Error::Forbidden(
                "USR-5: only the user sets their own password; an admin sends a password link"
                    .into(),
            )
            .into());
        }
        check_password(&req.password)?;
        let password_hash = hash_password(req.password).await?;
        let keep = keep_session.map(sha256);
        write_tx!(self, |tx| {
            aiden_graph::sessions::set_password(
                &mut tx,
                user_id,
                &password_hash,
                keep.as_deref(),
                &now(),
            )
            .await?
            .ok_or(aiden_domain::Error::NotFound)?;
            Ok(())
        })
    }

    /// USR-6, `POST /v1/sessions`: a name and a password; a session on success. A wrong
    /// password, an unknown name, a name two users share and a disabled user all answer the
    /// same 401, and count against the source's budget (USR-4).
    pub async fn sign_in(
        &self,
        source: IpAddr,
        req: SignIn,
    ) -> std::result::Result<Session, AuthRefusal> {
        if let Some(wait) = self.auth_throttle.refused_for(source) {
            return Err(AuthRefusal::Throttled(wait));
        }
        let facts: Result<_> = async {
            read_tx!(self, |tx| {
                Ok(aiden_graph::sessions::sign_in_facts(&mut tx, &req.name).await?)
            })
        }
        .await;
        let facts = facts.map_err(AuthRefusal::Failed)?;
        let one = (facts.len() == 1).then(|| facts[0].clone());
        let stored = one.as_ref().map(|f| f.password_hash.clone());
        if !verify_password(req.password, stored).await {
            return Err(self.refuse(source));
        }
        let user_id = one.map(|f| f.id).unwrap_or_default();
        let (id, csrf) = (secret(), secret());
        let hash = sha256(&id);
        let expires_at = stamp(self.clock.now() + SESSION_TTL);
        let source_text = source.to_string();
        let new = aiden_graph::sessions::NewSession {
            user_id: &user_id,
            hash: &hash,
            csrf: &csrf,
            expires_at: &expires_at,
            source: &source_text,
        };
        let made: Result<_> = async {
            write_tx!(self, |tx| {
                Ok(aiden_graph::sessions::create_session(&mut tx, &new, &now()).await?)
            })
        }
        .await;
        let made = made.map_err(AuthRefusal::Failed)?;
        if made.is_none() {
            return Err(self.refuse(source));
        }
        let user = self.user_row(&user_id).await.map_err(AuthRefusal::Failed)?;
        Ok(Session {
            id,
            view: SessionView {
                user_id,
                name: user.name,
                role: user.role,
                csrf_token: csrf,
                expires_at,
            },
        })
    }

    /// USR-6: the caller a session cookie stands for (live, unexpired, of an enabled user).
    /// One indexed read per request: sessions serve people, not programs.
    pub async fn authenticate_session(
        &self,
        source: IpAddr,
        session_id: &str,
    ) -> std::result::Result<SessionCaller, AuthRefusal> {
        let hash = sha256(session_id);
        let now = stamp(self.clock.now());
        let row: Result<_> = async {
            read_tx!(self, |tx| {
                Ok(aiden_graph::sessions::find_session(&mut tx, &hash, &now).await?)
            })
        }
        .await;
        let row = row.map_err(AuthRefusal::Failed)?;
        let Some(row) = row else {
            return Err(self.refuse(source));
        };
        let role = Role::parse(&row.user.role).ok_or(AuthRefusal::Unknown)?;
        Ok(SessionCaller {
            caller: Caller {
                quota: crate::auth::quota_of(&row.user),
                role,
                id: Id::from_stored(row.user.id),
            },
            name: row.user.name,
            csrf: row.csrf,
            expires_at: row.expires_at,
        })
    }

    /// USR-6, `DELETE /v1/sessions/current`: the session is revoked for good.
    pub async fn sign_out(&self, session_id: &str) -> Result<()> {
        let hash = sha256(session_id);
        write_tx!(self, |tx| {
            aiden_graph::sessions::revoke_session(&mut tx, &hash, &now()).await?;
            Ok(())
        })
    }

    async fn user_row(&self, id: &str) -> Result<crate::auth::User> {
        let caller = Caller {
            id: Id::from_stored(id.to_owned()),
            role: Role::User,
            quota: None,
        };
        self.me(&caller).await
    }
}
