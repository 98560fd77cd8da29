//! `aiden-bench-memory`: memory upkeep's report. Builds two conversations of
//! `--turns` user Turns through the public API, one with compression (budget `--budget`, the
//! compression Process on the scripted model) and one without (a budget it never reaches), and
//! after every append reads working memory. Prints JSON lines: working memory at the end and
//! its mean over all Turns (what an agent answering every Turn would be prompted with, WM-2),
//! with and without; the number of compressions; and the lag from the append that crossed the
//! budget to working memory using the new Summary.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use serde_json::{json, Value};

mod api;
use api::{Api, Target};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    target: Target,
    /// The scripted OpenAI-compatible model (`aiden-scripted-model`).
    #[arg(long)]
    model: String,
    #[arg(long, default_value_t = 500)]
    turns: usize,
    /// Working-memory tokens (path + summaries) that start a compression.
    #[arg(long, default_value_t = 4000)]
    budget: i64,
    /// Pause between appends (a person types slower than this).
    #[arg(long, default_value_t = 20)]
    pause_ms: u64,
}

/// What the scripted model answers for every compression: a fixed ~90-word summary.
const SUMMARY: &str = "The user and the assistant planned a three-city research trip for the \
    history-of-computing book: London for Babbage's engines at the Science Museum, Paris for \
    the Jacquard loom archive, Princeton for the von Neumann papers. They settled the budget at \
    4,200 euros, moved the Paris leg to May because the archive is closed in April, and kept \
    open whether to add Vienna. The user prefers trains to flights, writes in the mornings, and \
    wants every quotation checked against a primary source.";

const SENTENCES: [&str; 6] = [
    "Can we look again at the London leg and what the Science Museum holds on the difference engine?",
    "I would rather take the train from Paris; flights are more tiring than they look on paper.",
    "Please keep the budget under control, the publisher was clear that it cannot grow again.",
    "The Jacquard archive wants a letter from the publisher before they let anyone in.",
    "What did we decide about Vienna, and is there anything there I cannot find elsewhere?",
    "Let us check every quotation against the original letters before the draft goes out.",
];

fn stat(samples: &mut [f64]) -> Value {
    samples.sort_by(f64::total_cmp);
    if samples.is_empty() {
        return json!({"n": 0});
    }
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    json!({"n": samples.len(), "p50_ms": at(0.5), "max_ms": at(1.0)})
}

async fn create(api: &Api, path: &str, body: Value) -> anyhow::Result<String> {
    let v = api.send(reqwest::Method::POST, path, Some(body)).await?;
    Ok(v["id"].as_str().context("an id")?.to_owned())
}

/// The compression Process on the scripted model.
async fn compression_process(api: &Api, model: &str) -> anyhow::Result<String> {
    let tag = uuid_tag();
    let secret = create(
        api,
        "/v1/secrets",
        json!({"id": format!("bench-mem-key-{tag}"), "name": "bench model key", "type": "api_key", "value": "sk-bench"}),
    )
    .await?;
    let svc = create(
        api,
        "/v1/services",
        json!({
        "id": format!("bench-mem-llm-{tag}"), "name": "scripted model", "type": "llm_provider",
        "protocol": "http", "requiresSecret": true, "enabled": true,
        "connectionSchema": {"type": "object", "required": ["endpoint", "model"],
            "properties": {"endpoint": {"type": "string"}, "model": {"type": "string"}}}}),
    )
    .await?;
    let tool = create(
        api,
        "/v1/tools",
        json!({
        "id": format!("bench-mem-model-{tag}"), "name": "model", "serviceId": svc,
        "secretId": secret, "connectionParams": {"endpoint": model, "model": "scripted"},
        "operation": {"type": "llm_call", "api": "openai", "promptTemplate": "{{message}}"},
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
        "outputSchema": {"type": "object"}}),
    )
    .await?;
    let script = format!(
        "script:[{{\"answer\": {}}}]",
        serde_json::to_string(SUMMARY)?
    );
    create(
        api,
        "/v1/processes",
        json!({
        "id": format!("bench-mem-compress-{tag}"), "name": "bench compression",
        "initialContext": ["transcript"],
        "steps": [{"id": "llm", "tool": tool, "inputs": {"message": script},
                   "output": {"variable": "r", "required": true},
                   "execution": {"mode": "sequential", "timeout": 30000}}],
        "outputTemplate": "{{r.text}}"}),
    )
    .await
}

fn uuid_tag() -> String {
    format!("{:x}", chrono::Utc::now().timestamp_micros())
}

struct Outcome {
    final_tokens: u64,
    mean_tokens: f64,
    summaries: usize,
    lags: Vec<f64>,
}

async fn build(api: &Api, args: &Args, process: Option<&str>) -> anyhow::Result<Outcome> {
    let c = create(api, "/v1/conversations", json!({"title": "memory bench"})).await?;
    let budget = if process.is_some() {
        args.budget
    } else {
        10_000_000
    };
    let mut patch = json!({"compressionTokenBudget": budget});
    if let Some(p) = process {
        patch["compressionProcessId"] = json!(p);
    }
    api.send(
        reqwest::Method::PATCH,
        &format!("/v1/conversations/{c}"),
        Some(patch),
    )
    .await?;
    let mut parent: Option<String> = None;
    let (mut total, mut lags) = (0u64, Vec::new());
    let mut crossed: Option<Instant> = None;
    let mut last_summary = Value::Null;
    let mut wm = Value::Null;
    for i in 0..args.turns {
        let content = format!("{} ({i})", SENTENCES[i % SENTENCES.len()]);
        let mut body = json!({"speaker": "user", "content": content});
        if let Some(p) = &parent {
            body["parentTurnId"] = json!(p);
        }
        let t = api
            .send(
                reqwest::Method::POST,
                &format!("/v1/conversations/{c}/turns"),
                Some(body),
            )
            .await?;
        parent = t["id"].as_str().map(str::to_owned);
        wm = working_memory(api, &c).await?;
        track(&wm, budget, &mut crossed, &mut last_summary, &mut lags);
        total += wm["totalTokens"].as_u64().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(args.pause_ms)).await;
    }
    // The last crossing's Summary may still be on its way.
    let until = Instant::now() + Duration::from_secs(30);
    while crossed.is_some() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
        wm = working_memory(api, &c).await?;
        track(&wm, budget, &mut crossed, &mut last_summary, &mut lags);
    }
    let summaries = api
        .send(
            reqwest::Method::GET,
            &format!("/v1/conversations/{c}/summaries"),
            None,
        )
        .await?["items"]
        .as_array()
        .map_or(0, Vec::len);
    Ok(Outcome {
        final_tokens: wm["totalTokens"].as_u64().unwrap_or(0),
        mean_tokens: total as f64 / args.turns.max(1) as f64,
        summaries,
        lags,
    })
}

async fn working_memory(api: &Api, c: &str) -> anyhow::Result<Value> {
    let path = format!("/v1/conversations/{c}/working-memory");
    api.send(reqwest::Method::GET, &path, None).await
}

/// Notes when path + summaries first exceed the budget, and when a new Summary is in use.
fn track(
    wm: &Value,
    budget: i64,
    crossed: &mut Option<Instant>,
    last_summary: &mut Value,
    lags: &mut Vec<f64>,
) {
    let summary = wm["summaries"][0]["id"].clone();
    if summary != *last_summary && !summary.is_null() {
        *last_summary = summary;
        if let Some(at) = crossed.take() {
            lags.push((at.elapsed().as_secs_f64() * 1e6).round() / 1e3);
        }
    }
    let path: i64 = wm["immediatePath"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["tokens"].as_i64().unwrap_or(0))
        .sum();
    let sums: i64 = wm["summaries"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["tokenCount"].as_i64().unwrap_or(0))
        .sum();
    if crossed.is_none() && path + sums > budget {
        *crossed = Some(Instant::now());
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let api = args.target.api(reqwest::Client::new());
    let process = compression_process(&api, &args.model).await?;
    for (phase, p) in [("without", None), ("with", Some(process.as_str()))] {
        let mut o = build(&api, &args, p).await?;
        println!(
            "{}",
            json!({"scenario": "memory", "phase": phase, "turns": args.turns,
                   "budget": if p.is_some() { json!(args.budget) } else { Value::Null },
                   "final_working_memory_tokens": o.final_tokens,
                   "mean_prompt_memory_tokens": (o.mean_tokens * 10.0).round() / 10.0,
                   "summaries": o.summaries,
                   "lag_cross_to_used": stat(&mut o.lags)})
        );
    }
    Ok(())
}
