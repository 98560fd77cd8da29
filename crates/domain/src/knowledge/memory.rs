//! Memories (SRCH-4): what a user asked to keep ("remember that …"), through an agent step
//! routed to a `memory: write` intent or `POST /v1/memories`. A Memory is its owner's alone,
//! ingested into Graphiti in their own group (`memory_<ownerId>`), embedded like any content,
//! and found by search and retrieved context from any of their conversations until forgotten.

use serde::Deserialize;

use crate::error::Violations;
use crate::Error;

/// The most characters a memory keeps.
pub const MAX_MEMORY_CHARS: usize = 2000;

/// `POST /v1/memories`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewMemory {
    #[schemars(length(min = 1, max = 2000))]
    pub content: String,
}

/// SRCH-4: a memory is 1 to [`MAX_MEMORY_CHARS`] characters that are not all blank.
pub fn check_new_memory(m: &NewMemory) -> Result<(), Error> {
    let mut v = Violations::default();
    let n = m.content.trim().chars().count();
    if n == 0 || n > MAX_MEMORY_CHARS {
        let message = format!("1 to {MAX_MEMORY_CHARS} characters, not all blank");
        v.rule("SRCH-4", "/content", message);
    }
    v.into_result()
}

/// What an agent step's `memory: write` intent keeps: the message it answered, cut to
/// [`MAX_MEMORY_CHARS`]; none when the message is blank.
pub fn from_message(message: &str) -> Option<String> {
    let text = message.trim();
    (!text.is_empty()).then(|| text.chars().take(MAX_MEMORY_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srch_4_a_memory_is_one_to_two_thousand_characters() {
        let bad = |content: String| {
            let err = check_new_memory(&NewMemory { content }).unwrap_err();
            err.details()
                .iter()
                .map(|v| (v.invariant, v.path.clone()))
                .collect::<Vec<_>>()
        };
        for content in ["   ".to_owned(), "x".repeat(2001)] {
            assert_eq!(bad(content), [(Some("SRCH-4"), "/content".to_owned())]);
        }
        let ok = NewMemory {
            content: "My sister Ines lives in Porto".into(),
        };
        assert!(check_new_memory(&ok).is_ok());
        assert_eq!(from_message("  hi  ").as_deref(), Some("hi"));
        assert_eq!(from_message(" \n"), None);
        assert_eq!(
            from_message(&"é".repeat(3000)).unwrap().chars().count(),
            2000
        );
    }
}
