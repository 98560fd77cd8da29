//! How a run is read back: the engine writes a Run and its StepRuns in one commit, but Neo4j
//! reads are read-committed (no snapshot), so a single statement reading both could pair a
//! settled Run with StepRuns from before the commit that settled it.

use aiden_tests::{aiden_graph_query as query, unique};

const STEPS: i64 = 40;
const WRITES: i64 = 300;

/// `runs::get` reads the Run, then its StepRuns: a writer sets a Run's `written` and every one
/// of its StepRuns' to the same n in each commit, and no read, taken while it writes, shows a
/// StepRun older than its Run.
#[tokio::test]
async fn a_run_read_never_pairs_a_run_with_older_step_runs() {
    let graph = aiden_graph::Graph::connect(&aiden_tests::graph_settings())
        .await
        .expect("graph");
    let id = unique("run-read");
    // Settled, as the engine leaves a run, and with a log of its own (EXEC-5): nothing drives
    // it, no audit objects to it.
    let plant = query(
        "CREATE (r:Run {id: $id, status: 'completed', eventSeq: 0, written: 0})
         WITH r UNWIND range(0, $steps - 1) AS i
         CREATE (r)-[:HAS_STEP_RUN {order: i}]->(:StepRun {id: $id + '/s' + toString(i),
                runId: $id, stepId: 's' + toString(i), status: 'completed', attempts: 0,
                order: i, written: 0})",
    )
    .param("id", id.as_str())
    .param("steps", STEPS);
    aiden_tests::graph_write(plant).await;
    let writer = {
        let graph = graph.clone();
        let id = id.clone();
        tokio::spawn(async move {
            for n in 1..=WRITES {
                let mut tx = graph.begin().await.expect("tx");
                let bump = query(
                    "MATCH (r:Run {id: $id}) SET r.written = $n
                     WITH r MATCH (r)-[:HAS_STEP_RUN]->(sr:StepRun) SET sr.written = $n",
                )
                .param("id", id.as_str())
                .param("n", n);
                tx.run(bump).await.expect("write");
                tx.commit().await.expect("commit");
            }
        })
    };
    let mut reads = 0;
    let mut mid_write = 0;
    let mut stale = None;
    while !writer.is_finished() {
        let mut tx = graph.begin().await.expect("tx");
        let row = aiden_graph::runs::get(&mut tx, &id)
            .await
            .expect("read")
            .expect("the planted run");
        let _ = tx.rollback().await;
        let run_n = row.run["written"].as_i64().expect("written");
        let steps: Vec<i64> = row
            .steps
            .iter()
            .map(|s| s["written"].as_i64().expect("written"))
            .collect();
        if stale.is_none() && (steps.len() as i64 != STEPS || steps.iter().any(|&n| n < run_n)) {
            stale = Some(format!(
                "read {reads}: the Run is at write {run_n}, its {} StepRuns at {steps:?}",
                steps.len()
            ));
        }
        reads += 1;
        mid_write += usize::from(run_n > 0 && run_n < WRITES);
    }
    writer.await.expect("writer");
    aiden_tests::graph_write(
        query(
            "MATCH (r:Run {id: $id}) OPTIONAL MATCH (r)-[:HAS_STEP_RUN]->(sr) DETACH DELETE r, sr",
        )
        .param("id", id.as_str()),
    )
    .await;
    assert_eq!(
        stale, None,
        "every StepRun at least as new as its Run, all {STEPS} of them"
    );
    assert!(
        mid_write > 10,
        "only {mid_write} of {reads} reads overlapped the writes: the check did not run"
    );
}
