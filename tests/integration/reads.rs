//! Reads under concurrent commits. Neo4j readers take no locks and see no snapshot: a read can
//! see a commit in part, within one statement or across two, and an aggregation whose grouping
//! key is read per row (`RETURN n {.*}, collect(…)`) can split into two rows, each with part of
//! the collection. A test plants a small graph, commits a change to it over and
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

/// `runs::get` never shows a settled Run with a StepRun that is not: each commit settles a Run
/// and all 40 of its StepRuns, or sets them all running again, and every read that shows the
/// Run completed shows all 40 StepRuns completed. A reader meets two kinds of tear: a commit
/// seen in part (the Run already settled, StepRuns not yet: seen once in a fresh clone's run of
/// this suite) and, since this writer also sets a settled run running again (the engine never
/// does), a commit landing between its two statements, which makes it fail on every run
/// without the re-read.
#[tokio::test]
async fn a_run_read_as_settled_comes_with_its_settled_step_runs() {
    const STEPS: usize = 40;
    let graph = graph().await;
    let id = unique("run-read");
    // Settled when planted and when left, with a log of its own (EXEC-5): no audit objects to
    // it, and no engine drives a run without a plan.
    let plant = query(
        "CREATE (r:Run {id: $id, status: 'completed', eventSeq: 0, written: 0})
         WITH r UNWIND range(0, $steps - 1) AS i
         CREATE (r)-[:HAS_STEP_RUN {order: i}]->(:StepRun {id: $id + '/s' + toString(i),
                runId: $id, stepId: 's' + toString(i), status: 'completed', attempts: 0,
                order: i, written: 0})",
    )
    .param("id", id.as_str())
    .param("steps", STEPS as i64);
    graph_write(plant).await;
    // As the engine settles a run: the Run and its StepRuns in one commit.
    let writing = writer(
        &graph,
        "MATCH (r:Run {id: $id})
         WITH r, CASE WHEN $n % 2 = 0 THEN 'completed' ELSE 'running' END AS status
         SET r.status = status, r.written = $n
         WITH r, status MATCH (r)-[:HAS_STEP_RUN]->(sr:StepRun)
         SET sr.status = status, sr.written = $n",
        &id,
    );
    let (mut seen, mut torn) = (Vec::new(), None);
    while !writing.is_finished() {
        let mut tx = graph.begin().await.expect("tx");
        let row = aiden_graph::runs::get(&mut tx, &id)
            .await
            .expect("read")
            .expect("the planted run");
        let _ = tx.rollback().await;
        let run_n = row.run["written"].as_i64().expect("written");
        let steps: Vec<(&str, i64)> = row
            .steps
            .iter()
            .map(|s| {
                (
                    s["status"].as_str().unwrap_or(""),
                    s["written"].as_i64().unwrap_or(-1),
                )
            })
            .collect();
        let whole = steps.len() == STEPS && steps.iter().all(|(s, _)| *s == "completed");
        if torn.is_none() && row.run["status"] == "completed" && !whole {
            torn = Some(format!(
                "read {}: the Run completed at write {run_n}, its {} StepRuns {steps:?}",
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
    assert_eq!(torn, None, "a completed Run with every StepRun completed");
    assert!(
        overlapped(&seen) > 10,
        "reads {seen:?}: the check did not run"
    );
}

/// TURN-2: what a new Alternative or a switch checks (`turn/facts_with_parent.cypher`), and
/// what a new Turn checks (`conversation/facts_with_turn.cypher`), see the parent Turn's active
/// flags whole while a switch on it commits over and over: the statements write the Turns they
/// read first (their locks), as every writer of a Turn's flags does.
/// Without that, a read walking the parent's 30 edges meets a switch halfway and finds two
/// active Alternatives or none (a spurious TURN-2 refusal).
#[tokio::test]
async fn turn_2_a_turns_parent_shows_one_active_alternative_while_it_is_switched() {
    const ALTERNATIVES: i64 = 30;
    let graph = graph().await;
    let id = unique("conv-read");
    let (parent, child) = (format!("{id}-p"), format!("{id}-c"));
    let plant = query(
        "CREATE (c:Conversation {id: $id, ownerId: $id, status: 'active', turnCount: 2})
         CREATE (c)-[:HAS_TURN {sequence: 1}]->(p:ConversationTurn {id: $parent,
                conversationId: $id, speaker: 'user', turnType: 'message', sequence: 1})
         CREATE (c)-[:HAS_TURN {sequence: 2}]->(t:ConversationTurn {id: $child,
                conversationId: $id, speaker: 'agent', turnType: 'message', sequence: 2,
                parentTurnId: $parent})
         CREATE (t)-[:HAS_ALTERNATIVE {isActive: true, sequence: 1}]->(:Alternative {
                id: $child + '-a', turnId: $child, conversationId: $id, state: 'valid'})
         WITH p UNWIND range(1, $n) AS i
         CREATE (p)-[:HAS_ALTERNATIVE {isActive: i = 1, sequence: i}]->(:Alternative {
                id: $parent + '-a' + toString(i), turnId: $parent, conversationId: $id,
                state: 'valid'})",
    )
    .param("id", id.as_str())
    .param("parent", parent.as_str())
    .param("child", child.as_str())
    .param("n", ALTERNATIVES);
    graph_write(plant).await;
    // As turn/switch.cypher: the Turn written first, then every flag in one pass; between the
    // first and the last Alternative, so a torn read shows two or none.
    let writing = writer(
        &graph,
        "MATCH (t:ConversationTurn {id: $id}) SET t.lockedAt = toString($n)
         WITH t MATCH (t)-[h:HAS_ALTERNATIVE]->(:Alternative)
         SET h.isActive = (h.sequence = CASE WHEN $n % 2 = 0 THEN 1 ELSE 30 END)",
        &parent,
    );
    let (mut reads, mut torn) = (0, None);
    while !writing.is_finished() {
        let mut tx = graph.begin().await.expect("tx");
        let facts = aiden_graph::conversations::facts_with_parent(&mut tx, &child)
            .await
            .expect("read")
            .expect("the planted turn");
        let _ = tx.rollback().await;
        // And what a new Turn under it checks (`conversation/facts_with_turn.cypher`).
        let mut tx = graph.begin().await.expect("tx");
        let (_, named) = aiden_graph::conversations::facts_with_turn(&mut tx, &id, Some(&parent))
            .await
            .expect("read")
            .expect("the planted conversation");
        let _ = tx.rollback().await;
        let parents = [facts.parent, named].map(|t| t.map(|t| t.alternatives).unwrap_or_default());
        for (statement, flags) in ["facts_with_parent", "facts_with_turn"].iter().zip(parents) {
            let active = flags.iter().filter(|a| a.is_active).count();
            if torn.is_none() && (active != 1 || flags.len() as i64 != ALTERNATIVES) {
                torn = Some(format!(
                    "read {reads} ({statement}): {active} active of {}",
                    flags.len()
                ));
            }
        }
        reads += 1;
    }
    writing.await.expect("writer");
    graph_write(
        query(
            "MATCH (c:Conversation {id: $id})-[:HAS_TURN]->(t)-[:HAS_ALTERNATIVE]->(a)
             DETACH DELETE c, t, a",
        )
        .param("id", id.as_str()),
    )
    .await;
    assert_eq!(torn, None, "exactly one active Alternative in every read");
    assert!(reads > 10, "only {reads} reads: the check did not run");
}
