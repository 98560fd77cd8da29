//! Ownership and visibility (OWN-2, OWN-3), decided before anything else runs.

use crate::{user::Caller, Error};

/// How far `shared` reaches for a kind of resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Services, Tools, Templates, Processes: visible to others when `shared = true`.
    Shareable,
    /// Secrets and Conversations: owner-only even when `shared = true` (OWN-2, SEC-3).
    OwnerOnly,
}

/// Ownership facts of one stored resource.
#[derive(Debug, Clone)]
pub struct Owned<'a> {
    pub owner_id: &'a str,
    pub shared: bool,
    pub sharing: Sharing,
}

/// OWN-2: may the caller read it? Admins read everything except owner-only kinds, which stay
/// private to their owner (a Secret is never readable by anyone else, admins included).
pub fn can_read(caller: &Caller, owned: &Owned<'_>) -> bool {
    if owned.owner_id == caller.id.as_str() {
        return true;
    }
    match owned.sharing {
        Sharing::OwnerOnly => false,
        Sharing::Shareable => owned.shared || caller.is_admin(),
    }
}

/// OWN-2: invisible resources answer 404, never 403.
pub fn ensure_readable(caller: &Caller, owned: &Owned<'_>) -> Result<(), Error> {
    if can_read(caller, owned) {
        Ok(())
    } else {
        Err(Error::NotFound)
    }
}

/// OWN-3: visible but not owned is read-only (403); invisible stays 404.
pub fn ensure_owner(caller: &Caller, owned: &Owned<'_>) -> Result<(), Error> {
    ensure_readable(caller, owned)?;
    if owned.owner_id == caller.id.as_str() {
        Ok(())
    } else {
        Err(Error::Forbidden(
            "only the owner may change this resource (OWN-3)".into(),
        ))
    }
}

pub fn ensure_admin(caller: &Caller) -> Result<(), Error> {
    if caller.is_admin() {
        Ok(())
    } else {
        Err(Error::Forbidden("admin only".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{user::Role, Id};

    fn caller(id: &str, role: Role) -> Caller {
        Caller {
            id: Id::parse(id).unwrap(),
            role,
            quota: None,
        }
    }

    #[test]
    fn own_2_owner_only_kinds_ignore_shared_even_for_admins() {
        let secret = Owned {
            owner_id: "alice",
            shared: true,
            sharing: Sharing::OwnerOnly,
        };
        assert!(can_read(&caller("alice", Role::User), &secret));
        assert!(!can_read(&caller("bob", Role::User), &secret));
        assert!(!can_read(&caller("root", Role::Admin), &secret));
    }

    #[test]
    fn own_3_shared_is_read_only_for_others() {
        let tool = Owned {
            owner_id: "alice",
            shared: true,
            sharing: Sharing::Shareable,
        };
        assert!(matches!(
            ensure_owner(&caller("bob", Role::User), &tool),
            Err(Error::Forbidden(_))
        ));
        let private = Owned {
            shared: false,
            ..tool
        };
        assert!(matches!(
            ensure_owner(&caller("bob", Role::User), &private),
            Err(Error::NotFound)
        ));
    }
}
