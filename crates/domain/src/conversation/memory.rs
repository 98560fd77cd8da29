//! Working memory (WM-1..3), computed at read time from one traversal: the path of exact
//! `RESPONDS_TO` parents from an Alternative back to the root, with the deepest Summary that
//! covers part of that path standing in for the covered part.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::execution::budget::estimate_text_tokens;
use crate::knowledge::recall::Retrieved;
use crate::knowledge::EntityReference;
use crate::Error;

/// One Alternative on the path, as the traversal returns it.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathRow {
    pub alternative_id: String,
    pub turn_id: String,
    pub conversation_id: String,
    pub speaker: String,
    pub content: Option<String>,
    pub episode_id: Option<String>,
    #[serde(default)]
    pub binding: Option<String>,
    pub sequence: i64,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRow {
    pub id: String,
    pub conversation_id: String,
    pub content: String,
    pub covers_up_to_turn_id: String,
    pub compression_level: i64,
    pub token_count: i64,
    /// The Alternatives and Summaries it summarizes (Episodes are not listed: they carry no
    /// branch). A Summary speaks for a path only if all of these lie on it.
    #[serde(default)]
    pub alternative_sources: Vec<String>,
    #[serde(default)]
    pub summary_sources: Vec<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathEntry {
    pub turn_id: String,
    pub alternative_id: String,
    pub speaker: String,
    pub content: Option<String>,
    pub episode_id: Option<String>,
    pub binding: Option<String>,
    pub sequence: i64,
    pub tokens: u64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummaryEntry {
    pub id: String,
    pub content: String,
    pub covers_up_to_turn_id: String,
    pub compression_level: i64,
    pub token_count: i64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkingMemory {
    pub conversation_id: String,
    pub current_turn_id: Option<String>,
    pub current_alternative_id: Option<String>,
    pub immediate_path: Vec<PathEntry>,
    pub summaries: Vec<SummaryEntry>,
    /// Chosen (`HAS_ACTIVE_ENTITY`) and path-mentioned Entities.
    pub active_entities: Vec<EntityReference>,
    /// The owner's introspection carousel (user-scoped, INT-1), by position.
    pub introspection_context: Vec<IntrospectionRef>,
    /// Memories and knowledge most similar to the message the path ends with, from the owner's
    /// other conversations (and this one's path only: SRCH-3), by similarity, token-limited.
    pub retrieved_context: Vec<Retrieved>,
    pub total_tokens: u64,
    pub last_updated: String,
}

/// A current carousel note as working memory carries it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IntrospectionRef {
    pub id: String,
    pub carousel_position: i64,
    pub content: String,
    pub episode_id: Option<String>,
    pub tokens: u64,
}

/// Assembles the view. `path` is every Alternative from the current one back to the root (any
/// order); `summaries` are the conversation's Summaries.
pub fn assemble(
    conversation_id: &str,
    path: Vec<PathRow>,
    summaries: Vec<SummaryRow>,
    last_updated: String,
) -> Result<WorkingMemory, Error> {
    // WM-3: everything referenced belongs to this conversation.
    if let Some(foreign) = path.iter().find(|p| p.conversation_id != conversation_id) {
        return Err(Error::invariant(
            "WM-3",
            "/alternativeId",
            // Worded as for an id that does not exist (OWN-2: no hint that it does).
            format!(
                "`{}` is not part of this conversation",
                foreign.alternative_id
            ),
        ));
    }
    let mut path = path;
    path.sort_by_key(|p| p.sequence);
    let current = path
        .last()
        .map(|p| (p.turn_id.clone(), p.alternative_id.clone()));
    let depth_of: HashMap<&str, i64> = path
        .iter()
        .map(|p| (p.turn_id.as_str(), p.sequence))
        .collect();
    let on_path: HashSet<&str> = path.iter().map(|p| p.alternative_id.as_str()).collect();
    let by_id: HashMap<&str, &SummaryRow> = summaries.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut memo = HashMap::new();
    let applicable: HashSet<String> = summaries
        .iter()
        .filter(|s| speaks_for(s, &on_path, &by_id, &mut memo))
        .map(|s| s.id.clone())
        .collect();
    // WM-3: the deepest Summary covering a Turn on this path, made from this path, replaces the
    // path up to that Turn.
    let cover = summaries
        .into_iter()
        .filter(|s| s.conversation_id == conversation_id && applicable.contains(&s.id))
        .filter_map(|s| {
            depth_of
                .get(s.covers_up_to_turn_id.as_str())
                .map(|d| (*d, s))
        })
        .max_by_key(|(d, s)| (*d, s.compression_level));
    let covered_to = cover.as_ref().map_or(0, |(d, _)| *d);
    let immediate_path: Vec<PathEntry> = path
        .into_iter()
        .filter(|p| p.sequence > covered_to)
        .map(|p| PathEntry {
            tokens: p.content.as_deref().map_or(0, estimate_text_tokens),
            turn_id: p.turn_id,
            alternative_id: p.alternative_id,
            speaker: p.speaker,
            content: p.content,
            episode_id: p.episode_id,
            binding: p.binding,
            sequence: p.sequence,
        })
        .collect();
    let summaries: Vec<SummaryEntry> = cover
        .into_iter()
        .map(|(_, s)| SummaryEntry {
            id: s.id,
            content: s.content,
            covers_up_to_turn_id: s.covers_up_to_turn_id,
            compression_level: s.compression_level,
            token_count: s.token_count,
        })
        .collect();
    // WM-2: path + summaries (+ entities, introspection and retrieved context, added after).
    let total_tokens = immediate_path.iter().map(|p| p.tokens).sum::<u64>()
        + summaries
            .iter()
            .map(|s| s.token_count.max(0) as u64)
            .sum::<u64>();
    Ok(WorkingMemory {
        conversation_id: conversation_id.to_owned(),
        current_turn_id: current.as_ref().map(|c| c.0.clone()),
        current_alternative_id: current.map(|c| c.1),
        immediate_path,
        summaries,
        active_entities: Vec::new(),
        introspection_context: Vec::new(),
        retrieved_context: Vec::new(),
        total_tokens,
        last_updated,
    })
}

/// How many of the path's latest Alternatives lend their mentioned Entities to working memory.
pub const MENTION_WINDOW: usize = 100;

impl WorkingMemory {
    /// The `(alternativeId, depth)` of the path entries whose Episodes were extracted, latest
    /// [`MENTION_WINDOW`] only: where mentioned Entities come from.
    pub fn extracted_positions(&self) -> Vec<(String, i64)> {
        let extracted: Vec<&PathEntry> = self
            .immediate_path
            .iter()
            .filter(|p| p.binding.as_deref() == Some("extracted"))
            .collect();
        let skip = extracted.len().saturating_sub(MENTION_WINDOW);
        extracted
            .into_iter()
            .skip(skip)
            .map(|p| (p.alternative_id.clone(), p.sequence))
            .collect()
    }

    /// The current Turn's depth (0 for an empty path).
    pub fn depth(&self) -> i64 {
        self.immediate_path.last().map_or(0, |p| p.sequence)
    }

    /// WM-2: the introspection notes join the view and their tokens the total.
    pub fn with_introspections(mut self, notes: Vec<IntrospectionRef>) -> Self {
        self.total_tokens += notes.iter().map(|n| n.tokens).sum::<u64>();
        self.introspection_context = notes;
        self
    }

    /// WM-2: retrieved context joins the view and its tokens the total.
    pub fn with_retrieved(mut self, items: Vec<Retrieved>) -> Self {
        self.total_tokens += items.iter().map(|r| r.tokens).sum::<u64>();
        self.retrieved_context = items;
        self
    }

    /// WM-2: the active entities join the view and their tokens the total.
    pub fn with_entities(mut self, refs: Vec<EntityReference>) -> Self {
        self.total_tokens += refs.iter().map(|r| r.tokens).sum::<u64>();
        self.active_entities = refs;
        self
    }
}

/// Whether a Summary was made from this path: its Alternatives lie on it and its Summaries do
/// too, recursively. A Summary of another branch never stands in for this one.
fn speaks_for<'a>(
    s: &'a SummaryRow,
    on_path: &HashSet<&str>,
    by_id: &HashMap<&str, &'a SummaryRow>,
    memo: &mut HashMap<&'a str, bool>,
) -> bool {
    if let Some(known) = memo.get(s.id.as_str()) {
        return *known;
    }
    memo.insert(&s.id, false); // a cycle cannot speak for anything
    let ok = s
        .alternative_sources
        .iter()
        .all(|a| on_path.contains(a.as_str()))
        && s.summary_sources.iter().all(|id| {
            by_id
                .get(id.as_str())
                .is_some_and(|inner| speaks_for(inner, on_path, by_id, memo))
        });
    memo.insert(&s.id, ok);
    ok
}

/// SUM-1: one level above the deepest source (an Alternative or Episode is level 0).
pub fn compression_level(source_levels: &[i64]) -> Result<i64, Error> {
    source_levels.iter().max().map(|m| m + 1).ok_or_else(|| {
        Error::invariant(
            "SUM-1",
            "/sources",
            "a Summary summarizes at least one source",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seq: i64, content: &str) -> PathRow {
        PathRow {
            alternative_id: format!("a{seq}"),
            turn_id: format!("t{seq}"),
            conversation_id: "c".into(),
            speaker: "user".into(),
            content: Some(content.into()),
            episode_id: None,
            binding: None,
            sequence: seq,
        }
    }

    fn summary(id: &str, upto: i64, level: i64, tokens: i64) -> SummaryRow {
        SummaryRow {
            id: id.into(),
            conversation_id: "c".into(),
            content: "s".into(),
            covers_up_to_turn_id: format!("t{upto}"),
            compression_level: level,
            token_count: tokens,
            alternative_sources: Vec::new(),
            summary_sources: Vec::new(),
        }
    }

    #[test]
    fn wm_1_path_is_ordered_root_first_and_ends_at_the_current_alternative() {
        let wm = assemble(
            "c",
            vec![row(3, "c"), row(1, "a"), row(2, "b")],
            vec![],
            "t".into(),
        )
        .unwrap();
        let seqs: Vec<i64> = wm.immediate_path.iter().map(|p| p.sequence).collect();
        assert_eq!(seqs, [1, 2, 3]);
        assert_eq!(wm.current_alternative_id.as_deref(), Some("a3"));
    }

    #[test]
    fn wm_2_total_tokens_sums_path_and_summaries() {
        let wm = assemble(
            "c",
            vec![row(1, "12345"), row(2, "1234")],
            vec![],
            "t".into(),
        )
        .unwrap();
        assert_eq!(wm.total_tokens, 2 + 1);
        let wm = assemble(
            "c",
            vec![row(1, "12345"), row(2, "1234")],
            vec![summary("s", 1, 1, 7)],
            "t".into(),
        )
        .unwrap();
        assert_eq!(wm.total_tokens, 7 + 1);
    }

    #[test]
    fn wm_3_the_deepest_covering_summary_replaces_the_covered_path() {
        let path = vec![row(1, "a"), row(2, "b"), row(3, "c"), row(4, "d")];
        let sums = vec![
            summary("s1", 2, 1, 3),
            summary("s2", 3, 2, 4),
            summary("off-path", 9, 5, 1),
        ];
        let wm = assemble("c", path, sums, "t".into()).unwrap();
        assert_eq!(wm.summaries.len(), 1);
        assert_eq!(wm.summaries[0].id, "s2");
        let seqs: Vec<i64> = wm.immediate_path.iter().map(|p| p.sequence).collect();
        assert_eq!(seqs, [4]);
    }

    #[test]
    fn wm_3_a_summary_of_another_branch_does_not_stand_in_for_this_one() {
        let path = vec![row(1, "a"), row(2, "b"), row(3, "c")];
        let mut mine = summary("mine", 1, 1, 3);
        mine.alternative_sources = vec!["a1".into()];
        let mut theirs = summary("theirs", 2, 1, 3);
        theirs.alternative_sources = vec!["a1".into(), "other-branch".into()];
        let mut on_theirs = summary("on-theirs", 2, 2, 3);
        on_theirs.summary_sources = vec!["theirs".into()];
        let wm = assemble("c", path, vec![mine, theirs, on_theirs], "t".into()).unwrap();
        assert_eq!(wm.summaries[0].id, "mine");
        let seqs: Vec<i64> = wm.immediate_path.iter().map(|p| p.sequence).collect();
        assert_eq!(seqs, [2, 3]);
    }

    #[test]
    fn wm_3_rejects_a_path_from_another_conversation() {
        let mut r = row(1, "a");
        r.conversation_id = "other".into();
        let e = assemble("c", vec![r], vec![], "t".into()).unwrap_err();
        assert_eq!(e.details()[0].invariant, Some("WM-3"));
    }

    #[test]
    fn sum_1_level_is_one_above_the_deepest_source() {
        assert_eq!(compression_level(&[0, 2, 1]).unwrap(), 3);
        assert_eq!(
            compression_level(&[]).unwrap_err().details()[0].invariant,
            Some("SUM-1")
        );
    }
}
