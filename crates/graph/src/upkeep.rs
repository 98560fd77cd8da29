//! Memory upkeep's statements: the settings node, the loop's claims and counters,
//! the introspection carousel and entity enrichment.

use serde::Deserialize;

use crate::knowledge::for_ingestion;
use crate::{cypher, query_file, tx::IdRow, Error, Graph, Tx};

#[derive(Debug, Clone, Deserialize)]
pub struct SettingsRow {
    pub doc: Option<String>,
    pub revision: Option<i64>,
}

pub async fn settings(tx: &mut Tx) -> Result<Option<SettingsRow>, Error> {
    tx.one(cypher(query_file!("upkeep/settings_get.cypher"), None))
        .await
}

pub async fn settings_autocommit(graph: &Graph) -> Result<Option<SettingsRow>, Error> {
    let q = cypher(query_file!("upkeep/settings_get.cypher"), None);
    Ok(graph.read_rows(q).await?.into_iter().next())
}

/// `false`: another write changed the settings since `expected` was read.
pub async fn put_settings(
    tx: &mut Tx,
    doc: &str,
    max_rotation: i64,
    expected: i64,
    by: &str,
    now: &str,
) -> Result<bool, Error> {
    let q = cypher(query_file!("upkeep/settings_put.cypher"), None)
        .param("doc", doc)
        .param("maxRotation", max_rotation)
        .param("expectedRevision", expected)
        .param("by", by)
        .param("now", now);
    Ok(tx.one::<IdRow>(q).await?.is_some())
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Changed {
    pub id: String,
    pub updated_at: Option<String>,
}

/// Conversations changed at or after `since`, oldest change first.
pub async fn changed_conversations(
    graph: &Graph,
    since: &str,
    limit: i64,
) -> Result<Vec<Changed>, Error> {
    let q = cypher(query_file!("upkeep/changed_conversations.cypher"), None)
        .param("since", since)
        .param("limit", limit);
    graph.read_rows(q).await
}

/// Conversations whose give-up wait ended in `[since, now]`.
pub async fn due_retries(graph: &Graph, since: &str, now: &str) -> Result<Vec<Changed>, Error> {
    let q = cypher(query_file!("upkeep/due_retries.cypher"), None)
        .param("since", since)
        .param("now", now);
    graph.read_rows(q).await
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationFacts {
    pub id: String,
    pub owner_id: String,
    pub owner_role: Option<String>,
    pub compression_token_budget: Option<i64>,
    pub compression_process_id: Option<String>,
    pub retry_at: Option<String>,
    pub failures: i64,
    pub compressions: i64,
    pub since_introspection: i64,
    pub claimed: bool,
}

pub async fn conversation_facts(
    graph: &Graph,
    id: &str,
) -> Result<Option<ConversationFacts>, Error> {
    let q = cypher(query_file!("upkeep/conversation_facts.cypher"), None).param("id", id);
    Ok(graph.read_rows(q).await?.into_iter().next())
}

/// A claim on one loop subject (MEM-6).
pub struct NewClaim<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    pub subject_id: &'a str,
    pub owner_id: &'a str,
    pub process_id: &'a str,
    /// JSON text: what the run is given and what its result applies to.
    pub payload: &'a str,
}

impl NewClaim<'_> {
    pub fn key(&self) -> String {
        claim_key(self.kind, self.subject_id)
    }
}

pub fn claim_key(kind: &str, subject_id: &str) -> String {
    format!("{kind}:{subject_id}")
}

/// The new claim's id, or None when the subject is claimed already.
pub async fn claim(tx: &mut Tx, c: &NewClaim<'_>, now: &str) -> Result<Option<String>, Error> {
    let q = cypher(query_file!("upkeep/claim.cypher"), None)
        .param("key", c.key())
        .param("id", c.id)
        .param("kind", c.kind)
        .param("subjectId", c.subject_id)
        .param("ownerId", c.owner_id)
        .param("processId", c.process_id)
        .param("payload", c.payload)
        .param("now", now);
    Ok(tx.one::<IdRow>(q).await?.map(|r| r.id))
}

/// Records the run a claim started and the Process it runs.
pub async fn claim_started(
    graph: &Graph,
    key: &str,
    run_id: &str,
    process_id: &str,
) -> Result<(), Error> {
    let mut tx = graph.begin().await?;
    let q = cypher(query_file!("upkeep/claim_started.cypher"), None)
        .param("key", key)
        .param("runId", run_id)
        .param("processId", process_id);
    tx.run(q).await?;
    tx.commit().await
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    pub key: String,
    pub id: String,
    pub kind: String,
    pub subject_id: String,
    pub owner_id: String,
    pub process_id: String,
    pub payload: String,
    pub run_id: Option<String>,
    pub created_at: String,
    pub attempts: i64,
    pub retry_at: Option<String>,
    pub run_status: Option<String>,
}

pub async fn claims(graph: &Graph, limit: i64) -> Result<Vec<Claim>, Error> {
    let q = cypher(query_file!("upkeep/claims.cypher"), None).param("limit", limit);
    graph.read_rows(q).await
}

/// Whether the claim was still there (a second settler finds it gone and does nothing).
pub async fn release(tx: &mut Tx, key: &str) -> Result<bool, Error> {
    let q = cypher(query_file!("upkeep/claim_release.cypher"), None).param("key", key);
    Ok(tx.one::<IdRow>(q).await?.is_some())
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    pub compressions: i64,
    pub since_introspection: i64,
}

/// Counts a compression; the conversation's counters after it.
pub async fn compressed(tx: &mut Tx, conversation_id: &str, now: &str) -> Result<Counters, Error> {
    let q = cypher(query_file!("upkeep/compressed.cypher"), None)
        .param("conversationId", conversation_id)
        .param("now", now);
    tx.one(q)
        .await?
        .ok_or_else(|| Error::Decode("compressed.cypher returned no row".into()))
}

pub async fn introspection_claimed(
    tx: &mut Tx,
    conversation_id: &str,
    now: &str,
) -> Result<(), Error> {
    let q = cypher(query_file!("upkeep/introspection_claimed.cypher"), None)
        .param("conversationId", conversation_id)
        .param("now", now);
    tx.run(q).await
}

pub async fn claim_retry(tx: &mut Tx, key: &str, retry_at: &str, error: &str) -> Result<(), Error> {
    let q = cypher(query_file!("upkeep/claim_retry.cypher"), None)
        .param("key", key)
        .param("retryAt", retry_at)
        .param("error", error);
    tx.run(q).await
}

pub async fn enrichment_later(
    tx: &mut Tx,
    uuid: &str,
    retry_at: &str,
    error: &str,
) -> Result<(), Error> {
    let q = cypher(query_file!("upkeep/enrichment_later.cypher"), None)
        .param("uuid", uuid)
        .param("retryAt", retry_at)
        .param("error", error);
    tx.run(q).await
}

pub async fn compression_failed(
    tx: &mut Tx,
    conversation_id: &str,
    retry_at: &str,
    error: &str,
) -> Result<(), Error> {
    let q = cypher(query_file!("upkeep/compression_failed.cypher"), None)
        .param("conversationId", conversation_id)
        .param("retryAt", retry_at)
        .param("error", error);
    tx.run(q).await
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentSummary {
    pub id: String,
    pub content: String,
    pub compression_level: i64,
    pub created_at: String,
}

pub async fn recent_summaries(
    tx: &mut Tx,
    conversation_id: &str,
    limit: i64,
) -> Result<Vec<RecentSummary>, Error> {
    let q = cypher(query_file!("upkeep/recent_summaries.cypher"), None)
        .param("conversationId", conversation_id)
        .param("limit", limit);
    tx.rows(q).await
}

/// A current or archived carousel note, as stored and as the API shows it.
#[derive(Debug, Clone, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IntrospectionRecord {
    pub id: String,
    pub carousel_position: i64,
    pub content: String,
    /// Its Episode (group `system_introspection`), null until bound.
    pub episode_id: Option<String>,
    pub binding: Option<String>,
    /// Which conversation and compressions led to it (null for an injected note).
    pub conversation_context: Option<String>,
    pub created_at: String,
    /// Set once it was replaced or retired.
    pub archived_at: Option<String>,
    /// 1, plus one per correction.
    pub revision: i64,
    /// The introspection run that wrote it.
    pub run_id: Option<String>,
}

pub async fn carousel(tx: &mut Tx, owner_id: &str) -> Result<Vec<IntrospectionRecord>, Error> {
    let q = cypher(query_file!("introspection/current.cypher"), None).param("ownerId", owner_id);
    tx.rows(q).await
}

pub async fn carousel_autocommit(
    graph: &Graph,
    owner_id: &str,
) -> Result<Vec<IntrospectionRecord>, Error> {
    let q = cypher(query_file!("introspection/current.cypher"), None).param("ownerId", owner_id);
    graph.read_rows(q).await
}

pub async fn archive(
    graph: &Graph,
    owner_id: &str,
    limit: i64,
) -> Result<Vec<IntrospectionRecord>, Error> {
    let q = cypher(query_file!("introspection/archive.cypher"), None)
        .param("ownerId", owner_id)
        .param("limit", limit);
    graph.read_rows(q).await
}

pub struct NewNote<'a> {
    pub id: &'a str,
    pub owner_id: &'a str,
    pub position: i64,
    pub content: &'a str,
    pub conversation_context: Option<&'a str>,
    pub run_id: Option<&'a str>,
}

/// INT-1: places a note, archiving the one in its position. `false`: the owner is gone.
pub async fn place_note(tx: &mut Tx, n: &NewNote<'_>, now: &str) -> Result<bool, Error> {
    let q = cypher(query_file!("introspection/place.cypher"), None)
        .param("id", n.id)
        .param("ownerId", n.owner_id)
        .param("position", n.position)
        .param("content", n.content)
        .param("conversationContext", n.conversation_context)
        .param("runId", n.run_id)
        .param("now", now);
    Ok(tx.one::<IdRow>(for_ingestion(q)).await?.is_some())
}

/// `false`: not the owner's current note at that revision.
pub async fn correct_note(
    tx: &mut Tx,
    id: &str,
    owner_id: &str,
    expected: i64,
    content: &str,
    now: &str,
) -> Result<bool, Error> {
    let q = cypher(query_file!("introspection/correct.cypher"), None)
        .param("id", id)
        .param("ownerId", owner_id)
        .param("expectedRevision", expected)
        .param("content", content)
        .param("now", now);
    Ok(tx.one::<IdRow>(for_ingestion(q)).await?.is_some())
}

/// Archives a current note of `owner_id`; `false` when there is none with that id.
pub async fn retire_note(tx: &mut Tx, id: &str, owner_id: &str, now: &str) -> Result<bool, Error> {
    let q = cypher(query_file!("introspection/retire.cypher"), None)
        .param("id", id)
        .param("ownerId", owner_id)
        .param("now", now);
    Ok(tx.one::<IdRow>(q).await?.is_some())
}

/// INT-1 after `maxRotation` shrinks: how many notes were archived.
pub async fn shrink_carousels(tx: &mut Tx, max_rotation: i64, now: &str) -> Result<i64, Error> {
    let q = cypher(query_file!("introspection/shrink.cypher"), None)
        .param("maxRotation", max_rotation)
        .param("now", now);
    tx.count(q).await
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnrichmentCandidate {
    pub uuid: String,
    pub owner_id: Option<String>,
    pub edges: i64,
}

pub async fn enrichment_candidates(
    graph: &Graph,
    threshold: i64,
    now: &str,
    limit: i64,
) -> Result<Vec<EnrichmentCandidate>, Error> {
    let q = cypher(query_file!("upkeep/enrichment_candidates.cypher"), None)
        .param("threshold", threshold)
        .param("now", now)
        .param("limit", limit);
    graph.read_rows(q).await
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnrichmentContext {
    pub uuid: String,
    pub name: String,
    pub summary: Option<String>,
    pub category: Option<String>,
    pub facets: Option<String>,
    #[serde(default)]
    pub mentions: Vec<Option<String>>,
}

pub async fn enrichment_context(
    tx: &mut Tx,
    uuid: &str,
    limit: i64,
) -> Result<Option<EnrichmentContext>, Error> {
    let q = cypher(query_file!("upkeep/enrichment_context.cypher"), None)
        .param("uuid", uuid)
        .param("limit", limit);
    tx.one(q).await
}

pub struct Enriched<'a> {
    pub uuid: &'a str,
    /// JSON text of `{summary, facets, edges}`.
    pub enrichment: &'a str,
    /// JSON text of the merged facets.
    pub facets: &'a str,
    pub process_id: &'a str,
    pub run_id: &'a str,
}

/// `false`: the Entity is gone or was enriched meanwhile.
pub async fn enrich(tx: &mut Tx, e: &Enriched<'_>, now: &str) -> Result<bool, Error> {
    let q = cypher(query_file!("upkeep/enrich.cypher"), None)
        .param("uuid", e.uuid)
        .param("enrichment", e.enrichment)
        .param("facets", e.facets)
        .param("processId", e.process_id)
        .param("runId", e.run_id)
        .param("now", now);
    Ok(tx.one::<IdRow>(q).await?.is_some())
}
