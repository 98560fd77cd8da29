//! Entity merges (ENT-5) against real processes: the Graphiti service extracting
//! with the scripted LLM (`workers/graphiti/fake_llm.py`, whose embedder is a bag of words),
//! `aiden serve` and the episode pool. An Entity Graphiti extracted before the user created
//! theirs of the same name and summary merges into the user's when they create it; one
//! extracted afterwards merges when it is extracted. Every source and every edge ends on the
//! user's Entity; a user Entity whose name matches but whose meaning does not stays apart.

use std::time::{Duration, Instant};

use aiden_tests::procs::{assert_check_clean, free_port, spawn_env, Api};
use reqwest::Method;
use serde::Deserialize;
use serde_json::{json, Value};

use super::recall::{conversation, new_user, ok, say};
use super::{
    database, drop_vhost, fresh_vhost, graphiti, park_pending_items, python_proc, root, serve_env,
    wait_http,
};

const NAME: &str = "Grace Hopper";

/// Waits until `NAME` is extracted in conversation `c`: that Entity.
async fn extracted_in(a: &Api, c: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let path = format!("/v1/entities?conversationId={c}&q=Grace");
        let list = ok(a, Method::GET, &path, None, 200).await;
        let found = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["name"] == NAME && e["sources"][0]["type"] == "graphiti");
        if let Some(e) = found {
            return e.clone();
        }
        assert!(
            Instant::now() < deadline,
            "{NAME} never extracted in {c}: {list}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn source_types(entity: &Value) -> Vec<String> {
    entity["sources"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[derive(Deserialize, Debug, PartialEq)]
struct Edges {
    facts: i64,
    mentions: i64,
    all: i64,
    /// Facts whose graphiti `source_node_uuid` / `target_node_uuid` name neither end.
    stale: i64,
}

/// The relationships of the node with `uuid`, whatever its label.
async fn edges(graph: &aiden_graph::Graph, uuid: &str) -> Edges {
    let q = neo4rs::query(
        "MATCH (n {uuid: $uuid}) WHERE n:Entity OR n:MergedEntity \
         RETURN COUNT { (n)-[:RELATES_TO]-() } AS facts, COUNT { (n)<-[:MENTIONS]-() } AS mentions, \
                COUNT { (n)--() } AS all, \
                COUNT { (n)-[r:RELATES_TO]-() WHERE r.source_node_uuid <> n.uuid \
                        AND r.target_node_uuid <> n.uuid } AS stale",
    )
    .param("uuid", uuid);
    let rows: Vec<Edges> = graph.read_rows(q).await.expect("edges");
    rows.into_iter().next().expect("the node")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ent_5_a_users_entity_and_an_extracted_one_of_the_same_thing_become_one_with_every_source_and_edge(
) {
    let _serial = super::SERIAL.lock().await;
    // Not beside the Episode tests' processes (one engine lease, one relay per database).
    super::episodes::retire();
    let db = database();
    let (vhost, amqp) = fresh_vhost();
    let llm_port = free_port();
    let fake = root().join("workers/graphiti/fake_llm.py");
    let _llm = python_proc(
        "python3",
        &[
            fake.to_str().unwrap(),
            "--port",
            &llm_port.to_string(),
            "--dim",
            "384",
        ],
        &[],
    );
    let graphiti_port = free_port();
    let _service = graphiti(graphiti_port, Some(llm_port), &db);
    let graphiti_url = format!("http://127.0.0.1:{graphiti_port}");
    wait_http(
        &format!("http://127.0.0.1:{llm_port}/healthz"),
        Duration::from_secs(20),
    )
    .await;
    wait_http(&format!("{graphiti_url}/healthz"), Duration::from_secs(60)).await;
    park_pending_items(&db).await;
    let port = free_port();
    let extra = serve_env(&db, &amqp, &graphiti_url);
    let _serve = spawn_env(&["serve"], port, &extra);
    let _episodes = spawn_env(&["worker", "--type", "episode"], port, &extra);
    let admin = Api::local(port);
    admin.wait_ready().await;
    let settings = aiden_graph::Settings {
        database: db.clone(),
        ..aiden_tests::graph_settings()
    };
    let graph = aiden_graph::Graph::connect(&settings).await.expect("graph");
    let (_, a) = new_user(&admin).await;

    // Extracted first: Grace Hopper, with a fact about her and Howard Aiken.
    let c1 = conversation(&a, "compilers").await;
    say(
        &a,
        &c1,
        "Grace Hopper wrote the first compiler with Howard Aiken",
        None,
    )
    .await;
    let first = extracted_in(&a, &c1).await;
    let first_uuid = first["uuid"].as_str().unwrap().to_owned();
    let before = edges(&graph, &first_uuid).await;
    assert!(before.facts >= 1 && before.mentions == 1, "{before:?}");

    // A user Entity whose name matches but whose meaning does not: nothing merges.
    let decoy = ok(
        &a,
        Method::POST,
        "/v1/entities",
        Some(json!({"name": "Grace", "summary": "the grey cat next door, asleep on our porch"})),
        201,
    )
    .await;
    assert_eq!(source_types(&decoy), ["user"]);
    ok(
        &a,
        Method::GET,
        &format!("/v1/entities/{first_uuid}"),
        None,
        200,
    )
    .await;

    // The user's Entity of the same name and summary: the extracted one merges into it.
    let mine = ok(
        &a,
        Method::POST,
        "/v1/entities",
        Some(json!({"name": NAME, "summary": first["summary"], "category": "Person"})),
        201,
    )
    .await;
    let uuid = mine["uuid"].as_str().unwrap().to_owned();
    assert_eq!(mine["name"], NAME, "the user's name first");
    assert_eq!(source_types(&mine), ["user", "graphiti"], "{mine}");
    // The merged uuid is no Entity any more: it redirects (308) to the one it merged into.
    let (s, moved) = a
        .call(Method::GET, &format!("/v1/entities/{first_uuid}"), None)
        .await;
    assert_eq!((s, &moved["uuid"]), (200, &json!(uuid)), "{moved}");
    let survivor = edges(&graph, &uuid).await;
    assert_eq!(
        (survivor.facts, survivor.mentions, survivor.stale),
        (before.facts, before.mentions, 0),
        "every edge moved"
    );
    let tombstone = edges(&graph, &first_uuid).await;
    assert_eq!(tombstone.all, 0, "nothing left on the merged node");

    // Extracted afterwards, in another conversation (said so that Graphiti sums her up as
    // before): merged when it is extracted.
    let c2 = conversation(&a, "debugging").await;
    say(
        &a,
        &c2,
        "Grace Hopper and Howard Aiken ran the Harvard Mark computer",
        None,
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(90);
    let merged = loop {
        let e = ok(&a, Method::GET, &format!("/v1/entities/{uuid}"), None, 200).await;
        if source_types(&e) == ["user", "graphiti", "graphiti"] {
            break e;
        }
        assert!(Instant::now() < deadline, "never merged: {e}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let groups: Vec<&str> = merged["sources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["episodeId"].as_str())
        .collect();
    assert_eq!(
        groups.len(),
        2,
        "one mention from each conversation: {merged}"
    );
    let left = ok(
        &a,
        Method::GET,
        &format!("/v1/entities?conversationId={c2}&q=Grace"),
        None,
        200,
    )
    .await;
    let hers: Vec<&str> = left["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == NAME)
        .filter_map(|e| e["uuid"].as_str())
        .collect();
    assert_eq!(
        hers,
        [uuid.as_str()],
        "c2's Grace Hopper is the user's: {left}"
    );
    let decoy_now = ok(
        &a,
        Method::GET,
        &format!("/v1/entities/{}", decoy["uuid"].as_str().unwrap()),
        None,
        200,
    )
    .await;
    assert_eq!(source_types(&decoy_now), ["user"]);
    assert_check_clean(Some(&db));
    drop_vhost(&vhost);
}
