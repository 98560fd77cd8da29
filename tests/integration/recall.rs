//! Search as a Tool: the `recall` operation type runs `GET /v1/search`'s search with
//! the run owner's rights (SRCH-2), in a whole run on the `recall` pool. No embedder answers at
//! the Tool's endpoint here, so the search runs on words (and says so).

use aiden_tests::{step_of, unique, user, Client};
use serde_json::{json, Value};

async fn say(c: &Client, text: &str) -> String {
    let conv = c
        .post("/v1/conversations", json!({"title": "recall"}))
        .await
        .ok(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let turn = c
        .post(
            &format!("/v1/conversations/{conv}/turns"),
            json!({"speaker": "user", "content": text}),
        )
        .await;
    turn.ok(201)["alternatives"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A knowledge Service (no embedder at its endpoint), a `recall` Tool and a one-step Process.
async fn search_process(c: &Client, tag: &str, operation: Value) -> Result<String, Value> {
    c.post(
        "/v1/services",
        json!({"id": format!("svc-{tag}"), "name": "knowledge", "type": "knowledge",
               "protocol": "http", "requiresSecret": false, "endpoint": "http://127.0.0.1:9",
               "enabled": true,
               "connectionSchema": {"type": "object", "required": ["endpoint"],
                   "properties": {"endpoint": {"type": "string"}}}}),
    )
    .await
    .ok(201);
    let tool = c
        .post(
            "/v1/tools",
            json!({"id": format!("tool-{tag}"), "name": "search", "serviceId": format!("svc-{tag}"),
                   "connectionParams": {"endpoint": "http://127.0.0.1:9"},
                   "operation": operation,
                   "inputSchema": {"type": "object", "required": ["q"],
                       "properties": {"q": {"type": "string"}}},
                   "outputSchema": {"type": "object", "required": ["hits"]}, "enabled": true}),
        )
        .await;
    if tool.status != 201 {
        return Err(tool.body.clone());
    }
    c.post(
        "/v1/processes",
        json!({"id": format!("proc-{tag}"), "name": "search",
               "initialContext": ["q"],
               "steps": [{"id": "s", "tool": format!("tool-{tag}"), "inputs": {"q": "{{q}}"},
                          "output": {"variable": "found", "required": true}}]}),
    )
    .await
    .ok(201);
    Ok(format!("proc-{tag}"))
}

#[tokio::test]
async fn srch_2_the_recall_tool_searches_with_the_run_owners_rights() {
    let (a, b) = (user().await, user().await);
    let word = unique("heron").replace('-', "");
    let mine = say(&a, &format!("The {word} nests by the old mill pond")).await;
    let theirs = say(&b, &format!("The {word} nests by the old mill pond too")).await;
    let tag = unique("recall");
    let process = search_process(&a, &tag, json!({"type": "recall", "limit": 5}))
        .await
        .expect("recall tool");
    let run = a.start_run(&process, json!({"q": word})).await;
    let run = a.settled_run(&run).await;
    assert_eq!(run["status"], "completed", "{run}");
    let found = &step_of(&run, "s")["output"];
    let ids: Vec<&str> = found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["id"].as_str())
        .collect();
    assert!(ids.contains(&mine.as_str()), "A's own message: {found}");
    assert!(
        !ids.contains(&theirs.as_str()),
        "SRCH-2: never B's: {found}"
    );
    assert_eq!(found["signals"], json!(["text"]), "{found}");
    assert!(found["warning"].is_string(), "{found}");

    // SRCH-1 holds for the operation too: a limit past 50 is refused when the Tool is made.
    let refused = search_process(
        &a,
        &unique("recall"),
        json!({"type": "recall", "limit": 99}),
    )
    .await
    .expect_err("limit 99");
    assert!(refused.to_string().contains("limit"), "{refused}");
}

/// A search by meaning alone as `owner`, the index asked for 50, its nearest `keep` kept.
fn ask_by_meaning<'a>(
    owner: &'a str,
    vector: &'a [f32],
    keep: i64,
) -> aiden_graph::recall::Ask<'a> {
    aiden_graph::recall::Ask {
        caller_id: owner,
        conversation_id: None,
        vector: Some(vector),
        text: "",
        k: 50,
        keep_by_meaning: keep,
    }
}

/// When the vector index's nearest hold too few of the caller's own, search compares
/// the caller's content itself, but only the newest N of it (`graph_recall::EXACT_SCAN_CAP` in
/// production): what it costs stays bounded however much a user owns. Three planted Memories,
/// the oldest the nearest to the query: a scan of 2 finds the two newest, a scan of 3 all three,
/// the oldest first. Then with only the nearest 2 kept (as working memory's search by meaning
/// keeps a few): the two nearest, whatever their age (none supersedes another).
#[tokio::test]
async fn the_exact_scan_compares_only_the_newest_content() {
    use aiden_domain::knowledge::recall::HitKind;
    use aiden_graph::recall as graph_recall;
    use aiden_tests::{aiden_graph_query as query, graph_write};

    let owner = unique("scan-owner");
    let ids: Vec<String> = (0..3).map(|_| unique("mem")).collect();
    // Oldest first; the oldest points where the query does.
    let plant = query(
        "UNWIND range(0, 2) AS i
         CREATE (:Memory:Embedded {id: $ids[i], ownerId: $owner, content: 'memory ' + i,
                 createdAt: '2026-01-0' + toString(i + 1) + 'T00:00:00Z',
                 embedding: CASE i WHEN 0 THEN [1.0, 0.0, 0.0] WHEN 1 THEN [0.6, 0.8, 0.0]
                                   ELSE [0.0, 1.0, 0.0] END})",
    )
    .param("ids", ids.clone())
    .param("owner", owner.as_str());
    graph_write(plant).await;
    let graph = aiden_graph::Graph::connect(&aiden_tests::graph_settings())
        .await
        .expect("graph");
    let vector = [1.0_f32, 0.0, 0.0];
    let mut found = Vec::new();
    for (scan, keep) in [(2, 50), (3, 50), (3, 2)] {
        let ask = ask_by_meaning(&owner, &vector, keep);
        let rows = graph_recall::content(&graph, &ask, &[HitKind::Memory], &[], Some(scan))
            .await
            .expect("search");
        let mut by_score: Vec<_> = rows.into_iter().filter(|r| r.signal == "vector").collect();
        by_score.sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap());
        found.push(by_score.into_iter().map(|r| r.id).collect::<Vec<_>>());
    }
    graph_write(
        query("MATCH (m:Memory) WHERE m.id IN $ids DETACH DELETE m").param("ids", ids.clone()),
    )
    .await;
    assert_eq!(found[0], [ids[1].clone(), ids[2].clone()], "the two newest");
    assert_eq!(found[1], [ids[0].clone(), ids[1].clone(), ids[2].clone()]);
    assert_eq!(
        found[2],
        [ids[0].clone(), ids[1].clone()],
        "the nearest two kept"
    );
}

/// SRCH-7 with the cut working memory's search makes: a message that supersedes another is
/// kept past the caller's nearest, so the older version it supersedes is not demoted as
/// superseded by a message not found. Three planted messages of one conversation: the oldest
/// the nearest to the query, the newest (the farthest) superseding it. Keeping only the nearest
/// one still brings the newest, not the one in between.
#[tokio::test]
async fn srch_7_a_superseding_message_is_kept_past_the_nearest() {
    use aiden_domain::knowledge::recall::HitKind;
    use aiden_graph::recall as graph_recall;
    use aiden_tests::{aiden_graph_query as query, graph_write};

    let owner = unique("keep-owner");
    let conversation = unique("keep-conv");
    let ids: Vec<String> = (0..3).map(|_| unique("keep-alt")).collect();
    let plant = query(
        "CREATE (:Conversation {id: $conversation, ownerId: $owner, status: 'active'})
         WITH 1 AS one UNWIND range(0, 2) AS i
         CREATE (:Alternative:Embedded {id: $ids[i], conversationId: $conversation,
                 content: 'message ' + i, state: 'valid',
                 createdAt: '2026-01-0' + toString(i + 1) + 'T00:00:00Z',
                 embedding: CASE i WHEN 0 THEN [1.0, 0.0, 0.0] WHEN 1 THEN [0.6, 0.8, 0.0]
                                   ELSE [0.0, 1.0, 0.0] END})
         WITH count(*) AS planted
         MATCH (old:Alternative {id: $ids[0]}), (new:Alternative {id: $ids[2]})
         CREATE (new)-[:SUPERSEDES]->(old)",
    )
    .param("ids", ids.clone())
    .param("owner", owner.as_str())
    .param("conversation", conversation.as_str());
    graph_write(plant).await;
    let graph = aiden_graph::Graph::connect(&aiden_tests::graph_settings())
        .await
        .expect("graph");
    let vector = [1.0_f32, 0.0, 0.0];
    let ask = ask_by_meaning(&owner, &vector, 1);
    // Removed before anything is asserted: planted nodes left behind would fail `aiden check`.
    let rows = graph_recall::content(&graph, &ask, &[HitKind::Episode], &[], Some(3)).await;
    graph_write(
        query("MATCH (x) WHERE x.id IN $ids OR x.id = $conversation DETACH DELETE x")
            .param("ids", ids.clone())
            .param("conversation", conversation.as_str()),
    )
    .await;
    let rows = rows.expect("search");
    let mut found: Vec<_> = rows.into_iter().filter(|r| r.signal == "vector").collect();
    found.sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap());
    let found: Vec<String> = found.into_iter().map(|r| r.id).collect();
    assert_eq!(found, [ids[0].clone(), ids[2].clone()], "SRCH-7");
}

/// SRCH-6: a message that shares one word of six with the query is under the words floor and
/// not listed; the one that has them all is, found by words and not yet indexed for meaning
/// (no embedder answers here, so nothing is embedded).
#[tokio::test]
async fn srch_6_search_lists_only_strong_matches_and_says_how_each_was_found() {
    let a = user().await;
    let words: Vec<String> = (0..6)
        .map(|i| unique(&format!("w{i}x")).replace('-', ""))
        .collect();
    let all = say(&a, &format!("{} nest by the mill pond", words.join(" "))).await;
    let one = say(
        &a,
        &format!("{} went shopping at the market near town", words[0]),
    )
    .await;
    let q = words.join(" ");
    let found = a.get(&format!("/v1/search?q={q}&limit=20")).await;
    assert_eq!(found.status, 200, "{}", aiden_tests::server().error_lines());
    let found = found.ok(200);
    let hits = found["hits"].as_array().unwrap();
    let ids: Vec<&str> = hits.iter().filter_map(|h| h["id"].as_str()).collect();
    assert_eq!(ids, [all.as_str()], "only the strong match: {found}");
    assert!(!ids.contains(&one.as_str()));
    let hit = &hits[0];
    assert_eq!(hit["foundBy"], json!(["words"]), "{hit}");
    assert_eq!(hit["indexed"], json!(false), "{hit}");
    assert!(hit["score"].as_f64().unwrap() > 0.0, "{hit}");
    assert_eq!(hit["alternativeId"], json!(all), "{hit}");
    // The one word alone finds both: each is then the best match of its own word.
    let found = a.get(&format!("/v1/search?q={}", words[0])).await;
    let n = found.ok(200)["hits"].as_array().unwrap().len();
    assert_eq!(n, 2, "{}", found.body);
}
