//! `aiden-bench`: end-to-end run throughput and latency through the public API, against the
//! nginx echo endpoint (scripts/bench.sh starts everything). Prints one JSON line per scenario:
//! `{scenario, workflows, steps_per_workflow, wall_s, workflows_per_s, steps_per_s, p50_ms, p99_ms}`,
//! plus `cpu_s`, CPU seconds per part of the stack during the scenario (`cpu.rs`), and
//! `per_step`, graph statements and broker messages per step (`counts.rs`).
//! A run's latency is from `POST /v1/processes/{id}/runs` to its `run.completed` SSE event.
//! `agent_loop` runs an agent step against a scripted model (`agent_loop.rs`).

mod agent_loop;
mod api;
mod counts;
mod cpu;
mod curve;
mod hops;
mod isolation;
mod replays;
mod scripted_model;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use futures::StreamExt;
use serde_json::{json, Value};

use api::{Api, Target};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    target: Target,
    #[arg(long, default_value = "http://127.0.0.1:18080")]
    echo: String,
    /// Scenarios to run (default: all three, in the peers' order).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "chain3,chain3_seq,fanout4"
    )]
    scenarios: Vec<String>,
    /// Scale every scenario's run count (e.g. 0.1 for a quick check).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Unmeasured runs (32 in flight) of each workload the scenarios use, before them, as the
    /// peers warm up (the peers harness warms up before it measures; Restate's bench.js warms up
    /// every workload it measures). Not scaled.
    #[arg(long, default_value_t = 1000)]
    warmup: usize,
    /// `chain3_history`: completed runs the graph holds before the second measurement.
    #[arg(long, default_value_t = 50_000)]
    history_runs: usize,
    /// `warm_curve`: how long to run `chain3` without pause.
    #[arg(long, default_value_t = 240)]
    curve_seconds: u64,
    /// Prometheus endpoints counted for per-step graph statements and broker messages
    /// (`per_step`); default: the server's own `/metrics`. Repeat for the worker pools'.
    #[arg(long)]
    metrics_url: Vec<String>,
}

/// `--metrics-url`, set once in `main`.
static METRICS_URLS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

impl Api {
    /// Starts a run and waits for its terminal event; returns the latency and the run's id.
    async fn run_once(&self, process: &str) -> anyhow::Result<(Duration, String)> {
        let path = format!("/v1/processes/{process}/runs");
        self.start_and_wait(&path, json!({"inputs": {}})).await
    }

    /// POSTs `body` to `path` (a run's start or a fork), then waits for the started run's
    /// terminal event; the latency from the POST and the run's id.
    async fn start_and_wait(&self, path: &str, body: Value) -> anyhow::Result<(Duration, String)> {
        let t0 = Instant::now();
        let sent_us = hops::epoch_us();
        let started = self.send(reqwest::Method::POST, path, Some(body)).await?;
        let answered_us = hops::epoch_us();
        let run_id = started["runId"].as_str().context("no runId")?.to_owned();
        let resp = self
            .http
            .get(format!("{}/v1/runs/{run_id}/events", self.base))
            .bearer_auth(&self.token)
            .send()
            .await?;
        let mut stream = resp.bytes_stream();
        let mut seen = String::new();
        while let Some(chunk) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk?));
            if seen.contains("event: run.completed") {
                hops::record_edges(&run_id, [sent_us, answered_us, hops::epoch_us()]);
                return Ok((t0.elapsed(), run_id));
            }
            if seen.contains("event: run.failed") || seen.contains("event: run.canceled") {
                bail!("run {run_id} did not complete: {seen}");
            }
        }
        bail!("event stream of {run_id} ended early")
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// `runs` runs of `process`, `in_flight` at a time; their latencies and the wall time.
async fn drive(
    api: &Arc<Api>,
    process: &str,
    runs: usize,
    in_flight: usize,
) -> anyhow::Result<(Vec<Duration>, f64)> {
    let (done, wall) = drive_runs(api, process, runs, in_flight).await?;
    Ok((done.into_iter().map(|(d, _)| d).collect(), wall))
}

/// [`drive`], with each run's id beside its latency.
pub(crate) async fn drive_runs(
    api: &Arc<Api>,
    process: &str,
    runs: usize,
    in_flight: usize,
) -> anyhow::Result<(Vec<(Duration, String)>, f64)> {
    let next = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..in_flight)
        .map(|_| {
            let (api, next, process) = (api.clone(), next.clone(), process.to_owned());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < runs {
                    latencies.push(api.run_once(&process).await?);
                }
                anyhow::Ok(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(runs);
    for t in tasks {
        latencies.extend(t.await??);
    }
    Ok((latencies, t0.elapsed().as_secs_f64()))
}

async fn scenario(
    api: Arc<Api>,
    name: &str,
    process: &str,
    runs: usize,
    in_flight: usize,
    steps: usize,
) -> anyhow::Result<Value> {
    let urls = METRICS_URLS.get().map(Vec::as_slice).unwrap_or_default();
    let counts_before = counts::Counts::scrape(&api.http, urls).await;
    let cpu_before = cpu::Sample::now();
    let (done, wall) = drive_runs(&api, process, runs, in_flight).await?;
    let cpu_s = cpu::Sample::now().since(&cpu_before);
    let (mut latencies, ids): (Vec<Duration>, Vec<String>) = done.into_iter().unzip();
    let per_step = counts::Counts::scrape(&api.http, urls)
        .await
        .per_step(&counts_before, runs * steps);
    latencies.sort();
    // One run at a time, each step's hops are its own: the latency budget per hop.
    let hops = match in_flight {
        1 => hops::per_hop(&api, &ids).await?,
        _ => Value::Null,
    };
    Ok(json!({
        "system": "aiden", "scenario": name, "workflows": runs, "steps_per_workflow": steps,
        "wall_s": (wall * 1000.0).round() / 1000.0,
        "workflows_per_s": ((runs as f64 / wall) * 10.0).round() / 10.0,
        "steps_per_s": ((runs * steps) as f64 / wall).round(),
        "p50_ms": (percentile(&latencies, 0.50) * 100.0).round() / 100.0,
        "p99_ms": (percentile(&latencies, 0.99) * 100.0).round() / 100.0,
        "cpu_s": cpu_s,
        "per_step": per_step,
        "hops": hops,
    }))
}

/// The workloads (name, process) the scenarios run, each once: what the warm-up runs.
fn warmup_workloads<'a>(scenarios: &[String], ids: &'a Ids) -> Vec<(&'static str, &'a str)> {
    let mut used = Vec::new();
    for name in scenarios {
        let workload = match name.as_str() {
            "chain3" | "chain3_seq" | "chain3_history" | "isolation" => {
                ("chain3", ids.chain3.as_str())
            }
            "fanout4" => ("fanout4", ids.fanout4.as_str()),
            _ => continue,
        };
        if !used.contains(&workload) {
            used.push(workload);
        }
    }
    used
}

/// `chain3_history` (a step must not cost more as completed runs pile up): `chain3` on the graph as
/// it is (scripts/bench.sh gives this scenario a new, empty database), then filled with completed
/// `chain3` runs (unmeasured, 64 in flight) until it holds `history_runs` of them, then `chain3`
/// again. Prints the second measurement with the first under `empty` and their ratio.
async fn history(
    api: Arc<Api>,
    process: &str,
    runs: usize,
    done_before: usize,
    history_runs: usize,
) -> anyhow::Result<Value> {
    let empty = scenario(api.clone(), "chain3", process, runs, 32, 3).await?;
    let fill = history_runs.saturating_sub(done_before + runs);
    eprintln!("bench: filling the graph with {fill} more completed runs");
    let t0 = Instant::now();
    drive(&api, process, fill, 64).await?;
    let fill_s = t0.elapsed().as_secs_f64();
    let mut full = scenario(api.clone(), "chain3_history", process, runs, 32, 3).await?;
    let ratio = full["steps_per_s"].as_f64().unwrap_or(0.0)
        / empty["steps_per_s"].as_f64().unwrap_or(1.0).max(1.0);
    full["history_runs"] = json!(done_before + runs + fill);
    full["fill_s"] = json!((fill_s * 10.0).round() / 10.0);
    full["ratio_to_empty"] = json!((ratio * 1000.0).round() / 1000.0);
    full["empty"] = empty;
    Ok(full)
}

/// This invocation's resource ids (unique, so runs of earlier invocations never interfere).
struct Ids {
    service: String,
    tool: String,
    chain3: String,
    fanout4: String,
}

impl Ids {
    fn new() -> Self {
        let tag = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        Self {
            service: format!("bench-echo-service-{tag}"),
            tool: format!("bench-echo-{tag}"),
            chain3: format!("bench-chain3-{tag}"),
            fanout4: format!("bench-fanout4-{tag}"),
        }
    }
}

fn step(tool: &str, id: &str, mode: &str, input: &str) -> Value {
    json!({"id": id, "tool": tool, "inputs": {"v": input}, "output": {"variable": id},
           "execution": {"mode": mode}})
}

/// Deletes what a benchmark defined (a Process before its Tool, a Tool before its Service); a
/// failure is reported, not fatal.
async fn delete_all(api: &Api, paths: &[String]) {
    for path in paths {
        if let Err(e) = api.send(reqwest::Method::DELETE, path, None).await {
            eprintln!("cleanup: {e}");
        }
    }
}

async fn cleanup(api: &Api, ids: &Ids) {
    delete_all(
        api,
        &[
            format!("/v1/processes/{}", ids.chain3),
            format!("/v1/processes/{}", ids.fanout4),
            format!("/v1/tools/{}", ids.tool),
            format!("/v1/services/{}", ids.service),
        ],
    )
    .await
}

async fn setup(api: &Api, ids: &Ids, echo: &str) -> anyhow::Result<()> {
    let (service, tool) = (&ids.service, &ids.tool);
    let step = |id: &str, mode: &str, input: &str| step(tool, id, mode, input);
    api.send(
        reqwest::Method::POST,
        "/v1/services",
        Some(json!({
        "id": service, "name": "Benchmark echo (nginx)", "type": "rest_api", "protocol": "http",
        "requiresSecret": false, "endpoint": echo, "enabled": true,
        "connectionSchema": {"type": "object", "required": ["endpoint"],
            "properties": {"endpoint": {"type": "string"}, "timeoutMs": {"type": "integer"}}}})),
    )
    .await?;
    api.send(reqwest::Method::POST, "/v1/tools", Some(json!({
        "id": tool, "name": "Echo GET", "serviceId": service,
        "connectionParams": {"endpoint": echo, "timeoutMs": 5000},
        "operation": {"type": "rest_api", "method": "GET", "path": "/echo?v={{v}}"},
        "inputSchema": {"type": "object", "required": ["v"], "properties": {"v": {"type": "string"}}},
        "outputSchema": {"type": "object", "required": ["status", "body"],
            "properties": {"status": {"type": "integer"}, "body": {}}},
        "enabled": true}))).await?;
    api.send(
        reqwest::Method::POST,
        "/v1/processes",
        Some(json!({
        "id": ids.chain3, "name": "Benchmark: 3 sequential steps",
        "steps": [step("a", "sequential", "start"), step("b", "sequential", "{{json a.body}}"),
                  step("c", "sequential", "{{json b.body}}")],
        "outputTemplate": "{{c.body}}"})),
    )
    .await?;
    api.send(
        reqwest::Method::POST,
        "/v1/processes",
        Some(json!({
        "id": ids.fanout4, "name": "Benchmark: 4 parallel steps and a join",
        "steps": [step("p1", "parallel", "1"), step("p2", "parallel", "2"),
                  step("p3", "parallel", "3"), step("p4", "parallel", "4"),
                  step("join", "sequential", "{{json p1.body}}{{json p4.body}}")],
        "outputTemplate": "{{join.body}}"})),
    )
    .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let api = Arc::new(
        args.target.api(
            reqwest::Client::builder()
                .pool_max_idle_per_host(64)
                .tcp_nodelay(true)
                .build()?,
        ),
    );
    let mut urls = args.metrics_url.clone();
    if urls.is_empty() {
        urls.push(format!("{}/metrics", api.base));
    }
    let _ = METRICS_URLS.set(urls);
    let ids = Ids::new();
    setup(&api, &ids, &args.echo).await?;
    let scaled = |n: usize| ((n as f64 * args.scale).round() as usize).max(1);
    let mut done = 0;
    for (workload, process) in warmup_workloads(&args.scenarios, &ids) {
        if args.warmup == 0 {
            break;
        }
        eprintln!("bench: warming up with {} {workload} runs", args.warmup);
        if let Err(e) = drive(&api, process, args.warmup, 32).await {
            cleanup(&api, &ids).await;
            return Err(e);
        }
        done += args.warmup;
    }
    for name in &args.scenarios {
        // As the peers do: the previous scenario's tail settles before the next one starts.
        tokio::time::sleep(Duration::from_secs(1)).await;
        // scripts/bench-profile.sh starts sampling on this line.
        eprintln!("bench: measuring {name}");
        let line = match name.as_str() {
            "chain3_history" => {
                let runs = scaled(500);
                history(api.clone(), &ids.chain3, runs, done, args.history_runs).await
            }
            "chain3_seq" => scenario(api.clone(), name, &ids.chain3, scaled(100), 1, 3).await,
            "chain3" => scenario(api.clone(), name, &ids.chain3, scaled(500), 32, 3).await,
            "fanout4" => scenario(api.clone(), name, &ids.fanout4, scaled(200), 32, 5).await,
            "agent_loop" => {
                let tag = ids.tool.trim_start_matches("bench-echo-").to_owned();
                match agent_loop::setup(&api, &tag, &ids.tool).await {
                    Ok(agent) => {
                        let line = agent_loop::scenario(api.clone(), &agent, scaled(200), 1).await;
                        agent_loop::cleanup(&api, &agent).await;
                        line
                    }
                    Err(e) => Err(e),
                }
            }
            "warm_curve" => {
                // scripts/bench.sh says when it (re)started the graph server.
                let started_ms = std::env::var("AIDEN_BENCH_GRAPH_STARTED_MS")
                    .ok()
                    .and_then(|v| v.parse::<u128>().ok());
                let now_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis());
                let since = Duration::from_millis(
                    started_ms.map_or(0, |s| now_ms.saturating_sub(s)) as u64,
                );
                let duration = Duration::from_secs(args.curve_seconds);
                curve::scenario(api.clone(), &ids.chain3, duration, since).await
            }
            "fork20" => replays::fork20(&api, &ids.tool, scaled(50)).await,
            "replay100" => replays::replay100(api.clone(), &ids.tool).await,
            "isolation" => {
                let tag = ids.tool.trim_start_matches("bench-echo-").to_owned();
                match isolation::setup(&api, &tag).await {
                    Ok(backlog) => {
                        let line =
                            isolation::scenario(api.clone(), &backlog, &ids.chain3, scaled(100))
                                .await;
                        isolation::cleanup(&api, &backlog).await;
                        line
                    }
                    Err(e) => Err(e),
                }
            }
            other => Err(anyhow::anyhow!("unknown scenario `{other}`")),
        };
        match line {
            Ok(line) => {
                done += line["history_runs"]
                    .as_u64()
                    .or(line["workflows"].as_u64())
                    .unwrap_or(0) as usize;
                println!("{line}")
            }
            Err(e) => {
                cleanup(&api, &ids).await;
                return Err(e);
            }
        }
    }
    cleanup(&api, &ids).await;
    Ok(())
}
