//! `aiden-bench-conversations`: the conversation benchmark. Builds one conversation
//! `--depth` turns deep with `--alternatives` user Alternatives per Turn through the public API,
//! timing every request, then times switches, working memory at several depths and the whole
//! tree. Requests are sequential (latency, not throughput). Prints one JSON line per operation:
//! `{scenario, op, n, p50_ms, p99_ms, mean_ms, max_ms}`.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use clap::Parser;
use serde_json::{json, Value};

#[derive(Parser)]
struct Args {
    #[arg(long, env = "AIDEN_SERVER", default_value = "http://127.0.0.1:8080")]
    server: String,
    #[arg(long, env = "AIDEN_TOKEN")]
    token: String,
    /// Turns in the conversation.
    #[arg(long, default_value_t = 1000)]
    depth: usize,
    /// User Alternatives per Turn (the first, plus edits).
    #[arg(long, default_value_t = 3)]
    alternatives: usize,
    /// Timed switches of the active Alternative, on random Turns.
    #[arg(long, default_value_t = 300)]
    switches: usize,
    /// Timed working-memory reads per depth.
    #[arg(long, default_value_t = 100)]
    reads: usize,
    /// Timed whole-tree reads.
    #[arg(long, default_value_t = 20)]
    trees: usize,
    /// Turns of a throwaway conversation built first, unmeasured (JIT and caches warm up).
    #[arg(long, default_value_t = 300)]
    warmup: usize,
}

struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    /// One request; returns the JSON answer and how long it took.
    async fn timed(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(Value, Duration)> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let t0 = Instant::now();
        let resp = req.send().await?;
        let status = resp.status();
        let text = resp.text().await?;
        let took = t0.elapsed();
        if !status.is_success() {
            bail!("{path}: {status}: {text}");
        }
        Ok((serde_json::from_str(&text)?, took))
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn line(op: &str, mut samples: Vec<Duration>) -> Value {
    samples.sort();
    let at = |p: f64| ms(samples[((samples.len() as f64 - 1.0) * p).round() as usize]);
    let mean = samples.iter().sum::<Duration>() / samples.len().max(1) as u32;
    json!({"scenario": "conversation", "op": op, "n": samples.len(), "p50_ms": at(0.5),
           "p99_ms": at(0.99), "mean_ms": ms(mean), "max_ms": at(1.0)})
}

/// A small deterministic generator, so runs are comparable without a rand dependency.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// A built conversation: its Turns (each with its Alternatives' ids, the active one last) and
/// the latency of every append and addition.
struct Built {
    conversation: String,
    turns: Vec<(String, Vec<String>)>,
    appends: Vec<Duration>,
    additions: Vec<Duration>,
}

/// Appends `depth` Turns, each under the previous one, then adds the other Alternatives (each
/// new one becomes active, so the next Turn continues from the last edit).
async fn build(api: &Api, depth: usize, alternatives: usize, title: &str) -> anyhow::Result<Built> {
    let post = reqwest::Method::POST;
    let (conv, _) = api
        .timed(
            post.clone(),
            "/v1/conversations",
            Some(json!({"title": title})),
        )
        .await?;
    let conv = conv["id"].as_str().context("conversation id")?.to_owned();
    let (mut appends, mut additions) = (Vec::new(), Vec::new());
    let mut turns: Vec<(String, Vec<String>)> = Vec::with_capacity(depth);
    for d in 1..=depth {
        let mut body =
            json!({"speaker": "user", "content": format!("turn {d}: what about item {d}?")});
        if let Some((parent, _)) = turns.last() {
            body["parentTurnId"] = json!(parent);
        }
        let (turn, took) = api
            .timed(
                post.clone(),
                &format!("/v1/conversations/{conv}/turns"),
                Some(body),
            )
            .await?;
        appends.push(took);
        let turn_id = turn["id"].as_str().context("turn id")?.to_owned();
        let mut alts = vec![turn["alternatives"][0]["id"]
            .as_str()
            .context("alt")?
            .to_owned()];
        for k in 2..=alternatives {
            let body =
                json!({"content": format!("turn {d}, edit {k}: what about item {d}, really?")});
            let (t, took) = api
                .timed(
                    post.clone(),
                    &format!("/v1/turns/{turn_id}/alternatives"),
                    Some(body),
                )
                .await?;
            additions.push(took);
            alts.push(t["id"].as_str().context("the new alternative")?.to_owned());
        }
        turns.push((turn_id, alts));
    }
    Ok(Built {
        conversation: conv,
        turns,
        appends,
        additions,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(
        args.depth >= 1 && args.alternatives >= 1,
        "depth and alternatives must be positive"
    );
    let api = Api {
        http: reqwest::Client::builder().tcp_nodelay(true).build()?,
        base: args.server.trim_end_matches('/').to_owned(),
        token: args.token.clone(),
    };
    if args.warmup > 0 {
        build(&api, args.warmup, args.alternatives, "warm-up").await?;
    }
    let built = Instant::now();
    let b = build(&api, args.depth, args.alternatives, "benchmark").await?;
    let (conv, turns) = (b.conversation, b.turns);
    println!(
        "{}",
        json!({"scenario": "conversation", "op": "build", "turns": args.depth,
               "alternatives": args.depth * args.alternatives,
               "wall_s": (built.elapsed().as_secs_f64() * 1000.0).round() / 1000.0})
    );
    println!("{}", line("append_user_turn", b.appends));
    if !b.additions.is_empty() {
        println!("{}", line("add_alternative", b.additions));
    }

    // Switch the active Alternative of random Turns.
    let mut rng = Lcg(42);
    let mut switches = Vec::with_capacity(args.switches);
    for _ in 0..args.switches {
        let (turn, alts) = &turns[rng.below(turns.len())];
        let alt = &alts[rng.below(alts.len())];
        let (_, took) = api
            .timed(
                reqwest::Method::PUT,
                &format!("/v1/turns/{turn}/active"),
                Some(json!({"alternativeId": alt})),
            )
            .await?;
        switches.push(took);
    }
    println!("{}", line("switch_active", switches));

    // Working memory at several depths (from the last Alternative of the Turn at that depth,
    // whose path is exactly that deep whatever is active upstream).
    for depth in [10, 100, 1000].into_iter().filter(|d| *d <= args.depth) {
        let alt = turns[depth - 1].1.last().context("alternative")?;
        let path = format!("/v1/conversations/{conv}/working-memory?alternativeId={alt}");
        let mut reads = Vec::with_capacity(args.reads);
        for i in 0..args.reads + 3 {
            let (wm, took) = api.timed(reqwest::Method::GET, &path, None).await?;
            let got = wm["immediatePath"].as_array().map_or(0, Vec::len);
            ensure!(
                got == depth,
                "working memory at depth {depth} has {got} entries"
            );
            if i >= 3 {
                reads.push(took); // the first three warm up
            }
        }
        println!("{}", line(&format!("working_memory_depth_{depth}"), reads));
    }

    // The whole tree.
    let mut trees = Vec::with_capacity(args.trees);
    for _ in 0..args.trees {
        let (tree, took) = api
            .timed(
                reqwest::Method::GET,
                &format!("/v1/conversations/{conv}/tree"),
                None,
            )
            .await?;
        let turns_seen = tree["turns"].as_array().map_or(0, Vec::len);
        let alts_seen: usize = tree["turns"].as_array().map_or(0, |t| {
            t.iter()
                .map(|t| t["alternatives"].as_array().map_or(0, Vec::len))
                .sum()
        });
        ensure!(
            turns_seen == args.depth && alts_seen == args.depth * args.alternatives,
            "tree has {turns_seen} turns and {alts_seen} alternatives"
        );
        trees.push(took);
    }
    println!("{}", line("tree", trees));

    // The windowed tree a chat view asks for: the 40 levels above the current position (the
    // deepest Turn), which is the 41st.
    let (from, to) = (args.depth.saturating_sub(40).max(1), args.depth + 20);
    let mut windows = Vec::with_capacity(args.trees * 5);
    for i in 0..args.trees * 5 + 3 {
        let (tree, took) = api
            .timed(
                reqwest::Method::GET,
                &format!("/v1/conversations/{conv}/tree?fromSequence={from}&toSequence={to}"),
                None,
            )
            .await?;
        let turns_seen = tree["turns"].as_array().map_or(0, Vec::len);
        ensure!(
            turns_seen == args.depth + 1 - from,
            "window has {turns_seen} turns"
        );
        if i >= 3 {
            windows.push(took); // the first three warm up
        }
    }
    println!("{}", line("tree_window_41_levels", windows));
    Ok(())
}
