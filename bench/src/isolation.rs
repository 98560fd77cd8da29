//! `isolation`: a backlog of one operation type must not slow another (issue #49). `chain3`
//! runs (`rest_api`), one at a time, first on an idle stack, then while 1,000 runs of a
//! one-step `llm_call` Process are started in a burst and wait for a small `llm_call` pool
//! behind a scripted model that answers in `MODEL_DELAY`. Prints both latencies and the ratio
//! of the p99s (the goal: within 1.2×).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::Json;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::{drive, percentile, Api};

/// How long the scripted model takes per call: with a pool of 8 the backlog drains at ~80
/// runs/s, so 1,000 runs outlast the measurement.
const MODEL_DELAY: Duration = Duration::from_millis(100);
const BACKLOG_RUNS: usize = 1_000;
/// Starts of the burst in flight at once (each answered once its run is durable).
const BURST_IN_FLIGHT: usize = 64;

async fn model(Json(_): Json<Value>) -> Json<Value> {
    tokio::time::sleep(MODEL_DELAY).await;
    Json(
        json!({"id": "chatcmpl-i", "object": "chat.completion", "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}),
    )
}

pub struct Backlog {
    service: String,
    tool: String,
    process: String,
}

/// Serves the model and defines the one-step `llm_call` Process.
pub async fn setup(api: &Api, tag: &str) -> anyhow::Result<Backlog> {
    let ids = Backlog {
        service: format!("bench-slow-model-service-{tag}"),
        tool: format!("bench-slow-model-{tag}"),
        process: format!("bench-llm-{tag}"),
    };
    let name = "Benchmark slow scripted model";
    crate::scripted_model::serve_and_define(api, model, &ids.service, &ids.tool, name).await?;
    api.send(
        reqwest::Method::POST,
        "/v1/processes",
        Some(json!({
        "id": ids.process, "name": "Benchmark: one model call",
        "steps": [{"id": "answer", "tool": ids.tool, "inputs": {"message": "hi"},
                   "output": {"variable": "a"}}],
        "outputTemplate": "{{a.text}}"})),
    )
    .await?;
    Ok(ids)
}

pub async fn cleanup(api: &Api, ids: &Backlog) {
    crate::delete_all(
        api,
        &[
            format!("/v1/processes/{}", ids.process),
            format!("/v1/tools/{}", ids.tool),
            format!("/v1/services/{}", ids.service),
        ],
    )
    .await
}

/// What starting the burst took: its runs' ids in start order, each start's answer time
/// (sorted), how long starting them all took, and the CPU each part of the stack used
/// meanwhile (what the burst's creation costs, beside the one-at-a-time runs measured then).
struct Burst {
    ids: Vec<String>,
    answered: Vec<Duration>,
    took_s: f64,
    cpu: Value,
}

/// Starts `BACKLOG_RUNS` runs of the backlog Process, `BURST_IN_FLIGHT` at a time.
async fn burst(api: Arc<Api>, process: String) -> anyhow::Result<Burst> {
    let cpu_before = crate::cpu::Sample::now();
    let t0 = Instant::now();
    let started = futures::stream::iter(0..BACKLOG_RUNS)
        .map(|_| {
            let (api, path) = (api.clone(), format!("/v1/processes/{process}/runs"));
            async move {
                let sent = Instant::now();
                let r = api
                    .send(reqwest::Method::POST, &path, Some(json!({"inputs": {}})))
                    .await?;
                let id = r["runId"].as_str().context("no runId")?.to_owned();
                anyhow::Ok((id, sent.elapsed()))
            }
        })
        .buffered(BURST_IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    let took_s = t0.elapsed().as_secs_f64();
    let cpu = crate::cpu::Sample::now().since(&cpu_before);
    let (ids, answered): (Vec<String>, Vec<Duration>) = started
        .into_iter()
        .collect::<anyhow::Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    Ok(Burst {
        ids,
        answered: sorted(answered.into_iter()),
        took_s,
        cpu,
    })
}

/// Waits (at most `limit`) until the run is settled; whether it did.
async fn settled(api: &Api, run_id: &str, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Ok(run) = api
            .send(reqwest::Method::GET, &format!("/v1/runs/{run_id}"), None)
            .await
        {
            if matches!(
                run["status"].as_str(),
                Some("completed" | "failed" | "canceled")
            ) {
                return true;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

fn latency(sorted: &[Duration]) -> Value {
    let round = |v: f64| (v * 100.0).round() / 100.0;
    json!({"runs": sorted.len(), "p50_ms": round(percentile(sorted, 0.5)),
           "p99_ms": round(percentile(sorted, 0.99))})
}

/// `runs` runs of `process`, one at a time from `t0`: each run's start (seconds after `t0`)
/// and its latency.
async fn one_at_a_time(
    api: &Api,
    process: &str,
    runs: usize,
    t0: Instant,
) -> anyhow::Result<Vec<(f64, Duration)>> {
    let mut done = Vec::with_capacity(runs);
    for _ in 0..runs {
        let at = t0.elapsed().as_secs_f64();
        let (latency, _) = api.run_once(process).await?;
        done.push((at, latency));
    }
    Ok(done)
}

fn sorted(runs: impl Iterator<Item = Duration>) -> Vec<Duration> {
    let mut v: Vec<Duration> = runs.collect();
    v.sort();
    v
}

/// The scenario: `runs` `chain3` runs idle, then as many beside the burst, then as many idle
/// again once it drained (`idle_p99_spread`: the larger idle p99 over the smaller). Beside the
/// whole, it prints the runs started while the burst's starts were still being created (the one
/// writer creates 1,000 runs then) apart from those started once all of them were queued
/// (the backlog proper: 1,000 runs waiting for their pool).
pub async fn scenario(
    api: Arc<Api>,
    backlog: &Backlog,
    chain3: &str,
    runs: usize,
) -> anyhow::Result<Value> {
    let (mut idle, _) = drive(&api, chain3, runs, 1).await?;
    idle.sort();
    let t0 = Instant::now();
    let burst = tokio::spawn(burst(api.clone(), backlog.process.clone()));
    let measured = one_at_a_time(&api, chain3, runs, t0).await?;
    let measured_s = t0.elapsed().as_secs_f64();
    let Burst {
        ids,
        answered,
        took_s: started_s,
        cpu: burst_cpu,
    } = burst.await??;
    let beside = sorted(measured.iter().map(|(_, d)| *d));
    let while_starting = sorted(
        measured
            .iter()
            .filter(|(at, _)| *at < started_s)
            .map(|(_, d)| *d),
    );
    let once_queued = sorted(
        measured
            .iter()
            .filter(|(at, _)| *at >= started_s)
            .map(|(_, d)| *d),
    );
    // The backlog was there all along if its last run settles only after the measurement.
    let last = ids.last().context("no backlog run")?;
    let drained = settled(&api, last, Duration::from_secs(120)).await;
    let drained_s = t0.elapsed().as_secs_f64();
    // Idle again once the backlog drained: how far the machine's own idle p99 moved during the
    // scenario says how much of the ratio is the backlog's and how much the machine's.
    // Not measured when the backlog is still there (not idle).
    let idle_after = match drained {
        true => sorted(drive(&api, chain3, runs, 1).await?.0.into_iter()),
        false => Vec::new(),
    };
    let idle_spread = (!idle_after.is_empty()).then(|| {
        let p99s = [percentile(&idle, 0.99), percentile(&idle_after, 0.99)];
        let spread = p99s[0].max(p99s[1]) / p99s[0].min(p99s[1]).max(0.001);
        (spread * 100.0).round() / 100.0
    });
    let ratio = |v: &[Duration]| {
        let r = percentile(v, 0.99) / percentile(&idle, 0.99).max(0.001);
        (r * 100.0).round() / 100.0
    };
    Ok(json!({
        "system": "aiden", "scenario": "isolation", "idle": latency(&idle),
        "beside_backlog": latency(&beside),
        "p99_ratio": ratio(&beside), "goal_p99_ratio": 1.2,
        "while_burst_starts": latency(&while_starting),
        "once_all_queued": latency(&once_queued),
        "once_all_queued_p99_ratio": ratio(&once_queued),
        "idle_after_drained": latency(&idle_after),
        "idle_p99_spread": idle_spread,
        "backlog": {"runs": ids.len(), "type": "llm_call", "model_delay_ms": MODEL_DELAY.as_millis(),
                    "all_started_s": (started_s * 10.0).round() / 10.0,
                    "start_answered": latency(&answered),
                    "measured_s": (measured_s * 10.0).round() / 10.0,
                    "cpu_s_until_all_started": burst_cpu,
                    "drained": drained, "drained_s": (drained_s * 10.0).round() / 10.0},
    }))
}
