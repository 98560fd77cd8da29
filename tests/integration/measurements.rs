//! MetricDefinition / MetricValue: MET-1 (names unique per scope, typed values of
//! entities that exist), MET-2 (delete with values only by cascade), MET-3 (definition shape),
//! MET-4 (retention sweep, audited), and aggregation over a range by group.

use aiden_tests::{admin, fixtures, server, unique, user, Client};
use serde_json::{json, Value};

async fn definition(body: Value) -> String {
    admin().post("/v1/metric-definitions", body).await.ok(201)["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A private Tool of `u` (others cannot see it).
async fn tool_of(u: &Client) -> String {
    let svc = fixtures::rest_service(u, false).await;
    let mut body = fixtures::rest_tool_body(&svc);
    body["shared"] = json!(false);
    fixtures::create(u, "tools", body).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn record(
    u: &Client,
    metric: &str,
    entity: &str,
    value: Value,
    extra: Value,
) -> aiden_tests::Reply {
    let mut body = json!({"metricId": metric, "entityId": entity, "value": value});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    u.post("/v1/metric-values", body).await
}

/// MET-1 / MET-3: admins define metrics; names are unique within a scope (any case); the
/// aggregation suits the type; retention is in range; scope and dataType never change.
#[tokio::test]
async fn met_1_met_3_definitions_are_checked() {
    let a = admin();
    let name = unique("latency");
    let id = definition(json!({"name": name, "scope": "tool", "aggregation": "avg",
                                "dataType": "float", "retentionDays": 30}))
    .await;
    a.post(
        "/v1/metric-definitions",
        json!({"name": name.to_uppercase(), "scope": "tool", "aggregation": "max",
               "dataType": "float"}),
    )
    .await
    .rejects(409, "MET-1");
    definition(
        json!({"name": name, "scope": "process", "aggregation": "sum",
                      "dataType": "integer"}),
    )
    .await;
    for (body, rule) in [
        (
            json!({"name": unique("t"), "scope": "tool", "aggregation": "sum", "dataType": "timestamp"}),
            "MET-3",
        ),
        (
            json!({"name": unique("t"), "scope": "tool", "aggregation": "sum", "dataType": "integer", "retentionDays": 0}),
            "MET-3",
        ),
    ] {
        a.post("/v1/metric-definitions", body)
            .await
            .rejects(422, rule);
    }
    let path = format!("/v1/metric-definitions/{id}");
    a.patch(&path, json!({"scope": "process"}))
        .await
        .rejects(422, "MET-3");
    a.patch(&path, json!({"dataType": "integer"}))
        .await
        .rejects(422, "MET-3");
    let other = definition(json!({"name": unique("other"), "scope": "tool",
                                   "aggregation": "count", "dataType": "boolean"}))
    .await;
    a.patch(
        &format!("/v1/metric-definitions/{other}"),
        json!({"name": name}),
    )
    .await
    .rejects(409, "MET-1");
    let changed = a
        .patch(
            &path,
            json!({"aggregation": "max", "retentionDays": null, "scope": "tool"}),
        )
        .await
        .ok(200)
        .clone();
    assert_eq!(changed["aggregation"], "max");
    assert!(changed["retentionDays"].is_null());
    assert_eq!(changed["revision"], 2);
    // Users read a definition, but neither list nor change them.
    let u = user().await;
    assert_eq!(u.get(&path).await.ok(200)["dataType"], "float");
    assert_eq!(u.get("/v1/metric-definitions").await.status.as_u16(), 403);
    assert_eq!(
        u.post(
            "/v1/metric-definitions",
            json!({"name": unique("x"), "scope": "tool",
                                                 "aggregation": "sum", "dataType": "integer"})
        )
        .await
        .status
        .as_u16(),
        403
    );
    let listed = a
        .get("/v1/metric-definitions?limit=500")
        .await
        .ok(200)
        .clone();
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["id"] == id.as_str())
            || listed["nextCursor"].is_string()
    );
}

/// MET-1: values are typed per dataType and measure an entity of the scope that the writer can
/// see; the aggregate is the definition's, over [from, to), whole or grouped; a user reads the
/// values of entities they can see, naming one.
#[tokio::test]
async fn met_1_values_are_typed_measure_visible_entities_and_aggregate() {
    let u = user().await;
    let tool = tool_of(&u).await;
    let metric = definition(json!({"name": unique("latency"), "scope": "tool",
                                    "aggregation": "avg", "dataType": "float"}))
    .await;
    for (value, region, at) in [
        (10.0, "eu", "2026-01-01T00:00:00Z"),
        (20.0, "eu", "2026-01-02T00:00:00Z"),
        (60.0, "us", "2026-01-03T00:00:00Z"),
    ] {
        let r = record(
            &u,
            &metric,
            &tool,
            json!(value),
            json!({"timestamp": at, "dimensions": {"region": region}}),
        )
        .await;
        assert_eq!(r.ok(201)["value"].as_f64(), Some(value));
    }
    record(&u, &metric, &tool, json!("fast"), json!({}))
        .await
        .rejects(422, "MET-1");
    record(&u, &metric, &unique("no-tool"), json!(1.0), json!({}))
        .await
        .rejects(422, "MET-1");
    record(&u, &unique("no-metric"), &tool, json!(1.0), json!({}))
        .await
        .rejects(422, "MET-1");
    let stranger = user().await;
    record(&stranger, &metric, &tool, json!(1.0), json!({}))
        .await
        .rejects(422, "MET-1");
    // Scope: a Tool's id is not a Process.
    let per_process = definition(json!({"name": unique("runs"), "scope": "process",
                                         "aggregation": "sum", "dataType": "integer"}))
    .await;
    record(&u, &per_process, &tool, json!(1), json!({}))
        .await
        .rejects(422, "MET-1");

    let base = format!("/v1/metric-values/aggregate?metricId={metric}&entityId={tool}");
    assert_eq!(u.get(&base).await.ok(200)["value"], json!(30.0));
    let ranged = format!("{base}&from=2026-01-02T00:00:00Z&to=2026-01-03T00:00:00Z");
    assert_eq!(
        u.get(&ranged).await.ok(200)["value"],
        json!(20.0),
        "[from, to)"
    );
    let grouped = u
        .get(&format!("{base}&groupBy=region"))
        .await
        .ok(200)
        .clone();
    assert_eq!(
        grouped["groups"],
        json!([{"key": "eu", "value": 15.0}, {"key": "us", "value": 60.0}])
    );
    let listed = u
        .get(&format!(
            "/v1/metric-values?metricId={metric}&entityId={tool}&limit=2"
        ))
        .await
        .ok(200)
        .clone();
    assert_eq!(listed["items"].as_array().unwrap().len(), 2);
    assert_eq!(
        listed["items"][0]["value"].as_f64(),
        Some(60.0),
        "newest first"
    );
    assert_eq!(listed["items"][0]["dimensions"], json!({"region": "us"}));
    let rest = u
        .get(&format!(
            "/v1/metric-values?metricId={metric}&entityId={tool}&cursor={}",
            listed["nextCursor"].as_str().expect("a second page")
        ))
        .await
        .ok(200)
        .clone();
    assert_eq!(rest["items"].as_array().unwrap().len(), 1);
    // Reading: a user names an entity they can see; an admin reads across entities.
    assert_eq!(
        u.get(&format!("/v1/metric-values?metricId={metric}"))
            .await
            .status
            .as_u16(),
        403
    );
    assert_eq!(stranger.get(&base).await.status.as_u16(), 404);
    let all = admin()
        .get(&format!(
            "/v1/metric-values/aggregate?metricId={metric}&groupBy=entityId"
        ))
        .await
        .ok(200)
        .clone();
    assert_eq!(all["groups"], json!([{"key": tool, "value": 30.0}]));
}

/// MET-2: a definition with values is deleted only with cascade, and its values with it.
#[tokio::test]
async fn met_2_a_metric_with_values_is_deleted_only_by_cascade() {
    let u = user().await;
    let tool = tool_of(&u).await;
    let metric = definition(json!({"name": unique("errors"), "scope": "tool",
                                    "aggregation": "count", "dataType": "boolean"}))
    .await;
    record(&u, &metric, &tool, json!(true), json!({}))
        .await
        .ok(201);
    let path = format!("/v1/metric-definitions/{metric}");
    admin().delete(&path).await.rejects(409, "MET-2");
    assert_eq!(
        admin()
            .delete(&format!("{path}?cascade=true"))
            .await
            .status
            .as_u16(),
        204
    );
    assert_eq!(admin().get(&path).await.status.as_u16(), 404);
    #[derive(serde::Deserialize)]
    struct N {
        n: i64,
    }
    let left: Vec<N> = aiden_tests::graph_rows(
        aiden_tests::aiden_graph_query("MATCH (v:MetricValue {metricId: $m}) RETURN count(v) AS n")
            .param("m", metric.as_str()),
    )
    .await;
    assert_eq!(left[0].n, 0, "the values went with it");
    // Without values, no cascade is needed.
    let empty = definition(json!({"name": unique("empty"), "scope": "tool",
                                   "aggregation": "count", "dataType": "boolean"}))
    .await;
    assert_eq!(
        admin()
            .delete(&format!("/v1/metric-definitions/{empty}"))
            .await
            .status
            .as_u16(),
        204
    );
}

/// MET-4: a value older than its metric's retentionDays is reported by the audit until the
/// retention sweep removes it; values within retention stay.
#[tokio::test]
async fn met_4_the_retention_sweep_removes_expired_values() {
    let u = user().await;
    let tool = tool_of(&u).await;
    let metric = definition(json!({"name": unique("calls"), "scope": "tool",
                                    "aggregation": "sum", "dataType": "integer",
                                    "retentionDays": 1}))
    .await;
    let old = (chrono::Utc::now() - chrono::Duration::days(3)).to_rfc3339();
    let expired = record(&u, &metric, &tool, json!(5), json!({"timestamp": old}))
        .await
        .ok(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    record(&u, &metric, &tool, json!(7), json!({}))
        .await
        .ok(201);

    let graph = aiden_graph::Graph::connect(&server().graph)
        .await
        .expect("graph");
    let audit = || async {
        aiden_service::Auditor::new(graph.clone())
            .audit()
            .await
            .expect("audit")
            .into_iter()
            .filter(|f| f.id == expired)
            .map(|f| f.invariant)
            .collect::<Vec<_>>()
    };
    assert_eq!(audit().await, vec!["MET-4"]);
    let app = aiden_service::App::new(
        graph.clone(),
        aiden_service::Vault::from_base64(aiden_tests::TEST_MASTER_KEY).unwrap(),
    );
    assert!(app.sweep_metric_values().await.expect("sweep") >= 1);
    assert!(audit().await.is_empty());
    let sum = u
        .get(&format!(
            "/v1/metric-values/aggregate?metricId={metric}&entityId={tool}"
        ))
        .await
        .ok(200)["value"]
        .clone();
    assert_eq!(sum, json!(7), "the value within retention stays");
    // Deleting the measured Tool keeps its values as history, and the audit clean.
    assert_eq!(
        u.delete(&format!("/v1/tools/{tool}")).await.status.as_u16(),
        204
    );
    let kept = admin()
        .get(&format!("/v1/metric-values?metricId={metric}"))
        .await
        .ok(200)["items"]
        .clone();
    assert_eq!(kept.as_array().unwrap().len(), 1);
    let ids: Vec<String> = kept
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect();
    let findings = aiden_service::Auditor::new(graph.clone())
        .audit()
        .await
        .expect("audit");
    assert!(
        !findings.iter().any(|f| ids.contains(&f.id)),
        "{findings:?}"
    );
}
