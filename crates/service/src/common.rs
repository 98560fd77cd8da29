//! Reads and checks every aggregate's service methods share.

use aiden_domain::{access::Sharing, user::Caller, Error as Rule};
use aiden_graph::{resources, Kind};

use crate::{tx::read_tx, App, Page, PageRequest, Result};

impl App {
    /// One record by id, or 404.
    pub(crate) async fn load<T: serde::de::DeserializeOwned>(
        &self,
        kind: Kind,
        id: &str,
    ) -> Result<T> {
        read_tx!(self, |tx| {
            Ok(resources::get::<T>(&mut tx, kind, id).await?)
        })?
        .ok_or_else(|| Rule::NotFound.into())
    }

    /// A page of what the caller may see, ordered by id; the cursor is the last id returned.
    pub(crate) async fn list<T: serde::de::DeserializeOwned>(
        &self,
        caller: &Caller,
        kind: Kind,
        sharing: Sharing,
        page: PageRequest,
        id_of: impl Fn(&T) -> String,
    ) -> Result<Page<T>> {
        let limit = page.limit()?;
        let filter = resources::ListFilter {
            caller_id: caller.id.as_str(),
            admin: caller.is_admin() && sharing == Sharing::Shareable,
            others_visible: sharing == Sharing::Shareable,
            include_archived: page.include_archived,
            after: page.cursor.as_deref().unwrap_or(""),
            limit: limit + 1,
        };
        let items: Vec<T> = read_tx!(self, |tx| {
            Ok(resources::list(&mut tx, kind, &filter).await?)
        })?;
        Ok(Page::from_one_more(items, limit, id_of))
    }
}

/// A caller-chosen id that is taken answers 409 (the unique constraint is the backstop).
pub(crate) async fn ensure_absent(tx: &mut aiden_graph::Tx, kind: Kind, id: &str) -> Result<()> {
    if resources::get::<serde_json::Value>(tx, kind, id)
        .await?
        .is_some()
    {
        return Err(
            Rule::conflict(format!("a {} with id '{id}' already exists", kind.label())).into(),
        );
    }
    Ok(())
}

/// `If-Match`: the client's expected revision must still be current (409 otherwise).
pub(crate) fn check_precondition(expected: Option<i64>, current: i64) -> Result<()> {
    match expected {
        Some(e) if e != current => Err(Rule::conflict(format!(
            "revision is {current}, not {e}: changed concurrently; re-read and retry"
        ))
        .into()),
        _ => Ok(()),
    }
}
