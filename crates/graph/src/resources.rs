//! Every owned aggregate is one node: its scalar fields as properties (queryable, indexed) and
//! its whole record as the `doc` JSON string the API reads back. Structure lives in edges.

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{bolt, cypher, query_file, tx::IdRow, Error, Tx};

/// The labels of owned aggregates. The only source of labels spliced into Cypher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ServiceTemplate,
    ToolTemplate,
    Service,
    Secret,
    Tool,
    Process,
    /// Only for labels (OWN-1 audit): Conversations are stored by `conversations.rs`.
    Conversation,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::ServiceTemplate => "ServiceTemplate",
            Kind::ToolTemplate => "ToolTemplate",
            Kind::Service => "Service",
            Kind::Secret => "Secret",
            Kind::Tool => "Tool",
            Kind::Process => "Process",
            Kind::Conversation => "Conversation",
        }
    }

    /// OWN-1: the kinds that carry an `OWNED_BY` edge (templates too, for one ownership model).
    pub const OWNED: [Kind; 7] = [
        Kind::ServiceTemplate,
        Kind::ToolTemplate,
        Kind::Service,
        Kind::Secret,
        Kind::Tool,
        Kind::Process,
        Kind::Conversation,
    ];
}

#[derive(Deserialize)]
struct Doc {
    /// Null when a concurrent transaction deleted the node after this statement matched it
    /// (Neo4j reads committed data: the match and the property read are not one snapshot).
    doc: Option<String>,
}

/// The record's top-level scalars, set as node properties beside `doc`.
fn properties(record: &Value) -> Value {
    let scalars: Map<String, Value> = record
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(_, v)| !v.is_object() && !v.is_array())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    Value::Object(scalars)
}

fn encode<T: Serialize>(record: &T) -> Result<(Value, String), Error> {
    let value = serde_json::to_value(record).map_err(|e| Error::Decode(e.to_string()))?;
    let doc = value.to_string();
    Ok((properties(&value), doc))
}

/// Creates the node and its `OWNED_BY` edge. `record` must serialize `id` and `ownerId`.
pub async fn create<T: Serialize>(
    tx: &mut Tx,
    kind: Kind,
    id: &str,
    owner_id: &str,
    record: &T,
    now: &str,
) -> Result<(), Error> {
    let (props, doc) = encode(record)?;
    let q = cypher(query_file!("resource/create.cypher"), Some(kind.label()))
        .param("ownerId", owner_id)
        .param("id", id)
        .param("props", bolt(props)?)
        .param("doc", doc)
        .param("now", now);
    match tx.one::<IdRow>(q).await? {
        Some(_) => {}
        None => return Err(Error::Query(format!("owner {owner_id} does not exist"))),
    }
    claim(tx, kind, id, revision_of(record)?).await
}

fn revision_of<T: Serialize>(record: &T) -> Result<i64, Error> {
    serde_json::to_value(record)
        .ok()
        .and_then(|v| v.get("revision").and_then(serde_json::Value::as_i64))
        .ok_or_else(|| Error::Decode("record without a revision".into()))
}

fn claim_key(kind: Kind, id: &str, revision: i64) -> String {
    format!("{}:{id}#{revision}", kind.label())
}

/// Claims `revision` of the aggregate. A concurrent transaction claiming the same revision
/// fails at commit on the unique constraint, which the service retries as a lost race.
async fn claim(tx: &mut Tx, kind: Kind, id: &str, revision: i64) -> Result<(), Error> {
    #[derive(Deserialize)]
    struct Key {
        #[allow(dead_code)]
        key: String,
    }
    let q = cypher(query_file!("resource/claim_revision.cypher"), None)
        .param("key", claim_key(kind, id, revision))
        .param("aggregate", format!("{}:{id}", kind.label()));
    tx.one::<Key>(q).await.map(|_| ())
}

pub async fn get<T: DeserializeOwned>(
    tx: &mut Tx,
    kind: Kind,
    id: &str,
) -> Result<Option<T>, Error> {
    let q = cypher(query_file!("resource/get.cypher"), Some(kind.label())).param("id", id);
    decode_doc(tx.one::<Doc>(q).await?)
}

/// `get` for a write that will compare-and-set the revision: the node's write lock is taken
/// first, so racing updates of one resource serialize on Neo4j's lock instead of retrying.
pub async fn get_for_update<T: DeserializeOwned>(
    tx: &mut Tx,
    kind: Kind,
    id: &str,
) -> Result<Option<T>, Error> {
    let q = cypher(
        query_file!("resource/get_for_update.cypher"),
        Some(kind.label()),
    )
    .param("id", id);
    decode_doc(tx.one::<Doc>(q).await?)
}

fn decode_doc<T: DeserializeOwned>(doc: Option<Doc>) -> Result<Option<T>, Error> {
    match doc {
        Some(Doc { doc: Some(d) }) => serde_json::from_str(&d)
            .map(Some)
            .map_err(|e| Error::Decode(e.to_string())),
        // Deleted while read: the unit is retried and then finds it gone.
        Some(Doc { doc: None }) => Err(Error::Transient(
            "a node was deleted while it was read".into(),
        )),
        None => Ok(None),
    }
}

/// A page of what a caller may list (OWN-2): own nodes, plus others' shared ones where the kind
/// allows it (`others_visible`), plus everything for admins where the kind allows it.
pub struct ListFilter<'a> {
    pub caller_id: &'a str,
    pub admin: bool,
    pub others_visible: bool,
    pub include_archived: bool,
    pub after: &'a str,
    pub limit: i64,
}

pub async fn list<T: DeserializeOwned>(
    tx: &mut Tx,
    kind: Kind,
    f: &ListFilter<'_>,
) -> Result<Vec<T>, Error> {
    let q = cypher(query_file!("resource/list.cypher"), Some(kind.label()))
        .param("after", f.after)
        .param("callerId", f.caller_id)
        .param("othersVisible", f.others_visible)
        .param("admin", f.admin)
        .param("includeArchived", f.include_archived)
        .param("limit", f.limit);
    // A node deleted while the page was read is simply not on it.
    tx.rows::<Doc>(q)
        .await?
        .into_iter()
        .filter_map(|d| d.doc)
        .map(|d| serde_json::from_str(&d).map_err(|e| Error::Decode(e.to_string())))
        .collect()
}

/// Writes the new record if the stored revision is still `expected_revision`; `false` when a
/// concurrent change got there first.
pub async fn update<T: Serialize>(
    tx: &mut Tx,
    kind: Kind,
    id: &str,
    expected_revision: i64,
    record: &T,
) -> Result<bool, Error> {
    let (props, doc) = encode(record)?;
    let q = cypher(query_file!("resource/update.cypher"), Some(kind.label()))
        .param("id", id)
        .param("expectedRevision", expected_revision)
        .param("props", bolt(props)?)
        .param("doc", doc);
    if tx.one::<IdRow>(q).await?.is_none() {
        return Ok(false);
    }
    let release = cypher(query_file!("resource/release_revision.cypher"), None)
        .param("key", claim_key(kind, id, expected_revision));
    tx.run(release).await?;
    claim(tx, kind, id, revision_of(record)?).await?;
    Ok(true)
}

/// Removes the node, its outgoing edges and the MEASURES edges of its metric values. Other
/// incoming edges make the server refuse, a backstop for the reference checks the service
/// makes first.
pub async fn delete(tx: &mut Tx, kind: Kind, id: &str) -> Result<(), Error> {
    for statement in [
        query_file!("resource/delete_outgoing.cypher"),
        query_file!("resource/delete_measures.cypher"),
    ] {
        tx.run(cypher(statement, Some(kind.label())).param("id", id))
            .await?;
    }
    tx.run(
        cypher(
            query_file!("resource/delete_node.cypher"),
            Some(kind.label()),
        )
        .param("id", id),
    )
    .await?;
    let release = cypher(query_file!("resource/release_all_revisions.cypher"), None)
        .param("aggregate", format!("{}:{id}", kind.label()));
    tx.run(release).await
}
