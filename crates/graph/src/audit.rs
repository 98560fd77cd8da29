//! Read-only facts for `aiden check`: stored states that break an (audit) rule.

use serde::Deserialize;

use crate::{cypher, query_file, tx::IdRow, Error, Kind, Tx};

#[derive(Debug, Deserialize)]
pub struct Owners {
    pub id: String,
    pub owners: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolParams {
    pub id: String,
    pub connection_params: String,
    pub service: String,
}

/// OWN-1: nodes of `kind` without exactly one `OWNED_BY` matching their `ownerId`.
pub async fn bad_owners(tx: &mut Tx, kind: Kind) -> Result<Vec<Owners>, Error> {
    tx.rows(cypher(
        query_file!("audit/owners.cypher"),
        Some(kind.label()),
    ))
    .await
}

/// SVC-4.
pub async fn healthy_while_disabled(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.rows(cypher(
        query_file!("audit/healthy_while_disabled.cypher"),
        None,
    ))
    .await
}

/// TOOL-2.
pub async fn tools_missing_secret(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.rows(cypher(
        query_file!("audit/tools_missing_secret.cypher"),
        None,
    ))
    .await
}

/// SVC-3 / TOOL-1: every Tool's parameters with its Service, checked by the caller.
pub async fn tool_params(tx: &mut Tx) -> Result<Vec<ToolParams>, Error> {
    tx.rows(cypher(query_file!("audit/tool_params.cypher"), None))
        .await
}

/// SEC-2: Secrets without a well-formed ciphertext.
pub async fn unencrypted_secrets(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.rows(cypher(query_file!("audit/plaintext_secrets.cypher"), None))
        .await
}

/// WRK-1: Worker nodes of an unknown type or status, or whose `currentJobId` disagrees with it.
pub async fn bad_workers(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.rows(cypher(query_file!("audit/bad_workers.cypher"), None))
        .await
}

/// EXEC-5: settled runs that still have a step pending, queued or running.
pub async fn unsettled_steps_of_settled_runs(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.rows(cypher(
        query_file!("audit/unsettled_steps_of_settled_runs.cypher"),
        None,
    ))
    .await
}

/// EXEC-5: settled runs whose event log is not exactly 1..eventSeq.
pub async fn event_gaps(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.rows(cypher(query_file!("audit/event_gaps.cypher"), None))
        .await
}
