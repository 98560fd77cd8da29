//! Every user gets an answer (docs/connections.md): a shared chat Process on a keyless model
//! runs for any user; on a key-requiring Tool it fails for a user who has not connected, with a
//! sentence that says what to do; once the user connects their own key (their Secret and their
//! Tool of the same ToolTemplate) it runs on that key, never on the admin's (SEC-6).

use aiden_tests::{admin, fixtures, unique, user, Client};
use serde_json::{json, Value};

use crate::providers::{provider, seed_spec, settled_alternative};

/// A shared Tool of `template` on `service`, with `secret` if given.
async fn tool_of(
    c: &Client,
    service: &str,
    template: &str,
    endpoint: &str,
    secret: Option<&str>,
) -> String {
    let mut body = json!({"id": unique("llm"), "name": "Answer", "serviceId": service,
        "toolTemplateId": template, "connectionParams": {"endpoint": endpoint, "model": "m"},
        "enabled": true, "shared": true});
    if let Some(s) = secret {
        body["secretId"] = json!(s);
    }
    fixtures::create(c, "tools", body).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The seed's `process-converse`, shared, answering with `tool`.
async fn converse_on(c: &Client, tool: &str) -> String {
    let mut spec = seed_spec(
        include_str!("../../seed/60-processes.yaml"),
        "process-converse",
    );
    spec["id"] = json!(unique("converse"));
    spec["steps"][0]["tool"] = json!(tool);
    fixtures::create(c, "processes", spec).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Asks `process` to answer a new message in a new conversation; the settled Alternative.
async fn answer(u: &Client, process: &str) -> Value {
    let conv = u.post("/v1/conversations", json!({})).await.ok(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let turn = u
        .post(
            &format!("/v1/conversations/{conv}/turns"),
            json!({"speaker": "user", "content": "Hello?"}),
        )
        .await
        .ok(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let agent = u
        .post(
            &format!("/v1/conversations/{conv}/agent-turns"),
            json!({"processId": process, "parentTurnId": turn}),
        )
        .await
        .ok(202)["turnId"]
        .as_str()
        .unwrap()
        .to_owned();
    settled_alternative(u, &agent).await
}

fn ready_of(list: &Value, process: &str) -> Value {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == process)
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn sec_6_every_user_gets_an_answer_keyless_or_on_their_own_connected_key() {
    let a = admin();
    let (p, endpoint) = provider().await;
    let service = fixtures::create(
        &a,
        "services",
        json!({"id": unique("svc"), "name": "Model",
        "type": "llm_provider", "protocol": "http", "requiresSecret": false, "endpoint": endpoint,
        "enabled": true, "shared": true, "connectionSchema": {"type": "object",
        "required": ["endpoint", "model"], "properties": {"endpoint": {"type": "string"},
        "model": {"type": "string"}}}}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut template = seed_spec(
        include_str!("../../seed/20-tool-templates.yaml"),
        "tool-tpl-llm-answer",
    );
    template["id"] = json!(unique("tpl"));
    template["operation"]["api"] = json!("openai");
    let template = fixtures::create(&a, "tool-templates", template).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let u = user().await;

    // Keyless: the shared Tool carries no Secret, so a user's answer simply runs.
    let keyless = converse_on(&a, &tool_of(&a, &service, &template, &endpoint, None).await).await;
    let reply = answer(&u, &keyless).await;
    assert_eq!(reply["cacheStatus"], "valid", "{reply}");

    // With the admin's key: not the user's to use. One sentence says what to do.
    let admin_key = format!("sk-admin-{}", unique("k"));
    let secret = fixtures::secret(&a, &admin_key).await;
    let keyed = converse_on(
        &a,
        &tool_of(&a, &service, &template, &endpoint, Some(&secret)).await,
    )
    .await;
    let listed = u.get("/v1/me/chat-processes").await.ok(200).clone();
    assert_eq!(ready_of(&listed, &keyless)["ready"], true, "{listed}");
    let waiting = ready_of(&listed, &keyed);
    assert_eq!(waiting["ready"], false, "{listed}");
    assert!(
        waiting["reason"]
            .as_str()
            .unwrap()
            .starts_with("Connect a model"),
        "{waiting}"
    );
    let before = p.requests.lock().unwrap().len();
    let failed = answer(&u, &keyed).await;
    assert_eq!(failed["cacheStatus"], "failed", "{failed}");
    let error = &failed["error"];
    assert_eq!(error["code"], "NOT_CONNECTED", "{failed}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("Open \"Connect a model\""),
        "{error}"
    );
    assert_eq!(
        p.requests.lock().unwrap().len(),
        before,
        "the admin's key was not used"
    );
    // The admin, whose key it is, gets an answer on it.
    assert_eq!(answer(&a, &keyed).await["cacheStatus"], "valid");

    // The user connects: their own Secret and their own Tool of the same template.
    let user_key = format!("sk-user-{}", unique("k"));
    let own_secret = fixtures::secret(&u, &user_key).await;
    fixtures::create(
        &u,
        "tools",
        json!({"id": unique("mine"), "name": "Answer (mine)",
        "serviceId": service, "toolTemplateId": template, "secretId": own_secret,
        "connectionParams": {"endpoint": endpoint, "model": "mine"}, "enabled": true}),
    )
    .await;
    let listed = u.get("/v1/me/chat-processes").await.ok(200).clone();
    assert_eq!(ready_of(&listed, &keyed)["ready"], true, "{listed}");
    let before = p.requests.lock().unwrap().len();
    for process in [&keyed, &keyless] {
        let reply = answer(&u, process).await;
        assert_eq!(reply["cacheStatus"], "valid", "{reply}");
    }
    let calls = p.requests.lock().unwrap()[before..].to_vec();
    assert_eq!(calls.len(), 2);
    for (headers, body) in calls {
        assert_eq!(
            headers["authorization"],
            format!("Bearer {user_key}"),
            "the user's own key"
        );
        assert_eq!(body["model"], "mine", "the user's own Tool");
    }
}
