//! Entities over HTTP: what a merged Entity's uuid answers.

use aiden_tests::{aiden_graph_query as query, graph_write, unique, user};
use serde_json::json;

/// ENT-5: an extracted Entity that merged into a user's leaves a tombstone; its uuid then
/// answers 308 to the Entity it merged into (`/context` to that one's `/context`), which a
/// client following redirects reads as usual. Who may not see the survivor gets the 404 an
/// unknown uuid gets, and learns nothing of the merge.
#[tokio::test]
async fn ent_5_a_merged_uuid_redirects_to_the_entity_it_merged_into() {
    let owner = user().await;
    let survivor = owner
        .post(
            "/v1/entities",
            json!({"name": "Grace Hopper", "summary": "wrote the first compiler"}),
        )
        .await
        .ok(201)["uuid"]
        .as_str()
        .unwrap()
        .to_owned();
    // What entity/merge.cypher leaves: a tombstone without edges that its survivor lists.
    let merged = unique("merged");
    graph_write(
        query(
            "MATCH (s:Entity {uuid: $s})
             SET s.mergedFrom = coalesce(s.mergedFrom, []) + $m
             CREATE (:MergedEntity {uuid: $m, name: 'Grace', mergedInto: $s})",
        )
        .param("s", survivor.as_str())
        .param("m", merged.as_str()),
    )
    .await;

    let seen = owner.clone().not_following();
    for suffix in ["", "/context"] {
        let r = seen.get(&format!("/v1/entities/{merged}{suffix}")).await;
        assert_eq!(r.status, 308, "{suffix}: {:?}", r.body);
        assert_eq!(
            r.header("location"),
            Some(format!("/v1/entities/{survivor}{suffix}"))
        );
        assert_eq!(r.body, json!({"mergedInto": survivor}));
    }
    let followed = owner.get(&format!("/v1/entities/{merged}")).await;
    assert_eq!(followed.ok(200)["uuid"], survivor.as_str());

    let stranger = user().await.not_following();
    let r = stranger.get(&format!("/v1/entities/{merged}")).await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    assert_eq!(r.code(), "NOT_FOUND");
    let unknown = seen
        .get(&format!("/v1/entities/{}", unique("nothing")))
        .await;
    assert_eq!(unknown.status, 404);

    graph_write(
        query("MATCH (n) WHERE n.uuid IN [$s, $m] DETACH DELETE n")
            .param("s", survivor.as_str())
            .param("m", merged.as_str()),
    )
    .await;
}
