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
