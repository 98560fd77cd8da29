//! Working memory: the path follows `respondsTo` (WM-1), its token estimate (WM-2), Summaries
//! that stand in for the path they were made from (WM-3), and Summaries themselves (SUM-1).

use std::collections::HashSet;

use aiden_tests::{aiden_graph_query, graph_rows, user};
use serde_json::{json, Value};

use super::*;

/// WM-1: the immediate path runs root → the given Alternative along each Alternative's own
/// `respondsTo` (a stale Alternative keeps its own ancestry), and for a non-stale Alternative it
/// is exactly the chain of active Alternatives; turnId alone means that Turn's active
/// Alternative, neither means the Conversation's current one, and an empty Conversation has an
/// empty path.
#[tokio::test]
async fn wm_1_the_path_follows_responds_to_not_the_current_selection() {
    let u = user().await;
    let c = conversation(&u).await;
    let empty = wm(&u, &c, "").await;
    assert_eq!(empty["conversationId"], json!(c));
    assert!(path(&empty).is_empty());
    assert_eq!(empty["totalTokens"], 0);
    assert_eq!(empty["currentAlternativeId"], Value::Null);

    let t1 = say(&u, &c, "a1", None).await;
    let t2 = say(&u, &c, "b1", Some(&id(&t1))).await;
    let t3 = say(&u, &c, "c1", Some(&id(&t2))).await;
    let b2 = edit(&u, &id(&t2), "b2", None).await;
    let t4 = say(&u, &c, "d1", Some(&id(&t2))).await;
    let a2 = edit(&u, &id(&t1), "a2", None).await;

    // c1 answered b1, which is no longer active: its path still goes through b1 and a1.
    let m = wm(&u, &c, &format!("?alternativeId={}", first(&t3))).await;
    assert_eq!(contents(&m), ["a1", "b1", "c1"]);
    assert_eq!(path_alts(&m), [first(&t1), first(&t2), first(&t3)]);
    assert_eq!(m["currentTurnId"], t3["id"]);
    assert_eq!(m["currentAlternativeId"], json!(first(&t3)));
    let turn_ids: Vec<Value> = path(&m).iter().map(|p| p["turnId"].clone()).collect();
    assert_eq!(
        turn_ids,
        [t1["id"].clone(), t2["id"].clone(), t3["id"].clone()]
    );
    let seqs: Vec<Value> = path(&m).iter().map(|p| p["sequence"].clone()).collect();
    assert_eq!(seqs, [json!(1), json!(2), json!(3)]);
    assert!(path(&m).iter().all(|p| p["speaker"] == "user"));
    // turnId alone: that Turn's active (only) Alternative — the same path.
    assert_eq!(
        contents(&wm(&u, &c, &format!("?turnId={}", id(&t3))).await),
        ["a1", "b1", "c1"]
    );
    // d1 answered b2 (then active); after the edit of turn 1 it still goes through a1.
    assert_eq!(
        contents(&wm(&u, &c, &format!("?alternativeId={}", first(&t4))).await),
        ["a1", "b2", "d1"]
    );
    // Default position: the last Alternative created or switched to (a2).
    let m = wm(&u, &c, "").await;
    assert_eq!(contents(&m), ["a2"]);
    assert_eq!(m["currentAlternativeId"], a2["id"]);
    // Back on the original line: a non-stale Alternative's path is the active chain.
    switch(&u, &id(&t1), &first(&t1)).await;
    switch(&u, &id(&t2), &id(&b2)).await;
    let m = wm(&u, &c, &format!("?turnId={}", id(&t4))).await;
    assert_eq!(contents(&m), ["a1", "b2", "d1"]);
    let full = tree(&u, &c).await;
    for p in path(&m) {
        let t = tree_turn(&full, &text(&p["turnId"]));
        assert_eq!(actives(&t), [text(&p["alternativeId"])], "the active chain");
        assert_eq!(
            tree_alt(&full, &text(&p["alternativeId"]))["cacheStatus"],
            "valid"
        );
    }
    assert_eq!(
        contents(&wm(&u, &c, "").await),
        ["a1", "b2"],
        "last switched to"
    );
    // Both parameters, consistent: fine.
    let both = wm(
        &u,
        &c,
        &format!("?turnId={}&alternativeId={}", id(&t2), first(&t2)),
    )
    .await;
    assert_eq!(contents(&both), ["a1", "b1"]);
    // Switching to a stale Alternative (c1 answered b1) makes it the position: its own path.
    switch(&u, &id(&t3), &first(&t3)).await;
    assert_eq!(contents(&wm(&u, &c, "").await), ["a1", "b1", "c1"]);
}

/// WM-2: each path entry's tokens are ceil(characters / 4) — characters, not bytes — and
/// totalTokens is their sum plus the included Summaries' tokenCount (which defaults to the same
/// estimate of the Summary's content).
#[tokio::test]
async fn wm_2_total_tokens_is_the_sum_of_path_and_summary_estimates() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let texts = ["héllo wörld!", "日本語のテキスト", "a"];
    let t1 = say(u, &c, texts[0], None).await;
    let t2 = say(u, &c, texts[1], Some(&id(&t1))).await;
    let t3 = say(u, &c, texts[2], Some(&id(&t2))).await;
    let r = answer(u, &c, &k.p1, &id(&t3), None).await;
    let answer_text = text(&r["content"]);
    let m = wm(u, &c, "").await;
    let want: Vec<i64> = texts
        .iter()
        .map(|t| ceil4(t))
        .chain([ceil4(&answer_text)])
        .collect();
    let got: Vec<i64> = path(&m)
        .iter()
        .map(|p| p["tokens"].as_i64().unwrap())
        .collect();
    assert_eq!(got, want, "ceil(chars/4) per entry");
    assert_eq!(want[..3], [3, 2, 1], "characters, not bytes");
    assert_eq!(m["totalTokens"], want.iter().sum::<i64>());
    assert_eq!(m["activeEntities"], json!([]));
    assert_eq!(m["introspectionContext"], json!([]));
    assert!(m["lastUpdated"].is_string());

    let s = u
        .post(
            &format!("/v1/conversations/{c}/summaries"),
            json!({"content": "ééééé", "coversUpToTurnId": id(&t1), "sources": [first(&t1)]}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(s["tokenCount"], 2, "default tokenCount: ceil(5 chars / 4)");
    let m = wm(u, &c, "").await;
    assert_eq!(contents(&m).len(), 3, "the summary replaces turn 1");
    assert_eq!(m["summaries"][0]["tokenCount"], 2);
    assert_eq!(m["totalTokens"], 2 + want[1..].iter().sum::<i64>());
    u.post(
        &format!("/v1/conversations/{c}/summaries"),
        json!({"content": "big", "coversUpToTurnId": id(&t2),
               "sources": [id(&s), first(&t2)], "tokenCount": 40}),
    )
    .await
    .ok(201);
    let m = wm(u, &c, "").await;
    assert_eq!(contents(&m), [texts[2].to_owned(), answer_text.clone()]);
    assert_eq!(
        m["totalTokens"],
        40 + want[2] + want[3],
        "only the deepest summary counts"
    );
}

/// WM-3: the deepest Summary covering a Turn on the path replaces that Turn and everything
/// before it; a Summary of another branch does not apply; ids of another conversation are
/// refused (working memory and Summaries) and nothing is written.
#[tokio::test]
async fn wm_3_the_deepest_covering_summary_replaces_the_covered_path_and_foreign_ids_are_refused() {
    let u = user().await;
    let c = conversation(&u).await;
    let other = conversation(&u).await;
    let t1 = say(&u, &c, "one", None).await;
    let t2 = say(&u, &c, "two", Some(&id(&t1))).await;
    let t3 = say(&u, &c, "three", Some(&id(&t2))).await;
    let t4 = say(&u, &c, "four", Some(&id(&t3))).await;
    let sums = format!("/v1/conversations/{c}/summaries");
    let s1 = u
        .post(
            &sums,
            json!({"content": "S1", "coversUpToTurnId": id(&t1), "sources": [first(&t1)], "tokenCount": 100}),
        )
        .await
        .ok(201)
        .clone();
    let s2 = u
        .post(
            &sums,
            json!({"content": "S2", "coversUpToTurnId": id(&t3),
                   "sources": [id(&s1), first(&t2), first(&t3)], "tokenCount": 7}),
        )
        .await
        .ok(201)
        .clone();
    let m = wm(&u, &c, &format!("?alternativeId={}", first(&t4))).await;
    assert_eq!(contents(&m), ["four"]);
    let used: Vec<Value> = m["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].clone())
        .collect();
    assert_eq!(
        used,
        [s2["id"].clone()],
        "the deepest covering summary only"
    );
    assert_eq!(m["summaries"][0]["coversUpToTurnId"], t3["id"]);
    assert_eq!(m["summaries"][0]["compressionLevel"], 2);
    assert_eq!(m["totalTokens"], 7 + ceil4("four"));
    // At turn 2 only S1 covers something on the path.
    let m = wm(&u, &c, &format!("?alternativeId={}", first(&t2))).await;
    assert_eq!(contents(&m), ["two"]);
    assert_eq!(m["summaries"][0]["id"], s1["id"]);
    assert_eq!(m["totalTokens"], 100 + ceil4("two"));
    // Another branch below turn 2 reaches depth 3 through a new Turn: S2 (covering turn 3)
    // does not apply to it however deep it is; S1 (turn 1, shared) still does.
    let t2b = edit(&u, &id(&t2), "two, edited", None).await;
    let t3b = say(&u, &c, "three, again", Some(&id(&t2))).await;
    let m = wm(&u, &c, &format!("?alternativeId={}", first(&t3b))).await;
    assert_eq!(contents(&m), ["two, edited", "three, again"]);
    assert_eq!(m["summaries"].as_array().unwrap().len(), 1);
    assert_eq!(m["summaries"][0]["id"], s1["id"]);
    let _ = t2b;
    // The original branch is still summarized by S2.
    let m = wm(&u, &c, &format!("?alternativeId={}", first(&t4))).await;
    assert_eq!(m["summaries"][0]["id"], s2["id"]);

    // Foreign ids.
    let x1 = say(&u, &other, "elsewhere", None).await;
    let x2 = say(&u, &other, "elsewhere 2", Some(&id(&x1))).await;
    let xs = u
        .post(
            &format!("/v1/conversations/{other}/summaries"),
            json!({"content": "X", "coversUpToTurnId": id(&x1), "sources": [first(&x1)]}),
        )
        .await
        .ok(201)
        .clone();
    for q in [
        format!("?alternativeId={}", first(&x2)),
        format!("?turnId={}", id(&x2)),
        format!("?turnId={}&alternativeId={}", id(&x2), first(&x2)),
    ] {
        u.get(&format!("/v1/conversations/{c}/working-memory{q}"))
            .await
            .rejects(422, "WM-3");
    }
    let before = snapshot(&c, &u.id).await;
    for body in [
        json!({"content": "x", "coversUpToTurnId": id(&x1), "sources": [first(&t1)]}),
        json!({"content": "x", "coversUpToTurnId": id(&t1), "sources": [first(&x1)]}),
        json!({"content": "x", "coversUpToTurnId": id(&t1), "sources": [first(&t1), id(&xs)]}),
    ] {
        u.post(&sums, body).await.rejects(422, "WM-3");
    }
    assert_eq!(snapshot(&c, &u.id).await, before);
    assert_eq!(
        u.get(&sums).await.ok(200)["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// WM-3 and what an agent turn is given (AGT-8): `userMessage` is the parent Alternative's content even
/// when a Summary covers the parent Turn (the Summary replaces it in the working memory, not in
/// what the agent is asked to answer).
#[tokio::test]
async fn wm_3_a_covering_summary_does_not_blank_the_agent_user_message() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "first question", None).await;
    let s = u
        .post(
            &format!("/v1/conversations/{c}/summaries"),
            json!({"content": "the user asked a question", "coversUpToTurnId": id(&t1),
                   "sources": [first(&t1)]}),
        )
        .await
        .ok(201)
        .clone();
    let m = wm(u, &c, "").await;
    assert!(path(&m).is_empty(), "the summary covers turn 1: {m}");
    assert_eq!(m["summaries"][0]["id"], s["id"]);
    let r = answer(u, &c, &k.p1, &id(&t1), None).await;
    let run = u.settled_run(&text(&r["runId"])).await;
    assert_eq!(
        run["inputs"]["workingMemory"]["summaries"][0]["id"], s["id"],
        "the run sees the working memory at the parent"
    );
    assert_eq!(
        run["inputs"]["userMessage"], "first question",
        "userMessage must be the parent Alternative's content"
    );
    assert_eq!(r["content"], "answer to first question [P1]");
}

/// SUM-1: a Summary needs at least one source (422 SUM-1 for none or an unknown one);
/// compressionLevel = max(source levels) + 1 with Alternatives at 0; SUMMARIZES, COVERS_UP_TO
/// and CREATED_BY_PROCESS are written; a refused Summary writes nothing.
#[tokio::test]
async fn sum_1_sources_are_required_and_compression_is_one_above_the_highest_source() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "one", None).await;
    let t2 = say(u, &c, "two", Some(&id(&t1))).await;
    let sums = format!("/v1/conversations/{c}/summaries");
    let before = snapshot(&c, &u.id).await;
    for sources in [json!([]), json!(["no-such-source"])] {
        u.post(
            &sums,
            json!({"content": "x", "coversUpToTurnId": id(&t1), "sources": sources}),
        )
        .await
        .rejects(422, "SUM-1");
    }
    u.post(&sums, json!({"content": "x", "coversUpToTurnId": id(&t1)}))
        .await
        .ok(400);
    assert_eq!(snapshot(&c, &u.id).await, before);

    let s1 = u
        .post(
            &sums,
            json!({"content": "level one", "coversUpToTurnId": id(&t1), "sources": [first(&t1)],
                   "createdByProcessId": k.p1}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(s1["compressionLevel"], 1);
    assert_eq!(s1["conversationId"], json!(c));
    assert_eq!(s1["coversUpToTurnId"], t1["id"]);
    assert_eq!(s1["sources"], json!([first(&t1)]));
    assert_eq!(s1["createdByProcessId"], json!(k.p1));
    assert_eq!(s1["tokenCount"], ceil4("level one"));
    let s2 = u
        .post(
            &sums,
            json!({"content": "level two", "coversUpToTurnId": id(&t2), "sources": [id(&s1), first(&t2)]}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(s2["compressionLevel"], 2);
    let s3 = u
        .post(
            &sums,
            json!({"content": "level three", "coversUpToTurnId": id(&t2),
                   "sources": [first(&t1), id(&s1), id(&s2)]}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(s3["compressionLevel"], 3, "max(0, 1, 2) + 1");
    let listed = u.get(&sums).await.ok(200).clone();
    let ids: HashSet<String> = listed["items"].as_array().unwrap().iter().map(id).collect();
    assert_eq!(ids, [id(&s1), id(&s2), id(&s3)].into_iter().collect());

    #[derive(serde::Deserialize)]
    struct Row {
        id: String,
        sources: Vec<String>,
        covers: Vec<String>,
        by: Vec<String>,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (:Conversation {id: $c})-[:HAS_SUMMARY]->(s:Summary)
             OPTIONAL MATCH (s)-[:SUMMARIZES]->(src)
             WITH s, collect(coalesce(src.id, src.uuid)) AS sources
             OPTIONAL MATCH (s)-[:COVERS_UP_TO]->(t:ConversationTurn)
             WITH s, sources, collect(t.id) AS covers
             OPTIONAL MATCH (s)-[:CREATED_BY_PROCESS]->(p:Process)
             RETURN s.id AS id, sources, covers, collect(p.id) AS by",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(rows.len(), 3);
    for r in rows {
        let api = [&s1, &s2, &s3]
            .into_iter()
            .find(|s| s["id"] == r.id)
            .unwrap();
        let mut want: Vec<String> = api["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(text)
            .collect();
        let mut got = r.sources.clone();
        want.sort();
        got.sort();
        assert_eq!(got, want, "SUMMARIZES of {}", r.id);
        assert_eq!(r.covers, [text(&api["coversUpToTurnId"])]);
        let by: Vec<String> = api["createdByProcessId"]
            .as_str()
            .map(str::to_owned)
            .into_iter()
            .collect();
        assert_eq!(r.by, by);
    }
}
