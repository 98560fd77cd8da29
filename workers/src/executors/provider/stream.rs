//! Streamed answers (server-sent events), assembled the same way whatever the wire: each
//! provider's `stream_event` feeds one [`Streamed`].

use std::collections::BTreeMap;

use aiden_domain::execution::agent::parse_arguments;
use serde_json::{json, Map, Value};

/// An answer being assembled from a streamed response.
#[derive(Default)]
pub struct Streamed {
    text: String,
    /// Tool calls by their index in the answer: `(id, name, arguments as JSON text)`.
    calls: BTreeMap<u64, (String, String, String)>,
    /// `(prompt, completion)` tokens, as far as reported.
    pub usage: Option<(u64, u64)>,
    pub model: Option<String>,
}

impl Streamed {
    /// Text the answer adds; returns it for the deltas sink.
    pub(super) fn push_text(&mut self, text: &str) -> Option<String> {
        self.text.push_str(text);
        Some(text.to_owned())
    }

    /// A piece of tool call `index`: its id (set), name and arguments (appended).
    pub(super) fn call_part(
        &mut self,
        index: u64,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
    ) {
        let entry = self.calls.entry(index).or_default();
        if let Some(id) = id {
            entry.0 = id.to_owned();
        }
        if let Some(name) = name {
            entry.1.push_str(name);
        }
        if let Some(args) = arguments {
            entry.2.push_str(args);
        }
    }

    /// More of tool call `index`'s arguments, if that call has started.
    pub(super) fn call_arguments(&mut self, index: u64, arguments: Option<&str>) {
        if let Some(c) = self.calls.get_mut(&index) {
            c.2.push_str(arguments.unwrap_or_default());
        }
    }

    /// `{text, toolCalls}`, as the non-streaming answers give it.
    pub fn answer(self) -> Value {
        let calls: Vec<Value> = self
            .calls
            .into_values()
            .map(|(id, name, args)| {
                let arguments = if args.trim().is_empty() {
                    Value::Object(Map::new())
                } else {
                    parse_arguments(&Value::String(args))
                };
                json!({"id": id, "name": name, "arguments": arguments})
            })
            .collect();
        let text = (!self.text.is_empty()).then_some(self.text);
        json!({"text": text, "toolCalls": calls})
    }
}

/// The `data:` payloads of a server-sent-events body, as they complete in `buffer` (which
/// keeps any unfinished line for the next chunk).
pub fn sse_payloads(buffer: &mut String) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(end) = buffer.find('\n') {
        let line: String = buffer.drain(..=end).collect();
        let line = line.trim_end_matches(['\r', '\n']);
        if let Some(data) = line.strip_prefix("data:") {
            let data = data.trim_start();
            if data != "[DONE]" {
                if let Ok(v) = serde_json::from_str(data) {
                    out.push(v);
                }
            }
        }
    }
    out
}
