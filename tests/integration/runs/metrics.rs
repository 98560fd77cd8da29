//! Operations: the metrics runs leave.

use aiden_tests::admin;
use serde_json::json;

use super::*;

/// Operations: `/metrics` is the Prometheus exporter's rendering of what the API,
/// the engine and the worker pools recorded through the `metrics` facade: requests by route
/// template (never by id), runs started and settled by outcome, step latency by operation type,
/// Tool and outcome, engine passes, broker publishes, graph statements by query file.
#[tokio::test]
async fn metrics_count_requests_by_route_runs_by_outcome_and_steps_by_tool() {
    let c = admin();
    let k = kit(&c).await;
    let echo = &k.echo;
    let p = process(
        &c,
        json!({"initialContext": ["q"], "steps": [step(echo, "a", json!({"q": "{{q}}"}))],
               "outputTemplate": "{{a.body}}"}),
    )
    .await;
    let id = start(&c, &p, json!({"q": "m"})).await;
    assert_eq!(c.settled_run(&id).await["status"], "completed");
    let r = c.get("/metrics").await;
    let text = r.body.as_str().unwrap_or_default().to_owned();
    let route = r#"route="/v1/processes/{id}/runs""#;
    assert!(
        sample(
            &text,
            "aiden_http_request_duration_seconds_count",
            &[route, r#"status="202""#]
        )
        .is_some_and(|n| n >= 1.0),
        "requests by route template: {text}"
    );
    assert!(
        !text.contains(&format!("/v1/runs/{id}")),
        "no per-id series"
    );
    let tool = format!(r#"tool="{echo}""#);
    assert_eq!(
        sample(
            &text,
            "aiden_step_duration_seconds_count",
            &[r#"type="rest_api""#, &tool, r#"outcome="completed""#]
        ),
        Some(1.0),
        "one completed step of this Tool: {text}"
    );
    for (name, labels) in [
        ("aiden_runs_started_total", vec![]),
        ("aiden_runs_settled_total", vec![r#"outcome="completed""#]),
        ("aiden_engine_pass_seconds_count", vec![]),
        ("aiden_engine_pass_messages_count", vec![]),
        ("aiden_broker_publish_seconds_count", vec![]),
        // Graph statements by the query file they came from (authentication reads a token).
        (
            "aiden_graph_statement_seconds_count",
            vec![r#"file="user/find_user_by_token_hash.cypher""#],
        ),
    ] {
        assert!(
            sample(&text, name, &labels).is_some_and(|n| n >= 1.0),
            "{name} {labels:?} missing: {text}"
        );
    }
    assert!(text.contains("# TYPE aiden_step_duration_seconds histogram"));
    // Worker slots: how many the pools have, and how many hold a job (none, once it settled).
    let slots = sample(&text, "aiden_worker_slots", &[r#"type="rest_api""#]);
    assert!(slots.is_some_and(|n| n >= 1.0), "slots: {text}");
    let busy = sample(&text, "aiden_worker_slots_busy", &[r#"type="rest_api""#]);
    assert!(
        busy.is_some_and(|n| (0.0..=slots.unwrap()).contains(&n)),
        "busy slots {busy:?} of {slots:?}: {text}"
    );
}

/// Built-in measurements: the engine writes MetricValues for the runtime's own
/// definitions: calls and latency per Tool, settled runs per Process, by outcome.
#[tokio::test]
async fn met_1_the_runtime_measures_tool_calls_latency_and_process_runs() {
    let c = admin();
    let k = kit(&c).await;
    let echo = &k.echo;
    let p = process(
        &c,
        json!({"initialContext": ["q"], "steps": [
            step(echo, "a", json!({"q": "{{q}}"})), step(echo, "b", json!({"q": "{{q}}"}))],
            "outputTemplate": "{{b.body}}"}),
    )
    .await;
    for q in ["x", "y"] {
        let id = start(&c, &p, json!({"q": q})).await;
        assert_eq!(c.settled_run(&id).await["status"], "completed");
    }
    let aggregate = |metric: &str, entity: &str, group: &str| {
        format!("/v1/metric-values/aggregate?metricId={metric}&entityId={entity}{group}")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        // 404 until the engine's first sweep has created the built-in definitions.
        let calls = c
            .get(&aggregate("aiden-tool-calls", echo, "&groupBy=outcome"))
            .await
            .body
            .clone();
        let runs = c
            .get(&aggregate("aiden-process-runs", &p, "&groupBy=outcome"))
            .await
            .body
            .clone();
        if calls["groups"] == json!([{"key": "completed", "value": 4}])
            && runs["groups"] == json!([{"key": "completed", "value": 2}])
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "tool calls {calls}, process runs {runs}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    for (id, name) in [
        ("aiden-tool-calls", "aiden.tool.calls"),
        ("aiden-tool-latency", "aiden.tool.latency_ms"),
        ("aiden-process-runs", "aiden.process.runs"),
        ("aiden-process-tokens", "aiden.process.tokens"),
        ("aiden-conversation-tokens", "aiden.conversation.tokens"),
    ] {
        let d = c
            .get(&format!("/v1/metric-definitions/{id}"))
            .await
            .ok(200)
            .clone();
        assert_eq!(d["name"], name, "{d}");
    }
    let latency = c
        .get(&aggregate("aiden-tool-latency", echo, ""))
        .await
        .ok(200)
        .clone();
    assert!(
        latency["value"].as_f64().is_some_and(|ms| ms >= 0.0),
        "{latency}"
    );
}
