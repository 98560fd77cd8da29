//! The shape of the tree: sequence is depth (TURN-1), every child hangs off one Alternative of
//! its parent (TURN-3), nothing is edited or deleted (TURN-4), and the windowed tree.

use std::collections::HashMap;

use aiden_tests::{aiden_graph_query, graph_rows, user};
use futures::future::join_all;
use reqwest::Method;
use serde_json::{json, Value};

use super::*;

/// TURN-1: a Turn's sequence is its depth (root 1, child parent + 1; siblings share it) for
/// user, agent and continued-from-older Turns; HAS_TURN.sequence agrees; only the first Turn
/// is a root.
#[tokio::test]
async fn turn_1_sequence_is_the_depth_and_only_the_first_turn_is_a_root() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let root = say(u, &c, "root", None).await;
    assert_eq!(root["sequence"], 1);
    assert_eq!(root["parentTurnId"], Value::Null);
    assert_eq!(root["viaAlternative"], Value::Null);
    assert_eq!(root["conversationId"], json!(c));
    assert_eq!(root["speaker"], "user");
    assert_eq!(root["turnType"], "message");
    let before = snapshot(&c, &u.id).await;
    u.post(
        &format!("/v1/conversations/{c}/turns"),
        json!({"speaker": "user", "content": "a second root"}),
    )
    .await
    .rejects(422, "TURN-3");
    u.post(
        &format!("/v1/conversations/{c}/turns"),
        json!({"speaker": "user", "content": "x", "parentAlternativeId": first(&root)}),
    )
    .await
    .rejects(422, "TURN-3");
    assert_eq!(snapshot(&c, &u.id).await, before);

    let child = say(u, &c, "child", Some(&id(&root))).await;
    let sibling = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "system", "content": "sibling", "turnType": "tool_result",
                   "parentTurnId": id(&root)}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(child["sequence"], 2);
    assert_eq!(sibling["sequence"], 2, "siblings share a depth");
    assert_eq!(sibling["speaker"], "system");
    assert_eq!(sibling["turnType"], "tool_result");
    let agent = answer(u, &c, &k.p1, &id(&child), None).await;
    let agent_turn = get_turn(u, &text(&agent["turnId"])).await;
    assert_eq!(agent_turn["sequence"], 3);
    assert_eq!(agent_turn["speaker"], "agent");
    // Continue from an older Alternative of `child`: still depth 3.
    let child_b = edit(u, &id(&child), "child, edited", None).await;
    let older = say_via(u, &c, "from the older child", &id(&child), &first(&child)).await;
    assert_eq!(older["sequence"], 3);
    assert_eq!(older["viaAlternative"], json!(first(&child)));
    let deeper = say(u, &c, "deeper", Some(&text(&agent["turnId"]))).await;
    assert_eq!(deeper["sequence"], 4);
    let _ = child_b;

    let full = tree(u, &c).await;
    let turns = turns_of(&full);
    assert_eq!(turns.len(), 6);
    let by_id: HashMap<String, Value> = turns.iter().map(|t| (id(t), t.clone())).collect();
    for t in &turns {
        let mut depth = 1;
        let mut at = t.clone();
        while let Some(p) = at["parentTurnId"].as_str() {
            depth += 1;
            at = by_id[p].clone();
        }
        assert_eq!(t["sequence"], depth, "sequence is the depth: {t}");
    }
    let seqs: Vec<i64> = turns
        .iter()
        .map(|t| t["sequence"].as_i64().unwrap())
        .collect();
    let mut sorted = seqs.clone();
    sorted.sort();
    assert_eq!(seqs, sorted, "the tree lists turns by sequence");
    #[derive(serde::Deserialize)]
    struct Row {
        id: String,
        edge: i64,
        node: i64,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (:Conversation {id: $c})-[h:HAS_TURN]->(t:ConversationTurn)
             RETURN t.id AS id, h.sequence AS edge, t.sequence AS node",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(rows.len(), 6, "one HAS_TURN per Turn");
    for r in rows {
        assert_eq!(r.edge, r.node);
        assert_eq!(by_id[&r.id]["sequence"], r.edge);
    }
    assert_eq!(full["conversation"]["turnCount"], 6);
}

/// TURN-1 under concurrency: 20 new Turns under one parent at once all get depth 2, each is
/// counted once, and a refused one (409) leaves no Turn behind.
#[tokio::test]
async fn turn_1_concurrent_new_turns_under_one_parent_are_each_counted_once() {
    let u = user().await;
    let c = conversation(&u).await;
    let root = say(&u, &c, "root", None).await;
    let root_id = id(&root);
    let adds = (0..20).map(|i| {
        let (u, c, root_id) = (u.clone(), c.clone(), root_id.clone());
        async move {
            u.post(
                &format!("/v1/conversations/{c}/turns"),
                json!({"speaker": "user", "content": format!("child {i}"), "parentTurnId": root_id}),
            )
            .await
        }
    });
    let replies = join_all(adds).await;
    let mut made = 0;
    for r in &replies {
        match r.status.as_u16() {
            201 => made += 1,
            409 => assert_eq!(r.code(), "CONFLICT"),
            s => panic!("unexpected {s}: {:?}", r.body),
        }
    }
    assert!(made > 0, "no concurrent Turn was created");
    let full = tree(&u, &c).await;
    let turns = turns_of(&full);
    assert_eq!(turns.len(), 1 + made);
    assert_eq!(full["conversation"]["turnCount"], 1 + made as i64);
    for t in &turns[1..] {
        assert_eq!(t["sequence"], 2);
        assert_eq!(t["parentTurnId"], json!(root_id));
        assert_eq!(t["alternatives"][0]["respondsTo"], json!(first(&root)));
    }
    assert_eq!(
        tree_alt(&full, &first(&root))["hasChildren"],
        true,
        "TURN-6: hasChildren"
    );
}

/// TURN-3 in the graph: a child Turn has one CHILD_OF to its parent (same conversation), each of
/// its Alternatives one RESPONDS_TO to an Alternative of that parent — the parent's active one
/// by default, or the one asked for; a root has neither, and a root's new Alternative may not
/// name a parent Alternative.
#[tokio::test]
async fn turn_3_child_of_and_responds_to_follow_the_chosen_parent_alternative() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "one", None).await;
    let (t1_id, u1) = (id(&t1), first(&t1));
    let u1b = id(&edit(u, &t1_id, "one, edited", None).await);
    let t2 = say(u, &c, "two", Some(&t1_id)).await;
    assert_eq!(t2["viaAlternative"], json!(u1b), "default: the active one");
    assert_eq!(t2["alternatives"][0]["respondsTo"], json!(u1b));
    let t2b = say_via(u, &c, "two, from the original", &t1_id, &u1).await;
    assert_eq!(t2b["viaAlternative"], json!(u1));
    assert_eq!(t2b["alternatives"][0]["respondsTo"], json!(u1));
    let r = answer(u, &c, &k.p1, &id(&t2), None).await;
    let agent_turn = text(&r["turnId"]);
    assert_eq!(r["respondsTo"], json!(first(&t2)));
    let u2b = id(&edit(u, &id(&t2), "two, edited", None).await);
    let r2 = regen(u, &agent_turn, &k.p2, None).await;
    assert_eq!(
        r2["respondsTo"],
        json!(u2b),
        "regeneration: the parent's active one"
    );
    let r3 = regen(u, &agent_turn, &k.p2, Some(&first(&t2))).await;
    assert_eq!(r3["respondsTo"], json!(first(&t2)), "or the one asked for");
    let before = snapshot(&c, &u.id).await;
    u.post(
        &format!("/v1/turns/{t1_id}/alternatives"),
        json!({"content": "root edit", "parentAlternativeId": u1}),
    )
    .await
    .rejects(422, "TURN-3");
    assert_eq!(snapshot(&c, &u.id).await, before);

    #[derive(serde::Deserialize)]
    struct TurnRow {
        turn: String,
        parent: Option<String>,
        parents: Vec<String>,
        convs: Vec<String>,
        vias: Vec<String>,
    }
    let turns: Vec<TurnRow> = graph_rows(
        aiden_graph_query(
            "MATCH (t:ConversationTurn {conversationId: $c})
             OPTIONAL MATCH (t)-[e:CHILD_OF]->(p:ConversationTurn)
             RETURN t.id AS turn, t.parentTurnId AS parent, collect(p.id) AS parents,
                    collect(p.conversationId) AS convs, collect(e.viaAlternative) AS vias",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(turns.len(), 4);
    let full = tree(u, &c).await;
    for t in &turns {
        match &t.parent {
            None => assert!(t.parents.is_empty(), "a root has no CHILD_OF"),
            Some(p) => {
                assert_eq!(
                    t.parents,
                    [p.as_str()],
                    "one CHILD_OF to the parent: {}",
                    t.turn
                );
                assert_eq!(t.convs, [c.as_str()]);
                assert_eq!(
                    json!(t.vias),
                    json!([tree_turn(&full, &t.turn)["viaAlternative"]]),
                    "CHILD_OF.viaAlternative is the parent Alternative responded to: {}",
                    t.turn
                );
            }
        }
    }
    let parent_of: HashMap<String, Option<String>> =
        turns.into_iter().map(|t| (t.turn, t.parent)).collect();
    #[derive(serde::Deserialize)]
    struct AltRow {
        turn: String,
        alt: String,
        targets: Vec<String>,
        target_turns: Vec<String>,
    }
    let alts: Vec<AltRow> = graph_rows(
        aiden_graph_query(
            "MATCH (t:ConversationTurn {conversationId: $c})-[:HAS_ALTERNATIVE]->(a:Alternative)
             OPTIONAL MATCH (a)-[:RESPONDS_TO]->(pa:Alternative)<-[:HAS_ALTERNATIVE]-(pt:ConversationTurn)
             RETURN t.id AS turn, a.id AS alt, collect(pa.id) AS targets,
                    collect(pt.id) AS target_turns",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(alts.len(), 8);
    for a in alts {
        match &parent_of[&a.turn] {
            None => assert!(
                a.targets.is_empty(),
                "a root Alternative responds to nothing"
            ),
            Some(p) => {
                assert_eq!(
                    a.target_turns,
                    [p.as_str()],
                    "RESPONDS_TO into the parent Turn"
                );
                assert_eq!(
                    json!(a.targets),
                    json!([tree_alt(&full, &a.alt)["respondsTo"]]),
                    "the API's respondsTo is the edge"
                );
            }
        }
    }
}

/// TURN-3 bad input: a parent Alternative outside the parent Turn, a parent Turn of another
/// conversation or unknown, a missing parent, a root Alternative with a parent, a Process the
/// agent context cannot feed (PROC-6), an invisible Process (404), and bodies of the wrong kind
/// (400) are all refused, and neither conversation gains a Turn, an Alternative or a Run.
#[tokio::test]
async fn turn_3_responding_to_an_alternative_not_in_the_parent_turn_is_refused_without_writes() {
    let k = kit(user().await).await;
    let stranger = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let other = conversation(u).await;
    let t1 = say(u, &c, "one", None).await;
    let t2 = say(u, &c, "two", Some(&id(&t1))).await;
    let r = answer(u, &c, &k.p1, &id(&t2), None).await;
    let agent_turn = text(&r["turnId"]);
    let x = say(u, &other, "elsewhere", None).await;
    let before = snapshot(&c, &u.id).await;
    let before_other = snapshot(&other, &u.id).await;
    let (turns_s, agents_s, t2_alts_s, agent_alts_s) = (
        format!("/v1/conversations/{c}/turns"),
        format!("/v1/conversations/{c}/agent-turns"),
        format!("/v1/turns/{}/alternatives", id(&t2)),
        format!("/v1/turns/{agent_turn}/alternatives"),
    );
    let (turns, agents, t2_alts, agent_alts) = (
        turns_s.as_str(),
        agents_s.as_str(),
        t2_alts_s.as_str(),
        agent_alts_s.as_str(),
    );
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        (
            turns,
            json!({"speaker": "user", "content": "c", "parentTurnId": id(&t2), "parentAlternativeId": first(&t1)}),
            422,
            "TURN-3",
        ),
        (
            turns,
            json!({"speaker": "user", "content": "c", "parentTurnId": id(&t2), "parentAlternativeId": first(&x)}),
            422,
            "TURN-3",
        ),
        (
            turns,
            json!({"speaker": "user", "content": "c", "parentTurnId": id(&x)}),
            422,
            "TURN-3",
        ),
        (
            turns,
            json!({"speaker": "user", "content": "c", "parentTurnId": "no-such-turn"}),
            422,
            "TURN-3",
        ),
        (
            turns,
            json!({"speaker": "user", "content": "c"}),
            422,
            "TURN-3",
        ),
        (
            agents,
            json!({"processId": k.p1, "parentTurnId": id(&t2), "parentAlternativeId": first(&t1)}),
            422,
            "TURN-3",
        ),
        (
            agents,
            json!({"processId": k.p1, "parentTurnId": id(&x)}),
            422,
            "TURN-3",
        ),
        (
            t2_alts,
            json!({"content": "two'", "parentAlternativeId": first(&t2)}),
            422,
            "TURN-3",
        ),
        (
            t2_alts,
            json!({"content": "two'", "parentAlternativeId": first(&x)}),
            422,
            "TURN-3",
        ),
        (
            agent_alts,
            json!({"processId": k.p1, "parentAlternativeId": first(&t1)}),
            422,
            "TURN-3",
        ),
        (
            agents,
            json!({"processId": k.narrow, "parentTurnId": id(&t2)}),
            422,
            "PROC-6",
        ),
        (agent_alts, json!({"processId": k.narrow}), 422, "PROC-6"),
    ];
    for (route, body, status, invariant) in cases {
        let reply = u.post(route, body.clone()).await;
        assert_eq!(
            reply.status.as_u16(),
            status,
            "{route} {body}: {:?}",
            reply.body
        );
        reply.rejects(status, invariant);
    }
    for (route, body, status) in [
        (
            agents,
            json!({"processId": stranger.p1, "parentTurnId": id(&t2)}),
            404,
        ),
        (
            agents,
            json!({"processId": "no-such-process", "parentTurnId": id(&t2)}),
            404,
        ),
        (agent_alts, json!({"processId": stranger.p1}), 404),
        // TURN-5: which one a Turn takes depends on its speaker (422); both or neither is a
        // malformed body (400).
        (t2_alts, json!({"processId": k.p1}), 422),
        (agent_alts, json!({"content": "typed by hand"}), 422),
        (agent_alts, json!({"content": "x", "processId": k.p1}), 400),
        (agent_alts, json!({}), 400),
        (
            turns,
            json!({"speaker": "agent", "content": "impersonation", "parentTurnId": id(&t2)}),
            400,
        ),
        (
            turns,
            json!({"speaker": "user", "content": "  ", "parentTurnId": id(&t2)}),
            400,
        ),
    ] {
        let reply = u.post(route, body.clone()).await;
        assert_eq!(
            reply.status.as_u16(),
            status,
            "{route} {body}: {:?}",
            reply.body
        );
    }
    assert_eq!(snapshot(&c, &u.id).await, before, "a refused request wrote");
    assert_eq!(snapshot(&other, &u.id).await, before_other);
}

/// TURN-3: there is nothing to respond to in an Alternative still generating or one whose run
/// failed: 409, nothing written; a valid Alternative of the same Turn can still be answered.
#[tokio::test]
async fn turn_3_responding_to_a_generating_or_failed_alternative_conflicts() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "q", None).await;
    let g = start(u, &c, &k.held, &id(&t1), None).await;
    let (turn, alt) = (text(&g["turnId"]), text(&g["alternativeId"]));
    let before = snapshot(&c, &u.id).await;
    for r in [
        u.post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "too early", "parentTurnId": turn}),
        )
        .await,
        u.post(
            &format!("/v1/conversations/{c}/agent-turns"),
            json!({"processId": k.p1, "parentTurnId": turn}),
        )
        .await,
    ] {
        assert_eq!(r.status.as_u16(), 409, "{:?}", r.body);
        assert_eq!(r.code(), "CONFLICT");
    }
    assert_eq!(snapshot(&c, &u.id).await, before);
    k.release(1);
    let ok = settled(u, &turn, &alt).await;
    assert_eq!(ok["cacheStatus"], "valid");
    let bad = regen(u, &turn, &k.broken, None).await;
    assert_eq!(bad["cacheStatus"], "failed");
    assert_eq!(actives(&get_turn(u, &turn).await), [id(&bad)]);
    let before = snapshot(&c, &u.id).await;
    let r = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "to the failure", "parentTurnId": turn}),
        )
        .await;
    assert_eq!(r.status.as_u16(), 409, "{:?}", r.body);
    assert_eq!(snapshot(&c, &u.id).await, before);
    let next = say_via(u, &c, "to the good one", &turn, &alt).await;
    assert_eq!(next["alternatives"][0]["respondsTo"], json!(alt));
}

/// TURN-4: no route edits or deletes a Turn or an Alternative (every attempt answers a non-2xx,
/// non-5xx status and the graph is unchanged); an "edit" is a new Alternative, and the original
/// keeps its content and sequence — only `isActive` moves.
#[tokio::test]
async fn turn_4_no_route_edits_or_deletes_turns_or_alternatives() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "original", None).await;
    let (t1_id, u1) = (id(&t1), first(&t1));
    let r = answer(u, &c, &k.p1, &t1_id, None).await;
    let (agent_turn, r_id) = (text(&r["turnId"]), id(&r));
    let before = snapshot(&c, &u.id).await;
    let change = json!({"content": "changed", "alternativeId": u1, "speaker": "agent"});
    let attempts = [
        (Method::PATCH, format!("/v1/turns/{t1_id}")),
        (Method::PUT, format!("/v1/turns/{t1_id}")),
        (Method::DELETE, format!("/v1/turns/{t1_id}")),
        (Method::PATCH, format!("/v1/turns/{agent_turn}")),
        (Method::DELETE, format!("/v1/turns/{agent_turn}")),
        (Method::PATCH, format!("/v1/turns/{t1_id}/alternatives")),
        (Method::PUT, format!("/v1/turns/{t1_id}/alternatives")),
        (Method::DELETE, format!("/v1/turns/{t1_id}/alternatives")),
        (
            Method::PATCH,
            format!("/v1/turns/{t1_id}/alternatives/{u1}"),
        ),
        (Method::PUT, format!("/v1/turns/{t1_id}/alternatives/{u1}")),
        (
            Method::DELETE,
            format!("/v1/turns/{t1_id}/alternatives/{u1}"),
        ),
        (
            Method::DELETE,
            format!("/v1/turns/{agent_turn}/alternatives/{r_id}"),
        ),
        (Method::PATCH, format!("/v1/turns/{t1_id}/active")),
        (Method::DELETE, format!("/v1/turns/{t1_id}/active")),
        (Method::PATCH, format!("/v1/alternatives/{u1}")),
        (Method::PUT, format!("/v1/alternatives/{u1}")),
        (Method::DELETE, format!("/v1/alternatives/{u1}")),
        (Method::DELETE, format!("/v1/conversations/{c}/turns")),
        (Method::DELETE, format!("/v1/conversations/{c}/tree")),
    ];
    for (m, p) in attempts {
        let reply = u.send(m.clone(), &p, Some(&change), &[]).await;
        let s = reply.status.as_u16();
        assert!(
            !(200..300).contains(&s) && s < 500,
            "{m} {p} answered {s}: {:?}",
            reply.body
        );
        if p == format!("/v1/turns/{t1_id}") {
            assert_eq!(s, 405, "{m} {p}: {:?}", reply.body);
        }
    }
    assert_eq!(
        snapshot(&c, &u.id).await,
        before,
        "a refused mutation wrote"
    );

    let edited = edit(u, &t1_id, "revised", None).await;
    let now = get_turn(u, &t1_id).await;
    let orig = alt_of(&now, &u1);
    assert_eq!(orig["content"], "original");
    assert_eq!(orig["sequence"], 1);
    assert_eq!(orig["isActive"], false);
    // The original stays readable at its own address, as its owner's only.
    let at = format!("/v1/alternatives/{u1}");
    assert_eq!(u.get(&at).await.ok(200), &orig);
    let stranger = user().await;
    assert_eq!(stranger.get(&at).await.status.as_u16(), 404);
    let unknown = u.get("/v1/alternatives/no-such-alternative").await;
    assert_eq!(unknown.status.as_u16(), 404, "{:?}", unknown.body);
    assert_eq!(orig["createdAt"], t1["alternatives"][0]["createdAt"]);
    assert_eq!(edited["sequence"], 2);
    switch(u, &t1_id, &u1).await;
    let back = alt_of(&get_turn(u, &t1_id).await, &u1);
    assert_eq!(back["content"], "original");
    assert_eq!(back["isActive"], true);
    #[derive(serde::Deserialize)]
    struct Row {
        content: Option<String>,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query("MATCH (a:Alternative {id: $a}) RETURN a.content AS content")
            .param("a", r_id.as_str()),
    )
    .await;
    assert_eq!(rows[0].content.as_deref(), r["content"].as_str());
}

/// The windowed tree: `?fromSequence=&toSequence=` answers exactly the whole tree's
/// Turns of those depths — `cacheStatus` and `hasChildren` derived across the window's edges
/// the same way — and refuses an empty or inverted window.
#[tokio::test]
async fn tree_window_is_the_whole_trees_slice_with_the_same_derivations() {
    let u = user().await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "one", None).await;
    let t2 = say(&u, &c, "two", Some(&id(&t1))).await;
    let t3 = say(&u, &c, "three", Some(&id(&t2))).await;
    let t4 = say(&u, &c, "four", Some(&id(&t3))).await;
    say(&u, &c, "five", Some(&id(&t4))).await;
    // A new version of turn 2: turn 3 answered the old one and is stale from now on.
    let edited = edit(&u, &id(&t2), "two, edited", None).await;
    switch(&u, &id(&t2), &id(&edited)).await;

    let whole = tree(&u, &c).await;
    let slice: Vec<Value> = turns_of(&whole)
        .into_iter()
        .filter(|t| (3..=4).contains(&t["sequence"].as_i64().unwrap()))
        .collect();
    assert_eq!(slice.len(), 2);
    assert_eq!(
        slice[0]["alternatives"][0]["cacheStatus"], "stale",
        "{whole}"
    );
    assert_eq!(slice[1]["alternatives"][0]["hasChildren"], true, "{whole}");

    let window = u
        .get(&format!(
            "/v1/conversations/{c}/tree?fromSequence=3&toSequence=4"
        ))
        .await
        .ok(200)
        .clone();
    assert_eq!(window["turns"], json!(slice), "{window}");
    assert_eq!(
        window["window"],
        json!({"fromSequence": 3, "toSequence": 4})
    );
    assert_eq!(window["conversation"], whole["conversation"]);

    let from_only = u
        .get(&format!("/v1/conversations/{c}/tree?fromSequence=4"))
        .await
        .ok(200)
        .clone();
    let seqs: Vec<i64> = turns_of(&from_only)
        .iter()
        .map(|t| t["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [4, 5]);

    // An empty window (from after to) is no Turns, not an error.
    let empty = u
        .get(&format!(
            "/v1/conversations/{c}/tree?fromSequence=4&toSequence=3"
        ))
        .await
        .ok(200)
        .clone();
    assert!(turns_of(&empty).is_empty(), "{empty}");
    for bad in ["fromSequence=0", "toSequence=0", "depth=2"] {
        let r = u.get(&format!("/v1/conversations/{c}/tree?{bad}")).await;
        assert_eq!(r.status.as_u16(), 400, "{bad}: {:?}", r.body);
        assert_eq!(r.code(), "VALIDATION_ERROR", "{bad}");
    }
}
