//! The latency budget per hop (issue #49): where a step's time goes between the pass that
//! dispatches it and the pass that dispatches the next one, from the step runs' own `hops`
//! (microsecond timestamps the engine and the worker stamp on each job and result).

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

/// `{hop: {p50_ms, p99_ms, budget_ms, within}}` over the runs' steps, read from their views.
pub async fn per_hop(api: &Api, run_ids: &[String]) -> anyhow::Result<Value> {
    let mut samples: [Vec<f64>; 5] = Default::default();
    for id in run_ids {
        let run = api
            .send(reqwest::Method::GET, &format!("/v1/runs/{id}"), None)
            .await?;
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
    }
}
