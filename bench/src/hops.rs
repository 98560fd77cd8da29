//! The latency budget per hop (issue #49): where a step's time goes between the pass that
//! dispatches it and the pass that dispatches the next one, from the step runs' own `hops`
//! (microsecond timestamps the engine and the worker stamp on each job and result).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use serde_json::{json, Value};

use crate::Api;

/// The hops, in the order a step passes them, with the budget each is held to (ms).
const BUDGET_MS: [(&str, f64); 5] = [
    ("pass_statement", 0.4),
    ("pass_commit", 0.3),
    ("publish_to_delivery", 0.5),
    ("worker", 0.3),
    ("result_to_next_dispatch", 0.5),
];

/// Each step's hops in ms, in `BUDGET_MS` order (the last one for every step but a run's last).
fn of_run(run: &Value) -> Vec<[Option<f64>; 5]> {
    let steps: Vec<&Value> = run["steps"]
        .as_array()
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    let us = |s: &Value, k: &str| s["hops"][k].as_i64();
    let ms = |a: Option<i64>, b: Option<i64>| Some((b? - a?) as f64 / 1000.0);
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let statement_end = us(s, "statementStartUs")
                .zip(us(s, "statementUs"))
                .map(|(a, b)| a + b);
            let next = steps.get(i + 1);
            [
                us(s, "statementUs").map(|v| v as f64 / 1000.0),
                ms(statement_end, us(s, "commitEndUs")),
                ms(us(s, "commitEndUs"), us(s, "deliveredUs")),
                ms(us(s, "deliveredUs"), us(s, "resultUs")),
                next.and_then(|n| ms(us(s, "resultUs"), us(n, "statementStartUs"))),
            ]
        })
        .collect()
}

fn quantile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n => values[((n as f64 - 1.0) * p).round() as usize],
    }
}

/// A run's edges, outside its steps' hops, in ms (`EDGES` order): from the client's start
/// request to the first pass's statement, from the client's start to its answer, and from the
/// last step's result (sent by its worker) to the client seeing the run's terminal event: the
/// settling pass's statement and commit, and the event's way to the client. Client and server
/// share the machine's clock.
fn edges_of_run(run: &Value, client: [i64; 3]) -> [Option<f64>; 3] {
    // The earliest dispatch and the latest result: in a plan with parallel steps the last
    // step in plan order need not be the last to finish.
    let stamps = |k: &str| -> Vec<i64> {
        run["steps"]
            .as_array()
            .map(|s| s.iter().filter_map(|s| s["hops"][k].as_i64()).collect())
            .unwrap_or_default()
    };
    let first = stamps("statementStartUs").into_iter().min();
    let last = stamps("resultUs").into_iter().max();
    let ms = |a: Option<i64>, b: Option<i64>| Some((b? - a?) as f64 / 1000.0);
    let [sent, answered, seen] = client.map(Some);
    [ms(sent, first), ms(sent, answered), ms(last, seen)]
}

/// Per run started through `Api::start_and_wait`: the client's own clock when it sent the
/// start, when the start was answered and when it saw the terminal event.
static CLIENT_EDGES: LazyLock<Mutex<HashMap<String, [i64; 3]>>> = LazyLock::new(Default::default);

pub fn record_edges(run_id: &str, edges: [i64; 3]) {
    if let Ok(mut all) = CLIENT_EDGES.lock() {
        all.insert(run_id.to_owned(), edges);
    }
}

fn client_edges(run_id: &str) -> Option<[i64; 3]> {
    CLIENT_EDGES.lock().ok()?.get(run_id).copied()
}

/// Microseconds since the epoch, the clock the engine and workers stamp hops with.
pub fn epoch_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// The edges of a run, named, with no budget of their own: where the rest of its latency goes.
const EDGES: [&str; 3] = [
    "start_request_to_first_statement",
    "start_request_answered",
    "last_result_to_client_seeing_it",
];

/// `{hop: {p50_ms, p99_ms, budget_ms, within}}` over the runs' steps, read from their views,
/// then the runs' `EDGES` (p50 and p99 only).
pub async fn per_hop(api: &Api, run_ids: &[String]) -> anyhow::Result<Value> {
    let mut samples: [Vec<f64>; 5] = Default::default();
    let mut edges: [Vec<f64>; 3] = Default::default();
    for id in run_ids {
        let run = api
            .send(reqwest::Method::GET, &format!("/v1/runs/{id}"), None)
            .await?;
        let client = client_edges(id);
        for (i, v) in client
            .map(|c| edges_of_run(&run, c))
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Some(v) = v {
                edges[i].push(v);
            }
        }
        for step in of_run(&run) {
            for (i, v) in step.into_iter().enumerate() {
                if let Some(v) = v {
                    samples[i].push(v);
                }
            }
        }
    }
    let mut out = serde_json::Map::new();
    for ((name, budget), mut values) in BUDGET_MS.into_iter().zip(samples) {
        let p50 = quantile(&mut values, 0.5);
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        out.insert(
            name.into(),
            json!({"p50_ms": round(p50), "p99_ms": round(quantile(&mut values, 0.99)),
                   "budget_ms": budget, "within": p50 <= budget, "samples": values.len()}),
        );
    }
    for (name, mut values) in EDGES.into_iter().zip(edges) {
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        out.insert(
            name.into(),
            json!({"p50_ms": round(quantile(&mut values, 0.5)),
                   "p99_ms": round(quantile(&mut values, 0.99)), "samples": values.len()}),
        );
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hops_are_differences_of_the_stamps_and_the_last_step_has_no_next_dispatch() {
        let step = |start: i64| {
            json!({"hops": {"statementStartUs": start, "statementUs": 400,
                            "commitEndUs": start + 700, "deliveredUs": start + 1200,
                            "resultUs": start + 1500}})
        };
        let run = json!({"steps": [step(0), step(2000)]});
        let hops = of_run(&run);
        assert_eq!(
            hops[0],
            [Some(0.4), Some(0.3), Some(0.5), Some(0.3), Some(0.5)]
        );
        assert_eq!(hops[1][4], None);
        let edges = edges_of_run(&run, [-300, 1_000, 3_900]);
        assert_eq!(edges, [Some(0.3), Some(1.3), Some(0.4)]);
    }
}
