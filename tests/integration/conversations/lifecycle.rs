//! A Conversation as a whole: never deleted, only archived (CONV-1); its default Process
//! (CONV-2); its owner's alone (OWN-2).

use aiden_tests::{admin, aiden_graph_query, fixtures, graph_rows, unique, user};
use reqwest::Method;
use serde_json::{json, Value};

use super::*;

/// CONV-1: DELETE answers 405 NOT_ALLOWED and removes nothing; archiving hides the conversation
/// from the default listing, freezes it (409, nothing written) and is reversible.
#[tokio::test]
async fn conv_1_delete_answers_405_and_archiving_is_reversible() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "keep me", None).await;
    let r1 = answer(u, &c, &k.p1, &id(&t1), None).await;
    let t2 = text(&r1["turnId"]);
    let before = snapshot(&c, &u.id).await;
    let del = u.delete(&format!("/v1/conversations/{c}")).await;
    del.rejects(405, "CONV-1");
    assert_eq!(del.code(), "NOT_ALLOWED");
    assert_eq!(
        snapshot(&c, &u.id).await,
        before,
        "DELETE removed something"
    );
    assert_eq!(get_conversation(u, &c).await["status"], "active");
    assert_eq!(tree(u, &c).await["turns"].as_array().unwrap().len(), 2);

    let archived = u
        .patch(
            &format!("/v1/conversations/{c}"),
            json!({"status": "archived"}),
        )
        .await;
    assert_eq!(archived.ok(200)["status"], "archived");
    let listed = u.get("/v1/conversations").await.ok(200).clone();
    assert!(
        !listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == c),
        "archived conversations are left out of the default listing: {listed}"
    );
    let all = u
        .get("/v1/conversations?includeArchived=true")
        .await
        .ok(200)
        .clone();
    assert!(all["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["id"] == c));
    assert_eq!(get_conversation(u, &c).await["status"], "archived");
    assert_eq!(contents(&wm(u, &c, "").await).len(), 2, "still readable");
    u.delete(&format!("/v1/conversations/{c}"))
        .await
        .rejects(405, "CONV-1");

    // An archived conversation takes no writes, and the refused writes leave nothing behind.
    let frozen = snapshot(&c, &u.id).await;
    let writes = [
        u.post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "more", "parentTurnId": t2}),
        )
        .await,
        u.post(
            &format!("/v1/conversations/{c}/agent-turns"),
            json!({"processId": k.p1, "parentTurnId": id(&t1)}),
        )
        .await,
        u.post(
            &format!("/v1/turns/{}/alternatives", id(&t1)),
            json!({"content": "edited"}),
        )
        .await,
        u.post(
            &format!("/v1/turns/{t2}/alternatives"),
            json!({"processId": k.p2}),
        )
        .await,
        u.put(
            &format!("/v1/turns/{}/active", id(&t1)),
            json!({"alternativeId": first(&t1)}),
        )
        .await,
    ];
    for r in &writes {
        assert_eq!(r.status.as_u16(), 409, "archived must refuse: {:?}", r.body);
        assert_eq!(r.code(), "CONFLICT");
    }
    assert_eq!(snapshot(&c, &u.id).await, frozen, "a refused write wrote");

    // Reversible.
    let back = u
        .patch(
            &format!("/v1/conversations/{c}"),
            json!({"status": "active"}),
        )
        .await;
    assert_eq!(back.ok(200)["status"], "active");
    let t3 = say(u, &c, "more", Some(&t2)).await;
    assert_eq!(t3["sequence"], 3);
    for status in ["deleted", "gone"] {
        u.patch(&format!("/v1/conversations/{c}"), json!({"status": status}))
            .await
            .ok(400);
    }

    // If-Match: a stale revision loses (409) and changes nothing.
    let now = get_conversation(u, &c).await;
    let rev = now["revision"].as_i64().unwrap();
    let stale = (rev - 1).to_string();
    let r = u
        .send(
            Method::PATCH,
            &format!("/v1/conversations/{c}"),
            Some(&json!({"title": "lost"})),
            &[("If-Match", stale.as_str())],
        )
        .await;
    assert_eq!(r.status.as_u16(), 409, "{:?}", r.body);
    assert_eq!(get_conversation(u, &c).await["title"], now["title"]);
    let fresh = rev.to_string();
    let r = u
        .send(
            Method::PATCH,
            &format!("/v1/conversations/{c}"),
            Some(&json!({"title": "won"})),
            &[("If-Match", fresh.as_str())],
        )
        .await;
    assert_eq!(r.ok(200)["title"], "won");
    assert!(r.body["revision"].as_i64().unwrap() > rev);
}

async fn default_edges(c: &str) -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Edge {
        p: String,
        since: Option<String>,
    }
    let rows: Vec<Edge> = graph_rows(
        aiden_graph_query(
            "MATCH (:Conversation {id: $c})-[d:DEFAULT_PROCESS]->(p:Process) RETURN p.id AS p, d.since AS since",
        )
        .param("c", c),
    )
    .await;
    rows.into_iter()
        .map(|e| (e.p, e.since.unwrap_or_default()))
        .collect()
}

/// CONV-2: a default Process must be an enabled Process the owner can see, on create and PATCH;
/// refusals write nothing; `null` clears the edge.
#[tokio::test]
async fn conv_2_default_process_must_be_enabled_and_visible_to_the_owner() {
    let k = kit(user().await).await;
    let other = kit(user().await).await;
    let u = &k.u;
    let theirs_shared = id(&fixtures::create(
        &other.u,
        "processes",
        agent_body("SHARED", &other.reply_tool, false, true),
    )
    .await);

    let c = u
        .post("/v1/conversations", json!({"defaultProcessId": k.p1}))
        .await
        .ok(201)
        .clone();
    assert_eq!(c["defaultProcessId"], json!(k.p1));
    let c = id(&c);
    assert_eq!(
        default_edges(&c)
            .await
            .into_iter()
            .map(|e| e.0)
            .collect::<Vec<_>>(),
        [k.p1.as_str()]
    );
    let count = conversation_count(&u.id).await;
    for bad in [other.p1.as_str(), "no-such-process"] {
        u.post("/v1/conversations", json!({"defaultProcessId": bad}))
            .await
            .rejects(422, "CONV-2");
    }
    u.patch(
        &format!("/v1/processes/{}", k.p2),
        json!({"enabled": false}),
    )
    .await
    .ok(200);
    u.post("/v1/conversations", json!({"defaultProcessId": k.p2}))
        .await
        .rejects(422, "CONV-2");
    assert_eq!(
        conversation_count(&u.id).await,
        count,
        "a refused create made a Conversation"
    );
    // Another user's shared Process is visible, so it may be the default.
    let visible = u
        .post(
            "/v1/conversations",
            json!({"defaultProcessId": theirs_shared}),
        )
        .await;
    assert_eq!(visible.ok(201)["defaultProcessId"], json!(theirs_shared));

    let before = snapshot(&c, &u.id).await;
    for bad in [k.p2.as_str(), other.p1.as_str(), "no-such-process"] {
        u.patch(
            &format!("/v1/conversations/{c}"),
            json!({"defaultProcessId": bad}),
        )
        .await
        .rejects(422, "CONV-2");
    }
    assert_eq!(snapshot(&c, &u.id).await, before);
    let changed = u
        .patch(
            &format!("/v1/conversations/{c}"),
            json!({"defaultProcessId": theirs_shared}),
        )
        .await;
    assert_eq!(changed.ok(200)["defaultProcessId"], json!(theirs_shared));
    assert_eq!(default_edges(&c).await.len(), 1);
    let cleared = u
        .patch(
            &format!("/v1/conversations/{c}"),
            json!({"defaultProcessId": null}),
        )
        .await;
    assert_eq!(cleared.ok(200)["defaultProcessId"], Value::Null);
    assert!(default_edges(&c).await.is_empty(), "null removes the edge");
}

/// CONV-2: every agent turn (new Turn or regeneration) points DEFAULT_PROCESS at its Process,
/// idempotently: one edge, untouched when the same Process runs again; a refused agent turn
/// (disabled Process, PROC-8) changes nothing.
#[tokio::test]
async fn conv_2_agent_turns_update_the_default_process_idempotently() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    assert_eq!(
        get_conversation(u, &c).await["defaultProcessId"],
        Value::Null
    );
    let t1 = say(u, &c, "first", None).await;
    let r1 = answer(u, &c, &k.p1, &id(&t1), None).await;
    let t2 = text(&r1["turnId"]);
    let conv = get_conversation(u, &c).await;
    assert_eq!(conv["defaultProcessId"], json!(k.p1));
    let edges = default_edges(&c).await;
    assert_eq!(edges.len(), 1);
    assert_eq!(edges[0].0, k.p1);
    let t3 = say(u, &c, "second", Some(&t2)).await;
    answer(u, &c, &k.p1, &id(&t3), None).await;
    assert_eq!(
        default_edges(&c).await,
        edges,
        "running the same Process again leaves the edge as it was"
    );
    regen(u, &t2, &k.p2, None).await;
    let conv = get_conversation(u, &c).await;
    assert_eq!(
        conv["defaultProcessId"],
        json!(k.p2),
        "regenerations count too"
    );
    let edges = default_edges(&c).await;
    assert_eq!(edges.len(), 1, "{edges:?}");
    assert_eq!(edges[0].0, k.p2);

    u.patch(
        &format!("/v1/processes/{}", k.p1),
        json!({"enabled": false}),
    )
    .await
    .ok(200);
    let before = snapshot(&c, &u.id).await;
    u.post(
        &format!("/v1/conversations/{c}/agent-turns"),
        json!({"processId": k.p1, "parentTurnId": id(&t3)}),
    )
    .await
    .rejects(422, "PROC-8");
    u.post(
        &format!("/v1/turns/{t2}/alternatives"),
        json!({"processId": k.p1}),
    )
    .await
    .rejects(422, "PROC-8");
    assert_eq!(snapshot(&c, &u.id).await, before);
    assert_eq!(default_edges(&c).await[0].0, k.p2);
}

/// OWN-2: a conversation is its owner's alone — an admin and another user get 404 NOT_FOUND on
/// every conversation and turn route, see nothing in their listing, and change nothing.
#[tokio::test]
async fn own_2_another_users_conversation_is_404_everywhere_even_for_admins() {
    let k = kit(user().await).await;
    let stranger = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t = say(u, &c, "private", None).await;
    let r = answer(u, &c, &k.p1, &id(&t), None).await;
    let (turn, alt, agent_turn) = (id(&t), first(&t), text(&r["turnId"]));
    // The stranger's own message: named in this conversation's working memory, still a 404.
    let theirs = first(
        &say(
            &stranger.u,
            &conversation(&stranger.u).await,
            "theirs",
            None,
        )
        .await,
    );
    let before = snapshot(&c, &u.id).await;
    for (who, p) in [
        (admin(), k.p1.clone()),
        (stranger.u.clone(), stranger.p1.clone()),
    ] {
        let memory = |query: String| format!("/v1/conversations/{c}/working-memory?{query}");
        let replies = [
            who.get(&format!("/v1/conversations/{c}")).await,
            who.get(&format!("/v1/conversations/{c}/tree")).await,
            who.get(&format!("/v1/conversations/{c}/working-memory"))
                .await,
            who.get(&memory(format!("alternativeId={alt}"))).await,
            who.get(&memory(format!("turnId={turn}"))).await,
            who.get(&memory(format!("alternativeId={}", unique("x"))))
                .await,
            who.get(&memory(format!("alternativeId={theirs}"))).await,
            who.get(&format!("/v1/conversations/{c}/summaries")).await,
            who.get(&format!("/v1/turns/{turn}")).await,
            who.get(&format!("/v1/turns/{agent_turn}")).await,
            who.patch(&format!("/v1/conversations/{c}"), json!({"title": "mine"}))
                .await,
            who.patch(
                &format!("/v1/conversations/{c}"),
                json!({"status": "archived"}),
            )
            .await,
            who.delete(&format!("/v1/conversations/{c}")).await,
            who.post(
                &format!("/v1/conversations/{c}/turns"),
                json!({"speaker": "user", "content": "x", "parentTurnId": agent_turn}),
            )
            .await,
            who.post(
                &format!("/v1/conversations/{c}/agent-turns"),
                json!({"processId": p, "parentTurnId": turn}),
            )
            .await,
            who.post(
                &format!("/v1/turns/{turn}/alternatives"),
                json!({"content": "x"}),
            )
            .await,
            who.post(
                &format!("/v1/turns/{agent_turn}/alternatives"),
                json!({"processId": p}),
            )
            .await,
            who.put(
                &format!("/v1/turns/{turn}/active"),
                json!({"alternativeId": alt}),
            )
            .await,
            who.post(
                &format!("/v1/conversations/{c}/fork"),
                json!({"turnId": turn, "alternativeId": alt}),
            )
            .await,
            who.post(
                &format!("/v1/conversations/{c}/summaries"),
                json!({"content": "x", "coversUpToTurnId": turn, "sources": [alt]}),
            )
            .await,
        ];
        for r in replies {
            assert_eq!(r.status.as_u16(), 404, "{}: {:?}", who.id, r.body);
            assert_eq!(r.code(), "NOT_FOUND");
        }
        let listed = who
            .get("/v1/conversations?includeArchived=true")
            .await
            .ok(200)
            .clone();
        assert!(
            !listed["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["id"] == c),
            "{} lists another user's conversation",
            who.id
        );
    }
    assert_eq!(snapshot(&c, &u.id).await, before);
}

/// OWN-2 ("never a hint that it exists"): inside one's own conversation, naming another user's
/// Turn, Alternative or Summary gets exactly the answer an id that does not exist gets.
#[tokio::test]
async fn own_2_another_users_ids_are_answered_like_unknown_ids() {
    let u = user().await;
    let stranger = user().await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "mine", None).await;
    let sc = conversation(&stranger).await;
    let st = say(&stranger, &sc, "theirs", None).await;
    let ss = stranger
        .post(
            &format!("/v1/conversations/{sc}/summaries"),
            json!({"content": "theirs", "coversUpToTurnId": id(&st), "sources": [first(&st)]}),
        )
        .await
        .ok(201)
        .clone();
    let shape = |r: &aiden_tests::Reply| (r.status.as_u16(), r.code().to_owned(), r.invariants());
    let (their_turn, their_alt, their_sum) = (id(&st), first(&st), id(&ss));
    let (t1_id, t1_alt) = (id(&t1), first(&t1));
    let request = |what: &str, x: &str| -> (Method, String, Option<Value>) {
        let sums = format!("/v1/conversations/{c}/summaries");
        match what {
            "working memory alternativeId" => (
                Method::GET,
                format!("/v1/conversations/{c}/working-memory?alternativeId={x}"),
                None,
            ),
            "working memory turnId" => (
                Method::GET,
                format!("/v1/conversations/{c}/working-memory?turnId={x}"),
                None,
            ),
            "turn parentTurnId" => (
                Method::POST,
                format!("/v1/conversations/{c}/turns"),
                Some(json!({"speaker": "user", "content": "x", "parentTurnId": x})),
            ),
            "turn parentAlternativeId" => (
                Method::POST,
                format!("/v1/conversations/{c}/turns"),
                Some(
                    json!({"speaker": "user", "content": "x", "parentTurnId": t1_id,
                            "parentAlternativeId": x}),
                ),
            ),
            "switch" => (
                Method::PUT,
                format!("/v1/turns/{t1_id}/active"),
                Some(json!({"alternativeId": x})),
            ),
            "fork" => (
                Method::POST,
                format!("/v1/conversations/{c}/fork"),
                Some(json!({"turnId": t1_id, "alternativeId": x})),
            ),
            "summary coversUpToTurnId" => (
                Method::POST,
                sums,
                Some(json!({"content": "x", "coversUpToTurnId": x, "sources": [t1_alt]})),
            ),
            _ => (
                Method::POST,
                sums,
                Some(json!({"content": "x", "coversUpToTurnId": t1_id, "sources": [x]})),
            ),
        }
    };
    let probes = [
        ("working memory alternativeId", their_alt.clone()),
        ("working memory turnId", their_turn.clone()),
        ("turn parentTurnId", their_turn.clone()),
        ("turn parentAlternativeId", their_alt.clone()),
        ("switch", their_alt.clone()),
        ("fork", their_alt.clone()),
        ("summary coversUpToTurnId", their_turn.clone()),
        ("summary source alternative", their_alt.clone()),
        ("summary source summary", their_sum.clone()),
    ];
    let before = snapshot(&c, &u.id).await;
    let mut leaks = Vec::new();
    for (what, theirs) in &probes {
        let (m, p, b) = request(what, theirs);
        let foreign = u.send(m, &p, b.as_ref(), &[]).await;
        let (m, p, b) = request(what, &format!("{}-nonexistent", unique("x")));
        let unknown = u.send(m, &p, b.as_ref(), &[]).await;
        assert!(
            (400..500).contains(&foreign.status.as_u16()),
            "{what}: {:?}",
            foreign.body
        );
        if shape(&foreign) != shape(&unknown) {
            leaks.push(format!(
                "{what}: another user's id → {:?}, an unknown id → {:?}",
                shape(&foreign),
                shape(&unknown)
            ));
        }
    }
    assert_eq!(snapshot(&c, &u.id).await, before);
    assert!(
        leaks.is_empty(),
        "answers that reveal another user's ids:\n{}",
        leaks.join("\n")
    );
}
