//! Working memory's reads: the path (and the one a fork copies), the conversation with the
//! message its search is for, and what it takes from its Conversation alone. Each is one
//! statement: a statement costs Neo4j about 1.7 ms of CPU whatever it reads, and a property
//! about a microsecond per Alternative of a path.

use aiden_domain::conversation::memory::PathRow;
use aiden_domain::knowledge::entity::ChosenEntity;
use serde::Deserialize;

use super::{ConversationRow, SummaryRecord};
use crate::knowledge::{chosen_entities, EntityInMemoryRow};
use crate::upkeep::IntrospectionRecord;
use crate::{cypher, query_file, Error, Graph, Tx};

/// WM-1: the Alternatives from `alternative_id` back to the root.
pub async fn path(graph: &Graph, alternative_id: &str) -> Result<Vec<PathRow>, Error> {
    let rows: Vec<PathRecord> = graph.read_rows(path_query(alternative_id)).await?;
    Ok(PathRecord::rows(rows))
}

pub async fn path_in(tx: &mut Tx, alternative_id: &str) -> Result<Vec<PathRow>, Error> {
    let rows: Vec<PathRecord> = tx.rows(path_query(alternative_id)).await?;
    Ok(PathRecord::rows(rows))
}

fn path_query(alternative_id: &str) -> neo4rs::Query {
    cypher(query_file!("conversation/path.cypher"), None).param("alternativeId", alternative_id)
}

/// What a fork copies of an Alternative besides its [`PathRow`].
#[derive(Debug, Clone)]
pub struct Lifecycle {
    pub state: Option<String>,
    pub turn_type: Option<String>,
    pub error: Option<String>,
}

/// CONV-3: the path a fork copies, each Alternative with its [`Lifecycle`].
pub async fn fork_path_in(
    tx: &mut Tx,
    alternative_id: &str,
) -> Result<Vec<(PathRow, Lifecycle)>, Error> {
    let q = cypher(query_file!("conversation/fork_path.cypher"), None)
        .param("alternativeId", alternative_id);
    let rows: Vec<ForkRecord> = tx.rows(q).await?;
    Ok(rows
        .into_iter()
        .flat_map(|r| r.path)
        .map(|(entry, (state, turn_type, error))| {
            let lifecycle = Lifecycle {
                state,
                turn_type,
                error,
            };
            (path_row(entry), lifecycle)
        })
        .collect())
}

/// One path entry as `conversation/path.cypher` lists it: id, Turn, Conversation, speaker,
/// content, Episode, binding, depth.
type PathEntry = (
    String,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
);

#[derive(Deserialize)]
struct PathRecord {
    path: Vec<PathEntry>,
}

impl PathRecord {
    fn rows(records: Vec<Self>) -> Vec<PathRow> {
        records
            .into_iter()
            .flat_map(|r| r.path)
            .map(path_row)
            .collect()
    }
}

/// `conversation/fork_path.cypher`'s record: each entry a [`PathEntry`] with its state, Turn
/// type and error.
#[derive(Deserialize)]
struct ForkRecord {
    path: Vec<(PathEntry, LifecycleEntry)>,
}

/// A fork path entry's state, Turn type and error.
type LifecycleEntry = (Option<String>, Option<String>, Option<String>);

fn path_row(
    (id, turn, conversation, speaker, content, episode, binding, depth): PathEntry,
) -> PathRow {
    PathRow {
        alternative_id: id,
        turn_id: turn,
        conversation_id: conversation,
        speaker,
        content,
        episode_id: episode,
        binding,
        sequence: depth,
    }
}

/// An Alternative's text, with the conversation it is in.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    pub content: Option<String>,
    pub conversation_id: String,
}

/// A Conversation with the message its working memory searches for.
#[derive(Debug, Deserialize)]
pub struct ConversationWithMessage {
    pub conversation: ConversationRow,
    pub message: Option<Message>,
}

/// The Conversation `id` with `alternative_id`'s message, else its current Alternative's.
pub async fn get_with_message(
    graph: &Graph,
    id: &str,
    alternative_id: Option<&str>,
) -> Result<Option<ConversationWithMessage>, Error> {
    let q = cypher(query_file!("conversation/get_with_message.cypher"), None)
        .param("id", id)
        .param("alternativeId", alternative_id);
    Ok(graph.read_rows(q).await?.into_iter().next())
}

/// What working memory takes from its Conversation alone: its Summaries, chosen entities and
/// its owner's introspection carousel (empty when the Conversation does not exist).
#[derive(Debug, Default)]
pub struct MemoryNotes {
    pub summaries: Vec<SummaryRecord>,
    pub chosen: Vec<ChosenEntity>,
    pub carousel: Vec<IntrospectionRecord>,
}

#[derive(Deserialize)]
struct MemoryNotesRow {
    summaries: Vec<SummaryRecord>,
    chosen: Vec<EntityInMemoryRow>,
    notes: Vec<IntrospectionRecord>,
}

/// [`MemoryNotes`] in one statement.
pub async fn memory_notes(graph: &Graph, conversation_id: &str) -> Result<MemoryNotes, Error> {
    let q = cypher(query_file!("conversation/memory_notes.cypher"), None)
        .param("conversationId", conversation_id);
    let row: Option<MemoryNotesRow> = graph.read_rows(q).await?.into_iter().next();
    Ok(row.map_or_else(MemoryNotes::default, |r| MemoryNotes {
        summaries: r.summaries,
        chosen: chosen_entities(r.chosen),
        carousel: r.notes,
    }))
}
