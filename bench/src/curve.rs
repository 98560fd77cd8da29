//! `warm_curve`: cold and warm, both honest (issue #49). `chain3` (32 in flight) runs
//! without pause from a graph server just started, in windows of `WINDOW`; prints each window's
//! steps/s with its time since the server started, the steady state (the median of the last
//! quarter of the windows) and when the throughput reached 90 % of it for good.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::Api;

const WINDOW: Duration = Duration::from_secs(5);
const IN_FLIGHT: usize = 32;

/// The first window from which every later window (as a rolling mean of three) is at least
/// 90 % of `steady`; its start, in seconds since the server started.
fn reached_90(windows: &[(f64, f64)], steady: f64) -> Option<f64> {
    let rolling: Vec<f64> = (0..windows.len())
        .map(|i| {
            let from = i.saturating_sub(1);
            let to = (i + 2).min(windows.len());
            windows[from..to].iter().map(|w| w.1).sum::<f64>() / (to - from) as f64
        })
        .collect();
    let last_below = rolling.iter().rposition(|r| *r < 0.9 * steady);
    match last_below {
        None => windows.first().map(|w| w.0),
        Some(i) => windows.get(i + 1).map(|w| w.0),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Runs `chain3` for `duration`; `since_start` is how long ago the graph server started.
pub async fn scenario(
    api: Arc<Api>,
    process: &str,
    duration: Duration,
    since_start: Duration,
) -> anyhow::Result<Value> {
    let steps = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let (api, steps, process) = (api.clone(), steps.clone(), process.to_owned());
            tokio::spawn(async move {
                while t0.elapsed() < duration {
                    api.run_once(&process).await?;
                    steps.fetch_add(3, Ordering::Relaxed);
                }
                anyhow::Ok(())
            })
        })
        .collect();
    let mut windows = Vec::new();
    let mut before = 0;
    while t0.elapsed() < duration {
        tokio::time::sleep(WINDOW).await;
        let now = steps.load(Ordering::Relaxed);
        let at = since_start + t0.elapsed() - WINDOW;
        windows.push((
            at.as_secs_f64().round(),
            (now - before) as f64 / WINDOW.as_secs_f64(),
        ));
        before = now;
    }
    for t in tasks {
        t.await??;
    }
    let tail = windows.len().div_ceil(4).max(1);
    let steady = median(
        windows[windows.len() - tail..]
            .iter()
            .map(|w| w.1)
            .collect(),
    );
    Ok(json!({
        "system": "aiden", "scenario": "warm_curve", "workload": "chain3", "in_flight": IN_FLIGHT,
        "window_s": WINDOW.as_secs(), "steady_steps_per_s": steady.round(),
        "reached_90_percent_s_after_graph_start": reached_90(&windows, steady),
        "windows": windows.iter().map(|(at, rate)| json!({"at_s": at, "steps_per_s": rate.round()}))
            .collect::<Vec<_>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ninety_percent_is_reached_after_the_last_window_below_it() {
        let w = |v: &[f64]| {
            v.iter()
                .enumerate()
                .map(|(i, r)| (i as f64 * 5.0, *r))
                .collect::<Vec<_>>()
        };
        let windows = w(&[100.0, 400.0, 950.0, 1000.0, 1000.0, 1000.0, 1000.0]);
        assert_eq!(reached_90(&windows, 1000.0), Some(15.0));
        assert_eq!(reached_90(&w(&[1000.0, 1000.0]), 1000.0), Some(0.0));
        assert_eq!(reached_90(&w(&[100.0, 100.0]), 1000.0), None);
    }
}
