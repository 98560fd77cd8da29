//! Admin repair of Summaries (SUM-1; docs/memory.md): adjust `tokenCount`, correct the content (a
//! new Episode; the old content, Episode and HAS_CONTENT edge kept), delete (working memory
//! falls back to the uncompressed path; the upkeep loop may compress again).

use aiden_domain::access::ensure_admin;
use aiden_domain::conversation::{rules::check_content, SummaryPatch};
use aiden_domain::{user::Caller, Error as Rule};
use aiden_graph::conversations::{self as conv, SummaryRecord};

use crate::{now, tx::write_tx, App, Result};

impl App {
    /// `PATCH /v1/summaries/{id}` (admin).
    pub async fn patch_summary(
        &self,
        caller: &Caller,
        id: &str,
        patch: SummaryPatch,
    ) -> Result<SummaryRecord> {
        ensure_admin(caller)?;
        if let Some(c) = &patch.content {
            check_content(c)?;
        }
        let conversation = write_tx!(self, |tx| {
            let found = conv::summary_admin(&mut tx, id)
                .await?
                .ok_or(Rule::NotFound)?;
            let content = patch.content.as_deref().filter(|c| *c != found.content);
            if !conv::correct_summary(
                &mut tx,
                id,
                found.revision,
                patch.token_count,
                content,
                &now(),
            )
            .await?
            {
                return Err(crate::Error::LostRace);
            }
            Ok(found.conversation_id)
        })?;
        self.content_committed();
        conv::summaries(&self.graph, &conversation)
            .await?
            .into_iter()
            .find(|s| s.id == id)
            .ok_or_else(|| Rule::NotFound.into())
    }

    /// `DELETE /v1/summaries/{id}` (admin). Refused while another Summary summarizes it (SUM-1).
    pub async fn delete_summary(&self, caller: &Caller, id: &str) -> Result<()> {
        ensure_admin(caller)?;
        write_tx!(self, |tx| {
            let found = conv::summary_admin(&mut tx, id)
                .await?
                .ok_or(Rule::NotFound)?;
            if found.summarized {
                return Err(Rule::referenced(
                    "SUM-1",
                    "another Summary summarizes this one; delete that one first",
                )
                .into());
            }
            if !conv::delete_summary(&mut tx, id, &now()).await? {
                return Err(crate::Error::LostRace);
            }
            Ok(())
        })
    }
}
