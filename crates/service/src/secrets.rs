//! Secrets (SEC-1..5): encrypted on the way in, never returned, owner-only.

use aiden_domain::{
    access::{ensure_owner, Owned, Sharing},
    secret::{check_value, decide_create, decide_update, Secret, SecretType},
    user::Caller,
    Error as Rule, Id,
};
use aiden_graph::{references, resources, secrets, Kind};
use serde::Deserialize;
use zeroize::Zeroizing;

use crate::{common::ensure_absent, now, tx::write_tx, App, Page, PageRequest, Result};

/// Create body. `value` is wiped from memory when dropped and never printed.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewSecret {
    pub id: Option<Id>,
    #[schemars(schema_with = "aiden_domain::wire::name")]
    pub name: String,
    #[serde(rename = "type")]
    pub secret_type: SecretType,
    #[schemars(schema_with = "aiden_domain::wire::secret_value")]
    pub value: Zeroizing<String>,
    #[serde(default)]
    pub shared: bool,
    /// SEC-7: try the key on this model Service before keeping it.
    #[serde(default)]
    pub check_with: Option<crate::key_check::KeyCheck>,
}

#[derive(Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretPatch {
    #[serde(default)]
    #[schemars(schema_with = "aiden_domain::wire::name_or_null")]
    pub name: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "aiden_domain::wire::secret_value_or_null")]
    pub value: Option<Zeroizing<String>>,
}

impl std::fmt::Debug for NewSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewSecret")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("value", &"[REDACTED]")
            .field("check_with", &self.check_with)
            .finish()
    }
}

impl std::fmt::Debug for SecretPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretPatch")
            .field("name", &self.name)
            .field("value", &self.value.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

fn owned(s: &Secret) -> Owned<'_> {
    Owned {
        owner_id: s.owner_id.as_str(),
        shared: s.shared,
        sharing: Sharing::OwnerOnly,
    }
}

impl App {
    pub async fn create_secret(&self, caller: &Caller, input: NewSecret) -> Result<Secret> {
        check_value(&input.value)?;
        if let Some(check) = &input.check_with {
            // SEC-7: before anything is written; a refusal saves nothing.
            self.try_model_key(caller, check, &input.value).await?;
        }
        let s = decide_create(
            input.id.clone(),
            input.name.clone(),
            input.secret_type,
            input.shared,
            &caller.id,
            &now(),
        )?;
        let ciphertext = self.vault.encrypt(s.get().id.as_str(), &input.value)?;
        write_tx!(self, |tx| {
            ensure_absent(&mut tx, Kind::Secret, s.get().id.as_str()).await?;
            resources::create(
                &mut tx,
                Kind::Secret,
                s.get().id.as_str(),
                caller.id.as_str(),
                s.get(),
                &now(),
            )
            .await?;
            secrets::set_ciphertext(&mut tx, s.get().id.as_str(), &ciphertext).await?;
            Ok(())
        })?;
        Ok(s.into_inner())
    }

    pub async fn get_secret(&self, caller: &Caller, id: &str) -> Result<Secret> {
        let s: Secret = self.load(Kind::Secret, id).await?;
        // SEC-3: every other user, admins included, gets 404.
        ensure_owner(caller, &owned(&s)).map_err(|_| Rule::NotFound)?;
        Ok(s)
    }

    pub async fn list_secrets(&self, caller: &Caller, page: PageRequest) -> Result<Page<Secret>> {
        self.list(
            caller,
            Kind::Secret,
            Sharing::OwnerOnly,
            page,
            |s: &Secret| s.id.to_string(),
        )
        .await
    }

    /// SEC-4: rotation replaces the value and keeps the id.
    pub async fn update_secret(
        &self,
        caller: &Caller,
        id: &str,
        patch: SecretPatch,
    ) -> Result<Secret> {
        if let Some(v) = &patch.value {
            check_value(v)?;
        }
        let ciphertext = match &patch.value {
            Some(v) => Some(self.vault.encrypt(id, v)?),
            None => None,
        };
        let changed = write_tx!(self, |tx| {
            let current: Secret = resources::get_for_update(&mut tx, Kind::Secret, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(&current)).map_err(|_| Rule::NotFound)?;
            let next = decide_update(&current, patch.name.clone(), ciphertext.is_some(), &now())?;
            if next.get().revision != current.revision {
                if !resources::update(&mut tx, Kind::Secret, id, current.revision, next.get())
                    .await?
                {
                    return Err(crate::Error::LostRace);
                }
                if let Some(c) = &ciphertext {
                    secrets::set_ciphertext(&mut tx, id, c).await?;
                }
            }
            Ok(next.into_inner())
        })?;
        self.catalog_changed().await;
        Ok(changed)
    }

    /// SEC-5: only when no Tool uses it.
    pub async fn delete_secret(&self, caller: &Caller, id: &str) -> Result<()> {
        write_tx!(self, |tx| {
            let current: Secret = resources::get_for_update(&mut tx, Kind::Secret, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(&current)).map_err(|_| Rule::NotFound)?;
            let users = references::tools_using_secret(&mut tx, id).await?;
            if users > 0 {
                return Err(
                    Rule::referenced("SEC-5", format!("{users} Tool(s) use this Secret")).into(),
                );
            }
            resources::delete(&mut tx, Kind::Secret, id).await?;
            Ok(())
        })?;
        self.catalog_changed().await;
        Ok(())
    }
}
