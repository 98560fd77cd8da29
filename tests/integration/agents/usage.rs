//! What a user used, as the admins' user list shows it (`GET /v1/users` items' `usage`): their
//! spend today (AGT-14's daily window), against their `maxCostUsdPerDay`, and their runs.

use aiden_tests::{admin, step_of as step, Client};
use serde_json::{json, Value};

use super::{agent_process, kit, run};

/// The user's line in the admins' list.
async fn listed(id: &str) -> Value {
    let list = admin().get(&format!("/v1/users?q={id}")).await;
    let items = list.ok(200)["items"].as_array().unwrap();
    items
        .iter()
        .find(|u| u["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} is not in the list"))
}

#[tokio::test]
async fn the_users_list_shows_todays_spend_against_the_budget_and_the_runs() {
    let k = kit().await;
    let me = k.u.id.clone();
    admin()
        .patch(
            &format!("/v1/users/{me}"),
            json!({"quota": {"maxCostUsdPerDay": 5}}),
        )
        .await
        .ok(200);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let before = listed(&me).await;
    assert_eq!(
        before["usage"],
        json!({"day": today, "spentTodayUsd": 0.0, "runs": 0}),
        "{before}"
    );
    assert_eq!(before["quota"]["maxCostUsdPerDay"], 5.0);

    // One model turn on the priced model: 10 tokens in, 5 out, $0.02 as reported.
    let p = agent_process(&k, &k.priced, &[], json!({})).await;
    let r = run(&k, &p, json!([{"answer": "ok"}])).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(step(&r, "answer")["output"]["costUsd"], 0.02, "{r}");
    let after = listed(&me).await;
    let usage = &after["usage"];
    assert_eq!(usage["spentTodayUsd"], 0.02, "{after}");
    assert_eq!(usage["runs"], 1, "{after}");
    assert_eq!(usage["day"], today.as_str());

    // A second run: counted.
    let again = run(&k, &p, json!([{"answer": "again"}])).await;
    assert_eq!(again["status"], "completed", "{again}");
    let usage = listed(&me).await["usage"].clone();
    assert_eq!(usage["spentTodayUsd"], 0.04, "{usage}");
    assert_eq!(usage["runs"], 2, "{usage}");

    // Only admins list users; a user's own record carries no usage.
    let u: &Client = &k.u;
    u.get("/v1/users").await.ok(403);
    assert!(u.get("/v1/me").await.ok(200).get("usage").is_none());
}
