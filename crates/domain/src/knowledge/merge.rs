//! ENT-5: a user's Entity and an Entity Graphiti extracted of the same thing become one (seed
//! 001: "merge on name + summary similarity (~0.85), user-provided name first, all sources kept,
//! references moved to the merged uuid"). Candidates are pairs whose names are the same or one
//! contains the other, ignoring case (the graph finds them); this decides which pairs merge:
//! those whose `name: summary` texts are at least [`MERGE_SIMILARITY`] alike, each extracted
//! Entity into its most similar user Entity. Pure: the service embeds, the graph merges.

use serde::Deserialize;

/// The least cosine similarity of two Entities' `name: summary` texts that makes them one.
pub const MERGE_SIMILARITY: f64 = 0.85;

/// A pair the graph found: an extracted Entity and a user Entity of the same owner whose names
/// match.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub extracted: String,
    pub extracted_name: String,
    pub extracted_summary: String,
    pub user: String,
    pub user_name: String,
    pub user_summary: String,
}

impl Candidate {
    pub fn extracted_text(&self) -> String {
        text(&self.extracted_name, &self.extracted_summary)
    }

    pub fn user_text(&self) -> String {
        text(&self.user_name, &self.user_summary)
    }
}

/// What is compared: the name and, when there is one, the summary.
pub fn text(name: &str, summary: &str) -> String {
    match summary.trim() {
        "" => name.trim().to_owned(),
        s => format!("{}: {s}", name.trim()),
    }
}

/// The cosine similarity of two vectors (0 when either is empty or zero, or their lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let n = norm(a) * norm(b);
    if n == 0.0 {
        0.0
    } else {
        dot / n
    }
}

/// One merge: `merged` (extracted) into `survivor` (the user's, whose uuid and name stay).
#[derive(Debug, Clone, PartialEq)]
pub struct Merge {
    pub survivor: String,
    pub merged: String,
    pub similarity: f64,
}

/// The merges among `candidates`, `similarity[i]` being candidate i's: each extracted Entity at
/// most once, into the user Entity it is most similar to (ties: the smaller uuid), if at least
/// `threshold`.
pub fn choose(candidates: &[Candidate], similarity: &[f64], threshold: f64) -> Vec<Merge> {
    let mut best: Vec<Merge> = Vec::new();
    for (c, &s) in candidates.iter().zip(similarity) {
        if s < threshold {
            continue;
        }
        match best.iter_mut().find(|m| m.merged == c.extracted) {
            Some(m) if s > m.similarity || (s == m.similarity && c.user < m.survivor) => {
                m.survivor.clone_from(&c.user);
                m.similarity = s;
            }
            Some(_) => {}
            None => best.push(Merge {
                survivor: c.user.clone(),
                merged: c.extracted.clone(),
                similarity: s,
            }),
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(extracted: &str, user: &str) -> Candidate {
        Candidate {
            extracted: extracted.into(),
            extracted_name: "Grace Hopper".into(),
            extracted_summary: "A computer scientist.".into(),
            user: user.into(),
            user_name: "Grace".into(),
            user_summary: " ".into(),
        }
    }

    #[test]
    fn ent_5_each_extracted_entity_merges_once_into_its_most_similar_user_entity() {
        let c = [
            pair("x1", "u2"),
            pair("x1", "u1"),
            pair("x2", "u1"),
            pair("x3", "u3"),
        ];
        let got = choose(&c, &[0.9, 0.95, 0.86, 0.84], MERGE_SIMILARITY);
        let pairs: Vec<(&str, &str)> = got
            .iter()
            .map(|m| (m.merged.as_str(), m.survivor.as_str()))
            .collect();
        assert_eq!(pairs, [("x1", "u1"), ("x2", "u1")], "x3 is below 0.85");
        // A tie goes to the smaller uuid, whatever the order.
        let tie = choose(&[pair("x", "u9"), pair("x", "u1")], &[0.9, 0.9], 0.85);
        assert_eq!(tie[0].survivor, "u1");
    }

    #[test]
    fn cosine_of_equal_orthogonal_and_misfit_vectors() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn ent_5_the_compared_text_is_the_name_and_the_summary_when_there_is_one() {
        let c = pair("x", "u");
        assert_eq!(c.extracted_text(), "Grace Hopper: A computer scientist.");
        assert_eq!(c.user_text(), "Grace");
    }
}
