//! Episode identity and content (EPI-1) and the binding lifecycle (EPI-3).
//!
//! Graphiti cannot create an Episode under a caller's uuid and has no lookup by name, so the
//! uuid is derived: `UUIDv5(EPISODE_NAMESPACE, "<kind>:<id>")`. Every retry, redelivery or
//! second worker computes the same uuid, which is what makes binding idempotent.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Fixed namespace of Aiden's Episode uuids (a v4 uuid drawn once; never change it: every
/// binding in every deployment is derived from it).
pub const EPISODE_NAMESPACE: Uuid = Uuid::from_u128(0x6a1d_e4b2_9c37_4f0e_8d25_3b71_c0a9_e5f4);

/// The most characters of content an Episode carries. Longer content is cut at a character
/// boundary and marked; the Alternative keeps its whole content (EPI-6).
pub const MAX_EPISODE_CHARS: usize = 16_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeSource {
    /// An Alternative's content (Graphiti `EpisodeType.message`).
    Message,
    /// A Summary's content (Graphiti `EpisodeType.text`, source description `summary`).
    Summary,
    /// An introspection note (`EpisodeType.text`, group `system_introspection`).
    Introspection,
    /// A memory its owner asked to keep (`EpisodeType.text`, group `memory_<ownerId>`, SRCH-4).
    Memory,
}

impl EpisodeSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Summary => "summary",
            Self::Introspection => "introspection",
            Self::Memory => "memory",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "message" | "alternative" => Some(Self::Message),
            "summary" => Some(Self::Summary),
            "introspection" => Some(Self::Introspection),
            "memory" => Some(Self::Memory),
            _ => None,
        }
    }

    /// The prefix of the Episode's name and of the uuid's seed.
    fn prefix(self) -> &'static str {
        match self {
            Self::Message => "Turn",
            Self::Summary => "Summary",
            Self::Introspection => "Introspection",
            Self::Memory => "Memory",
        }
    }
}

/// EPI-1: the Episode uuid of an Alternative (`Message`) or Summary.
pub fn episode_uuid(source: EpisodeSource, id: &str) -> String {
    let seed = format!("{}:{id}", source.prefix());
    Uuid::new_v5(&EPISODE_NAMESPACE, seed.as_bytes()).to_string()
}

/// EPI-1: the Episode name, `Turn:{alternativeId}` or `Summary:{id}`.
pub fn episode_name(source: EpisodeSource, id: &str) -> String {
    format!("{}:{id}", source.prefix())
}

/// What the ingestion worker asks Graphiti to store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct EpisodeDraft {
    pub uuid: String,
    pub name: String,
    pub group_id: String,
    pub source: &'static str,
    pub source_description: String,
    pub content: String,
    pub valid_at: String,
    /// How many characters were cut from the end (0 when the content fit).
    #[serde(skip)]
    pub truncated_chars: usize,
}

/// EPI-1, EPI-6: the Episode for a piece of content. `group_id` is the Conversation id (a fork
/// is its own group: it holds its own copies of the path, CONV-3); content is `speaker: text`
/// for an Alternative and the text for a Summary, cut to [`MAX_EPISODE_CHARS`].
pub fn draft(
    source: EpisodeSource,
    id: &str,
    conversation_id: &str,
    speaker: Option<&str>,
    text: &str,
    created_at: &str,
) -> EpisodeDraft {
    let full = match (source, speaker) {
        (EpisodeSource::Message, Some(s)) => format!("{s}: {text}"),
        _ => text.to_owned(),
    };
    let (content, truncated_chars) = cut(&full, MAX_EPISODE_CHARS);
    EpisodeDraft {
        uuid: episode_uuid(source, id),
        name: episode_name(source, id),
        group_id: conversation_id.to_owned(),
        source: match source {
            EpisodeSource::Message => "message",
            EpisodeSource::Summary | EpisodeSource::Introspection | EpisodeSource::Memory => "text",
        },
        source_description: match source {
            EpisodeSource::Message => "aiden conversation turn".to_owned(),
            EpisodeSource::Summary => "summary".to_owned(),
            EpisodeSource::Introspection => "introspection".to_owned(),
            EpisodeSource::Memory => "memory".to_owned(),
        },
        content,
        valid_at: created_at.to_owned(),
        truncated_chars,
    }
}

/// Cuts `text` to at most `max` characters (a marker included), at a character boundary.
fn cut(text: &str, max: usize) -> (String, usize) {
    let total = text.chars().count();
    if total <= max {
        return (text.to_owned(), 0);
    }
    let marker_room = 40;
    let keep = max.saturating_sub(marker_room);
    let dropped = total - keep;
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(&format!(" …[cut: {dropped} more characters]"));
    (out, dropped)
}

/// EPI-3: the binding lifecycle an Alternative or Summary shows (`binding`). `pending` from the
/// transaction that made the content; `bound` once its Episode exists and `HAS_CONTENT` points
/// at it; then `extracted` (Graphiti extracted entities), `skipped` (no extraction configured)
/// or `failed` (gave up, with the reason; the Episode stays bound when it was).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Binding {
    Pending,
    Bound,
    Extracted,
    Skipped,
    Failed,
}

impl Binding {
    pub const ALL: [Self; 5] = [
        Self::Pending,
        Self::Bound,
        Self::Extracted,
        Self::Skipped,
        Self::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Bound => "bound",
            Self::Extracted => "extracted",
            Self::Skipped => "skipped",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.as_str() == s)
    }

    /// The words of the bindings `pick` selects: a set as a statement's parameter.
    pub fn words(pick: impl Fn(Self) -> bool) -> Vec<&'static str> {
        crate::execution::schedule::words_of(&Self::ALL, pick, Self::as_str)
    }

    /// Whether nothing more will happen to it.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Extracted | Self::Skipped | Self::Failed)
    }

    /// Whether its Episode is certainly there (exactly one `HAS_CONTENT`, an `episodeId`): a
    /// failed binding may have given up before or after.
    pub fn is_bound(self) -> bool {
        matches!(self, Self::Bound | Self::Extracted | Self::Skipped)
    }
}

/// EPI-3: an outbox item's (`IngestItem`) state: `new` from the transaction that recorded the
/// content, `published` once the broker confirmed it; the item is deleted when its binding is
/// final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutboxState {
    New,
    Published,
}

impl OutboxState {
    pub const ALL: [Self; 2] = [Self::New, Self::Published];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::New => "new",
            Self::Published => "published",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epi_1_uuid_is_deterministic_and_distinct_per_kind() {
        let a = episode_uuid(EpisodeSource::Message, "alt-1");
        assert_eq!(a, episode_uuid(EpisodeSource::Message, "alt-1"));
        assert_ne!(a, episode_uuid(EpisodeSource::Message, "alt-2"));
        assert_ne!(a, episode_uuid(EpisodeSource::Summary, "alt-1"));
        let parsed = Uuid::parse_str(&a).unwrap();
        assert_eq!(parsed.get_version_num(), 5);
        assert_eq!(episode_name(EpisodeSource::Message, "alt-1"), "Turn:alt-1");
        assert_eq!(episode_name(EpisodeSource::Summary, "s"), "Summary:s");
    }

    #[test]
    fn epi_1_draft_names_group_and_content() {
        let d = draft(
            EpisodeSource::Message,
            "a",
            "conv",
            Some("user"),
            "hello",
            "2026-01-01T00:00:00.000Z",
        );
        assert_eq!(d.content, "user: hello");
        assert_eq!(d.group_id, "conv");
        assert_eq!(d.source, "message");
        assert_eq!(d.valid_at, "2026-01-01T00:00:00.000Z");
        let s = draft(EpisodeSource::Summary, "s", "conv", None, "sum", "t");
        assert_eq!((s.content.as_str(), s.source), ("sum", "text"));
        assert_eq!(s.name, "Summary:s");
    }

    #[test]
    fn epi_6_long_content_is_cut_at_a_character_boundary() {
        let text = "é".repeat(MAX_EPISODE_CHARS * 2);
        let d = draft(EpisodeSource::Summary, "s", "c", None, &text, "t");
        assert!(d.content.chars().count() <= MAX_EPISODE_CHARS);
        assert!(d.content.ends_with("more characters]"));
        assert_eq!(
            d.truncated_chars,
            MAX_EPISODE_CHARS * 2 - (MAX_EPISODE_CHARS - 40)
        );
    }

    #[test]
    fn epi_3_binding_vocabulary_round_trips() {
        for b in Binding::ALL {
            assert_eq!(Binding::parse(b.as_str()), Some(b));
        }
        assert_eq!(Binding::parse("unbound"), None);
        assert!(Binding::Skipped.is_final() && !Binding::Bound.is_final());
        assert!(Binding::Skipped.is_bound() && !Binding::Failed.is_bound());
    }
}
