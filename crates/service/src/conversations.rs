//! Conversations on the mutation path: create, read, list, PATCH (title, status, default
//! Process), fork and Summaries. Conversations are owner-only (OWN-2) and never deleted
//! (CONV-1); their Turns and Alternatives live in `turns.rs`.

use aiden_domain::conversation::{
    memory, rules, ConversationPatch, ForkRequest, NewConversation, NewSummary, Status,
    MAX_TITLE_CHARS,
};
use aiden_domain::execution::budget::estimate_text_tokens;
use aiden_domain::knowledge::Binding;
use aiden_domain::{access, ids::id_or_new, user::Caller, Error as Rule};
use aiden_graph::conversations::{self as conv, ConversationRow, SummaryRecord};
use aiden_graph::{resources, runs, Kind, Tx};
use serde_json::{json, Value};

use crate::{
    common::check_precondition,
    now,
    tx::{read_tx, write_tx},
    upkeep,
    views::{ConversationStatus, ConversationView, ForkedFrom},
    App, Page, PageRequest, Result,
};

/// The API's view of a stored Conversation.
pub(crate) fn conversation_view(c: &ConversationRow) -> ConversationView {
    ConversationView {
        id: c.id.clone(),
        title: c.title.clone(),
        status: match status_of(&c.status) {
            Status::Archived => ConversationStatus::Archived,
            Status::Active => ConversationStatus::Active,
        },
        owner_id: c.owner_id.clone(),
        default_process_id: c.default_process_id.clone(),
        forked_from: c.forked_from_id.as_ref().map(|f| ForkedFrom {
            conversation_id: f.clone(),
            origin_turn_id: c.origin_turn_id.clone(),
            origin_alternative_id: c.origin_alternative_id.clone(),
        }),
        current_turn_id: c.current_turn_id.clone(),
        current_alternative_id: c.current_alternative_id.clone(),
        turn_count: c.turn_count,
        revision: c.revision,
        created_at: c.created_at.clone(),
        updated_at: c.updated_at.clone(),
        compression_token_budget: c.compression_token_budget,
        compression_process_id: c.compression_process_id.clone(),
    }
}

/// OWN-2: a Conversation is its owner's alone; anyone else (admins included) gets 404.
pub(crate) fn ensure_own(caller: &Caller, owner_id: &str) -> Result<()> {
    if owner_id == caller.id.as_str() {
        Ok(())
    } else {
        Err(Rule::NotFound.into())
    }
}

pub(crate) fn status_of(s: &str) -> Status {
    if s == "archived" {
        Status::Archived
    } else {
        Status::Active
    }
}

fn check_title(title: Option<&str>) -> Result<()> {
    match title {
        Some(t) if t.chars().count() > MAX_TITLE_CHARS => Err(Rule::validation(
            "/title",
            format!("longer than {MAX_TITLE_CHARS} characters"),
        )
        .into()),
        _ => Ok(()),
    }
}

/// A Process the caller can see (OWN-2): `Some(enabled)`, or `None` when absent or invisible.
pub(crate) async fn visible_process(
    tx: &mut Tx,
    caller: &Caller,
    id: &str,
) -> Result<Option<bool>> {
    let doc: Option<Value> = resources::get(tx, Kind::Process, id).await?;
    Ok(doc.and_then(|d| {
        let flag = |k: &str| d.get(k).and_then(Value::as_bool).unwrap_or(false);
        let owned = access::Owned {
            owner_id: d.get("ownerId").and_then(Value::as_str).unwrap_or_default(),
            shared: flag("shared"),
            sharing: access::Sharing::Shareable,
        };
        access::can_read(caller, &owned).then(|| flag("enabled"))
    }))
}

/// CONV-2: a default Process must be visible to the owner and enabled.
pub(crate) async fn check_default_process(tx: &mut Tx, caller: &Caller, id: &str) -> Result<()> {
    if visible_process(tx, caller, id).await? == Some(true) {
        Ok(())
    } else {
        Err(Rule::invariant(
            "CONV-2",
            "/defaultProcessId",
            format!("`{id}` is not an enabled Process you can use"),
        )
        .into())
    }
}

/// The stored Conversation, if the caller owns it.
pub(crate) async fn own_conversation(
    tx: &mut Tx,
    caller: &Caller,
    id: &str,
) -> Result<ConversationRow> {
    let row = conv::get(tx, id).await?.ok_or(Rule::NotFound)?;
    ensure_own(caller, &row.owner_id)?;
    Ok(row)
}

impl App {
    pub async fn create_conversation(
        &self,
        caller: &Caller,
        b: NewConversation,
    ) -> Result<ConversationView> {
        check_title(b.title.as_deref())?;
        let id = id_or_new(b.id).as_str().to_owned();
        let row = write_tx!(self, |tx| {
            if conv::get(&mut tx, &id).await?.is_some() {
                return Err(Rule::conflict(format!(
                    "a Conversation with id '{id}' already exists"
                ))
                .into());
            }
            if let Some(p) = &b.default_process_id {
                check_default_process(&mut tx, caller, p).await?;
            }
            conv::create(
                &mut tx,
                &conv::NewConversation {
                    id: &id,
                    owner_id: caller.id.as_str(),
                    title: b.title.as_deref(),
                    default_process_id: b.default_process_id.as_deref(),
                    forked_from_id: None,
                    origin_turn_id: None,
                    origin_alternative_id: None,
                },
                &now(),
            )
            .await?;
            Ok(conv::get(&mut tx, &id).await?.ok_or(Rule::NotFound)?)
        })?;
        Ok(conversation_view(&row))
    }

    pub async fn get_conversation(&self, caller: &Caller, id: &str) -> Result<ConversationView> {
        let row = conv::get_autocommit(&self.graph, id)
            .await?
            .ok_or(Rule::NotFound)?;
        ensure_own(caller, &row.owner_id)?;
        Ok(conversation_view(&row))
    }

    pub async fn list_conversations(
        &self,
        caller: &Caller,
        page: PageRequest,
    ) -> Result<Page<ConversationView>> {
        let limit = page.limit()?;
        let after = page.cursor.clone().unwrap_or_default();
        let mut rows = read_tx!(self, |tx| {
            Ok(conv::list(
                &mut tx,
                caller.id.as_str(),
                page.include_archived,
                &after,
                limit + 1,
            )
            .await?)
        })?;
        let next_cursor = if rows.len() as i64 > limit {
            rows.truncate(limit as usize);
            rows.last().map(|r| r.id.clone())
        } else {
            None
        };
        Ok(Page {
            items: rows.iter().map(conversation_view).collect(),
            next_cursor,
        })
    }

    pub async fn patch_conversation(
        &self,
        caller: &Caller,
        id: &str,
        patch: ConversationPatch,
        expected: Option<i64>,
    ) -> Result<ConversationView> {
        if let Some(Some(t)) = &patch.title {
            check_title(Some(t))?;
        }
        let row = write_tx!(self, |tx| {
            let row = own_conversation(&mut tx, caller, id).await?;
            check_precondition(expected, row.revision)?;
            if let Some(Some(p)) = &patch.default_process_id {
                check_default_process(&mut tx, caller, p).await?;
            }
            let title = match &patch.title {
                Some(t) => t.clone(),
                None => row.title.clone(),
            };
            let status = patch.status.unwrap_or_else(|| status_of(&row.status));
            let now = now();
            if !conv::update(
                &mut tx,
                id,
                row.revision,
                title.as_deref(),
                status.as_str(),
                &now,
            )
            .await?
            {
                return Err(Rule::conflict("changed concurrently; re-read and retry").into());
            }
            if let Some(p) = &patch.default_process_id {
                conv::set_default_process(&mut tx, id, p.as_deref(), &now).await?;
            }
            if patch.compression_token_budget.is_some() || patch.compression_process_id.is_some() {
                let budget = match &patch.compression_token_budget {
                    Some(b) => b.as_ref().map(upkeep::check_budget).transpose()?,
                    None => row.compression_token_budget,
                };
                let process = match &patch.compression_process_id {
                    Some(Some(p)) => {
                        upkeep::check_process(&mut tx, caller, "/compressionProcessId", p, false)
                            .await?;
                        Some(p.clone())
                    }
                    Some(None) => None,
                    None => row.compression_process_id.clone(),
                };
                conv::set_upkeep(&mut tx, id, budget, process.as_deref()).await?;
            }
            Ok(conv::get(&mut tx, id).await?.ok_or(Rule::NotFound)?)
        })?;
        Ok(conversation_view(&row))
    }

    /// CONV-1: Conversations are permanent records; archive instead.
    pub async fn delete_conversation(&self, caller: &Caller, id: &str) -> Result<()> {
        let row = conv::get_autocommit(&self.graph, id)
            .await?
            .ok_or(Rule::NotFound)?;
        ensure_own(caller, &row.owner_id)?;
        Err(Rule::not_allowed(
            Some("CONV-1"),
            "conversations are never deleted; PATCH status to \"archived\" instead",
        )
        .into())
    }

    /// CONV-3: a new Conversation holding its own copy of the path root → `alternativeId`, with
    /// `FORKED_FROM {originTurn, originAlternative}`. Later changes on either side stay there.
    pub async fn fork_conversation(
        &self,
        caller: &Caller,
        id: &str,
        b: ForkRequest,
    ) -> Result<ConversationView> {
        check_title(b.title.as_deref())?;
        let new_id = uuid::Uuid::now_v7().to_string();
        let row = write_tx!(self, |tx| {
            let origin = own_conversation(&mut tx, caller, id).await?;
            let mut path = conv::fork_path_in(&mut tx, &b.alternative_id).await?;
            path.sort_by_key(|(p, _)| p.sequence);
            let point = path
                .last()
                .map(|(p, _)| p)
                .filter(|_| path.iter().all(|(p, _)| p.conversation_id == origin.id))
                .ok_or_else(|| {
                    Rule::invariant(
                        "CONV-3",
                        "/alternativeId",
                        format!(
                            "`{}` is not an alternative of this conversation",
                            b.alternative_id
                        ),
                    )
                })?;
            if point.turn_id != b.turn_id {
                return Err(Rule::invariant(
                    "TURN-2",
                    "/alternativeId",
                    format!(
                        "`{}` is not an alternative of turn `{}`",
                        b.alternative_id, b.turn_id
                    ),
                )
                .into());
            }
            if path
                .iter()
                .any(|(_, l)| l.state.as_deref() == Some("generating"))
            {
                return Err(Rule::conflict(
                    "the path is still generating; fork once its run has finished",
                )
                .into());
            }
            let title = b
                .title
                .clone()
                .or_else(|| origin.title.as_ref().map(|t| format!("Fork of {t}")));
            let now = now();
            conv::create(
                &mut tx,
                &conv::NewConversation {
                    id: &new_id,
                    owner_id: caller.id.as_str(),
                    title: title.as_deref(),
                    default_process_id: origin.default_process_id.as_deref(),
                    forked_from_id: Some(&origin.id),
                    origin_turn_id: Some(&b.turn_id),
                    origin_alternative_id: Some(&b.alternative_id),
                },
                &now,
            )
            .await?;
            let copies: Vec<(String, String)> = path
                .iter()
                .map(|_| {
                    (
                        uuid::Uuid::now_v7().to_string(),
                        uuid::Uuid::now_v7().to_string(),
                    )
                })
                .collect();
            let mut rows = Vec::with_capacity(path.len());
            let mut links = Vec::new();
            for (i, (p, l)) in path.iter().enumerate() {
                let (turn_id, alt_id) = &copies[i];
                let parent = i.checked_sub(1).map(|j| &copies[j]);
                rows.push(json!({
                    "turnId": turn_id, "alternativeId": alt_id, "originAlternativeId": p.alternative_id,
                    "speaker": p.speaker, "turnType": l.turn_type.clone().unwrap_or_else(|| "message".into()),
                    "sequence": i as i64 + 1, "content": p.content, "state": l.state.clone().unwrap_or_else(|| "valid".into()),
                    "error": l.error, "parentTurnId": parent.map(|x| &x.0), "parentAlternativeId": parent.map(|x| &x.1),
                }));
                if let Some((pt, pa)) = parent {
                    links.push(json!({"turnId": turn_id, "alternativeId": alt_id,
                                      "parentTurnId": pt, "parentAlternativeId": pa}));
                }
            }
            conv::fork_copy(&mut tx, &new_id, rows, links, &now).await?;
            let last = copies.last();
            conv::fork_origin(
                &mut tx,
                &conv::ForkOrigin {
                    id: &new_id,
                    origin_id: &origin.id,
                    origin_turn_id: &b.turn_id,
                    origin_alternative_id: &b.alternative_id,
                    turn_count: copies.len() as i64,
                    current_turn_id: last.map(|c| c.0.as_str()),
                    current_alternative_id: last.map(|c| c.1.as_str()),
                },
                &now,
            )
            .await?;
            Ok(conv::get(&mut tx, &new_id).await?.ok_or(Rule::NotFound)?)
        })?;
        self.content_committed();
        Ok(conversation_view(&row))
    }

    /// SUM-1 / WM-3: a Summary of Alternatives, Summaries or Episodes of this Conversation that
    /// stands in for the path up to `coversUpToTurnId`.
    pub async fn create_summary(
        &self,
        caller: &Caller,
        id: &str,
        b: NewSummary,
    ) -> Result<SummaryRecord> {
        rules::check_content(&b.content)?;
        if b.token_count.is_some_and(|t| t < 0) {
            return Err(Rule::validation("/tokenCount", "must not be negative").into());
        }
        let record = write_tx!(self, |tx| { summary_in_tx(&mut tx, caller, id, &b).await })?;
        self.content_committed();
        Ok(record)
    }

    pub async fn list_summaries(&self, caller: &Caller, id: &str) -> Result<Page<SummaryRecord>> {
        let row = conv::get_autocommit(&self.graph, id)
            .await?
            .ok_or(Rule::NotFound)?;
        ensure_own(caller, &row.owner_id)?;
        let items = conv::summaries(&self.graph, id).await?;
        Ok(Page {
            items,
            next_cursor: None,
        })
    }
}

/// SUM-1 / WM-3 checks and the write of a Summary, inside the caller's transaction (the API's
/// create and memory upkeep's compression settle both come here).
pub(crate) async fn summary_in_tx(
    tx: &mut Tx,
    caller: &Caller,
    id: &str,
    b: &NewSummary,
) -> Result<SummaryRecord> {
    let (facts, turn) = conv::facts_with_turn(tx, id, Some(&b.covers_up_to_turn_id))
        .await?
        .ok_or(Rule::NotFound)?;
    ensure_own(caller, &facts.owner_id)?;
    if turn.as_ref().is_none_or(|t| t.conversation_id != id) {
        return Err(Rule::invariant(
            "WM-3",
            "/coversUpToTurnId",
            format!(
                "`{}` is not a turn of this conversation",
                b.covers_up_to_turn_id
            ),
        )
        .into());
    }
    let found = conv::summary_sources(tx, &b.sources).await?;
    let mut levels = Vec::with_capacity(found.len());
    let (mut alternative_sources, mut summary_sources) = (Vec::new(), Vec::new());
    for (i, s) in found.iter().enumerate() {
        match s.kind.as_deref() {
            Some("Alternative") => alternative_sources.push(s.id.clone()),
            Some("Summary") => summary_sources.push(s.id.clone()),
            _ => {}
        }
        // OWN-2: another user's source answers exactly like an unknown id.
        let visible = s.owner_id.as_deref() == Some(caller.id.as_str());
        match (&s.kind, &s.conversation_id) {
            _ if !visible => {
                return Err(Rule::invariant(
                    "SUM-1",
                    format!("/sources/{i}"),
                    format!("`{}` is not an Alternative, Summary or Episode", s.id),
                )
                .into())
            }
            (Some(_), Some(c)) if c == id => levels.push(s.level),
            _ => {
                return Err(Rule::invariant(
                    "WM-3",
                    format!("/sources/{i}"),
                    format!("`{}` belongs to another conversation", s.id),
                )
                .into())
            }
        }
    }
    let compression_level = memory::compression_level(&levels)?;
    let created_by = summary_origin(tx, caller, b).await?;
    if let Some(p) = &created_by {
        if visible_process(tx, caller, p).await?.is_none() {
            return Err(Rule::invariant(
                "SUM-1",
                "/createdByProcessId",
                format!("`{p}` is not a Process you can use"),
            )
            .into());
        }
    }
    let record = SummaryRecord {
        id: uuid::Uuid::now_v7().to_string(),
        conversation_id: id.to_owned(),
        content: b.content.clone(),
        covers_up_to_turn_id: b.covers_up_to_turn_id.clone(),
        compression_level,
        token_count: b
            .token_count
            .unwrap_or_else(|| estimate_text_tokens(&b.content) as i64),
        sources: b.sources.clone(),
        created_by_process_id: created_by,
        run_id: b.run_id.clone(),
        created_at: now(),
        alternative_sources,
        summary_sources,
        episode_id: None,
        binding: Some(Binding::Pending.as_str().to_owned()),
        revision: Some(1),
    };
    conv::create_summary(tx, &record).await?;
    Ok(record)
}

/// GRAPH-2: a Summary may name the run that made it; the run must be one the caller can see
/// (OWN-2: another user's answers like an unknown id), and it decides `createdByProcessId`
/// (a different one named beside it is refused).
async fn summary_origin(tx: &mut Tx, caller: &Caller, b: &NewSummary) -> Result<Option<String>> {
    let Some(run_id) = &b.run_id else {
        return Ok(b.created_by_process_id.clone());
    };
    let head = runs::head_in(tx, run_id).await?;
    let Some(head) = head.filter(|h| h.owner_id == caller.id.as_str() || caller.is_admin()) else {
        return Err(Rule::invariant(
            "SUM-1",
            "/runId",
            format!("`{run_id}` is not a run you can see"),
        )
        .into());
    };
    match (&b.created_by_process_id, head.process_id) {
        (Some(named), Some(actual)) if *named != actual => Err(Rule::invariant(
            "SUM-1",
            "/createdByProcessId",
            format!("run `{run_id}` is a run of `{actual}`, not `{named}`"),
        )
        .into()),
        (named, actual) => Ok(actual.or_else(|| named.clone())),
    }
}
