//! Neo4j crash test: the graph server itself is SIGKILLed while runs start and
//! turns are appended through a real `aiden serve` and `aiden worker`. After its restart (Neo4j's
//! own crash recovery, on its transaction log) every acknowledged run completes with each step
//! recorded once, every acknowledged turn is there exactly once, nothing unacknowledged is there
//! twice, and `aiden check` is clean. A test binary of its own: it stops the tests' Neo4j, which
//! no other test may use meanwhile (cargo runs test binaries one after another).

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use aiden_tests::chaos::{define, stack, start_upstream};
use aiden_tests::procs::{assert_check_clean, free_port, sigkill, spawn, wait_until, Api};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_graph_loses_nothing_acknowledged_and_writes_nothing_twice() {
    let port = free_port();
    let api = Api::local(port);
    let (up, upstream) = start_upstream().await;
    let mut serve = spawn(&["serve"], port);
    api.wait_ready().await;
    let mut worker = spawn(
        &["worker", "--type", "rest_api", "--concurrency", "4"],
        port,
    );
    let suffix = uuid::Uuid::now_v7().simple().to_string();
    graph_crash_loses_nothing_acknowledged(&api, &upstream, &up, &suffix).await;
    sigkill(&mut worker);
    sigkill(&mut serve);
}

/// Load (run starts, turn appends) (run starts, turn appends) across a SIGKILL of the graph server.
async fn graph_crash_loses_nothing_acknowledged(
    api: &Api,
    upstream: &str,
    up: &aiden_tests::chaos::Upstream,
    suffix: &str,
) {
    let tag = format!("crash-{}", &suffix[20..]);
    let process = define(api, upstream, &tag, 200).await;
    let (s, conv) = api
        .call(
            reqwest::Method::POST,
            "/v1/conversations",
            Some(json!({ "title": tag })),
        )
        .await;
    assert_eq!(s, 201, "{conv}");
    let conv = conv["id"].as_str().unwrap().to_owned();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // What the load has seen so far: runs and turns acknowledged, requests refused.
    let counts = std::sync::Arc::new(Counts::default());
    let load = {
        let (api, process, conv, tag, stop, seen) = (
            api.clone(),
            process.clone(),
            conv.clone(),
            tag.clone(),
            stop.clone(),
            counts.clone(),
        );
        tokio::spawn(async move {
            let (mut runs, mut turns, mut parent) = (Vec::new(), Vec::new(), None::<String>);
            let mut refused = std::collections::BTreeMap::<String, usize>::new();
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                i += 1;
                let (s, b) = api
                    .call(
                        reqwest::Method::POST,
                        &format!("/v1/processes/{process}/runs"),
                        Some(json!({"inputs": {}})),
                    )
                    .await;
                if s == 202 {
                    runs.push(b["runId"].as_str().unwrap().to_owned());
                    seen.runs.fetch_add(1, SeqCst);
                } else {
                    seen.refused.fetch_add(1, SeqCst);
                    *refused
                        .entry(format!("run {s} {}", b["error"]["code"]))
                        .or_default() += 1;
                }
                let content = format!("{tag}-turn-{i}");
                let mut body = json!({"speaker": "user", "content": content});
                if let Some(p) = &parent {
                    body["parentTurnId"] = json!(p);
                }
                let (s, b) = api
                    .call(
                        reqwest::Method::POST,
                        &format!("/v1/conversations/{conv}/turns"),
                        Some(body),
                    )
                    .await;
                if s == 201 {
                    parent = b["id"].as_str().map(str::to_owned);
                    turns.push(content);
                    seen.turns.fetch_add(1, SeqCst);
                } else {
                    seen.refused.fetch_add(1, SeqCst);
                    *refused
                        .entry(format!("turn {s} {}", b["error"]["code"]))
                        .or_default() += 1;
                }
                assert_ne!(s, 500, "a 500 while the graph was down: {b}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            (runs, turns, i, refused)
        })
    };
    // Barriers, not pauses: the crash comes once the load has been acknowledged a few times,
    // the graph comes back once the load has been refused (the outage reached the API's
    // clients), and the load stops once it has been acknowledged a few times again.
    counts.acknowledged_more(0, 0, 3).await;
    stack("graph-kill");
    let refused = counts.refused.load(SeqCst);
    wait_until(
        "a request refused while the graph is down",
        Duration::from_secs(60),
        || counts.refused.load(SeqCst) > refused,
    )
    .await;
    stack("graph-up");
    api.wait_ready().await;
    let (runs, turns) = (counts.runs.load(SeqCst), counts.turns.load(SeqCst));
    counts.acknowledged_more(runs, turns, 3).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (runs, turns, attempts, refused) = load.await.expect("load");
    assert!(
        runs.len() >= 5 && turns.len() >= 5,
        "too little load acknowledged around the crash: {} runs, {} turns of {attempts} \
         attempts; refused: {refused:?}",
        runs.len(),
        turns.len()
    );
    for run in &runs {
        let settled = api.wait_settled(run, Duration::from_secs(90)).await;
        assert_eq!(settled["status"], "completed", "{settled}");
        let events = api.events(run).await;
        for step in ["a", "b", "c"] {
            let n = events
                .iter()
                .filter(|e| e["kind"] == "step.completed" && e["stepId"] == step)
                .count();
            assert_eq!(n, 1, "run {run}: step {step} recorded {n} times");
        }
    }
    #[derive(serde::Deserialize)]
    struct Count {
        content: String,
        n: i64,
    }
    let counts = aiden_tests::graph_rows::<Count>(
        aiden_tests::aiden_graph_query(
            "MATCH (:ConversationTurn {conversationId: $conv})-[:HAS_ALTERNATIVE]->(a:Alternative)
             RETURN a.content AS content, count(*) AS n",
        )
        .param("conv", conv.as_str()),
    )
    .await;
    for c in &counts {
        assert_eq!(c.n, 1, "turn {} written {} times", c.content, c.n);
    }
    for content in &turns {
        assert!(
            counts.iter().any(|c| &c.content == content),
            "acknowledged turn {content} lost"
        );
    }
    eprintln!(
        "graph crash: {} runs and {} turns acknowledged of {attempts} attempts, none lost \
         (refused: {refused:?}); upstream saw {} calls of step a",
        runs.len(),
        turns.len(),
        up.calls_for(&format!("{tag}-a"))
    );
    assert_check_clean(None);
}

/// What the load around the crash has seen so far.
#[derive(Default)]
struct Counts {
    runs: AtomicUsize,
    turns: AtomicUsize,
    refused: AtomicUsize,
}

impl Counts {
    /// Waits until `more` runs and `more` turns beyond `runs` and `turns` are acknowledged.
    async fn acknowledged_more(&self, runs: usize, turns: usize, more: usize) {
        wait_until(
            "runs and turns acknowledged",
            Duration::from_secs(90),
            || self.runs.load(SeqCst) >= runs + more && self.turns.load(SeqCst) >= turns + more,
        )
        .await;
    }
}
