//! The introspection carousel's API (INT-1): read it and its archive, inject a note, correct
//! one (a new Episode; the old content and its Episode are kept).

use aiden_domain::conversation::rules::check_content;
use aiden_domain::conversation::upkeep::{check_position, next_position, Slot};
use aiden_domain::{user::Caller, Error as Rule};
use aiden_graph::upkeep::{self as store, IntrospectionRecord, NewNote};
use aiden_graph::Tx;
use serde::Deserialize;

use super::load_settings;
use crate::{now, tx::write_tx, App, Page, Result};

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewIntrospection {
    #[schemars(schema_with = "aiden_domain::wire::content")]
    pub content: String,
    /// The position to write (its note is archived); default: a free one, else the oldest's.
    #[schemars(range(min = 0))]
    pub carousel_position: Option<i64>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NoteCorrection {
    #[schemars(schema_with = "aiden_domain::wire::content")]
    pub content: String,
}

/// INT-1: writes a note for `owner_id` at `position` (or the next one), archiving the note
/// there; in the caller's transaction (the API's inject and the introspection settle).
pub(crate) async fn place(
    tx: &mut Tx,
    owner_id: &str,
    position: Option<i64>,
    content: &str,
    conversation_context: Option<&str>,
    run_id: Option<&str>,
) -> Result<IntrospectionRecord> {
    let (settings, _) = load_settings(tx).await?;
    let current = store::carousel(tx, owner_id).await?;
    let position = match position {
        Some(p) => check_position(p, settings.max_rotation)?,
        None => next_position(&slots(&current), settings.max_rotation),
    };
    let id = uuid::Uuid::now_v7().to_string();
    let note = NewNote {
        id: &id,
        owner_id,
        position,
        content,
        conversation_context,
        run_id,
    };
    if !store::place_note(tx, &note, &now()).await? {
        return Err(Rule::NotFound.into());
    }
    store::carousel(tx, owner_id)
        .await?
        .into_iter()
        .find(|n| n.id == id)
        .ok_or(crate::Error::LostRace)
}

pub(crate) fn slots(notes: &[IntrospectionRecord]) -> Vec<Slot> {
    notes
        .iter()
        .map(|n| Slot {
            carousel_position: n.carousel_position,
            created_at: n.created_at.clone(),
        })
        .collect()
}

impl App {
    /// `GET /v1/introspections`: the caller's carousel, by position.
    pub async fn carousel(&self, caller: &Caller) -> Result<Page<IntrospectionRecord>> {
        let items = store::carousel_autocommit(&self.graph, caller.id.as_str()).await?;
        Ok(page(items))
    }

    /// `GET /v1/introspections/archive`: replaced notes, newest first.
    pub async fn carousel_archive(&self, caller: &Caller) -> Result<Page<IntrospectionRecord>> {
        let items = store::archive(&self.graph, caller.id.as_str(), 500).await?;
        Ok(page(items))
    }

    /// `POST /v1/introspections`: inject a note (INT-1).
    pub async fn inject_introspection(
        &self,
        caller: &Caller,
        b: NewIntrospection,
    ) -> Result<IntrospectionRecord> {
        check_content(&b.content)?;
        let note = write_tx!(self, |tx| {
            place(
                &mut tx,
                caller.id.as_str(),
                b.carousel_position,
                &b.content,
                None,
                None,
            )
            .await
        })?;
        self.content_committed();
        Ok(note)
    }

    /// `PUT /v1/introspections/{id}/content`: a correction of a current note.
    pub async fn correct_introspection(
        &self,
        caller: &Caller,
        id: &str,
        b: NoteCorrection,
    ) -> Result<IntrospectionRecord> {
        check_content(&b.content)?;
        let owner = caller.id.as_str();
        let note = write_tx!(self, |tx| {
            let current = store::carousel(&mut tx, owner).await?;
            let note = current
                .into_iter()
                .find(|n| n.id == id)
                .ok_or(Rule::NotFound)?;
            if !store::correct_note(&mut tx, id, owner, note.revision, &b.content, &now()).await? {
                return Err(crate::Error::LostRace);
            }
            store::carousel(&mut tx, owner)
                .await?
                .into_iter()
                .find(|n| n.id == id)
                .ok_or(Rule::NotFound.into())
        })?;
        self.content_committed();
        Ok(note)
    }
}

impl App {
    /// `DELETE /v1/introspections/{id}`: the note leaves the carousel, archived (INT-1); to move
    /// a note, retire it and inject it at the new position.
    pub async fn retire_introspection(&self, caller: &Caller, id: &str) -> Result<()> {
        write_tx!(self, |tx| {
            if store::retire_note(&mut tx, id, caller.id.as_str(), &now()).await? {
                Ok(())
            } else {
                Err(Rule::NotFound.into())
            }
        })
    }
}

fn page(items: Vec<IntrospectionRecord>) -> Page<IntrospectionRecord> {
    Page {
        items,
        next_cursor: None,
    }
}
