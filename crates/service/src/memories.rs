//! Memories on the mutation path (SRCH-4): a user keeps one (`POST /v1/memories`; an agent
//! step's `memory: write` intent keeps them in the engine's pass), lists theirs and forgets one.
//! Nobody else sees, lists or forgets them, an admin included.

use aiden_domain::knowledge::memory::{check_new_memory, NewMemory};
use aiden_domain::{user::Caller, Error as Rule};
pub use aiden_graph::memory::MemoryRow;
use aiden_graph::memory::{self as store, NewMemoryRecord};

use crate::{now, tx::write_tx, App, Page, Result};

/// The most memories a listing returns.
const LIST_LIMIT: i64 = 500;

impl App {
    /// `POST /v1/memories` (SRCH-4).
    pub async fn remember(&self, caller: &Caller, b: NewMemory) -> Result<MemoryRow> {
        check_new_memory(&b)?;
        let record = NewMemoryRecord {
            id: uuid::Uuid::now_v7().to_string(),
            owner_id: caller.id.as_str().to_owned(),
            content: b.content.trim().to_owned(),
            run_id: None,
            alternative_id: None,
            at: now(),
        };
        write_tx!(self, |tx| {
            store::remember(&mut tx, std::slice::from_ref(&record)).await?;
            Ok(())
        })?;
        self.content_committed();
        Ok(MemoryRow {
            id: record.id,
            content: record.content,
            created_at: record.at,
            run_id: None,
            conversation_id: None,
            binding: Some("pending".into()),
            embedded: false,
        })
    }

    /// `GET /v1/memories`: the caller's, newest first.
    pub async fn memories(&self, caller: &Caller) -> Result<Page<MemoryRow>> {
        let items = store::list(&self.graph, caller.id.as_str(), LIST_LIMIT).await?;
        Ok(Page {
            items,
            next_cursor: None,
        })
    }

    /// `DELETE /v1/memories/{id}`: forgotten (archived, its content and embedding dropped), and
    /// with it what Graphiti kept of it: its Episode's text, and the facts and extracted
    /// Entities only that Episode supports.
    pub async fn forget(&self, caller: &Caller, id: &str) -> Result<()> {
        write_tx!(self, |tx| {
            let at = now();
            if !store::forget(&mut tx, id, caller.id.as_str(), &at).await? {
                return Err(Rule::NotFound.into());
            }
            store::forget_episode(&mut tx, id, &at).await?;
            Ok(())
        })
    }
}
