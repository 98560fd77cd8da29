//! `aiden-overload [SECONDS]` (run by `scripts/overload.sh`): one `aiden
//! serve` with an admission bound and one `rest_api` pool on the tests' stack. It measures the
//! rate the stack sustains (closed loop), then starts runs at ten times that rate for SECONDS
//! (default 60), then measures how long throughput takes to return. Prints the starts accepted
//! and refused (503/429, each with `Retry-After`), requests that got no answer, the slowest
//! answer, the peak memory of every process, runs lost or stuck, and the recovery time. Exits
//! non-zero when anything acknowledged is lost or stuck, a request hangs, or recovery takes
//! more than 30 s.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiden_tests::chaos::{define, start_run_raw, start_upstream};
use aiden_tests::procs::{free_port, spawn_env, Api};
use anyhow::{bail, Result};
use reqwest::Method;

/// Ready messages in the run queues past which new runs are refused (the serve's setting).
const BOUND: &str = "200";
const CLIENTS: usize = 32;
const RECOVERY_LIMIT: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Tally {
    accepted: Mutex<Vec<String>>,
    refused: AtomicU64,
    refused_without_retry_after: AtomicU64,
    unanswered: AtomicU64,
    other: AtomicU64,
    slowest_ms: AtomicU64,
}

/// Resident memory of a process, in MiB.
fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

fn pid_of(pattern: &str) -> Option<u32> {
    let out = std::process::Command::new("pgrep")
        .args(["-o", "-f", pattern])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

async fn start(api: &Api, process: &str) -> Result<reqwest::Response, reqwest::Error> {
    start_run_raw(api, process).await
}

async fn status_of(api: &Api, run: &str) -> Option<String> {
    let (s, b) = api
        .call(Method::GET, &format!("/v1/runs/{run}"), None)
        .await;
    (s == 200).then(|| b["status"].as_str().unwrap_or_default().to_owned())
}

fn terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "canceled")
}

/// Runs the stack completes per second: CLIENTS starters start runs for `window` (a refused
/// start waits a little), then every started run is waited for; the rate is the runs started
/// over the time until the last one ended.
async fn sustained(api: &Api, process: &str, window: Duration) -> f64 {
    let began = Instant::now();
    let until = began + window;
    let starters = (0..CLIENTS).map(|_| {
        let (api, process) = (api.clone(), process.to_owned());
        tokio::spawn(async move {
            let mut runs = Vec::new();
            while Instant::now() < until {
                match start(&api, &process).await {
                    Ok(res) if res.status().as_u16() == 202 => {
                        let body: serde_json::Value = res.json().await.unwrap_or_default();
                        runs.push(body["runId"].as_str().unwrap_or_default().to_owned());
                    }
                    _ => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
            runs
        })
    });
    let runs: Vec<String> = futures::future::join_all(starters)
        .await
        .into_iter()
        .flat_map(Result::unwrap_or_default)
        .collect();
    for run in &runs {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline && !status_of(api, run).await.is_some_and(|s| terminal(&s))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    runs.len() as f64 / began.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() -> Result<()> {
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(60);
    let port = free_port();
    let _serve = spawn_env(
        &["serve"],
        port,
        &[("AIDEN_ADMIT_QUEUE_BOUND", BOUND.into())],
    );
    let _pool = spawn_env(&["worker", "--type", "rest_api"], 0, &[]);
    let api = Api::local(port);
    api.wait_ready().await;
    let (_up, upstream) = start_upstream().await;
    let tag = format!("ovl-{}", &uuid::Uuid::now_v7().simple().to_string()[20..]);
    let process = define(&api, &upstream, &tag, 0).await;

    let rate = sustained(&api, &process, Duration::from_secs(10)).await;
    println!(
        "overload: the stack sustains {rate:.0} runs/s (3 steps each; {CLIENTS} starters for 10 s, until every run ended)"
    );
    if rate < 1.0 {
        bail!("no sustained rate to overload");
    }

    // Memory of every process, sampled while the load runs.
    let pids: Vec<(&str, Option<u32>)> = vec![
        (
            "aiden serve",
            pid_of(&format!("aiden serve.*{port}")).or_else(|| pid_of("aiden serve")),
        ),
        ("rest_api pool", pid_of("aiden worker --type rest_api")),
        ("Neo4j", pid_of("neo4j-test")),
        ("RabbitMQ", pid_of("beam.smp")),
    ];
    let peaks = Arc::new(Mutex::new(vec![0.0f64; pids.len()]));
    let sampling = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (pids, peaks, sampling) = (pids.clone(), peaks.clone(), sampling.clone());
        tokio::spawn(async move {
            while sampling.load(Ordering::Relaxed) {
                for (i, (_, pid)) in pids.iter().enumerate() {
                    if let Some(m) = pid.and_then(rss_mib) {
                        let mut p = peaks.lock().unwrap();
                        p[i] = p[i].max(m);
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };

    // Ten times the sustained rate, open loop: a start every tick whatever the answers.
    let target = rate * 10.0;
    let tally = Arc::new(Tally::default());
    let every = Duration::from_secs_f64(1.0 / target);
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut inflight = Vec::new();
    while Instant::now() < until {
        ticks.tick().await;
        let (api, process, tally) = (api.clone(), process.clone(), tally.clone());
        inflight.push(tokio::spawn(async move {
            let asked = Instant::now();
            let answer = start(&api, &process).await;
            let ms = asked.elapsed().as_millis() as u64;
            tally.slowest_ms.fetch_max(ms, Ordering::Relaxed);
            match answer {
                Err(_) => {
                    tally.unanswered.fetch_add(1, Ordering::Relaxed);
                }
                Ok(res) => {
                    let status = res.status().as_u16();
                    let retry = res.headers().contains_key("retry-after");
                    match status {
                        202 => {
                            let body: serde_json::Value = res.json().await.unwrap_or_default();
                            let run = body["runId"].as_str().unwrap_or_default().to_owned();
                            tally.accepted.lock().unwrap().push(run);
                        }
                        429 | 503 => {
                            tally.refused.fetch_add(1, Ordering::Relaxed);
                            if !retry {
                                tally
                                    .refused_without_retry_after
                                    .fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        _ => {
                            tally.other.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        }));
        inflight.retain(|h| !h.is_finished());
    }
    futures::future::join_all(inflight).await;
    let overload_ended = Instant::now();

    // Recovery: windows of 3 s until the rate is back to 90 % of the sustained one.
    let mut recovered = None;
    while overload_ended.elapsed() < Duration::from_secs(120) {
        if sustained(&api, &process, Duration::from_secs(3)).await >= rate * 0.9 {
            recovered = Some(overload_ended.elapsed());
            break;
        }
    }
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.await;

    // Every acknowledged run must settle.
    let accepted = tally.accepted.lock().unwrap().clone();
    let (mut lost, mut stuck) = (0usize, 0usize);
    let deadline = Instant::now() + Duration::from_secs(180);
    for run in &accepted {
        loop {
            match status_of(&api, run).await {
                None => {
                    lost += 1;
                    break;
                }
                Some(s) if terminal(&s) => break,
                Some(_) if Instant::now() > deadline => {
                    stuck += 1;
                    break;
                }
                Some(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    let peaks = peaks.lock().unwrap().clone();
    println!(
        "overload: {seconds} s at {target:.0} starts/s: accepted {}, refused {} (without Retry-After {}), other answers {}, no answer {}, slowest answer {} ms",
        accepted.len(),
        tally.refused.load(Ordering::Relaxed),
        tally.refused_without_retry_after.load(Ordering::Relaxed),
        tally.other.load(Ordering::Relaxed),
        tally.unanswered.load(Ordering::Relaxed),
        tally.slowest_ms.load(Ordering::Relaxed),
    );
    for ((name, pid), peak) in pids.iter().zip(&peaks) {
        match pid {
            Some(_) => println!("overload: peak memory {name}: {peak:.0} MiB"),
            None => println!("overload: peak memory {name}: not found"),
        }
    }
    println!(
        "overload: runs acknowledged {}, lost {lost}, stuck {stuck}",
        accepted.len()
    );
    match recovered {
        Some(t) => println!(
            "overload: throughput back to 90 % of {rate:.0} runs/s {:.1} s after the load",
            t.as_secs_f64()
        ),
        None => println!("overload: throughput not back within 120 s"),
    }
    let refused_bad = tally.refused_without_retry_after.load(Ordering::Relaxed);
    let hung = tally.unanswered.load(Ordering::Relaxed);
    if lost > 0
        || stuck > 0
        || hung > 0
        || refused_bad > 0
        || recovered.is_none_or(|t| t > RECOVERY_LIMIT)
    {
        bail!("overload: not held (see above)");
    }
    println!("overload: held");
    Ok(())
}
