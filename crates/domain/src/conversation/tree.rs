//! The tree as clients see it, derived at read time (TURN-6): `cacheStatus` from the stored
//! lifecycle and the parent Turn's current selection, `hasChildren` from who responds to whom.
//! Nothing derived is ever stored, so nothing derived can go stale.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AltState;

/// A stored Turn.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnRow {
    pub id: String,
    pub conversation_id: String,
    pub speaker: String,
    pub turn_type: String,
    pub sequence: i64,
    pub parent_turn_id: Option<String>,
    pub via_alternative: Option<String>,
    pub timestamp: String,
}

/// A stored Alternative with its `HAS_ALTERNATIVE` edge and `EXECUTED_BY` facts.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AltRow {
    pub id: String,
    pub turn_id: String,
    pub sequence: i64,
    pub is_active: bool,
    pub content: Option<String>,
    pub created_at: String,
    pub responds_to: Option<String>,
    pub process_id: Option<String>,
    pub process_version: Option<i64>,
    pub run_id: Option<String>,
    pub state: String,
    pub episode_id: Option<String>,
    #[serde(default)]
    pub binding: Option<String>,
    #[serde(default)]
    pub bound_at: Option<String>,
    #[serde(default)]
    pub extracted_at: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CacheStatus {
    Generating,
    Stale,
    Failed,
    Valid,
}

impl CacheStatus {
    pub const ALL: [Self; 4] = [Self::Generating, Self::Stale, Self::Failed, Self::Valid];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Generating => "generating",
            Self::Stale => "stale",
            Self::Failed => "failed",
            Self::Valid => "valid",
        }
    }
}

/// TURN-6, in the rule's order: generating while its run runs; stale when what it responded
/// to is no longer on screen in the parent Turn; failed when its run failed; else valid.
pub fn cache_status(
    state: AltState,
    responds_to: Option<&str>,
    parent_active: Option<&str>,
) -> CacheStatus {
    match (state, responds_to) {
        (AltState::Generating, _) => CacheStatus::Generating,
        (_, Some(r)) if parent_active != Some(r) => CacheStatus::Stale,
        (AltState::Failed, _) => CacheStatus::Failed,
        _ => CacheStatus::Valid,
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutedBy {
    pub process_id: String,
    pub version: Option<i64>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlternativeView {
    pub id: String,
    pub turn_id: String,
    pub sequence: i64,
    pub is_active: bool,
    pub content: Option<String>,
    pub created_at: String,
    pub responds_to: Option<String>,
    pub executed_by: Option<ExecutedBy>,
    pub run_id: Option<String>,
    pub cache_status: CacheStatus,
    pub has_children: bool,
    pub episode_id: Option<String>,
    /// EPI-3: `pending | bound | extracted | skipped | failed`; null while there is no content.
    pub binding: Option<String>,
    /// When its Episode was bound, and when extraction finished or was skipped (EPI-3).
    pub bound_at: Option<String>,
    pub extracted_at: Option<String>,
    pub error: Option<Value>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnView {
    pub id: String,
    pub conversation_id: String,
    pub speaker: String,
    pub turn_type: String,
    pub sequence: i64,
    pub parent_turn_id: Option<String>,
    pub via_alternative: Option<String>,
    pub timestamp: String,
    pub alternatives: Vec<AlternativeView>,
}

/// What the derivation needs besides the rows: each Turn's active Alternative (for the parents
/// of the Turns shown) and which Alternatives something responds to.
#[derive(Debug, Default)]
pub struct Context {
    pub active_of_turn: HashMap<String, String>,
    pub responded_to: HashSet<String>,
}

impl Context {
    /// Everything needed when the rows are the whole conversation.
    pub fn of_whole(alts: &[AltRow]) -> Self {
        Self {
            active_of_turn: alts
                .iter()
                .filter(|a| a.is_active)
                .map(|a| (a.turn_id.clone(), a.id.clone()))
                .collect(),
            responded_to: alts.iter().filter_map(|a| a.responds_to.clone()).collect(),
        }
    }
}

pub fn alternative_view(a: AltRow, parent_turn: Option<&str>, ctx: &Context) -> AlternativeView {
    let parent_active = parent_turn
        .and_then(|p| ctx.active_of_turn.get(p))
        .map(String::as_str);
    let state = AltState::parse(&a.state);
    AlternativeView {
        cache_status: cache_status(state, a.responds_to.as_deref(), parent_active),
        has_children: ctx.responded_to.contains(&a.id),
        executed_by: a.process_id.map(|process_id| ExecutedBy {
            process_id,
            version: a.process_version,
        }),
        error: a
            .error
            .as_deref()
            .map(|e| serde_json::from_str(e).unwrap_or_else(|_| Value::String(e.to_owned()))),
        id: a.id,
        turn_id: a.turn_id,
        sequence: a.sequence,
        is_active: a.is_active,
        content: a.content,
        created_at: a.created_at,
        responds_to: a.responds_to,
        run_id: a.run_id,
        episode_id: a.episode_id,
        binding: a.binding,
        bound_at: a.bound_at,
        extracted_at: a.extracted_at,
    }
}

/// Turns ordered by depth then creation, each with its Alternatives in `sequence` order.
pub fn assemble(turns: Vec<TurnRow>, alts: Vec<AltRow>, ctx: &Context) -> Vec<TurnView> {
    let mut by_turn: HashMap<String, Vec<AltRow>> = HashMap::new();
    for a in alts {
        by_turn.entry(a.turn_id.clone()).or_default().push(a);
    }
    let mut views: Vec<TurnView> = turns
        .into_iter()
        .map(|t| {
            let mut alts = by_turn.remove(&t.id).unwrap_or_default();
            alts.sort_by_key(|a| a.sequence);
            let alternatives = alts
                .into_iter()
                .map(|a| alternative_view(a, t.parent_turn_id.as_deref(), ctx))
                .collect();
            TurnView {
                id: t.id,
                conversation_id: t.conversation_id,
                speaker: t.speaker,
                turn_type: t.turn_type,
                sequence: t.sequence,
                parent_turn_id: t.parent_turn_id,
                via_alternative: t.via_alternative,
                timestamp: t.timestamp,
                alternatives,
            }
        })
        .collect();
    views.sort_by(|a, b| (a.sequence, &a.timestamp, &a.id).cmp(&(b.sequence, &b.timestamp, &b.id)));
    views
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alt(id: &str, turn: &str, active: bool, responds: Option<&str>, state: &str) -> AltRow {
        AltRow {
            id: id.into(),
            turn_id: turn.into(),
            sequence: 1,
            is_active: active,
            content: Some("x".into()),
            created_at: "t".into(),
            responds_to: responds.map(Into::into),
            process_id: None,
            process_version: None,
            run_id: None,
            state: state.into(),
            episode_id: None,
            binding: None,
            bound_at: None,
            extracted_at: None,
            error: None,
        }
    }

    #[test]
    fn turn_6_cache_status_follows_the_rule_order() {
        use AltState::*;
        assert_eq!(
            cache_status(Generating, Some("a"), Some("b")),
            CacheStatus::Generating
        );
        assert_eq!(
            cache_status(Valid, Some("a"), Some("b")),
            CacheStatus::Stale
        );
        assert_eq!(
            cache_status(Failed, Some("a"), Some("a")),
            CacheStatus::Failed
        );
        assert_eq!(
            cache_status(Valid, Some("a"), Some("a")),
            CacheStatus::Valid
        );
        assert_eq!(
            cache_status(Valid, None, None),
            CacheStatus::Valid,
            "roots are never stale"
        );
    }

    #[test]
    fn turn_6_has_children_and_stale_are_derived_from_the_whole_tree() {
        let alts = vec![
            alt("a1", "t1", false, None, "valid"),
            alt("a2", "t1", true, None, "valid"),
            alt("b1", "t2", true, Some("a1"), "valid"),
        ];
        let ctx = Context::of_whole(&alts);
        let turns = vec![
            TurnRow {
                id: "t2".into(),
                conversation_id: "c".into(),
                speaker: "agent".into(),
                turn_type: "message".into(),
                sequence: 2,
                parent_turn_id: Some("t1".into()),
                via_alternative: Some("a1".into()),
                timestamp: "2".into(),
            },
            TurnRow {
                id: "t1".into(),
                conversation_id: "c".into(),
                speaker: "user".into(),
                turn_type: "message".into(),
                sequence: 1,
                parent_turn_id: None,
                via_alternative: None,
                timestamp: "1".into(),
            },
        ];
        let tree = assemble(turns, alts, &ctx);
        assert_eq!(tree[0].id, "t1");
        assert!(tree[0].alternatives[0].has_children);
        assert!(!tree[0].alternatives[1].has_children);
        assert_eq!(tree[1].alternatives[0].cache_status, CacheStatus::Stale);
    }
}
