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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub id: Id,
    pub role: Role,
}

impl Caller {
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }
}
