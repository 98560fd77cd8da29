//! The warm-up `aiden serve` runs before it opens its port (`aiden_engine::warm_up`): it plans
//! the run statements in a transaction it rolls back (asking for ids no one has), and ensures
//! the built-in metric definitions. It must succeed on a graph in use, any number of times.

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
