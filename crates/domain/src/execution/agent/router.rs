//! The router (AGT-15, the pipeline's first stage): before the loop, the message is classified into
//! one of the agent step's declared intents, and the policy gate offers the model only the tools
//! that intent names. The classification is one model turn with no tools that answers `{"intent",
//! "confidence"}`; a message starting with an intent's `prefix` (`/search …`) skips it. An answer
//! that does not parse, names no declared intent, or is less confident than `minConfidence` routes
//! to the fallback intent: the router can narrow what the model may call, never widen it past the
//! step's declared tools.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::Violations;
use crate::Id;

/// `agent.router` of an agent step (part of the Process definition, so versioned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RouterSpec {
    #[schemars(length(min = 1, max = 20))]
    pub intents: Vec<Intent>,
    /// The intent an unusable classification routes to; the first intent when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// A classification less confident than this routes to the fallback.
    #[serde(default = "default_min_confidence")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_confidence: f64,
}

fn default_min_confidence() -> f64 {
    0.5
}

/// One intent: what it is for (shown to the router) and the tools it may use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Intent {
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]{0,39}$"))]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 500))]
    pub description: Option<String>,
    /// A subset of the step's `agent.tools`; none: the model answers without tools.
    #[serde(default)]
    pub tools: Vec<Id>,
    /// A fast path: a message starting with this word is routed here without a model turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^/[a-z0-9_-]{1,31}$"))]
    pub prefix: Option<String>,
    /// What the intent does with the user's memory: recall it before the first turn
    /// (SRCH-5) or keep the message as a Memory (SRCH-4); none: nothing beyond the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryUse>,
}

/// The router's memory intents (SRCH-4, SRCH-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryUse {
    /// A pre-fetch (SRCH-5): before the model's turn, the intent's one Tool (of operation type
    /// `recall`) runs with the message as its query, and its hits join the prompt's layer 4;
    /// the model is offered no tool.
    Read,
    /// A post-hook (SRCH-4): when the step completes, the user's message is kept as a Memory
    /// of the run's owner, ingested and recalled like their other content.
    Write,
}

/// How the router decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RouteSource {
    /// The message started with the intent's prefix.
    Prefix,
    /// The model classified the message.
    Model,
    /// The classification was unusable (or the router turn failed): the fallback intent.
    Fallback,
}

/// The router's decision, kept in the loop's state and its pipeline audit record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Routed {
    pub intent: String,
    pub confidence: f64,
    pub source: RouteSource,
}

impl RouterSpec {
    /// AGT-15 (def): intents are named once, with well-formed names and prefixes; their
    /// tools are among the step's declared ones; the fallback is one of them.
    pub fn check(&self, path: &str, declared: &[Id], v: &mut Violations) {
        if self.intents.is_empty() || self.intents.len() > 20 {
            v.rule("AGT-15", format!("{path}/intents"), "1-20 intents");
        }
        if !(0.0..=1.0).contains(&self.min_confidence) {
            v.rule("AGT-15", format!("{path}/minConfidence"), "must be 0-1");
        }
        for (k, intent) in self.intents.iter().enumerate() {
            let here = format!("{path}/intents/{k}");
            let earlier = &self.intents[..k];
            let well_formed = word(&intent.name, 40)
                && !intent.name.contains('-')
                && intent.name.starts_with(|c: char| c.is_ascii_lowercase());
            if !well_formed {
                v.rule(
                    "AGT-15",
                    format!("{here}/name"),
                    "an intent name is 1-40 of a-z, 0-9 and '_', starting with a letter",
                );
            } else if earlier.iter().any(|i| i.name == intent.name) {
                let message = format!("`{}` is named twice", intent.name);
                v.rule("AGT-15", format!("{here}/name"), message);
            }
            if intent.description.as_ref().is_some_and(|d| d.len() > 500) {
                let at = format!("{here}/description");
                v.rule("AGT-15", at, "at most 500 characters");
            }
            if let Some(p) = &intent.prefix {
                if !p.strip_prefix('/').is_some_and(|w| word(w, 31)) {
                    v.rule(
                        "AGT-15",
                        format!("{here}/prefix"),
                        "a prefix is '/' and 1-31 of a-z, 0-9, '_' or '-'",
                    );
                } else if earlier.iter().any(|i| i.prefix == intent.prefix) {
                    v.rule(
                        "AGT-15",
                        format!("{here}/prefix"),
                        format!("`{p}` is used twice"),
                    );
                }
            }
            if intent.memory == Some(MemoryUse::Read) && intent.tools.len() != 1 {
                v.rule(
                    "SRCH-5",
                    format!("{here}/tools"),
                    "a `memory: read` intent names exactly one Tool: the recall Tool it pre-fetches with",
                );
            }
            for (j, tool) in intent.tools.iter().enumerate() {
                if !declared.contains(tool) {
                    v.rule(
                        "AGT-15",
                        format!("{here}/tools/{j}"),
                        format!("`{tool}` is not one of the agent's tools"),
                    );
                }
            }
        }
        if let Some(f) = self
            .fallback
            .as_deref()
            .filter(|f| self.intent(f).is_none())
        {
            let message = format!("`{f}` is not one of the intents");
            v.rule("AGT-15", format!("{path}/fallback"), message);
        }
    }

    pub fn intent(&self, name: &str) -> Option<&Intent> {
        self.intents.iter().find(|i| i.name == name)
    }

    /// The intent an unusable classification routes to.
    pub fn fallback(&self) -> &Intent {
        self.fallback
            .as_deref()
            .and_then(|f| self.intent(f))
            .unwrap_or(&self.intents[0])
    }

    /// The fast path: the intent whose prefix `message` starts with (as a whole word), and the
    /// message without it.
    pub fn by_prefix(&self, message: &str) -> Option<(Routed, String)> {
        let trimmed = message.trim_start();
        self.intents.iter().find_map(|i| {
            let p = i.prefix.as_deref()?;
            let rest = trimmed.strip_prefix(p)?;
            if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
                return None;
            }
            let routed = Routed {
                intent: i.name.clone(),
                confidence: 1.0,
                source: RouteSource::Prefix,
            };
            Some((routed, rest.trim_start().to_owned()))
        })
    }

    /// The router turn's request: the intents and the message, no tools.
    pub fn request(&self, message: &str) -> Value {
        let list: Vec<String> = self
            .intents
            .iter()
            .map(|i| match &i.description {
                Some(d) => format!("- {}: {d}", i.name),
                None => format!("- {}", i.name),
            })
            .collect();
        let system = format!(
            "You are the intent router of an AI assistant. Classify the user's message into \
             exactly one of these intents:\n{}\n\nAnswer with one JSON object and nothing \
             else: {{\"intent\": \"<one of the names above>\", \"confidence\": <a number from 0 \
             to 1>}}",
            list.join("\n")
        );
        json!({"messages": [{"role": "system", "content": system},
                            {"role": "user", "content": message}],
               "tools": []})
    }

    /// The router turn's answer as a decision (`None`: the turn failed).
    pub fn read(&self, answer: Option<&str>) -> Routed {
        let fallback = || Routed {
            intent: self.fallback().name.clone(),
            confidence: 0.0,
            source: RouteSource::Fallback,
        };
        let Some(v) = answer.and_then(json_object) else {
            return fallback();
        };
        let confidence = v["confidence"].as_f64().unwrap_or(0.0).clamp(0.0, 1.0);
        match v["intent"].as_str().and_then(|n| self.intent(n)) {
            Some(i) if confidence >= self.min_confidence => Routed {
                intent: i.name.clone(),
                confidence,
                source: RouteSource::Model,
            },
            _ => Routed {
                confidence,
                ..fallback()
            },
        }
    }
}

/// 1-`max` of a-z, 0-9, '_' and '-' (names and prefixes).
fn word(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// The first JSON object in `text` (models wrap JSON in prose or code fences).
fn json_object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    serde_json::from_str::<Value>(text.get(start..=end)?)
        .ok()
        .filter(Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> Id {
        Id::parse(s).unwrap()
    }

    fn spec() -> RouterSpec {
        serde_json::from_value(json!({
            "intents": [
                {"name": "chat_only", "description": "small talk"},
                {"name": "lookup_search", "description": "current facts", "tools": ["search"],
                 "prefix": "/search"}
            ],
            "fallback": "chat_only"
        }))
        .unwrap()
    }

    #[test]
    fn agt_15_intents_are_checked_against_the_declared_tools() {
        let mut v = Violations::default();
        spec().check("/steps/0/agent/router", &[id("search")], &mut v);
        assert!(v.into_vec().is_empty());
        let bad: RouterSpec = serde_json::from_value(json!({
            "intents": [
                {"name": "Chat", "tools": ["mail"]},
                {"name": "look", "prefix": "search"},
                {"name": "look", "prefix": "/s"},
                {"name": "x", "prefix": "/s"}
            ],
            "fallback": "nope", "minConfidence": 2.0
        }))
        .unwrap();
        let mut v = Violations::default();
        bad.check("/r", &[id("search")], &mut v);
        let got: Vec<(Option<&str>, String)> = v
            .into_vec()
            .into_iter()
            .map(|x| (x.invariant, x.path))
            .collect();
        let want = [
            "/r/minConfidence",
            "/r/intents/0/name",
            "/r/intents/0/tools/0",
            "/r/intents/1/prefix",
            "/r/intents/2/name",
            "/r/intents/3/prefix",
            "/r/fallback",
        ];
        assert_eq!(
            got,
            want.map(|p| (Some("AGT-15"), p.to_owned())).to_vec(),
            "each problem named, with its path"
        );
    }

    #[test]
    fn srch_5_a_memory_read_intent_names_exactly_one_tool() {
        let r: RouterSpec = serde_json::from_value(json!({
            "intents": [
                {"name": "memory_read", "memory": "read"},
                {"name": "memory_write", "memory": "write", "prefix": "/remember"},
                {"name": "recall_all", "memory": "read", "tools": ["search"]}
            ]
        }))
        .unwrap();
        let mut v = Violations::default();
        r.check("/r", &[id("search")], &mut v);
        let got: Vec<_> = v
            .into_vec()
            .into_iter()
            .map(|x| (x.invariant, x.path))
            .collect();
        assert_eq!(got, [(Some("SRCH-5"), "/r/intents/0/tools".to_owned())]);
        assert!(serde_json::from_value::<RouterSpec>(json!({
            "intents": [{"name": "x", "memory": "forget"}]
        }))
        .is_err());
    }

    #[test]
    fn agt_15_a_prefix_routes_without_the_model_as_a_whole_word() {
        let r = spec();
        let (route, rest) = r.by_prefix("  /search rust 2026").unwrap();
        assert_eq!(
            (route.intent.as_str(), route.source, rest.as_str()),
            ("lookup_search", RouteSource::Prefix, "rust 2026")
        );
        assert!(r.by_prefix("/searching for it").is_none());
        assert!(r.by_prefix("hello /search").is_none());
    }

    #[test]
    fn agt_15_the_model_classifies_and_anything_unusable_falls_back() {
        let r = spec();
        let req = r.request("what is new in rust?");
        assert_eq!(req["tools"], json!([]));
        let system = req["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.contains("- lookup_search: current facts"),
            "{system}"
        );
        assert_eq!(req["messages"][1]["content"], "what is new in rust?");
        let read = |a: Option<&str>| {
            let x = r.read(a);
            (x.intent, x.source)
        };
        let model = RouteSource::Model;
        let fallback = RouteSource::Fallback;
        assert_eq!(
            read(Some(
                "Sure: ```json\n{\"intent\": \"lookup_search\", \"confidence\": 0.9}\n```"
            )),
            ("lookup_search".into(), model)
        );
        for unusable in [
            Some(r#"{"intent": "lookup_search", "confidence": 0.2}"#),
            Some(r#"{"intent": "delete_everything", "confidence": 1}"#),
            Some("lookup_search"),
            None,
        ] {
            assert_eq!(
                read(unusable),
                ("chat_only".into(), fallback),
                "{unusable:?}"
            );
        }
    }
}
