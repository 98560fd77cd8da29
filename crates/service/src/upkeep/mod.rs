//! Memory upkeep: the settings API (MEM-1..5), the introspection carousel API
//! (INT-1) and, in `runner.rs`, the background loop that starts compression, introspection and
//! enrichment runs of seeded Processes and applies their results.

mod carousel;
pub mod runner;
mod summaries;

use aiden_domain::access::ensure_admin;
use aiden_domain::conversation::upkeep::{self as rules, MemorySettings, SettingsPatch};
use aiden_domain::{user::Caller, Error as Rule};
use aiden_graph::{upkeep as store, Tx};
use serde_json::Value;

use crate::{
    conversations::visible_process,
    now,
    tx::{read_tx, write_tx},
    App, Result,
};

pub use aiden_graph::upkeep::IntrospectionRecord;
pub use carousel::{NewIntrospection, NoteCorrection};

/// The stored settings over the defaults (a field never stored keeps its default).
pub(crate) async fn load_settings(tx: &mut Tx) -> Result<(MemorySettings, i64)> {
    Ok(match store::settings(tx).await? {
        Some(row) => (parse(row.doc.as_deref()), row.revision.unwrap_or(0)),
        None => (MemorySettings::default(), 0),
    })
}

fn parse(doc: Option<&str>) -> MemorySettings {
    doc.and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default()
}

/// MEM-1: a conversation's compression budget override.
pub(crate) fn check_budget(v: &Value) -> Result<i64> {
    let (min, max) = rules::BUDGET_RANGE;
    rules::bounded("MEM-1", "compressionTokenBudget", v, min, max)
        .map_err(|v| Rule::Invariant(vec![v]).into())
}

/// MEM-5: an upkeep Process must be enabled and usable by `caller`; for the global settings
/// (`shared_required`) also shared, since every user's upkeep runs it.
pub(crate) async fn check_process(
    tx: &mut Tx,
    caller: &Caller,
    path: &str,
    id: &str,
    shared_required: bool,
) -> Result<()> {
    let usable = visible_process(tx, caller, id).await? == Some(true);
    if usable && (!shared_required || process_shared(tx, id).await?) {
        return Ok(());
    }
    Err(Rule::invariant(
        "MEM-5",
        path,
        if shared_required {
            format!("`{id}` is not an enabled, shared Process")
        } else {
            format!("`{id}` is not an enabled Process you can use")
        },
    )
    .into())
}

async fn process_shared(tx: &mut Tx, id: &str) -> Result<bool> {
    let doc: Option<Value> =
        aiden_graph::resources::get(tx, aiden_graph::Kind::Process, id).await?;
    Ok(doc
        .and_then(|d| d.get("shared").and_then(Value::as_bool))
        .unwrap_or(false))
}

impl App {
    /// `GET /v1/settings` (admin).
    pub async fn memory_settings(&self, caller: &Caller) -> Result<MemorySettings> {
        ensure_admin(caller)?;
        read_tx!(self, |tx| { Ok(load_settings(&mut tx).await?.0) })
    }

    /// `PATCH /v1/settings` (admin): MEM-1..5, all violations at once; a smaller `maxRotation`
    /// archives the notes beyond it (INT-1) in the same transaction.
    pub async fn patch_memory_settings(
        &self,
        caller: &Caller,
        patch: SettingsPatch,
    ) -> Result<MemorySettings> {
        ensure_admin(caller)?;
        write_tx!(self, |tx| {
            let (current, revision) = load_settings(&mut tx).await?;
            let next = rules::patch_settings(&current, &patch)?;
            for (path, given) in [
                ("/compressionProcessId", &patch.compression_process_id),
                ("/introspectionProcessId", &patch.introspection_process_id),
                ("/enrichmentProcessId", &patch.enrichment_process_id),
            ] {
                if let Some(Some(id)) = given {
                    check_process(&mut tx, caller, path, id, true).await?;
                }
            }
            let doc = serde_json::to_string(&next).unwrap_or_default();
            let now = now();
            if !store::put_settings(
                &mut tx,
                &doc,
                next.max_rotation,
                revision,
                caller.id.as_str(),
                &now,
            )
            .await?
            {
                return Err(crate::Error::LostRace);
            }
            if next.max_rotation < current.max_rotation {
                store::shrink_carousels(&mut tx, next.max_rotation, &now).await?;
            }
            Ok(next)
        })
    }
}
