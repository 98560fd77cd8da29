//! Secrets: metadata only. The value lives encrypted in the graph and never in these types.

use serde::{Deserialize, Serialize};

use crate::{service::check_name, Checked, Error, Id};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SecretType {
    ApiKey,
    OauthToken,
    Password,
    Certificate,
}

impl SecretType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ApiKey => "api_key",
            Self::OauthToken => "oauth_token",
            Self::Password => "password",
            Self::Certificate => "certificate",
        }
    }
}

/// Largest secret value accepted (a certificate chain fits).
/// Longest Secret value (characters).
pub const MAX_VALUE_CHARS: usize = 64 * 1024;

/// A Secret's metadata as stored and shown (SEC-1: no value, no ciphertext).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Secret {
    pub id: Id,
    pub name: String,
    #[serde(rename = "type")]
    pub secret_type: SecretType,
    pub shared: bool,
    pub owner_id: Id,
    pub created_at: String,
    pub updated_at: String,
    pub rotated_at: Option<String>,
    pub revision: i64,
}

pub fn check_value(value: &str) -> Result<(), Error> {
    if value.is_empty() || value.chars().count() > MAX_VALUE_CHARS {
        return Err(Error::validation(
            "/value",
            format!("must be 1-{MAX_VALUE_CHARS} characters"),
        ));
    }
    Ok(())
}

pub fn decide_create(
    id: Option<Id>,
    name: String,
    secret_type: SecretType,
    shared: bool,
    owner: &Id,
    now: &str,
) -> Result<Checked<Secret>, Error> {
    check_name(&name)?;
    Ok(Checked::new(Secret {
        id: crate::ids::id_or_new(id),
        name,
        secret_type,
        shared,
        owner_id: owner.clone(),
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
        rotated_at: None,
        revision: 1,
    }))
}

/// SEC-4: rotation keeps the id; a rename keeps the value.
pub fn decide_update(
    current: &Secret,
    name: Option<String>,
    rotated: bool,
    now: &str,
) -> Result<Checked<Secret>, Error> {
    let mut next = current.clone();
    if let Some(name) = name {
        check_name(&name)?;
        next.name = name;
    }
    if rotated {
        next.rotated_at = Some(now.to_owned());
    }
    if next != *current {
        next.updated_at = now.to_owned();
        next.revision += 1;
    }
    Ok(Checked::new(next))
}
