//! Money budgets (AGT-14) and users' own quotas (AGT-10), against the scripted model under the
//! model name the test server prices (`aiden_tests::PRICED_MODEL`: a turn costs $0.02 as
//! reported, about $2.5 as estimated before it runs).

use aiden_tests::{admin, aiden_graph_query, fixtures, graph_rows, step_of as step, unique, user};
use serde_json::{json, Value};

use super::{agent_process, events, id, kit, kit_for, run, Kit};

/// The scripted conversation of these tests: search once, then answer.
fn search_then_answer() -> Value {
    json!([{"calls": [{"name": "search", "args": {"q": "kigali"}}]}, {"answer": "ok"}])
}

async fn spent(key: String) -> i64 {
    let rows: Vec<Value> = graph_rows(
        aiden_graph_query("MATCH (w:SpendWindow {key: $k}) RETURN w.spentMicros AS n")
            .param("k", key.as_str()),
    )
    .await;
    rows.first().and_then(|r| r["n"].as_i64()).unwrap_or(0)
}

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

/// An admin sets (or, with `null`, removes) a user's own quota.
async fn set_user_quota(user: &str, quota: Value) {
    admin()
        .patch(&format!("/v1/users/{user}"), json!({"quota": quota}))
        .await
        .ok(200);
}

/// The kit's search Tool costs `usd` per call (AGT-14).
async fn set_search_cost(k: &Kit, usd: f64) {
    k.u.patch(
        &format!("/v1/tools/{}", k.search),
        json!({"costPerCallUsd": usd}),
    )
    .await
    .ok(200);
}

async fn runs_of(process: &str) -> i64 {
    let rows: Vec<Value> = graph_rows(
        aiden_graph_query("MATCH (r:Run {processId: $p}) RETURN count(r) AS n").param("p", process),
    )
    .await;
    rows[0]["n"].as_i64().unwrap()
}

#[tokio::test]
async fn agt_14_a_step_budget_refuses_the_first_model_turn_before_any_spend() {
    let since = chrono::Utc::now().to_rfc3339();
    let k = kit().await;
    let p = agent_process(&k, &k.priced, &[&k.search], json!({"costBudgetUsd": 1.0})).await;
    let r = run(&k, &p, json!([{"answer": "never"}])).await;
    assert_eq!(r["status"], "failed", "{r}");
    let answer = step(&r, "answer");
    assert_eq!(answer["error"]["code"], "BUDGET_EXCEEDED", "{r}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("costBudgetUsd"),
        "{answer}"
    );
    assert!(k.requests().is_empty(), "the model was never called");
    // Its failed pipeline record (AGT-16) is not a failed call of the model.
    let failures: Vec<Value> = graph_rows(aiden_tests::ask_query(
        "tool_failures_since",
        &[("since", json!(since))],
    ))
    .await;
    assert!(
        failures.iter().all(|f| f["toolId"] != k.priced.as_str()),
        "{failures:?}"
    );
    let pipelines: Vec<Value> = graph_rows(
        aiden_graph_query(
            "MATCH (x:ToolCallAudit {runId: $run, kind: 'pipeline'}) RETURN x.status AS status",
        )
        .param("run", r["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(pipelines, [json!({"status": "failed"})]);
    // Amounts are checked when defined.
    for (path, body) in [
        (
            "/v1/processes".to_owned(),
            json!({"id": unique("agent"), "name": "a", "initialContext": ["question"],
                   "steps": [{"id": "answer", "tool": k.priced,
                              "agent": {"tools": [], "costBudgetUsd": 0},
                              "inputs": {"message": "{{question}}"}}]}),
        ),
        (
            format!("/v1/tools/{}", k.search),
            json!({"costPerCallUsd": -1}),
        ),
    ] {
        let reply = if path.starts_with("/v1/tools/") {
            k.u.patch(&path, body).await
        } else {
            k.u.post(&path, body).await
        };
        assert_eq!(reply.status.as_u16(), 400, "{path}: {:?}", reply.body);
    }
}

#[tokio::test]
async fn agt_14_a_tool_that_does_not_fit_is_refused_and_the_model_answers_without_it() {
    let k = kit().await;
    let patched =
        k.u.patch(
            &format!("/v1/tools/{}", k.search),
            json!({"costPerCallUsd": 5}),
        )
        .await;
    assert_eq!(patched.ok(200)["costPerCallUsd"], 5.0);
    let p = agent_process(&k, &k.priced, &[&k.search], json!({"costBudgetUsd": 4.0})).await;
    let r = run(&k, &p, search_then_answer()).await;
    assert_eq!(r["status"], "completed", "{r}");
    let out = &step(&r, "answer")["output"];
    assert_eq!(out["finishReason"], "complete", "{out}");
    assert_eq!(
        (out["toolCalls"].as_u64(), out["refused"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(
        out["costUsd"], 0.04,
        "two turns as reported, no tool: {out}"
    );
    assert_eq!(out["priced"], true);
    assert_eq!(k.calls("search:"), 0, "the refused tool never ran");
    let run_id = r["id"].as_str().unwrap();
    let refused: Vec<Value> = events(&k.u, run_id)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "tool.refused")
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["data"]["code"], "BUDGET_EXCEEDED", "{refused:?}");
    assert_eq!(refused[0]["data"]["stage"], "call");
    // The model read the refusal as the call's result.
    let second = &k.requests()[1];
    assert!(second.to_string().contains("BUDGET_EXCEEDED"), "{second}");
}

#[tokio::test]
async fn agt_14_daily_budgets_hold_across_runs_and_refuse_starts_once_spent() {
    let k = kit().await;
    let me = k.u.id.clone();
    set_user_quota(&me, json!({"maxCostUsdPerDay": 10})).await;
    set_search_cost(&k, 5.0).await;
    let p = agent_process(&k, &k.priced, &[&k.search], json!({})).await;
    let first = run(&k, &p, search_then_answer()).await;
    assert_eq!(step(&first, "answer")["output"]["costUsd"], 5.04, "{first}");
    // Estimates were replaced by what the turns reported: both windows hold the actual spend.
    let (user_key, process_key) = (
        format!("user:{me}#{}", today()),
        format!("process:{p}#{}", today()),
    );
    assert_eq!(spent(user_key.clone()).await, 5_040_000);
    assert_eq!(spent(process_key.clone()).await, 5_040_000);
    // The second run's tool would take the day past $10: refused, the model answers without.
    let second = run(&k, &p, search_then_answer()).await;
    assert_eq!(second["status"], "completed", "{second}");
    let out = &step(&second, "answer")["output"];
    assert_eq!(
        (out["refused"].as_u64(), out["costUsd"].as_f64()),
        (Some(1), Some(0.04))
    );
    assert_eq!(k.calls("search:"), 1, "only the first run's call ran");
    let refused: Vec<Value> = events(&k.u, second["id"].as_str().unwrap())
        .await
        .into_iter()
        .filter(|e| e["kind"] == "tool.refused")
        .collect();
    assert!(
        refused[0]["data"]["reason"]
            .as_str()
            .unwrap()
            .contains("daily budget"),
        "{refused:?}"
    );
    assert_eq!(spent(user_key).await, 5_080_000);

    // A budget lowered below the day's spend refuses starts before anything is written: the
    // Process's, then the user's own.
    k.u.patch(
        &format!("/v1/processes/{p}"),
        json!({"quota": {"maxCostUsdPerDay": 5}}),
    )
    .await
    .ok(200);
    let runs_path = format!("/v1/processes/{p}/runs");
    let start = || {
        k.u.post(&runs_path, json!({"inputs": {"question": "script:[]"}}))
    };
    let refused = start().await;
    refused.rejects(429, "AGT-14");
    assert_eq!(refused.body["error"]["code"], "BUDGET_EXCEEDED");
    assert!(refused.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("process"));
    let after: u64 = refused.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (1..=86_400).contains(&after),
        "Retry-After {after}: the next UTC midnight"
    );
    k.u.patch(&format!("/v1/processes/{p}"), json!({"quota": null}))
        .await
        .ok(200);
    set_user_quota(&me, json!({"maxCostUsdPerDay": 5})).await;
    let refused = start().await;
    refused.rejects(429, "AGT-14");
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("user"), "{message}");
    assert_eq!(runs_of(&p).await, 2, "a refused start writes nothing");
}

/// AGT-14 outside agents: a plain `llm_call` step and a Tool a Process calls directly are
/// priced before dispatch against the daily windows, and refused before spending.
#[tokio::test]
async fn agt_14_plain_model_and_tool_steps_are_priced_and_refused_before_any_spend() {
    let k = kit().await;
    let me = k.u.id.clone();
    set_user_quota(&me, json!({"maxCostUsdPerDay": 3})).await;
    set_search_cost(&k, 1.0).await;
    let plain = |name: &str, tool: &str, inputs: Value| {
        json!({"id": unique(name), "name": name, "initialContext": ["question"],
               "steps": [{"id": "s", "tool": tool, "inputs": inputs, "output": {"variable": "o"}}]})
    };
    let ask = id(&fixtures::create(
        &k.u,
        "processes",
        plain("ask", &k.priced, json!({"message": "{{question}}"})),
    )
    .await);
    let look = id(&fixtures::create(
        &k.u,
        "processes",
        plain("look", &k.search, json!({"q": "{{question}}"})),
    )
    .await);
    let user_key = format!("user:{me}#{}", today());
    let go = |p: String| {
        let u = &k.u;
        async move {
            let r = u.start_run(&p, json!({"question": "hello"})).await;
            u.settled_run(&r).await
        }
    };
    // The model step: estimated at about $2.06 (its prompt and 1,024 answer tokens), which
    // fits $3; settled at its reported usage (10 in, 5 out: $0.02).
    let r = go(ask.clone()).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(step(&r, "s")["telemetry"]["costUsd"], 0.02, "{r}");
    assert_eq!(spent(user_key.clone()).await, 20_000);
    assert_eq!(
        spent(format!("process:{ask}#{}", today())).await,
        20_000,
        "the Process's window too"
    );
    // The tool step: its $1 per call.
    let r = go(look.clone()).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(step(&r, "s")["telemetry"]["costUsd"], 1.0, "{r}");
    assert_eq!(spent(user_key.clone()).await, 1_020_000);
    assert_eq!(k.calls("search:"), 1);
    // $1.98 left: the model step's estimate no longer fits; then, at $0.98, neither does the
    // tool's call. Both fail before anything is sent, and nothing is charged.
    set_user_quota(&me, json!({"maxCostUsdPerDay": 2})).await;
    let models_asked = k.requests().len();
    let r = go(ask).await;
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(step(&r, "s")["error"]["code"], "BUDGET_EXCEEDED", "{r}");
    assert_eq!(k.requests().len(), models_asked, "the model was not asked");
    let r = go(look).await;
    assert_eq!(r["status"], "failed", "{r}");
    assert!(
        step(&r, "s")["error"]["message"]
            .as_str()
            .unwrap()
            .contains("daily budget"),
        "{r}"
    );
    assert_eq!(k.calls("search:"), 1, "the tool was not called");
    assert_eq!(spent(user_key).await, 1_020_000);
}

#[tokio::test]
async fn agt_10_a_users_own_quota_limits_their_starts_over_all_processes() {
    let u = user().await;
    let me = u.id.clone();
    let path = format!("/v1/users/{me}");
    // Only an admin sets it, within bounds; the user sees it.
    u.patch(&path, json!({"quota": {"maxInvocationsPerHour": 100}}))
        .await
        .ok(403);
    let bad = admin()
        .patch(&path, json!({"quota": {"maxInvocationsPerHour": 0}}))
        .await;
    assert_eq!(bad.status.as_u16(), 400, "{:?}", bad.body);
    set_user_quota(&me, json!({"maxInvocationsPerHour": 2})).await;
    assert_eq!(
        u.get(&path).await.ok(200)["quota"],
        json!({"maxInvocationsPerHour": 2})
    );
    let k = kit_for(u).await;
    let quick = |n: &str| {
        json!({"id": unique(n), "name": n, "steps": [{"id": "s", "tool": k.sleeper,
               "inputs": {"ms": "0"}}]})
    };
    let a = id(&fixtures::create(&k.u, "processes", quick("a")).await);
    let b = id(&fixtures::create(&k.u, "processes", quick("b")).await);
    let first = k.u.start_run(&a, json!({})).await;
    let second = k.u.start_run(&b, json!({})).await;
    let third =
        k.u.post(&format!("/v1/processes/{a}/runs"), json!({"inputs": {}}))
            .await;
    third.rejects(429, "AGT-10");
    assert_eq!(third.body["error"]["code"], "QUOTA_EXCEEDED");
    assert!(third.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("user"));
    assert_eq!(runs_of(&a).await, 1, "the refused start wrote nothing");

    // maxConcurrent counts the user's unsettled runs of any Process (the two above are let
    // settle first: under load they could still be running and count).
    for r in [first, second] {
        k.u.settled_run(&r).await;
    }
    set_user_quota(&me, json!({"maxConcurrent": 1})).await;
    let slow = id(&fixtures::create(
        &k.u,
        "processes",
        json!({"id": unique("slow"), "name": "slow",
               "steps": [{"id": "s", "tool": k.sleeper, "inputs": {"ms": "1500"}}]}),
    )
    .await);
    let running = k.u.start_run(&slow, json!({})).await;
    let busy =
        k.u.post(&format!("/v1/processes/{b}/runs"), json!({"inputs": {}}))
            .await;
    busy.rejects(429, "AGT-10");
    assert_eq!(busy.headers["retry-after"], "1");
    assert_eq!(k.u.settled_run(&running).await["status"], "completed");
    // Removed, it limits nothing.
    set_user_quota(&me, Value::Null).await;
    assert!(k.u.get(&path).await.ok(200).get("quota").is_none());
    k.u.start_run(&b, json!({})).await;
}
