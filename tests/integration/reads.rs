//! Reads under concurrent commits. Neo4j reads are read-committed (no snapshot): one statement
//! can see a commit land halfway through, and an aggregation whose grouping key is read per row
//! (`RETURN n {.*}, collect(…)`, `RETURN n.count, collect(…)`) then splits into two rows, each
//! with part of the collection. A test plants a small graph, commits a change to it over and
//! over, and reads it meanwhile through the statement the service uses.

use aiden_graph::Graph;
use aiden_tests::{aiden_graph_query as query, graph_write, unique};
use tokio::task::JoinHandle;

/// How many commits a writer makes.
const WRITES: i64 = 300;

async fn graph() -> Graph {
    Graph::connect(&aiden_tests::graph_settings())
        .await
        .expect("graph")
}

/// Commits `bump` with `n` = 1..=WRITES, one transaction each.
fn writer(graph: &Graph, bump: &'static str, id: &str) -> JoinHandle<()> {
    let graph = graph.clone();
    let id = id.to_owned();
    tokio::spawn(async move {
        for n in 1..=WRITES {
            let mut tx = graph.begin().await.expect("tx");
            let q = query(bump).param("id", id.as_str()).param("n", n);
            tx.run(q).await.expect("write");
            tx.commit().await.expect("commit");
        }
    })
}

/// The reads that saw the writer neither before its first commit nor after its last.
fn overlapped(seen: &[i64]) -> usize {
    seen.iter().filter(|&&n| n > 0 && n < WRITES).count()
}

/// `runs::get` reads the Run, then its StepRuns: a writer sets a Run's `written` and every one
/// of its 40 StepRuns' to the same n in each commit, and no read shows a StepRun older than its
/// Run, nor fewer than all of them.
#[tokio::test]
async fn a_run_read_never_pairs_a_run_with_older_step_runs() {
    const STEPS: i64 = 40;
    let graph = graph().await;
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
    graph_write(plant).await;
    let writing = writer(
        &graph,
        "MATCH (r:Run {id: $id}) SET r.written = $n
         WITH r MATCH (r)-[:HAS_STEP_RUN]->(sr:StepRun) SET sr.written = $n",
        &id,
    );
    let (mut seen, mut stale) = (Vec::new(), None);
    while !writing.is_finished() {
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
                "read {}: the Run is at write {run_n}, its {} StepRuns at {steps:?}",
                seen.len(),
                steps.len()
            ));
        }
        seen.push(run_n);
    }
    writing.await.expect("writer");
    graph_write(
        query(
            "MATCH (r:Run {id: $id}) OPTIONAL MATCH (r)-[:HAS_STEP_RUN]->(sr) DETACH DELETE r, sr",
        )
        .param("id", id.as_str()),
    )
    .await;
    assert_eq!(stale, None, "every StepRun at least as new as its Run");
    assert!(
        overlapped(&seen) > 10,
        "reads {seen:?}: the check did not run"
    );
}
