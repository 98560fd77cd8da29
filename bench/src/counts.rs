//! Graph statements and broker messages per step: the stack's own Prometheus
//! counters, scraped from `aiden serve` and the worker pool before and after a scenario.
//! Statements: `aiden_graph_statement_seconds_count{file}` (every statement that succeeded);
//! messages: `aiden_broker_publish_seconds_count` (confirmed) + `aiden_broker_unconfirmed_total`;
//! graph commits (`aiden_graph_commits_total`); engine passes and the passes redone after a
//! write conflict, as totals.

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// Counter values by series, summed over every scraped process.
#[derive(Default)]
pub struct Counts {
    statements: BTreeMap<String, f64>,
    /// Seconds spent in those statements (round trip), by file.
    statement_seconds: BTreeMap<String, f64>,
    messages: BTreeMap<String, f64>,
    /// Graph records written: `nodes_created`, `edges_created`, `nodes_updated`.
    records: BTreeMap<String, f64>,
    /// Engine passes committed, and passes redone after a write conflict.
    passes: f64,
    retries: f64,
    /// Passes whose commit ran beside the next pass, and passes done in line (`pipeline`).
    pipelined: f64,
    in_line: f64,
    commits: f64,
}

/// `name{labels} value` → (labels, value) when the line is a sample of `name`.
fn sample<'a>(line: &'a str, name: &str) -> Option<(&'a str, f64)> {
    let rest = line.strip_prefix(name)?;
    let (labels, value) = match rest.strip_prefix('{') {
        Some(r) => r.split_once("} ")?,
        None => ("", rest.strip_prefix(' ')?),
    };
    Some((labels, value.trim().parse().ok()?))
}

/// One label's value out of `a="x",b="y"`.
fn label<'a>(labels: &'a str, key: &str) -> &'a str {
    labels
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.trim_matches('"'))
        .unwrap_or("")
}

impl Counts {
    fn add(&mut self, text: &str) {
        for line in text.lines() {
            if let Some((labels, v)) = sample(line, "aiden_graph_statement_seconds_count") {
                *self
                    .statements
                    .entry(label(labels, "file").to_owned())
                    .or_default() += v;
            }
            if let Some((labels, v)) = sample(line, "aiden_graph_statement_seconds_sum") {
                *self
                    .statement_seconds
                    .entry(label(labels, "file").to_owned())
                    .or_default() += v;
            }
            if let Some((_, v)) = sample(line, "aiden_engine_pass_seconds_count") {
                self.passes += v;
            }
            if let Some((_, v)) = sample(line, "aiden_engine_pass_retries_total") {
                self.retries += v;
            }
            if let Some((_, v)) = sample(line, "aiden_engine_passes_pipelined_total") {
                self.pipelined += v;
            }
            if let Some((_, v)) = sample(line, "aiden_engine_passes_in_line_total") {
                self.in_line += v;
            }
            if let Some((labels, v)) = sample(line, "aiden_graph_records_total") {
                *self
                    .records
                    .entry(label(labels, "what").to_owned())
                    .or_default() += v;
            }
            if let Some((_, v)) = sample(line, "aiden_graph_commits_total") {
                self.commits += v;
            }
            for name in [
                "aiden_broker_publish_seconds_count",
                "aiden_broker_unconfirmed_total",
            ] {
                if let Some((labels, v)) = sample(line, name) {
                    let exchange = label(labels, "exchange").to_owned();
                    *self.messages.entry(exchange).or_default() += v;
                }
            }
        }
    }

    /// Scrapes every `/metrics` URL; one that does not answer is left out (and said so).
    pub async fn scrape(http: &reqwest::Client, urls: &[String]) -> Self {
        let mut counts = Self::default();
        for url in urls {
            match http.get(url).send().await {
                Ok(r) => counts.add(&r.text().await.unwrap_or_default()),
                Err(e) => eprintln!("bench: {url} did not answer: {e}"),
            }
        }
        counts
    }

    /// Per step since `earlier`: totals and their split (statements by query file, messages by
    /// exchange), rounded to hundredths.
    pub fn per_step(&self, earlier: &Counts, steps: usize) -> Value {
        let per = |now: &BTreeMap<String, f64>, before: &BTreeMap<String, f64>| {
            let mut split = serde_json::Map::new();
            let mut total = 0.0;
            for (k, v) in now {
                let d = (v - before.get(k).copied().unwrap_or(0.0)) / steps.max(1) as f64;
                if d > 0.0 {
                    total += d;
                    split.insert(k.clone(), json!((d * 100.0).round() / 100.0));
                }
            }
            ((total * 100.0).round() / 100.0, Value::Object(split))
        };
        let (statements, by_file) = per(&self.statements, &earlier.statements);
        let (messages, by_exchange) = per(&self.messages, &earlier.messages);
        let (records, records_by_kind) = per(&self.records, &earlier.records);
        let ms =
            |m: &BTreeMap<String, f64>| m.iter().map(|(k, v)| (k.clone(), v * 1000.0)).collect();
        let (_, ms_by_file) = per(
            &ms(&self.statement_seconds),
            &ms(&earlier.statement_seconds),
        );
        let commits = (self.commits - earlier.commits) / steps.max(1) as f64;
        json!({"graph_statements": statements, "graph_statements_by_file": by_file,
               "graph_commits": (commits * 100.0).round() / 100.0,
               "graph_records": records, "graph_records_by_kind": records_by_kind,
               "graph_ms_by_file": ms_by_file,
               "broker_messages": messages, "broker_messages_by_exchange": by_exchange,
               "engine_passes_total": self.passes - earlier.passes,
               "engine_pass_retries_total": self.retries - earlier.retries,
               "engine_passes_pipelined": self.pipelined - earlier.pipelined,
               "engine_passes_in_line": self.in_line - earlier.in_line})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_statements_by_file_and_messages_by_exchange_per_step() {
        let mut before = Counts::default();
        before.add("aiden_graph_statement_seconds_count{file=\"run/apply_batch.cypher\"} 2\n");
        let mut after = Counts::default();
        after.add(
            "# TYPE x summary\n\
             aiden_graph_statement_seconds_count{file=\"run/apply_batch.cypher\"} 6\n\
             aiden_graph_statement_seconds_sum{file=\"run/apply_batch.cypher\"} 0.5\n\
             aiden_broker_publish_seconds_count{exchange=\"default\"} 4\n\
             aiden_broker_unconfirmed_total{exchange=\"aiden.jobs\"} 4\n\
             aiden_engine_pass_seconds_count 3\n\
             aiden_engine_pass_retries_total 1\n\
             aiden_graph_commits_total 8\n\
             aiden_graph_records_total{what=\"nodes_created\"} 8\n\
             aiden_graph_records_total{what=\"nodes_updated\"} 4\n",
        );
        let v = after.per_step(&before, 4);
        assert_eq!(v["graph_statements"], json!(1.0));
        assert_eq!(
            v["graph_statements_by_file"]["run/apply_batch.cypher"],
            json!(1.0)
        );
        assert_eq!(v["broker_messages"], json!(2.0));
        assert_eq!(v["broker_messages_by_exchange"]["aiden.jobs"], json!(1.0));
        assert_eq!(v["engine_passes_total"], json!(3.0));
        assert_eq!(v["engine_pass_retries_total"], json!(1.0));
        assert_eq!(v["graph_commits"], json!(2.0));
        assert_eq!(v["graph_records"], json!(3.0));
        assert_eq!(v["graph_records_by_kind"]["nodes_updated"], json!(1.0));
    }
}
