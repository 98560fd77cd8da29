//! Conversations, Turns, Alternatives and Summaries. Writes are single statements that take the
//! Turn (or Conversation) first, so concurrent changes to one Turn serialize on every backend;
//! reads hand rows to the domain, which derives everything that is not stored (TURN-6, WM-*).

use aiden_domain::conversation::{
    memory::SummaryRow,
    rules::{AltFacts, TurnFacts},
    tree::{AltRow, TurnRow},
    AltState, Speaker,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::knowledge::for_ingestion;
use crate::{bolt, cypher, query_file, tx::IdRow, Error, Graph, Tx};

mod memory_reads;
pub use memory_reads::*;

/// A stored Conversation (properties, not a JSON document: it changes on every append).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationRow {
    pub id: String,
    pub owner_id: String,
    pub title: Option<String>,
    pub status: String,
    pub default_process_id: Option<String>,
    pub forked_from_id: Option<String>,
    pub origin_turn_id: Option<String>,
    pub origin_alternative_id: Option<String>,
    pub current_turn_id: Option<String>,
    pub current_alternative_id: Option<String>,
    pub turn_count: i64,
    pub revision: i64,
    pub created_at: String,
    pub updated_at: String,
    /// Memory upkeep overrides; null: the settings' value.
    #[serde(default)]
    pub compression_token_budget: Option<i64>,
    #[serde(default)]
    pub compression_process_id: Option<String>,
}

pub struct NewConversation<'a> {
    pub id: &'a str,
    pub owner_id: &'a str,
    pub title: Option<&'a str>,
    pub default_process_id: Option<&'a str>,
    pub forked_from_id: Option<&'a str>,
    pub origin_turn_id: Option<&'a str>,
    pub origin_alternative_id: Option<&'a str>,
}

pub async fn create(tx: &mut Tx, c: &NewConversation<'_>, now: &str) -> Result<(), Error> {
    let mut props = serde_json::Map::new();
    for (k, v) in [
        ("title", c.title),
        ("defaultProcessId", c.default_process_id),
        ("forkedFromId", c.forked_from_id),
        ("originTurnId", c.origin_turn_id),
        ("originAlternativeId", c.origin_alternative_id),
    ] {
        if let Some(v) = v {
            props.insert(k.into(), Value::String(v.into()));
        }
    }
    let q = cypher(query_file!("conversation/create.cypher"), None)
        .param("id", c.id)
        .param("ownerId", c.owner_id)
        .param("props", bolt(Value::Object(props))?)
        .param("defaultProcessId", c.default_process_id)
        .param("now", now);
    match tx.one::<IdRow>(q).await? {
        Some(_) => Ok(()),
        None => Err(Error::Query(format!("owner {} does not exist", c.owner_id))),
    }
}

pub async fn get(tx: &mut Tx, id: &str) -> Result<Option<ConversationRow>, Error> {
    tx.one(cypher(query_file!("conversation/get.cypher"), None).param("id", id))
        .await
}

pub async fn get_autocommit(graph: &Graph, id: &str) -> Result<Option<ConversationRow>, Error> {
    let q = cypher(query_file!("conversation/get.cypher"), None).param("id", id);
    Ok(graph.read_rows(q).await?.into_iter().next())
}

pub async fn list(
    tx: &mut Tx,
    caller_id: &str,
    include_archived: bool,
    after: &str,
    limit: i64,
) -> Result<Vec<ConversationRow>, Error> {
    let q = cypher(query_file!("conversation/list.cypher"), None)
        .param("callerId", caller_id)
        .param("includeArchived", include_archived)
        .param("after", after)
        .param("limit", limit);
    tx.rows(q).await
}

/// Title and status, if the revision is still `expected`; `false` when a concurrent PATCH won.
pub async fn update(
    tx: &mut Tx,
    id: &str,
    expected: i64,
    title: Option<&str>,
    status: &str,
    now: &str,
) -> Result<bool, Error> {
    let q = cypher(query_file!("conversation/update.cypher"), None)
        .param("id", id)
        .param("expectedRevision", expected)
        .param("title", title)
        .param("status", status)
        .param("now", now);
    Ok(tx.one::<IdRow>(q).await?.is_some())
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryAdminRow {
    pub id: String,
    pub conversation_id: String,
    pub content: String,
    pub revision: i64,
    pub summarized: bool,
}

pub async fn summary_admin(tx: &mut Tx, id: &str) -> Result<Option<SummaryAdminRow>, Error> {
    tx.one(cypher(query_file!("conversation/summary_admin.cypher"), None).param("id", id))
        .await
}

/// An admin repair; `false` when the revision moved meanwhile. With `content`, the content is
/// replaced (the old one kept) and re-ingested.
pub async fn correct_summary(
    tx: &mut Tx,
    id: &str,
    expected: i64,
    token_count: Option<i64>,
    content: Option<&str>,
    now: &str,
) -> Result<bool, Error> {
    let q = cypher(query_file!("conversation/correct_summary.cypher"), None)
        .param("id", id)
        .param("expectedRevision", expected)
        .param("tokenCount", token_count)
        .param("rebind", content.is_some())
        .param("content", content)
        .param("now", now);
    let matched = tx.one::<IdRow>(for_ingestion(q)).await?.is_some() || content.is_none();
    if matched && content.is_some() {
        let q = cypher(query_file!("conversation/summary_reingest.cypher"), None)
            .param("id", id)
            .param("now", now);
        tx.run(for_ingestion(q)).await?;
    }
    Ok(matched)
}

/// An admin delete; `false` when it is gone or another Summary summarizes it.
pub async fn delete_summary(tx: &mut Tx, id: &str, now: &str) -> Result<bool, Error> {
    let q = cypher(query_file!("conversation/delete_summary.cypher"), None)
        .param("id", id)
        .param("now", now);
    Ok(tx.one::<IdRow>(q).await?.is_some())
}

/// Memory upkeep's per-Conversation overrides (MEM-1, MEM-5), null to inherit.
pub async fn set_upkeep(
    tx: &mut Tx,
    id: &str,
    budget: Option<i64>,
    process_id: Option<&str>,
) -> Result<(), Error> {
    let q = cypher(query_file!("conversation/set_upkeep.cypher"), None)
        .param("id", id)
        .param("budget", budget)
        .param("processId", process_id);
    tx.run(q).await
}

pub async fn set_default_process(
    tx: &mut Tx,
    id: &str,
    process_id: Option<&str>,
    now: &str,
) -> Result<(), Error> {
    let q = cypher(query_file!("conversation/set_default_process.cypher"), None)
        .param("id", id)
        .param("processId", process_id)
        .param("now", now);
    tx.run(q).await
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AltFact {
    id: String,
    is_active: bool,
    state: String,
}

fn alt_facts(v: Vec<AltFact>) -> Vec<AltFacts> {
    v.into_iter()
        .map(|a| AltFacts {
            id: a.id,
            is_active: a.is_active,
            state: AltState::parse(&a.state),
        })
        .collect()
}

/// The Conversation's ownership and state.
#[derive(Debug, Clone)]
pub struct ConversationFacts {
    pub id: String,
    pub owner_id: String,
    pub status: String,
    pub turn_count: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FactsWithTurnRow {
    owner_id: String,
    status: String,
    turn_count: i64,
    turn_id: Option<String>,
    turn_conversation_id: Option<String>,
    speaker: Option<String>,
    sequence: Option<i64>,
    parent_turn_id: Option<String>,
    alternatives: Vec<AltFact>,
}

fn turn_facts(
    id: Option<String>,
    conversation_id: Option<String>,
    speaker: Option<String>,
    sequence: Option<i64>,
    parent_turn_id: Option<String>,
    alternatives: Vec<AltFact>,
) -> Option<TurnFacts> {
    Some(TurnFacts {
        id: id?,
        conversation_id: conversation_id?,
        speaker: Speaker::parse(&speaker?)?,
        sequence: sequence?,
        parent_turn_id,
        alternatives: alt_facts(alternatives),
    })
}

/// The Conversation and, when `turn_id` names one, that Turn (of whatever Conversation).
pub async fn facts_with_turn(
    tx: &mut Tx,
    conversation_id: &str,
    turn_id: Option<&str>,
) -> Result<Option<(ConversationFacts, Option<TurnFacts>)>, Error> {
    let q = cypher(query_file!("conversation/facts_with_turn.cypher"), None)
        .param("conversationId", conversation_id)
        .param("turnId", turn_id);
    Ok(tx.one::<FactsWithTurnRow>(q).await?.map(|r| {
        (
            ConversationFacts {
                id: conversation_id.to_owned(),
                owner_id: r.owner_id,
                status: r.status,
                turn_count: r.turn_count,
            },
            turn_facts(
                r.turn_id,
                r.turn_conversation_id,
                r.speaker,
                r.sequence,
                r.parent_turn_id,
                r.alternatives,
            ),
        )
    }))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FactsWithParentRow {
    owner_id: String,
    status: String,
    conversation_id: String,
    turn_id: String,
    speaker: String,
    sequence: i64,
    parent_turn_id: Option<String>,
    alternatives: Vec<AltFact>,
    parent_id: Option<String>,
    parent_conversation_id: Option<String>,
    parent_speaker: Option<String>,
    parent_sequence: Option<i64>,
    parent_parent_turn_id: Option<String>,
    parent_alternatives: Vec<AltFact>,
}

/// A Turn, its Conversation and its parent Turn.
pub struct TurnWithParent {
    pub conversation: ConversationFacts,
    pub turn: TurnFacts,
    pub parent: Option<TurnFacts>,
}

pub async fn facts_with_parent(
    tx: &mut Tx,
    turn_id: &str,
) -> Result<Option<TurnWithParent>, Error> {
    let q = cypher(query_file!("turn/facts_with_parent.cypher"), None).param("turnId", turn_id);
    let Some(r) = tx.one::<FactsWithParentRow>(q).await? else {
        return Ok(None);
    };
    let turn = turn_facts(
        Some(r.turn_id),
        Some(r.conversation_id.clone()),
        Some(r.speaker),
        Some(r.sequence),
        r.parent_turn_id,
        r.alternatives,
    )
    .ok_or_else(|| Error::Decode("turn with an unknown speaker".into()))?;
    Ok(Some(TurnWithParent {
        conversation: ConversationFacts {
            id: r.conversation_id,
            owner_id: r.owner_id,
            status: r.status,
            turn_count: 0,
        },
        turn,
        parent: turn_facts(
            r.parent_id,
            r.parent_conversation_id,
            r.parent_speaker,
            r.parent_sequence,
            r.parent_parent_turn_id,
            r.parent_alternatives,
        ),
    }))
}

/// A new Alternative's content and provenance.
#[derive(Debug, Clone, Default)]
pub struct NewAlternative {
    pub alternative_id: String,
    pub content: Option<String>,
    pub state: &'static str,
    pub run_id: Option<String>,
    pub parent_alternative_id: Option<String>,
    pub process_id: Option<String>,
    pub process_version: Option<i64>,
    pub process_version_id: Option<String>,
}

impl NewAlternative {
    fn bind(&self, q: neo4rs::Query) -> neo4rs::Query {
        for_ingestion(q)
            .param("alternativeId", self.alternative_id.as_str())
            .param("content", self.content.clone())
            .param("state", self.state)
            .param("runId", self.run_id.clone())
            .param("parentAlternativeId", self.parent_alternative_id.clone())
            .param("processId", self.process_id.clone())
            .param("processVersion", self.process_version)
            .param("processVersionId", self.process_version_id.clone())
    }
}

pub struct NewTurn<'a> {
    pub conversation_id: &'a str,
    pub turn_id: &'a str,
    pub speaker: &'a str,
    pub turn_type: &'a str,
    pub sequence: i64,
    pub parent_turn_id: Option<&'a str>,
    pub first: NewAlternative,
}

pub async fn create_turn(tx: &mut Tx, t: &NewTurn<'_>, now: &str) -> Result<(), Error> {
    let q = cypher(query_file!("turn/create.cypher"), None)
        .param("conversationId", t.conversation_id)
        .param("turnId", t.turn_id)
        .param("speaker", t.speaker)
        .param("turnType", t.turn_type)
        .param("sequence", t.sequence)
        .param("parentTurnId", t.parent_turn_id)
        .param("now", now);
    match tx.one::<IdRow>(t.first.bind(q)).await? {
        Some(_) => Ok(()),
        None => Err(Error::Query(
            "conversation vanished while adding a turn".into(),
        )),
    }
}

#[derive(Deserialize)]
struct SequenceRow {
    sequence: i64,
}

/// Returns the new Alternative's sequence within its Turn.
pub async fn add_alternative(
    tx: &mut Tx,
    turn_id: &str,
    alt: &NewAlternative,
    now: &str,
) -> Result<i64, Error> {
    let q = cypher(query_file!("turn/add_alternative.cypher"), None)
        .param("turnId", turn_id)
        .param("now", now);
    tx.one::<SequenceRow>(alt.bind(q))
        .await?
        .map(|r| r.sequence)
        .ok_or_else(|| Error::Query("turn vanished while adding an alternative".into()))
}

pub async fn switch_active(
    tx: &mut Tx,
    turn_id: &str,
    alternative_id: &str,
    now: &str,
) -> Result<(), Error> {
    let q = cypher(query_file!("turn/switch.cypher"), None)
        .param("turnId", turn_id)
        .param("alternativeId", alternative_id)
        .param("now", now);
    tx.run(q).await
}

/// One Alternative (the domain's row, flattened) with its Turn's columns, as `tree` and
/// `turn/view` return them.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AltWithTurn {
    #[serde(flatten)]
    pub alt: AltRow,
    pub conversation_id: String,
    pub speaker: String,
    pub turn_type: String,
    pub turn_sequence: i64,
    pub parent_turn_id: Option<String>,
    pub via_alternative: Option<String>,
    pub timestamp: String,
    #[serde(default)]
    pub has_children: bool,
    #[serde(default)]
    pub parent_active: Option<String>,
}

impl AltWithTurn {
    pub fn turn_row(&self) -> TurnRow {
        TurnRow {
            id: self.alt.turn_id.clone(),
            conversation_id: self.conversation_id.clone(),
            speaker: self.speaker.clone(),
            turn_type: self.turn_type.clone(),
            sequence: self.turn_sequence,
            parent_turn_id: self.parent_turn_id.clone(),
            via_alternative: self.via_alternative.clone(),
            timestamp: self.timestamp.clone(),
        }
    }

    pub fn alt_row(self) -> AltRow {
        self.alt
    }
}

/// Every Turn and Alternative of a Conversation, as of one commit (the Conversation's lock).
pub async fn tree(graph: &Graph, conversation_id: &str) -> Result<Vec<AltWithTurn>, Error> {
    let q = cypher(query_file!("conversation/tree.cypher"), None).param("id", conversation_id);
    graph.locked_read_rows(q).await
}

/// The Turns with sequence (depth) in `from..=to` and their Alternatives.
pub async fn tree_window(
    graph: &Graph,
    conversation_id: &str,
    from: i64,
    to: i64,
) -> Result<Vec<AltWithTurn>, Error> {
    let q = cypher(query_file!("conversation/tree_window.cypher"), None)
        .param("id", conversation_id)
        .param("from", from)
        .param("to", to);
    graph.locked_read_rows(q).await
}

/// FORK-1: the run that generated Alternative `alternative_id` of Turn `turn_id`, if one did.
pub async fn alternative_run(
    tx: &mut Tx,
    turn_id: &str,
    alternative_id: &str,
) -> Result<Option<String>, Error> {
    let q = cypher(query_file!("turn/alternative_run.cypher"), None)
        .param("turnId", turn_id)
        .param("alternativeId", alternative_id);
    Ok(tx.one::<IdRow>(q).await?.map(|r| r.id))
}

/// The Turn Alternative `alternative_id` belongs to, if it exists.
pub async fn turn_of_alternative(
    graph: &Graph,
    alternative_id: &str,
) -> Result<Option<String>, Error> {
    let q = cypher(query_file!("turn/of_alternative.cypher"), None)
        .param("alternativeId", alternative_id);
    let rows: Vec<IdRow> = graph.read_rows(q).await?;
    Ok(rows.into_iter().next().map(|r| r.id))
}

pub async fn turn_view(tx: &mut Tx, turn_id: &str) -> Result<Vec<AltWithTurn>, Error> {
    let q = cypher(query_file!("turn/view.cypher"), None).param("turnId", turn_id);
    tx.rows(q).await
}

/// [`turn_view`] as its own transaction.
pub async fn turn_view_autocommit(graph: &Graph, turn_id: &str) -> Result<Vec<AltWithTurn>, Error> {
    let q = cypher(query_file!("turn/view.cypher"), None).param("turnId", turn_id);
    graph.locked_read_rows(q).await
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveAlternative {
    pub id: String,
    pub conversation_id: String,
}

pub async fn active_alternative(
    graph: &Graph,
    turn_id: &str,
) -> Result<Option<ActiveAlternative>, Error> {
    let q = cypher(query_file!("turn/active_alternative.cypher"), None).param("turnId", turn_id);
    Ok(graph.read_rows(q).await?.into_iter().next())
}

/// A stored Summary, as the API shows it.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRecord {
    pub id: String,
    pub conversation_id: String,
    pub content: String,
    pub covers_up_to_turn_id: String,
    pub compression_level: i64,
    pub token_count: i64,
    pub sources: Vec<String>,
    pub created_by_process_id: Option<String>,
    /// The run that made it (GRAPH-2: `GENERATED_BY`).
    #[serde(default)]
    pub run_id: Option<String>,
    pub created_at: String,
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub alternative_sources: Vec<String>,
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub summary_sources: Vec<String>,
    /// Its Episode once bound (EPI-1), and the binding lifecycle (EPI-3).
    #[serde(default)]
    pub episode_id: Option<String>,
    #[serde(default)]
    pub binding: Option<String>,
    /// 1, plus one per admin correction of its content (a new Episode each time).
    #[serde(default)]
    pub revision: Option<i64>,
}

impl From<&SummaryRecord> for SummaryRow {
    fn from(s: &SummaryRecord) -> Self {
        SummaryRow {
            id: s.id.clone(),
            conversation_id: s.conversation_id.clone(),
            content: s.content.clone(),
            covers_up_to_turn_id: s.covers_up_to_turn_id.clone(),
            compression_level: s.compression_level,
            token_count: s.token_count,
            alternative_sources: s.alternative_sources.clone(),
            summary_sources: s.summary_sources.clone(),
        }
    }
}

pub async fn summaries(graph: &Graph, conversation_id: &str) -> Result<Vec<SummaryRecord>, Error> {
    let q = cypher(query_file!("conversation/summaries.cypher"), None).param("id", conversation_id);
    graph.read_rows(q).await
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceRow {
    pub id: String,
    pub kind: Option<String>,
    pub conversation_id: Option<String>,
    pub owner_id: Option<String>,
    pub level: i64,
}

pub async fn summary_sources(tx: &mut Tx, ids: &[String]) -> Result<Vec<SourceRow>, Error> {
    let q = cypher(query_file!("conversation/summary_sources.cypher"), None)
        .param("sources", ids.to_vec());
    tx.rows(q).await
}

pub async fn create_summary(tx: &mut Tx, s: &SummaryRecord) -> Result<(), Error> {
    let sources: Vec<Value> = s
        .sources
        .iter()
        .enumerate()
        .map(|(i, id)| serde_json::json!({"id": id, "order": i as i64 + 1}))
        .collect();
    let q = cypher(query_file!("conversation/create_summary.cypher"), None)
        .param("id", s.id.as_str())
        .param("conversationId", s.conversation_id.as_str())
        .param("content", s.content.as_str())
        .param("coversUpToTurnId", s.covers_up_to_turn_id.as_str())
        .param("compressionLevel", s.compression_level)
        .param("tokenCount", s.token_count)
        .param("sourceIds", s.sources.clone())
        .param("alternativeSources", s.alternative_sources.clone())
        .param("summarySources", s.summary_sources.clone())
        .param("sources", bolt(Value::Array(sources))?)
        .param("createdByProcessId", s.created_by_process_id.clone())
        .param("runId", s.run_id.clone())
        .param("now", s.created_at.as_str());
    match tx.one::<IdRow>(for_ingestion(q)).await? {
        Some(_) => Ok(()),
        None => Err(Error::Query("summary target vanished".into())),
    }
}

/// One copied Turn of a fork, root first: `{turnId, alternativeId, originAlternativeId,
/// speaker, turnType, sequence, content, state, error, parentTurnId, parentAlternativeId}`.
pub async fn fork_copy(
    tx: &mut Tx,
    conversation_id: &str,
    path: Vec<Value>,
    links: Vec<Value>,
    now: &str,
) -> Result<(), Error> {
    let q = cypher(query_file!("turn/fork_copy.cypher"), None)
        .param("conversationId", conversation_id)
        .param("path", bolt(Value::Array(path))?)
        .param("now", now);
    tx.run(for_ingestion(q)).await?;
    if !links.is_empty() {
        let q = cypher(query_file!("turn/fork_link.cypher"), None)
            .param("links", bolt(Value::Array(links))?);
        tx.run(q).await?;
    }
    Ok(())
}

pub struct ForkOrigin<'a> {
    pub id: &'a str,
    pub origin_id: &'a str,
    pub origin_turn_id: &'a str,
    pub origin_alternative_id: &'a str,
    pub turn_count: i64,
    pub current_turn_id: Option<&'a str>,
    pub current_alternative_id: Option<&'a str>,
}

pub async fn fork_origin(tx: &mut Tx, f: &ForkOrigin<'_>, now: &str) -> Result<(), Error> {
    let q = cypher(query_file!("turn/fork_origin.cypher"), None)
        .param("id", f.id)
        .param("originId", f.origin_id)
        .param("originTurnId", f.origin_turn_id)
        .param("originAlternativeId", f.origin_alternative_id)
        .param("turnCount", f.turn_count)
        .param("currentTurnId", f.current_turn_id)
        .param("currentAlternativeId", f.current_alternative_id)
        .param("now", now);
    tx.run(q).await
}

/// The ids of the Conversations `owner_id` owns.
pub async fn owned_ids(graph: &Graph, owner_id: &str) -> Result<Vec<String>, Error> {
    let q = cypher(query_file!("conversation/owned_ids.cypher"), None).param("callerId", owner_id);
    let rows: Vec<IdRow> = graph.read_rows(q).await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}
