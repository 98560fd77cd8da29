//! Start pacing through a serve (docs/execution.md, "A burst of starts beside other work").

use aiden_tests::admin;
use serde_json::json;

use super::*;

/// How often the engine refused a waiting start its pacing, so far.
async fn paced(c: &Client) -> f64 {
    let r = c.get("/metrics").await;
    sample(
        r.body.as_str().unwrap_or_default(),
        "aiden_engine_starts_paced_total",
        &[],
    )
    .unwrap_or(0.0)
}

/// A run of one Process whose step is held, running, and another Process of one echo step to
/// burst beside it.
struct Beside {
    k: Kit,
    /// The held run.
    long: String,
    /// The Process to burst.
    burst: String,
}

async fn beside(c: &Client, hold_ms: u64) -> Beside {
    let k = kit(c).await;
    let tag = unique("pacing");
    let held = hold_process(c, &k, "h", &tag, hold_ms).await;
    let burst = process(
        c,
        json!({"initialContext": ["q"], "steps": [step(&k.echo, "a", json!({"q": "{{q}}"}))]}),
    )
    .await;
    let long = start(c, &held, json!({})).await;
    // Its step is running: the burst's Process shares the engine with it.
    k.up.arrived(&tag).await;
    Beside { k, long, burst }
}

/// A burst of one Process's starts while another Process has a run in flight is paced: the
/// engine's passes refuse some of the burst a start (8 may be taken at once, the rest at a
/// rate; `aiden_engine_starts_paced_total` rises and the engine names the Process) and take
/// them later, and every start is still answered, once, and its run completes, as does the run
/// beside it.
#[tokio::test]
async fn a_burst_beside_another_process_is_paced_and_every_run_completes() {
    const BURST: usize = 40;
    let c = admin();
    let Beside { k, long, burst } = beside(&c, 4000).await;
    let before = paced(&c).await;
    let ids = futures::future::join_all(
        (0..BURST).map(|i| start(&c, &burst, json!({"q": i.to_string()}))),
    )
    .await;
    let after = paced(&c).await;
    assert!(after > before, "no start was paced ({before} → {after})");
    // This burst's own: the engine names the Processes it held starts of (the counter is the
    // whole server's, whose other tests run meanwhile).
    let held = server()
        .logs()
        .lines()
        .any(|l| l.contains("starts held for their pacing") && l.contains(&burst));
    assert!(
        held,
        "no start of the burst of {BURST} was held for its pacing"
    );
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), BURST, "one run per start");
    for id in &ids {
        assert_eq!(c.settled_run(id).await["status"], "completed", "{id}");
    }
    assert_eq!(
        k.up.calls_to("echo").len(),
        BURST,
        "each run's step ran once"
    );
    assert_eq!(c.settled_run(&long).await["status"], "completed");
}

/// A start whose client gave up while it waited for its pacing is let go, never written
/// (`door::Waiting` drops a start whose request was dropped): a burst of 40 starts, each sent
/// with a 100 ms timeout beside another Process's held run, leaves every answered start's run
/// and not the rest.
#[tokio::test]
async fn a_paced_start_whose_client_went_away_is_not_written() {
    const BURST: usize = 40;
    let c = admin();
    let Beside { k: _k, long, burst } = beside(&c, 3000).await;
    let path = format!("/v1/processes/{burst}/runs");
    let sent = futures::future::join_all((0..BURST).map(|i| {
        c.raw(reqwest::Method::POST, &path)
            .json(&json!({"inputs": {"q": i.to_string()}}))
            .timeout(Duration::from_millis(100))
            .send()
    }))
    .await;
    let answered = sent
        .iter()
        .filter(|r| r.as_ref().is_ok_and(|r| r.status().as_u16() == 202))
        .count();
    assert!(answered < BURST, "every start was answered within 100 ms");
    // Every start the engine kept would be taken well within this (its pacing's floor is 50 a
    // second), and the run beside settles meanwhile.
    assert_eq!(c.settled_run(&long).await["status"], "completed");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let page = c
        .get(&format!("/v1/runs?processId={burst}&limit=100"))
        .await
        .ok(200)
        .clone();
    let runs = page["items"].as_array().map_or(0, Vec::len);
    // A start answered just after its client's timeout has a run too: at least the answered.
    assert!(
        answered <= runs && runs < BURST,
        "{answered} starts answered, {runs} runs written of {BURST}"
    );
}
