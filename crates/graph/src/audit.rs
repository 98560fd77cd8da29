//! Read-only facts for `aiden check`: stored states that break an (audit) rule.

use aiden_domain::conversation::AltState;
use aiden_domain::execution::machine::RunStatus;
use aiden_domain::execution::schedule::StepStatus;
use aiden_domain::knowledge::Binding;
use serde::Deserialize;

use crate::{cypher, query_file, tx::IdRow, Error, Kind, Tx};

/// The status words audit statements compare stored ones with, from the domain's enums; given
/// to every audit statement (one ignores those it does not name).
fn with_words(q: neo4rs::Query) -> neo4rs::Query {
    q.param("settled", RunStatus::words(RunStatus::is_settled))
        .param("settledSteps", StepStatus::words(StepStatus::is_settled))
        // The statuses a worker's result settles a step with.
        .param(
            "resultStatuses",
            StepStatus::words(|s| matches!(s, StepStatus::Completed | StepStatus::Failed)),
        )
        .param("generating", AltState::Generating.as_str())
        .param("bindings", Binding::words(|_| true))
        .param("notFinal", Binding::words(|b| !b.is_final()))
        .param("withEpisode", Binding::words(Binding::is_bound))
        .param("pending", Binding::Pending.as_str())
}

#[derive(Debug, Deserialize)]
pub struct Owners {
    pub id: String,
    pub owners: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolParams {
    pub id: String,
    /// `None` when its `USES_SERVICE` edge or Service went while the audit read it (a Tool
    /// moved to another Service): nothing to check.
    pub connection_params: Option<String>,
    pub service: Option<String>,
}

/// OWN-1: nodes of `kind` without exactly one `OWNED_BY` matching their `ownerId`.
pub async fn bad_owners(tx: &mut Tx, kind: Kind) -> Result<Vec<Owners>, Error> {
    tx.live_rows(cypher(
        query_file!("audit/owners.cypher"),
        Some(kind.label()),
    ))
    .await
}

/// SVC-4.
pub async fn healthy_while_disabled(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.live_rows(cypher(
        query_file!("audit/healthy_while_disabled.cypher"),
        None,
    ))
    .await
}

/// TOOL-2.
pub async fn tools_missing_secret(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.live_rows(cypher(
        query_file!("audit/tools_missing_secret.cypher"),
        None,
    ))
    .await
}

/// SVC-3 / TOOL-1: every Tool's parameters with its Service, checked by the caller.
pub async fn tool_params(tx: &mut Tx) -> Result<Vec<ToolParams>, Error> {
    tx.live_rows(cypher(query_file!("audit/tool_params.cypher"), None))
        .await
}

/// SEC-2: Secrets without a well-formed ciphertext.
pub async fn unencrypted_secrets(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.live_rows(cypher(query_file!("audit/plaintext_secrets.cypher"), None))
        .await
}

/// WRK-1: Worker nodes of an unknown type or status, or whose `currentJobId` disagrees with it.
pub async fn bad_workers(tx: &mut Tx, types: &[&str]) -> Result<Vec<IdRow>, Error> {
    tx.live_rows(
        cypher(query_file!("audit/bad_workers.cypher"), None).param("types", types.to_vec()),
    )
    .await
}

/// USR-3: tokens without a hash or their user's HAS_TOKEN edge; users holding a token.
pub async fn bad_tokens(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.live_rows(cypher(query_file!("audit/tokens.cypher"), None))
        .await
}

/// EXEC-5: settled runs that still have a step pending, queued or running.
pub async fn unsettled_steps_of_settled_runs(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.live_rows(with_words(cypher(
        query_file!("audit/unsettled_steps_of_settled_runs.cypher"),
        None,
    )))
    .await
}

/// EXEC-5: settled runs whose event log is not exactly 1..eventSeq.
pub async fn event_gaps(tx: &mut Tx) -> Result<Vec<IdRow>, Error> {
    tx.live_rows(with_words(cypher(
        query_file!("audit/event_gaps.cypher"),
        None,
    )))
    .await
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
    /// A corrected Summary's content revision (its Episode is derived from `id#revision`).
    #[serde(default)]
    pub revision: Option<i64>,
}

pub async fn episode_identities(tx: &mut Tx) -> Result<Vec<EpisodeIdentity>, Error> {
    tx.live_rows(cypher(query_file!("audit/episode_identity.cypher"), None))
        .await
}

/// One audit whose statement returns the offending ids: its rule, its statement (run for
/// `label` where it has `__LABEL__`), and what is wrong with each id it returns.
struct IdCheck {
    invariant: &'static str,
    text: &'static str,
    label: Option<&'static str>,
    message: &'static str,
}

const fn check(invariant: &'static str, text: &'static str, message: &'static str) -> IdCheck {
    IdCheck {
        invariant,
        text,
        label: None,
        message,
    }
}

/// The conversation (TURN-1, 2, 3, 5, 6, 7), knowledge-layer (EPI-3, ENT-2, ENT-3) and
/// reference-edge (GRAPH-1..3) audits.
const ID_CHECKS: [IdCheck; 18] = [
    check(
        "ENT-5",
        query_file!("audit/entity_merges.cypher"),
        "merged Entity with edges left or no survivor listing it, or a mergedFrom uuid that is not its tombstone",
    ),
    check(
        "TURN-1",
        query_file!("audit/turn_sequence.cypher"),
        "Turn without exactly one HAS_TURN from its Conversation, or sequence is not its depth",
    ),
    check(
        "TURN-2",
        query_file!("audit/turn_active.cypher"),
        "Turn without Alternatives, or without exactly one active Alternative",
    ),
    check(
        "TURN-3",
        query_file!("audit/turn_structure.cypher"),
        "CHILD_OF / RESPONDS_TO do not point into the parent Turn of the same Conversation",
    ),
    check(
        "TURN-5",
        query_file!("audit/alternative_executed_by.cypher"),
        "agent Alternative without exactly one EXECUTED_BY, or a non-agent one with it",
    ),
    check(
        "TURN-6",
        query_file!("audit/alternative_generation.cypher"),
        "Alternative still generating although its run has settled (or has no run)",
    ),
    check(
        "TURN-7",
        query_file!("audit/alternative_content.cypher"),
        "Alternative with more than one HAS_CONTENT, or one disagreeing with its episodeId",
    ),
    check(
        "EPI-3",
        query_file!("audit/binding_state.cypher"),
        "binding state disagrees with its HAS_CONTENT edge / episodeId (or is unknown)",
    ),
    check(
        "EPI-3",
        query_file!("audit/binding_outbox.cypher"),
        "content not recorded for ingestion: no binding, or a pending binding without its outbox item",
    ),
    check(
        "ENT-2",
        query_file!("audit/active_entities.cypher"),
        "active entity not visible to the conversation's owner",
    ),
    check(
        "ENT-3",
        query_file!("audit/orphan_entities.cypher"),
        "entity mirrored from Graphiti without a MENTIONS from an Episode",
    ),
    check(
        "INT-1",
        query_file!("audit/carousel.cypher"),
        "introspection note outside the carousel, sharing a position, archived without a date, or with an Episode outside system_introspection",
    ),
    check(
        "SUM-1",
        query_file!("audit/summary_levels.cypher"),
        "Summary without sources, with a level not one above its deepest source, or not covering up to its last Alternative's Turn",
    ),
    IdCheck {
        label: Some("Alternative"),
        ..check(
            "GRAPH-1",
            query_file!("audit/generated_by.cypher"),
            "Alternative whose GENERATED_BY edge disagrees with its runId",
        )
    },
    IdCheck {
        label: Some("Summary"),
        ..check(
            "GRAPH-2",
            query_file!("audit/generated_by.cypher"),
            "Summary whose GENERATED_BY edge disagrees with its runId",
        )
    },
    check(
        "GRAPH-3",
        query_file!("audit/audit_step_run.cypher"),
        "audit record without exactly one HAS_AUDIT from the step run it names, or not an agent pipeline's",
    ),
    check(
        "EXEC-2",
        query_file!("audit/step_run_facts.cypher"),
        "step run settled by a worker without its attempts or finish time, or with retried attempts' facts out of step",
    ),
    check(
        "FORK-1",
        query_file!("audit/fork_reuse.cypher"),
        "reused step run without exactly one REUSED_FROM to the step run it names, of the same step, input hash and forked run",
    ),
];

/// Every id-row audit: `(invariant, offending ids, what is wrong)`.
pub async fn id_findings(
    tx: &mut Tx,
) -> Result<Vec<(&'static str, Vec<IdRow>, &'static str)>, Error> {
    let mut out = Vec::with_capacity(ID_CHECKS.len());
    for c in &ID_CHECKS {
        out.push((
            c.invariant,
            tx.live_rows(with_words(cypher(c.text, c.label))).await?,
            c.message,
        ));
    }
    Ok(out)
}
