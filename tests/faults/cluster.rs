//! On the three-node RabbitMQ cluster (`scripts/stack.sh test-cluster-up`, started by the test
//! command; quorum queues): the node that leads the `rest_api` job queue is SIGKILLed while a
//! run's slow step is in flight. `aiden serve` and the pool move to another node; the run
//! completes, its output is the one expected, the upstream saw the step under one
//! Idempotency-Key, and `aiden check` is clean. A test binary of its own (it kills a broker).

use std::process::Command;
use std::time::{Duration, Instant};

use aiden_tests::chaos::{cluster_env, define, stack_args, start_upstream};
use aiden_tests::procs::{assert_check_clean, free_port, sigkill, spawn_env, wait_until, Api};
use serde_json::json;

const VHOST: &str = "aiden-test";
const QUEUE: &str = "aiden.jobs.rest_api";

/// The number (1-3) of the node that leads `queue` now, as node `ask` (1-3) sees it (none while
/// a leader is being elected).
fn leader_of(queue: &str, ask: &str) -> Option<String> {
    let node = format!("aiden-mq{ask}@localhost");
    let out = Command::new("rabbitmqctl")
        .args([
            "-q",
            "-n",
            node.as_str(),
            "list_queues",
            "-p",
            VHOST,
            "name",
            "leader",
        ])
        .output()
        .expect("rabbitmqctl");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(queue))?;
    let node = line.split_whitespace().nth(1)?;
    Some(
        node.trim_start_matches("aiden-mq")
            .trim_end_matches("@localhost")
            .to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_queue_leader_loses_nothing_and_runs_the_step_under_one_key() {
    let port = free_port();
    let api = Api::local(port);
    let (up, upstream) = start_upstream().await;
    let mut serve = spawn_env(&["serve"], port, &cluster_env(VHOST));
    api.wait_ready().await;
    let mut pool = spawn_env(
        &["worker", "--type", "rest_api", "--concurrency", "4"],
        port,
        &cluster_env(VHOST),
    );
    let tag = format!("mq-{}", &uuid::Uuid::now_v7().simple().to_string()[20..]);
    let process = define(&api, &upstream, &tag, 1500).await;
    let (s, b) = api
        .call(
            reqwest::Method::POST,
            &format!("/v1/processes/{process}/runs"),
            Some(json!({"inputs": {"q": "x"}})),
        )
        .await;
    assert_eq!(s, 202, "{b}");
    let run = b["runId"].as_str().unwrap().to_owned();
    let slow = format!("{tag}-b");
    wait_until("the slow step in flight", Duration::from_secs(30), || {
        up.calls_for(&slow) == 1
    })
    .await;
    let leader = leader_of(QUEUE, "1").unwrap_or_else(|| panic!("no leader of {QUEUE}"));
    stack_args(&["mq-kill", &leader]);
    // The killed node stays down until the queue has a new leader on another node (asked of a
    // surviving node): the cluster has demonstrably moved on without it.
    let survivor = if leader == "1" { "2" } else { "1" };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = leader_of(QUEUE, survivor);
        if now.as_ref().is_some_and(|n| *n != leader) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no new leader of {QUEUE} after node {leader}'s SIGKILL: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stack_args(&["mq-up", &leader]);

    let deadline = Instant::now() + Duration::from_secs(90);
    let done = loop {
        let r = api.run(&run).await;
        if r["status"] == "completed" {
            break r;
        }
        assert!(
            r["status"] != "failed" && Instant::now() < deadline,
            "run after the leader's SIGKILL: {r}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(done["steps"].as_array().unwrap().len(), 3, "{done}");
    assert!(up.calls_for(&slow) <= 2, "{} calls", up.calls_for(&slow));
    assert_eq!(
        up.distinct_keys_for(&slow),
        1,
        "the slow step ran under one key"
    );
    sigkill(&mut pool);
    sigkill(&mut serve);
    assert_check_clean(None);
}
