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

/// The conversation audits (TURN-1, 2, 3, 5, 6, 7): `(invariant, offending ids, what is wrong)`.
pub async fn conversation_findings(
    tx: &mut Tx,
) -> Result<Vec<(&'static str, Vec<IdRow>, &'static str)>, Error> {
    let checks: [(&'static str, &'static str, &'static str); 6] = [
        (
            "TURN-1",
            query_file!("audit/turn_sequence.cypher"),
            "Turn without exactly one HAS_TURN from its Conversation, or sequence is not its depth",
        ),
        (
            "TURN-2",
            query_file!("audit/turn_active.cypher"),
            "Turn without Alternatives, or without exactly one active Alternative",
        ),
        (
            "TURN-3",
            query_file!("audit/turn_structure.cypher"),
            "CHILD_OF / RESPONDS_TO do not point into the parent Turn of the same Conversation",
        ),
        (
            "TURN-5",
            query_file!("audit/alternative_executed_by.cypher"),
            "agent Alternative without exactly one EXECUTED_BY, or a non-agent one with it",
        ),
        (
            "TURN-6",
            query_file!("audit/alternative_generation.cypher"),
            "Alternative still generating although its run has settled (or has no run)",
        ),
        (
            "TURN-7",
            query_file!("audit/alternative_content.cypher"),
            "Alternative with more than one HAS_CONTENT, or one disagreeing with its episodeId",
        ),
    ];
    let mut out = Vec::with_capacity(checks.len());
    for (id, text, message) in checks {
        out.push((id, tx.rows(cypher(text, None)).await?, message));
    }
    Ok(out)
}

/// One bound Alternative or Summary with its Episode's name and group (EPI-1).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EpisodeIdentity {
    pub id: String,
    pub kind: String,
    pub episode_id: String,
    pub conversation_id: String,
    pub name: Option<String>,
    pub group_id: Option<String>,
}

pub async fn episode_identities(tx: &mut Tx) -> Result<Vec<EpisodeIdentity>, Error> {
    tx.rows(cypher(query_file!("audit/episode_identity.cypher"), None))
        .await
}

/// The knowledge-layer audits (EPI-3, ENT-2, ENT-3): `(invariant, offending ids, what is wrong)`.
pub async fn knowledge_findings(
    tx: &mut Tx,
) -> Result<Vec<(&'static str, Vec<IdRow>, &'static str)>, Error> {
    let checks: [(&'static str, &'static str, &'static str); 4] = [
        (
            "EPI-3",
            query_file!("audit/binding_state.cypher"),
            "binding state disagrees with its HAS_CONTENT edge / episodeId (or is unknown)",
        ),
        (
            "EPI-3",
            query_file!("audit/binding_outbox.cypher"),
            "content not recorded for ingestion: no binding, or a pending binding without its outbox item",
        ),
        (
            "ENT-2",
            query_file!("audit/active_entities.cypher"),
            "active entity not visible to the conversation's owner",
        ),
        (
            "ENT-3",
            query_file!("audit/orphan_entities.cypher"),
            "entity mirrored from Graphiti without a MENTIONS from an Episode",
        ),
    ];
    let mut out = Vec::with_capacity(checks.len());
    for (id, text, message) in checks {
        out.push((id, tx.rows(cypher(text, None)).await?, message));
    }
    Ok(out)
}

/// The reference-edge audits (GRAPH-1..3): an edge and the property naming the same record agree.
pub async fn reference_findings(
    tx: &mut Tx,
) -> Result<Vec<(&'static str, Vec<IdRow>, &'static str)>, Error> {
    let generated_by = query_file!("audit/generated_by.cypher");
    let checks = [
        (
            "GRAPH-1",
            cypher(generated_by, Some("Alternative")),
            "Alternative whose GENERATED_BY edge disagrees with its runId",
        ),
        (
            "GRAPH-2",
            cypher(generated_by, Some("Summary")),
            "Summary whose GENERATED_BY edge disagrees with its runId",
        ),
        (
            "GRAPH-3",
            cypher(query_file!("audit/audit_step_run.cypher"), None),
            "tool-call audit record without exactly one HAS_AUDIT from the step run it names",
        ),
    ];
    let mut out = Vec::with_capacity(checks.len());
    for (id, q, message) in checks {
        out.push((id, tx.rows(q).await?, message));
    }
    Ok(out)
}
