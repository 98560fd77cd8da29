//! The knowledge layer's statements: the outbox the relay drains, what the ingestion
//! worker reads and writes for a binding, and Entities (user-created, extracted by Graphiti into
//! this same graph, active in a Conversation, mentioned on a path). How our labels and properties
//! share the database with graphiti-core's: `docs/knowledge.md`.

use aiden_domain::knowledge::entity::{ChosenEntity, EntityFacts, MentionedEntity};
use aiden_domain::knowledge::{currency, Binding, OutboxState};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{bolt, cypher, query_file, tx::IdRow, Error, Graph, Tx};

/// What a binding is for: an Alternative's content (`message`) or a Summary's — the domain's
/// Episode source, under the name the graph calls it by.
pub use aiden_domain::knowledge::EpisodeSource as TargetKind;

/// The label a target's node has (from this closed enum only, never from input).
fn label(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Message => "Alternative",
        TargetKind::Summary => "Summary",
        TargetKind::Introspection => "Introspection",
        TargetKind::Memory => "Memory",
    }
}

/// The outbox item of a target: `<kind>:<id>`.
pub fn item_id(kind: TargetKind, id: &str) -> String {
    format!("{}:{id}", kind.as_str())
}

/// The words a statement that records content for ingestion writes (EPI-3): the content's
/// binding starts `$pending`, its outbox item `$new`.
pub(crate) fn for_ingestion(q: neo4rs::Query) -> neo4rs::Query {
    q.param("pending", Binding::Pending.as_str())
        .param("new", OutboxState::New.as_str())
}

/// An outbox row: content to ingest.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OutboxItem {
    pub id: String,
    pub kind: String,
    pub target_id: String,
    pub conversation_id: String,
    pub created_at: String,
}

pub async fn outbox_new(graph: &Graph, limit: i64) -> Result<Vec<OutboxItem>, Error> {
    let q = cypher(query_file!("knowledge/outbox_new.cypher"), None)
        .param("new", OutboxState::New.as_str())
        .param("limit", limit);
    graph.read_rows(q).await
}

pub async fn outbox_stale(
    graph: &Graph,
    published_before: &str,
    limit: i64,
) -> Result<Vec<OutboxItem>, Error> {
    let q = cypher(query_file!("knowledge/outbox_stale.cypher"), None)
        .param("published", OutboxState::Published.as_str())
        .param("before", published_before)
        .param("limit", limit);
    graph.read_rows(q).await
}

pub async fn outbox_mark_published(
    graph: &Graph,
    ids: Vec<String>,
    now: &str,
) -> Result<(), Error> {
    let mut tx = graph.begin().await?;
    let q = cypher(query_file!("knowledge/outbox_mark.cypher"), None)
        .param("published", OutboxState::Published.as_str())
        .param("ids", ids)
        .param("now", now);
    tx.run(q).await?;
    tx.commit().await
}

/// One Episode of the extraction context (an ancestor on the path, or a Summary's source).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ContextItem {
    pub id: String,
    /// `message`, `summary` or `episode` (a Summary source naming an Episode directly).
    pub kind: String,
    pub episode_id: Option<String>,
    pub binding: Option<String>,
}

/// What a binding needs of its Alternative or Summary.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    pub id: String,
    pub conversation_id: String,
    pub speaker: Option<String>,
    pub content: Option<String>,
    pub created_at: String,
    pub binding: Option<String>,
    pub episode_id: Option<String>,
    /// Root-most first.
    #[serde(default)]
    pub context: Vec<ContextItem>,
    /// An introspection note's content revision: a correction is a new Episode.
    #[serde(default)]
    pub revision: Option<i64>,
    /// Whether its content's embedding is written (recall).
    #[serde(default)]
    pub embedded: bool,
}

impl Target {
    /// The id an Episode's uuid and name derive from: the target's, plus `#n` for a corrected
    /// (revision n > 1) introspection note.
    pub fn episode_key(&self) -> String {
        match self.revision {
            Some(r) if r > 1 => format!("{}#{r}", self.id),
            _ => self.id.clone(),
        }
    }
}

pub async fn target(graph: &Graph, kind: TargetKind, id: &str) -> Result<Option<Target>, Error> {
    let text = match kind {
        TargetKind::Message => query_file!("knowledge/target_message.cypher"),
        TargetKind::Summary => query_file!("knowledge/target_summary.cypher"),
        TargetKind::Introspection => query_file!("knowledge/target_introspection.cypher"),
        TargetKind::Memory => query_file!("knowledge/target_memory.cypher"),
    };
    // `$bound`: a Summary's source that is an Episode itself (target_summary.cypher) is bound.
    let q = cypher(text, None)
        .param("id", id)
        .param("bound", Binding::Bound.as_str());
    Ok(graph.read_rows(q).await?.into_iter().next())
}

/// What to bind: the target and the uuid of the Episode the Graphiti service saved for it — a
/// node graphiti-core wrote into this graph (`Episodic`), which binding only points at.
pub struct Bind<'a> {
    pub kind: TargetKind,
    pub id: &'a str,
    pub uuid: &'a str,
}

/// EPI-2 / TURN-7: binds once. `Ok(false)` when the target already carries another episodeId
/// (or vanished): nothing was written. An error, and nothing written, when this graph holds no
/// `Episodic` node with that uuid: the Graphiti service saved it somewhere else.
pub async fn bind(graph: &Graph, b: &Bind<'_>, now: &str) -> Result<bool, Error> {
    #[derive(Deserialize)]
    struct Row {
        #[allow(dead_code)]
        id: String,
        found: bool,
    }
    let mut tx = graph.begin().await?;
    let q = cypher(query_file!("knowledge/bind.cypher"), Some(label(b.kind)))
        .param("id", b.id)
        .param("uuid", b.uuid)
        .param("edgeSource", b.kind.as_str())
        .param("pending", Binding::Pending.as_str())
        .param("bound", Binding::Bound.as_str())
        .param("now", now);
    let row = tx.one::<Row>(q).await?;
    if row.as_ref().is_some_and(|r| !r.found) {
        tx.rollback().await?;
        return Err(Error::Query(format!(
            "no Episodic node {} in this graph although the Graphiti service saved it: is the \
             service on another database than AIDEN_NEO4J_URI/AIDEN_NEO4J_DATABASE?",
            b.uuid
        )));
    }
    tx.commit().await?;
    Ok(row.is_some())
}

/// How many of a user's newest messages a message that says something changed is compared
/// with (SRCH-7): older ones stay current.
const SUPERSEDE_SCAN_CAP: i64 = 2_000;

/// Recall: writes the content's embedding and the model that made it; the node
/// becomes `Embedded` (the `recall_embedding` vector index). With `says_change` (a user's
/// message with a change cue, SRCH-7), then marks the older message of the same user it
/// supersedes, if one is similar enough: the id of that message. That mark is best-effort, in
/// a transaction of its own: its failure is logged and never undoes or retries the embedding.
pub async fn embed(
    graph: &Graph,
    kind: TargetKind,
    id: &str,
    revision: i64,
    vector: &[f32],
    model: &str,
    says_change: bool,
) -> Result<Option<String>, Error> {
    let mut tx = graph.begin().await?;
    let q = cypher(query_file!("knowledge/embed.cypher"), Some(label(kind)))
        .param("id", id)
        .param("revision", revision)
        .param(
            "embedding",
            vector.iter().map(|x| f64::from(*x)).collect::<Vec<f64>>(),
        )
        .param("model", model);
    tx.run(q).await?;
    tx.commit().await?;
    if !(says_change && kind == TargetKind::Message) {
        return Ok(None);
    }
    match supersede(graph, id).await {
        Ok(old) => Ok(old),
        Err(e) => {
            tracing::warn!(id, error = %e, "what the message supersedes not marked (SRCH-7)");
            Ok(None)
        }
    }
}

/// SRCH-7: the older message `id` supersedes, marked (`knowledge/supersede.cypher`).
async fn supersede(graph: &Graph, id: &str) -> Result<Option<String>, Error> {
    #[derive(Deserialize)]
    struct Row {
        id: String,
    }
    let mut tx = graph.begin().await?;
    let q = cypher(query_file!("knowledge/supersede.cypher"), None)
        .param("id", id)
        .param("minScore", currency::min_index_score())
        .param("scanCap", SUPERSEDE_SCAN_CAP)
        .param(
            "now",
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        );
    let old = tx.one::<Row>(q).await?.map(|r| r.id);
    tx.commit().await?;
    Ok(old)
}

/// Bound content whose current revision has no embedding (the backfill's work).
#[derive(Debug, Clone, Deserialize)]
pub struct Unembedded {
    pub kind: String,
    pub id: String,
    pub content: String,
    pub revision: i64,
}

pub async fn unembedded(graph: &Graph, limit: i64) -> Result<Vec<Unembedded>, Error> {
    let q = cypher(query_file!("knowledge/unembedded.cypher"), None)
        .param("withEpisode", Binding::words(Binding::is_bound))
        .param("limit", limit);
    graph.read_rows(q).await
}

/// An Entity Graphiti extracted (graphiti-core's own `Entity` node in this graph).
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ExtractedEntity {
    pub uuid: String,
    pub name: String,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub labels: Vec<String>,
}

/// A fact Graphiti extracted between two Entities (graphiti-core's own `RELATES_TO` edge).
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ExtractedEdge {
    pub uuid: String,
    pub source_node_uuid: String,
    pub target_node_uuid: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub fact: Option<String>,
}

/// The final binding state after extraction (`extracted` or `skipped`) and the outbox item
/// deleted, in one transaction. What was extracted is graphiti-core's own nodes and edges in this
/// graph, never copied: this only checks that every Entity the service answered with is
/// `MENTIONS`ed by the Episode and every fact is there (an error, nothing written, otherwise).
/// `Ok(false)` when the target is not bound to `uuid`.
#[allow(clippy::too_many_arguments)]
pub async fn record_extraction(
    graph: &Graph,
    kind: TargetKind,
    id: &str,
    uuid: &str,
    binding: &str,
    entities: &[ExtractedEntity],
    edges: &[ExtractedEdge],
    now: &str,
) -> Result<bool, Error> {
    let mut entity_uuids: Vec<String> = entities.iter().map(|e| e.uuid.clone()).collect();
    entity_uuids.sort();
    entity_uuids.dedup();
    let mut edge_uuids: Vec<String> = edges.iter().map(|r| r.uuid.clone()).collect();
    edge_uuids.sort();
    edge_uuids.dedup();
    let mut tx = graph.begin().await?;
    let q = cypher(query_file!("knowledge/extracted.cypher"), Some(label(kind)))
        .param("id", id)
        .param("itemId", item_id(kind, id))
        .param("uuid", uuid)
        .param("binding", binding)
        .param("entityUuids", entity_uuids.clone())
        .param("edgeUuids", edge_uuids.clone())
        .param("now", now);
    #[derive(Deserialize)]
    struct Found {
        entities: i64,
        edges: i64,
    }
    let Some(found) = tx.one::<Found>(q).await? else {
        tx.rollback().await?;
        return Ok(false);
    };
    if found.entities != entity_uuids.len() as i64 || found.edges != edge_uuids.len() as i64 {
        tx.rollback().await?;
        return Err(Error::Query(format!(
            "Graphiti answered {} entities and {} facts for Episode {uuid}, of which this graph \
             holds {} and {}: is the Graphiti service on another database?",
            entity_uuids.len(),
            edge_uuids.len(),
            found.entities,
            found.edges
        )));
    }
    tx.commit().await?;
    Ok(true)
}

pub async fn record_failure(
    graph: &Graph,
    kind: TargetKind,
    id: &str,
    reason: &str,
    now: &str,
) -> Result<(), Error> {
    let mut tx = graph.begin().await?;
    let q = cypher(query_file!("knowledge/failed.cypher"), Some(label(kind)))
        .param("id", id)
        .param("itemId", item_id(kind, id))
        .param("reason", reason)
        .param("failed", Binding::Failed.as_str())
        .param("now", now);
    tx.run(q).await?;
    tx.commit().await
}

pub async fn outbox_done(graph: &Graph, item_id: &str) -> Result<(), Error> {
    let mut tx = graph.begin().await?;
    let q = cypher(query_file!("knowledge/outbox_done.cypher"), None).param("id", item_id);
    tx.run(q).await?;
    tx.commit().await
}

// ---- Entities ----

pub struct NewEntityRecord<'a> {
    pub uuid: &'a str,
    pub name: &'a str,
    pub summary: &'a str,
    pub category: Option<&'a str>,
    /// JSON text of the facets object.
    pub facets: Option<String>,
    pub created_by: &'a str,
}

pub async fn create_entity(tx: &mut Tx, e: &NewEntityRecord<'_>, now: &str) -> Result<(), Error> {
    let q = cypher(query_file!("entity/create.cypher"), None)
        .param("uuid", e.uuid)
        .param("name", e.name)
        .param("summary", e.summary)
        .param("category", e.category)
        .param("facets", e.facets.clone())
        .param("createdBy", e.created_by)
        .param("now", now);
    match tx.one::<IdRow>(q).await? {
        Some(_) => Ok(()),
        None => Err(Error::Query("the creating user vanished".into())),
    }
}

/// One Episode that mentions an Entity.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mention {
    pub episode_id: String,
    pub created_at: Option<String>,
}

/// A stored Entity with its visibility facts.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntityRow {
    pub uuid: String,
    pub name: String,
    pub summary: Option<String>,
    pub category: Option<String>,
    pub facets: Option<String>,
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    pub source: Option<String>,
    pub created_by: Option<String>,
    pub created_at: Option<String>,
    pub group_id: Option<String>,
    /// `proposed` / `confirmed` for an agent's suggestion (AGT-13); none otherwise.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub mentions: Vec<Mention>,
    /// Owners of the conversations it was extracted in or is mentioned by.
    #[serde(default)]
    pub owners: Vec<String>,
}

pub async fn get_entity(tx: &mut Tx, uuid: &str) -> Result<Option<EntityRow>, Error> {
    let q = cypher(query_file!("entity/get.cypher"), None).param("uuid", uuid);
    tx.one(q).await
}

pub async fn get_entity_autocommit(graph: &Graph, uuid: &str) -> Result<Option<EntityRow>, Error> {
    let q = cypher(query_file!("entity/get.cypher"), None).param("uuid", uuid);
    Ok(graph.read_rows(q).await?.into_iter().next())
}

/// ENT-5: the uuid a merged Entity's tombstone names, if `uuid` is one.
pub async fn merged_into(graph: &Graph, uuid: &str) -> Result<Option<String>, Error> {
    #[derive(Deserialize)]
    struct Into {
        into: Option<String>,
    }
    let q = cypher(query_file!("entity/merged_into.cypher"), None).param("uuid", uuid);
    let rows: Vec<Into> = graph.read_rows(q).await?;
    Ok(rows.into_iter().next().and_then(|r| r.into))
}

#[derive(Deserialize)]
struct UuidRow {
    uuid: String,
}

/// Uuids of the Entities `caller` created or that belong to `conversation_ids`.
pub async fn list_entities(
    graph: &Graph,
    caller: &str,
    conversation_ids: Vec<String>,
    q: Option<&str>,
) -> Result<Vec<String>, Error> {
    let query = cypher(query_file!("entity/list.cypher"), None)
        .param("caller", caller)
        .param("conversationIds", conversation_ids)
        .param("q", q);
    let rows: Vec<UuidRow> = graph.read_rows(query).await?;
    let mut out: Vec<String> = rows.into_iter().map(|r| r.uuid).collect();
    out.sort();
    out.dedup();
    Ok(out)
}

pub struct Activation<'a> {
    pub conversation_id: &'a str,
    pub uuid: &'a str,
    pub caller: &'a str,
    pub include_summary: bool,
    pub include_facets: bool,
    pub include_relationships: bool,
}

pub async fn activate_entity(tx: &mut Tx, a: &Activation<'_>, now: &str) -> Result<bool, Error> {
    let q = cypher(query_file!("entity/activate.cypher"), None)
        .param("conversationId", a.conversation_id)
        .param("uuid", a.uuid)
        .param("caller", a.caller)
        .param("includeSummary", a.include_summary)
        .param("includeFacets", a.include_facets)
        .param("includeRelationships", a.include_relationships)
        .param("now", now);
    Ok(tx.one::<IdRow>(q).await?.is_some())
}

pub async fn deactivate_entity(
    tx: &mut Tx,
    conversation_id: &str,
    uuid: &str,
) -> Result<bool, Error> {
    let q = cypher(query_file!("entity/deactivate.cypher"), None)
        .param("conversationId", conversation_id)
        .param("uuid", uuid);
    Ok(tx.one::<IdRow>(q).await?.is_some())
}

/// An Entity row of `entity/active.cypher` or `entity/mentioned.cypher` (flat: rows decode
/// by column name), or an entry of `conversation/memory_notes.cypher`'s `chosen`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EntityInMemoryRow {
    uuid: String,
    name: String,
    summary: Option<String>,
    category: Option<String>,
    facets: Option<String>,
    source: Option<String>,
    #[serde(default)]
    facts: Vec<String>,
    added_at: Option<String>,
    include_summary: Option<bool>,
    include_facets: Option<bool>,
    include_relationships: Option<bool>,
    sequence: Option<i64>,
    mentioned_at: Option<String>,
}

impl EntityInMemoryRow {
    fn facts(&self) -> EntityFacts {
        EntityFacts {
            uuid: self.uuid.clone(),
            name: self.name.clone(),
            summary: self.summary.clone(),
            category: self.category.clone(),
            facets: self.facets.clone(),
            source: self.source.clone().unwrap_or_else(|| "graphiti".into()),
            facts: self.facts.clone(),
        }
    }
}

pub async fn active_entities(
    graph: &Graph,
    conversation_id: &str,
) -> Result<Vec<ChosenEntity>, Error> {
    let q =
        cypher(query_file!("entity/active.cypher"), None).param("conversationId", conversation_id);
    let rows: Vec<EntityInMemoryRow> = graph.read_rows(q).await?;
    Ok(chosen_entities(rows))
}

/// Chosen-entity rows with their flags' defaults.
pub(crate) fn chosen_entities(rows: Vec<EntityInMemoryRow>) -> Vec<ChosenEntity> {
    rows.into_iter()
        .map(|r| ChosenEntity {
            entity: r.facts(),
            added_at: r.added_at.unwrap_or_default(),
            include_summary: r.include_summary.unwrap_or(true),
            include_facets: r.include_facets.unwrap_or(false),
            include_relationships: r.include_relationships.unwrap_or(false),
        })
        .collect()
}

/// Entities mentioned by the Episodes of `(alternativeId, sequence)` path positions.
pub async fn mentioned_entities(
    graph: &Graph,
    path: &[(String, i64)],
) -> Result<Vec<MentionedEntity>, Error> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<Value> = path
        .iter()
        .map(|(id, seq)| serde_json::json!({"id": id, "sequence": seq}))
        .collect();
    let q = cypher(query_file!("entity/mentioned.cypher"), None)
        .param("path", bolt(Value::Array(rows))?);
    let rows: Vec<EntityInMemoryRow> = graph.read_rows(q).await?;
    Ok(rows
        .into_iter()
        .map(|r| MentionedEntity {
            entity: r.facts(),
            sequence: r.sequence.unwrap_or(0),
            mentioned_at: r.mentioned_at.unwrap_or_default(),
        })
        .collect())
}

/// AGT-13: proposed Entities from agents' answers (`entity/propose.cypher`): `{uuid, name,
/// summary, ownerId, runId, at}` each.
pub async fn propose_entities(tx: &mut Tx, items: Vec<serde_json::Value>) -> Result<(), Error> {
    let items = neo4rs::BoltType::try_from(serde_json::Value::Array(items))
        .map_err(|e| Error::Decode(e.to_string()))?;
    let q = cypher(query_file!("entity/propose.cypher"), None).param("items", items);
    tx.run(q).await
}

/// AGT-13: confirms or rejects the caller's proposal; whether there was one.
pub async fn decide_proposal(
    tx: &mut Tx,
    uuid: &str,
    caller: &str,
    confirm: bool,
    now: &str,
) -> Result<bool, Error> {
    let q = cypher(query_file!("entity/decide_proposal.cypher"), None)
        .param("uuid", uuid)
        .param("caller", caller)
        .param("confirm", confirm)
        .param("now", now);
    Ok(tx.count(q).await? > 0)
}
