//! The HTTP contract: the error shape, 400/404/405/413/415, request ids, ops routes, the
//! OpenAPI document, and no 5xx (or dropped connection) for any bad body.

use aiden_tests::{admin, fingerprint, fixtures::*, unique, user, Client, Reply};
use reqwest::{header::CONTENT_TYPE, Method};
use serde_json::{json, Value};

/// Sends a raw request; `Err` when no complete HTTP answer came back.
async fn try_send(req: reqwest::RequestBuilder) -> Result<Reply, String> {
    let sent = req.try_clone().and_then(|r| r.build().ok());
    let res = req.send().await.map_err(|e| format!("no answer: {e:?}"))?;
    let (status, headers) = (res.status(), res.headers().clone());
    let text = res.text().await.map_err(|e| format!("body cut off: {e}"))?;
    if let Some(sent) = sent {
        let body = sent.body().and_then(|b| b.as_bytes());
        let (method, path) = (sent.method(), sent.url().path());
        aiden_tests::scan::record_raw_exchange(method, path, body, status.is_success(), &text);
    }
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok(Reply {
        status,
        body,
        headers,
    })
}

async fn send(req: reqwest::RequestBuilder) -> Reply {
    try_send(req).await.unwrap()
}

/// A request with a raw body labelled as JSON.
fn raw(c: &Client, m: Method, path: &str, body: String) -> reqwest::RequestBuilder {
    let json = (CONTENT_TYPE, "application/json");
    c.raw(m, path).header(json.0, json.1).body(body)
}

fn text(v: &Value) -> bool {
    v.as_str().is_some_and(|s| !s.is_empty())
}

/// What is wrong with an error reply's shape, if anything.
fn shape_problem(r: &Reply) -> Option<String> {
    let e = &r.body["error"];
    let header = r.headers.get("x-request-id").and_then(|v| v.to_str().ok());
    let ok = text(&e["code"]) && text(&e["message"]) && e["details"].is_array();
    let ok = ok && text(&e["requestId"]) && header == e["requestId"].as_str();
    (!ok).then(|| format!("{} without the error shape: {:?}", r.status, r.body))
}

#[track_caller]
fn shape(r: &Reply, status: u16, code: &str) {
    let got = (r.status.as_u16(), r.code());
    assert_eq!(got, (status, code), "{:?}", r.body);
    assert_eq!(shape_problem(r), None);
}

/// `base` with `key` set to `v`.
fn set(base: &Value, key: &str, v: Value) -> Value {
    let mut b = base.clone();
    b[key] = v;
    b
}

/// `base` without `key`.
fn unset(base: &Value, key: &str) -> Value {
    let mut b = base.clone();
    b.as_object_mut().unwrap().remove(key);
    b
}

/// (method, path, body, the field a detail's `path` must name, or "").
type Case = (Method, String, Value, &'static str);

/// Table rows, `;`-separated, each a tuple of `,`-separated cells.
macro_rules! rows {
    ($($($cell:expr),+);* $(;)?) => { vec![$(($($cell),+)),*] };
}

macro_rules! cases {
    ($($m:ident $path:expr, $body:expr => $field:expr;)*) => {
        vec![$((Method::$m, $path.to_string(), $body, $field)),*]
    };
}

/// Each case must be 400 VALIDATION_ERROR with the error shape (naming its field, if given),
/// and the caller's graph must not change.
async fn expect_400(c: &Client, cases: Vec<Case>) {
    let before = fingerprint(&c.id).await;
    let mut wrong = Vec::new();
    for (method, path, body, field) in cases {
        let r = c.send(method.clone(), &path, Some(&body), &[]).await;
        let details = r.body["error"]["details"].as_array().cloned();
        let named = field.is_empty() || details.into_iter().flatten().any(|d| d["path"] == field);
        let status = (r.status.as_u16(), r.code());
        if status != (400, "VALIDATION_ERROR") || shape_problem(&r).is_some() || !named {
            let (s, b) = (r.status, r.body);
            wrong.push(format!(
                "{method} {path} {body} (path {field:?}) -> {s} {b}"
            ));
        }
    }
    assert!(wrong.is_empty(), "not as expected:\n{}", wrong.join("\n"));
    assert!(
        before == fingerprint(&c.id).await,
        "a refusal changed the graph"
    );
}

fn template_body() -> Value {
    json!({"name": "T", "type": "rest_api", "protocol": "http",
           "connectionSchema": {"type": "object"}, "requiresSecret": false})
}

fn secret_body() -> Value {
    json!({"name": "k", "type": "api_key", "value": "v"})
}

#[tokio::test]
async fn malformed_json_is_a_validation_error() {
    let u = user().await;
    let s = rest_service(&u, false).await;
    let before = fingerprint(&u.id).await;
    let routes: Vec<(Method, String)> = rows![
        Method::POST, "/v1/services".into(); Method::PATCH, format!("/v1/services/{s}");
        Method::POST, "/v1/secrets".into();
    ];
    let bodies = r#"{"name": "x",|not json||{} trailing|{"n": "\ud800"}"#;
    for (method, path) in routes {
        for body in bodies.split('|') {
            let r = send(raw(&u, method.clone(), &path, body.into())).await;
            shape(&r, 400, "VALIDATION_ERROR");
        }
    }
    assert_eq!(before, fingerprint(&u.id).await);
}

#[tokio::test]
async fn wrong_field_types_name_the_field() {
    let u = user().await;
    let s = rest_service(&u, false).await;
    let sec = secret(&u, "v").await;
    let (svc, tool) = (rest_service_body(false), rest_tool_body(&s));
    let tpl = template_body();
    let proc = process_body("some-tool");
    expect_400(&u, cases![
        POST "/v1/services", set(&svc, "name", json!(5)) => "/name";
        POST "/v1/services", set(&svc, "enabled", json!("yes")) => "/enabled";
        POST "/v1/secrets", set(&secret_body(), "value", json!(5)) => "/value";
        POST "/v1/tools", set(&tool, "shared", json!("y")) => "/shared";
        POST "/v1/service-templates", set(&tpl, "name", json!(5)) => "/name";
        POST "/v1/processes", set(&proc, "name", json!(5)) => "/name";
        PATCH format!("/v1/services/{s}"), json!({"name": 5}) => "/name";
        PATCH format!("/v1/secrets/{sec}"), json!({"name": ["k"]}) => "/name";
        // Fields of the flattened parts of templates and processes are named too.
        POST "/v1/service-templates", set(&tpl, "requiresSecret", json!("y")) => "/requiresSecret";
        POST "/v1/processes", set(&proc, "steps", json!("x")) => "/steps";
    ])
    .await;
    let r = admin()
        .post("/v1/users", json!({"name": "x", "role": 5}))
        .await;
    shape(&r, 400, "VALIDATION_ERROR");
    assert_eq!(r.body["error"]["details"][0]["path"], "/role");
}

#[tokio::test]
async fn unknown_enums_missing_and_unknown_fields_are_validation_errors() {
    let u = user().await;
    let s = rest_service(&u, false).await;
    let (svc, tool) = (rest_service_body(false), rest_tool_body(&s));
    let tpl = template_body();
    let (sec, proc) = (secret_body(), process_body("t"));
    let op = json!({"type": "x", "method": "GET", "path": "/echo?q={{query}}"});
    let (svcs, tools, tpls) = ("/v1/services", "/v1/tools", "/v1/service-templates");
    let cases = cases![
        // Unknown enum values.
        POST svcs, set(&svc, "type", json!("nope")) => "";
        POST svcs, set(&svc, "protocol", json!("ftp")) => "";
        POST "/v1/secrets", set(&sec, "type", json!("x")) => "";
        POST tools, set(&tool, "operation", op) => "";
        POST tpls, set(&tpl, "type", json!("x")) => "";
        // Missing required fields.
        POST svcs, unset(&svc, "name") => "";
        POST svcs, unset(&svc, "type") => "";
        POST "/v1/secrets", unset(&sec, "value") => "";
        POST "/v1/secrets", unset(&sec, "type") => "";
        POST tools, unset(&tool, "serviceId") => "";
        POST tpls, unset(&tpl, "connectionSchema") => "";
        POST "/v1/processes", unset(&proc, "steps") => "";
        // Unknown fields.
        POST svcs, set(&svc, "colour", json!("red")) => "";
        POST "/v1/secrets", set(&sec, "plaintext", json!("v")) => "";
        POST tools, set(&tool, "x", json!(1)) => "";
        POST tpls, set(&tpl, "x", json!(1)) => "";
        POST "/v1/processes", set(&proc, "x", json!(1)) => "";
        PATCH format!("/v1/services/{s}"), json!({"x": 1}) => "";
    ];
    expect_400(&u, cases).await;
    for body in [json!({"name": "x", "role": "root"}), json!({"name": "x"})] {
        let r = admin().post("/v1/users", body).await;
        shape(&r, 400, "VALIDATION_ERROR");
    }
}

#[tokio::test]
async fn bodies_over_one_mib_are_413_and_smaller_ones_pass() {
    let u = user().await;
    let s = rest_service(&u, false).await;
    let big = json!("x".repeat(1024 * 1024 + 1024));
    let svc = rest_service_body(false);
    let before = fingerprint(&u.id).await;
    let cases: Vec<(Method, String, Value)> = rows![
        Method::POST, "/v1/services".into(), set(&svc, "description", big.clone());
        Method::PATCH, format!("/v1/services/{s}"), json!({"description": big});
        Method::POST, "/v1/secrets".into(), set(&secret_body(), "value", big.clone());
    ];
    for (method, path, body) in cases {
        let r = send(raw(&u, method, &path, body.to_string())).await;
        assert_eq!(r.status.as_u16(), 413, "{:?}", r.body);
        assert_eq!(shape_problem(&r), None);
    }
    assert_eq!(before, fingerprint(&u.id).await);
    let fits = json!("y".repeat(600 * 1024));
    let body = set(&rest_service_body(false), "description", fits.clone());
    assert_eq!(
        u.post("/v1/services", body).await.ok(201)["description"],
        fits
    );
}

#[tokio::test]
async fn non_json_content_types_are_refused_with_the_error_shape() {
    let u = user().await;
    let s = rest_service(&u, false).await;
    let body = rest_service_body(false).to_string();
    let before = fingerprint(&u.id).await;
    let types = [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ];
    let routes = [
        ("POST", "/v1/services".into()),
        ("PATCH", format!("/v1/services/{s}")),
    ];
    for (method, path) in routes {
        let method: Method = method.parse().unwrap();
        for ct in types {
            let mut req = u.raw(method.clone(), &path).body(body.clone());
            if let Some(ct) = ct {
                req = req.header(CONTENT_TYPE, ct);
            }
            let r = send(req).await;
            let got = (r.status, &r.body);
            assert!(r.status.is_client_error(), "{ct:?}: {got:?}");
            assert_eq!(shape_problem(&r), None, "{ct:?}");
        }
    }
    assert_eq!(before, fingerprint(&u.id).await);
}

#[tokio::test]
async fn unknown_routes_are_404_and_unsupported_methods_405() {
    let u = user().await;
    let s = rest_service(&u, false).await;
    let anon = Client::new("anon", "");
    for path in ["/v1/nope", "/nope", "/v1/services/x/y/z", "/v2/services"] {
        shape(&u.get(path).await, 404, "NOT_FOUND");
        shape(&anon.get(path).await, 404, "NOT_FOUND");
    }
    let svc = format!("/v1/services/{s}");
    let check = format!("{svc}/health-check");
    for (method, path) in [
        (Method::PUT, "/v1/services"),
        (Method::DELETE, "/v1/services"),
        (Method::PATCH, "/v1/secrets"),
        (Method::PUT, svc.as_str()),
        (Method::POST, svc.as_str()),
        (Method::GET, check.as_str()),
        (Method::DELETE, "/healthz"),
    ] {
        let r = u.send(method.clone(), path, Some(&json!({})), &[]).await;
        shape(&r, 405, "NOT_ALLOWED");
    }
    assert_eq!(u.get(&svc).await.ok(200)["id"], s.as_str());
}

#[tokio::test]
async fn request_ids_are_echoed_or_generated() {
    let (u, anon) = (user().await, Client::new("anon", ""));
    let id = unique("req");
    let header = |r: &Reply| Some(r.headers.get("x-request-id")?.to_str().ok()?.to_owned());
    let echo = [("x-request-id", id.as_str())];
    let r = u.send(Method::GET, "/v1/me", None, &echo).await;
    assert_eq!((r.status.as_u16(), header(&r)), (200, Some(id.clone())));
    let r = u.send(Method::GET, "/v1/nothing", None, &echo).await;
    shape(&r, 404, "NOT_FOUND");
    assert_eq!(r.body["error"]["requestId"], id.as_str());
    let r = anon.send(Method::GET, "/v1/me", None, &echo).await;
    shape(&r, 401, "UNAUTHENTICATED");
    assert_eq!(r.body["error"]["requestId"], id.as_str());
    // Without one, each response gets a fresh id, which its error body repeats.
    let (a, b) = (u.get("/v1/nothing").await, u.get("/v1/nothing").await);
    shape(&a, 404, "NOT_FOUND");
    assert!(header(&a).is_some_and(|h| !h.is_empty()) && header(&a) != header(&b));
    assert_eq!(header(&a).as_deref(), a.body["error"]["requestId"].as_str());
    assert!(header(&anon.get("/healthz").await).is_some_and(|h| !h.is_empty()));
}

#[tokio::test]
async fn ops_routes_answer_without_auth() {
    let anon = Client::new("anon", "");
    assert_eq!(anon.get("/healthz").await.status.as_u16(), 200);
    // Ready, and naming the engine lease's holder: this binary's engine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let r = anon.get("/readyz").await;
        let body = r.ok(200).clone();
        assert_eq!(
            (&body["graph"], &body["broker"]),
            (&json!("up"), &json!("up"))
        );
        if body["engine"]["holder"] == aiden_tests::TEST_INSTANCE_ID {
            assert!(body["engine"]["expiresAtMs"].as_i64().is_some(), "{body}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{body}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let r = anon.get("/metrics").await;
    let ct = r.headers.get(CONTENT_TYPE).unwrap().to_str().unwrap();
    assert!(
        r.status.is_success() && ct.starts_with("text/plain"),
        "{ct}"
    );
    let metrics = r.body.as_str().unwrap_or_default();
    assert!(metrics.contains("# TYPE "), "{metrics}");
    // The API reference page: from the binary, loading nothing from elsewhere.
    let r = anon.get("/docs").await;
    let ct = r.headers.get(CONTENT_TYPE).unwrap().to_str().unwrap();
    assert!(r.status.is_success() && ct.starts_with("text/html"), "{ct}");
    let csp = r.headers.get("content-security-policy").unwrap();
    let csp = csp.to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"),
        "{csp}"
    );
    assert!(r
        .body
        .as_str()
        .unwrap_or_default()
        .contains("/openapi.json"));
    // The console: its page at `/`, its files under `/ui/`, all from this origin.
    let r = anon.get("/").await;
    let ct = r.headers.get(CONTENT_TYPE).unwrap().to_str().unwrap();
    assert!(r.status.is_success() && ct.starts_with("text/html"), "{ct}");
    let page = r.body.as_str().unwrap_or_default();
    assert!(
        page.contains("/ui/app.js") && !page.contains("http"),
        "{page}"
    );
    let csp = r.headers.get("content-security-policy").unwrap();
    assert!(
        csp.to_str().unwrap().contains("script-src 'self'"),
        "{csp:?}"
    );
    let r = anon.get("/ui/app.js").await;
    let ct = r.headers.get(CONTENT_TYPE).unwrap().to_str().unwrap();
    assert!(
        r.status.is_success() && ct.starts_with("text/javascript"),
        "{ct}"
    );
    let r = anon.get("/ui/style.css").await;
    let ct = r.headers.get(CONTENT_TYPE).unwrap().to_str().unwrap();
    assert!(r.status.is_success() && ct.starts_with("text/css"), "{ct}");
    let r = anon.get("/ui/secrets.json").await;
    assert_eq!((r.status.as_u16(), r.code()), (404, "NOT_FOUND"));
}

/// The contract's routes (Users; Templates, Services, Secrets, Tools; Processes).
const CONTRACT_ROUTES: &[(&str, &[&str])] = &[
    ("/v1/users", &["post"]),
    ("/v1/me", &["get"]),
    ("/v1/service-templates", &["post", "get"]),
    ("/v1/service-templates/{id}", &["get", "patch", "delete"]),
    ("/v1/tool-templates", &["post", "get"]),
    ("/v1/tool-templates/{id}", &["get", "patch", "delete"]),
    ("/v1/services", &["post", "get"]),
    ("/v1/services/{id}", &["get", "patch", "delete"]),
    ("/v1/services/{id}/health-check", &["post"]),
    ("/v1/secrets", &["post", "get"]),
    ("/v1/secrets/{id}", &["get", "patch", "delete"]),
    ("/v1/tools", &["post", "get"]),
    ("/v1/tools/{id}", &["get", "patch", "delete"]),
    ("/v1/processes", &["post", "get"]),
    ("/v1/processes/{id}", &["get", "put", "patch", "delete"]),
    ("/v1/processes/{id}/versions", &["get"]),
];

#[tokio::test]
async fn openapi_document_lists_every_contract_route() {
    let anon = Client::new("anon", "");
    let doc = anon.get("/openapi.json").await.ok(200).clone();
    let version = doc["openapi"].as_str().unwrap_or_default();
    assert!(version.starts_with("3.1."), "{version}");
    for (path, methods) in CONTRACT_ROUTES {
        for m in *methods {
            let op = &doc["paths"][*path][*m];
            assert!(op["responses"].is_object(), "openapi.json lacks {m} {path}");
            // The server has the route too: without a token it answers 401, not 404/405.
            let real = path.replace("{id}", "some-id");
            let method = m.to_uppercase().parse().unwrap();
            let r = anon.send(method, &real, Some(&json!({})), &[]).await;
            shape(&r, 401, "UNAUTHENTICATED");
        }
    }
    for path in ["/healthz", "/readyz", "/metrics", "/openapi.json"] {
        let op = &doc["paths"][path]["get"];
        assert!(op.is_object(), "openapi.json lacks {path}");
    }
}

/// Bad values for any field: wrong types, extremes, odd strings, schema traps.
fn bad_values() -> Vec<Value> {
    let odd = json!([null, true, 0, -1, 1.5, 1e300, 18446744073709551615u64, "", "\u{0}", [], {},
        [null], {"$ref": "#/nope"}, "{{#each}}", "$x", "'; MATCH (n) DETACH DELETE n //",
        "../../etc/passwd", {"type": "object", "pattern": "(("},
        {"type": "object", "$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}]);
    let mut v = odd.as_array().unwrap().clone();
    v.push(json!("x".repeat(10_000)));
    v
}

/// No bad body on any POST/PATCH/PUT route gets a 5xx or a dropped connection; every refusal
/// has the error shape.
#[tokio::test]
async fn no_bad_body_causes_a_5xx() {
    let (u, root) = (user().await, admin());
    let svc = rest_service(&u, false).await;
    let tool = rest_tool(&u, &svc).await;
    let sec = secret(&u, "v").await;
    let id = |v: Value| v["id"].as_str().unwrap().to_owned();
    let st = id(create(&u, "service-templates", template_body()).await);
    let op = json!({"type": "rest_api", "method": "GET", "path": "/{{q}}"});
    let tt_body = json!({"name": "T", "operation": op, "outputSchema": {"type": "object"},
        "inputSchema": {"type": "object", "properties": {"q": {}}}});
    let tt = id(create(&u, "tool-templates", tt_body.clone()).await);
    let process = id(create(&u, "processes", process_body(&tool)).await);
    let meta = json!({"name": "x", "description": "d", "shared": false, "archived": false});
    let svc_patch = json!({"name": "x", "enabled": true, "connectionSchema": rest_schema(),
        "endpoint": "http://127.0.0.1:9/"});
    let tool_patch = json!({"name": "x", "enabled": true, "secretId": null,
        "connectionParams": {"endpoint": "http://127.0.0.1:9"}});
    let proc_body = unset(&process_body(&tool), "id");
    let (post, patch) = (Method::POST, Method::PATCH);
    let routes: Vec<(&Client, Method, String, Value)> = rows![
        &root, post.clone(), "/v1/users".into(), json!({"name": "x", "role": "user"});
        &u, post.clone(), "/v1/service-templates".into(), template_body();
        &u, post.clone(), "/v1/tool-templates".into(), tt_body;
        &u, post.clone(), "/v1/services".into(), unset(&rest_service_body(false), "id");
        &u, post.clone(), "/v1/secrets".into(), secret_body();
        &u, post.clone(), "/v1/tools".into(), unset(&rest_tool_body(&svc), "id");
        &u, post.clone(), "/v1/processes".into(), proc_body.clone();
        &u, post.clone(), format!("/v1/services/{svc}/health-check"), json!({});
        &u, patch.clone(), format!("/v1/service-templates/{st}"), meta.clone();
        &u, patch.clone(), format!("/v1/tool-templates/{tt}"), meta;
        &u, patch.clone(), format!("/v1/services/{svc}"), svc_patch;
        &u, patch.clone(), format!("/v1/secrets/{sec}"), json!({"name": "x", "value": "v"});
        &u, patch.clone(), format!("/v1/tools/{tool}"), tool_patch;
        &u, patch.clone(), format!("/v1/processes/{process}"), proc_body.clone();
        &u, Method::PUT, format!("/v1/processes/{process}"), proc_body;
    ];
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let odd = r#"|{|null|[]|0|"s"|{"a":}|{"name":1e999}|{"name":"a","name":"b"}"#;
    let mut raw_bodies: Vec<String> = odd.split('|').map(str::to_owned).collect();
    raw_bodies.extend(["\u{feff}{}".to_owned(), deep]);
    let (mut failures, mut sent) = (Vec::new(), 0);
    for (c, method, path, valid) in &routes {
        let mut bodies = raw_bodies.clone();
        for key in valid.as_object().unwrap().keys() {
            bodies.push(unset(valid, key).to_string());
            let bad = bad_values().into_iter().map(|v| set(valid, key, v));
            bodies.extend(bad.map(|b| b.to_string()));
        }
        for body in bodies {
            sent += 1;
            let problem = match try_send(raw(c, method.clone(), path, body.clone())).await {
                Err(e) => Some(e),
                Ok(r) if r.status.is_server_error() => Some(format!("{} {}", r.status, r.body)),
                Ok(r) if !r.status.is_success() => shape_problem(&r),
                Ok(_) => None,
            };
            if let Some(p) = problem {
                let cut: String = body.chars().take(160).collect();
                failures.push(format!("{method} {path} {cut} -> {p}"));
            }
        }
    }
    // An unknown `$schema` in a schema field (sent where it is checked before any transaction).
    let unknown = json!({"type": "object", "$schema": "http://nope/"});
    for (i, key) in [
        (1, "connectionSchema"),
        (2, "inputSchema"),
        (2, "outputSchema"),
    ] {
        let (_, _, path, valid) = &routes[i];
        let body = set(valid, key, unknown.clone()).to_string();
        sent += 1;
        let outcome = match try_send(raw(&u, Method::POST, path, body)).await {
            Ok(r) if r.status.is_client_error() => shape_problem(&r),
            Ok(r) => Some(format!("{} {}", r.status, r.body)),
            Err(e) => Some(e),
        };
        if let Some(p) = outcome {
            failures.push(format!("POST {path} {key} with $schema -> {p}"));
        }
    }
    assert!(sent > 1000, "only {sent} requests");
    let (n, all) = (failures.len(), failures.join("\n"));
    assert!(n == 0, "{n} of {sent} bad bodies were mishandled:\n{all}");
}

/// Every documented operation answers the statuses its shape implies, each in the error shape
/// and each one the document lists for it: 401 without a token; 404 for an id that names
/// nothing (operations without a body); 400 for a `limit` that is not a number; and for an
/// operation with a body, 415 (not JSON), 413 (over the limit) and 400 (not an object). The
/// status coverage report (scripts/status-coverage.py) counts these.
#[tokio::test]
async fn every_operation_answers_the_statuses_its_shape_documents() {
    let doc = aiden_api::openapi_document();
    let a = admin();
    let anonymous = Client::new("anonymous", "");
    let big = "x".repeat(aiden_api::BODY_LIMIT + 1);
    let mut sent = 0;
    for (path, ops) in doc["paths"].as_object().unwrap() {
        let concrete: String = path
            .split('/')
            .map(|seg| match seg.starts_with('{') {
                true => unique("absent"),
                false => seg.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("/");
        for (method, op) in ops.as_object().unwrap() {
            let m: Method = method.to_uppercase().parse().unwrap();
            let documented: Vec<&String> = op["responses"].as_object().unwrap().keys().collect();
            let label = format!("{method} {path}");
            let has_body = op.get("requestBody").is_some();
            let mut cases: Vec<(&str, reqwest::RequestBuilder)> = Vec::new();
            if op["security"].as_array().is_some_and(|s| !s.is_empty()) {
                cases.push(("401", anonymous.raw(m.clone(), &concrete)));
            }
            if path.contains('{') && !has_body {
                cases.push(("404", a.raw(m.clone(), &concrete)));
            }
            let paged = op["parameters"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["name"] == "limit"));
            if paged {
                let q = format!("{concrete}?limit=many");
                cases.push(("400", a.raw(m.clone(), &q)));
            }
            if has_body {
                let text = a
                    .raw(m.clone(), &concrete)
                    .header(CONTENT_TYPE, "text/plain");
                cases.push(("415", text.body("{}")));
                cases.push(("413", raw(&a, m.clone(), &concrete, big.clone())));
                cases.push(("400", raw(&a, m.clone(), &concrete, "[]".into())));
            }
            for (want, req) in cases {
                let r = send(req).await;
                assert_eq!(r.status.as_str(), want, "{label}: {:?}", r.body);
                assert_eq!(shape_problem(&r), None, "{label} {want}");
                assert!(
                    documented.iter().any(|s| s.as_str() == want),
                    "{label} answers {want}, which its document does not list"
                );
                sent += 1;
            }
        }
    }
    assert!(sent > 150, "only {sent} requests: is the document empty?");
}
