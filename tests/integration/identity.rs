//! Users, tokens, OWN-1..3.

use aiden_tests::{admin, fixtures, graph_rows, new_user, user, Client};
use serde_json::json;

#[tokio::test]
async fn users_are_created_by_admins_and_tokens_authenticate() {
    let u = user().await;
    let me = u.get("/v1/me").await;
    assert_eq!(me.ok(200)["id"], u.id.as_str());
    assert_eq!(me.body["role"], "user");
    assert!(
        me.body.get("token").is_none(),
        "the token is shown only once"
    );
    // A plain user cannot create users.
    let r = u
        .post("/v1/users", json!({"name": "x", "role": "user"}))
        .await;
    assert_eq!(r.status.as_u16(), 403);
    assert_eq!(r.code(), "FORBIDDEN");
    // Unknown and missing tokens are 401 with the error shape.
    let r = Client::new("nobody", "not-a-token").get("/v1/me").await;
    assert_eq!(r.status.as_u16(), 401);
    assert_eq!(r.code(), "UNAUTHENTICATED");
    let r = Client::new("nobody", "").get("/v1/me").await;
    assert_eq!(r.status.as_u16(), 401);
}

/// OWN-1: one OWNED_BY edge to the creator, set from the caller, never changing.
#[tokio::test]
async fn own_1_owner_is_the_caller_and_has_one_owned_by_edge() {
    let u = user().await;
    let mut body = fixtures::rest_service_body(false);
    body["ownerId"] = json!("someone-else");
    // An ownerId in the body is not a field of the create body: rejected, not obeyed.
    assert_eq!(
        u.post("/v1/services", body.clone()).await.status.as_u16(),
        400
    );
    body.as_object_mut().unwrap().remove("ownerId");
    let s = u.post("/v1/services", body).await;
    assert_eq!(s.ok(201)["ownerId"], u.id.as_str());
    #[derive(serde::Deserialize)]
    struct Row {
        owners: i64,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_tests::aiden_graph_query(
            "MATCH (s:Service {id: $id})-[:OWNED_BY]->(u:User {id: $u}) RETURN count(u) AS owners",
        )
        .param("id", s.body["id"].as_str().unwrap())
        .param("u", u.id.as_str()),
    )
    .await;
    assert_eq!(rows[0].owners, 1);
}

/// OWN-2: invisible answers 404 (never 403); shared is visible; admins read everything.
#[tokio::test]
async fn own_2_invisible_resources_answer_404() {
    let (alice, bob) = (user().await, user().await);
    let private = fixtures::rest_service(&alice, false).await;
    let shared = fixtures::rest_service(&alice, true).await;
    let r = bob.get(&format!("/v1/services/{private}")).await;
    assert_eq!(r.status.as_u16(), 404);
    assert_eq!(r.code(), "NOT_FOUND");
    assert_eq!(
        bob.patch(&format!("/v1/services/{private}"), json!({"name": "x"}))
            .await
            .status
            .as_u16(),
        404
    );
    assert_eq!(
        bob.delete(&format!("/v1/services/{private}"))
            .await
            .status
            .as_u16(),
        404
    );
    bob.get(&format!("/v1/services/{shared}")).await.ok(200);
    // Listings follow the same rule.
    let list = bob.get("/v1/services?limit=500").await;
    let ids: Vec<&str> = list.ok(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["id"].as_str())
        .collect();
    assert!(ids.contains(&shared.as_str()));
    assert!(!ids.contains(&private.as_str()));
    // Admins read everything (but still do not own it).
    let root = new_user("admin").await;
    root.get(&format!("/v1/services/{private}")).await.ok(200);
}

/// OWN-3: visible but not owned is read-only (403 on mutation); admins own only what they create.
#[tokio::test]
async fn own_3_shared_resources_are_read_only_for_others() {
    let (alice, bob) = (user().await, user().await);
    let shared = fixtures::rest_service(&alice, true).await;
    let before = aiden_tests::fingerprint(&alice.id).await;
    for r in [
        bob.patch(
            &format!("/v1/services/{shared}"),
            json!({"name": "mine now"}),
        )
        .await,
        bob.delete(&format!("/v1/services/{shared}")).await,
        admin()
            .patch(
                &format!("/v1/services/{shared}"),
                json!({"name": "admin's now"}),
            )
            .await,
    ] {
        assert_eq!(r.status.as_u16(), 403, "{:?}", r.body);
        assert_eq!(r.code(), "FORBIDDEN");
    }
    assert_eq!(
        before,
        aiden_tests::fingerprint(&alice.id).await,
        "a rejected mutation changed the graph"
    );
    alice
        .patch(
            &format!("/v1/services/{shared}"),
            json!({"name": "renamed"}),
        )
        .await
        .ok(200);
}
