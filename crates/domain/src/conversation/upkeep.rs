//! Memory upkeep: the settings and their rules (MEM-1..5), which span a compression
//! covers (MEM-6), which carousel position an introspection replaces (INT-1), and what an
//! enrichment may write (ENT-4). Pure: the service loads the facts and applies the result.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::memory::WorkingMemory;
use crate::error::Violation;
use crate::Error;

/// The graph settings of memory upkeep (`GET/PATCH /v1/settings`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemorySettings {
    /// Working memory (path + summaries) above this many tokens starts a compression (MEM-1).
    pub compression_token_budget: i64,
    /// How many of the path's latest entries a compression leaves as they are (MEM-1).
    pub compression_keep_recent: i64,
    /// Compressions in a conversation that start an introspection (MEM-2, 1..20).
    pub introspection_compression_threshold: i64,
    /// Carousel positions per user (MEM-3, INT-1).
    pub max_rotation: i64,
    /// MENTIONS of an Entity that start its enrichment (MEM-4).
    pub enrichment_edge_threshold: i64,
    /// The Processes the three loops run; null turns a loop off (MEM-5).
    pub compression_process_id: Option<String>,
    pub introspection_process_id: Option<String>,
    pub enrichment_process_id: Option<String>,
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            compression_token_budget: 16_000,
            compression_keep_recent: 4,
            introspection_compression_threshold: 5,
            max_rotation: 10,
            enrichment_edge_threshold: 5,
            compression_process_id: Some("process-compress-context".into()),
            introspection_process_id: Some("process-introspect".into()),
            enrichment_process_id: Some("process-enrich-entity".into()),
        }
    }
}

/// The schema of a numeric setting or its override: the range the server enforces (MEM-1..4),
/// or null. So a request the document calls valid is never refused for its number.
macro_rules! setting_schema {
    ($name:ident, $min:expr, $max:expr) => {
        pub fn $name(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
            schemars::json_schema!({"type": ["integer", "null"], "minimum": $min, "maximum": $max})
        }
    };
}
setting_schema!(budget_schema, BUDGET_RANGE.0, BUDGET_RANGE.1);
setting_schema!(keep_schema, 1, 100);
setting_schema!(threshold_schema, 1, 20);
setting_schema!(rotation_schema, 1, 50);
setting_schema!(edges_schema, 1, 1_000);

/// `PATCH /v1/settings`. Numbers arrive as any JSON so that a wrong type is refused with the
/// rule's ID, like a wrong range.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingsPatch {
    #[serde(default)]
    #[schemars(schema_with = "budget_schema")]
    pub compression_token_budget: Option<Value>,
    #[serde(default)]
    #[schemars(schema_with = "keep_schema")]
    pub compression_keep_recent: Option<Value>,
    #[serde(default)]
    #[schemars(schema_with = "threshold_schema")]
    pub introspection_compression_threshold: Option<Value>,
    #[serde(default)]
    #[schemars(schema_with = "rotation_schema")]
    pub max_rotation: Option<Value>,
    #[serde(default)]
    #[schemars(schema_with = "edges_schema")]
    pub enrichment_edge_threshold: Option<Value>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub compression_process_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub introspection_process_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub enrichment_process_id: Option<Option<String>>,
}

/// The ranges of the numeric settings: (rule, field, min, max).
pub const BUDGET_RANGE: (i64, i64) = (200, 10_000_000);
const NUMBERS: [(&str, &str, i64, i64); 5] = [
    (
        "MEM-1",
        "compressionTokenBudget",
        BUDGET_RANGE.0,
        BUDGET_RANGE.1,
    ),
    ("MEM-1", "compressionKeepRecent", 1, 100),
    ("MEM-2", "introspectionCompressionThreshold", 1, 20),
    ("MEM-3", "maxRotation", 1, 50),
    ("MEM-4", "enrichmentEdgeThreshold", 1, 1_000),
];

/// An integer within `min..=max`, or the rule's violation (a string, a fraction, out of range).
pub fn bounded(
    rule: &'static str,
    field: &str,
    v: &Value,
    min: i64,
    max: i64,
) -> Result<i64, Violation> {
    match v.as_i64() {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(Violation::rule(
            rule,
            format!("/{field}"),
            format!("must be an integer from {min} to {max}, not {v}"),
        )),
    }
}

/// MEM-1..4: the patched settings, or every violation at once. The Process ids (MEM-5) are
/// checked by the service, which can read them.
pub fn patch_settings(
    current: &MemorySettings,
    p: &SettingsPatch,
) -> Result<MemorySettings, Error> {
    let mut next = current.clone();
    let mut violations = Vec::new();
    let [budget, keep, threshold, rotation, edges] = NUMBERS;
    number(
        &p.compression_token_budget,
        budget,
        &mut next.compression_token_budget,
        &mut violations,
    );
    number(
        &p.compression_keep_recent,
        keep,
        &mut next.compression_keep_recent,
        &mut violations,
    );
    number(
        &p.introspection_compression_threshold,
        threshold,
        &mut next.introspection_compression_threshold,
        &mut violations,
    );
    number(
        &p.max_rotation,
        rotation,
        &mut next.max_rotation,
        &mut violations,
    );
    number(
        &p.enrichment_edge_threshold,
        edges,
        &mut next.enrichment_edge_threshold,
        &mut violations,
    );
    for (slot, given) in [
        (&mut next.compression_process_id, &p.compression_process_id),
        (
            &mut next.introspection_process_id,
            &p.introspection_process_id,
        ),
        (&mut next.enrichment_process_id, &p.enrichment_process_id),
    ] {
        if let Some(v) = given {
            *slot = v.clone();
        }
    }
    if violations.is_empty() {
        Ok(next)
    } else {
        Err(Error::Invariant(violations))
    }
}

fn number(
    given: &Option<Value>,
    (rule, field, min, max): (&'static str, &str, i64, i64),
    target: &mut i64,
    violations: &mut Vec<Violation>,
) {
    if let Some(v) = given {
        match bounded(rule, field, v, min, max) {
            Ok(n) => *target = n,
            Err(e) => violations.push(e),
        }
    }
}

/// What a compression run is given and what its Summary will record (MEM-6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompressionSpan {
    /// In order: the Summary it extends (if one covers the path's start), then Alternatives.
    pub sources: Vec<String>,
    pub covers_up_to_turn_id: String,
    /// `speaker: content` lines (the extended Summary's text first).
    pub transcript: String,
    /// Tokens of what it replaces.
    pub tokens: u64,
}

/// MEM-6: the span to compress, when the path and summaries of `wm` exceed `budget`: the
/// Summary standing in for the path's start (if any) and the oldest path entries, leaving at
/// least `keep_recent` entries, and no more than needed to bring what stays under half the
/// budget. It stops before an entry without final content (an answer still generating), so a
/// Summary never stands in for text that is not there yet. None when nothing can be compressed.
pub fn plan_compression(
    wm: &WorkingMemory,
    budget: u64,
    keep_recent: usize,
) -> Option<CompressionSpan> {
    let path_tokens: u64 = wm.immediate_path.iter().map(|p| p.tokens).sum();
    let summary_tokens: u64 = wm
        .summaries
        .iter()
        .map(|s| s.token_count.max(0) as u64)
        .sum();
    if path_tokens + summary_tokens <= budget {
        return None;
    }
    let eligible = wm.immediate_path.len().saturating_sub(keep_recent);
    let mut remaining = path_tokens;
    let mut take = 0;
    for p in wm.immediate_path.iter().take(eligible) {
        if p.content.is_none() || remaining <= budget / 2 {
            break;
        }
        remaining -= p.tokens;
        take += 1;
    }
    if take == 0 {
        return None;
    }
    let mut sources = Vec::with_capacity(take + 1);
    let mut transcript = String::new();
    let mut tokens = 0;
    if let Some(s) = wm.summaries.first() {
        sources.push(s.id.clone());
        transcript.push_str(&format!("Summary of what came before:\n{}\n\n", s.content));
        tokens += s.token_count.max(0) as u64;
    }
    for p in &wm.immediate_path[..take] {
        sources.push(p.alternative_id.clone());
        transcript.push_str(&format!(
            "{}: {}\n",
            p.speaker,
            p.content.as_deref().unwrap_or("")
        ));
        tokens += p.tokens;
    }
    Some(CompressionSpan {
        sources,
        covers_up_to_turn_id: wm.immediate_path[take - 1].turn_id.clone(),
        transcript,
        tokens,
    })
}

/// A current carousel note, as the position choice needs it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Slot {
    pub carousel_position: i64,
    pub created_at: String,
}

/// INT-1: the position a new note takes: the lowest free one in `[0, max_rotation-1]`, else
/// the oldest note's (its note is archived).
pub fn next_position(current: &[Slot], max_rotation: i64) -> i64 {
    let taken: std::collections::HashSet<i64> =
        current.iter().map(|s| s.carousel_position).collect();
    (0..max_rotation)
        .find(|p| !taken.contains(p))
        .or_else(|| {
            current
                .iter()
                .filter(|s| (0..max_rotation).contains(&s.carousel_position))
                .min_by(|a, b| {
                    (&a.created_at, a.carousel_position).cmp(&(&b.created_at, b.carousel_position))
                })
                .map(|s| s.carousel_position)
        })
        .unwrap_or(0)
}

/// INT-1: a position a client names must lie in the carousel.
pub fn check_position(position: i64, max_rotation: i64) -> Result<i64, Error> {
    if (0..max_rotation).contains(&position) {
        Ok(position)
    } else {
        Err(Error::invariant(
            "INT-1",
            "/carouselPosition",
            format!("must be from 0 to {}", max_rotation - 1),
        ))
    }
}

/// What an enrichment run found: a summary and facets with confidences.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Enrichment {
    pub summary: String,
    /// `{facet: {values: [string], confidence: 0..1}}`.
    pub facets: Map<String, Value>,
}

/// Reads a run's output as an enrichment: an object `{summary, facets}` (facets as
/// `{name: {values|value, confidence}}` or `{name: [values]}`), JSON text of one, or plain text
/// (a summary without facets). Confidences are clamped to 0..1 (0.5 when absent).
pub fn parse_enrichment(output: &Value) -> Option<Enrichment> {
    let obj = match output {
        Value::Object(m) => m.clone(),
        Value::String(s) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(Value::Object(m)) => m,
            _ if !s.trim().is_empty() => {
                return Some(Enrichment {
                    summary: s.trim().to_owned(),
                    facets: Map::new(),
                })
            }
            _ => return None,
        },
        _ => return None,
    };
    let summary = obj
        .get("summary")
        .or_else(|| obj.get("text"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_owned();
    let mut facets = Map::new();
    for (name, f) in obj
        .get("facets")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let (values, confidence) = match f {
            Value::Array(vs) => (vs.clone(), None),
            Value::Object(o) => (
                match o.get("values").or_else(|| o.get("value")) {
                    Some(Value::Array(vs)) => vs.clone(),
                    Some(v) => vec![v.clone()],
                    None => Vec::new(),
                },
                o.get("confidence").and_then(Value::as_f64),
            ),
            v => (vec![v.clone()], None),
        };
        let values: Vec<Value> = values
            .into_iter()
            .filter_map(|v| match v {
                Value::String(s) if !s.trim().is_empty() => Some(Value::String(s)),
                Value::Number(n) => Some(Value::String(n.to_string())),
                _ => None,
            })
            .collect();
        if values.is_empty() {
            continue;
        }
        let confidence = confidence.unwrap_or(0.5).clamp(0.0, 1.0);
        facets.insert(
            name.clone(),
            serde_json::json!({"values": values, "confidence": confidence}),
        );
    }
    (!summary.is_empty() || !facets.is_empty()).then_some(Enrichment { summary, facets })
}

/// ENT-4: the Entity's facets after an enrichment: every value it had stays, found values are
/// added (`{name: [string]}`, ENT-1's shape).
pub fn merge_facets(
    existing: &Map<String, Value>,
    found: &Map<String, Value>,
) -> Map<String, Value> {
    let mut out = existing.clone();
    for (name, f) in found {
        let slot = out
            .entry(name.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !slot.is_array() {
            *slot = Value::Array(vec![slot.clone()]);
        }
        let list = slot.as_array_mut().expect("made an array above");
        for v in f
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !list.contains(v) {
                list.push(v.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::memory::{PathEntry, SummaryEntry};
    use serde_json::json;

    fn wm(entries: &[(&str, u64)], summary: Option<u64>) -> WorkingMemory {
        WorkingMemory {
            conversation_id: "c".into(),
            current_turn_id: None,
            current_alternative_id: None,
            immediate_path: entries
                .iter()
                .enumerate()
                .map(|(i, (text, tokens))| PathEntry {
                    turn_id: format!("t{i}"),
                    alternative_id: format!("a{i}"),
                    speaker: "user".into(),
                    content: (!text.is_empty()).then(|| text.to_string()),
                    episode_id: None,
                    binding: None,
                    sequence: i as i64 + 1,
                    tokens: *tokens,
                })
                .collect(),
            summaries: summary
                .map(|t| SummaryEntry {
                    id: "s".into(),
                    content: "before".into(),
                    covers_up_to_turn_id: "t-1".into(),
                    compression_level: 1,
                    token_count: t as i64,
                })
                .into_iter()
                .collect(),
            active_entities: Vec::new(),
            introspection_context: Vec::new(),
            retrieved_context: Vec::new(),
            total_tokens: 0,
            last_updated: String::new(),
        }
    }

    #[test]
    fn mem_1_to_4_refuse_zero_too_many_and_strings_with_the_rule() {
        let s = MemorySettings::default();
        let p: SettingsPatch = serde_json::from_value(json!({
            "introspectionCompressionThreshold": 0, "maxRotation": "ten",
            "enrichmentEdgeThreshold": 2.5, "compressionTokenBudget": 10}))
        .unwrap();
        let e = patch_settings(&s, &p).unwrap_err();
        let ids: Vec<_> = e
            .details()
            .iter()
            .map(|v| (v.invariant, v.path.clone()))
            .collect();
        assert!(ids.contains(&(Some("MEM-2"), "/introspectionCompressionThreshold".into())));
        assert!(ids.contains(&(Some("MEM-3"), "/maxRotation".into())));
        assert!(ids.contains(&(Some("MEM-4"), "/enrichmentEdgeThreshold".into())));
        assert!(ids.contains(&(Some("MEM-1"), "/compressionTokenBudget".into())));
        let p: SettingsPatch =
            serde_json::from_value(json!({"introspectionCompressionThreshold": 21})).unwrap();
        assert_eq!(
            patch_settings(&s, &p).unwrap_err().details()[0].invariant,
            Some("MEM-2")
        );
    }

    #[test]
    fn mem_settings_patch_changes_only_what_it_names() {
        let s = MemorySettings::default();
        let p: SettingsPatch = serde_json::from_value(json!({
            "introspectionCompressionThreshold": 20, "maxRotation": 3,
            "enrichmentProcessId": null}))
        .unwrap();
        let n = patch_settings(&s, &p).unwrap();
        assert_eq!(n.introspection_compression_threshold, 20);
        assert_eq!(n.max_rotation, 3);
        assert_eq!(n.enrichment_process_id, None);
        assert_eq!(n.compression_token_budget, s.compression_token_budget);
        assert_eq!(n.compression_process_id, s.compression_process_id);
    }

    #[test]
    fn mem_6_nothing_to_do_under_the_budget() {
        assert_eq!(
            plan_compression(&wm(&[("a", 10), ("b", 10)], None), 100, 1),
            None
        );
    }

    #[test]
    fn mem_6_compresses_the_oldest_entries_and_keeps_the_recent_ones() {
        let w = wm(
            &[("a", 40), ("b", 40), ("c", 40), ("d", 40), ("e", 40)],
            None,
        );
        let span = plan_compression(&w, 100, 2).unwrap();
        // 200 tokens: drop a, b, c (then 80 ≤ 50? no; but only 3 are eligible).
        assert_eq!(span.sources, ["a0", "a1", "a2"]);
        assert_eq!(span.covers_up_to_turn_id, "t2");
        assert_eq!(span.tokens, 120);
        assert!(span.transcript.starts_with("user: a\n"));
        // It stops once what stays is under half the budget.
        let span = plan_compression(&w, 180, 1).unwrap();
        assert_eq!(span.sources, ["a0", "a1", "a2"]);
    }

    #[test]
    fn mem_6_extends_the_summary_in_place_and_stops_before_a_generating_answer() {
        let w = wm(&[("a", 100), ("", 0), ("c", 100), ("d", 10)], Some(50));
        let span = plan_compression(&w, 100, 1).unwrap();
        assert_eq!(span.sources, ["s", "a0"]);
        assert!(span
            .transcript
            .starts_with("Summary of what came before:\nbefore"));
        assert_eq!(span.tokens, 150);
        // Only recent entries left: nothing to compress whatever the total.
        assert_eq!(plan_compression(&wm(&[("x", 500)], None), 100, 1), None);
    }

    #[test]
    fn int_1_fills_free_positions_then_replaces_the_oldest() {
        let slot = |p, at: &str| Slot {
            carousel_position: p,
            created_at: at.into(),
        };
        assert_eq!(next_position(&[], 3), 0);
        assert_eq!(next_position(&[slot(0, "2"), slot(2, "1")], 3), 1);
        assert_eq!(
            next_position(&[slot(0, "2"), slot(1, "3"), slot(2, "1")], 3),
            2
        );
        assert!(check_position(3, 3).is_err());
        assert_eq!(check_position(2, 3).unwrap(), 2);
    }

    #[test]
    fn ent_4_enrichment_only_adds_facet_values() {
        let found = parse_enrichment(&json!(
            r#"{"summary": "A mathematician.", "facets": {"field": {"values": ["maths"], "confidence": 1.7}, "era": ["19th c."]}}"#
        ))
        .unwrap();
        assert_eq!(found.summary, "A mathematician.");
        assert_eq!(found.facets["field"]["confidence"], 1.0);
        assert_eq!(found.facets["era"]["confidence"], 0.5);
        let existing = json!({"field": ["poetry"], "kept": ["x"]});
        let merged = merge_facets(existing.as_object().unwrap(), &found.facets);
        assert_eq!(merged["field"], json!(["poetry", "maths"]));
        assert_eq!(merged["kept"], json!(["x"]));
        assert_eq!(merged["era"], json!(["19th c."]));
        assert_eq!(
            parse_enrichment(&json!("plain words")).unwrap().summary,
            "plain words"
        );
        assert_eq!(parse_enrichment(&json!("  ")), None);
    }
}
