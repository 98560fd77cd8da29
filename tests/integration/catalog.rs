//! Services and Templates: SVC-1..6, TPL-1..3, and list paging (`?limit=`, `nextCursor`).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use aiden_tests::{fingerprint, fixtures::*, unique, user, Client, Reply};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Runs `req` (built, not yet sent): it must be refused naming `rule`, leaving the graph as it was.
async fn refused(c: &Client, status: u16, rule: &str, req: impl Future<Output = Reply>) {
    let before = fingerprint(&c.id).await;
    req.await.rejects(status, rule);
    let after = fingerprint(&c.id).await;
    assert!(before == after, "{rule}: a refusal left a trace");
}

/// The status of a reply.
async fn status(req: impl Future<Output = Reply>) -> u16 {
    req.await.status.as_u16()
}

/// The status and error code of a reply.
async fn code(req: impl Future<Output = Reply>) -> (u16, String) {
    let r = req.await;
    (r.status.as_u16(), r.code().to_owned())
}

/// The body of a reply that must have `status`.
async fn ok(req: impl Future<Output = Reply>, status: u16) -> Value {
    req.await.ok(status).clone()
}

/// A non-empty string.
fn text(v: &Value) -> bool {
    v.as_str().is_some_and(|s| !s.is_empty())
}

const BAD: (u16, &str) = (400, "VALIDATION_ERROR");

fn id_of(v: &Value) -> String {
    v["id"].as_str().expect("id").to_owned()
}

fn svc(ty: &str, protocol: &str) -> Value {
    json!({"id": unique("svc"), "name": "S", "type": ty, "protocol": protocol,
           "connectionSchema": {"type": "object"}, "requiresSecret": false})
}

fn service_template_body(shared: bool) -> Value {
    let schema = json!({"type": "object", "required": ["baseUrl"],
                        "properties": {"baseUrl": {"type": "string"}}});
    json!({"id": unique("stpl"), "name": "LLM", "description": "d", "type": "llm_provider",
           "protocol": "https", "connectionSchema": schema, "requiresSecret": true,
           "shared": shared})
}

fn tool_template_body(shared: bool) -> Value {
    let input = json!({"type": "object", "required": ["query"],
                       "properties": {"query": {"type": "string"}}});
    json!({"id": unique("ttpl"), "name": "Search", "description": "d",
           "operation": {"type": "rest_api", "method": "GET", "path": "/echo?q={{query}}"},
           "inputSchema": input, "outputSchema": {"type": "object"}, "shared": shared})
}

/// One page of a listing: its ids and `nextCursor`.
async fn page(c: &Client, path: &str, limit: u32, cursor: &str) -> (Vec<String>, Option<String>) {
    let sep = if path.contains('?') { '&' } else { '?' };
    let url = format!("{path}{sep}limit={limit}&cursor={cursor}");
    let r = ok(c.get(&url), 200).await;
    let next = r["nextCursor"].as_str().map(str::to_owned);
    (
        r["items"].as_array().unwrap().iter().map(id_of).collect(),
        next,
    )
}

/// Every id a listing shows, walking `nextCursor` to the end.
async fn listed(c: &Client, path: &str) -> Vec<String> {
    let (mut ids, mut cursor) = (Vec::new(), String::new());
    loop {
        let (items, next) = page(c, path, 500, &cursor).await;
        ids.extend(items);
        match next {
            Some(next) => cursor = next,
            None => return ids,
        }
    }
}

/// SVC-1: `type` and `protocol` must match; one allowed and one refused pair per type family.
#[tokio::test]
async fn svc_1_type_and_protocol_must_match() {
    let u = user().await;
    for (ty, good, bad) in [
        ("neo4j_graph", "bolt", "http"),
        ("neo4j_graph", "bolt+s", "https"),
        ("rest_api", "https", "bolt"),
        ("llm_provider", "http", "stdio"),
        ("mcp_server", "stdio", "bolt"),
        ("mcp_server", "sse", "bolt+s"),
    ] {
        let made = create(&u, "services", svc(ty, good)).await;
        assert_eq!(made["type"], ty);
        assert_eq!(made["protocol"], good);
        let body = svc(ty, bad);
        let path = format!("/v1/services/{}", id_of(&body));
        refused(&u, 422, "SVC-1", u.post("/v1/services", body)).await;
        assert_eq!(status(u.get(&path)).await, 404, "nothing was created");
    }
    // ServiceTemplates carry the same structure, so the same rule.
    let mut t = service_template_body(false);
    t["protocol"] = json!("bolt");
    refused(&u, 422, "SVC-1", u.post("/v1/service-templates", t)).await;
}

/// SVC-2: `connectionSchema` is a valid JSON Schema (meta-schema) describing an object.
#[tokio::test]
async fn svc_2_connection_schema_must_be_a_valid_object_schema() {
    let u = user().await;
    let s = create(&u, "services", rest_service_body(false)).await;
    assert_eq!(s["connectionSchema"], rest_schema());
    let path = format!("/v1/services/{}", id_of(&s));
    for bad in [
        json!({"type": "nope"}),
        json!({"type": "string"}),
        json!({"type": "object", "required": "endpoint"}),
        json!([1]),
    ] {
        let mut body = rest_service_body(false);
        body["connectionSchema"] = bad.clone();
        refused(&u, 422, "SVC-2", u.post("/v1/services", body)).await;
        let patch = json!({"connectionSchema": bad});
        refused(&u, 422, "SVC-2", u.patch(&path, patch)).await;
        let mut t = service_template_body(false);
        t["connectionSchema"] = bad;
        refused(&u, 422, "SVC-2", u.post("/v1/service-templates", t)).await;
    }
    assert_eq!(u.get(&path).await.ok(200), &s);
}

/// SVC-3: type, protocol, requiresSecret, serviceTemplateId are immutable (the same value is a
/// no-op); a new connectionSchema bumps schemaVersion and leaves non-fitting Tools in place.
#[tokio::test]
async fn svc_3_structural_fields_are_immutable() {
    let u = user().await;
    let s = create(&u, "services", rest_service_body(false)).await;
    let path = format!("/v1/services/{}", id_of(&s));
    for change in [
        json!({"type": "llm_provider"}),
        json!({"protocol": "https"}),
        json!({"requiresSecret": true}),
        json!({"serviceTemplateId": unique("stpl")}),
        json!({"name": "renamed too", "protocol": "https"}),
    ] {
        refused(&u, 422, "SVC-3", u.patch(&path, change)).await;
    }
    let before = fingerprint(&u.id).await;
    let same = json!({"type": "rest_api", "protocol": "http", "requiresSecret": false});
    assert_eq!(ok(u.patch(&path, same), 200).await, s, "a no-op");
    assert_eq!(before, fingerprint(&u.id).await);
    // From a template, the provenance id may be repeated but not changed.
    let t = id_of(&create(&u, "service-templates", service_template_body(false)).await);
    let from_t = create(&u, "services", json!({"name": "T", "serviceTemplateId": t})).await;
    let tpath = format!("/v1/services/{}", id_of(&from_t));
    let same = json!({"serviceTemplateId": t});
    assert_eq!(u.patch(&tpath, same).await.ok(200), &from_t);
    let other = json!({"serviceTemplateId": id_of(&s)});
    refused(&u, 422, "SVC-3", u.patch(&tpath, other)).await;

    // A new connectionSchema: schemaVersion + 1; the Tool that no longer fits still exists.
    let tool = format!("/v1/tools/{}", rest_tool(&u, &id_of(&s)).await);
    let tool_before = u.get(&tool).await.ok(200).clone();
    let stricter = json!({"type": "object", "required": ["endpoint", "region"],
        "properties": {"endpoint": {"type": "string"}, "region": {"type": "string"}}});
    let r = ok(u.patch(&path, json!({"connectionSchema": stricter})), 200).await;
    assert_eq!(r["schemaVersion"], 2);
    assert_eq!(r["revision"], 2);
    assert_eq!(r["connectionSchema"], stricter);
    let again = ok(u.patch(&path, json!({"connectionSchema": stricter})), 200).await;
    assert_eq!(again["schemaVersion"], 2, "same schema, same version");
    assert_eq!(u.get(&tool).await.ok(200), &tool_before);
    // ...and any change to that Tool must now fit the new schema.
    refused(&u, 422, "TOOL-1", u.patch(&tool, json!({"name": "x"}))).await;
    // Repair, so the suite leaves the graph clean for `aiden check` (which reports such Tools).
    let fixed = json!({"connectionParams": {"endpoint": "http://127.0.0.1:18080", "region": "eu"}});
    ok(u.patch(&tool, fixed), 200).await;
}

/// A local HTTP server answering 200 to everything; counts the connections it accepted.
async fn http_ok_server() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counter.fetch_add(1, SeqCst);
            tokio::spawn(async move {
                let _ = stream.read(&mut [0u8; 4096]).await;
                let ok = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
                let _ = stream.write_all(ok.as_bytes()).await;
            });
        }
    });
    (port, hits)
}

/// Creates a Service from `body` with `endpoint` and runs a health check on it.
async fn probed(u: &Client, mut body: Value, endpoint: &str) -> Value {
    body["endpoint"] = json!(endpoint);
    let s = create(u, "services", body).await;
    let check = format!("/v1/services/{}/health-check", id_of(&s));
    ok(u.post(&check, json!({})), 200).await
}

/// SVC-4: a disabled Service is never healthy: disabling sets down, a probe cannot lift it.
#[tokio::test]
async fn svc_4_a_disabled_service_is_never_healthy() {
    let u = user().await;
    let (port, hits) = http_ok_server().await;
    let endpoint = format!("http://127.0.0.1:{port}/h");
    let s = probed(&u, rest_service_body(false), &endpoint).await;
    assert_eq!(s["status"], "healthy", "{s}");
    assert!(text(&s["lastHealthCheck"]), "{s}");
    assert!(s["errorMessage"].is_null(), "{s}");
    assert!(hits.load(SeqCst) >= 1, "the probe never came");
    let path = format!("/v1/services/{}", id_of(&s));
    let check = format!("{path}/health-check");

    let r = ok(u.patch(&path, json!({"enabled": false})), 200).await;
    assert_eq!(r["status"], "down");
    assert_eq!(r["enabled"], false);
    let r = ok(u.post(&check, json!({})), 200).await;
    assert_eq!(r["status"], "down", "a disabled Service stays down");
    assert!(text(&r["errorMessage"]));
    // Status is not writable: a PATCH that tries is refused and changes nothing.
    let before = fingerprint(&u.id).await;
    let r = code(u.patch(&path, json!({"status": "healthy"}))).await;
    assert_eq!((r.0, r.1.as_str()), BAD);
    assert_eq!(before, fingerprint(&u.id).await);
    // Re-enabling does not make it healthy by itself; only a probe does.
    let r = ok(u.patch(&path, json!({"enabled": true})), 200).await;
    assert_eq!(r["status"], "down");
    assert_eq!(u.post(&check, json!({})).await.ok(200)["status"], "healthy");

    // A closed port: down, with the reason.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = closed.local_addr().unwrap();
    let s = probed(&u, rest_service_body(false), &format!("http://{closed}/")).await;
    assert_eq!(s["status"], "down");
    assert!(text(&s["errorMessage"]), "{s}");
    // A real Bolt handshake against the stack's graph server.
    let s = probed(&u, graph_service_body(), &aiden_tests::server().graph.uri).await;
    assert_eq!(s["status"], "healthy", "{s}");
}

/// SVC-5: a Service is deleted only when no Tool uses it.
#[tokio::test]
async fn svc_5_delete_only_when_no_tool_uses_it() {
    let u = user().await;
    let s = rest_service(&u, false).await;
    let tool = rest_tool(&u, &s).await;
    let path = format!("/v1/services/{s}");
    refused(&u, 409, "SVC-5", u.delete(&path)).await;
    assert_eq!(u.get(&path).await.ok(200)["id"], s.as_str());
    assert_eq!(status(u.delete(&format!("/v1/tools/{tool}"))).await, 204);
    assert_eq!(status(u.delete(&path)).await, 204);
    assert_eq!(status(u.get(&path)).await, 404);
}

/// SVC-6: a Service from a template copies its structure and records provenance; template
/// edits, archival and deletion never change it.
#[tokio::test]
async fn svc_6_services_from_templates_copy_structure() {
    let (u, other) = (user().await, user().await);
    let t = create(&u, "service-templates", service_template_body(false)).await;
    let tid = id_of(&t);
    let body = json!({"name": "Mine", "serviceTemplateId": tid, "shared": true});
    let s = create(&u, "services", body).await;
    for field in ["type", "protocol", "connectionSchema", "requiresSecret"] {
        assert_eq!(s[field], t[field], "{field} is copied");
    }
    assert_eq!(s["serviceTemplateId"], tid.as_str());
    // Structure beside a template id is refused; so is a template the caller cannot see.
    for (k, v) in [
        ("type", json!("mcp_server")),
        ("connectionSchema", json!({})),
    ] {
        let mut both = json!({"name": "Both", "serviceTemplateId": tid});
        both[k] = v;
        refused(&u, 422, "SVC-6", u.post("/v1/services", both)).await;
    }
    let theirs = json!({"name": "Theirs", "serviceTemplateId": tid});
    let req = other.post("/v1/services", theirs.clone());
    refused(&other, 422, "SVC-6", req).await;
    let absent = json!({"name": "None", "serviceTemplateId": unique("stpl")});
    refused(&u, 422, "SVC-6", u.post("/v1/services", absent)).await;
    // Once shared, the other user may instantiate it too.
    let tpath = format!("/v1/service-templates/{tid}");
    u.patch(&tpath, json!({"shared": true})).await.ok(200);
    let s2 = create(&other, "services", theirs).await;
    assert_eq!(s2["serviceTemplateId"], tid.as_str());
    // Template edits, archival and deletion leave the Service exactly as it was.
    let spath = format!("/v1/services/{}", id_of(&s));
    let rename = json!({"name": "Renamed", "description": "new"});
    u.patch(&tpath, rename).await.ok(200);
    assert_eq!(u.get(&spath).await.ok(200), &s);
    u.patch(&tpath, json!({"archived": true})).await.ok(200);
    assert_eq!(u.get(&spath).await.ok(200), &s);
    assert_eq!(status(u.delete(&tpath)).await, 204);
    assert_eq!(u.get(&spath).await.ok(200), &s);
}

/// TPL-1: template structure is immutable; name, description, shared, archived change.
#[tokio::test]
async fn tpl_1_template_structure_is_immutable() {
    let u = user().await;
    let st = create(&u, "service-templates", service_template_body(false)).await;
    let tt_body = tool_template_body(false);
    let tt = create(&u, "tool-templates", tt_body.clone()).await;
    let spath = format!("/v1/service-templates/{}", id_of(&st));
    let tpath = format!("/v1/tool-templates/{}", id_of(&tt));
    for change in [
        json!({"type": "rest_api"}),
        json!({"protocol": "http"}),
        json!({"connectionSchema": {"type": "object"}}),
        json!({"requiresSecret": false}),
        json!({"name": "also renamed", "type": "mcp_server"}),
    ] {
        refused(&u, 422, "TPL-1", u.patch(&spath, change)).await;
    }
    let post = json!({"type": "rest_api", "method": "POST", "path": "/echo?q={{query}}"});
    let int = json!({"type": "object", "properties": {"query": {"type": "integer"}}});
    for change in [
        json!({"operation": post}),
        json!({"inputSchema": int}),
        json!({"outputSchema": {"type": "object", "required": ["x"]}}),
        json!({"name": "also renamed", "outputSchema": {"type": "object", "title": "t"}}),
    ] {
        refused(&u, 422, "TPL-1", u.patch(&tpath, change)).await;
    }
    assert_eq!(u.get(&spath).await.ok(200), &st);
    assert_eq!(u.get(&tpath).await.ok(200), &tt);
    let same = json!({"type": st["type"], "protocol": st["protocol"],
        "connectionSchema": st["connectionSchema"], "requiresSecret": st["requiresSecret"]});
    assert_eq!(ok(u.patch(&spath, same), 200).await, st, "a no-op");
    for (path, original) in [(&spath, &st), (&tpath, &tt)] {
        let mut rev = original["revision"].as_i64().unwrap();
        for change in [
            json!({"name": "renamed"}),
            json!({"description": "new"}),
            json!({"shared": true}),
            json!({"archived": true}),
        ] {
            let r = u.patch(path, change.clone()).await;
            rev += 1;
            assert_eq!(r.ok(200)["revision"], rev, "{change}");
            let (k, v) = change.as_object().unwrap().iter().next().unwrap();
            assert_eq!(&r.body[k], v);
        }
    }
    // Re-sending a ToolTemplate's structure exactly as it was created (as `aiden apply` does
    // with an unchanged file) is a no-op, not a TPL-1 violation.
    let same = json!({"operation": tt_body["operation"], "inputSchema": tt_body["inputSchema"],
                      "outputSchema": tt_body["outputSchema"]});
    let r = u.patch(&tpath, same).await;
    assert_eq!(r.ok(200)["revision"], tt["revision"].as_i64().unwrap() + 4);
}

/// TPL-2: archived templates leave listings unless `?includeArchived=true`, and stay readable.
#[tokio::test]
async fn tpl_2_archived_templates_are_left_out_of_listings() {
    let u = user().await;
    let kinds = [
        ("service-templates", service_template_body(false)),
        ("tool-templates", tool_template_body(false)),
    ];
    for (kind, body) in kinds {
        let kept = id_of(&create(&u, kind, body.clone()).await);
        let mut other = body;
        other["id"] = json!(unique("tpl"));
        let archived = id_of(&create(&u, kind, other).await);
        let (list, path) = (format!("/v1/{kind}"), format!("/v1/{kind}/{archived}"));
        assert!(listed(&u, &list).await.contains(&archived));
        let r = ok(u.patch(&path, json!({"archived": true})), 200).await;
        assert_eq!(r["archived"], true);
        let default = listed(&u, &list).await;
        assert!(default.contains(&kept) && !default.contains(&archived));
        let all = listed(&u, &format!("{list}?includeArchived=true")).await;
        assert!(all.contains(&kept) && all.contains(&archived), "{kind}");
        assert_eq!(ok(u.get(&path), 200).await["archived"], true, "readable");
        let r = code(u.get(&format!("{list}?includeArchived=maybe"))).await;
        assert_eq!((r.0, r.1.as_str()), BAD);
        u.patch(&path, json!({"archived": false})).await.ok(200);
        assert!(listed(&u, &list).await.contains(&archived), "listed again");
    }
}

/// TPL-3: a template with instances may be deleted (by its owner only); the instances keep
/// working and keep their provenance id.
#[tokio::test]
async fn tpl_3_deleting_a_template_keeps_its_instances() {
    let (u, other) = (user().await, user().await);
    let st = id_of(&create(&u, "service-templates", service_template_body(true)).await);
    let tt = id_of(&create(&u, "tool-templates", tool_template_body(true)).await);
    let service = json!({"name": "S", "serviceTemplateId": st});
    let service = create(&u, "services", service).await;
    let tool = json!({"name": "T", "serviceId": rest_service(&u, false).await,
        "toolTemplateId": tt, "connectionParams": {"endpoint": "http://127.0.0.1:18080"}});
    let tool = create(&u, "tools", tool).await;
    for path in [
        format!("/v1/service-templates/{st}"),
        format!("/v1/tool-templates/{tt}"),
    ] {
        let before = fingerprint(&u.id).await;
        let r = code(other.delete(&path)).await;
        assert_eq!((r.0, r.1.as_str()), (403, "FORBIDDEN"));
        assert_eq!(before, fingerprint(&u.id).await);
        assert_eq!(status(u.delete(&path)).await, 204);
        assert_eq!(status(u.get(&path)).await, 404);
    }
    let spath = format!("/v1/services/{}", id_of(&service));
    assert_eq!(u.get(&spath).await.ok(200), &service);
    assert_eq!(service["serviceTemplateId"], st.as_str());
    let tpath = format!("/v1/tools/{}", id_of(&tool));
    assert_eq!(u.get(&tpath).await.ok(200), &tool);
    assert_eq!(tool["toolTemplateId"], tt.as_str());
    // They keep working: both still accept changes.
    let r = u.patch(&spath, json!({"name": "S2"})).await;
    assert_eq!(r.ok(200)["serviceTemplateId"], st.as_str());
    let r = u.patch(&tpath, json!({"name": "T2"})).await;
    assert_eq!(r.ok(200)["toolTemplateId"], tt.as_str());
}

/// Lists: `?limit=` pages linked by `nextCursor` show every item exactly once; a limit outside
/// 1..=500 is 400 VALIDATION_ERROR.
#[tokio::test]
async fn listings_page_every_item_exactly_once() {
    let u = user().await;
    // Private, and with ids that sort early, so they lead this user's listing.
    let batch = unique("00-page");
    let mut mine = Vec::new();
    for i in 0..7 {
        let mut body = rest_service_body(false);
        body["id"] = json!(format!("{batch}-{i}"));
        mine.push(id_of(&create(&u, "services", body).await));
    }
    let (mut seen, mut cursor, mut pages) = (Vec::<String>::new(), String::new(), 0);
    while !mine.iter().all(|m| seen.contains(m)) {
        let (items, next) = page(&u, "/v1/services", 3, &cursor).await;
        assert!(!items.is_empty() && items.len() <= 3, "{items:?}");
        seen.extend(items);
        pages += 1;
        assert!(pages < 2000, "paging never reached every item");
        match next {
            Some(next) => cursor = next,
            None => break,
        }
    }
    assert!(pages >= 3, "7 items at limit=3 take at least 3 pages");
    let mut dedup = seen.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), seen.len(), "an item appeared on two pages");
    // The whole listing ends (nextCursor null) and holds each of them once.
    let all = listed(&u, "/v1/services").await;
    for m in &mine {
        assert_eq!(seen.iter().filter(|s| *s == m).count(), 1, "{m} at limit=3");
        assert_eq!(all.iter().filter(|s| *s == m).count(), 1, "{m}");
    }
    assert_eq!(page(&u, "/v1/services", 1, "").await.0.len(), 1);
    for kind in ["services", "service-templates", "tool-templates"] {
        for bad in ["0", "501", "-1", "abc"] {
            let r = u.get(&format!("/v1/{kind}?limit={bad}")).await;
            assert_eq!((r.status.as_u16(), r.code()), BAD, "limit={bad}");
            assert!(text(&r.body["error"]["requestId"]));
        }
        u.get(&format!("/v1/{kind}?limit=500")).await.ok(200);
    }
}
