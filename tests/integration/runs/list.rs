//! The run list as the console reads it (`GET /v1/runs`): each line names its Process and owner
//! and says how long the run took; a search by id prefix; an admin's owner filter; and the
//! Neo4j Browser address an admin (and only an admin) is told in `GET /v1/me`.

use aiden_tests::{admin, new_user, user, TEST_NEO4J_BROWSER};
use chrono::DateTime;
use serde_json::json;

use super::*;

fn millis(v: &Value) -> i64 {
    DateTime::parse_from_rfc3339(v.as_str().expect("a time"))
        .expect("RFC 3339")
        .timestamp_millis()
}

/// A run's line carries its Process's name, its owner's name and its duration (finished −
/// started); one that is not a conversation's answer has no message.
#[tokio::test]
async fn a_run_line_names_its_process_and_owner_and_says_how_long_it_took() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"steps": [step(&k.echo, "a", json!({"q": "x"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");

    let page = u
        .get(&format!("/v1/runs?processId={p}"))
        .await
        .ok(200)
        .clone();
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{page}");
    let line = &items[0];
    assert_eq!(line["id"], id.as_str());
    assert_eq!(line["processName"], "execution test", "{line}");
    assert_eq!(
        line["ownerName"],
        u.id.as_str(),
        "users made by the tests are named by their id: {line}"
    );
    assert_eq!(
        line["message"],
        Value::Null,
        "started directly: no message answered"
    );
    let took = millis(&run["finishedAt"]) - millis(&run["startedAt"]);
    assert_eq!(line["durationMs"], json!(took), "{line} vs {run}");
}

/// A search by id: a prefix of at least four hex digits finds the run (and only runs whose id
/// starts with it); anything else is refused in words, never run as a query.
#[tokio::test]
async fn the_run_list_finds_a_run_by_the_start_of_its_id() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"steps": [step(&k.echo, "a", json!({"q": "y"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    u.settled_run(&id).await;
    let prefix = &id[..13];
    let page = u
        .get(&format!("/v1/runs?idPrefix={}", prefix.to_uppercase()))
        .await
        .ok(200)
        .clone();
    let ids: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&id.as_str()), "{page}");
    assert!(ids.iter().all(|i| i.starts_with(prefix)), "{page}");
    let whole = u
        .get(&format!("/v1/runs?idPrefix={id}"))
        .await
        .ok(200)
        .clone();
    assert_eq!(whole["items"].as_array().unwrap().len(), 1, "{whole}");
    for bad in ["01", "zzzz", "0199'%20OR%201=1"] {
        let r = u.get(&format!("/v1/runs?idPrefix={bad}")).await;
        assert_eq!(r.status, 400, "idPrefix={bad}: {}", r.body);
    }
}

/// An admin narrows the list to one owner's runs; a user's `ownerId` cannot widen their own.
#[tokio::test]
async fn an_admin_filters_runs_by_owner_and_a_user_sees_only_their_own() {
    let a = user().await;
    let b = user().await;
    let k = kit(&a).await;
    let p = process(
        &a,
        json!({"steps": [step(&k.echo, "a", json!({"q": "z"}))]}),
    )
    .await;
    let mine = start(&a, &p, json!({})).await;
    a.settled_run(&mine).await;

    let by_a = admin()
        .get(&format!("/v1/runs?ownerId={}", a.id))
        .await
        .ok(200)
        .clone();
    let items = by_a["items"].as_array().unwrap();
    assert!(items.iter().any(|r| r["id"] == mine.as_str()), "{by_a}");
    assert!(
        items.iter().all(|r| r["ownerId"] == a.id.as_str()),
        "{by_a}"
    );
    let by_b = admin()
        .get(&format!("/v1/runs?ownerId={}", b.id))
        .await
        .ok(200)
        .clone();
    assert_eq!(by_b["items"], json!([]), "b started nothing: {by_b}");
    let asked = b
        .get(&format!("/v1/runs?ownerId={}", a.id))
        .await
        .ok(200)
        .clone();
    assert_eq!(
        asked["items"],
        json!([]),
        "b sees none of a's runs: {asked}"
    );
}

/// `GET /v1/me` tells an admin where Neo4j Browser is (an address, no credential) and tells
/// a user nothing of it.
#[tokio::test]
async fn only_an_admin_is_told_the_neo4j_browser_address() {
    let me = admin().get("/v1/me").await.ok(200).clone();
    assert_eq!(me["neo4jBrowserUrl"], TEST_NEO4J_BROWSER, "{me}");
    let other_admin = new_user("admin").await.get("/v1/me").await.ok(200).clone();
    assert_eq!(
        other_admin["neo4jBrowserUrl"], TEST_NEO4J_BROWSER,
        "{other_admin}"
    );
    let plain = user().await.get("/v1/me").await.ok(200).clone();
    assert!(plain.get("neo4jBrowserUrl").is_none(), "{plain}");
    let text = me.to_string().to_lowercase();
    assert!(
        !text.contains("bolt://") && !text.contains('@'),
        "an address, no credential: {me}"
    );
}
