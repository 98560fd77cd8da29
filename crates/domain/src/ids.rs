//! Resource ids: server-made UUIDv7s, or a caller's own id (letters, digits, `-`, `_`, `.`; ≤128).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Error;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Id(#[schemars(regex(pattern = r"^[A-Za-z0-9._-]{1,128}$"))] String);

impl Id {
    pub fn parse(raw: &str) -> Result<Self, Error> {
        let ok = !raw.is_empty()
            && raw.len() <= 128
            && raw
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            Err(Error::validation(
                "/id",
                "ids are 1-128 letters, digits, '-', '_' or '.'",
            ))
        }
    }

    pub fn generate() -> Self {
        Self(uuid::Uuid::now_v7().to_string())
    }

    /// Ids as stored: trusted, because only `parse` or `generate` ever wrote them.
    pub fn from_stored(raw: String) -> Self {
        Self(raw)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        Id::parse(&raw).map_err(serde::de::Error::custom)
    }
}

/// A caller-chosen id when given, else a fresh one.
pub fn id_or_new(given: Option<Id>) -> Id {
    given.unwrap_or_else(Id::generate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_accept_the_contract_alphabet_only() {
        assert!(Id::parse("tool-search_1.v2").is_ok());
        assert!(Id::parse("").is_err());
        assert!(Id::parse("a b").is_err());
        assert!(Id::parse(&"x".repeat(129)).is_err());
        assert!(Id::parse(&"x".repeat(128)).is_ok());
    }
}
