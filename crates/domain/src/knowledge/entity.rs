//! Entities (docs/domain.md, "Knowledge"): the user-created kind (ENT-1) and the
//! `activeEntities` of working memory — user-chosen ones plus those mentioned on the active
//! path — with their relevance and token cost (WM-2).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::execution::budget::estimate_text_tokens;
use crate::Error;

/// The categories an Entity may have (`category`), beside its free `facets`.
pub const CATEGORIES: [&str; 7] = [
    "Person",
    "Organization",
    "Project",
    "Concept",
    "Object",
    "Event",
    "Place",
];
pub const MAX_NAME_CHARS: usize = 200;
pub const MAX_SUMMARY_CHARS: usize = 4_000;
/// At most this many entities enter working memory (the most relevant first).
pub const MAX_ACTIVE_ENTITIES: usize = 50;

/// `POST /v1/entities`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewEntity {
    pub name: String,
    pub summary: String,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub facets: Option<BTreeMap<String, Vec<String>>>,
}

/// ENT-1: a user-created Entity has a name and a basic summary, and a category from the faceted
/// type system when it has one. Every violation at once.
pub fn check_new_entity(e: &NewEntity) -> Result<(), Error> {
    let mut v = Vec::new();
    let text = |path: &str, value: &str, max: usize, v: &mut Vec<crate::Violation>| {
        if value.trim().is_empty() {
            v.push(crate::Violation::rule(
                "ENT-1",
                path,
                "a user-created entity needs it (non-empty)",
            ));
        } else if value.chars().count() > max {
            v.push(crate::Violation::field(
                path,
                format!("longer than {max} characters"),
            ));
        }
    };
    text("/name", &e.name, MAX_NAME_CHARS, &mut v);
    text("/summary", &e.summary, MAX_SUMMARY_CHARS, &mut v);
    if let Some(c) = &e.category {
        if !CATEGORIES.contains(&c.as_str()) {
            v.push(crate::Violation::rule(
                "ENT-1",
                "/category",
                format!("must be one of {}", CATEGORIES.join(", ")),
            ));
        }
    }
    if v.is_empty() {
        Ok(())
    } else if v.iter().all(|x| x.invariant.is_none()) {
        Err(Error::Validation(v))
    } else {
        Err(Error::Invariant(v))
    }
}

/// `PUT /v1/conversations/{id}/entities/{uuid}`: what of the entity working memory includes.
#[derive(Debug, Clone, Copy, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActiveEntityFlags {
    pub include_summary: Option<bool>,
    pub include_facets: Option<bool>,
    pub include_relationships: Option<bool>,
}

impl ActiveEntityFlags {
    /// Summary in, facets and relationships out, unless asked.
    pub fn resolved(self) -> (bool, bool, bool) {
        (
            self.include_summary.unwrap_or(true),
            self.include_facets.unwrap_or(false),
            self.include_relationships.unwrap_or(false),
        )
    }
}

/// An Entity as working memory needs it.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntityFacts {
    pub uuid: String,
    pub name: String,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub category: Option<String>,
    /// JSON text of the facets object.
    #[serde(default)]
    pub facets: Option<String>,
    /// `user` or `graphiti` (who made it first).
    pub source: String,
    /// The facts of its relationships (`RELATES_TO.fact`).
    #[serde(default)]
    pub facts: Vec<String>,
}

/// A `HAS_ACTIVE_ENTITY` edge: chosen by the user, with its flags.
#[derive(Debug, Clone)]
pub struct ChosenEntity {
    pub entity: EntityFacts,
    pub added_at: String,
    pub include_summary: bool,
    pub include_facets: bool,
    pub include_relationships: bool,
}

/// An Entity mentioned by an Episode bound to an Alternative on the path, at that depth.
#[derive(Debug, Clone)]
pub struct MentionedEntity {
    pub entity: EntityFacts,
    /// The deepest path position (Turn sequence) whose Episode mentions it.
    pub sequence: i64,
    /// When that Episode was bound (the mention's `addedAt`).
    pub mentioned_at: String,
}

/// An Entity as working memory's `activeEntities` holds it, plus the tokens it adds to
/// `totalTokens` (WM-2).
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntityReference {
    pub entity_uuid: String,
    pub name: String,
    pub category: Option<String>,
    pub relevance_score: f64,
    pub source: String,
    pub added_at: String,
    pub include_summary: bool,
    pub include_facets: bool,
    pub include_relationships: bool,
    pub tokens: u64,
}

/// WM-2: what an entity costs: its name, plus its summary, facets and relationship facts as
/// its flags include them.
pub fn entity_tokens(e: &EntityFacts, summary: bool, facets: bool, relationships: bool) -> u64 {
    let mut text = e.name.clone();
    if summary {
        if let Some(s) = &e.summary {
            text.push_str(": ");
            text.push_str(s);
        }
    }
    if facets {
        if let Some(f) = &e.facets {
            text.push(' ');
            text.push_str(f);
        }
    }
    if relationships {
        for f in &e.facts {
            text.push('\n');
            text.push_str(f);
        }
    }
    estimate_text_tokens(&text)
}

/// The relevance of a mention at depth `sequence` on a path `depth` deep: 0.5 for the root,
/// rising linearly to 1.0 for the current Turn (recency along the branch in view). A chosen
/// entity is always 1.0: the user put it there.
pub fn mention_relevance(sequence: i64, depth: i64) -> f64 {
    if depth <= 0 {
        return 0.5;
    }
    let r = 0.5 + 0.5 * (sequence.clamp(0, depth) as f64 / depth as f64);
    (r * 1000.0).round() / 1000.0
}

/// `activeEntities`: chosen ones (relevance 1.0, their own flags) first, then entities
/// mentioned on the path that were not chosen (summary included), most relevant first, at most
/// [`MAX_ACTIVE_ENTITIES`]. `depth` is the current Turn's sequence.
pub fn active_entities(
    chosen: Vec<ChosenEntity>,
    mentioned: Vec<MentionedEntity>,
    depth: i64,
) -> Vec<EntityReference> {
    let mut out: Vec<EntityReference> = chosen
        .into_iter()
        .map(|c| EntityReference {
            tokens: entity_tokens(
                &c.entity,
                c.include_summary,
                c.include_facets,
                c.include_relationships,
            ),
            entity_uuid: c.entity.uuid,
            name: c.entity.name,
            category: c.entity.category,
            relevance_score: 1.0,
            source: c.entity.source,
            added_at: c.added_at,
            include_summary: c.include_summary,
            include_facets: c.include_facets,
            include_relationships: c.include_relationships,
        })
        .collect();
    let mut best: BTreeMap<String, MentionedEntity> = BTreeMap::new();
    for m in mentioned {
        if out.iter().any(|c| c.entity_uuid == m.entity.uuid) {
            continue;
        }
        match best.get(&m.entity.uuid) {
            Some(b) if b.sequence >= m.sequence => {}
            _ => {
                best.insert(m.entity.uuid.clone(), m);
            }
        }
    }
    let mut rest: Vec<EntityReference> = best
        .into_values()
        .map(|m| EntityReference {
            tokens: entity_tokens(&m.entity, true, false, false),
            relevance_score: mention_relevance(m.sequence, depth),
            entity_uuid: m.entity.uuid,
            name: m.entity.name,
            category: m.entity.category,
            source: m.entity.source,
            added_at: m.mentioned_at,
            include_summary: true,
            include_facets: false,
            include_relationships: false,
        })
        .collect();
    rest.sort_by(|a, b| {
        b.relevance_score
            .total_cmp(&a.relevance_score)
            .then_with(|| a.name.cmp(&b.name))
    });
    out.extend(rest);
    out.truncate(MAX_ACTIVE_ENTITIES);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(uuid: &str, name: &str) -> EntityFacts {
        EntityFacts {
            uuid: uuid.into(),
            name: name.into(),
            summary: Some("a summary of twenty!".into()),
            category: Some("Person".into()),
            facets: Some(r#"{"domain":["technical"]}"#.into()),
            source: "graphiti".into(),
            facts: vec!["Ada knows Charles".into()],
        }
    }

    #[test]
    fn ent_1_name_and_summary_are_required_and_category_is_faceted() {
        let e = NewEntity {
            name: " ".into(),
            summary: "".into(),
            category: Some("Dragon".into()),
            facets: None,
        };
        let err = check_new_entity(&e).unwrap_err();
        let paths: Vec<_> = err.details().iter().map(|v| v.path.as_str()).collect();
        assert_eq!(paths, ["/name", "/summary", "/category"]);
        assert!(err.details().iter().all(|v| v.invariant == Some("ENT-1")));
        let ok = NewEntity {
            name: "Ada".into(),
            summary: "a mathematician".into(),
            category: Some("Person".into()),
            facets: None,
        };
        assert!(check_new_entity(&ok).is_ok());
    }

    #[test]
    fn wm_2_entity_tokens_follow_the_include_flags() {
        let e = facts("u", "Ada");
        let name_only = entity_tokens(&e, false, false, false);
        let with_summary = entity_tokens(&e, true, false, false);
        let all = entity_tokens(&e, true, true, true);
        assert_eq!(name_only, 1);
        assert!(name_only < with_summary && with_summary < all);
    }

    #[test]
    fn chosen_entities_come_first_and_mentions_rank_by_depth() {
        let chosen = vec![ChosenEntity {
            entity: facts("c", "Chosen"),
            added_at: "t".into(),
            include_summary: false,
            include_facets: false,
            include_relationships: false,
        }];
        let mention = |uuid: &str, name: &str, seq: i64| MentionedEntity {
            entity: facts(uuid, name),
            sequence: seq,
            mentioned_at: "t".into(),
        };
        let mentioned = vec![
            mention("root", "Root", 1),
            mention("deep", "Deep", 4),
            mention("root", "Root", 2),
            mention("c", "Chosen", 4),
        ];
        let refs = active_entities(chosen, mentioned, 4);
        let names: Vec<_> = refs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["Chosen", "Deep", "Root"]);
        assert_eq!(refs[0].relevance_score, 1.0);
        assert_eq!(refs[1].relevance_score, 1.0);
        assert_eq!(refs[2].relevance_score, 0.75);
        assert_eq!(refs[0].tokens, 2); // "Chosen": its name only
    }
}
