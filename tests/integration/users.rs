//! Users and tokens: disabling and roles (USR-1, USR-2), token rotation and
//! revocation (USR-3), failed-authentication throttling per source (USR-4).

use std::time::{Duration, Instant};

use aiden_tests::{
    admin, graph_rows, new_user, server, unique_source, user, Client, TEST_MASTER_KEY,
};
use serde_json::{json, Value};

/// The same user, as seen from a source of its own (its 401s throttle no other test).
fn isolated(c: &Client) -> Client {
    c.clone().from_source(&unique_source())
}

fn token_of(created: &Value) -> String {
    created["token"]
        .as_str()
        .expect("token shown once")
        .to_owned()
}

/// USR-1 / USR-2: an admin disables a user (refused at once by this instance, with every
/// token), enables them again, promotes and demotes; nobody locks out the bootstrap admin or
/// themselves; plain users change nobody.
#[tokio::test]
async fn usr_1_usr_2_admins_disable_enable_and_change_roles() {
    let u = isolated(&user().await);
    let path = format!("/v1/users/{}", u.id);
    assert_eq!(u.get("/v1/me").await.ok(200)["disabled"], false);

    let disabled = admin().patch(&path, json!({"disabled": true})).await;
    assert_eq!(disabled.ok(200)["disabled"], true);
    let refused = u.get("/v1/me").await;
    assert_eq!(refused.status.as_u16(), 401, "USR-2: refused at once");
    assert_eq!(refused.code(), "UNAUTHENTICATED");
    admin()
        .patch(&path, json!({"disabled": false}))
        .await
        .ok(200);
    assert_eq!(u.get("/v1/me").await.ok(200)["id"], u.id.as_str());

    // Roles: a promoted user may create users; demoted, not any more (this instance at once).
    let body = json!({"name": "made by a promoted user", "role": "user"});
    assert_eq!(u.post("/v1/users", body.clone()).await.status.as_u16(), 403);
    assert_eq!(
        admin().patch(&path, json!({"role": "admin"})).await.ok(200)["role"],
        "admin"
    );
    u.post("/v1/users", body.clone()).await.ok(201);
    admin().patch(&path, json!({"role": "user"})).await.ok(200);
    assert_eq!(u.post("/v1/users", body).await.status.as_u16(), 403);

    // USR-1: the bootstrap admin and oneself are never locked out.
    admin()
        .patch("/v1/users/admin", json!({"disabled": true}))
        .await
        .rejects(422, "USR-1");
    admin()
        .patch("/v1/users/admin", json!({"role": "user"}))
        .await
        .rejects(422, "USR-1");
    let a2 = new_user("admin").await;
    a2.patch(&format!("/v1/users/{}", a2.id), json!({"role": "user"}))
        .await
        .rejects(422, "USR-1");
    a2.patch(&format!("/v1/users/{}", a2.id), json!({"disabled": true}))
        .await
        .rejects(422, "USR-1");
    assert_eq!(
        a2.get("/v1/me").await.ok(200)["role"],
        "admin",
        "nothing changed"
    );
    // Plain users change nobody, themselves included; bad input is a 400; unknown a 404.
    let plain = u.patch(&path, json!({"role": "admin"})).await;
    assert_eq!(plain.status.as_u16(), 403);
    assert_eq!(
        admin().patch(&path, json!({"role": "root"})).await.code(),
        "VALIDATION_ERROR"
    );
    assert_eq!(
        admin()
            .patch("/v1/users/no-such-user", json!({"disabled": true}))
            .await
            .status
            .as_u16(),
        404
    );
    // Users are invisible to each other; an admin sees anyone.
    assert_eq!(a2.get(&path).await.ok(200)["id"], u.id.as_str());
    let other = user().await;
    assert_eq!(other.get(&path).await.status.as_u16(), 404);
}

/// An API instance of its own (its own auth cache) on the test graph.
async fn another_instance(cache_ttl: Duration) -> aiden_service::App {
    let graph = aiden_graph::Graph::connect(&server().graph)
        .await
        .expect("graph");
    aiden_service::App::new(
        graph,
        aiden_service::Vault::from_base64(TEST_MASTER_KEY).unwrap(),
    )
    .with_auth_policy(&aiden_service::AuthPolicy {
        cache_ttl,
        ..Default::default()
    })
}

/// USR-2 across instances: another instance that cached the user's token refuses it within its
/// auth-cache TTL after the user is disabled here (the bound docs/operations.md states).
#[tokio::test]
async fn usr_2_another_instance_refuses_a_disabled_user_within_its_cache_ttl() {
    let u = user().await;
    let ttl = Duration::from_millis(1500);
    let other = another_instance(ttl).await;
    let caller = other.authenticate(&u.token).await.expect("graph read");
    assert_eq!(caller.expect("known token").id.as_str(), u.id);

    admin()
        .patch(&format!("/v1/users/{}", u.id), json!({"disabled": true}))
        .await
        .ok(200);
    let disabled_at = Instant::now();
    loop {
        if other
            .authenticate(&u.token)
            .await
            .expect("graph read")
            .is_none()
        {
            break;
        }
        assert!(
            disabled_at.elapsed() <= ttl + Duration::from_millis(500),
            "USR-2: still accepted {:?} after the user was disabled (TTL {ttl:?})",
            disabled_at.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A token's cache entry is filled by one graph read, however many requests carried the token
/// at once: the others wait for that read (a client with 32 requests in flight made 32 reads at
/// every expiry, issue #49).
#[tokio::test]
async fn usr_2_concurrent_requests_with_an_uncached_token_read_it_once() {
    let u = user().await;
    let app = another_instance(aiden_service::AuthPolicy::default().cache_ttl).await;
    let callers = futures::future::join_all((0..32).map(|_| app.authenticate(&u.token))).await;
    for caller in callers {
        let caller = caller.expect("graph read").expect("known token");
        assert_eq!(caller.id.as_str(), u.id);
    }
    assert_eq!(app.token_reads(), 1, "one read for 32 concurrent requests");
    let unknown = format!("{}x", u.token);
    let misses = futures::future::join_all((0..4).map(|_| app.authenticate(&unknown))).await;
    assert!(misses.into_iter().all(|m| m.expect("graph read").is_none()));
    assert_eq!(
        app.token_reads(),
        5,
        "an unknown token is not cached: each request asks the graph"
    );
}

/// USR-3: a user rotates their token (a new one, then the old revoked), lists tokens without
/// values or hashes, and revokes for good; an admin makes tokens for anyone; others see
/// nothing; the bootstrap token is re-keyed only through AIDEN_ADMIN_TOKEN.
#[tokio::test]
async fn usr_3_tokens_rotate_and_revoke_for_good() {
    let u = isolated(&user().await);
    let tokens = format!("/v1/users/{}/tokens", u.id);
    let created = u.post(&tokens, json!({"name": "ci"})).await.ok(201).clone();
    assert_eq!(created["name"], "ci");
    let fresh = Client::new(&u.id, &token_of(&created)).from_source(&unique_source());
    assert_eq!(fresh.get("/v1/me").await.ok(200)["id"], u.id.as_str());

    let listed = u.get(&tokens).await.ok(200)["items"].clone();
    let items = listed.as_array().unwrap();
    assert_eq!(items.len(), 2, "the first token and the new one: {listed}");
    for t in items {
        assert!(t.get("token").is_none() && t.get("hash").is_none(), "{t}");
        assert!(t["revokedAt"].is_null());
    }
    let first = items
        .iter()
        .find(|t| t["id"] != created["id"])
        .expect("the first token")["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Rotation: the old token revoked, the new one still works.
    let revoke = format!("{tokens}/{first}");
    assert_eq!(fresh.delete(&revoke).await.status.as_u16(), 204);
    assert_eq!(
        u.get("/v1/me").await.status.as_u16(),
        401,
        "revoked at once"
    );
    assert_eq!(fresh.get("/v1/me").await.ok(200)["id"], u.id.as_str());
    assert_eq!(
        fresh.delete(&revoke).await.status.as_u16(),
        204,
        "again: no-op"
    );
    let after = fresh.get(&tokens).await.ok(200)["items"].clone();
    let revoked = after
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == first.as_str())
        .expect("a revoked token stays listed")
        .clone();
    assert!(revoked["revokedAt"].is_string(), "{revoked}");

    // Stored only as hashes.
    #[derive(serde::Deserialize)]
    struct Row {
        hash: String,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_tests::aiden_graph_query("MATCH (t:ApiToken {userId: $id}) RETURN t.hash AS hash")
            .param("id", u.id.as_str()),
    )
    .await;
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert!(!r.hash.contains(&u.token) && !r.hash.contains(&fresh.token));
    }

    // Others: invisible. An admin: makes a token for the user.
    let other = user().await;
    assert_eq!(other.get(&tokens).await.status.as_u16(), 404);
    assert_eq!(other.post(&tokens, json!({})).await.status.as_u16(), 404);
    assert_eq!(other.delete(&revoke).await.status.as_u16(), 404);
    let by_admin = admin().post(&tokens, json!({})).await.ok(201).clone();
    let third = Client::new(&u.id, &token_of(&by_admin));
    assert_eq!(third.get("/v1/me").await.ok(200)["id"], u.id.as_str());
    admin()
        .delete("/v1/users/admin/tokens/bootstrap-admin")
        .await
        .rejects(422, "USR-3");
    assert_eq!(admin().get("/v1/me").await.ok(200)["id"], "admin");
}

/// USR-4: a source that sends too many unknown tokens gets 401 RATE_LIMITED with Retry-After
/// for its next unknown ones until its budget refills (still a 401: the token is unknown); a
/// valid token from the same source (someone else behind the same proxy) is never refused.
#[tokio::test]
async fn usr_4_failed_authentications_are_throttled_per_source() {
    let source = unique_source();
    let guesser = Client::new("guesser", "aiden_not-a-real-token").from_source(&source);
    for i in 0..20 {
        let r = guesser.get("/v1/me").await;
        assert_eq!(r.status.as_u16(), 401, "guess {i} is within the budget");
    }
    let throttled = guesser.get("/v1/me").await;
    assert_eq!(throttled.status.as_u16(), 401);
    assert_eq!(throttled.code(), "RATE_LIMITED");
    let retry: u64 = throttled
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=3).contains(&retry), "one cell back in 3 s: {retry}");
    // A valid token from the throttled source still works; the guesser is still refused.
    admin().from_source(&source).get("/v1/me").await.ok(200);
    assert_eq!(guesser.get("/v1/me").await.code(), "RATE_LIMITED");
    // Another source is untouched.
    admin()
        .from_source(&unique_source())
        .get("/v1/me")
        .await
        .ok(200);
}
