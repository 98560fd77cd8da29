//! AGT-13's post-hook: the memories an answer proposes, with anything that looks sensitive
//! dropped rather than proposed.

use serde_json::Value;

/// The memory post-hook (AGT-13): what an answer proposes to remember. The structured form first
/// (the answer is `{"content", "memory_suggestions": [...]}`), else `[REMEMBER: …]` tags, which are
/// cut from the text. At most 5 suggestions of at most 200 characters; one that looks sensitive (a
/// password, secret, key, token, credential, or a long opaque string) is dropped, never proposed.
/// Returns the text to show, the suggestions and how many were dropped.
pub fn memory_suggestions(answer: &str) -> (String, Vec<String>, usize) {
    let structured = serde_json::from_str::<Value>(answer.trim())
        .ok()
        .filter(|v| v["content"].is_string());
    let (text, raw): (String, Vec<String>) = match structured {
        Some(v) => (
            v["content"].as_str().unwrap_or_default().to_owned(),
            v["memory_suggestions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect(),
        ),
        None => {
            let mut text = String::new();
            let mut found = Vec::new();
            let mut rest = answer;
            while let Some(start) = rest.find("[REMEMBER:") {
                let Some(len) = rest[start..].find(']') else {
                    break;
                };
                text.push_str(&rest[..start]);
                found.push(rest[start + "[REMEMBER:".len()..start + len].to_owned());
                rest = &rest[start + len + 1..];
            }
            text.push_str(rest);
            (text.trim().to_owned(), found)
        }
    };
    let mut kept = Vec::new();
    let mut dropped = 0;
    for s in raw.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        if s.chars().count() > 200 || looks_sensitive(s) {
            dropped += 1;
        } else if kept.len() < 5 {
            kept.push(s.to_owned());
        }
    }
    (text, kept, dropped)
}

fn looks_sensitive(s: &str) -> bool {
    let lower = s.to_lowercase();
    let words = [
        "password",
        "secret",
        "api key",
        "api_key",
        "api-key",
        "token",
        "credential",
    ];
    words.iter().any(|w| lower.contains(w))
        || s.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|run| run.len() >= 32)
}
