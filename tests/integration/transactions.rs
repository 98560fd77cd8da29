//! The driver's transaction path against the real Bolt server (vendor/README.md): BEGIN goes
//! out with a transaction's first statement, RUN and PULL in one flush, and a connection that
//! just ended a transaction goes back into use without a RESET, and a last statement may carry
//! the COMMIT in its flush. One pooled connection, so each test reuses the connection the
//! previous transaction left.

use aiden_tests::{graph_settings, unique};
use serde::Deserialize;

#[derive(Deserialize)]
struct N {
    n: i64,
}

async fn one_connection() -> aiden_graph::Graph {
    let settings = aiden_graph::Settings {
        max_connections: 1,
        ..graph_settings()
    };
    aiden_graph::Graph::connect(&settings).await.expect("graph")
}

async fn probes(graph: &aiden_graph::Graph, key: &str) -> i64 {
    count(
        graph,
        neo4rs::query("MATCH (p:TxProbe {key: $key}) RETURN count(p) AS n").param("key", key),
    )
    .await
}

/// A counting statement's `n`, in a transaction of its own.
async fn count(graph: &aiden_graph::Graph, q: neo4rs::Query) -> i64 {
    let mut tx = graph.begin().await.expect("begin");
    let rows: Vec<N> = tx.rows(q).await.expect("count");
    tx.commit().await.expect("commit");
    rows[0].n
}

fn create(key: &str) -> neo4rs::Query {
    neo4rs::query("CREATE (p:TxProbe {key: $key}) RETURN 1 AS n").param("key", key)
}

#[tokio::test]
async fn a_transaction_commits_and_rolls_back_its_pipelined_writes() {
    let graph = one_connection().await;
    let kept = unique("kept");
    let mut tx = graph.begin().await.expect("begin");
    let rows: Vec<N> = tx.rows(create(&kept)).await.expect("create");
    assert_eq!(
        rows.len(),
        1,
        "the first statement's rows come back with its BEGIN"
    );
    let many: Vec<N> = tx
        .rows(neo4rs::query("UNWIND range(1, 2500) AS i RETURN i AS n"))
        .await
        .expect("many rows");
    let sum: i64 = many.iter().map(|r| r.n).sum();
    assert_eq!(
        (many.len(), sum),
        (2500, 2500 * 2501 / 2),
        "every record, in one PULL"
    );
    tx.run(create(&kept))
        .await
        .expect("a second statement in the same transaction");
    tx.commit().await.expect("commit");
    assert_eq!(probes(&graph, &kept).await, 2);

    let dropped = unique("dropped");
    let mut tx = graph.begin().await.expect("begin");
    tx.run(create(&dropped)).await.expect("create");
    tx.rollback().await.expect("rollback");
    assert_eq!(
        probes(&graph, &dropped).await,
        0,
        "a rolled-back write is gone"
    );
}

#[tokio::test]
async fn a_failed_statement_writes_nothing_and_leaves_the_connection_usable() {
    let graph = one_connection().await;
    let key = unique("failed");
    let mut tx = graph.begin().await.expect("begin");
    tx.run(create(&key)).await.expect("create");
    let err = tx
        .rows::<N>(neo4rs::query("RETURN 1 AS n, THIS IS NOT CYPHER"))
        .await
        .err()
        .expect("a syntax error fails the statement");
    assert!(!err.is_transient(), "{err}");
    // The server answers ROLLBACK on a failed transaction as it likes; the pool resets it.
    let _ = tx.rollback().await;
    assert_eq!(
        probes(&graph, &key).await,
        0,
        "the write before the failure is not kept"
    );

    // A failure as the transaction's first statement (pipelined with its BEGIN), dropped
    // without a rollback.
    let mut tx = graph.begin().await.expect("begin");
    assert!(tx.run(neo4rs::query("NOT CYPHER EITHER")).await.is_err());
    drop(tx);
    let again = unique("again");
    let mut tx = graph.begin().await.expect("begin");
    tx.run(create(&again))
        .await
        .expect("the reused connection works");
    tx.commit().await.expect("commit");
    assert_eq!(probes(&graph, &again).await, 1);
}

#[tokio::test]
async fn a_transaction_that_ran_nothing_ends_cleanly() {
    let graph = one_connection().await;
    graph
        .begin()
        .await
        .expect("begin")
        .commit()
        .await
        .expect("empty commit");
    graph
        .begin()
        .await
        .expect("begin")
        .rollback()
        .await
        .expect("empty rollback");
    drop(graph.begin().await.expect("begin"));
    let key = unique("after-empty");
    let mut tx = graph.begin().await.expect("begin");
    tx.run(create(&key)).await.expect("create");
    tx.commit().await.expect("commit");
    assert_eq!(probes(&graph, &key).await, 1);
}

/// The engine's pass sends its last statement and the COMMIT in one flush (`run_and_commit`):
/// what the earlier statements and the last one wrote is committed together; when the last
/// statement fails the server ignores the COMMIT and nothing of the transaction is kept.
#[tokio::test]
async fn a_commit_sent_with_the_last_statement_keeps_all_or_nothing() {
    let graph = one_connection().await;
    let key = unique("with-commit");
    let mut tx = graph.begin().await.expect("begin");
    tx.run(create(&key)).await.expect("an earlier statement");
    tx.run_and_commit(create(&key))
        .await
        .expect("the last statement and the commit");
    assert_eq!(probes(&graph, &key).await, 2, "both statements committed");

    let failed = unique("with-commit-failed");
    let mut tx = graph.begin().await.expect("begin");
    tx.run(create(&failed)).await.expect("an earlier statement");
    let err = tx
        .run_and_commit(neo4rs::query("RETURN 1 AS n, THIS IS NOT CYPHER"))
        .await
        .expect_err("a syntax error fails the statement");
    assert!(
        !err.is_transient() && !matches!(err, aiden_graph::Error::Unavailable(_)),
        "a known outcome, not committed: {err}"
    );
    assert_eq!(
        probes(&graph, &failed).await,
        0,
        "the COMMIT behind a failed statement commits nothing"
    );

    // As a transaction's only statement: its BEGIN, RUN, DISCARD and COMMIT in one flush.
    let alone = unique("with-commit-alone");
    let tx = graph.begin().await.expect("begin");
    tx.run_and_commit(create(&alone)).await.expect("alone");
    assert_eq!(
        probes(&graph, &alone).await,
        1,
        "committed, connection reused"
    );
}

/// A lone start's pass sends its COMMIT with the pass statement (`runs::apply_and_commit`).
/// When a run it creates is not made (here: no such Process; in the engine: its Process moved on
/// since the plan was read), the statement fails, the server ignores the COMMIT, nothing the
/// transaction wrote is kept, and the caller hears it to write the pass again.
#[tokio::test]
async fn a_pass_whose_run_was_not_made_commits_nothing_with_its_statement() {
    let graph = one_connection().await;
    let key = unique("unmade");
    let run = unique("unmade-run");
    let batch = aiden_graph::runs::Batch {
        new_runs: vec![
            serde_json::json!({"id": run, "processId": unique("no-process"),
                                          "versionId": unique("no-version"),
                                          "expectedRevision": 1}),
        ],
        ..Default::default()
    };
    let mut tx = graph.begin().await.expect("begin");
    tx.run(create(&key)).await.expect("an earlier statement");
    let made = aiden_graph::runs::apply_and_commit(tx, &batch)
        .await
        .expect("a run not made is an answer, not an error");
    assert!(!made, "the run was not made");
    assert_eq!(probes(&graph, &key).await, 0, "the COMMIT was ignored");
    let runs = count(
        &graph,
        neo4rs::query("MATCH (r:Run {id: $id}) RETURN count(r) AS n").param("id", run),
    );
    assert_eq!(runs.await, 0, "no run, and the connection goes on");
}
