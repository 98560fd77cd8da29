//! Whole conversations: the scripted six-turn scenario, and `aiden check` on conversations built
//! through the API.

use std::collections::HashSet;

use aiden_tests::{aiden_graph_query, server, user};
use serde_json::{json, Value};

use super::*;

// ---------------------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
/// Checks one Alternative of the tree against (isActive, cacheStatus, hasChildren, respondsTo,
/// executedBy process, content).
#[track_caller]
fn expect_alt(
    tree: &Value,
    alt: &str,
    active: bool,
    status: &str,
    children: bool,
    responds: Option<&str>,
    process: Option<&str>,
    content: &str,
) {
    let a = tree_alt(tree, alt);
    assert_eq!(a["isActive"], active, "isActive of {a}");
    assert_eq!(a["cacheStatus"], status, "cacheStatus of {a}");
    assert_eq!(a["hasChildren"], children, "hasChildren of {a}");
    assert_eq!(a["respondsTo"], json!(responds), "respondsTo of {a}");
    match process {
        Some(p) => {
            assert_eq!(
                a["executedBy"],
                json!({"processId": p, "version": 1}),
                "executedBy of {a}"
            );
            assert!(a["runId"].is_string(), "runId of {a}");
        }
        None => {
            assert_eq!(a["executedBy"], Value::Null, "executedBy of {a}");
            assert_eq!(a["runId"], Value::Null, "runId of {a}");
        }
    }
    assert_eq!(a["content"], content, "content of {a}");
}

/// The scripted scenario: six Turns with user edits, regenerations by two Processes, a
/// continue-from-an-older-Alternative and a fork; the whole tree (isActive, cacheStatus with
/// stale, hasChildren, respondsTo, executedBy, contents, structure) and the working memory are
/// checked at several points, GET turn agrees with the tree, and the fork leaves the origin
/// untouched.
#[tokio::test]
async fn scenario_six_turns_with_edits_regenerations_a_continue_and_a_fork() {
    let k = kit(user().await).await;
    let u = &k.u;
    let (p1, p2) = (k.p1.as_str(), k.p2.as_str());
    let c = conversation(u).await;
    // T1 user "hi" → T2 agent (P1) → T3 user "tell me more" → T4 agent (P1)
    let t1 = say(u, &c, "hi", None).await;
    let (t1_id, u1) = (id(&t1), first(&t1));
    let r1 = id(&answer(u, &c, p1, &t1_id, None).await);
    let t2_id = text(&tree(u, &c).await["turns"][1]["id"]);
    let t3 = say(u, &c, "tell me more", Some(&t2_id)).await;
    let (t3_id, u3) = (id(&t3), first(&t3));
    let r4a_alt = answer(u, &c, p1, &t3_id, None).await;
    let (t4_id, r4a) = (text(&r4a_alt["turnId"]), id(&r4a_alt));
    let m = wm(u, &c, "").await;
    assert_eq!(
        contents(&m),
        [
            "hi",
            "answer to hi [P1]",
            "tell me more",
            "answer to tell me more [P1]"
        ]
    );
    let total: i64 = contents(&m).iter().map(|s| ceil4(s)).sum();
    assert_eq!(m["totalTokens"], total, "WM-2");

    // Regenerate T4 with the other Process: both answers respond to u3, both valid.
    let r4b = id(&regen(u, &t4_id, p2, None).await);
    // Edit T1, regenerate T2 under the edit with P2.
    let u1b = id(&edit(u, &t1_id, "hello", None).await);
    let full = tree(u, &c).await;
    expect_alt(
        &full,
        &r1,
        true,
        "stale",
        true,
        Some(&u1),
        Some(p1),
        "answer to hi [P1]",
    );
    assert_eq!(
        contents(&wm(u, &c, "").await),
        ["hello"],
        "current: the edit"
    );
    let r2 = id(&regen(u, &t2_id, p2, None).await);

    // Midway: the whole tree.
    let full = tree(u, &c).await;
    expect_alt(&full, &u1, false, "valid", true, None, None, "hi");
    expect_alt(&full, &u1b, true, "valid", true, None, None, "hello");
    expect_alt(
        &full,
        &r1,
        false,
        "stale",
        true,
        Some(&u1),
        Some(p1),
        "answer to hi [P1]",
    );
    expect_alt(
        &full,
        &r2,
        true,
        "valid",
        false,
        Some(&u1b),
        Some(p2),
        "answer to hello [P2]",
    );
    expect_alt(
        &full,
        &u3,
        true,
        "stale",
        true,
        Some(&r1),
        None,
        "tell me more",
    );
    expect_alt(
        &full,
        &r4a,
        false,
        "valid",
        false,
        Some(&u3),
        Some(p1),
        "answer to tell me more [P1]",
    );
    expect_alt(
        &full,
        &r4b,
        true,
        "valid",
        false,
        Some(&u3),
        Some(p2),
        "answer to tell me more [P2]",
    );
    // The working memory at the stale u3 keeps its own ancestry (WM-1).
    assert_eq!(
        contents(&wm(u, &c, &format!("?alternativeId={u3}")).await),
        ["hi", "answer to hi [P1]", "tell me more"]
    );
    assert_eq!(
        contents(&wm(u, &c, "").await),
        ["hello", "answer to hello [P2]"],
        "current: the regeneration"
    );

    // Continue from the older answer r4a (not the active one): T5 user, then T6 agent (P1).
    let t5 = say_via(u, &c, "go on", &t4_id, &r4a).await;
    let (t5_id, u5) = (id(&t5), first(&t5));
    assert_eq!(t5["viaAlternative"], json!(r4a));
    assert_eq!(
        t5["alternatives"][0]["cacheStatus"], "stale",
        "r4b is still T4's active Alternative"
    );
    switch(u, &t4_id, &r4a).await;
    assert_eq!(alternative(u, &t5_id, &u5).await["cacheStatus"], "valid");
    let r6_alt = answer(u, &c, p1, &t5_id, None).await;
    let (t6_id, r6) = (text(&r6_alt["turnId"]), id(&r6_alt));
    // Back to the original line above.
    switch(u, &t1_id, &u1).await;
    switch(u, &t2_id, &r1).await;
    assert_eq!(
        contents(&wm(u, &c, "").await),
        ["hi", "answer to hi [P1]"],
        "current: the last switch"
    );

    // The final tree.
    let full = tree(u, &c).await;
    let turns = turns_of(&full);
    let ids: Vec<String> = turns.iter().map(id).collect();
    assert_eq!(
        ids,
        [
            t1_id.clone(),
            t2_id.clone(),
            t3_id.clone(),
            t4_id.clone(),
            t5_id.clone(),
            t6_id.clone()
        ]
    );
    let speakers: Vec<&str> = turns
        .iter()
        .map(|t| t["speaker"].as_str().unwrap())
        .collect();
    assert_eq!(
        speakers,
        ["user", "agent", "user", "agent", "user", "agent"]
    );
    let seqs: Vec<i64> = turns
        .iter()
        .map(|t| t["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    let parents: Vec<Value> = turns.iter().map(|t| t["parentTurnId"].clone()).collect();
    assert_eq!(
        parents,
        [
            Value::Null,
            json!(t1_id),
            json!(t2_id),
            json!(t3_id),
            json!(t4_id),
            json!(t5_id)
        ]
    );
    let via: Vec<Value> = turns.iter().map(|t| t["viaAlternative"].clone()).collect();
    assert_eq!(
        via,
        [
            Value::Null,
            json!(u1),
            json!(r1),
            json!(u3),
            json!(r4a),
            json!(u5)
        ]
    );
    let per_turn: Vec<Vec<String>> = turns
        .iter()
        .map(|t| {
            t["alternatives"]
                .as_array()
                .unwrap()
                .iter()
                .map(id)
                .collect()
        })
        .collect();
    assert_eq!(
        per_turn,
        [
            vec![u1.clone(), u1b.clone()],
            vec![r1.clone(), r2.clone()],
            vec![u3.clone()],
            vec![r4a.clone(), r4b.clone()],
            vec![u5.clone()],
            vec![r6.clone()],
        ],
        "alternatives ordered by sequence"
    );
    expect_alt(&full, &u1, true, "valid", true, None, None, "hi");
    expect_alt(&full, &u1b, false, "valid", true, None, None, "hello");
    expect_alt(
        &full,
        &r1,
        true,
        "valid",
        true,
        Some(&u1),
        Some(p1),
        "answer to hi [P1]",
    );
    expect_alt(
        &full,
        &r2,
        false,
        "stale",
        false,
        Some(&u1b),
        Some(p2),
        "answer to hello [P2]",
    );
    expect_alt(
        &full,
        &u3,
        true,
        "valid",
        true,
        Some(&r1),
        None,
        "tell me more",
    );
    expect_alt(
        &full,
        &r4a,
        true,
        "valid",
        true,
        Some(&u3),
        Some(p1),
        "answer to tell me more [P1]",
    );
    expect_alt(
        &full,
        &r4b,
        false,
        "valid",
        false,
        Some(&u3),
        Some(p2),
        "answer to tell me more [P2]",
    );
    expect_alt(&full, &u5, true, "valid", true, Some(&r4a), None, "go on");
    expect_alt(
        &full,
        &r6,
        true,
        "valid",
        false,
        Some(&u5),
        Some(p1),
        "answer to go on [P1]",
    );
    for t in &turns {
        assert_eq!(actives(t).len(), 1, "TURN-2: {t}");
        assert_eq!(
            &get_turn(u, &id(t)).await,
            t,
            "GET turn agrees with the tree"
        );
    }
    assert_eq!(full["conversation"]["turnCount"], 6);
    assert_eq!(
        full["conversation"]["defaultProcessId"],
        json!(p1),
        "CONV-2"
    );

    // Working memory at the end of the line, at a stale answer, and mid-path.
    let end = wm(u, &c, &format!("?turnId={t6_id}")).await;
    let line = [
        "hi",
        "answer to hi [P1]",
        "tell me more",
        "answer to tell me more [P1]",
        "go on",
        "answer to go on [P1]",
    ];
    assert_eq!(contents(&end), line);
    assert_eq!(
        path_alts(&end),
        [
            u1.clone(),
            r1.clone(),
            u3.clone(),
            r4a.clone(),
            u5.clone(),
            r6.clone()
        ]
    );
    assert_eq!(
        end["totalTokens"],
        line.iter().map(|s| ceil4(s)).sum::<i64>()
    );
    assert_eq!(
        contents(&wm(u, &c, &format!("?alternativeId={r2}")).await),
        ["hello", "answer to hello [P2]"],
        "a stale answer keeps its own upstream"
    );
    assert_eq!(
        contents(&wm(u, &c, &format!("?alternativeId={r4b}")).await),
        [line[0], line[1], line[2], "answer to tell me more [P2]"]
    );
    assert_eq!(
        contents(&wm(u, &c, &format!("?turnId={t3_id}")).await),
        line[..3],
        "mid-path"
    );

    // Fork at the other answer of T4 and go on there; the origin stays exactly as it was.
    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": t4_id, "alternativeId": r4b}),
        )
        .await
        .ok(201)
        .clone();
    let f = id(&fork);
    assert_eq!(fork["forkedFrom"]["originAlternativeId"], json!(r4b));
    assert_eq!(
        contents(&wm(u, &f, "").await),
        [
            "hi",
            "answer to hi [P1]",
            "tell me more",
            "answer to tell me more [P2]"
        ]
    );
    let ft = tree(u, &f).await;
    let fturns = turns_of(&ft);
    assert_eq!(fturns.len(), 4);
    let executed: Vec<Value> = fturns
        .iter()
        .map(|t| t["alternatives"][0]["executedBy"]["processId"].clone())
        .collect();
    assert_eq!(executed, [Value::Null, json!(p1), Value::Null, json!(p2)]);
    let leaf = id(&fturns[3]);
    let fu = say(u, &f, "in the fork", Some(&leaf)).await;
    let fr = answer(u, &f, p2, &id(&fu), None).await;
    assert_eq!(fr["content"], "answer to in the fork [P2]");
    assert_eq!(
        tree(u, &c).await,
        full,
        "the origin is untouched by its fork"
    );
}

async fn findings(ids: &HashSet<String>) -> Vec<String> {
    let graph = aiden_graph::Graph::connect(&server().graph)
        .await
        .expect("graph");
    aiden_service::Auditor::new(graph)
        .audit()
        .await
        .expect("audit")
        .into_iter()
        .filter(|f| ids.contains(&f.id))
        .map(|f| format!("{} {}: {}", f.invariant, f.id, f.message))
        .collect()
}

/// `aiden check` (TURN-1/2/3/5/6/7, OWN-1) finds nothing wrong in conversations built through
/// the API — edits, regenerations by two Processes, a failed and a canceled run, a stale branch,
/// system and tool_result Turns, Summaries and a fork — and does see those nodes (a corrupted
/// sequence is reported, then repaired).
#[tokio::test]
async fn audit_is_clean_for_conversations_built_through_the_api() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let t1 = say(u, &c, "q", None).await;
    let t1_id = id(&t1);
    let r1 = answer(u, &c, &k.p1, &t1_id, None).await;
    let t2_id = text(&r1["turnId"]);
    regen(u, &t2_id, &k.broken, None).await;
    regen(u, &t2_id, &k.p2, None).await;
    let g = regen_start(u, &t2_id, &k.held, None).await;
    u.post(&format!("/v1/runs/{}/cancel", text(&g["runId"])), json!({}))
        .await
        .ok(202);
    settled(u, &t2_id, &text(&g["id"])).await;
    k.release(1);
    switch(u, &t2_id, &id(&r1)).await;
    let sys = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "system", "content": "tool said 42", "turnType": "tool_result",
                   "parentTurnId": t2_id}),
        )
        .await
        .ok(201)
        .clone();
    edit(u, &t1_id, "q, edited", None).await;
    let t3 = say(u, &c, "more", Some(&id(&sys))).await;
    u.post(
        &format!("/v1/conversations/{c}/summaries"),
        json!({"content": "s", "coversUpToTurnId": t1_id, "sources": [first(&t1)], "createdByProcessId": k.p1}),
    )
    .await
    .ok(201);
    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": id(&t3), "alternativeId": first(&t3)}),
        )
        .await
        .ok(201)
        .clone();
    let f = id(&fork);
    let mut ids: HashSet<String> = [c.clone(), f.clone()].into_iter().collect();
    for conv in [&c, &f] {
        let t = tree(u, conv).await;
        ids.extend(turns_of(&t).iter().map(id));
        ids.extend(all_alts(&t).iter().map(id));
        ids.extend(
            u.get(&format!("/v1/conversations/{conv}/summaries"))
                .await
                .ok(200)["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(id),
        );
    }
    // 2 conversations; the origin's 4 Turns, 8 Alternatives and 1 Summary; the fork's 4 + 4.
    assert_eq!(ids.len(), 2 + 4 + 8 + 1 + 4 + 4, "{ids:?}");
    let found = findings(&ids).await;
    assert!(
        found.is_empty(),
        "aiden check on an API-built conversation:\n{}",
        found.join("\n")
    );

    // Not vacuous: the audit does look at these Turns.
    let leaf = id(&turns_of(&tree(u, &f).await)[3]);
    aiden_tests::graph_write(
        aiden_graph_query("MATCH (t:ConversationTurn {id: $t}) SET t.sequence = 9")
            .param("t", leaf.as_str()),
    )
    .await;
    let found = findings(&ids).await;
    aiden_tests::graph_write(
        aiden_graph_query("MATCH (t:ConversationTurn {id: $t}) SET t.sequence = 4")
            .param("t", leaf.as_str()),
    )
    .await;
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("TURN-1") && f.contains(&leaf)),
        "{found:?}"
    );
    assert!(findings(&ids).await.is_empty(), "repaired");
}
