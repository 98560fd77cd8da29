//! Every user gets an answer (docs/connections.md): a shared chat Process on a keyless model
//! runs for any user; on a key-requiring Tool it fails for a user who has not connected, with a
//! sentence that says what to do; once the user connects their own key (their Secret and their
//! Tool of the same ToolTemplate) it runs on that key, never on the admin's (SEC-6).

use aiden_tests::{admin, fixtures, unique, user, Client};
use serde_json::{json, Value};

use crate::providers::{converse_on, provider, seed_spec, settled_alternative};

/// A shared keyless model Service at `endpoint` and a shared copy of the seed's answer template.
async fn model_service(a: &Client, endpoint: &str) -> (String, String) {
    let service = fixtures::create(
        a,
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
    let template = fixtures::create(a, "tool-templates", template).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (service, template)
}

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
    let (service, template) = model_service(&a, &endpoint).await;
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
    assert_eq!(error["code"], "PERMISSION_DENIED", "{failed}");
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
    let mine = unique("mine");
    fixtures::create(
        &u,
        "tools",
        json!({"id": mine, "name": "Answer (mine)",
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
        // The run's record says which Tool ran: the user's own, in place of the named one.
        let run = u
            .get(&format!("/v1/runs/{}", reply["runId"].as_str().unwrap()))
            .await;
        assert_eq!(
            run.ok(200)["steps"][0]["telemetry"]["ranToolId"],
            json!(mine)
        );
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

/// CONV-2: an agent turn that names no Process runs the conversation's default, else the
/// caller's own default (`PUT /v1/me/default-process`); with neither it is refused, naming the
/// rule. A default must be a Process the caller may run.
#[tokio::test]
async fn conv_2_an_agent_turn_without_a_process_runs_the_conversations_else_the_users_default() {
    let a = admin();
    let (_p, endpoint) = provider().await;
    let (service, template) = model_service(&a, &endpoint).await;
    let process = converse_on(&a, &tool_of(&a, &service, &template, &endpoint, None).await).await;
    let u = user().await;
    let start = |conv: String, turn: String| {
        let u = u.clone();
        async move {
            u.post(
                &format!("/v1/conversations/{conv}/agent-turns"),
                json!({"parentTurnId": turn}),
            )
            .await
        }
    };
    let message = |conv: String| {
        let u = u.clone();
        async move {
            u.post(
                &format!("/v1/conversations/{conv}/turns"),
                json!({"speaker": "user", "content": "Hi"}),
            )
            .await
            .ok(201)["id"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    let conv = u.post("/v1/conversations", json!({})).await.ok(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let turn = message(conv.clone()).await;
    start(conv.clone(), turn.clone())
        .await
        .rejects(422, "CONV-2");
    u.put(
        "/v1/me/default-process",
        json!({"processId": unique("nope")}),
    )
    .await
    .rejects(422, "CONV-2");
    let me = u
        .put("/v1/me/default-process", json!({"processId": process}))
        .await;
    assert_eq!(me.ok(200)["defaultProcessId"], json!(process));
    assert_eq!(
        u.get("/v1/me").await.ok(200)["defaultProcessId"],
        json!(process)
    );
    let started = start(conv.clone(), turn).await;
    let agent_turn = started.ok(202)["turnId"].as_str().unwrap().to_owned();
    let reply = settled_alternative(&u, &agent_turn).await;
    assert_eq!(reply["cacheStatus"], "valid", "{reply}");
    assert_eq!(reply["executedBy"]["processId"], json!(process));
    let cleared = u
        .put("/v1/me/default-process", json!({"processId": null}))
        .await;
    assert!(cleared.ok(200).get("defaultProcessId").is_none());
    // The conversation now has a default of its own (the Process that answered it).
    let next = u
        .post(
            &format!("/v1/conversations/{conv}/turns"),
            json!({"speaker": "user", "content": "And?", "parentTurnId": agent_turn}),
        )
        .await
        .ok(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    start(conv, next).await.ok(202);
}

/// SEC-7: `POST /v1/secrets` of an API key, tried against `check` first.
async fn try_key(u: &Client, name: &str, key: &str, check: Value) -> aiden_tests::Reply {
    u.post(
        "/v1/secrets",
        json!({"name": name, "type": "api_key", "value": key, "checkWith": check}),
    )
    .await
}

/// What a refusal says, in words.
fn refusal(r: &aiden_tests::Reply) -> &str {
    r.body["error"]["details"][0]["message"].as_str().unwrap()
}

/// SEC-7: "Connect a model" tries the key before keeping it. On the scripted model, its key is
/// kept; a wrong key is refused (422 SEC-7, in words, the key nowhere in the answer) and nothing
/// is saved; an unreachable provider says so; a provider without a model list is asked its
/// chat route instead.
#[tokio::test]
async fn sec_7_a_model_key_is_tried_before_it_is_kept() {
    use aiden_tests::scripted_model::{self, KEY};
    let a = admin();
    let (_model, url) = scripted_model::start().await;
    let (service, _) = model_service(&a, &url).await;
    let u = user().await;
    let name = unique("my key");
    let secrets_named = |list: &Value, n: &str| {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["name"] == n)
            .count()
    };

    let wrong = "sk-wrong-0123456789-do-not-echo";
    let refused = try_key(
        &u,
        &name,
        wrong,
        json!({"serviceId": service, "api": "openai"}),
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(refused.body["error"]["details"][0]["invariant"], "SEC-7");
    let message = refusal(&refused);
    assert!(message.contains("refused the key"), "{message}");
    assert!(message.contains("401"), "{message}");
    assert!(
        !refused.body.to_string().contains(wrong),
        "the key is never echoed"
    );
    assert!(
        !aiden_tests::server().logs().contains(wrong),
        "the key is never logged"
    );
    let list = u.get("/v1/secrets").await;
    assert_eq!(secrets_named(list.ok(200), &name), 0, "nothing saved");

    let kept = try_key(&u, &name, KEY, json!({"serviceId": service})).await;
    assert_eq!(kept.status, 201, "{}", kept.body);
    assert!(!kept.body.to_string().contains(KEY));
    let list = u.get("/v1/secrets").await;
    assert_eq!(secrets_named(list.ok(200), &name), 1);

    // A provider nobody answers at: said in words, nothing saved.
    let (gone, _) = model_service(&a, "http://127.0.0.1:9/v1").await;
    let other = unique("my key");
    let unreachable = try_key(&u, &other, KEY, json!({"serviceId": gone})).await;
    assert_eq!(unreachable.status, 422, "{}", unreachable.body);
    let message = refusal(&unreachable);
    assert!(message.contains("could not be reached"), "{message}");
    let list = u.get("/v1/secrets").await;
    assert_eq!(secrets_named(list.ok(200), &other), 0);

    // A provider without a model list: its chat route is asked with an empty request; the
    // wrong key is refused there, the right one kept.
    let bare = scripted_model::start_without_model_list().await;
    let (bare, _) = model_service(&a, &bare).await;
    let third = unique("my key");
    let wrong_there = try_key(&u, &third, wrong, json!({"serviceId": bare})).await;
    assert_eq!(wrong_there.status, 422, "{}", wrong_there.body);
    let message = refusal(&wrong_there);
    assert!(message.contains("refused the key (401"), "{message}");
    let kept_there = try_key(&u, &third, KEY, json!({"serviceId": bare})).await;
    assert_eq!(kept_there.status, 201, "{}", kept_there.body);
    let list = u.get("/v1/secrets").await;
    assert_eq!(secrets_named(list.ok(200), &third), 1);

    // A Service that does not exist is a refusal of the body (422), not a 404 of the route.
    let missing = try_key(&u, &other, KEY, json!({"serviceId": "no-such-service"})).await;
    missing.rejects(422, "SEC-7");
    let list = u.get("/v1/secrets").await;
    assert_eq!(secrets_named(list.ok(200), &other), 0);
}
