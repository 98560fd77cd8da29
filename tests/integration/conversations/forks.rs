//! Forks (CONV-3): a fork owns a copy of a settled path and evolves independently.

use std::collections::HashSet;

use aiden_tests::{aiden_graph_query, graph_rows, user};
use serde_json::{json, Value};

use super::*;

/// CONV-3: a fork at an older (stale) Alternative gets its own copy of that Alternative's path
/// (new ids, same speakers, contents and executedBy, one active valid Alternative per Turn),
/// records FORKED_FROM, and from then on neither side sees the other's changes.
#[tokio::test]
async fn conv_3_a_fork_copies_the_path_and_evolves_independently() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "q1", None).await;
    let (t1_id, u1) = (id(&t1), first(&t1));
    let r1 = answer(u, &c, &k.p1, &t1_id, None).await;
    let t2_id = text(&r1["turnId"]);
    let t3 = say(u, &c, "q2", Some(&t2_id)).await;
    let (t3_id, u3) = (id(&t3), first(&t3));
    // The user edits q1 and regenerates: u3 now hangs off an older answer (stale).
    let u1b = edit(u, &t1_id, "q1 edited", None).await;
    let r2 = regen(u, &t2_id, &k.p2, None).await;
    assert_eq!(r2["respondsTo"], u1b["id"]);
    assert_eq!(alternative(u, &t3_id, &u3).await["cacheStatus"], "stale");
    let origin_ids: HashSet<String> = all_alts(&tree(u, &c).await)
        .iter()
        .map(id)
        .chain(turns_of(&tree(u, &c).await).iter().map(id))
        .collect();

    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": t3_id, "alternativeId": u3, "title": "branch"}),
        )
        .await
        .ok(201)
        .clone();
    let f = id(&fork);
    assert_ne!(f, c);
    assert_eq!(
        fork["forkedFrom"],
        json!({"conversationId": c, "originTurnId": t3_id, "originAlternativeId": u3})
    );
    assert_eq!(fork["title"], "branch");
    assert_eq!(fork["ownerId"], json!(u.id));
    assert_eq!(fork["status"], "active");
    assert_eq!(fork["turnCount"], 3);
    #[derive(serde::Deserialize)]
    struct Forked {
        origin: String,
        turn: Option<String>,
        alt: Option<String>,
    }
    let edges: Vec<Forked> = graph_rows(
        aiden_graph_query(
            "MATCH (:Conversation {id: $f})-[e:FORKED_FROM]->(o:Conversation)
             RETURN o.id AS origin, e.originTurn AS turn, e.originAlternative AS alt",
        )
        .param("f", f.as_str()),
    )
    .await;
    assert_eq!(edges.len(), 1, "one FORKED_FROM edge");
    assert_eq!(edges[0].origin, c);
    assert_eq!(edges[0].turn.as_deref(), Some(t3_id.as_str()));
    assert_eq!(edges[0].alt.as_deref(), Some(u3.as_str()));

    // The copy: u1 → r1 → u3 (the stale path, not the active one), all its own.
    let ft = tree(u, &f).await;
    let turns = turns_of(&ft);
    assert_eq!(turns.len(), 3, "{ft}");
    let expect = [
        ("user", "q1".to_owned(), Value::Null),
        ("agent", text(&r1["content"]), r1["executedBy"].clone()),
        ("user", "q2".to_owned(), Value::Null),
    ];
    let mut prev: Option<(String, String)> = None;
    for (i, (t, (speaker, content, executed))) in turns.iter().zip(expect.iter()).enumerate() {
        assert_eq!(t["conversationId"], json!(f));
        assert_eq!(t["sequence"], i as i64 + 1, "TURN-1 in the fork");
        assert_eq!(t["speaker"], *speaker);
        assert!(!origin_ids.contains(&id(t)), "a copied Turn has a new id");
        let alts = t["alternatives"].as_array().unwrap();
        assert_eq!(alts.len(), 1, "one Alternative per copied Turn: {t}");
        let a = &alts[0];
        assert!(
            !origin_ids.contains(&id(a)),
            "a copied Alternative has a new id"
        );
        assert_eq!(a["content"], json!(content));
        assert_eq!(a["executedBy"], *executed);
        assert_eq!(a["isActive"], true);
        assert_eq!(
            a["cacheStatus"], "valid",
            "the copy is on its own active path"
        );
        assert_eq!(a["hasChildren"], i < 2);
        match &prev {
            None => {
                assert_eq!(t["parentTurnId"], Value::Null);
                assert_eq!(a["respondsTo"], Value::Null);
            }
            Some((pt, pa)) => {
                assert_eq!(t["parentTurnId"], json!(pt));
                assert_eq!(a["respondsTo"], json!(pa));
            }
        }
        prev = Some((id(t), id(a)));
    }
    let (leaf_turn, leaf_alt) = prev.unwrap();
    assert_eq!(fork["currentAlternativeId"], json!(leaf_alt));
    let fwm = wm(u, &f, "").await;
    assert_eq!(
        contents(&fwm),
        vec!["q1".to_owned(), text(&r1["content"]), "q2".to_owned()]
    );
    let fork_turns: HashSet<String> = turns.iter().map(id).collect();
    for p in path(&fwm) {
        assert!(fork_turns.contains(&text(&p["turnId"])), "WM-3: {p}");
    }

    // Changes in the fork stay in the fork.
    let origin_before = tree(u, &c).await;
    let fu = say(u, &f, "fork only", Some(&leaf_turn)).await;
    let fr = answer(u, &f, &k.p2, &id(&fu), None).await;
    assert_eq!(fr["content"], "answer to fork only [P2]");
    edit(u, &id(&turns[0]), "q1 edited in the fork", None).await;
    assert_eq!(tree(u, &c).await, origin_before, "the origin changed");
    assert_eq!(
        alternative(u, &t3_id, &u3).await["hasChildren"],
        false,
        "the fork's new Turn responds to the copy, not to the origin"
    );
    // Changes in the origin stay in the origin.
    let fork_before = tree(u, &f).await;
    edit(u, &t3_id, "q2 edited in the origin", None).await;
    switch(u, &t1_id, &u1).await;
    regen(u, &t2_id, &k.p1, None).await;
    assert_eq!(tree(u, &f).await, fork_before, "the fork changed");

    // Bad fork points are refused and make no Conversation.
    let count = conversation_count(&u.id).await;
    u.post(
        &format!("/v1/conversations/{c}/fork"),
        json!({"turnId": t1_id, "alternativeId": text(&r1["id"])}),
    )
    .await
    .rejects(422, "TURN-2");
    u.post(
        &format!("/v1/conversations/{c}/fork"),
        json!({"turnId": leaf_turn, "alternativeId": leaf_alt}),
    )
    .await
    .rejects(422, "CONV-3");
    assert_eq!(conversation_count(&u.id).await, count);
}

/// CONV-3: a fork needs a settled path; forking at an Alternative still generating is refused
/// (409) and creates no Conversation; once the run finishes the same fork succeeds with the
/// content.
#[tokio::test]
async fn conv_3_forking_a_path_that_is_still_generating_is_refused() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "wait for it", None).await;
    let g = start(u, &c, &k.held, &id(&t1), None).await;
    let (turn, alt) = (text(&g["turnId"]), text(&g["alternativeId"]));
    let count = conversation_count(&u.id).await;
    let r = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": turn, "alternativeId": alt}),
        )
        .await;
    assert_eq!(r.status.as_u16(), 409, "{:?}", r.body);
    assert_eq!(r.code(), "CONFLICT");
    assert_eq!(conversation_count(&u.id).await, count);
    k.release(1);
    let done = settled(u, &turn, &alt).await;
    assert_eq!(done["cacheStatus"], "valid");
    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": turn, "alternativeId": alt}),
        )
        .await
        .ok(201)
        .clone();
    let fwm = wm(u, &id(&fork), "").await;
    assert_eq!(
        contents(&fwm),
        ["wait for it", "answer to wait for it [HOLD]"]
    );
}
