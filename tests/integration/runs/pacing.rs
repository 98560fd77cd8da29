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

/// A burst of one Process's starts while another Process has a run in flight is paced: the
/// engine's passes refuse some of the burst a start (`aiden_engine_starts_paced_total` rises:
/// 8 may be taken at once, the rest at a rate) and take them later, and every start is still
/// answered, once, and its run completes, as does the run beside it.
#[tokio::test]
async fn a_burst_beside_another_process_is_paced_and_every_run_completes() {
    const BURST: usize = 40;
    let c = admin();
    let k = kit(&c).await;
    let tag = unique("pacing");
    let beside = process(
        &c,
        json!({"steps": [step(&k.hold, "h", json!({"tag": tag, "ms": 4000}))]}),
    )
    .await;
    let burst = process(
        &c,
        json!({"initialContext": ["q"], "steps": [step(&k.echo, "a", json!({"q": "{{q}}"}))]}),
    )
    .await;
    let long = start(&c, &beside, json!({})).await;
    // Its step is running: the burst's Process shares the engine with it.
    k.up.arrived(&tag).await;
    let before = paced(&c).await;
    let ids = futures::future::join_all(
        (0..BURST).map(|i| start(&c, &burst, json!({"q": i.to_string()}))),
    )
    .await;
    let after = paced(&c).await;
    assert!(
        after > before,
        "no start of a burst of {BURST} was paced ({before} → {after})"
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
