//! Processes: PROC-1..7, PROC-9 (versions), PROC-10 (delete), OWN-3 on shared Processes.

use aiden_tests::{
    aiden_graph_query, fingerprint, fixtures, graph_rows, unique, user, Client, Reply,
};
use reqwest::Method;
use serde_json::{json, Value};

fn id(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_owned()
}

/// A user with a private Tool taking `query` (string, required) and `temperature` (number).
async fn setup() -> (Client, String) {
    let u = user().await;
    let svc = fixtures::rest_service(&u, false).await;
    let mut body = fixtures::rest_tool_body(&svc);
    body["operation"]["path"] = json!("/s?q={{query}}&t={{temperature}}");
    body["inputSchema"] = json!({"type": "object", "required": ["query"],
        "properties": {"query": {"type": "string"}, "temperature": {"type": "number"}}});
    body["shared"] = json!(false);
    let tool = id(&fixtures::create(&u, "tools", body).await);
    (u, tool)
}

/// A step calling `tool` with `{{q}}`, producing `var`.
fn step(id: &str, tool: &str, var: &str) -> Value {
    json!({"id": id, "tool": tool, "inputs": {"query": "{{q}}"}, "output": {"variable": var}})
}

fn parallel(id: &str, tool: &str, var: &str, deps: &[&str]) -> Value {
    let mut s = step(id, tool, var);
    s["execution"] = json!({"mode": "parallel"});
    s["dependsOn"] = json!(deps);
    s
}

/// A Process body over `q` with these steps and output template.
fn process(steps: Value, output: &str) -> Value {
    json!({"id": unique("proc"), "name": "P", "initialContext": ["q"], "steps": steps,
           "outputTemplate": output})
}

/// A Process whose one step calls Process `callee` (which takes `q`).
fn caller_of(callee: &str, depth: u32) -> Value {
    let call = json!({"id": "call", "process": callee, "inputs": {"q": "{{q}}"},
                      "output": {"variable": "r"}});
    let mut p = process(json!([call]), "{{r}}");
    p["maxRecursionDepth"] = json!(depth);
    p
}

/// Sends a request the rules must refuse; asserts status, invariant, and an unchanged graph.
async fn refused(
    u: &Client,
    method: Method,
    path: &str,
    body: Option<Value>,
    status: u16,
    inv: &str,
) -> Reply {
    let before = fingerprint(&u.id).await;
    let r = u.send(method.clone(), path, body.as_ref(), &[]).await;
    r.rejects(status, inv);
    let after = fingerprint(&u.id).await;
    assert_eq!(before, after, "refused {method} {path} changed the graph");
    r
}

/// A create refused with 422 `inv`, naming `path` in its details; the id stays unknown.
async fn refused_create(u: &Client, body: Value, inv: &str, path: &str) -> Reply {
    let r = refused(
        u,
        Method::POST,
        "/v1/processes",
        Some(body.clone()),
        422,
        inv,
    )
    .await;
    let details = r.body["error"]["details"].to_string();
    assert!(
        details.contains(&format!("\"{path}\"")),
        "{path} not in {details}"
    );
    assert_eq!(
        status(u, Method::GET, &format!("/v1/processes/{}", id(&body))).await,
        404
    );
    r
}

async fn created(u: &Client, body: Value) -> Value {
    let p = fixtures::create(u, "processes", body.clone()).await;
    assert_eq!((&p["id"], &p["version"]), (&body["id"], &json!(1)));
    let ids = |v: &Value| -> Vec<Value> {
        v["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].clone())
            .collect()
    };
    assert_eq!(ids(&p), ids(&body));
    p
}

async fn status(u: &Client, method: Method, path: &str) -> u16 {
    u.send(method, path, None, &[]).await.status.as_u16()
}

/// PROC-1: at least one step; step ids unique.
#[tokio::test]
async fn proc_1_needs_steps_with_unique_ids() {
    let (u, tool) = setup().await;
    refused_create(&u, process(json!([]), "{{q}}"), "PROC-1", "/steps").await;
    let dup = json!([step("s", &tool, "a"), step("s", &tool, "b")]);
    refused_create(&u, process(dup, "{{b}}"), "PROC-1", "/steps/1/id").await;
    created(
        &u,
        process(
            json!([step("s", &tool, "a"), step("t", &tool, "b")]),
            "{{b}}",
        ),
    )
    .await;
}

/// PROC-2: exactly one of tool/process, and a target the owner can use.
#[tokio::test]
async fn proc_2_step_calls_exactly_one_usable_target() {
    let (u, tool) = setup().await;
    let (bob, bobs_private) = setup().await;
    let bsvc = fixtures::rest_service(&bob, true).await;
    let bobs_shared = fixtures::rest_tool(&bob, &bsvc).await; // fixture Tools are shared
    let callee = created(&u, process(json!([step("s", &tool, "a")]), "{{a}}")).await;
    let mut both = step("s", &tool, "a");
    both["process"] = callee["id"].clone();
    refused_create(&u, process(json!([both]), "{{a}}"), "PROC-2", "/steps/0").await;
    let neither = json!({"id": "s", "inputs": {}, "output": {"variable": "a"}});
    refused_create(&u, process(json!([neither]), "{{a}}"), "PROC-2", "/steps/0").await;
    let bob_before = fingerprint(&bob.id).await;
    for target in [unique("tool-none"), bobs_private] {
        let body = process(json!([step("s", &target, "a")]), "{{a}}");
        refused_create(&u, body, "PROC-2", "/steps/0/tool").await;
    }
    let call = json!({"id": "s", "process": unique("proc-none"), "output": {"variable": "a"}});
    refused_create(
        &u,
        process(json!([call]), "{{a}}"),
        "PROC-2",
        "/steps/0/process",
    )
    .await;
    assert_eq!(bob_before, fingerprint(&bob.id).await);
    created(&u, process(json!([step("s", &bobs_shared, "a")]), "{{a}}")).await;
}

/// PROC-3: dependsOn names only earlier steps (not itself, not later, not unknown).
#[tokio::test]
async fn proc_3_depends_on_only_earlier_steps() {
    let (u, tool) = setup().await;
    for (deps, path) in [
        (json!(["b"]), "/steps/1/dependsOn/0"),
        (json!(["c"]), "/steps/1/dependsOn/0"),
        (json!(["a", "ghost"]), "/steps/1/dependsOn/1"),
    ] {
        let mut b = step("b", &tool, "vb");
        b["dependsOn"] = deps;
        let steps = json!([step("a", &tool, "va"), b, step("c", &tool, "vc")]);
        refused_create(&u, process(steps, "{{vc}}"), "PROC-3", path).await;
    }
    let mut b = step("b", &tool, "vb");
    b["dependsOn"] = json!(["a"]);
    let p = created(&u, process(json!([step("a", &tool, "va"), b]), "{{vb}}")).await;
    assert_eq!(p["steps"][1]["dependsOn"], json!(["a"]));
}

/// PROC-4: steps of one parallel group do not depend on each other.
#[tokio::test]
async fn proc_4_parallel_group_members_are_independent() {
    let (u, tool) = setup().await;
    let (a, p1) = (step("a", &tool, "va"), parallel("p1", &tool, "v1", &[]));
    let steps = json!([a, p1, parallel("p2", &tool, "v2", &["p1"])]);
    refused_create(
        &u,
        process(steps, "{{v2}}"),
        "PROC-4",
        "/steps/2/dependsOn/0",
    )
    .await;
    let p1 = parallel("p1", &tool, "v1", &["a"]);
    let steps = json!([a, p1, parallel("p2", &tool, "v2", &["a"])]);
    let p = created(&u, process(steps, "{{v1}} {{v2}}")).await;
    assert_eq!(p["steps"][2]["execution"]["mode"], "parallel");
}

/// PROC-5: inputs satisfy the target Tool's schema or the called Process's initialContext.
#[tokio::test]
async fn proc_5_step_inputs_satisfy_the_target() {
    let (u, tool) = setup().await;
    let with_inputs = |inputs: Value| {
        let s = json!({"id": "s", "tool": tool, "inputs": inputs, "output": {"variable": "a"}});
        process(json!([s]), "{{a}}")
    };
    for (inputs, path) in [
        (json!({"temperature": 0.3}), "/steps/0/inputs"),
        (json!({"query": "{{q}}", "topK": 3}), "/steps/0/inputs/topK"),
        (
            json!({"query": "x", "temperature": "0.3"}),
            "/steps/0/inputs/temperature",
        ),
    ] {
        refused_create(&u, with_inputs(inputs), "PROC-5", path).await;
    }
    let p = created(
        &u,
        with_inputs(json!({"query": "{{q}}", "temperature": "{{q}}"})),
    )
    .await;
    assert_eq!(p["steps"][0]["inputs"]["temperature"], "{{q}}");
    created(
        &u,
        with_inputs(json!({"query": "literal", "temperature": 0.3})),
    )
    .await;
    // A called Process needs each of its initialContext variables.
    let callee = id(&created(&u, process(json!([step("s", &tool, "a")]), "{{a}}")).await);
    let mut without = caller_of(&callee, 3);
    without["steps"][0]["inputs"] = json!({});
    refused_create(&u, without, "PROC-5", "/steps/0/inputs").await;
    created(&u, caller_of(&callee, 3)).await;
}

/// PROC-6: every variable read comes from initialContext or a step certain to finish first, in
/// outputTemplate, inputs (also the single-brace `{step.x}` form) and conditions.
#[tokio::test]
async fn proc_6_variables_come_from_context_or_finished_steps() {
    let (u, tool) = setup().await;
    let one = json!([step("a", &tool, "va")]);
    refused_create(
        &u,
        process(one.clone(), "{{json ghost}}"),
        "PROC-6",
        "/outputTemplate",
    )
    .await;
    refused_create(
        &u,
        process(one.clone(), "R: {step.ghost}"),
        "PROC-6",
        "/outputTemplate",
    )
    .await;
    created(&u, process(one, "R: {step.va}")).await;
    // A parallel step reading an earlier step's output must dependsOn it.
    let mut reader = parallel("p", &tool, "vp", &[]);
    for input in ["{{va}}", "{step.va}"] {
        reader["inputs"] = json!({"query": input});
        let steps = json!([step("a", &tool, "va"), reader]);
        refused_create(
            &u,
            process(steps, "{{vp}}"),
            "PROC-6",
            "/steps/1/inputs/query",
        )
        .await;
    }
    reader["dependsOn"] = json!(["a"]);
    created(
        &u,
        process(json!([step("a", &tool, "va"), reader]), "{{vp}}"),
    )
    .await;
    // Condition variables count.
    let mut cond = step("b", &tool, "vb");
    cond["execution"] = json!({"condition": "{{#if ghost}}true{{/if}}"});
    let steps = json!([step("a", &tool, "va"), cond]);
    let path = "/steps/1/execution/condition";
    refused_create(&u, process(steps, "{{vb}}"), "PROC-6", path).await;
    cond["execution"] = json!({"condition": "{{#if va}}true{{/if}}"});
    created(&u, process(json!([step("a", &tool, "va"), cond]), "{{vb}}")).await;
}

/// PROC-7: the static CALLS_PROCESS chain stays within maxRecursionDepth and never cycles.
#[tokio::test]
async fn proc_7_call_chain_within_depth_and_acyclic() {
    let (u, tool) = setup().await;
    let c = id(&created(&u, process(json!([step("s", &tool, "a")]), "{{a}}")).await);
    let b = id(&created(&u, caller_of(&c, 3)).await);
    refused_create(&u, caller_of(&b, 2), "PROC-7", "/maxRecursionDepth").await;
    let a = id(&created(&u, caller_of(&b, 3)).await);
    // C calling A would close the cycle A → B → C → A; A calling itself is one too.
    for (at, callee) in [(&c, &a), (&a, &a)] {
        let back = json!({"id": "back", "process": callee, "inputs": {"q": "{{q}}"},
                          "output": {"variable": "a"}});
        let path = format!("/v1/processes/{at}");
        let patch = json!({"steps": [back], "outputTemplate": "{{a}}"});
        refused(&u, Method::PATCH, &path, Some(patch), 422, "PROC-7").await;
        assert_eq!(u.get(&path).await.ok(200)["version"], 1);
    }
}

async fn count(q: &str, id: &str) -> i64 {
    #[derive(serde::Deserialize)]
    struct Count {
        n: i64,
    }
    graph_rows::<Count>(aiden_graph_query(q).param("id", id)).await[0].n
}

/// PROC-9: definition changes make immutable versions; name/enabled changes do not.
#[tokio::test]
async fn proc_9_definition_changes_create_immutable_versions() {
    let (u, tool) = setup().await;
    let body = process(json!([step("s1", &tool, "r")]), "{{json r}}");
    let pid = id(&created(&u, body.clone()).await);
    let path = format!("/v1/processes/{pid}");
    let versions = || async { u.get(&format!("{path}/versions")).await.ok(200)["items"].clone() };
    let v1 = versions().await[0].clone();
    assert_eq!(
        (&v1["version"], &v1["outputTemplate"]),
        (&json!(1), &json!("{{json r}}"))
    );
    let check = |r: Reply, version: i64, revision: i64| {
        assert_eq!(
            (&r.ok(200)["version"], &r.body["revision"]),
            (&json!(version), &json!(revision))
        )
    };
    check(
        u.patch(&path, json!({"outputTemplate": "{{r}}"})).await,
        2,
        2,
    );
    let mut put = body.clone();
    put["steps"] = json!([step("s1", &tool, "r"), step("s2", &tool, "r2")]);
    put["outputTemplate"] = json!("{{r2}}");
    check(u.put(&path, put).await, 3, 3);
    check(u.patch(&path, json!({"enabled": false})).await, 3, 4);
    check(u.patch(&path, json!({"name": "Renamed"})).await, 3, 5);

    let all = versions().await;
    let numbers: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["version"])
        .collect();
    assert_eq!(numbers, [&json!(1), &json!(2), &json!(3)]);
    assert_eq!(all[0], v1, "version 1 changed after later updates");
    assert_eq!(
        (&all[1]["outputTemplate"], &all[1]["steps"]),
        (&json!("{{r}}"), &v1["steps"])
    );
    assert_eq!(all[2]["steps"].as_array().unwrap().len(), 2);
    let current = u.get(&path).await;
    assert_eq!(
        (&current.ok(200)["name"], &current.body["enabled"]),
        (&json!("Renamed"), &json!(false))
    );
    // Each version keeps its own ProcessSteps in the graph.
    let steps = "MATCH (:Process {id: $id})-[:HAS_VERSION]->(:ProcessVersion)-[:HAS_STEP]->(s) \
                 RETURN count(s) AS n";
    assert_eq!(count(steps, &pid).await, 1 + 1 + 2);
}

/// PROC-10: a Process another Process calls cannot be deleted; an unreferenced one is removed
/// with its versions and steps.
#[tokio::test]
async fn proc_10_referenced_process_cannot_be_deleted() {
    let (u, tool) = setup().await;
    let callee = id(&created(&u, process(json!([step("s", &tool, "a")]), "{{a}}")).await);
    let caller = id(&created(&u, caller_of(&callee, 3)).await);
    let path = format!("/v1/processes/{callee}");
    let r = refused(&u, Method::DELETE, &path, None, 409, "PROC-10").await;
    assert_eq!(r.code(), "CONFLICT");
    u.get(&path).await.ok(200);
    assert_eq!(
        status(&u, Method::DELETE, &format!("/v1/processes/{caller}")).await,
        204
    );
    assert_eq!(status(&u, Method::DELETE, &path).await, 204);
    for pid in [&caller, &callee] {
        assert_eq!(
            status(&u, Method::GET, &format!("/v1/processes/{pid}")).await,
            404
        );
        let versions = format!("/v1/processes/{pid}/versions");
        assert_eq!(status(&u, Method::GET, &versions).await, 404);
        let q = "MATCH (v:ProcessVersion) WHERE v.processId = $id RETURN count(v) AS n";
        assert_eq!(count(q, pid).await, 0);
        let q = "MATCH (s:ProcessStep) WHERE s.versionId STARTS WITH ($id + '@') \
                 RETURN count(s) AS n";
        assert_eq!(count(q, pid).await, 0);
    }
    // With no step calling it any more, the Tool deletes (TOOL-8).
    assert_eq!(
        status(&u, Method::DELETE, &format!("/v1/tools/{tool}")).await,
        204
    );
}

/// OWN-3: another user may read a shared Process but not change or delete it.
#[tokio::test]
async fn own_3_shared_process_is_read_only_for_others() {
    let (alice, tool) = setup().await;
    let bob = user().await;
    let mut body = process(json!([step("s", &tool, "a")]), "{{a}}");
    body["shared"] = json!(true);
    let path = format!("/v1/processes/{}", id(&created(&alice, body.clone()).await));
    assert_eq!(bob.get(&path).await.ok(200)["ownerId"], alice.id.as_str());
    let before = fingerprint(&alice.id).await;
    let mut renamed = body.clone();
    renamed["name"] = json!("bob's");
    for (method, b) in [
        (Method::PATCH, Some(json!({"name": "bob's"}))),
        (Method::PUT, Some(renamed)),
        (Method::DELETE, None),
    ] {
        let r = bob.send(method, &path, b.as_ref(), &[]).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (403, "FORBIDDEN"),
            "{:?}",
            r.body
        );
    }
    assert_eq!(before, fingerprint(&alice.id).await);
    let p = alice.get(&path).await;
    assert_eq!(
        (&p.ok(200)["name"], &p.body["revision"]),
        (&json!("P"), &json!(1))
    );
    // Once private it is invisible: 404, not 403.
    alice.patch(&path, json!({"shared": false})).await.ok(200);
    assert_eq!(
        bob.patch(&path, json!({"name": "x"})).await.status.as_u16(),
        404
    );
}
