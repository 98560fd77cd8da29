//! Concurrent requests: one version sequence under racing PATCHes, If-Match never loses an
//! update silently, one winner for a contested id, and deletes racing creates that reference the
//! deleted node (Service vs Tool, Tool vs Process) never leave a dangling reference.

use std::collections::BTreeSet;

use aiden_tests::{aiden_graph_query, fixtures, graph_rows, user, Client, Reply};
use futures::future::{join, join_all};
use reqwest::Method;
use serde_json::{json, Value};

async fn count(q: &str, id: &str) -> i64 {
    #[derive(serde::Deserialize)]
    struct Row {
        n: i64,
    }
    graph_rows::<Row>(aiden_graph_query(q).param("id", id)).await[0].n
}

/// A user with a fresh Tool; returns the user, the Tool's path and its current revision.
async fn tool() -> (Client, String, i64) {
    let u = user().await;
    let svc = fixtures::rest_service(&u, false).await;
    let path = format!("/v1/tools/{}", fixtures::rest_tool(&u, &svc).await);
    let revision = u.get(&path).await.ok(200)["revision"].as_i64().unwrap();
    (u, path, revision)
}

/// Sends `n` PATCHes of `path` at once, the i-th setting description `d{i}`.
async fn racing_patches(u: &Client, path: &str, n: usize, headers: &[(&str, &str)]) -> Vec<Reply> {
    join_all((0..n).map(|i| {
        let body = json!({"description": format!("d{i}")});
        async move { u.send(Method::PATCH, path, Some(&body), headers).await }
    }))
    .await
}

/// Without If-Match every racing PATCH succeeds (the server retries), each as its own revision.
#[tokio::test]
async fn concurrent_patches_without_if_match_form_one_version_sequence() {
    let (u, path, initial) = tool().await;
    let replies = racing_patches(&u, &path, 20, &[]).await;
    let mut revisions = BTreeSet::new();
    for (i, r) in replies.iter().enumerate() {
        let body = r.ok(200);
        assert_eq!(
            body["description"],
            format!("d{i}"),
            "reply {i} shows another's write"
        );
        assert!(
            revisions.insert(body["revision"].as_i64().unwrap()),
            "revision reused: {body}"
        );
    }
    assert_eq!(
        revisions,
        (initial + 1..=initial + 20).collect::<BTreeSet<_>>()
    );
    let last = replies
        .iter()
        .max_by_key(|r| r.body["revision"].as_i64())
        .unwrap();
    let now = u.get(&path).await;
    assert_eq!(now.ok(200)["revision"], initial + 20);
    assert_eq!(now.body["description"], last.body["description"]);
    assert_eq!(
        now.body, last.body,
        "the final state is the last version's reply"
    );
}

/// With If-Match on the same revision exactly one PATCH wins; the others are 409 and the stored
/// state is the winner's.
#[tokio::test]
async fn concurrent_patches_with_if_match_have_one_winner() {
    let (u, path, initial) = tool().await;
    let expected = initial.to_string();
    let replies = racing_patches(&u, &path, 20, &[("if-match", &expected)]).await;
    let (won, lost): (Vec<&Reply>, Vec<&Reply>) =
        replies.iter().partition(|r| r.status.as_u16() == 200);
    assert_eq!(
        won.len(),
        1,
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert_eq!(lost.len(), 19);
    for r in &lost {
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (409, "CONFLICT"),
            "{:?}",
            r.body
        );
        let e = &r.body["error"];
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{e}");
        assert!(
            e["requestId"].as_str().is_some_and(|m| !m.is_empty()),
            "{e}"
        );
        assert!(e["details"].is_array(), "{e}");
    }
    assert_eq!(won[0].body["revision"], initial + 1);
    let now = u.get(&path).await;
    assert_eq!(
        now.ok(200),
        &won[0].body,
        "a 409 reply's write was kept, or the winner's lost"
    );
    // A stale If-Match stays refused afterwards.
    let stale = [("if-match", expected.as_str())];
    let r = u
        .send(Method::PATCH, &path, Some(&json!({"name": "x"})), &stale)
        .await;
    assert_eq!(r.status.as_u16(), 409);
}

/// 10 creates of one caller-chosen id at once; returns what went other than one 201 and
/// nine 409 CONFLICTs.
async fn contested_create(u: &Client, collection: &str, body: &Value) -> Vec<String> {
    let path = format!("/v1/{collection}");
    let replies = join_all((0..10).map(|_| u.post(&path, body.clone()))).await;
    let won = replies.iter().filter(|r| r.status.as_u16() == 201).count();
    let mut wrong: Vec<String> = replies
        .iter()
        .filter(|r| !matches!((r.status.as_u16(), r.code()), (201, _) | (409, "CONFLICT")))
        .map(|r| format!("{collection}: {} {}", r.status, r.body))
        .collect();
    if won != 1 {
        wrong.push(format!("{collection}: {won} creates answered 201"));
    }
    wrong
}

/// Concurrent creates with one id: exactly one 201, the rest 409, and the graph holds one node
/// (with one owner and, for a Tool or Process, one set of edges and versions).
#[tokio::test]
async fn concurrent_creates_of_one_id_make_one_node() {
    let u = user().await;
    let one = |label: &str| format!("MATCH (n:{label} {{id: $id}}) RETURN count(n) AS n");
    let service = fixtures::rest_service_body(false);
    let sid = service["id"].as_str().unwrap().to_owned();
    let mut wrong = contested_create(&u, "services", &service).await;
    assert_eq!(count(&one("Service"), &sid).await, 1);
    let q = "MATCH (n:Service {id: $id})-[:OWNED_BY]->(:User) RETURN count(n) AS n";
    assert_eq!(count(q, &sid).await, 1);

    let tool = fixtures::rest_tool_body(&sid);
    let tid = tool["id"].as_str().unwrap().to_owned();
    wrong.extend(contested_create(&u, "tools", &tool).await);
    assert_eq!(count(&one("Tool"), &tid).await, 1);
    let q = "MATCH (:Tool {id: $id})-[r:USES_SERVICE]->(:Service) RETURN count(r) AS n";
    assert_eq!(count(q, &tid).await, 1);

    let process = fixtures::process_body(&tid);
    let pid = process["id"].as_str().unwrap().to_owned();
    wrong.extend(contested_create(&u, "processes", &process).await);
    assert_eq!(count(&one("Process"), &pid).await, 1);
    let q = "MATCH (v:ProcessVersion) WHERE v.processId = $id RETURN count(v) AS n";
    assert_eq!(count(q, &pid).await, 1);
    let q = "MATCH (s:ProcessStep)-[:CALLS_TOOL]->(:Tool {id: $id}) RETURN count(s) AS n";
    assert_eq!(count(q, &tid).await, 1);
    assert!(
        wrong.is_empty(),
        "losers must answer 409 CONFLICT:\n{}\nserver errors:\n{}",
        wrong.join("\n"),
        aiden_tests::server().error_lines()
    );
}

/// Races a DELETE of `victim` against a POST to `collection` of `body`, which references it;
/// odd rounds send the create first.
async fn race(
    u: &Client,
    victim: &str,
    collection: &str,
    body: &Value,
    round: usize,
) -> (Reply, Reply) {
    let create_path = format!("/v1/{collection}");
    if round.is_multiple_of(2) {
        join(u.delete(victim), u.post(&create_path, body.clone())).await
    } else {
        let (c, d) = join(u.post(&create_path, body.clone()), u.delete(victim)).await;
        (d, c)
    }
}

/// Judges one race. The graph `facts` (referenced node, referencing node, edges between them)
/// must be all there or all gone, and the replies must say which: delete 409 naming `invs.0`
/// and create 201, or delete 204 and create 422 naming `invs.1`. Wrong replies are collected.
fn judge(
    round: usize,
    facts: (i64, i64, i64),
    deleted: &Reply,
    created: &Reply,
    invs: (&str, &str),
    wrong: &mut Vec<String>,
) {
    let (d, c) = (deleted.status.as_u16(), created.status.as_u16());
    assert!(
        facts == (1, 1, 1) || facts == (0, 0, 0),
        "round {round}: graph {facts:?} after delete {d} {} and create {c} {}",
        deleted.body,
        created.body
    );
    if (d, c) != if facts.0 == 1 { (409, 201) } else { (204, 422) } {
        let (db, cb) = (deleted.body.to_string(), created.body.to_string());
        let cb = &cb[..cb.len().min(120)];
        wrong.push(format!(
            "round {round}: graph {facts:?}, delete {d} {db}, create {c} {cb}"
        ));
    } else if d == 409 {
        deleted.rejects(409, invs.0);
    } else {
        created.rejects(422, invs.1);
    }
}

/// Deleting a Service while a Tool is created on it: afterwards either both exist (delete 409
/// SVC-5, create 201) or the Service is gone and no Tool refers to it (delete 204, create 422
/// TOOL-3) — never a Tool on a deleted Service, and never a 5xx.
#[tokio::test]
async fn service_delete_racing_tool_create_never_orphans_a_tool() {
    let u = user().await;
    let mut wrong = Vec::new();
    for round in 0..8 {
        let svc = fixtures::rest_service(&u, false).await;
        let body = fixtures::rest_tool_body(&svc);
        let victim = format!("/v1/services/{svc}");
        let (deleted, created) = race(&u, &victim, "tools", &body, round).await;
        let services = count("MATCH (s:Service {id: $id}) RETURN count(s) AS n", &svc).await;
        let q = "MATCH (t:Tool) WHERE t.serviceId = $id RETURN count(t) AS n";
        let tools = count(q, &svc).await;
        let q = "MATCH (t:Tool)-[:USES_SERVICE]->(:Service {id: $id}) RETURN count(t) AS n";
        let linked = count(q, &svc).await;
        judge(
            round,
            (services, tools, linked),
            &deleted,
            &created,
            ("SVC-5", "TOOL-3"),
            &mut wrong,
        );
        let tool = u
            .get(&format!("/v1/tools/{}", body["id"].as_str().unwrap()))
            .await;
        assert_eq!(tool.status.as_u16(), if tools == 1 { 200 } else { 404 });
    }
    assert!(
        wrong.is_empty(),
        "wrong replies:\n{}\nserver errors:\n{}",
        wrong.join("\n"),
        aiden_tests::server().error_lines()
    );
}

/// Deleting a Tool while a Process calling it is created: afterwards either both exist and the
/// step CALLS_TOOL it (delete 409 TOOL-8), or the Tool is gone and so is the Process (create 422
/// PROC-2) — never a ProcessStep whose Tool was deleted under it.
#[tokio::test]
async fn tool_delete_racing_process_create_never_orphans_a_step() {
    let u = user().await;
    let svc = fixtures::rest_service(&u, false).await;
    let mut wrong = Vec::new();
    for round in 0..8 {
        let tool = fixtures::rest_tool(&u, &svc).await;
        let body = fixtures::process_body(&tool);
        let pid = body["id"].as_str().unwrap().to_owned();
        let victim = format!("/v1/tools/{tool}");
        let (deleted, created) = race(&u, &victim, "processes", &body, round).await;
        let tools = count("MATCH (t:Tool {id: $id}) RETURN count(t) AS n", &tool).await;
        let processes = count("MATCH (p:Process {id: $id}) RETURN count(p) AS n", &pid).await;
        let q = "MATCH (:Process {id: $id})-[:HAS_VERSION]->()-[:HAS_STEP]->(s)-[:CALLS_TOOL]->() \
                 RETURN count(s) AS n";
        let linked = count(q, &pid).await;
        judge(
            round,
            (tools, processes, linked),
            &deleted,
            &created,
            ("TOOL-8", "PROC-2"),
            &mut wrong,
        );
    }
    assert!(
        wrong.is_empty(),
        "wrong replies:\n{}\nserver errors:\n{}",
        wrong.join("\n"),
        aiden_tests::server().error_lines()
    );
}
