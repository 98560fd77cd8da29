//! `aiden-bench-ingestion`: the knowledge layer's benchmark. Appends `--turns` user
//! Turns round-robin over `--conversations` conversations (each Turn under the previous one of
//! its conversation) at `--rate` Turns per second through the public API, timing every append;
//! with `--phase with`, it then waits until every binding is final and reports the ingestion lag
//! from the Alternative's `createdAt` (its commit) to `boundAt` and to `extractedAt`, all
//! server timestamps. Prints one JSON line per measure:
//! `{scenario, phase, op, n, p50_ms, p99_ms, mean_ms, max_ms}`.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use serde_json::{json, Value};

mod api;
use api::Target;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    target: Target,
    #[arg(long, default_value_t = 1000)]
    turns: usize,
    #[arg(long, default_value_t = 50)]
    conversations: usize,
    /// Appends per second (0: as fast as the API answers).
    #[arg(long, default_value_t = 4.0)]
    rate: f64,
    /// `with`: ingestion runs beside the appends, and its lag is measured; `without`: appends only.
    #[arg(long, default_value = "with")]
    phase: String,
    /// How long to wait for every binding to become final.
    #[arg(long, default_value_t = 1200)]
    wait_secs: u64,
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn line(phase: &str, op: &str, mut samples: Vec<f64>) -> Value {
    samples.sort_by(f64::total_cmp);
    if samples.is_empty() {
        return json!({"scenario": "ingestion", "phase": phase, "op": op, "n": 0});
    }
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    json!({"scenario": "ingestion", "phase": phase, "op": op, "n": samples.len(),
           "p50_ms": at(0.5), "p99_ms": at(0.99), "mean_ms": (mean * 1e3).round() / 1e3,
           "max_ms": at(1.0)})
}

const NAMES: [&str; 8] = [
    "Ada Lovelace",
    "Charles Babbage",
    "Grace Hopper",
    "Alan Turing",
    "Mary Somerville",
    "John von Neumann",
    "Hedy Lamarr",
    "Claude Shannon",
];
const PLACES: [&str; 6] = [
    "London",
    "Paris",
    "Princeton",
    "Vienna",
    "Arlington",
    "Cambridge",
];

fn millis_between(from: &str, to: &str) -> Option<f64> {
    let f = chrono::DateTime::parse_from_rfc3339(from).ok()?;
    let t = chrono::DateTime::parse_from_rfc3339(to).ok()?;
    Some((t - f).num_microseconds()? as f64 / 1e3)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let api = a.target.api(reqwest::Client::new());
    let post = reqwest::Method::POST;
    let mut convs = Vec::with_capacity(a.conversations);
    for i in 0..a.conversations.max(1) {
        let c = api
            .send(
                post.clone(),
                "/v1/conversations",
                Some(json!({"title": format!("ingestion bench {i}")})),
            )
            .await?;
        convs.push((c["id"].as_str().context("id")?.to_owned(), None::<String>));
    }
    let mut appends = Vec::with_capacity(a.turns);
    let mut turns = Vec::with_capacity(a.turns);
    let started = Instant::now();
    for i in 0..a.turns {
        if a.rate > 0.0 {
            let due = started + Duration::from_secs_f64(i as f64 / a.rate);
            tokio::time::sleep_until(due.into()).await;
        }
        let slot = i % convs.len();
        let (conv, parent) = &convs[slot];
        let content = format!(
            "Turn {i}: {} met {} in {} to talk about the {} notes.",
            NAMES[i % NAMES.len()],
            NAMES[(i / 3 + 1) % NAMES.len()],
            PLACES[i % PLACES.len()],
            NAMES[(i / 7 + 2) % NAMES.len()]
        );
        let mut body = json!({"speaker": "user", "content": content});
        if let Some(p) = parent {
            body["parentTurnId"] = json!(p);
        }
        let t0 = Instant::now();
        let turn = api
            .send(
                post.clone(),
                &format!("/v1/conversations/{conv}/turns"),
                Some(body),
            )
            .await?;
        appends.push(ms(t0.elapsed()));
        let turn_id = turn["id"].as_str().context("turn id")?.to_owned();
        convs[slot].1 = Some(turn_id.clone());
        turns.push(turn_id);
    }
    println!("{}", line(&a.phase, "append", appends));
    if a.phase != "with" {
        return Ok(());
    }
    let deadline = Instant::now() + Duration::from_secs(a.wait_secs);
    let mut pending: Vec<String> = turns;
    let (mut bound, mut extracted) = (Vec::new(), Vec::new());
    let (mut skipped, mut failed) = (0usize, 0usize);
    while !pending.is_empty() {
        if Instant::now() > deadline {
            bail!(
                "{} bindings not final after {} s",
                pending.len(),
                a.wait_secs
            );
        }
        let mut still = Vec::new();
        for t in pending {
            let turn = api
                .send(reqwest::Method::GET, &format!("/v1/turns/{t}"), None)
                .await?;
            let alt = &turn["alternatives"][0];
            match alt["binding"].as_str() {
                Some("extracted") | Some("skipped") | Some("failed") => {
                    let created = alt["createdAt"].as_str().unwrap_or_default();
                    if let Some(b) = alt["boundAt"]
                        .as_str()
                        .and_then(|b| millis_between(created, b))
                    {
                        bound.push(b);
                    }
                    match alt["binding"].as_str() {
                        Some("extracted") => {
                            if let Some(x) = alt["extractedAt"]
                                .as_str()
                                .and_then(|x| millis_between(created, x))
                            {
                                extracted.push(x);
                            }
                        }
                        Some("skipped") => skipped += 1,
                        _ => failed += 1,
                    }
                }
                _ => still.push(t),
            }
        }
        pending = still;
        if !pending.is_empty() {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    println!("{}", line(&a.phase, "lag_commit_to_bound", bound));
    println!("{}", line(&a.phase, "lag_commit_to_extracted", extracted));
    println!(
        "{}",
        json!({"scenario": "ingestion", "phase": a.phase, "op": "outcome",
        "turns": a.turns, "conversations": a.conversations, "rate_per_s": a.rate,
        "skipped": skipped, "failed": failed,
        "wall_s": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0})
    );
    Ok(())
}
