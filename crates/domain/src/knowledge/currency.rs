//! What is current (SRCH-7): without an extraction model to invalidate facts, a rule of our
//! own. A newer message of a user supersedes the most similar older message of the same user
//! when the two are within a cosine of [`min_similarity`] and the newer one says that something
//! changed (a change cue: "moved", "switched", "no longer", …). Search then ranks the current
//! message above the one it superseded, unless the question asks about the past, and working
//! memory shows the superseded one only as history ("was: …").
//!
//! The cue lists are data (`currency_cues.json`), shared with the offline check that measures
//! the rule on the near-twin corpus (tests/knowledge/twins_corpus_check.py). A word list is a
//! heuristic: "I sold the Golf and bought a Kia" says it with other verbs and is missed; where
//! a model is configured, Graphiti's own edge invalidation is the sturdier way.

use std::sync::LazyLock;

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CueFile {
    min_similarity: f64,
    change: Vec<String>,
    past: Vec<String>,
}

/// A phrase as its words, in order.
type Phrase = Vec<String>;

struct Cues {
    min_similarity: f64,
    change: Vec<Phrase>,
    past: Vec<Phrase>,
}

static CUES: LazyLock<Cues> = LazyLock::new(|| {
    let file: CueFile = serde_json::from_str(include_str!("currency_cues.json"))
        .expect("currency_cues.json is valid (a unit test reads it)");
    let phrases = |list: Vec<String>| list.iter().map(|p| words(p)).collect();
    Cues {
        min_similarity: file.min_similarity,
        change: phrases(file.change),
        past: phrases(file.past),
    }
});

/// The cosine similarity (-1..1) at or above which a newer message can supersede an older one.
pub fn min_similarity() -> f64 {
    CUES.min_similarity
}

/// Neo4j's `vector.similarity.cosine` answers (1 + cos) / 2: [`min_similarity`] on its scale.
pub fn min_index_score() -> f64 {
    (1.0 + min_similarity()) / 2.0
}

/// Whether a newer message says that something changed, so it may supersede an older one.
/// A cue capitalised inside a sentence is part of a name ("New York", "Now TV"), not a cue.
pub fn says_change(text: &str) -> bool {
    let words = words_outside_names(text);
    contains_any(&words, &CUES.change)
}

/// Whether a question asks about the past ("where did I live before?"): then superseded
/// content keeps its own rank.
pub fn asks_about_past(question: &str) -> bool {
    contains_any(&words(question), &CUES.past)
}

/// Lower-cased words: letters, digits and apostrophes ("I'm" is one word).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Lower-cased words, a word capitalised inside a sentence (not its first) replaced by an
/// empty one, so no cue phrase matches across or within a name.
fn words_outside_names(text: &str) -> Vec<String> {
    fn flush(word: &mut String, out: &mut Vec<String>, first_of_sentence: bool) {
        let name = !first_of_sentence && word.chars().next().is_some_and(char::is_uppercase);
        out.push(if name {
            String::new()
        } else {
            word.to_lowercase()
        });
        word.clear();
    }
    let mut out = Vec::new();
    let mut first_of_sentence = true;
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() || c == '\'' || c == '’' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            flush(&mut word, &mut out, first_of_sentence);
            first_of_sentence = false;
        }
        if matches!(c, '.' | '!' | '?' | ';' | ':' | '\n') {
            first_of_sentence = true;
        }
    }
    if !word.is_empty() {
        flush(&mut word, &mut out, first_of_sentence);
    }
    out
}

fn contains_any(words: &[String], phrases: &[Phrase]) -> bool {
    phrases
        .iter()
        .any(|p| !p.is_empty() && words.windows(p.len()).any(|w| w == p.as_slice()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srch_7_a_change_cue_is_a_whole_word_or_phrase() {
        assert!(says_change("I moved from Lisbon to Porto last month."));
        assert!(says_change("I no longer eat meat"));
        assert!(says_change("These days I cycle to work"));
        assert!(!says_change("I live in Lisbon."));
        // Not inside another word: "renewed" holds "new", "nowhere" holds "now".
        assert!(!says_change("I renewed my passport and went nowhere"));
        // A capitalised word inside a sentence is a name: "New York" is no news.
        assert!(!says_change(
            "My manager is Tom and he's based in New York."
        ));
        assert!(!says_change("I watch films on Now TV"));
        assert!(says_change("New job: I started at Unilever."));
        assert!(says_change("I live in Lisbon. Now I live in Porto."));
        // A phrase is its words in order, not each word anywhere.
        assert!(!says_change("No trip is longer than this one"));
    }

    #[test]
    fn srch_7_a_question_about_the_past_is_told_from_one_about_now() {
        assert!(asks_about_past("Where did I live before?"));
        assert!(asks_about_past("Which carrier was I with previously"));
        assert!(asks_about_past("What gym did I use to go to?"));
        assert!(!asks_about_past("Which city is my home at the moment?"));
        assert!(!asks_about_past("Who is my dentist these days?"));
    }

    #[test]
    fn srch_7_the_threshold_is_a_cosine_and_its_index_score() {
        assert!((0.0..1.0).contains(&min_similarity()));
        assert!((min_index_score() - (1.0 + min_similarity()) / 2.0).abs() < 1e-12);
    }
}
