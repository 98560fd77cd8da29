//! Secrets: SEC-1..5 (never shown, encrypted at rest, owner-only, rotation, delete rules).

use std::future::Future;

use aiden_tests::{aiden_graph_query, fingerprint, fixtures, graph_rows, new_user, unique, user};
use aiden_tests::{server, Client, Reply};
use serde_json::{json, Value};

/// Runs `req` (built, not yet sent): it must be refused naming `rule`, leaving the graph as it was.
async fn refused(c: &Client, status: u16, rule: &str, req: impl Future<Output = Reply>) {
    let before = fingerprint(&c.id).await;
    req.await.rejects(status, rule);
    assert!(
        before == fingerprint(&c.id).await,
        "{rule}: a refusal changed the graph"
    );
}

/// The status and error code of a reply.
async fn code(req: impl Future<Output = Reply>) -> (u16, String) {
    let r = req.await;
    (r.status.as_u16(), r.code().to_owned())
}

/// The stored ciphertext of a Secret, read from the graph.
async fn ciphertext(id: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Row {
        enc: Option<String>,
        plain: Option<String>,
    }
    let q = "MATCH (s:Secret {id: $id}) RETURN s.encryptedValue AS enc, s.value AS plain";
    let rows: Vec<Row> = graph_rows(aiden_graph_query(q).param("id", id)).await;
    assert_eq!(rows.len(), 1, "secret {id} is stored once");
    assert!(rows[0].plain.is_none(), "a `value` property is stored");
    rows[0].enc.clone().expect("encryptedValue is stored")
}

/// Creates a Secret with `value` and returns its id.
async fn secret(c: &Client, value: &str, shared: bool) -> String {
    let body = json!({"id": unique("sec"), "name": "key", "type": "api_key", "value": value,
                      "shared": shared});
    fixtures::create(c, "secrets", body).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Every id in a listing, walking `nextCursor`.
async fn listed(c: &Client, path: &str, limit: u32) -> Vec<String> {
    let (mut ids, mut cursor) = (Vec::new(), String::new());
    loop {
        let r = c
            .get(&format!("{path}?limit={limit}&cursor={cursor}"))
            .await;
        let items = r.ok(200)["items"].as_array().unwrap();
        assert!(items.len() <= limit as usize);
        ids.extend(items.iter().map(|i| i["id"].as_str().unwrap().to_owned()));
        match r.body["nextCursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => return ids,
        }
    }
}

/// A graph_query Tool on a Service that requires a Secret, using `secret_id`.
async fn tool_using(c: &Client, secret_id: &str) -> String {
    let service = fixtures::create(c, "services", fixtures::graph_service_body()).await;
    let input = json!({"type": "object", "required": ["name"],
                       "properties": {"name": {"type": "string"}}});
    let query = "MATCH (n:Entity) WHERE n.name = $name RETURN n";
    let body = json!({"id": unique("tool"), "name": "Lookup", "serviceId": service["id"],
        "connectionParams": {"endpoint": server().graph.uri, "database": "neo4j"},
        "operation": {"type": "graph_query", "query": query, "access": "read"},
        "inputSchema": input, "outputSchema": {"type": "object"}, "secretId": secret_id});
    let tool = fixtures::create(c, "tools", body).await;
    assert_eq!(tool["secretId"], secret_id);
    tool["id"].as_str().unwrap().to_owned()
}

/// Every key anywhere in a JSON value.
fn keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| {
            out.push(k.clone());
            keys(v, out)
        }),
        Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

/// SEC-1: neither the plaintext nor the stored ciphertext appears in any response body or
/// header, nor in the server's log; responses carry metadata only.
#[tokio::test]
async fn sec_1_plaintext_and_ciphertext_never_leave_the_server() {
    let (u, other) = (user().await, user().await);
    let (p1, p2) = (unique("first-plaintext"), unique("second-plaintext"));
    let id = unique("sec");
    let path = format!("/v1/secrets/{id}");
    let body = json!({"id": id, "name": "key", "type": "api_key", "value": p1, "shared": true});
    let mut replies = vec![u.post("/v1/secrets", body.clone()).await];
    replies[0].ok(201);
    let c1 = ciphertext(&id).await;
    replies.push(u.patch(&path, json!({"value": p2})).await);
    assert_eq!(replies[1].ok(200)["id"], id.as_str());
    let c2 = ciphertext(&id).await;
    assert_ne!(c1, c2);
    replies.push(u.get(&path).await);
    replies.push(u.get("/v1/secrets?limit=500").await);
    let listed: Vec<&str> = replies[3].ok(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["id"].as_str())
        .collect();
    assert!(listed.contains(&id.as_str()));
    // Error paths that carry the value.
    let before = fingerprint(&u.id).await;
    let errors = [
        (u.patch(&path, json!({"value": p1, "bogus": p2})).await, 400),
        (u.patch(&path, json!({"value": p1, "name": ""})).await, 400),
        (u.patch(&path, json!({"value": ""})).await, 400),
        (u.post("/v1/secrets", body.clone()).await, 409),
        (
            u.post(
                "/v1/secrets",
                json!({"name": "k", "type": "x", "value": p1}),
            )
            .await,
            400,
        ),
        (other.get(&path).await, 404),
        (other.patch(&path, json!({"value": p1})).await, 404),
    ];
    for (r, status) in errors {
        assert_eq!(r.status.as_u16(), status, "{:?}", r.body);
        assert!(r.body["error"]["requestId"].is_string(), "{:?}", r.body);
        replies.push(r);
    }
    assert_eq!(
        before,
        fingerprint(&u.id).await,
        "refused requests changed the secret"
    );
    assert_eq!(c2, ciphertext(&id).await);

    let forbidden = [&p1, &p2, &c1, &c2, &c1[3..].to_owned(), &c2[3..].to_owned()];
    for r in &replies {
        let text = r.body.to_string();
        let headers = format!("{:?}", r.headers);
        for f in forbidden {
            assert!(
                !text.contains(f.as_str()),
                "a response body leaks a secret: {text}"
            );
            assert!(
                !headers.contains(f.as_str()),
                "a response header leaks a secret"
            );
        }
        let mut all = Vec::new();
        keys(&r.body, &mut all);
        assert!(
            !all.iter().any(|k| k == "value" || k == "encryptedValue"),
            "{text}"
        );
    }
    let logs = server().logs();
    assert!(
        logs.contains(&id),
        "the requests were not logged: the log check would be vacuous"
    );
    for f in forbidden {
        assert!(!logs.contains(f.as_str()), "the server log leaks a secret");
    }
}

/// SEC-2: the graph holds only authenticated ciphertext (`v1:`), bound to the Secret's id, under
/// a key the graph does not hold; rotation writes a new ciphertext.
#[tokio::test]
async fn sec_2_the_graph_holds_only_authenticated_ciphertext() {
    let u = user().await;
    let plain = unique("plaintext-at-rest");
    let id = secret(&u, &plain, false).await;
    let enc = ciphertext(&id).await;
    assert!(
        enc.starts_with("v1:") && enc.len() > 3 + plain.len(),
        "{enc}"
    );
    assert!(!enc.contains(&plain) && !enc.contains(aiden_tests::TEST_MASTER_KEY));
    #[derive(serde::Deserialize)]
    struct Count {
        n: i64,
    }
    let q = "MATCH (n) WHERE n.doc CONTAINS $p OR n.encryptedValue CONTAINS $p \
             OR n.value = $p OR n.name = $p RETURN count(n) AS n";
    let rows: Vec<Count> = graph_rows(aiden_graph_query(q).param("p", plain.as_str())).await;
    assert_eq!(rows[0].n, 0, "the plaintext is in the graph");
    // Authenticated: it opens only under the master key and only for this Secret's id.
    let vault = aiden_service::Vault::from_base64(aiden_tests::TEST_MASTER_KEY).unwrap();
    assert_eq!(vault.decrypt(&id, &enc).unwrap().as_str(), plain);
    assert!(vault.decrypt("another-secret", &enc).is_err());
    let mut tampered = enc.clone().into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    assert!(vault
        .decrypt(&id, &String::from_utf8(tampered).unwrap())
        .is_err());
    // A refused rotation leaves the ciphertext; a rotation replaces it.
    let path = format!("/v1/secrets/{id}");
    let before = fingerprint(&u.id).await;
    assert_eq!(code(u.patch(&path, json!({"value": ""}))).await.0, 400);
    assert_eq!(before, fingerprint(&u.id).await);
    let rotated = unique("rotated-plaintext");
    u.patch(&path, json!({"value": rotated})).await.ok(200);
    let enc2 = ciphertext(&id).await;
    assert!(enc2.starts_with("v1:") && enc2 != enc && !enc2.contains(&rotated));
    assert_eq!(vault.decrypt(&id, &enc2).unwrap().as_str(), rotated);
}

/// SEC-3: owner-only: another user and admins get 404 on every read and write, `shared`
/// notwithstanding, and never see it listed.
#[tokio::test]
async fn sec_3_secrets_are_owner_only_even_when_shared() {
    let (alice, bob, root) = (user().await, user().await, new_user("admin").await);
    let id = secret(&alice, &unique("alice-plaintext"), true).await;
    let path = format!("/v1/secrets/{id}");
    assert_eq!(alice.get(&path).await.ok(200)["shared"], true);
    let before = fingerprint(&alice.id).await;
    for c in [&bob, &root, &aiden_tests::admin()] {
        for r in [
            c.get(&path).await,
            c.patch(&path, json!({"name": "mine"})).await,
            c.patch(&path, json!({"value": "overwritten"})).await,
            c.delete(&path).await,
        ] {
            assert_eq!(
                (r.status.as_u16(), r.code()),
                (404, "NOT_FOUND"),
                "{:?}",
                r.body
            );
        }
        assert!(!listed(c, "/v1/secrets", 500).await.contains(&id));
    }
    assert_eq!(
        before,
        fingerprint(&alice.id).await,
        "a refused request changed the secret"
    );
    assert!(listed(&alice, "/v1/secrets", 500).await.contains(&id));
    let r = alice.patch(&path, json!({"name": "still mine"})).await;
    assert_eq!(r.ok(200)["name"], "still mine");
}

/// SEC-4: rotation replaces the value and keeps the id; it bumps the revision and sets rotatedAt.
#[tokio::test]
async fn sec_4_rotation_keeps_the_id() {
    let u = user().await;
    let id = secret(&u, &unique("before-rotation"), false).await;
    let tool = tool_using(&u, &id).await;
    let path = format!("/v1/secrets/{id}");
    let created = u.get(&path).await.ok(200).clone();
    assert_eq!(
        (created["revision"].as_i64(), created["rotatedAt"].is_null()),
        (Some(1), true)
    );
    let enc = ciphertext(&id).await;
    // A rotation that is refused (unknown field `id`, or an empty value) changes nothing.
    let before = fingerprint(&u.id).await;
    for bad in [
        json!({"id": unique("sec"), "value": "x"}),
        json!({"value": ""}),
    ] {
        assert_eq!(
            code(u.patch(&path, bad)).await,
            (400, "VALIDATION_ERROR".into())
        );
    }
    assert_eq!(before, fingerprint(&u.id).await);

    let r = u
        .patch(&path, json!({"value": unique("after-rotation")}))
        .await;
    let rotated = r.ok(200).clone();
    assert_eq!(rotated["id"], id.as_str());
    assert_eq!(rotated["revision"], 2);
    assert!(
        rotated["rotatedAt"].as_str().is_some_and(|t| t.len() >= 20),
        "{rotated}"
    );
    assert_eq!(rotated["createdAt"], created["createdAt"]);
    assert_ne!(ciphertext(&id).await, enc);
    assert_eq!(u.get(&path).await.ok(200), &rotated);
    // A rename is not a rotation: rotatedAt and the ciphertext stay.
    let enc2 = ciphertext(&id).await;
    let renamed = u
        .patch(&path, json!({"name": "renamed"}))
        .await
        .ok(200)
        .clone();
    assert_eq!(
        (renamed["revision"].as_i64(), &renamed["rotatedAt"]),
        (Some(3), &rotated["rotatedAt"])
    );
    assert_eq!(ciphertext(&id).await, enc2);
    // The Tool still uses the same Secret id.
    #[derive(serde::Deserialize)]
    struct Row {
        id: String,
    }
    let q = "MATCH (:Tool {id: $t})-[:USES_SECRET]->(s:Secret) RETURN s.id AS id";
    let rows: Vec<Row> = graph_rows(aiden_graph_query(q).param("t", tool.as_str())).await;
    assert_eq!(
        rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [id.as_str()]
    );
    assert_eq!(
        u.get(&format!("/v1/tools/{tool}")).await.ok(200)["secretId"],
        id.as_str()
    );
}

/// SEC-5: a Secret is deleted only when no Tool uses it.
#[tokio::test]
async fn sec_5_delete_only_when_no_tool_uses_it() {
    let u = user().await;
    let id = secret(&u, &unique("in-use"), false).await;
    let tool = tool_using(&u, &id).await;
    let path = format!("/v1/secrets/{id}");
    refused(&u, 409, "SEC-5", u.delete(&path)).await;
    assert_eq!(code(u.delete(&path)).await.1, "CONFLICT");
    assert_eq!(u.get(&path).await.ok(200)["id"], id.as_str());
    assert_eq!(code(u.delete(&format!("/v1/tools/{tool}"))).await.0, 204);
    assert_eq!(code(u.delete(&path)).await.0, 204);
    assert_eq!(code(u.get(&path)).await.0, 404);
    let q = "MATCH (s:Secret {id: $id}) RETURN s.id AS id";
    #[derive(serde::Deserialize)]
    struct Row {
        #[allow(dead_code)]
        id: String,
    }
    assert!(
        graph_rows::<Row>(aiden_graph_query(q).param("id", id.as_str()))
            .await
            .is_empty()
    );
    // A Secret nothing uses goes straight away.
    let unused = secret(&u, &unique("unused"), false).await;
    assert_eq!(
        code(u.delete(&format!("/v1/secrets/{unused}"))).await.0,
        204
    );
}

/// Secret listings page exactly: each of the owner's Secrets once, then `nextCursor` null.
#[tokio::test]
async fn secret_listings_page_each_item_once() {
    let u = user().await;
    let mut mine = Vec::new();
    for i in 0..5 {
        mine.push(secret(&u, &format!("{}-{i}", unique("paged")), false).await);
    }
    mine.sort();
    for limit in [1, 2, 5, 500] {
        let mut got = listed(&u, "/v1/secrets", limit).await;
        got.sort();
        assert_eq!(got, mine, "limit={limit}");
    }
}
