//! `aiden-soak [SECONDS] [KILLS]` (run by `scripts/soak.sh`): mixed load — Process
//! runs, agent runs that call a Tool, conversations answered by an agent turn, all on the
//! scripted model — against two `aiden serve` instances and one worker pool per type in use,
//! while KILLS SIGKILLs (default 20) hit random processes and RabbitMQ and Neo4j are
//! each restarted once. Then it waits for everything to settle and prints what must all be 0:
//! runs lost (acknowledged, then gone) or stuck, step results recorded twice, Alternatives left
//! generating, `aiden check` violations. Exits non-zero if any is not.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiden_tests::chaos::{
    cluster_env, define, define_agent, rabbitmqctl, stack, stack_args, start_upstream,
};
use aiden_tests::procs::{admin_token, binary, envs, free_port, sigkill, spawn_env, Api, Proc};
use anyhow::{bail, Result};
use reqwest::Method;
use serde_json::{json, Value};

/// Lease short enough that a killed engine's runs move on within seconds.
const LEASE_MS: &str = "3000";
const LOOPS: usize = 6;

/// Everything the load acknowledged, to check at the end.
#[derive(Default)]
struct Ledger {
    runs: Vec<(String, &'static str)>,
    /// The agent turns' ids (their Alternative must settle).
    turns: Vec<String>,
    /// Requests that failed without an answer (the load retried them).
    unanswered: u32,
}

/// The two API instances; a request goes to one and, when it gets no answer or a 503, to the
/// other, for up to a minute (a killed instance, a restarting broker or graph).
#[derive(Clone)]
struct Apis(Arc<[Api; 2]>, Arc<AtomicU32>);

impl Apis {
    async fn call(
        &self,
        ledger: &Mutex<Ledger>,
        method: Method,
        path: &str,
        body: Value,
        key: Option<&str>,
    ) -> (u16, Value) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let n = self.1.fetch_add(1, Ordering::Relaxed) as usize;
            let api = &self.0[n % 2];
            let mut req = api
                .http
                .request(method.clone(), format!("{}{path}", api.base))
                .bearer_auth(&api.token)
                .timeout(Duration::from_secs(20));
            if method != Method::GET {
                req = req.json(&body);
            }
            if let Some(k) = key {
                req = req.header("Idempotency-Key", k);
            }
            let answer = match req.send().await {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    Some((status, resp.json().await.unwrap_or(Value::Null)))
                }
                Err(_) => None,
            };
            match answer {
                Some((status, body)) if status != 503 && status != 502 => return (status, body),
                None => ledger.lock().unwrap().unanswered += 1,
                Some(_) => {}
            }
            if Instant::now() > deadline {
                return (0, Value::Null);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Apis {
    /// A POST without an idempotency key: the answer's body if its status is `expect`.
    async fn post(
        &self,
        ledger: &Mutex<Ledger>,
        path: &str,
        body: Value,
        expect: u16,
    ) -> Option<Value> {
        let (s, b) = self.call(ledger, Method::POST, path, body, None).await;
        (s == expect).then_some(b)
    }

    async fn get(&self, ledger: &Mutex<Ledger>, path: &str) -> (u16, Value) {
        self.call(ledger, Method::GET, path, Value::Null, None)
            .await
    }
}

struct Fleet {
    serve: [(u16, &'static str, Proc); 2],
    workers: Vec<(&'static str, Proc)>,
}

/// `SOAK_CLUSTER=1` (`scripts/soak.sh --cluster`): the processes use the three-node cluster of
/// `scripts/stack.sh cluster-up` (its own virtual host, quorum queues), and the faults kill
/// RabbitMQ nodes and Neo4j instead of restarting the single broker and stopping the graph.
fn cluster() -> bool {
    std::env::var("SOAK_CLUSTER").is_ok_and(|v| v == "1")
}

const CLUSTER_VHOST: &str = "aiden-soak";

fn broker_env() -> Vec<(&'static str, String)> {
    if cluster() {
        cluster_env(CLUSTER_VHOST)
    } else {
        Vec::new()
    }
}

fn serve(port: u16, instance: &'static str) -> Proc {
    let mut env = vec![
        ("AIDEN_ENGINE_LEASE_MS", LEASE_MS.into()),
        ("AIDEN_INSTANCE_ID", instance.into()),
    ];
    env.extend(broker_env());
    spawn_env(&["serve"], port, &env)
}

fn worker(ty: &str, port: u16) -> Proc {
    spawn_env(
        &["worker", "--type", ty, "--concurrency", "4"],
        port,
        &broker_env(),
    )
}

/// Kills one cluster node (SIGKILL) and starts it again after `down`.
async fn kill_mq_node(node: u64, down: Duration) {
    let n = node.to_string();
    stack_args(&["mq-kill", &n]);
    tokio::time::sleep(down).await;
    stack_args(&["mq-up", &n]);
}

/// A small xorshift: the soak's random choices, reproducible from the printed seed.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().map_or(Ok(120), |a| a.parse())?;
    let kills: u64 = args.next().map_or(Ok(20), |a| a.parse())?;
    let seed = std::env::var("SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| uuid::Uuid::now_v7().as_u128() as u64 | 1);
    println!("soak: {seconds} s, {kills} SIGKILLs, seed {seed} (SOAK_SEED repeats the choices)");
    let _ = binary();

    let (up, upstream) = start_upstream().await;
    let (model, model_url) = aiden_tests::scripted_model::start().await;
    let ports = [free_port(), free_port()];
    let api = |port: u16| Api {
        http: reqwest::Client::new(),
        base: format!("http://127.0.0.1:{port}"),
        token: admin_token(),
    };
    let mut fleet = Fleet {
        serve: [
            (ports[0], "soak-a", serve(ports[0], "soak-a")),
            (ports[1], "soak-b", serve(ports[1], "soak-b")),
        ],
        workers: vec![
            ("rest_api", worker("rest_api", ports[0])),
            ("llm_call", worker("llm_call", ports[0])),
        ],
    };
    let apis = Apis(Arc::new([api(ports[0]), api(ports[1])]), Default::default());
    for a in apis.0.iter() {
        a.wait_ready().await;
    }

    let tag = format!("soak-{}", &uuid::Uuid::now_v7().simple().to_string()[20..]);
    let chain = define(&apis.0[0], &upstream, &tag, 150).await;
    let agent = define_agent(&apis.0[0], &upstream, &model_url, &format!("{tag}-ag")).await;
    let chat = format!("chat-{tag}");
    let (s, b) = apis.0[0]
        .call(Method::POST, "/v1/processes", Some(json!({"id": chat, "name": "soak chat agent",
            "initialContext": ["conversationId", "turnId", "alternativeId", "userMessage", "workingMemory"],
            "steps": [{"id": "answer", "tool": format!("model-{tag}-ag"),
                       "agent": {"tools": [format!("tool-{tag}-ag")]},
                       "inputs": {"message": "{{userMessage}}"}, "output": {"variable": "a"}}],
            "outputTemplate": "{{a.text}}"})))
        .await;
    if s != 201 {
        bail!("defining the chat agent: {s} {b}");
    }

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut loops = Vec::new();
    for i in 0..LOOPS {
        let (apis, ledger, stop) = (apis.clone(), ledger.clone(), stop.clone());
        let (chain, agent, chat, tag) = (chain.clone(), agent.clone(), chat.clone(), tag.clone());
        loops.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let call_tag = format!("{tag}-{i}-{n}");
                let script = json!([{"calls": [{"name": "slow_call", "args": {"tag": call_tag, "ms": "50"}}]},
                                    {"answer": "done"}]);
                let run = match (i + n as usize) % 3 {
                    0 => start_run(&apis, &ledger, &chain, json!({}), "chain").await,
                    1 => start_run(&apis, &ledger, &agent, json!({"question": format!("script:{script}")}), "agent").await,
                    _ => agent_turn(&apis, &ledger, &chat, &format!("script:{script}")).await,
                };
                if let Some(run) = run {
                    wait_settled(&apis, &ledger, &run, Duration::from_secs(30)).await;
                }
            }
        }));
    }

    // The faults: KILLS SIGKILLs spread over the run, RabbitMQ at 30 %, the graph at 60 %; on
    // the cluster, a RabbitMQ node SIGKILLed at 25 % and 50 % and Neo4j SIGKILLed at 70 %.
    let mut rng = Rng(seed);
    let mut mq_kills = if cluster() {
        vec![25u64, 50]
    } else {
        Vec::new()
    };
    let (mut mq_nodes_killed, mut graph_killed) = (0, 0);
    let slot = Duration::from_secs(seconds) / (kills as u32 + 1);
    let (mut killed_serve, mut killed_workers) = (0, 0);
    let (mut mq_done, mut graph_done) = (false, false);
    for k in 1..=kills {
        let at = slot * k as u32 + Duration::from_millis(rng.below(slot.as_millis() as u64 / 2));
        while started.elapsed() < at {
            if mq_kills
                .first()
                .is_some_and(|p| started.elapsed() > Duration::from_secs(seconds * p / 100))
            {
                mq_kills.remove(0);
                let node = 1 + rng.below(3);
                println!(
                    "soak: {:>5.1} s SIGKILL RabbitMQ node {node}",
                    started.elapsed().as_secs_f64()
                );
                kill_mq_node(node, Duration::from_secs(3)).await;
                mq_nodes_killed += 1;
            }
            if cluster() && !graph_done && started.elapsed() > Duration::from_secs(seconds * 7 / 10)
            {
                println!(
                    "soak: {:>5.1} s SIGKILL Neo4j",
                    started.elapsed().as_secs_f64()
                );
                stack("graph-kill");
                tokio::time::sleep(Duration::from_secs(2)).await;
                stack("graph-up");
                graph_done = true;
                graph_killed += 1;
            }
            if !cluster() && !mq_done && started.elapsed() > Duration::from_secs(seconds * 3 / 10) {
                println!(
                    "soak: {:>5.1} s restarting RabbitMQ",
                    started.elapsed().as_secs_f64()
                );
                rabbitmqctl(&["stop_app"]);
                tokio::time::sleep(Duration::from_secs(1)).await;
                rabbitmqctl(&["start_app"]);
                rabbitmqctl(&["await_startup"]);
                mq_done = true;
            }
            if !cluster()
                && !graph_done
                && started.elapsed() > Duration::from_secs(seconds * 6 / 10)
            {
                println!(
                    "soak: {:>5.1} s restarting Neo4j",
                    started.elapsed().as_secs_f64()
                );
                stack("graph-down");
                tokio::time::sleep(Duration::from_secs(3)).await;
                stack("graph-up");
                graph_done = true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let target = rng.below(4) as usize;
        let pause = Duration::from_millis(200 + rng.below(800));
        if target < 2 {
            let (port, id, proc) = &mut fleet.serve[target];
            sigkill(proc);
            tokio::time::sleep(pause).await;
            *proc = serve(*port, id);
            killed_serve += 1;
            println!(
                "soak: {:>5.1} s SIGKILL aiden serve {id}",
                started.elapsed().as_secs_f64()
            );
        } else {
            let (ty, proc) = &mut fleet.workers[target - 2];
            sigkill(proc);
            tokio::time::sleep(pause).await;
            *proc = worker(ty, ports[0]);
            killed_workers += 1;
            println!(
                "soak: {:>5.1} s SIGKILL aiden worker {ty}",
                started.elapsed().as_secs_f64()
            );
        }
    }
    while started.elapsed() < Duration::from_secs(seconds) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for l in loops {
        l.await?;
    }
    println!(
        "soak: load stopped after {:.0} s; {killed_serve} SIGKILLs of aiden serve, {killed_workers} of workers, RabbitMQ restarted {}, Neo4j restarted {}, RabbitMQ nodes SIGKILLed {mq_nodes_killed}, Neo4j SIGKILLed {graph_killed}; faults {}",
        started.elapsed().as_secs_f64(),
        u8::from(mq_done),
        u8::from(graph_done && graph_killed == 0),
        killed_serve + killed_workers + mq_nodes_killed + u32::from(mq_done) + u32::from(graph_done),
    );

    let verdict = settle_and_count(&apis, &ledger).await;
    let keys = up.key_count();
    println!(
        "soak: upstream tool calls {}, distinct Idempotency-Keys {}, calls without a key {}, \
         re-calls of a key (after a kill; an upstream honouring the header runs each step once) {}; \
         model requests {}",
        keys.calls,
        keys.distinct_keys,
        keys.without_key,
        keys.repeated,
        model.requests().len()
    );
    drop(fleet);
    if keys.without_key > 0 {
        bail!(
            "{} upstream calls carried no Idempotency-Key",
            keys.without_key
        );
    }
    verdict
}

async fn start_run(
    apis: &Apis,
    ledger: &Mutex<Ledger>,
    process: &str,
    inputs: Value,
    kind: &'static str,
) -> Option<String> {
    // The same key on every retry: a start whose answer was lost is not started twice.
    let key = uuid::Uuid::now_v7().to_string();
    let (s, b) = apis
        .call(
            ledger,
            Method::POST,
            &format!("/v1/processes/{process}/runs"),
            json!({"inputs": inputs}),
            Some(&key),
        )
        .await;
    let run = b["runId"].as_str().filter(|_| s == 202)?.to_owned();
    ledger.lock().unwrap().runs.push((run.clone(), kind));
    Some(run)
}

async fn agent_turn(
    apis: &Apis,
    ledger: &Mutex<Ledger>,
    process: &str,
    message: &str,
) -> Option<String> {
    let c = apis
        .post(ledger, "/v1/conversations", json!({"title": "soak"}), 201)
        .await?;
    let c = c["id"].as_str()?;
    let turn = json!({"speaker": "user", "content": message});
    let t = apis
        .post(ledger, &format!("/v1/conversations/{c}/turns"), turn, 201)
        .await?;
    let agent = json!({"processId": process, "parentTurnId": t["id"]});
    let g = apis
        .post(
            ledger,
            &format!("/v1/conversations/{c}/agent-turns"),
            agent,
            202,
        )
        .await?;
    let run = g["runId"].as_str()?.to_owned();
    let mut l = ledger.lock().unwrap();
    l.runs.push((run.clone(), "conversation"));
    l.turns.push(g["turnId"].as_str()?.to_owned());
    Some(run)
}

fn terminal(run: &Value) -> bool {
    matches!(
        run["status"].as_str(),
        Some("completed" | "failed" | "canceled")
    )
}

async fn wait_settled(
    apis: &Apis,
    ledger: &Mutex<Ledger>,
    run: &str,
    within: Duration,
) -> Option<Value> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let (s, r) = apis.get(ledger, &format!("/v1/runs/{run}")).await;
        if s == 200 && terminal(&r) {
            return Some(r);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// Waits for every acknowledged run to settle (3 minutes at most), then counts.
async fn settle_and_count(apis: &Apis, ledger: &Mutex<Ledger>) -> Result<()> {
    let (runs, turns) = {
        let l = ledger.lock().unwrap();
        (l.runs.clone(), l.turns.clone())
    };
    let deadline = Instant::now() + Duration::from_secs(180);
    let (mut completed, mut failed, mut lost, mut stuck, mut twice) = (0, 0, 0, 0, 0);
    let mut kinds = std::collections::BTreeMap::<&str, u32>::new();
    for (run, kind) in &runs {
        *kinds.entry(kind).or_default() += 1;
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(r) = wait_settled(apis, ledger, run, left.max(Duration::from_secs(1))).await
        else {
            let (s, r) = apis.get(ledger, &format!("/v1/runs/{run}")).await;
            if s == 404 {
                lost += 1;
                println!("soak: LOST run {run} ({kind})");
            } else {
                stuck += 1;
                println!("soak: STUCK run {run} ({kind}): {}", r["status"]);
            }
            continue;
        };
        if r["status"] == "completed" {
            completed += 1;
        } else {
            failed += 1;
            println!("soak: FAILED run {run} ({kind}): {}", r["error"]);
        }
        twice += recorded_twice(&apis.0[0], run).await;
    }
    let mut unsettled = 0u32;
    for turn in &turns {
        let (_, t) = apis.get(ledger, &format!("/v1/turns/{turn}")).await;
        let alts = t["alternatives"].as_array().cloned().unwrap_or_default();
        if alts.is_empty() || alts.iter().any(|a| a["cacheStatus"] == "generating") {
            unsettled += 1;
            println!("soak: UNSETTLED turn {turn}: {t}");
        }
    }
    let check = std::process::Command::new(binary())
        .arg("check")
        .envs(envs(0))
        .output()?;
    let report = String::from_utf8_lossy(&check.stdout);
    let violations = report
        .lines()
        .filter(|l| l.contains("violation") || l.contains("VIOLATION"))
        .count();
    let clean = check.status.success();
    let unanswered = ledger.lock().unwrap().unanswered;
    println!("soak: runs acknowledged {} {kinds:?}: completed {completed}, failed {failed}, lost {lost}, stuck {stuck}", runs.len());
    println!("soak: step results recorded twice: {twice}");
    println!(
        "soak: agent turns {}: Alternatives settled {}, left generating {unsettled}",
        turns.len(),
        turns.len() - unsettled as usize
    );
    println!(
        "soak: requests retried after no answer (a killed or restarting process): {unanswered}"
    );
    println!(
        "soak: aiden check: {}",
        if clean {
            "clean".to_owned()
        } else {
            format!("{violations} violations\n{report}")
        }
    );
    if failed + lost + stuck + twice + unsettled > 0 || !clean || runs.is_empty() {
        bail!("soak failed");
    }
    println!("soak: passed");
    Ok(())
}

/// Steps of the run whose completion the log records more than once.
async fn recorded_twice(api: &Api, run: &str) -> u32 {
    let events = api.events(run).await;
    let mut seen = std::collections::HashMap::<String, u32>::new();
    for e in events.iter().filter(|e| e["kind"] == "step.completed") {
        *seen
            .entry(e["stepId"].as_str().unwrap_or("").to_owned())
            .or_default() += 1;
    }
    seen.values().filter(|n| **n > 1).count() as u32
}
