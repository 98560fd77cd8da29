//! A run that answers a conversation turn, as the run list shows it: the message it answered
//! (the user's Alternative its own Alternative responds to, as a preview) and the Alternative it
//! generated, so the console can link to that exact message.

use aiden_tests::user;
use serde_json::{json, Value};

use super::*;

async fn run_line(u: &Client, process: &str, run: &str) -> Value {
    let page = u
        .get(&format!("/v1/runs?processId={process}&idPrefix={run}"))
        .await
        .ok(200)
        .clone();
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{page}");
    items[0].clone()
}

/// An answer's run names the message it answered; the answer to an edited message names the
/// edit, and another answer to the first message that message, each with its own answer.
#[tokio::test]
async fn a_conversation_run_names_the_message_it_answered() {
    let k = kit(user().await).await;
    let u = &k.u;
    let c = conversation(u).await;
    let long = format!("what is a waterfall? {}", "x".repeat(400));
    let t1 = say(u, &c, &long, None).await;
    let asked = first(&t1);
    let r1 = answer(u, &c, &k.p1, &id(&t1), None).await;
    let line = run_line(u, &k.p1, &text(&r1["runId"])).await;
    let m = &line["message"];
    assert_eq!(m["conversationId"], json!(c), "{line}");
    assert_eq!(m["alternativeId"], json!(asked), "{line}");
    assert_eq!(m["turnId"], t1["id"], "{line}");
    assert_eq!(m["answerId"], r1["id"], "{line}");
    assert_eq!(m["answerTurnId"], r1["turnId"], "{line}");
    let preview = text(&m["text"]);
    assert!(
        long.starts_with(&preview),
        "a preview of the message: {preview}"
    );
    assert_eq!(
        preview.chars().count(),
        200,
        "cut to a preview, not the whole text"
    );
    assert!(
        line["processName"]
            .as_str()
            .is_some_and(|n| n.starts_with("agent P1")),
        "{line}"
    );

    let edited = edit(u, &id(&t1), "and a queue?", None).await;
    let answer_to_edit = regen(u, &text(&r1["turnId"]), &k.p1, Some(&id(&edited))).await;
    let line = run_line(u, &k.p1, &text(&answer_to_edit["runId"])).await;
    assert_eq!(line["message"]["alternativeId"], edited["id"], "{line}");
    assert_eq!(line["message"]["text"], "and a queue?", "{line}");

    let r2 = regen(u, &text(&r1["turnId"]), &k.p2, Some(&asked)).await;
    let line = run_line(u, &k.p2, &text(&r2["runId"])).await;
    assert_eq!(line["message"]["alternativeId"], json!(asked), "{line}");
    assert_eq!(line["message"]["answerId"], r2["id"], "{line}");
}
