//! MetricDefinition / MetricValue storage (rules in `aiden_domain::metric`).

use aiden_domain::metric::MetricDefinition;
use serde::Deserialize;

use crate::{bolt, cypher, query_file, tx::IdRow, Error, Kind, Tx};

/// A definition's state as written (create and update).
pub struct DefinitionState<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub scope: &'a str,
    pub aggregation: &'a str,
    pub data_type: &'a str,
    pub retention_days: Option<i64>,
    pub by: &'a str,
    pub now: &'a str,
}

impl DefinitionState<'_> {
    /// MET-1: names are unique within a scope, case-insensitively.
    fn name_key(&self) -> String {
        format!("{}:{}", self.scope, self.name.trim().to_lowercase())
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValueRow {
    pub id: String,
    pub metric_id: String,
    pub entity_id: String,
    /// The client's value, as JSON text.
    pub value: String,
    pub number: f64,
    pub at: i64,
    pub timestamp: String,
    /// JSON text of the dimensions object.
    pub dimensions: Option<String>,
    pub created_at: Option<String>,
}

pub struct NewValue<'a> {
    pub id: &'a str,
    pub metric_id: &'a str,
    pub entity_id: &'a str,
    pub value: &'a str,
    pub number: f64,
    pub at: i64,
    pub timestamp: &'a str,
    pub dimensions: Option<&'a str>,
    pub by: &'a str,
    pub now: &'a str,
}

/// Which values to read: `[from, to)` in epoch ms, newest first, before the cursor id.
pub struct ValueFilter<'a> {
    pub metric_id: &'a str,
    pub entity_id: Option<&'a str>,
    pub from: i64,
    pub to: i64,
    pub before: &'a str,
    pub limit: i64,
}

/// The node label a scope's entities carry.
pub fn scope_kind(scope: aiden_domain::metric::Scope) -> Kind {
    use aiden_domain::metric::Scope;
    match scope {
        Scope::Service => Kind::Service,
        Scope::Tool => Kind::Tool,
        Scope::Process => Kind::Process,
        Scope::Conversation => Kind::Conversation,
    }
}

/// A definition's fields as the statement's parameters (creating one, or a built-in one).
fn with_definition(q: neo4rs::Query, d: &DefinitionState<'_>) -> neo4rs::Query {
    q.param("id", d.id)
        .param("name", d.name)
        .param("nameKey", d.name_key())
        .param("description", d.description)
        .param("scope", d.scope)
        .param("aggregation", d.aggregation)
        .param("dataType", d.data_type)
        .param("retentionDays", d.retention_days)
        .param("by", d.by)
        .param("now", d.now)
}

pub async fn create_definition(tx: &mut Tx, d: &DefinitionState<'_>) -> Result<(), Error> {
    let q = with_definition(
        cypher(query_file!("metric/create_definition.cypher"), None),
        d,
    );
    tx.one::<IdRow>(q).await.map(|_| ())
}

/// MET-1: whether another definition of the scope has this name.
pub async fn name_taken(tx: &mut Tx, d: &DefinitionState<'_>) -> Result<bool, Error> {
    let q = cypher(query_file!("metric/name_taken.cypher"), None)
        .param("nameKey", d.name_key())
        .param("id", d.id);
    Ok(tx.count(q).await? > 0)
}

pub async fn get_definition(tx: &mut Tx, id: &str) -> Result<Option<MetricDefinition>, Error> {
    tx.one(cypher(query_file!("metric/get_definition.cypher"), None).param("id", id))
        .await
}

pub async fn list_definitions(
    tx: &mut Tx,
    after: &str,
    limit: i64,
) -> Result<Vec<MetricDefinition>, Error> {
    tx.rows(
        cypher(query_file!("metric/list_definitions.cypher"), None)
            .param("after", after)
            .param("limit", limit),
    )
    .await
}

/// The update, if the definition is still at `expected_revision`.
pub async fn update_definition(
    tx: &mut Tx,
    d: &DefinitionState<'_>,
    expected_revision: i64,
) -> Result<bool, Error> {
    let q = cypher(query_file!("metric/update_definition.cypher"), None)
        .param("id", d.id)
        .param("name", d.name)
        .param("nameKey", d.name_key())
        .param("description", d.description)
        .param("aggregation", d.aggregation)
        .param("retentionDays", d.retention_days)
        .param("expectedRevision", expected_revision)
        .param("by", d.by)
        .param("now", d.now);
    Ok(tx.one::<IdRow>(q).await?.is_some())
}

pub async fn count_values(tx: &mut Tx, id: &str) -> Result<i64, Error> {
    tx.count(cypher(query_file!("metric/count_values.cypher"), None).param("id", id))
        .await
}

pub async fn delete_definition(tx: &mut Tx, id: &str) -> Result<(), Error> {
    tx.run(cypher(query_file!("metric/delete_definition.cypher"), None).param("id", id))
        .await
}

/// MET-1: the entity exists and the caller may see it.
pub async fn entity_visible(
    tx: &mut Tx,
    kind: Kind,
    id: &str,
    caller_id: &str,
    admin: bool,
) -> Result<bool, Error> {
    let q = cypher(
        query_file!("metric/entity_visible.cypher"),
        Some(kind.label()),
    )
    .param("id", id)
    .param("callerId", caller_id)
    .param("admin", admin);
    Ok(tx.one::<IdRow>(q).await?.is_some())
}

pub async fn create_value(tx: &mut Tx, kind: Kind, v: &NewValue<'_>) -> Result<bool, Error> {
    let q = cypher(
        query_file!("metric/create_value.cypher"),
        Some(kind.label()),
    )
    .param("id", v.id)
    .param("metricId", v.metric_id)
    .param("entityId", v.entity_id)
    .param("value", v.value)
    .param("number", v.number)
    .param("at", v.at)
    .param("timestamp", v.timestamp)
    .param("dimensions", v.dimensions)
    .param("by", v.by)
    .param("now", v.now);
    Ok(tx.one::<IdRow>(q).await?.is_some())
}

pub async fn list_values(tx: &mut Tx, f: &ValueFilter<'_>) -> Result<Vec<ValueRow>, Error> {
    tx.rows(
        cypher(query_file!("metric/list_values.cypher"), None)
            .param("metricId", f.metric_id)
            .param("entityId", f.entity_id)
            .param("from", f.from)
            .param("to", f.to)
            .param("before", f.before)
            .param("limit", f.limit),
    )
    .await
}

/// MET-4: removes up to `limit` values past their retention; how many it removed.
pub async fn sweep(tx: &mut Tx, now_ms: i64, limit: i64) -> Result<i64, Error> {
    tx.count(
        cypher(query_file!("metric/sweep.cypher"), None)
            .param("nowMs", now_ms)
            .param("limit", limit),
    )
    .await
}

#[derive(Debug, Clone, Deserialize)]
pub struct AuditRow {
    pub id: String,
    pub rule: String,
}

/// MET-1 / MET-4 (audit).
pub async fn audit(tx: &mut Tx, now_ms: i64) -> Result<Vec<AuditRow>, Error> {
    tx.live_rows(cypher(query_file!("audit/metric_values.cypher"), None).param("nowMs", now_ms))
        .await
}

/// One built-in measurement; `scope` names the entity's label (`alternative`: an
/// agent Alternative whose Conversation is measured).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuiltinValue {
    pub id: String,
    pub metric_id: String,
    #[serde(skip)]
    pub scope: &'static str,
    pub entity_id: String,
    pub value: String,
    pub number: f64,
    pub at: i64,
    pub timestamp: String,
    pub dimensions: String,
}

/// Creates a built-in definition unless it exists; `false` when an admin's definition holds
/// its name in the scope.
pub async fn ensure_builtin_definition(
    tx: &mut Tx,
    d: &DefinitionState<'_>,
) -> Result<bool, Error> {
    let q = with_definition(
        cypher(query_file!("metric/ensure_builtin_definition.cypher"), None),
        d,
    );
    Ok(tx.one::<IdRow>(q).await?.is_some())
}

#[derive(Deserialize)]
struct Written {
    written: i64,
}

/// Appends built-in values, one statement per scope; values of entities that no longer exist
/// are dropped. Returns how many were written.
pub async fn record_builtin(tx: &mut Tx, values: &[BuiltinValue]) -> Result<i64, Error> {
    let mut written = 0;
    for (scope, label) in [
        ("tool", "Tool"),
        ("process", "Process"),
        ("alternative", ""),
    ] {
        let of_scope: Vec<&BuiltinValue> = values.iter().filter(|v| v.scope == scope).collect();
        if of_scope.is_empty() {
            continue;
        }
        let list =
            bolt(serde_json::to_value(&of_scope).map_err(|e| Error::Decode(e.to_string()))?)?;
        let q = if label.is_empty() {
            cypher(
                query_file!("metric/record_conversation_tokens.cypher"),
                None,
            )
        } else {
            cypher(
                query_file!("metric/record_builtin_values.cypher"),
                Some(label),
            )
        };
        if let Some(row) = tx.one::<Written>(q.param("values", list)).await? {
            written += row.written;
        }
    }
    Ok(written)
}
