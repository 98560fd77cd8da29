//! Tools: TOOL-1..8, SEC-6 at definition time, and Tools made from a ToolTemplate.

use aiden_tests::{
    aiden_graph_query, fingerprint, fixtures, graph_rows, unique, user, Client, Reply,
};
use reqwest::Method;
use serde_json::{json, Map, Value};

/// The `path`s of the error details that name `invariant`.
fn paths(r: &Reply, invariant: &str) -> Vec<String> {
    r.body["error"]["details"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["invariant"] == invariant)
        .filter_map(|d| d["path"].as_str().map(str::to_owned))
        .collect()
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_owned()
}

/// Sends a request the rules must refuse with 422 `inv`, and checks that nothing the caller
/// owns changed in the graph.
async fn refused(u: &Client, method: Method, path: &str, body: Value, inv: &str) -> Reply {
    let before = fingerprint(&u.id).await;
    let r = u.send(method.clone(), path, Some(&body), &[]).await;
    r.rejects(422, inv);
    let after = fingerprint(&u.id).await;
    assert_eq!(before, after, "refused {method} {path} changed the graph");
    r
}

/// A create refused with 422 `inv`; the Tool's id stays unknown.
async fn refused_create(u: &Client, body: Value, inv: &str) -> Reply {
    let r = refused(u, Method::POST, "/v1/tools", body.clone(), inv).await;
    let status = u.get(&format!("/v1/tools/{}", id(&body))).await.status;
    assert_eq!(status.as_u16(), 404);
    r
}

/// A PATCH of Tool `tool` refused with 422 `inv`.
async fn refused_patch(u: &Client, tool: &str, patch: Value, inv: &str) -> Reply {
    refused(u, Method::PATCH, &format!("/v1/tools/{tool}"), patch, inv).await
}

async fn status(u: &Client, method: Method, path: &str) -> u16 {
    u.send(method, path, None, &[]).await.status.as_u16()
}

/// A Service with an open connection schema (`{}` params validate).
async fn service(u: &Client, ty: &str, protocol: &str) -> String {
    let body = json!({"id": unique("svc"), "name": ty, "type": ty, "protocol": protocol,
        "connectionSchema": {"type": "object"}, "requiresSecret": false});
    id(&fixtures::create(u, "services", body).await)
}

/// A Tool body on `service` whose inputSchema declares exactly `keys` (as strings).
fn tool_body(service: &str, operation: &Value, keys: &[&str]) -> Value {
    let props: Map<String, Value> = keys
        .iter()
        .map(|k| (k.to_string(), json!({"type": "string"})))
        .collect();
    json!({"id": unique("tool"), "name": "T", "serviceId": service, "connectionParams": {},
           "operation": operation, "inputSchema": {"type": "object", "properties": props},
           "outputSchema": {"type": "object"}})
}

/// A graph_query Tool body for `fixtures::graph_service_body` (which requires a Secret).
fn graph_tool_body(service: &str, secret: Option<&str>) -> Value {
    let op = json!({"type": "graph_query", "query": "MATCH (n) WHERE n.name = $name RETURN n"});
    let mut b = tool_body(service, &op, &["name"]);
    b["connectionParams"] = json!({"endpoint": "bolt://127.0.0.1:7687", "database": "neo4j"});
    b["secretId"] = json!(secret);
    b
}

/// `MATCH (:Tool {id})-[r:{rel}]->(x) RETURN {value} AS v`, as strings.
async fn from_tool(tool: &str, rel: &str, value: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Row {
        v: String,
    }
    let text = format!("MATCH (:Tool {{id: $id}})-[r:{rel}]->(x) RETURN {value} AS v");
    let rows: Vec<Row> = graph_rows(aiden_graph_query(&text).param("id", tool)).await;
    rows.into_iter().map(|r| r.v).collect()
}

/// TOOL-1: connectionParams validate against the Service's connectionSchema, on create and PATCH.
#[tokio::test]
async fn tool_1_connection_params_must_match_schema() {
    let u = user().await;
    let svc = fixtures::rest_service(&u, false).await;
    let mut bad = fixtures::rest_tool_body(&svc);
    bad["connectionParams"] = json!({"endpoint": 5});
    let r = refused_create(&u, bad.clone(), "TOOL-1").await;
    assert_eq!(paths(&r, "TOOL-1"), ["/connectionParams/endpoint"]);
    bad["connectionParams"] = json!({"timeoutMs": 10});
    let r = refused_create(&u, bad, "TOOL-1").await;
    assert_eq!(
        paths(&r, "TOOL-1"),
        ["/connectionParams"],
        "endpoint is required"
    );

    let created = fixtures::create(&u, "tools", fixtures::rest_tool_body(&svc)).await;
    assert_eq!(
        created["connectionParams"],
        json!({"endpoint": "http://127.0.0.1:18080"})
    );
    let tool = id(&created);
    let patch = json!({"connectionParams": {"endpoint": "http://x", "timeoutMs": "soon"}});
    let r = refused_patch(&u, &tool, patch, "TOOL-1").await;
    assert_eq!(paths(&r, "TOOL-1"), ["/connectionParams/timeoutMs"]);
    let patch = json!({"connectionParams": {"endpoint": "http://x", "timeoutMs": 5}});
    let ok = u.patch(&format!("/v1/tools/{tool}"), patch).await;
    assert_eq!(ok.ok(200)["connectionParams"]["timeoutMs"], 5);
    assert_eq!(ok.body["revision"], 2);
}

/// TOOL-2: a Service with requiresSecret needs a Tool with a Secret, on create and PATCH.
#[tokio::test]
async fn tool_2_service_requiring_a_secret_needs_one() {
    let u = user().await;
    let svc = id(&fixtures::create(&u, "services", fixtures::graph_service_body()).await);
    let r = refused_create(&u, graph_tool_body(&svc, None), "TOOL-2").await;
    assert_eq!(paths(&r, "TOOL-2"), ["/secretId"]);
    let secret = fixtures::secret(&u, "s3cr3t-value").await;
    let t = fixtures::create(&u, "tools", graph_tool_body(&svc, Some(&secret))).await;
    assert_eq!(t["secretId"], secret.as_str());
    // Removing the Secret (JSON merge-patch null) would break TOOL-2.
    refused_patch(&u, &id(&t), json!({"secretId": null}), "TOOL-2").await;
    let now = u.get(&format!("/v1/tools/{}", id(&t))).await;
    assert_eq!(now.ok(200)["secretId"], secret.as_str());
}

/// TOOL-3: another user's private Service answers like a nonexistent one; a shared one works.
#[tokio::test]
async fn tool_3_other_users_service_must_be_shared() {
    let (alice, bob) = (user().await, user().await);
    let private = fixtures::rest_service(&alice, false).await;
    let shared = fixtures::rest_service(&alice, true).await;
    let alice_before = fingerprint(&alice.id).await;
    let on_private = refused_create(&bob, fixtures::rest_tool_body(&private), "TOOL-3").await;
    let none = fixtures::rest_tool_body(&unique("svc-none"));
    let on_missing = refused_create(&bob, none, "TOOL-3").await;
    assert_eq!(
        on_private.body["error"]["details"],
        on_missing.body["error"]["details"]
    );
    assert_eq!(paths(&on_private, "TOOL-3"), ["/serviceId"]);
    assert_eq!(alice_before, fingerprint(&alice.id).await);
    let t = fixtures::create(&bob, "tools", fixtures::rest_tool_body(&shared)).await;
    assert_eq!(
        (&t["ownerId"], &t["serviceId"]),
        (&json!(bob.id), &json!(shared))
    );
}

/// TOOL-4: the operation type must fit the Service type.
#[tokio::test]
async fn tool_4_operation_type_must_match_service_type() {
    let u = user().await;
    let rest = fixtures::rest_service(&u, false).await;
    let llm = service(&u, "llm_provider", "https").await;
    let llm_op = json!({"type": "llm_call", "api": "openai", "promptTemplate": "{{content}}"});
    let mut on_rest = tool_body(&rest, &llm_op, &["content"]);
    on_rest["connectionParams"] = json!({"endpoint": "http://x"});
    let r = refused_create(&u, on_rest, "TOOL-4").await;
    assert_eq!(paths(&r, "TOOL-4"), ["/operation/type"]);
    let mut rest_on_llm = fixtures::rest_tool_body(&llm);
    rest_on_llm["connectionParams"] = json!({});
    refused_create(&u, rest_on_llm, "TOOL-4").await;
    let ok = fixtures::create(&u, "tools", tool_body(&llm, &llm_op, &["content"])).await;
    assert_eq!(ok["operation"]["type"], "llm_call");
}

/// TOOL-5: the variables an operation uses are exactly inputSchema's keys, for every operation
/// type and every place a variable may appear; a missing and an extra key are both refused.
#[tokio::test]
async fn tool_5_operation_variables_equal_input_schema_keys() {
    let u = user().await;
    let cases = [
        (
            "rest_api",
            "http",
            vec!["query", "trace", "body"],
            json!({"type": "rest_api", "method": "POST", "path": "/s?q={{query}}",
                "headers": {"X-Trace": "{{trace}}"}, "bodyTemplate": "{\"t\": \"{{body}}\"}"}),
        ),
        (
            "neo4j_graph",
            "bolt",
            vec!["name", "limit"],
            json!({"type": "graph_query", "access": "read",
                "query": "MATCH (n) WHERE n.name = $name AND n.x <> '$no' RETURN n LIMIT $limit"}),
        ),
        (
            "llm_provider",
            "https",
            vec!["persona", "instruction", "content"],
            json!({"type": "llm_call", "api": "openai", "responseFormat": "text",
                "systemPrompt": "You are {{persona}}.",
                "promptTemplate": "{{instruction}}\n\n{{json content}}"}),
        ),
        (
            "mcp_server",
            "stdio",
            vec!["query", "limit"],
            json!({"type": "mcp_call", "toolName": "search",
                "arguments": {"query": "{{query}}", "opts": {"limit": "{{limit}}", "n": 5}}}),
        ),
    ];
    let mut mcp = String::new();
    for (ty, protocol, keys, op) in cases {
        let svc = service(&u, ty, protocol).await;
        let ok = fixtures::create(&u, "tools", tool_body(&svc, &op, &keys)).await;
        assert_eq!(ok["operation"], op);
        for missing in &keys {
            let fewer: Vec<&str> = keys.iter().copied().filter(|k| k != missing).collect();
            let r = refused_create(&u, tool_body(&svc, &op, &fewer), "TOOL-5").await;
            assert_eq!(
                paths(&r, "TOOL-5"),
                ["/inputSchema/properties"],
                "{op} w/o {missing}"
            );
            let details = r.body["error"]["details"].to_string();
            assert!(details.contains(&format!("'{missing}'")), "{details}");
        }
        let more = [keys.as_slice(), &["unused"]].concat();
        let r = refused_create(&u, tool_body(&svc, &op, &more), "TOOL-5").await;
        assert_eq!(paths(&r, "TOOL-5"), ["/inputSchema/properties/unused"]);
        mcp = svc;
    }
    // On PATCH too: a new operation using an undeclared variable.
    let op = json!({"type": "mcp_call", "toolName": "s", "arguments": {"q": "{{q}}"}});
    let t = id(&fixtures::create(&u, "tools", tool_body(&mcp, &op, &["q"])).await);
    let op = json!({"type": "mcp_call", "toolName": "s", "arguments": {"q": "{{q}} {{extra}}"}});
    refused_patch(&u, &t, json!({"operation": op}), "TOOL-5").await;
}

/// TOOL-6: inputSchema and outputSchema must be valid (object) JSON Schemas.
#[tokio::test]
async fn tool_6_input_and_output_schemas_must_be_valid() {
    let u = user().await;
    let svc = fixtures::rest_service(&u, false).await;
    let props = json!({"query": {"type": "string"}});
    for (field, schema, path) in [
        (
            "inputSchema",
            json!({"type": "nope", "properties": props}),
            "/inputSchema",
        ),
        (
            "inputSchema",
            json!({"type": "object", "properties": props, "required": "query"}),
            "/inputSchema",
        ),
        (
            "outputSchema",
            json!({"type": "object", "properties": {"x": {"type": "bogus"}}}),
            "/outputSchema",
        ),
        (
            "outputSchema",
            json!({"type": "string"}),
            "/outputSchema/type",
        ),
    ] {
        let mut body = fixtures::rest_tool_body(&svc);
        body[field] = schema;
        let r = refused_create(&u, body, "TOOL-6").await;
        assert_eq!(paths(&r, "TOOL-6"), [path]);
    }
    let tool = fixtures::rest_tool(&u, &svc).await;
    refused_patch(&u, &tool, json!({"outputSchema": {"type": 7}}), "TOOL-6").await;
    let out = json!({"type": "object", "properties": {"hits": {"type": "array"}}});
    let ok = u
        .patch(&format!("/v1/tools/{tool}"), json!({"outputSchema": out}))
        .await;
    assert_eq!(ok.ok(200)["outputSchema"], out);
}

/// TOOL-7: the Service is fixed; connectionParams (on USES_SERVICE) change; USES_SECRET may be
/// moved to another Secret of the same owner.
#[tokio::test]
async fn tool_7_service_fixed_params_and_secret_may_change() {
    let u = user().await;
    let svc = fixtures::rest_service(&u, false).await;
    let other = fixtures::rest_service(&u, false).await;
    let tool = fixtures::rest_tool(&u, &svc).await;
    let path = format!("/v1/tools/{tool}");
    let r = refused_patch(&u, &tool, json!({"serviceId": other}), "TOOL-7").await;
    assert_eq!(paths(&r, "TOOL-7"), ["/serviceId"]);
    let same = u
        .patch(&path, json!({"serviceId": svc, "description": "same"}))
        .await;
    assert_eq!(
        (&same.ok(200)["serviceId"], &same.body["revision"]),
        (&json!(svc), &json!(2))
    );

    let params = || from_tool(&tool, "USES_SERVICE", "r.connectionParams");
    let parsed = |p: Vec<String>| -> Vec<Value> {
        p.iter().map(|s| serde_json::from_str(s).unwrap()).collect()
    };
    assert_eq!(
        parsed(params().await),
        [json!({"endpoint": "http://127.0.0.1:18080"})]
    );
    let patch = json!({"connectionParams": {"endpoint": "https://moved.example"}});
    assert_eq!(u.patch(&path, patch).await.ok(200)["revision"], 3);
    assert_eq!(
        parsed(params().await),
        [json!({"endpoint": "https://moved.example"})]
    );
    assert_eq!(from_tool(&tool, "USES_SERVICE", "x.id").await, [svc]);

    // USES_SECRET moves to another Secret of the owner.
    let gsvc = id(&fixtures::create(&u, "services", fixtures::graph_service_body()).await);
    let (s1, s2) = (
        fixtures::secret(&u, "one").await,
        fixtures::secret(&u, "two").await,
    );
    let gtool = id(&fixtures::create(&u, "tools", graph_tool_body(&gsvc, Some(&s1))).await);
    assert_eq!(
        from_tool(&gtool, "USES_SECRET", "x.id").await,
        std::slice::from_ref(&s1)
    );
    let r = u
        .patch(&format!("/v1/tools/{gtool}"), json!({"secretId": s2}))
        .await;
    assert_eq!(
        (&r.ok(200)["secretId"], &r.body["revision"]),
        (&json!(s2), &json!(2))
    );
    assert_eq!(from_tool(&gtool, "USES_SECRET", "x.id").await, [s2]);
    // The old Secret is no longer used (SEC-5), so it deletes.
    assert_eq!(
        status(&u, Method::DELETE, &format!("/v1/secrets/{s1}")).await,
        204
    );
}

/// TOOL-8: a Tool a ProcessStep calls cannot be deleted until the Process is gone.
#[tokio::test]
async fn tool_8_tool_called_by_a_process_step_cannot_be_deleted() {
    let u = user().await;
    let svc = fixtures::rest_service(&u, false).await;
    let tool = fixtures::rest_tool(&u, &svc).await;
    let p = id(&fixtures::create(&u, "processes", fixtures::process_body(&tool)).await);
    let path = format!("/v1/tools/{tool}");
    let before = fingerprint(&u.id).await;
    let r = u.delete(&path).await;
    r.rejects(409, "TOOL-8");
    assert_eq!(r.code(), "CONFLICT");
    assert_eq!(before, fingerprint(&u.id).await);
    u.get(&path).await.ok(200);
    assert_eq!(
        status(&u, Method::DELETE, &format!("/v1/processes/{p}")).await,
        204
    );
    assert_eq!(status(&u, Method::DELETE, &path).await, 204);
    assert_eq!(status(&u, Method::GET, &path).await, 404);
    // The Service is unused now and deletes too (SVC-5).
    assert_eq!(
        status(&u, Method::DELETE, &format!("/v1/services/{svc}")).await,
        204
    );
}

/// SEC-6: a Tool may only use its owner's Secret; another user's answers like a missing one.
#[tokio::test]
async fn sec_6_tool_may_only_use_its_owners_secret() {
    let (alice, bob) = (user().await, user().await);
    let svc = id(&fixtures::create(&alice, "services", fixtures::graph_service_body()).await);
    let bobs = fixtures::secret(&bob, "bob-only").await;
    let bob_before = fingerprint(&bob.id).await;
    let foreign = refused_create(&alice, graph_tool_body(&svc, Some(&bobs)), "SEC-6").await;
    let none = graph_tool_body(&svc, Some(&unique("sec-none")));
    let missing = refused_create(&alice, none, "SEC-6").await;
    assert_eq!(
        foreign.body["error"]["details"],
        missing.body["error"]["details"]
    );
    assert_eq!(paths(&foreign, "SEC-6"), ["/secretId"]);
    assert_eq!(bob_before, fingerprint(&bob.id).await);
    let own = fixtures::secret(&alice, "alice-own").await;
    let t = id(&fixtures::create(&alice, "tools", graph_tool_body(&svc, Some(&own))).await);
    refused_patch(&alice, &t, json!({"secretId": bobs}), "SEC-6").await;
    let now = alice.get(&format!("/v1/tools/{t}")).await;
    assert_eq!(now.ok(200)["secretId"], own.as_str());
    assert_eq!(from_tool(&t, "USES_SECRET", "x.id").await, [own]);
}

/// A Tool made from a ToolTemplate copies operation and schemas and records toolTemplateId.
#[tokio::test]
async fn tool_from_template_copies_structure_and_records_provenance() {
    let (u, other) = (user().await, user().await);
    let svc = fixtures::rest_service(&u, false).await;
    let op = json!({"type": "rest_api", "method": "GET", "path": "/find?q={{term}}"});
    let input = json!({"type": "object", "required": ["term"],
                       "properties": {"term": {"type": "string"}}});
    let output = json!({"type": "object", "properties": {"hits": {"type": "array"}}});
    let tpl = json!({"name": "Find", "operation": op, "inputSchema": input,
                     "outputSchema": output});
    let tid = id(&fixtures::create(&u, "tool-templates", tpl.clone()).await);
    let body = json!({"id": unique("tool"), "name": "From template", "serviceId": svc,
                      "toolTemplateId": tid, "connectionParams": {"endpoint": "http://x"}});
    let made = fixtures::create(&u, "tools", body.clone()).await;
    assert_eq!(made["toolTemplateId"], tid.as_str());
    assert_eq!(
        (&made["operation"]["path"], &made["operation"]["method"]),
        (&op["path"], &op["method"])
    );
    assert_eq!(
        (&made["inputSchema"], &made["outputSchema"]),
        (&input, &output)
    );
    assert_eq!(
        u.get(&format!("/v1/tools/{}", id(&body))).await.ok(200),
        &made
    );
    // Another user's private template answers like a missing one, and leaves nothing behind.
    let theirs = id(&fixtures::create(&other, "tool-templates", tpl).await);
    let before = fingerprint(&u.id).await;
    let mut replies = Vec::new();
    for template in [theirs, unique("ttpl-none")] {
        let mut b = body.clone();
        b["id"] = json!(unique("tool"));
        b["toolTemplateId"] = json!(template);
        replies.push(u.post("/v1/tools", b).await);
    }
    assert!(replies[0].status.is_client_error(), "{:?}", replies[0].body);
    assert_eq!(
        (replies[0].status, replies[0].code()),
        (replies[1].status, replies[1].code())
    );
    assert_eq!(
        replies[0].body["error"]["details"],
        replies[1].body["error"]["details"]
    );
    assert_eq!(before, fingerprint(&u.id).await);
}

/// SVC-4 for Tools: a Tool has no probe of its own, so it shows its Service's health as last
/// probed (it used to show the `degraded` it was created with forever).
#[tokio::test]
async fn svc_4_a_tool_shows_its_services_health() {
    let u = user().await;
    let mut body = fixtures::rest_service_body(false);
    body["endpoint"] = json!(aiden_tests::server().base);
    let service = fixtures::create(&u, "services", body).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let tool = fixtures::rest_tool(&u, &service).await;
    let checked = u
        .post(&format!("/v1/services/{service}/health-check"), json!({}))
        .await;
    let checked = checked.ok(200).clone();
    assert_eq!(checked["status"], "healthy", "{checked}");
    let t = u.get(&format!("/v1/tools/{tool}")).await;
    let t = t.ok(200);
    assert_eq!(t["status"], "healthy", "{t}");
    assert_eq!(t["lastHealthCheck"], checked["lastHealthCheck"]);
    let listed = u.get("/v1/tools?limit=500").await;
    let listed = listed.ok(200)["items"].as_array().unwrap().clone();
    let mine = listed.iter().find(|x| x["id"] == tool.as_str()).unwrap();
    assert_eq!(mine["status"], "healthy");
}
