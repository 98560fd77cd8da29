//! Alternatives of one Turn: exactly one is active, under any concurrency (TURN-2); a new one
//! becomes the active one (TURN-8); `stale` and `hasChildren` are derived (TURN-6); none has an
//! Episode at creation (TURN-7).

use std::collections::HashSet;

use aiden_tests::{aiden_graph_query, graph_rows, user};
use futures::future::join_all;
use serde_json::{json, Value};

use super::*;

async fn active_edges(turn: &str) -> i64 {
    #[derive(serde::Deserialize)]
    struct N {
        n: i64,
    }
    graph_rows::<N>(
        aiden_graph_query(
            "MATCH (:ConversationTurn {id: $t})-[h:HAS_ALTERNATIVE]->(:Alternative)
             WHERE h.isActive = true RETURN count(h) AS n",
        )
        .param("t", turn),
    )
    .await[0]
        .n
}

/// TURN-2 on a Turn as it stands: its Alternatives are numbered 1..n without gaps and exactly
/// one is active, in the API and in the graph. Returns the Turn and its active Alternative.
async fn one_active(u: &Client, turn: &str) -> (Value, String) {
    let now = get_turn(u, turn).await;
    let seqs: Vec<i64> = now["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "{now}");
    let active = actives(&now);
    assert_eq!(active.len(), 1, "{now}");
    assert_eq!(active_edges(turn).await, 1, "graph: one isActive edge");
    let active = active[0].clone();
    (now, active)
}

/// TURN-2: 50 concurrent switches on one Turn leave exactly one active Alternative (API and
/// graph), the Conversation's current position agrees with it, and no switch created or
/// removed an Alternative. Every switch succeeds: within one API server, writes to one Turn
/// queue on an in-process stripe (docs/conversations.md, Concurrency); only across servers may
/// a switch that lost the race answer 409 CONFLICT (a concurrent modification was
/// lost), never 5xx.
#[tokio::test]
async fn turn_2_exactly_one_active_alternative_under_50_concurrent_switches() {
    let u = user().await;
    let c = conversation(&u).await;
    let t = say(&u, &c, "v1", None).await;
    let turn = id(&t);
    let mut alts = vec![first(&t)];
    for i in 2..=5 {
        alts.push(id(&edit(&u, &turn, &format!("v{i}"), None).await));
    }
    let switches = (0..50).map(|i| {
        let (u, turn, alt) = (u.clone(), turn.clone(), alts[i % alts.len()].clone());
        async move {
            u.put(
                &format!("/v1/turns/{turn}/active"),
                json!({"alternativeId": alt}),
            )
            .await
        }
    });
    for r in join_all(switches).await {
        assert_eq!(r.status.as_u16(), 200, "{:?}", r.body);
        assert_eq!(
            actives(&r.body).len(),
            1,
            "a reply shows one active: {:?}",
            r.body
        );
    }
    let (now, active) = one_active(&u, &turn).await;
    assert!(alts.contains(&active), "{now}");
    let alts_now: Vec<String> = now["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .map(id)
        .collect();
    assert_eq!(
        alts_now, alts,
        "switching never adds or removes Alternatives"
    );
    let conv = get_conversation(&u, &c).await;
    assert_eq!(conv["currentTurnId"], json!(turn));
    assert_eq!(
        conv["currentAlternativeId"],
        json!(active),
        "the last switch to commit set both the active Alternative and the position"
    );
}

/// TURN-2 / TURN-8: 20 concurrent edits of one user Turn never duplicate a sequence: every edit
/// is accepted (one API server, as above), the Alternatives are numbered 1..n without gaps,
/// exactly one is active and it is the newest (highest sequence).
#[tokio::test]
async fn turn_2_concurrent_new_alternatives_never_duplicate_a_sequence() {
    let u = user().await;
    let c = conversation(&u).await;
    let t = say(&u, &c, "v0", None).await;
    let turn = id(&t);
    let adds = (0..20).map(|i| {
        let (u, turn) = (u.clone(), turn.clone());
        async move {
            let content = format!("edit {i}");
            let r = u
                .post(
                    &format!("/v1/turns/{turn}/alternatives"),
                    json!({"content": content}),
                )
                .await;
            (content, r)
        }
    });
    let mut made = HashSet::new();
    for (content, r) in join_all(adds).await {
        assert_eq!(r.status.as_u16(), 201, "{:?}", r.body);
        made.insert(content);
    }
    let (now, active) = one_active(&u, &turn).await;
    let alts = now["alternatives"].as_array().unwrap();
    assert_eq!(alts.len(), 1 + made.len(), "{now}");
    let seqs: Vec<i64> = alts
        .iter()
        .map(|a| a["sequence"].as_i64().unwrap())
        .collect();
    let stored: HashSet<String> = alts[1..].iter().map(|a| text(&a["content"])).collect();
    assert_eq!(stored, made, "exactly the accepted edits are stored");
    assert_eq!(
        json!(active),
        alts.last().unwrap()["id"],
        "TURN-8: the newest Alternative is the active one"
    );
    #[derive(serde::Deserialize)]
    struct Row {
        key: Option<String>,
        seq: i64,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (:ConversationTurn {id: $t})-[h:HAS_ALTERNATIVE]->(a:Alternative)
             RETURN a.seqKey AS key, h.sequence AS seq",
        )
        .param("t", turn.as_str()),
    )
    .await;
    let mut edge_seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
    edge_seqs.sort();
    assert_eq!(edge_seqs, seqs, "HAS_ALTERNATIVE.sequence in the graph");
    let keys: HashSet<Option<String>> = rows.into_iter().map(|r| r.key).collect();
    assert_eq!(keys.len(), alts.len());
}

/// TURN-2 with agent regenerations: 8 concurrent new Alternatives of one agent Turn get
/// distinct sequences, one is active (the newest), every one settles with its own content, and
/// no Run exists without its Alternative (a refused addition started no run).
#[tokio::test]
async fn turn_2_concurrent_regenerations_never_duplicate_a_sequence_or_orphan_a_run() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "regenerate me", None).await;
    let r1 = answer(u, &c, &k.p1, &id(&t1), None).await;
    let turn = text(&r1["turnId"]);
    let adds = (0..8).map(|i| {
        let (u, turn) = (u.clone(), turn.clone());
        let p = if i % 2 == 0 {
            k.p1.clone()
        } else {
            k.p2.clone()
        };
        async move {
            u.post(
                &format!("/v1/turns/{turn}/alternatives"),
                json!({"processId": p}),
            )
            .await
        }
    });
    let replies = join_all(adds).await;
    let mut started = Vec::new();
    for r in &replies {
        match r.status.as_u16() {
            202 => started.push(r.body.clone()),
            409 => assert_eq!(r.code(), "CONFLICT"),
            s => panic!("unexpected {s}: {:?}", r.body),
        }
    }
    assert!(!started.is_empty());
    for g in &started {
        let a = settled(u, &turn, &text(&g["id"])).await;
        assert_eq!(a["runId"], g["runId"]);
        let tag = if a["executedBy"]["processId"] == json!(k.p1) {
            "P1"
        } else {
            "P2"
        };
        assert_eq!(
            a["content"],
            json!(format!("answer to regenerate me [{tag}]"))
        );
    }
    let (now, active) = one_active(u, &turn).await;
    let alts = now["alternatives"].as_array().unwrap();
    assert_eq!(alts.len(), 1 + started.len());
    assert_eq!(json!(active), alts.last().unwrap()["id"]);
    #[derive(serde::Deserialize)]
    struct Row {
        run: String,
        alt: Option<String>,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (r:Run {ownerId: $o}) WHERE r.alternativeId IS NOT NULL
             OPTIONAL MATCH (a:Alternative {id: r.alternativeId})
             RETURN r.id AS run, a.id AS alt",
        )
        .param("o", u.id.as_str()),
    )
    .await;
    assert_eq!(rows.len(), alts.len(), "one Run per agent Alternative");
    for r in rows {
        assert!(r.alt.is_some(), "run {} has no Alternative", r.run);
    }
}

/// TURN-2 with switches and additions racing on one Turn: one active Alternative, contiguous
/// sequences, and the Conversation's position is that active Alternative.
#[tokio::test]
async fn turn_2_mixed_concurrent_switches_and_additions_keep_one_active() {
    let u = user().await;
    let c = conversation(&u).await;
    let t = say(&u, &c, "a", None).await;
    let turn = id(&t);
    let mut alts = vec![first(&t)];
    for v in ["b", "c"] {
        alts.push(id(&edit(&u, &turn, v, None).await));
    }
    let switches = (0..30).map(|i| {
        let (u, turn, alt) = (u.clone(), turn.clone(), alts[i % 3].clone());
        async move {
            u.put(
                &format!("/v1/turns/{turn}/active"),
                json!({"alternativeId": alt}),
            )
            .await
            .status
            .as_u16()
        }
    });
    let additions = (0..10).map(|i| {
        let (u, turn) = (u.clone(), turn.clone());
        async move {
            u.post(
                &format!("/v1/turns/{turn}/alternatives"),
                json!({"content": format!("new {i}")}),
            )
            .await
            .status
            .as_u16()
        }
    });
    let (s, a) = futures::join!(join_all(switches), join_all(additions));
    assert!(s.iter().all(|x| matches!(x, 200 | 409)), "{s:?}");
    assert!(a.iter().all(|x| matches!(x, 201 | 409)), "{a:?}");
    let added = a.iter().filter(|x| **x == 201).count();
    let (now, active) = one_active(&u, &turn).await;
    assert_eq!(now["alternatives"].as_array().unwrap().len(), 3 + added);
    let conv = get_conversation(&u, &c).await;
    assert_eq!(conv["currentAlternativeId"], json!(active));
}

/// TURN-2: only an Alternative of the Turn itself can become active; an Alternative of the
/// parent, a child, a sibling Turn or another conversation (or an unknown id) is refused with
/// 422 TURN-2 and nothing changes in either conversation.
#[tokio::test]
async fn turn_2_switching_to_an_alternative_of_another_turn_is_refused_without_writes() {
    let u = user().await;
    let c = conversation(&u).await;
    let other = conversation(&u).await;
    let t1 = say(&u, &c, "one", None).await;
    let t2 = say(&u, &c, "two", Some(&id(&t1))).await;
    let sib = say(&u, &c, "two'", Some(&id(&t1))).await;
    let t3 = say(&u, &c, "three", Some(&id(&t2))).await;
    let x = say(&u, &other, "elsewhere", None).await;
    let before = snapshot(&c, &u.id).await;
    let before_other = snapshot(&other, &u.id).await;
    let put = |turn: String, alt: String| {
        let u = u.clone();
        async move {
            u.put(
                &format!("/v1/turns/{turn}/active"),
                json!({"alternativeId": alt}),
            )
            .await
        }
    };
    for (turn, alt) in [
        (id(&t2), first(&t1)),
        (id(&t2), first(&t3)),
        (id(&t2), first(&sib)),
        (id(&t2), first(&x)),
        (id(&t2), "no-such-alternative".to_owned()),
        (id(&x), first(&t1)),
    ] {
        put(turn, alt).await.rejects(422, "TURN-2");
    }
    u.put(&format!("/v1/turns/{}/active", id(&t2)), json!({}))
        .await
        .ok(400);
    assert_eq!(snapshot(&c, &u.id).await, before);
    assert_eq!(snapshot(&other, &u.id).await, before_other);
    // Switching to the already active Alternative is fine and keeps one active.
    let same = switch(&u, &id(&t2), &first(&t2)).await;
    assert_eq!(actives(&same), [first(&t2)]);
}

/// TURN-6: `stale` is derived from the parent Turn's active Alternative only (a grandchild of an
/// edited Turn stays valid while its own parent is active); switching back makes it valid;
/// `hasChildren` is true exactly for Alternatives something responds to; GET turn and the tree
/// derive the same.
#[tokio::test]
async fn turn_6_stale_and_has_children_are_derived_from_the_current_selection() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "a", None).await;
    let (t1_id, a1) = (id(&t1), first(&t1));
    let r = answer(u, &c, &k.p1, &t1_id, None).await;
    let (t2_id, b1) = (text(&r["turnId"]), id(&r));
    let t3 = say(u, &c, "c", Some(&t2_id)).await;
    let (t3_id, c1) = (id(&t3), first(&t3));
    fn status(t: &Value, a: &str) -> Value {
        tree_alt(t, a)["cacheStatus"].clone()
    }
    let full = tree(u, &c).await;
    for a in [&a1, &b1, &c1] {
        assert_eq!(status(&full, a), "valid");
    }
    // Edit the first question: the answer to it is stale, the reply to that answer is not.
    let a2 = id(&edit(u, &t1_id, "a, edited", None).await);
    let full = tree(u, &c).await;
    assert_eq!(status(&full, &a1), "valid", "a root is never stale");
    assert_eq!(status(&full, &a2), "valid");
    assert_eq!(status(&full, &b1), "stale");
    assert_eq!(
        status(&full, &c1),
        "valid",
        "its own parent is still the active one"
    );
    assert_eq!(tree_alt(&full, &a1)["hasChildren"], true);
    assert_eq!(tree_alt(&full, &a2)["hasChildren"], false);
    assert_eq!(tree_alt(&full, &b1)["hasChildren"], true);
    assert_eq!(tree_alt(&full, &c1)["hasChildren"], false);
    // Regenerate under the edit: now the reply hangs off an inactive answer.
    let b2 = id(&regen(u, &t2_id, &k.p2, None).await);
    let full = tree(u, &c).await;
    assert_eq!(status(&full, &b2), "valid");
    assert_eq!(status(&full, &c1), "stale");
    assert_eq!(tree_alt(&full, &a2)["hasChildren"], true);
    // A failed child still counts as a child.
    let failed = regen(u, &t2_id, &k.broken, Some(&a1)).await;
    assert_eq!(failed["respondsTo"], json!(a1));
    assert_eq!(
        failed["cacheStatus"], "stale",
        "it responds to an inactive Alternative"
    );
    // Switch back: everything on the original line is valid again.
    switch(u, &t1_id, &a1).await;
    switch(u, &t2_id, &b1).await;
    let full = tree(u, &c).await;
    for a in [&a1, &b1, &c1] {
        assert_eq!(status(&full, a), "valid", "{a}");
    }
    assert_eq!(status(&full, &b2), "stale");
    assert_eq!(status(&full, &id(&failed)), "failed");
    // The tree and GET /v1/turns/{id} agree on every derived field.
    for t in turns_of(&full) {
        assert_eq!(
            get_turn(u, &id(&t)).await,
            t,
            "GET turn differs from the tree"
        );
    }
    let _ = t3_id;
}

/// TURN-7: no Alternative — user, agent, or a fork's copy — has an Episode at creation:
/// `episodeId` null everywhere (tree and working memory) and no HAS_CONTENT edge.
#[tokio::test]
async fn turn_7_episode_binding_is_absent_at_creation() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "x", None).await;
    assert_eq!(t1["alternatives"][0]["episodeId"], Value::Null);
    let r = answer(u, &c, &k.p1, &id(&t1), None).await;
    assert_eq!(r["episodeId"], Value::Null);
    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": r["turnId"], "alternativeId": r["id"]}),
        )
        .await
        .ok(201)
        .clone();
    let f = id(&fork);
    for conv in [&c, &f] {
        for a in all_alts(&tree(u, conv).await) {
            assert_eq!(a["episodeId"], Value::Null, "{a}");
        }
        for p in path(&wm(u, conv, "").await) {
            assert_eq!(p["episodeId"], Value::Null);
        }
    }
    #[derive(serde::Deserialize)]
    struct N {
        alts: i64,
        edges: i64,
    }
    let n: Vec<N> = graph_rows(
        aiden_graph_query(
            "MATCH (a:Alternative) WHERE a.conversationId IN [$c, $f]
             OPTIONAL MATCH (a)-[h:HAS_CONTENT]->()
             RETURN count(DISTINCT a) AS alts, count(h) AS edges",
        )
        .param("c", c.as_str())
        .param("f", f.as_str()),
    )
    .await;
    assert_eq!(n[0].alts, 4);
    assert_eq!(n[0].edges, 0);
}

/// TURN-8: every new Alternative is its Turn's active one at once — an edit, a regeneration
/// (already while generating), a continuation from another parent Alternative — and the
/// Conversation's current position follows it.
#[tokio::test]
async fn turn_8_a_new_alternative_becomes_the_active_one() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "x", None).await;
    let t1_id = id(&t1);
    assert_eq!(t1["alternatives"][0]["isActive"], true);
    let e = edit(u, &t1_id, "y", None).await;
    assert_eq!(e["isActive"], true);
    assert_eq!(e["sequence"], 2);
    let now = get_turn(u, &t1_id).await;
    assert_eq!(actives(&now), [id(&e)]);
    let conv = get_conversation(u, &c).await;
    assert_eq!(conv["currentTurnId"], json!(t1_id));
    assert_eq!(conv["currentAlternativeId"], e["id"]);

    let r = answer(u, &c, &k.p1, &t1_id, None).await;
    let turn = text(&r["turnId"]);
    assert_eq!(r["isActive"], true);
    let g = regen_start(u, &turn, &k.held, Some(&first(&t1))).await;
    let alt = text(&g["id"]);
    let during = get_turn(u, &turn).await;
    assert_eq!(
        actives(&during),
        [alt.as_str()],
        "active while still generating"
    );
    assert_eq!(alt_of(&during, &alt)["cacheStatus"], "generating");
    let conv = get_conversation(u, &c).await;
    assert_eq!(conv["currentAlternativeId"], json!(alt));
    k.release(1);
    let done = settled(u, &turn, &alt).await;
    assert_eq!(done["isActive"], true);
    assert_eq!(done["respondsTo"], json!(first(&t1)));
    assert_eq!(
        done["content"], "answer to x [HOLD]",
        "it answered the Alternative it was given"
    );
    assert_eq!(
        done["cacheStatus"], "stale",
        "it responds to an Alternative that is not the parent's active one"
    );
    let seqs: Vec<i64> = get_turn(u, &turn).await["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2]);
}
