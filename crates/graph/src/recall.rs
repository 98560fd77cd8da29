//! Recall's statements: one row per hit and signal, already filtered to what the
//! caller owns (SRCH-2). The fusion is the domain's (`knowledge::recall::fuse`).

use aiden_domain::knowledge::recall::{HitKind, SignalRow, Source, Version};
use serde::Deserialize;

use crate::{cypher, query_file, Error, Graph};

/// What every recall statement takes.
pub struct Ask<'a> {
    pub caller_id: &'a str,
    pub conversation_id: Option<&'a str>,
    /// The query's embedding (`None`: no embedder reachable; words and the graph only).
    pub vector: Option<&'a [f32]>,
    /// The full-text query (`recall::text_query`), possibly empty.
    pub text: &'a str,
    /// How many rows each index is asked for, before the caller's own are kept.
    pub k: i64,
    /// How many of the caller's own content rows found by meaning are kept, nearest first
    /// (`k` keeps them all).
    pub keep_by_meaning: i64,
}

fn query(text: &str, ask: &Ask<'_>) -> neo4rs::Query {
    cypher(text, None)
        .param("callerId", ask.caller_id)
        .param("conversationId", ask.conversation_id)
        .param(
            "vector",
            ask.vector
                .map(|v| v.iter().map(|x| f64::from(*x)).collect::<Vec<f64>>()),
        )
        .param("text", ask.text)
        .param("k", ask.k)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContentRow {
    id: String,
    kind: String,
    signal: String,
    score: Option<f64>,
    via: Option<String>,
    content: String,
    episode_id: Option<String>,
    conversation_id: Option<String>,
    conversation_title: Option<String>,
    turn_id: Option<String>,
    active: Option<bool>,
    created_at: Option<String>,
    /// `x:Embedded`: its vector is written (SRCH-6 says `indexed`).
    embedded: Option<bool>,
    superseded_by: Option<Version>,
    supersedes: Option<Version>,
}

impl ContentRow {
    fn into_signal(self) -> Option<SignalRow> {
        let kind = HitKind::parse(&self.kind)?;
        let mut source = Source {
            conversation_id: self.conversation_id,
            conversation_title: self.conversation_title,
            turn_id: self.turn_id,
            episode_id: self.episode_id,
            active: self.active,
            ..Source::default()
        };
        match kind {
            HitKind::Episode => source.alternative_id = Some(self.id.clone()),
            HitKind::Summary => source.summary_id = Some(self.id.clone()),
            HitKind::Memory => source.memory_id = Some(self.id.clone()),
            _ => source.introspection_id = Some(self.id.clone()),
        }
        Some(SignalRow {
            id: self.id,
            kind,
            signal: self.signal,
            score: self.score,
            via: self.via,
            name: None,
            content: self.content,
            created_at: self.created_at,
            sources: vec![source],
            group: None,
            indexed: Some(self.embedded.unwrap_or(false)),
            superseded_by: self.superseded_by,
            supersedes: self.supersedes,
        })
    }
}

/// How many of the caller's newest embedded items an exact scan compares, unless told.
pub const EXACT_SCAN_CAP: i64 = 5_000;

/// Content (Alternatives, Summaries, Introspections, Memories) by meaning, words and the Entities in
/// `entity_uuids`. `scan`: the vector signal compares the caller's own newest `scan` items
/// instead of asking the index (when the index's nearest held too few of the caller's).
pub async fn content(
    graph: &Graph,
    ask: &Ask<'_>,
    kinds: &[HitKind],
    entity_uuids: &[String],
    scan: Option<i64>,
) -> Result<Vec<SignalRow>, Error> {
    let q = query(query_file!("search/content.cypher"), ask)
        .param(
            "kinds",
            kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        )
        .param("entityUuids", entity_uuids.to_vec())
        .param("exact", scan.is_some())
        .param("scanCap", scan.unwrap_or(0))
        .param("keepByMeaning", ask.keep_by_meaning);
    let rows: Vec<ContentRow> = graph.read_rows(q).await?;
    Ok(rows
        .into_iter()
        .filter_map(ContentRow::into_signal)
        .collect())
}

/// How many items the content vector index holds, all owners' (from the count store).
pub async fn embedded_total(graph: &Graph) -> Result<i64, Error> {
    #[derive(Deserialize)]
    struct Row {
        total: i64,
    }
    let q = cypher(query_file!("search/embedded_total.cypher"), None);
    let rows: Vec<Row> = graph.read_rows(q).await?;
    Ok(rows.first().map_or(0, |r| r.total))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KnowledgeRow {
    id: String,
    kind: String,
    signal: String,
    score: Option<f64>,
    name: Option<String>,
    content: Option<String>,
    /// The conversation it was extracted in (graphiti's group_id).
    conversation_id: Option<String>,
    #[serde(default)]
    sources: Vec<Source>,
}

async fn knowledge(graph: &Graph, q: neo4rs::Query) -> Result<Vec<SignalRow>, Error> {
    let rows: Vec<KnowledgeRow> = graph.read_rows(q).await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            Some(SignalRow {
                kind: HitKind::parse(&r.kind)?,
                id: r.id,
                signal: r.signal,
                score: r.score,
                via: None,
                name: r.name,
                content: r.content.unwrap_or_default(),
                created_at: None,
                sources: r.sources,
                group: r.conversation_id,
                indexed: None,
                superseded_by: None,
                supersedes: None,
            })
        })
        .collect())
}

/// A message to search for as its owner, and its conversation (the search warm-up's).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WarmUpQuestion {
    pub owner_id: String,
    pub conversation_id: String,
    pub text: String,
}

/// Up to `n` embedded messages with their owners, for the search warm-up: owners of ids of
/// different lengths first (Neo4j plans a statement apart per parameter size).
pub async fn warm_up_questions(graph: &Graph, n: i64) -> Result<Vec<WarmUpQuestion>, Error> {
    /// Embedded messages read for their owners' id lengths: a bounded read at a start.
    const SCAN: i64 = 1_000;
    let q = cypher(query_file!("search/warm_up_questions.cypher"), None)
        .param("n", n)
        .param("scan", SCAN);
    graph.read_rows(q).await
}

/// Entities the caller may see (ENT-2), by the meaning of their name and their words.
pub async fn entities(graph: &Graph, ask: &Ask<'_>) -> Result<Vec<SignalRow>, Error> {
    knowledge(graph, query(query_file!("search/entities.cypher"), ask)).await
}

/// Facts (graphiti's RELATES_TO) of the caller's conversations, still valid.
pub async fn facts(graph: &Graph, ask: &Ask<'_>) -> Result<Vec<SignalRow>, Error> {
    knowledge(graph, query(query_file!("search/facts.cypher"), ask)).await
}

/// An Alternative that mentions an Entity, as its page lists it.
#[derive(Debug, Clone, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Mention {
    #[serde(flatten)]
    pub source: Source,
    /// The Alternative's content.
    pub text: Option<String>,
}

/// The Entity at the other end of a fact.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
pub struct Neighbour {
    pub uuid: String,
    pub name: Option<String>,
}

/// A fact (graphiti's RELATES_TO) of an Entity.
#[derive(Debug, Clone, Deserialize, serde::Serialize, schemars::JsonSchema)]
pub struct EntityFact {
    pub uuid: String,
    pub name: Option<String>,
    pub fact: Option<String>,
    pub other: Neighbour,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EntityContext {
    pub mentions: Vec<Mention>,
    pub facts: Vec<EntityFact>,
}

/// An Entity's mentions and facts in the caller's conversations (its visibility is the
/// caller's to check first, ENT-2).
pub async fn entity_context(
    graph: &Graph,
    caller_id: &str,
    uuid: &str,
) -> Result<Option<EntityContext>, Error> {
    let q = cypher(query_file!("search/entity_context.cypher"), None)
        .param("callerId", caller_id)
        .param("uuid", uuid);
    Ok(graph.read_rows(q).await?.into_iter().next())
}
