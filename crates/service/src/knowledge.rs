//! Entities on the mutation path: user-created ones (ENT-1), a Conversation's
//! active entities (HAS_ACTIVE_ENTITY), and the `activeEntities` working memory shows.
//! Visibility (ENT-2, OWN-2): an Entity is visible to its creator and to the owners of the
//! conversations it was extracted in or is mentioned by; anything else answers 404.

use aiden_domain::conversation::memory::{IntrospectionRef, WorkingMemory};
use aiden_domain::execution::budget::estimate_text_tokens;
use aiden_domain::knowledge::entity::EntityReference;
use aiden_domain::knowledge::entity::{self, ActiveEntityFlags, NewEntity};
use aiden_domain::{user::Caller, Error as Rule};
use aiden_graph::conversations as conv;
use aiden_graph::knowledge::{self as kg, EntityRow};
use aiden_graph::upkeep::IntrospectionRecord;
use serde_json::Value;

use crate::conversations::ensure_own;
use crate::views::{
    ActiveEntities, EntitySource, EntityStatus, EntityView, Items, ProposalDecision, Rejected,
    RejectedStatus,
};
use crate::{now, tx::read_tx, tx::write_tx, App, Page, Result};

fn visible_to(row: &EntityRow, caller: &Caller) -> bool {
    row.created_by.as_deref() == Some(caller.id.as_str())
        || row.owners.iter().any(|o| o == caller.id.as_str())
}

/// The Entity as the API shows it: `sources` is its provenance: the
/// user who created it, and one `graphiti` entry per Episode that mentions it.
pub fn entity_view(row: &EntityRow) -> EntityView {
    let mut sources = Vec::new();
    if row.source.as_deref() == Some("suggestion") {
        sources.push(EntitySource::Suggestion {
            created_at: row.created_at.clone(),
            created_by: row.created_by.clone(),
            run_id: row.run_id.clone(),
        });
    }
    if row.source.as_deref() == Some("user") {
        sources.push(EntitySource::User {
            created_at: row.created_at.clone(),
            created_by: row.created_by.clone(),
        });
    }
    for m in &row.mentions {
        sources.push(EntitySource::Graphiti {
            created_at: m.created_at.clone(),
            episode_id: m.episode_id.clone(),
        });
    }
    let facets = row
        .facets
        .as_deref()
        .and_then(|f| serde_json::from_str::<serde_json::Map<String, Value>>(f).ok())
        .unwrap_or_default();
    let category = row.category.clone().or_else(|| {
        row.labels
            .as_ref()
            .and_then(|l| l.iter().find(|x| x.as_str() != "Entity").cloned())
    });
    EntityView {
        uuid: row.uuid.clone(),
        name: row.name.clone(),
        summary: row.summary.clone(),
        category,
        facets,
        sources,
        created_at: row.created_at.clone(),
        status: match row.status.as_deref() {
            Some("proposed") => EntityStatus::Proposed,
            _ => EntityStatus::Confirmed,
        },
    }
}

impl App {
    /// `POST /v1/entities` (ENT-1).
    pub async fn create_entity(&self, caller: &Caller, b: NewEntity) -> Result<EntityView> {
        entity::check_new_entity(&b)?;
        let uuid = uuid::Uuid::now_v7().to_string();
        let facets = b
            .facets
            .as_ref()
            .map(|f| serde_json::to_string(f).unwrap_or_default());
        let row = write_tx!(self, |tx| {
            let record = kg::NewEntityRecord {
                uuid: &uuid,
                name: b.name.trim(),
                summary: b.summary.trim(),
                category: b.category.as_deref(),
                facets: facets.clone(),
                created_by: caller.id.as_str(),
            };
            kg::create_entity(&mut tx, &record, &now()).await?;
            Ok(kg::get_entity(&mut tx, &uuid)
                .await?
                .ok_or(Rule::NotFound)?)
        })?;
        if self.merge_into(&uuid).await {
            return self.get_entity(caller, &uuid).await;
        }
        Ok(entity_view(&row))
    }

    /// ENT-5, after a user's Entity was created or confirmed: the Entities Graphiti extracted of
    /// the same thing in the owner's conversations merge into it. Best-effort: the Entity is
    /// theirs either way, and the next extraction that mentions the same thing merges again.
    /// Whether anything merged.
    async fn merge_into(&self, uuid: &str) -> bool {
        let Some(embedder) = &self.recall.embedder else {
            return false;
        };
        match crate::merges::after_user_entity(&self.graph, embedder, uuid).await {
            Ok(merged) => !merged.is_empty(),
            Err(e) => {
                tracing::warn!(entity = %uuid, error = %e, "entities not merged (ENT-5)");
                false
            }
        }
    }

    /// ENT-5: the Entity a merged uuid names now (its tombstone's `mergedInto`), when the caller
    /// may see it; `None` for any other uuid. Only an extracted Entity merges, into a user's, so
    /// the survivor is no tombstone itself. The API answers such a uuid with a redirect.
    pub async fn survivor_of(&self, caller: &Caller, uuid: &str) -> Result<Option<String>> {
        let Some(into) = kg::merged_into(&self.graph, uuid).await? else {
            return Ok(None);
        };
        let visible = kg::get_entity_autocommit(&self.graph, &into)
            .await?
            .is_some_and(|r| visible_to(&r, caller));
        Ok(visible.then_some(into))
    }

    /// `GET /v1/entities/{uuid}`.
    pub async fn get_entity(&self, caller: &Caller, uuid: &str) -> Result<EntityView> {
        let row = kg::get_entity_autocommit(&self.graph, uuid)
            .await?
            .filter(|r| visible_to(r, caller))
            .ok_or(Rule::NotFound)?;
        Ok(entity_view(&row))
    }

    /// `GET /v1/entities?conversationId=&q=`: the caller's own and those of their conversations
    /// (of the one named, when named).
    pub async fn list_entities(
        &self,
        caller: &Caller,
        conversation_id: Option<&str>,
        q: Option<&str>,
    ) -> Result<Page<EntityView>> {
        let conversations = match conversation_id {
            Some(id) => {
                let c = conv::get_autocommit(&self.graph, id)
                    .await?
                    .ok_or(Rule::NotFound)?;
                ensure_own(caller, &c.owner_id)?;
                vec![id.to_owned()]
            }
            None => conv::owned_ids(&self.graph, caller.id.as_str()).await?,
        };
        let q = q.map(str::trim).filter(|s| !s.is_empty());
        let uuids = kg::list_entities(&self.graph, caller.id.as_str(), conversations, q).await?;
        let mut items = Vec::with_capacity(uuids.len());
        for u in uuids.iter().take(200) {
            if let Some(row) = kg::get_entity_autocommit(&self.graph, u).await? {
                if conversation_id.is_some() || visible_to(&row, caller) {
                    items.push(entity_view(&row));
                }
            }
        }
        Ok(Page {
            items,
            next_cursor: None,
        })
    }

    /// AGT-13: `POST /v1/entities/{uuid}/confirm` (it becomes the caller's like one they
    /// created) or `/reject` (it is removed). Only the owner's proposals (404 otherwise, 409
    /// once decided).
    pub async fn decide_proposal(
        &self,
        caller: &Caller,
        uuid: &str,
        confirm: bool,
    ) -> Result<ProposalDecision> {
        let row = kg::get_entity_autocommit(&self.graph, uuid)
            .await?
            .filter(|r| r.created_by.as_deref() == Some(caller.id.as_str()))
            .ok_or(Rule::NotFound)?;
        let decided = write_tx!(self, |tx| {
            Ok(kg::decide_proposal(&mut tx, uuid, caller.id.as_str(), confirm, &now()).await?)
        })?;
        if !decided {
            return Err(Rule::referenced(
                "AGT-13",
                format!(
                    "entity {uuid} is not a proposal (it is {})",
                    row.status.as_deref().unwrap_or("confirmed")
                ),
            )
            .into());
        }
        if confirm {
            self.merge_into(uuid).await;
            Ok(ProposalDecision::Confirmed(
                self.get_entity(caller, uuid).await?,
            ))
        } else {
            Ok(ProposalDecision::Rejected(Rejected {
                uuid: uuid.to_owned(),
                status: RejectedStatus::Rejected,
            }))
        }
    }

    /// `PUT /v1/conversations/{id}/entities/{uuid}`: adds (or re-flags) an active entity.
    pub async fn activate_entity(
        &self,
        caller: &Caller,
        id: &str,
        uuid: &str,
        flags: ActiveEntityFlags,
    ) -> Result<EntityReference> {
        let (s, f, r) = flags.resolved();
        write_tx!(self, |tx| {
            let c = conv::get(&mut tx, id).await?.ok_or(Rule::NotFound)?;
            ensure_own(caller, &c.owner_id)?;
            let entity = kg::get_entity(&mut tx, uuid)
                .await?
                .filter(|row| visible_to(row, caller))
                .ok_or(Rule::NotFound)?;
            if entity.status.as_deref() == Some("proposed") {
                return Err(Rule::referenced(
                    "AGT-13",
                    format!("entity {uuid} is a proposal: confirm it before it becomes memory"),
                )
                .into());
            }
            let a = kg::Activation {
                conversation_id: id,
                uuid,
                caller: caller.id.as_str(),
                include_summary: s,
                include_facets: f,
                include_relationships: r,
            };
            if !kg::activate_entity(&mut tx, &a, &now()).await? {
                return Err(Rule::NotFound.into());
            }
            Ok(())
        })?;
        self.conversation_entity(caller, id, uuid).await
    }

    async fn conversation_entity(
        &self,
        caller: &Caller,
        id: &str,
        uuid: &str,
    ) -> Result<EntityReference> {
        let list = self.conversation_entities(caller, id).await?;
        list.items
            .into_iter()
            .find(|i| i.entity_uuid == uuid)
            .ok_or_else(|| Rule::NotFound.into())
    }

    /// `DELETE /v1/conversations/{id}/entities/{uuid}`.
    pub async fn deactivate_entity(&self, caller: &Caller, id: &str, uuid: &str) -> Result<()> {
        write_tx!(self, |tx| {
            let c = conv::get(&mut tx, id).await?.ok_or(Rule::NotFound)?;
            ensure_own(caller, &c.owner_id)?;
            if !kg::deactivate_entity(&mut tx, id, uuid).await? {
                return Err(Rule::NotFound.into());
            }
            Ok(())
        })
    }

    /// `GET /v1/conversations/{id}/entities`: the chosen entities as EntityReferences.
    pub async fn conversation_entities(&self, caller: &Caller, id: &str) -> Result<ActiveEntities> {
        let c = read_tx!(self, |tx| {
            Ok(conv::get(&mut tx, id).await?.ok_or(Rule::NotFound)?)
        })?;
        ensure_own(caller, &c.owner_id)?;
        let chosen = kg::active_entities(&self.graph, id).await?;
        let items = entity::active_entities(chosen, Vec::new(), 0);
        Ok(Items { items })
    }

    /// WM-2: working memory with its active entities (chosen ones, then those mentioned by the
    /// extracted Episodes of the path) and the owner's introspection carousel, their tokens in
    /// the total.
    pub(crate) async fn with_entities(&self, wm: WorkingMemory) -> Result<WorkingMemory> {
        let positions = wm.extracted_positions();
        let (notes, mentioned) = tokio::join!(
            conv::memory_notes(&self.graph, &wm.conversation_id),
            kg::mentioned_entities(&self.graph, &positions)
        );
        let conv::MemoryNotes {
            chosen, carousel, ..
        } = notes?;
        Ok(apply_notes(wm, chosen, carousel, mentioned?))
    }

    /// [`App::with_entities`] with the conversation's chosen entities and carousel already
    /// read: only the entities the path's extracted Episodes mention are left to read.
    pub(crate) async fn with_notes(
        &self,
        wm: WorkingMemory,
        chosen: Vec<entity::ChosenEntity>,
        carousel: Vec<IntrospectionRecord>,
    ) -> Result<WorkingMemory> {
        let mentioned = kg::mentioned_entities(&self.graph, &wm.extracted_positions()).await?;
        Ok(apply_notes(wm, chosen, carousel, mentioned))
    }
}

/// WM-2: the active entities (chosen, then `mentioned` along the path) and the carousel join
/// the view, their tokens the total.
fn apply_notes(
    wm: WorkingMemory,
    chosen: Vec<entity::ChosenEntity>,
    carousel: Vec<IntrospectionRecord>,
    mentioned: Vec<entity::MentionedEntity>,
) -> WorkingMemory {
    let refs = entity::active_entities(chosen, mentioned, wm.depth());
    let carousel = carousel
        .into_iter()
        .map(|n| IntrospectionRef {
            tokens: estimate_text_tokens(&n.content),
            id: n.id,
            carousel_position: n.carousel_position,
            content: n.content,
            episode_id: n.episode_id,
        })
        .collect();
    wm.with_entities(refs).with_introspections(carousel)
}
