//! Built-in measurements: the engine, which sees every step result and run outcome,
//! counts them in memory and writes one MetricValue per entity, metric and outcome per interval
//! (a minute by default), so measuring costs one graph statement a minute rather than one a step.
//! A pass's counts join the rollup only once the pass has committed; an engine that dies loses
//! at most one interval of counts (the run graph keeps the exact history).

use std::collections::BTreeMap;

use aiden_graph::measurements::BuiltinValue;

/// The built-in definitions: (id, name, scope, dataType, aggregation, description).
pub const DEFINITIONS: [(&str, &str, &str, &str, &str, &str); 5] = [
    ("aiden-tool-calls", "aiden.tool.calls", "tool", "integer", "sum",
     "Calls of the Tool per interval, by outcome (dimension `outcome`: completed, retrying, failed)"),
    ("aiden-tool-latency", "aiden.tool.latency_ms", "tool", "float", "avg",
     "Mean latency of the Tool's calls in the interval, in ms (dimension `calls`: how many)"),
    ("aiden-process-runs", "aiden.process.runs", "process", "integer", "sum",
     "Runs of the Process settled per interval, by outcome (completed, failed, canceled)"),
    ("aiden-process-tokens", "aiden.process.tokens", "process", "integer", "sum",
     "Model tokens the Process's runs used per interval"),
    ("aiden-conversation-tokens", "aiden.conversation.tokens", "conversation", "integer", "sum",
     "Model tokens the Conversation's agent turns used per interval"),
];

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Rollup {
    /// (tool, outcome) → calls.
    tool_calls: BTreeMap<(String, &'static str), u64>,
    /// tool → (latency sum ms, calls with a latency).
    tool_latency: BTreeMap<String, (f64, u64)>,
    /// (process, outcome) → runs.
    process_runs: BTreeMap<(String, &'static str), u64>,
    process_tokens: BTreeMap<String, u64>,
    /// Agent Alternative → tokens (its Conversation is found when written).
    alternative_tokens: BTreeMap<String, u64>,
}

impl Rollup {
    pub fn step(&mut self, tool: &str, outcome: &'static str, latency_ms: Option<f64>) {
        *self
            .tool_calls
            .entry((tool.to_owned(), outcome))
            .or_default() += 1;
        if let Some(ms) = latency_ms {
            let e = self.tool_latency.entry(tool.to_owned()).or_default();
            e.0 += ms;
            e.1 += 1;
        }
    }

    pub fn tokens(&mut self, process: &str, alternative: Option<&str>, tokens: u64) {
        if tokens == 0 {
            return;
        }
        *self.process_tokens.entry(process.to_owned()).or_default() += tokens;
        if let Some(alt) = alternative {
            *self.alternative_tokens.entry(alt.to_owned()).or_default() += tokens;
        }
    }

    pub fn run_settled(&mut self, process: &str, outcome: &'static str) {
        *self
            .process_runs
            .entry((process.to_owned(), outcome))
            .or_default() += 1;
    }

    pub fn merge(&mut self, other: Rollup) {
        for (k, v) in other.tool_calls {
            *self.tool_calls.entry(k).or_default() += v;
        }
        for (k, (sum, n)) in other.tool_latency {
            let e = self.tool_latency.entry(k).or_default();
            e.0 += sum;
            e.1 += n;
        }
        for (k, v) in other.process_runs {
            *self.process_runs.entry(k).or_default() += v;
        }
        for (k, v) in other.process_tokens {
            *self.process_tokens.entry(k).or_default() += v;
        }
        for (k, v) in other.alternative_tokens {
            *self.alternative_tokens.entry(k).or_default() += v;
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Rollup::default()
    }

    /// The values to write, stamped `at` (epoch ms) / `timestamp`.
    pub fn values(&self, at: i64, timestamp: &str) -> Vec<BuiltinValue> {
        let mut out = Vec::new();
        let mut push = |metric: &str,
                        scope: &'static str,
                        entity: &str,
                        number: f64,
                        integer: bool,
                        dims: serde_json::Value| {
            out.push(BuiltinValue {
                id: uuid::Uuid::now_v7().to_string(),
                metric_id: metric.to_owned(),
                scope,
                entity_id: entity.to_owned(),
                value: if integer {
                    (number as i64).to_string()
                } else {
                    number.to_string()
                },
                number,
                at,
                timestamp: timestamp.to_owned(),
                dimensions: dims.to_string(),
            });
        };
        for ((tool, outcome), n) in &self.tool_calls {
            push(
                "aiden-tool-calls",
                "tool",
                tool,
                *n as f64,
                true,
                serde_json::json!({"outcome": outcome}),
            );
        }
        for (tool, (sum, n)) in &self.tool_latency {
            if *n > 0 {
                let mean = (sum / *n as f64 * 1000.0).round() / 1000.0;
                push(
                    "aiden-tool-latency",
                    "tool",
                    tool,
                    mean,
                    false,
                    serde_json::json!({"calls": n}),
                );
            }
        }
        for ((process, outcome), n) in &self.process_runs {
            push(
                "aiden-process-runs",
                "process",
                process,
                *n as f64,
                true,
                serde_json::json!({"outcome": outcome}),
            );
        }
        for (process, n) in &self.process_tokens {
            push(
                "aiden-process-tokens",
                "process",
                process,
                *n as f64,
                true,
                serde_json::json!({}),
            );
        }
        for (alt, n) in &self.alternative_tokens {
            push(
                "aiden-conversation-tokens",
                "alternative",
                alt,
                *n as f64,
                true,
                serde_json::json!({}),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_merge_and_become_one_value_per_entity_metric_and_outcome() {
        let mut a = Rollup::default();
        a.step("t", "completed", Some(10.0));
        a.step("t", "failed", Some(30.0));
        a.run_settled("p", "completed");
        a.tokens("p", Some("alt"), 7);
        let mut b = Rollup::default();
        b.step("t", "completed", Some(20.0));
        b.tokens("p", None, 3);
        b.tokens("p", None, 0);
        a.merge(b);
        let values = a.values(1, "t0");
        let find = |metric: &str, dims: &str| {
            values
                .iter()
                .find(|v| v.metric_id == metric && v.dimensions == dims)
                .map(|v| v.value.clone())
        };
        assert_eq!(
            find("aiden-tool-calls", r#"{"outcome":"completed"}"#).as_deref(),
            Some("2")
        );
        assert_eq!(
            find("aiden-tool-calls", r#"{"outcome":"failed"}"#).as_deref(),
            Some("1")
        );
        assert_eq!(
            find("aiden-tool-latency", r#"{"calls":3}"#).as_deref(),
            Some("20")
        );
        assert_eq!(
            find("aiden-process-runs", r#"{"outcome":"completed"}"#).as_deref(),
            Some("1")
        );
        assert_eq!(find("aiden-process-tokens", "{}").as_deref(), Some("10"));
        assert_eq!(
            find("aiden-conversation-tokens", "{}").as_deref(),
            Some("7")
        );
        assert_eq!(values.len(), 6);
        assert!(Rollup::default().is_empty() && !a.is_empty());
    }
}
