//! Runs you can replay (issue #50). `fork20`: a finished 20-step echo chain forked from its
//! last step, one fork at a time: each fork should call exactly one Tool and complete within
//! the time of a one-step run plus 20 ms at p50; prints both (forks of 20 chains once each, and
//! 50 forks of one chain), with the chain's own figures.
//! `replay100`: 100 recorded runs of a 10-step chain replayed against a new version (one whose
//! last step changed); prints the replay's time (the goal: under 1 s) and its verdicts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use serde_json::{json, Value};

use crate::{delete_all, drive, drive_runs, percentile, step, Api};

/// A Process of `n` sequential echo steps `s0…s{n-1}`, each passing its output on.
async fn chain(api: &Api, tool: &str, id: &str, n: usize, last_input: &str) -> anyhow::Result<()> {
    let steps: Vec<Value> = (0..n)
        .map(|i| match i {
            0 => step(tool, "s0", "sequential", "start"),
            _ if i == n - 1 => step(tool, &format!("s{i}"), "sequential", last_input),
            _ => step(
                tool,
                &format!("s{i}"),
                "sequential",
                &format!("{{{{json s{}.body}}}}", i - 1),
            ),
        })
        .collect();
    api.send(
        reqwest::Method::POST,
        "/v1/processes",
        Some(json!({"id": id, "name": format!("Benchmark: {n} sequential steps"), "steps": steps})),
    )
    .await?;
    Ok(())
}

fn ms(sorted: &[Duration], p: f64) -> f64 {
    (percentile(sorted, p) * 100.0).round() / 100.0
}

pub async fn fork20(api: &Arc<Api>, tool: &str, forks: usize) -> anyhow::Result<Value> {
    let tag = tool.trim_start_matches("bench-echo-");
    let (long, one) = (format!("bench-chain20-{tag}"), format!("bench-one-{tag}"));
    chain(api, tool, &long, 20, "{{json s18.body}}").await?;
    chain(api, tool, &one, 1, "start").await?;
    let line = measure_forks(api, &long, &one, forks).await;
    delete_all(
        api,
        &[
            format!("/v1/processes/{long}"),
            format!("/v1/processes/{one}"),
        ],
    )
    .await;
    line
}

async fn measure_forks(
    api: &Arc<Api>,
    long: &str,
    one: &str,
    forks: usize,
) -> anyhow::Result<Value> {
    let (chains, _) = drive_runs(api, long, 20, 1).await?;
    let (mut one_ms, _) = drive(api, one, forks, 1).await?;
    let fork = |original: &str| {
        let path = format!("/v1/runs/{original}/forks");
        async move { api.start_and_wait(&path, json!({"fromStep": "s19"})).await }
    };
    // Each chain forked once, then one chain again and again (as someone trying inputs on
    // one step does): both read the original's record from the graph.
    let mut first_ms = Vec::with_capacity(chains.len());
    for (_, original) in &chains {
        first_ms.push(fork(original).await?.0);
    }
    let original = &chains[0].1;
    let mut fork_ms = Vec::with_capacity(forks);
    let mut last = String::new();
    for _ in 0..forks {
        let (d, id) = fork(original).await?;
        fork_ms.push(d);
        last = id;
    }
    let mut chain_ms: Vec<Duration> = chains.into_iter().map(|(d, _)| d).collect();
    // What the last fork called: the steps it ran (attempts) and the ones it reused.
    let run = api
        .send(reqwest::Method::GET, &format!("/v1/runs/{last}"), None)
        .await?;
    let steps = run["steps"].as_array().context("a run view has steps")?;
    let called = steps
        .iter()
        .filter(|s| s["attempts"].as_i64() > Some(0))
        .count();
    let reused = steps.iter().filter(|s| s["reusedFrom"].is_string()).count();
    for v in [&mut chain_ms, &mut one_ms, &mut fork_ms, &mut first_ms] {
        v.sort();
    }
    let (fork_p50, one_p50) = (ms(&fork_ms, 0.5), ms(&one_ms, 0.5));
    Ok(json!({
        "system": "aiden", "scenario": "fork20", "workflows": forks,
        "chain20_p50_ms": ms(&chain_ms, 0.5), "chain20_p99_ms": ms(&chain_ms, 0.99),
        "one_step_run_p50_ms": one_p50,
        "fork_p50_ms": fork_p50, "fork_p99_ms": ms(&fork_ms, 0.99),
        "fork_over_one_step_ms": ((fork_p50 - one_p50) * 100.0).round() / 100.0,
        "first_fork_p50_ms": ms(&first_ms, 0.5),
        "first_fork_over_one_step_ms": ((ms(&first_ms, 0.5) - one_p50) * 100.0).round() / 100.0,
        "goal_fork_p50_ms": one_p50 + 20.0,
        "tools_called_by_a_fork": called, "steps_reused_by_a_fork": reused,
    }))
}

pub async fn replay100(api: Arc<Api>, tool: &str) -> anyhow::Result<Value> {
    let tag = tool.trim_start_matches("bench-echo-");
    let id = format!("bench-chain10-{tag}");
    chain(&api, tool, &id, 10, "{{json s8.body}}").await?;
    let line = measure_replay(&api, tool, &id).await;
    delete_all(&api, &[format!("/v1/processes/{id}")]).await;
    line
}

async fn measure_replay(api: &Arc<Api>, tool: &str, id: &str) -> anyhow::Result<Value> {
    drive(api, id, 100, 16).await?;
    // Version 2: the last step's input changes; every run diverges there.
    let v2 = (0..10)
        .map(|i| match i {
            0 => step(tool, "s0", "sequential", "start"),
            9 => step(tool, "s9", "sequential", "{{json s8.body}}!"),
            _ => step(
                tool,
                &format!("s{i}"),
                "sequential",
                &format!("{{{{json s{}.body}}}}", i - 1),
            ),
        })
        .collect::<Vec<_>>();
    api.send(
        reqwest::Method::PATCH,
        &format!("/v1/processes/{id}"),
        Some(json!({"steps": v2})),
    )
    .await?;
    let path = format!("/v1/processes/{id}/versions/2/replay");
    let mut walls = Vec::new();
    let mut report = Value::Null;
    for _ in 0..5 {
        let t0 = Instant::now();
        report = api
            .send(reqwest::Method::POST, &path, Some(json!({"last": 100})))
            .await?;
        walls.push(t0.elapsed());
    }
    walls.sort();
    let runs = report["runs"].as_array().map_or(0, Vec::len);
    ensure!(
        runs == 100,
        "the replay covered {runs} runs, not 100: {report}"
    );
    let at_s9 = report["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["divergence"]["stepId"] == "s9")
        .count();
    Ok(json!({
        "system": "aiden", "scenario": "replay100", "workflows": runs, "steps_per_workflow": 10,
        "replay_wall_p50_ms": ms(&walls, 0.5), "replay_wall_max_ms": ms(&walls, 1.0),
        "replay_server_ms": report["elapsedMs"], "goal_ms": 1000,
        "diverged": report["diverged"], "diverged_at_changed_step": at_s9,
    }))
}
