//! The `graph_query` executor called directly through the `Tool` trait, against the real Bolt
//! server of the local stack (`.stack/env`).

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aiden_domain::service::Protocol;
use aiden_workers::executors::graph_query::GraphQuery;
use aiden_workers::tool::FailureClass;
use common::call::{assert_secret_absent, unique, unused_port, Call};
use serde_json::{json, Value};

/// The helpers the executor test crates share (`tests/common/`); each crate declares only the
/// parts it uses.
mod common {
    pub mod call;
}

/// The Bolt settings from `AIDEN_NEO4J_*`, else `.stack/env` (lines
/// `export NAME=${NAME:-value}`).
fn bolt_settings() -> HashMap<&'static str, String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../.stack/env");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "graph_query tests need the local stack's settings in {path} ({e}); \
             start the stack (scripts/stack.sh up)"
        )
    });
    let mut file = HashMap::new();
    for line in text.lines() {
        let line = line.trim().trim_start_matches("export ").trim();
        if let Some((name, value)) = line.split_once('=') {
            let default = format!("${{{name}:-");
            let value = value
                .strip_prefix(&default)
                .and_then(|v| v.strip_suffix('}'))
                .unwrap_or(value)
                .trim_matches('"');
            file.insert(name.to_owned(), value.to_owned());
        }
    }
    let mut out = HashMap::new();
    for name in [
        "AIDEN_NEO4J_URI",
        "AIDEN_NEO4J_USER",
        "AIDEN_NEO4J_PASSWORD",
        "AIDEN_NEO4J_DATABASE",
    ] {
        let value = std::env::var(name)
            .ok()
            .or_else(|| file.get(name).cloned())
            .unwrap_or_else(|| panic!("{name} is neither set nor in {path}"));
        out.insert(name, value);
    }
    out
}

fn graph_call(query: &str, access: &str, input: Value) -> Call {
    let s = bolt_settings();
    let mut call = Call::new(
        json!({"type": "graph_query", "query": query, "access": access}),
        json!({"endpoint": s["AIDEN_NEO4J_URI"], "user": s["AIDEN_NEO4J_USER"],
               "database": s["AIDEN_NEO4J_DATABASE"]}),
        input,
    )
    .secret(&s["AIDEN_NEO4J_PASSWORD"])
    .timeout(Duration::from_secs(20));
    call.protocol = Protocol::Bolt;
    call
}

/// One probe login per test binary before any graph test runs: with stale settings every
/// test would fail its own login, and Neo4j locks a user out after 3 failures in a row
/// (`dbms.security.auth_max_failed_attempts`), which would also stall anyone else using it.
async fn bolt_ready() {
    static PROBE: tokio::sync::OnceCell<Result<(), String>> = tokio::sync::OnceCell::const_new();
    let probe = PROBE
        .get_or_init(|| async {
            graph_call("RETURN 1 AS one", "read", json!({}))
                .run(&GraphQuery::new())
                .await
                .map(|_| ())
                .map_err(|f| format!("{:?}: {}", f.class, f.message))
        })
        .await;
    if let Err(e) = probe {
        panic!(
            "the Bolt server at {} rejects the stack's settings ({e}); is .stack/env current \
             (or set AIDEN_NEO4J_*)?",
            bolt_settings()["AIDEN_NEO4J_URI"]
        );
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

async fn count_nodes(graph: &GraphQuery, id: &str) -> i64 {
    let out = graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.id = $id RETURN count(n) AS c",
        "read",
        json!({"id": id}),
    )
    .run(graph)
    .await
    .unwrap();
    out.value["rows"][0]["c"].as_i64().unwrap()
}

#[tokio::test]
async fn graph_query_writes_then_reads_rows_with_parameters() {
    bolt_ready().await;
    let graph = GraphQuery::new();
    // Leftovers of earlier, aborted runs of these tests (never other data).
    graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.created < $cutoff DETACH DELETE n",
        "write",
        json!({"cutoff": now_ms() - 600_000}),
    )
    .run(&graph)
    .await
    .unwrap();

    let id = unique("node-");
    let out = graph_call(
        "CREATE (n:ExecutorTestNode {id: $id, name: $name, n: $n, score: $score, tags: $tags, \
         created: $created}) RETURN n.id AS id, n.n AS n",
        "write",
        json!({"id": id, "name": "Ada \"Lovelace\"", "n": 7, "score": 0.25,
               "tags": ["a", "b"], "created": now_ms()}),
    )
    .run(&graph)
    .await
    .unwrap();
    assert_eq!(out.value, json!({"rows": [{"id": id, "n": 7}]}));
    assert_eq!(out.telemetry.provider.as_deref(), Some("neo4j"));

    let out = graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.id = $id \
         RETURN n.name AS name, n.n AS n, n.score AS score, n.tags AS tags, $meta AS meta",
        "read",
        json!({"id": id, "meta": {"nested": [1, "two", null, true]}}),
    )
    .run(&graph)
    .await
    .unwrap();
    assert_eq!(
        out.value,
        json!({"rows": [{"name": "Ada \"Lovelace\"", "n": 7, "score": 0.25, "tags": ["a", "b"],
                         "meta": {"nested": [1, "two", null, true]}}]})
    );

    // A node column becomes its properties.
    let out = graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.id = $id RETURN n AS node",
        "read",
        json!({"id": id}),
    )
    .run(&graph)
    .await
    .unwrap();
    let node = &out.value["rows"][0]["node"];
    assert_eq!(node["id"], json!(id), "{out:?}");
    assert_eq!(node["tags"], json!(["a", "b"]));
    assert!(node["created"].is_i64(), "{node}");

    // No match: no rows.
    let out = graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.id = $id RETURN n.id AS id",
        "read",
        json!({"id": unique("absent-")}),
    )
    .run(&graph)
    .await
    .unwrap();
    assert_eq!(out.value, json!({"rows": []}));

    // Cleanup through the executor itself.
    graph_call(
        "MATCH (n:ExecutorTestNode) WHERE n.id = $id DETACH DELETE n",
        "write",
        json!({"id": id}),
    )
    .run(&graph)
    .await
    .unwrap();
    assert_eq!(count_nodes(&graph, &id).await, 0);
}

#[tokio::test]
async fn graph_query_read_access_never_changes_the_graph() {
    bolt_ready().await;
    let graph = GraphQuery::new();
    let id = unique("node-");
    let out = graph_call(
        "CREATE (n:ExecutorTestNode {id: $id, created: $created}) RETURN n.id AS id",
        "read",
        json!({"id": id, "created": now_ms()}),
    )
    .run(&graph)
    .await;
    let created = count_nodes(&graph, &id).await;
    if created != 0 {
        // Do not leave it behind, then fail.
        graph_call(
            "MATCH (n:ExecutorTestNode) WHERE n.id = $id DETACH DELETE n",
            "write",
            json!({"id": id}),
        )
        .run(&graph)
        .await
        .unwrap();
    }
    assert_eq!(
        created, 0,
        "a read Tool's transaction is rolled back ({out:?})"
    );
}

#[tokio::test]
async fn graph_query_cypher_errors_are_invalid_requests() {
    bolt_ready().await;
    let graph = GraphQuery::new();
    let f = graph_call("MATCH (n:ExecutorTestNode RETURN n", "read", json!({}))
        .fail(&graph)
        .await;
    assert_eq!(f.class, FailureClass::InvalidRequest, "{}", f.message);
    // The pooled connection is still good afterwards.
    let out = graph_call("RETURN $x AS x", "read", json!({"x": 1}))
        .run(&graph)
        .await
        .unwrap();
    assert_eq!(out.value, json!({"rows": [{"x": 1}]}));
}

#[tokio::test]
async fn graph_query_credentials_and_connection_failures() {
    bolt_ready().await;
    let graph = GraphQuery::new();
    // A wrong password.
    let wrong = unique("wrong-password-");
    let mut call = graph_call("RETURN 1 AS one", "read", json!({}))
        .secret(&wrong)
        .timeout(Duration::from_secs(15));
    let started = Instant::now();
    let f = call.fail(&graph).await;
    assert_eq!(
        f.class,
        FailureClass::AuthError,
        "{} (after {:?})",
        f.message,
        started.elapsed()
    );
    assert_secret_absent(&f, &[&wrong]);
    // The same refused credentials are not tried again right away (the server would lock the
    // user out after a few failures); other credentials for the same user still are.
    let f = call.fail(&graph).await;
    assert_eq!(f.class, FailureClass::AuthError);
    assert!(
        f.message.contains("refused these credentials"),
        "{}",
        f.message
    );
    assert_secret_absent(&f, &[&wrong]);
    let good = graph_call("RETURN 1 AS one", "read", json!({}));
    assert_eq!(
        good.run(&graph).await.unwrap().value,
        json!({"rows": [{"one": 1}]})
    );

    // No Secret at all.
    call.secret = None;
    let f = call.fail(&graph).await;
    assert_eq!(f.class, FailureClass::AuthError);
    assert_eq!(f.message, "graph_query needs a password Secret");

    // Nothing listening.
    let mut call = graph_call("RETURN 1 AS one", "read", json!({}));
    call.connection["endpoint"] = json!(format!("bolt://127.0.0.1:{}", unused_port().await));
    let f = call.fail(&graph).await;
    assert_eq!(f.class, FailureClass::ConnectionError, "{}", f.message);
}
