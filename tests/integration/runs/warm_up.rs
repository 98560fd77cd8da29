//! The warm-ups `aiden serve` runs before it opens its port. `aiden_engine::warm_up` plans the
//! run statements in a transaction it rolls back (asking for ids no one has), and ensures the
//! built-in metric definitions: it must succeed on a graph in use, any number of times.
//! `aiden_graph::warm::drive_passes` commits passes of the engine's statement on twin labels:
//! every part of the statement must write, nothing may be left, nothing real written.
//! `aiden_graph::warm::server_uptime` decides whether the passes are needed.

use aiden_graph::Graph;
use aiden_tests::{aiden_graph_query as query, graph_rows};
use serde::Deserialize;

#[derive(Deserialize)]
struct Count {
    n: i64,
}

#[tokio::test]
async fn the_warm_up_runs_again_and_again_and_ensures_the_builtin_metric_definitions() {
    let graph = Graph::connect(&aiden_tests::graph_settings())
        .await
        .expect("graph");
    for _ in 0..2 {
        aiden_engine::warm_up(&graph).await.expect("warm-up");
    }
    let definitions: Vec<Count> = graph_rows(query(
        "MATCH (d:MetricDefinition {builtin: true}) \
         WHERE d.id IN ['aiden-tool-calls', 'aiden-tool-latency', 'aiden-process-runs'] \
         RETURN count(d) AS n",
    ))
    .await;
    assert_eq!(
        definitions[0].n, 3,
        "the built-in definitions are ensured, once each"
    );
}

/// Records of the warm-up's twin labels and real runs it could have made, by kind.
async fn warm_up_records() -> (i64, i64) {
    let twins: Vec<Count> = graph_rows(query(
        "MATCH (n:WarmUpRun|WarmUpStepRun|WarmUpProcess|WarmUpProcessVersion|WarmUpProcessStep\
                 |WarmUpUser|WarmUpWorker) RETURN count(n) AS n",
    ))
    .await;
    let real: Vec<Count> = graph_rows(query(
        "MATCH (n:Run|StepRun|Process|User|Worker) WHERE n.id STARTS WITH 'warm-up-' \
         RETURN count(n) AS n",
    ))
    .await;
    (twins[0].n, real[0].n)
}

#[tokio::test]
async fn warm_up_passes_run_the_pass_statement_on_twin_labels_and_leave_nothing_behind() {
    let graph = Graph::connect(&aiden_tests::graph_settings())
        .await
        .expect("graph");
    // What a warm-up killed an hour ago left: its next one deletes it.
    let long_ago = (chrono::Utc::now() - chrono::TimeDelta::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    aiden_tests::graph_write(
        query(
            "CREATE (:WarmUpProcess {id: 'warm-up-killed-process', warmUpAt: $at}) \
             CREATE (r:WarmUpRun {id: 'warm-up-killed-run', createdAt: $at}) \
             CREATE (r)-[:HAS_STEP_RUN]->(:WarmUpStepRun {id: 'warm-up-killed-run/a'})",
        )
        .param("at", long_ago),
    )
    .await;
    let warmed = aiden_graph::warm::drive_passes(&graph, std::time::Duration::from_millis(500))
        .await
        .expect("warm-up passes");
    // A round is four passes (start, two hops, completion); at least one round ran.
    assert!(warmed.passes >= 4 && warmed.passes % 4 == 0, "{warmed:?}");
    // Each round wrote what the engine writes for 8 three-step runs: the Runs and StepRuns,
    // and HAS_STEP_RUN, RUN_OF, STARTED_BY, OF_STEP and RAN_ON edges (a part whose MATCH found
    // nothing would write less).
    let rounds = warmed.passes / 4;
    assert_eq!(warmed.nodes_created, rounds * (8 + 24), "{warmed:?}");
    assert_eq!(
        warmed.edges_created,
        rounds * (24 + 8 + 8 + 24 + 24),
        "{warmed:?}"
    );
    assert!(
        warmed.last_round_pass > std::time::Duration::ZERO,
        "{warmed:?}"
    );
    assert_eq!(
        warm_up_records().await,
        (0, 0),
        "no warm-up record is left, and none was written under a real label"
    );
}

/// `aiden serve` skips its warm-up passes against a graph server up for long: the uptime it
/// reads must be the server's, growing with the clock.
#[tokio::test]
async fn the_graph_servers_uptime_is_read_from_its_jvm_and_grows() {
    let graph = Graph::connect(&aiden_tests::graph_settings())
        .await
        .expect("graph");
    let first = aiden_graph::warm::server_uptime(&graph)
        .await
        .expect("uptime");
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let second = aiden_graph::warm::server_uptime(&graph)
        .await
        .expect("uptime again");
    assert!(first > std::time::Duration::ZERO, "{first:?}");
    let grew = second.saturating_sub(first);
    assert!(
        grew >= std::time::Duration::from_secs(1) && grew < std::time::Duration::from_secs(30),
        "the uptime follows the clock: {first:?}, then {second:?}"
    );
}
