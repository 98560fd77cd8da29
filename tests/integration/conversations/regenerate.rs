//! FORK-1 in a conversation: an answer regenerated from its last step comes from a fork of
//! the run that produced the old one, so its earlier steps are reused and only the answering
//! step calls its Tool again.

use aiden_tests::user;

use super::*;

/// A two-step agent Process: `look` (tag LOOK) finds something for the message, `say` (tag
/// SAY) answers from what it found.
async fn two_step(k: &Kit) -> String {
    let body = json!({"id": unique("agent"), "name": "look then say", "initialContext": AGENT_CONTEXT,
        "steps": [
            {"id": "look", "tool": k.reply_tool, "inputs": {"q": "{{userMessage}}", "tag": "LOOK", "hold": "0"},
             "output": {"variable": "found"}},
            {"id": "say", "tool": k.reply_tool, "inputs": {"q": "{{found.body.reply}}", "tag": "SAY", "hold": "0"},
             "output": {"variable": "r"}}],
        "outputTemplate": "{{r.body.reply}}", "shared": false});
    id(&fixtures::create(&k.u, "processes", body).await)
}

#[tokio::test]
async fn fork_1_regenerating_the_answer_only_reuses_the_earlier_steps_of_its_run() {
    let k = kit(user().await).await;
    let u = &k.u;
    let p = two_step(&k).await;
    let c = conversation(u).await;
    let t1 = say(u, &c, "ping", None).await;
    let first = answer(u, &c, &p, &id(&t1), None).await;
    assert_eq!(first["content"], "answer to answer to ping", "{first}");
    assert_eq!(
        k.up.seen.lock().unwrap().clone(),
        ["LOOK|ping", "SAY|answer to ping"]
    );
    let turn = text(&first["turnId"]);

    let body = json!({"processId": p, "regenerate": {"alternativeId": id(&first)}});
    let g = u
        .post(&format!("/v1/turns/{turn}/alternatives"), body)
        .await;
    let g = g.ok(202).clone();
    let again = settled(u, &turn, &text(&g["id"])).await;
    assert_eq!(again["cacheStatus"], "valid", "{again}");
    assert_eq!(again["content"], first["content"]);
    assert_eq!(again["isActive"], true, "the new answer is the active one");
    assert_eq!(
        k.up.seen.lock().unwrap().clone(),
        ["LOOK|ping", "SAY|answer to ping", "SAY|answer to ping"],
        "only the answering step ran again"
    );
    let run = u.settled_run(&text(&again["runId"])).await;
    assert_eq!(run["forkedFrom"], first["runId"], "{run}");
    assert_eq!(run["forkStep"], "say");
    let look = &run["steps"][0];
    assert_eq!(look["stepId"], "look");
    assert_eq!(
        look["reusedFrom"],
        format!("{}/look", text(&first["runId"]))
    );
    assert!(run["steps"][1]["reusedFrom"].is_null());

    // FORK-3: another Process cannot regenerate from this run; nor can a missing Alternative.
    let other = json!({"processId": k.p1, "regenerate": {"alternativeId": id(&first)}});
    u.post(&format!("/v1/turns/{turn}/alternatives"), other)
        .await
        .rejects(422, "FORK-3");
    let missing = json!({"processId": p, "regenerate": {"alternativeId": "nope"}});
    u.post(&format!("/v1/turns/{turn}/alternatives"), missing)
        .await
        .rejects(422, "FORK-3");
    assert_eq!(
        get_turn(u, &turn).await["alternatives"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "a refused regeneration adds nothing"
    );
}
