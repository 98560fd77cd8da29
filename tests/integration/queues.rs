//! Quorum queues: with `AIDEN_QUEUE_TYPE=quorum` every durable queue of the topology
//! is a quorum queue, with the arguments the runtime relies on (single active consumer on the
//! engine and episode queues, dead-lettering, retry delays by TTL), and jobs flow through them.
//! Runs in a vhost of its own: the tests' vhost keeps classic queues.

use std::process::Command;
use std::time::Duration;

use aiden_jobs::{Broker, QueueType};
use lapin::options::{BasicAckOptions, BasicGetOptions};
use serde_json::json;

fn rabbitmqctl(args: &[&str]) -> String {
    let out = Command::new("rabbitmqctl")
        .args(args)
        .output()
        .expect("rabbitmqctl");
    assert!(
        out.status.success(),
        "rabbitmqctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fresh vhost on the tests' broker, deleted when dropped.
struct Vhost(String);

impl Vhost {
    fn new() -> Self {
        let name = format!(
            "aiden-quorum-{}",
            &uuid::Uuid::now_v7().simple().to_string()[20..]
        );
        rabbitmqctl(&["add_vhost", &name]);
        rabbitmqctl(&["set_permissions", "-p", &name, "guest", ".*", ".*", ".*"]);
        Self(name)
    }

    fn uri(&self) -> String {
        let base = aiden_tests::test_amqp_uri();
        let root = &base[..base.rfind('/').expect("a vhost in the AMQP URI")];
        format!("{root}/{}", self.0)
    }

    /// (name, type) of every queue.
    fn queues(&self) -> Vec<(String, String)> {
        rabbitmqctl(&["list_queues", "-q", "-p", &self.0, "name", "type"])
            .lines()
            .filter_map(|l| {
                let mut cols = l.split_whitespace();
                Some((cols.next()?.to_owned(), cols.next()?.to_owned()))
            })
            .filter(|(name, _)| name.starts_with("aiden."))
            .collect()
    }
}

impl Drop for Vhost {
    fn drop(&mut self) {
        let _ = Command::new("rabbitmqctl")
            .args(["delete_vhost", &self.0])
            .output();
    }
}

fn job(step: &str) -> aiden_jobs::Job {
    serde_json::from_value(json!({
        "v": aiden_jobs::JOB_VERSION, "runId": "r-quorum", "stepId": step,
        "stepRunId": format!("r-quorum/{step}"), "operationType": "rest_api", "attempt": 1,
        "maxAttempts": 3, "toolId": "t", "ownerId": "u", "inputs": {}, "variables": {},
        "timeoutMs": 1000, "deadlineMs": 0}))
    .expect("a job")
}

#[tokio::test]
async fn quorum_queues_carry_the_whole_topology() {
    let vhost = Vhost::new();
    let broker = Broker::connect_with(&vhost.uri(), QueueType::Quorum)
        .await
        .expect("the topology declares as quorum queues");
    // A retry parks the job in a delay queue (TTL) that dead-letters it back to its job queue.
    broker.publish_retry(&job("retried"), 200).await.unwrap();
    broker.publish_job(&job("direct")).await.unwrap();

    let queues = vhost.queues();
    let names: Vec<&str> = queues.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "aiden.engine",
        "aiden.jobs.rest_api",
        "aiden.dlq.rest_api",
        "aiden.retry.rest_api.200",
        "aiden.dlq.episode",
    ] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }
    let classic: Vec<_> = queues.iter().filter(|(_, t)| t != "quorum").collect();
    assert!(classic.is_empty(), "not quorum: {classic:?}");

    let ch = broker.connection().create_channel().await.unwrap();
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while got.len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "jobs through quorum queues: got {got:?}"
        );
        match ch
            .basic_get("aiden.jobs.rest_api", BasicGetOptions::default())
            .await
            .unwrap()
        {
            Some(m) => {
                let j: aiden_jobs::Job = serde_json::from_slice(&m.delivery.data).unwrap();
                got.push(j.step_id);
                m.delivery.ack(BasicAckOptions::default()).await.unwrap();
            }
            None => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    assert_eq!(
        got,
        ["direct", "retried"],
        "the retried job came back after its delay"
    );

    // Declaring the other type over existing queues is refused, never silently mixed.
    let err = Broker::connect_with(&vhost.uri(), QueueType::Classic)
        .await
        .err()
        .expect("classic over quorum queues is refused");
    assert!(err.to_string().contains("x-queue-type"), "{err}");
}
