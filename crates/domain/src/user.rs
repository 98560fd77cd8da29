//! Callers: who is asking, and with which role.

use serde::{Deserialize, Serialize};

use crate::Id;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    User,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::User => "user",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "admin" => Some(Role::Admin),
            "user" => Some(Role::User),
            _ => None,
        }
    }
}

/// The authenticated user a request acts for.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    pub id: Id,
    pub role: Role,
    /// The user's own quota (AGT-10, AGT-14), as an admin set it.
    pub quota: Option<crate::process::Quota>,
}

impl Caller {
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }
}

/// `PATCH /v1/users/{id}` (admin): what may change about a user.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserPatch {
    pub role: Option<Role>,
    /// A disabled user's tokens stop authenticating (USR-2).
    pub disabled: Option<bool>,
    /// Limits on what the user starts, over all Processes (AGT-10, AGT-14); `null` removes
    /// them. Only an admin sets them.
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub quota: Option<Option<crate::process::Quota>>,
}

impl UserPatch {
    /// Whether the change takes a user's admin rights or all rights away.
    fn locks_out(&self) -> bool {
        self.role == Some(Role::User) || self.disabled == Some(true)
    }
}

/// USR-1: only an admin changes a role or disables a user; nobody demotes or disables the
/// bootstrap admin (its token is the operator's, from `AIDEN_ADMIN_TOKEN`) or themselves, so an
/// instance always keeps a working admin.
pub fn check_user_patch(
    caller: &Caller,
    target: &str,
    patch: &UserPatch,
    bootstrap_admin: &str,
) -> Result<(), crate::Error> {
    crate::access::ensure_admin(caller)?;
    if let Some(Some(q)) = &patch.quota {
        q.check("/quota")?;
    }
    if patch.locks_out() && target == bootstrap_admin {
        return Err(crate::Error::invariant(
            "USR-1",
            "",
            "the bootstrap admin cannot be demoted or disabled (AIDEN_ADMIN_TOKEN stands for it)",
        ));
    }
    if patch.locks_out() && target == caller.id.as_str() {
        return Err(crate::Error::invariant(
            "USR-1",
            "",
            "an admin cannot demote or disable themselves",
        ));
    }
    Ok(())
}

/// USR-3: a user's tokens are managed by that user or an admin; to anyone else the user does
/// not exist (404, as for any invisible resource).
pub fn check_token_manager(caller: &Caller, user: &str) -> Result<(), crate::Error> {
    if caller.is_admin() || caller.id.as_str() == user {
        Ok(())
    } else {
        Err(crate::Error::NotFound)
    }
}

/// USR-5: a password is 10 to 256 characters (a passphrase fits; a PIN does not).
pub fn check_password(password: &str) -> Result<(), crate::Error> {
    let n = password.chars().count();
    if !(10..=256).contains(&n) || password.trim().is_empty() {
        return Err(crate::Error::invariant(
            "USR-5",
            "/password",
            "a password is 10 to 256 characters",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(id: &str, role: Role) -> Caller {
        Caller {
            id: Id::from_stored(id.to_owned()),
            role,
            quota: None,
        }
    }

    fn rule(r: Result<(), crate::Error>) -> Option<&'static str> {
        r.err()
            .and_then(|e| e.details().first().and_then(|v| v.invariant))
    }

    #[test]
    fn usr_1_admins_change_users_but_never_lock_out_the_bootstrap_admin_or_themselves() {
        let admin = caller("a1", Role::Admin);
        let demote = UserPatch {
            role: Some(Role::User),
            disabled: None,
            ..Default::default()
        };
        let disable = UserPatch {
            role: None,
            disabled: Some(true),
            ..Default::default()
        };
        let promote = UserPatch {
            role: Some(Role::Admin),
            disabled: Some(false),
            ..Default::default()
        };
        assert!(check_user_patch(&admin, "u1", &demote, "admin").is_ok());
        assert!(check_user_patch(&admin, "u1", &disable, "admin").is_ok());
        assert_eq!(
            rule(check_user_patch(&admin, "admin", &disable, "admin")),
            Some("USR-1")
        );
        assert_eq!(
            rule(check_user_patch(&admin, "a1", &demote, "admin")),
            Some("USR-1")
        );
        // Changes that take nothing away are fine, even on oneself.
        assert!(check_user_patch(&admin, "a1", &promote, "admin").is_ok());
        assert!(check_user_patch(&admin, "admin", &promote, "admin").is_ok());
        // A plain user changes nobody.
        let user = caller("u1", Role::User);
        assert!(matches!(
            check_user_patch(&user, "u1", &promote, "admin"),
            Err(crate::Error::Forbidden(_))
        ));
    }

    #[test]
    fn usr_3_tokens_are_managed_by_their_user_or_an_admin() {
        assert!(check_token_manager(&caller("u1", Role::User), "u1").is_ok());
        assert!(check_token_manager(&caller("a1", Role::Admin), "u1").is_ok());
        assert!(matches!(
            check_token_manager(&caller("u2", Role::User), "u1"),
            Err(crate::Error::NotFound)
        ));
    }

    #[test]
    fn usr_5_a_password_is_ten_to_256_characters() {
        assert_eq!(rule(check_password("short")), Some("USR-5"));
        assert_eq!(rule(check_password(&" ".repeat(12))), Some("USR-5"));
        assert_eq!(rule(check_password(&"x".repeat(257))), Some("USR-5"));
        assert_eq!(rule(check_password("correct horse battery")), None);
    }
}
