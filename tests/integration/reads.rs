//! Reads under concurrent commits. Neo4j readers take no locks and see no snapshot: a read can
//! see a commit in part, within one statement or across two, and an aggregation whose grouping
//! key is read per row (`RETURN n {.*}, collect(…)`) can split into two rows, each with part of
//! the collection. A test plants a small graph, commits a change to it over and
//! over, and reads it meanwhile through the statement the service uses.

use aiden_domain::execution::machine::RunStatus;
use aiden_domain::execution::schedule::StepStatus;
use aiden_graph::conversations::{self, AltWithTurn};
use aiden_graph::Graph;
use aiden_tests::{aiden_graph_query as query, graph_write, unique};
use tokio::task::JoinHandle;

/// What the TURN-2 reads assert.
const ONE_ACTIVE: &str = "exactly one active Alternative in every read";

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
            // Redone when Neo4j ends it to break a deadlock with a reader, as the engine's
            // pass is (a few times at most: the readers lock in the same order).
            for attempt in 1.. {
                assert!(
                    attempt <= 20,
                    "write {n}: still deadlocked after 20 attempts"
                );
                let mut tx = graph.begin().await.expect("tx");
                let q = query(bump).param("id", id.as_str()).param("n", n);
                let written = match tx.run(q).await {
                    Ok(()) => tx.commit().await,
                    Err(e) => Err(e),
                };
                match written {
                    Ok(()) => break,
                    Err(e) if e.is_transient() => continue,
                    Err(e) => panic!("write {n}: {e}"),
                }
            }
        }
    })
}

/// The reads that saw the writer neither before its first commit nor after its last.
fn overlapped(seen: &[i64]) -> usize {
    seen.iter().filter(|&&n| n > 0 && n < WRITES).count()
}

/// `runs::get` shows one commit: a writer advances a run of 40 steps through every run and
/// step status, 300 commits, each writing the Run and all 40 StepRuns with its write version
/// (the StepRuns first, as the engine's pass does), and every read shows one version on the
/// Run and all 40 StepRuns, and the statuses that commit wrote. Reads without the Run's lock
/// fail this on every run (a read sees a commit in part, within a statement or between two).
#[tokio::test]
async fn a_run_read_shows_one_write_version_on_the_run_and_all_its_step_runs() {
    const STEPS: usize = 40;
    let graph = graph().await;
    let id = unique("run-read");
    let run_statuses: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
    let step_statuses: Vec<&str> = StepStatus::ALL.iter().map(|s| s.as_str()).collect();
    // Settled when planted and when left, with a log of its own (EXEC-5): no audit objects to
    // it, and no engine drives a run without a plan.
    let plant = query(
        "CREATE (r:Run {id: $id, processId: $id, processVersion: 1, versionId: $id,
                        status: 'completed', depth: 1, ownerId: $id, inputs: '{}', plan: '{}',
                        eventSeq: 0, version: 0, createdAt: '2026-01-01T00:00:00.000Z',
                        finishedAt: '2026-01-01T00:00:00.000Z'})
         WITH r UNWIND range(0, $steps - 1) AS i
         CREATE (r)-[:HAS_STEP_RUN {order: i}]->(:StepRun {id: $id + '/s' + toString(i),
                runId: $id, stepId: 's' + toString(i), status: 'completed', attempts: 0,
                order: i, runVersion: 0})",
    )
    .param("id", id.as_str())
    .param("steps", STEPS as i64);
    graph_write(plant).await;
    let writing = {
        let graph = graph.clone();
        let id = id.clone();
        let (runs, steps) = (run_statuses.clone(), step_statuses.clone());
        tokio::spawn(async move {
            for n in 1..=WRITES {
                let q = query(
                    "MATCH (r:Run {id: $id})-[:HAS_STEP_RUN]->(sr:StepRun)
                     SET sr.status = $step, sr.runVersion = $n
                     WITH DISTINCT r
                     SET r.status = $run, r.version = $n",
                )
                .param("id", id.as_str())
                .param("n", n)
                .param("run", runs[n as usize % runs.len()])
                .param("step", steps[n as usize % steps.len()]);
                let mut tx = graph.begin().await.expect("tx");
                tx.run(q).await.expect("write");
                tx.commit().await.expect("commit");
            }
            // Left settled (the last write's status need not be), as one more write.
            let mut tx = graph.begin().await.expect("tx");
            let settle = query(
                "MATCH (r:Run {id: $id})-[:HAS_STEP_RUN]->(sr:StepRun)
                 SET sr.status = 'completed', sr.runVersion = $n
                 WITH DISTINCT r SET r.status = 'completed', r.version = $n",
            )
            .param("id", id.as_str())
            .param("n", WRITES + 1);
            tx.run(settle).await.expect("settle");
            tx.commit().await.expect("commit");
        })
    };
    let (mut seen, mut torn) = (Vec::new(), None);
    while !writing.is_finished() {
        let mut tx = graph.begin().await.expect("tx");
        let read = aiden_graph::runs::get(&mut tx, &id).await;
        let _ = tx.rollback().await;
        let row = match read {
            Ok(row) => row.expect("the planted run"),
            Err(e) => {
                torn.get_or_insert(format!("read {}: refused: {e}", seen.len()));
                continue;
            }
        };
        let n = row.version();
        let versions: Vec<i64> = row.steps.iter().map(|s| s.run_version).collect();
        let statuses: Vec<&str> = row.steps.iter().map(|s| s.status.as_str()).collect();
        let expected = (n > 0 && n <= WRITES).then(|| {
            (
                run_statuses[n as usize % run_statuses.len()],
                step_statuses[n as usize % step_statuses.len()],
            )
        });
        let whole = versions.len() == STEPS
            && versions.iter().all(|v| *v == n)
            && expected.is_none_or(|(run, step)| {
                row.run.status.as_str() == run && statuses.iter().all(|s| *s == step)
            });
        if torn.is_none() && !whole {
            torn = Some(format!(
                "read {}: the Run at write {n} ({}), its {} StepRuns at {versions:?} ({statuses:?})",
                seen.len(),
                row.run.status.as_str(),
                versions.len()
            ));
        }
        seen.push(n);
    }
    writing.await.expect("writer");
    graph_write(
        query(
            "MATCH (r:Run {id: $id}) OPTIONAL MATCH (r)-[:HAS_STEP_RUN]->(sr) DETACH DELETE r, sr",
        )
        .param("id", id.as_str()),
    )
    .await;
    assert_eq!(torn, None, "every read shows one commit");
    assert!(
        overlapped(&seen) > 10,
        "reads {seen:?}: the check did not run"
    );
}

/// TURN-2 in the views: `GET /v1/turns/{id}` (`turn/view.cypher`) and the tree
/// (`conversation/tree.cypher`, whole and windowed) show exactly one active Alternative of a
/// Turn while the real switch statement (`turn/switch.cypher`) moves it between its first and
/// last Alternative, 300 times. Without the locks they read under, about one read in 300
/// showed 0 or 2.
#[tokio::test]
async fn turn_2_a_turn_switched_over_and_over_reads_with_one_active_alternative() {
    const ALTERNATIVES: i64 = 30;
    let graph = graph().await;
    let id = unique("conv-view");
    let turn = plant_one_turn(&id, "user", ALTERNATIVES).await;
    let writing = {
        let graph = graph.clone();
        let turn = turn.clone();
        tokio::spawn(async move {
            for n in 1..=WRITES {
                let to = if n % 2 == 0 { 1 } else { ALTERNATIVES };
                let mut tx = graph.begin().await.expect("tx");
                aiden_graph::conversations::switch_active(
                    &mut tx,
                    &turn,
                    &format!("{turn}-a{to}"),
                    "2026-01-01T00:00:00.000Z",
                )
                .await
                .expect("switch");
                tx.commit().await.expect("commit");
            }
        })
    };
    let (mut reads, mut torn) = (0, None);
    while !writing.is_finished() {
        for (what, rows) in views(&graph, &id, &turn).await {
            let flags: Vec<bool> = rows.iter().map(|r| r.alt.is_active).collect();
            check_one_active(&mut torn, reads, what, &flags, ALTERNATIVES);
        }
        reads += 1;
    }
    writing.await.expect("writer");
    end_conversation_check(&id, torn, reads, ONE_ACTIVE).await;
}

/// Plants Conversation `id` with one Turn of `speaker` holding `n` Alternatives, the first
/// active; returns the Turn's id. An agent Turn's Alternatives are `generating`, each with its
/// run's id, a user Turn's `valid`.
async fn plant_one_turn(id: &str, speaker: &str, n: i64) -> String {
    let turn = format!("{id}-t");
    let plant = query(
        "CREATE (c:Conversation {id: $id, ownerId: $id, status: 'active', turnCount: 1})
         CREATE (c)-[:HAS_TURN {sequence: 1}]->(t:ConversationTurn {id: $turn,
                conversationId: $id, speaker: $speaker, turnType: 'message', sequence: 1,
                timestamp: '2026-01-01T00:00:00.000Z'})
         WITH t UNWIND range(1, $n) AS i
         CREATE (t)-[:HAS_ALTERNATIVE {isActive: i = 1, sequence: i}]->(:Alternative {
                id: $turn + '-a' + toString(i), turnId: $turn, conversationId: $id,
                runId: CASE WHEN $speaker = 'agent' THEN $turn + '-r' + toString(i) END,
                state: CASE WHEN $speaker = 'agent' THEN 'generating' ELSE 'valid' END,
                sequence: i, createdAt: '2026-01-01T00:00:00.000Z'})",
    )
    .param("id", id)
    .param("turn", turn.as_str())
    .param("speaker", speaker)
    .param("n", n);
    graph_write(plant).await;
    turn
}

/// The planted Turn as the three views read it: `GET /v1/turns/{id}`, the tree, and the tree's
/// window of depth 1.
async fn views(graph: &Graph, id: &str, turn: &str) -> [(&'static str, Vec<AltWithTurn>); 3] {
    let view = conversations::turn_view_autocommit(graph, turn)
        .await
        .expect("turn view");
    let tree = conversations::tree(graph, id).await.expect("tree");
    let window = conversations::tree_window(graph, id, 1, 1)
        .await
        .expect("tree window");
    [("turn view", view), ("tree", tree), ("window", window)]
}

/// Notes the first read whose flags are not exactly one active Alternative of `n`.
fn check_one_active(torn: &mut Option<String>, read: usize, what: &str, flags: &[bool], n: i64) {
    let active = flags.iter().filter(|a| **a).count();
    if torn.is_none() && (active != 1 || flags.len() as i64 != n) {
        *torn = Some(format!(
            "read {read} ({what}): {active} active of {}",
            flags.len()
        ));
    }
}

/// Deletes the planted conversation, then asserts that no read was torn and enough ran.
async fn end_conversation_check(id: &str, torn: Option<String>, reads: usize, rule: &str) {
    graph_write(
        query(
            "MATCH (c:Conversation {id: $id})-[:HAS_TURN]->(t)-[:HAS_ALTERNATIVE]->(a)
             DETACH DELETE c, t, a",
        )
        .param("id", id),
    )
    .await;
    assert_eq!(torn, None, "{rule}");
    assert!(reads > 10, "only {reads} reads: the check did not run");
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
            let flags: Vec<bool> = flags.iter().map(|a| a.is_active).collect();
            check_one_active(&mut torn, reads, statement, &flags, ALTERNATIVES);
        }
        reads += 1;
    }
    writing.await.expect("writer");
    end_conversation_check(&id, torn, reads, ONE_ACTIVE).await;
}

/// An agent Alternative's settlement reads whole in `GET /v1/turns/{id}` (`turn/view.cypher`)
/// and the tree (`conversation/tree.cypher`, whole and windowed): a writer settles and unsettles
/// 30 Alternatives of one Turn, 300 commits, writing `state` and `content` on the Alternatives
/// alone, as the engine's pass does (`run/apply_batch.cypher` touches neither the Turn nor the
/// Conversation; it takes its runs in id order, and a run's id and its Alternative's are made
/// together, so the writer here goes in id order too), and every read shows every Alternative
/// at one commit, `valid` with that commit's content or `generating` with none. Under the
/// Turn's or the Conversation's lock alone, reads saw Alternatives of two commits, or a settled
/// one without its content.
#[tokio::test]
async fn a_settling_agent_alternative_reads_with_its_content_in_the_views() {
    const ALTERNATIVES: i64 = 30;
    let graph = graph().await;
    let id = unique("conv-settle");
    let turn = plant_one_turn(&id, "agent", ALTERNATIVES).await;
    let writing = writer(
        &graph,
        "MATCH (:ConversationTurn {id: $id})-[:HAS_ALTERNATIVE]->(a:Alternative)
         WITH a ORDER BY a.id
         SET a.state = CASE WHEN $n % 2 = 1 THEN 'valid' ELSE 'generating' END,
             a.content = CASE WHEN $n % 2 = 1 THEN 'answer ' + toString($n) ELSE null END",
        &turn,
    );
    let (mut reads, mut torn) = (0, None);
    while !writing.is_finished() {
        for (what, rows) in views(&graph, &id, &turn).await {
            let seen: Vec<(String, Option<String>)> = rows
                .into_iter()
                .map(|r| (r.alt.state, r.alt.content))
                .collect();
            let whole = seen.len() as i64 == ALTERNATIVES
                && seen.iter().all(|s| *s == seen[0])
                && (seen[0].0 == "valid") == seen[0].1.is_some();
            if torn.is_none() && !whole {
                torn = Some(format!("read {reads} ({what}): {seen:?}"));
            }
        }
        reads += 1;
    }
    writing.await.expect("writer");
    end_conversation_check(
        &id,
        torn,
        reads,
        "every Alternative read at one commit, whole",
    )
    .await;
}
