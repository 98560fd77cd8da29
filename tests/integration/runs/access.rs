//! Who may run what: disabled Tools, Services and Processes (PROC-8), unshared Services
//! (TOOL-3), other users' Secrets (SEC-6), and private runs.

use aiden_tests::{admin, fixtures, step_of, unique, user};
use serde_json::json;

use super::*;

/// Caches never outlive a change: after a run has filled the API's plan cache and
/// the worker's Tool cache, disabling the Tool fails the next run's step (PROC-8), disabling the
/// Process refuses the next start (PROC-8), and a new version is what the next run executes.
#[tokio::test]
async fn proc_8_holds_after_runs_have_filled_the_plan_and_tool_caches() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"steps": [step(&k.echo, "a", json!({"q": "warm"}))]}),
    )
    .await;
    let warm = u.settled_run(&start(&u, &p, json!({})).await).await;
    assert_eq!(warm["status"], "completed", "{warm}");
    assert_eq!(warm["processVersion"], 1);

    u.patch(&format!("/v1/tools/{}", k.echo), json!({"enabled": false}))
        .await
        .ok(200);
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(step_of(&run, "a")["error"]["code"], "PROC-8", "{run}");
    take_dead_letter(&format!("{id}/a")).await;
    u.patch(&format!("/v1/tools/{}", k.echo), json!({"enabled": true}))
        .await
        .ok(200);

    u.patch(&format!("/v1/processes/{p}"), json!({"enabled": false}))
        .await
        .ok(200);
    u.post(&format!("/v1/processes/{p}/runs"), json!({"inputs": {}}))
        .await
        .rejects(422, "PROC-8");
    u.patch(
        &format!("/v1/processes/{p}"),
        json!({"enabled": true,
               "steps": [step(&k.echo, "a", json!({"q": "v2"})), step(&k.echo, "b", json!({"q": "v2b"}))]}),
    )
    .await
    .ok(200);
    let run = u.settled_run(&start(&u, &p, json!({})).await).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["processVersion"], 2, "{run}");
    assert_eq!(run["steps"].as_array().unwrap().len(), 2, "{run}");
    assert_eq!(
        k.up.calls_with("q", "warm").len(),
        1,
        "the disabled Tool was never called"
    );
    assert_eq!(k.up.calls_with("q", "v2b").len(), 1);
}

/// The engine's door: a start this instance's engine creates in its own pass is held to the same
/// rule as a start written by the API. When another instance changed the Process after this one
/// cached its plan, the engine's pass creates nothing for the stale plan, and the start is
/// decided again on a fresh read: it runs the new version, and a disabled Process is refused
/// (PROC-8).
#[tokio::test]
async fn proc_8_a_start_handed_to_the_engine_holds_when_another_instance_changed_the_process() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"steps": [step(&k.echo, "a", json!({"q": "v1"}))]}),
    )
    .await;
    // The first start reads the plan (and caches it); later ones are handed to the engine once
    // this server's engine holds its lease (just after the server started, it may not yet).
    let handed = || {
        aiden_tests::server()
            .logs()
            .matches("run created by the engine's pass")
            .count()
    };
    let mut v1_runs = 0;
    for _ in 0..40 {
        let run = u.settled_run(&start(&u, &p, json!({})).await).await;
        assert_eq!(run["processVersion"], 1, "{run}");
        v1_runs += 1;
        if v1_runs >= 2 && handed() >= 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert!(handed() >= 1, "no start went through the engine's door");
    // A lone start's pass sends its COMMIT with its statement, which fails only when a run
    // was not made: these were, so none was written a second time.
    let rewritten = |logs: &str| {
        logs.lines()
            .filter(|l| l.contains("was not made: written again") && l.contains(&p))
            .count()
    };
    assert_eq!(rewritten(&aiden_tests::server().logs()), 0);

    let other = aiden_service::App::new(
        aiden_graph::Graph::connect(&aiden_tests::server().graph)
            .await
            .expect("graph"),
        aiden_service::Vault::from_base64(aiden_tests::TEST_MASTER_KEY).unwrap(),
    );
    let caller = other.authenticate(&u.token).await.unwrap().expect("caller");
    let patch = |body: serde_json::Value| serde_json::from_value(body).expect("patch");
    let stale = format!("process_id=\"{p}\"");
    let refusals = |logs: &str| {
        logs.lines()
            .filter(|l| l.contains("stale plan refused by the engine") && l.contains(&stale))
            .count()
    };
    // Another instance changes the Process after this one cached its plan; the next start runs
    // the new version. Tests run concurrently, and another test's catalog change clears this
    // server's plan cache: then the start reads the Process afresh and the engine has nothing to
    // refuse. So the change is repeated (each time after warming the cache) until the engine
    // was seen refusing the stale plan; every run, either way, ran the latest version.
    let mut version = 1;
    let mut by_engine = false;
    for _ in 0..5 {
        let warm = u.settled_run(&start(&u, &p, json!({})).await).await;
        assert_eq!(warm["processVersion"], version, "{warm}");
        if version == 1 {
            v1_runs += 1;
        }
        let before = refusals(&aiden_tests::server().logs());
        version += 1;
        let q = format!("v{version}");
        other
            .patch_process(
                &caller,
                &p,
                patch(json!({"steps": [step(&k.echo, "a", json!({"q": q})),
                                       step(&k.echo, "b", json!({"q": "b"}))]})),
                None,
            )
            .await
            .expect("patched elsewhere");
        let run = u.settled_run(&start(&u, &p, json!({})).await).await;
        assert_eq!(run["status"], "completed", "{run}");
        assert_eq!(run["processVersion"], version, "{run}");
        assert_eq!(run["steps"].as_array().unwrap().len(), 2, "{run}");
        if refusals(&aiden_tests::server().logs()) > before {
            by_engine = true;
            break;
        }
    }
    assert!(
        by_engine,
        "the engine never refused the stale plan in 5 changes"
    );

    // The plan is cached again; disabled elsewhere, the next start is refused: by the engine
    // (the cached plan was stale) or by the API's fresh read (the cache was cleared meanwhile),
    // PROC-8 both ways, and no run of a stale plan ran.
    u.settled_run(&start(&u, &p, json!({})).await).await;
    other
        .patch_process(&caller, &p, patch(json!({"enabled": false})), None)
        .await
        .expect("disabled elsewhere");
    u.post(&format!("/v1/processes/{p}/runs"), json!({"inputs": {}}))
        .await
        .rejects(422, "PROC-8");
    // Version 1 ran as often as it was started before the change, never after it.
    assert_eq!(
        k.up.calls_with("q", "v1").len(),
        v1_runs,
        "no run of the stale plan ran"
    );
}

/// PROC-8 at execution: a Tool disabled after the Process was defined fails the step, and so
/// does a disabled Service; nothing reaches the upstream.
#[tokio::test]
async fn proc_8_a_disabled_tool_or_service_fails_the_step_at_execution() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"steps": [step(&k.echo, "a", json!({"q": "tool-off"}))]}),
    )
    .await;
    u.patch(&format!("/v1/tools/{}", k.echo), json!({"enabled": false}))
        .await
        .ok(200);
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    u.patch(&format!("/v1/tools/{}", k.echo), json!({"enabled": true}))
        .await
        .ok(200);
    assert_eq!(run["status"], "failed", "{run}");
    let a = step_of(&run, "a");
    assert_eq!(a["error"]["code"], "PROC-8", "{a}");
    assert_eq!(run["error"]["code"], "PROC-8");
    assert!(k.up.calls().is_empty(), "a disabled Tool is never called");
    take_dead_letter(&format!("{id}/a")).await;
    // Enabled again, the same Process runs.
    let run = u.settled_run(&start(&u, &p, json!({})).await).await;
    assert_eq!(run["status"], "completed", "{run}");

    // A disabled Service (its own kit, left disabled and `down`, which the audit allows).
    let k2 = kit(&u).await;
    let p2 = process(
        &u,
        json!({"steps": [step(&k2.echo, "a", json!({"q": "svc-off"}))]}),
    )
    .await;
    let svc = u
        .patch(
            &format!("/v1/services/{}", k2.service),
            json!({"enabled": false}),
        )
        .await
        .ok(200)
        .clone();
    assert_eq!(svc["status"], "down", "SVC-4");
    let id = start(&u, &p2, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(step_of(&run, "a")["error"]["code"], "PROC-8", "{run}");
    assert!(k2.up.calls().is_empty());
    take_dead_letter(&format!("{id}/a")).await;
    assert!(
        findings(&[&k.echo, &k.service, &k2.service, &k2.echo, &p, &p2])
            .await
            .is_empty(),
        "aiden check stays clean"
    );
}

/// TOOL-3 at execution: a Tool on another user's Service that is no longer shared fails.
#[tokio::test]
async fn tool_3_a_service_unshared_after_tool_creation_fails_the_step_at_execution() {
    let owner = user().await;
    let (up, base) = upstream().await;
    let mut svc = fixtures::rest_service_body(true);
    svc["endpoint"] = json!(base);
    let svc = id_of(&fixtures::create(&owner, "services", svc).await);
    let u = user().await;
    let t = tool(
        &u,
        &svc,
        &base,
        json!({"type": "rest_api", "method": "GET", "path": "/echo?q={{q}}"}),
        json!({"q": {"type": "string"}}),
        json!({}),
    )
    .await;
    let p = process(
        &u,
        json!({"steps": [step(&t, "a", json!({"q": "shared"}))]}),
    )
    .await;
    let run = u.settled_run(&start(&u, &p, json!({})).await).await;
    assert_eq!(run["status"], "completed", "{run}");

    owner
        .patch(&format!("/v1/services/{svc}"), json!({"shared": false}))
        .await
        .ok(200);
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    owner
        .patch(&format!("/v1/services/{svc}"), json!({"shared": true}))
        .await
        .ok(200);
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(step_of(&run, "a")["error"]["code"], "TOOL-3", "{run}");
    assert_eq!(
        up.calls().len(),
        1,
        "only the first run reached the upstream"
    );
    take_dead_letter(&format!("{id}/a")).await;
}

/// SEC-6 at execution: a shared Process of A, calling A's Tool that carries A's Secret, started
/// by B: the Secret does not belong to the user the run executes for, so the step fails
/// (PERMISSION_DENIED) and the Secret is never sent.
#[tokio::test]
async fn sec_6_a_secret_is_only_used_for_runs_of_its_owner() {
    let a = user().await;
    let (up, base) = upstream().await;
    let svc = id_of(
        &fixtures::create(
            &a,
            "services",
            json!({"id": unique("svc"), "name": "keyed", "type": "rest_api", "protocol": "http",
                "endpoint": base, "connectionSchema": fixtures::rest_schema(),
                "requiresSecret": true, "shared": true}),
        )
        .await,
    );
    let secret_value = unique("s3cr3t");
    let secret = fixtures::secret(&a, &secret_value).await;
    let t = tool(
        &a,
        &svc,
        &base,
        json!({"type": "rest_api", "method": "GET", "path": "/echo?q={{q}}"}),
        json!({"q": {"type": "string"}}),
        json!({"secretId": secret, "secretScope": "header:X-Key", "shared": true}),
    )
    .await;
    let mut body = json!({"steps": [step(&t, "a", json!({"q": "keyed"}))]});
    body["shared"] = json!(true);
    let p = process(&a, body).await;

    // The owner's own run uses the Secret.
    let run = a.settled_run(&start(&a, &p, json!({})).await).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(up.calls()[0].headers.get("x-key"), Some(&secret_value));

    let b = user().await;
    let id = start(&b, &p, json!({})).await;
    let run = b.settled_run(&id).await;
    let calls = up.calls();
    assert_eq!(
        calls.len(),
        1,
        "another user's run must not call with A's Secret: {calls:?}"
    );
    assert_eq!(run["status"], "failed", "{run}");
    let code = step_of(&run, "a")["error"]["code"].clone();
    assert!(
        code == "PERMISSION_DENIED" || code == "SEC-6",
        "SEC-6 failure code: {run}"
    );
    assert!(!run.to_string().contains(&secret_value));
    take_dead_letter(&format!("{id}/a")).await;
}

/// SEC-1 on the failure path: a call that sends a Secret and fails for good (HTTP 500 on every
/// attempt) leaves the plaintext nowhere a user or operator sees: not in the run, its event
/// log, the dead-lettered job or its reason, nor the server's log.
#[tokio::test]
async fn sec_1_a_failing_call_with_a_secret_leaks_it_nowhere() {
    let u = user().await;
    let (up, base) = upstream().await;
    let svc = id_of(
        &fixtures::create(
            &u,
            "services",
            json!({"id": unique("svc"), "name": "keyed", "type": "rest_api", "protocol": "http",
                "endpoint": base, "connectionSchema": fixtures::rest_schema(),
                "requiresSecret": true}),
        )
        .await,
    );
    let secret_value = unique("failing-s3cr3t");
    let secret = fixtures::secret(&u, &secret_value).await;
    let s = json!({"type": "string"});
    let t = tool(
        &u,
        &svc,
        &base,
        json!({"type": "rest_api", "method": "GET", "path": "/script?key={{key}}&plan={{plan}}"}),
        json!({"key": s, "plan": s}),
        json!({"secretId": secret, "secretScope": "header:X-Key"}),
    )
    .await;
    let key = unique("k");
    let p = process(
        &u,
        json!({"steps": [step(&t, "a", json!({"key": key, "plan": "500"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "failed", "{run}");
    let calls = up.calls_with("key", &key);
    assert_eq!(calls.len(), 3, "three attempts");
    assert!(
        calls
            .iter()
            .all(|c| c.headers.get("x-key") == Some(&secret_value)),
        "every attempt sent the Secret"
    );
    let (reason, message) = take_dead_letter_message(&format!("{id}/a"), Duration::from_secs(10))
        .await
        .expect("the exhausted job is dead-lettered");
    let events = sse(&u, &id, None).await;
    for (what, text) in [
        ("run", run.to_string()),
        ("events", format!("{events:?}")),
        ("dead-letter reason", reason),
        ("dead-lettered message", message),
        ("server log", aiden_tests::server().logs()),
    ] {
        assert!(!text.contains(&secret_value), "the Secret is in the {what}");
    }
}

/// Runs are private to whoever started them; bad starts are refused before anything runs.
#[tokio::test]
async fn runs_are_private_and_bad_starts_are_refused() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"initialContext": ["q"], "steps": [step(&k.echo, "a", json!({"q": "{{q}}"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({"q": "private"})).await;
    let other = user().await;
    let r = other.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (404, "NOT_FOUND"),
        "{:?}",
        r.body
    );
    assert_eq!(
        other
            .post(&format!("/v1/runs/{id}/cancel"), json!({}))
            .await
            .status,
        404
    );
    assert_eq!(u.get("/v1/runs/no-such-run").await.status, 404);
    // An admin reads every run.
    assert_eq!(admin().get(&format!("/v1/runs/{id}")).await.status, 200);
    let run = u.settled_run(&id).await;
    assert_eq!(
        run["status"], "completed",
        "a refused cancel changed nothing: {run}"
    );

    // The run list: the owner's own, newest first, narrowed by Process and status; another user
    // sees none of them; an admin sees them too.
    let second = start(&u, &p, json!({"q": "second"})).await;
    u.settled_run(&second).await;
    let mine = u.get(&format!("/v1/runs?processId={p}")).await;
    let ids: Vec<&str> = mine.ok(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [second.as_str(), id.as_str()], "newest first");
    let page = u.get(&format!("/v1/runs?processId={p}&limit=1")).await;
    let page = page.ok(200);
    assert_eq!(page["items"][0]["id"], second.as_str());
    let cursor = page["nextCursor"].as_str().expect("a second page");
    let rest = u
        .get(&format!("/v1/runs?processId={p}&limit=1&cursor={cursor}"))
        .await;
    assert_eq!(rest.ok(200)["items"][0]["id"], id.as_str());
    assert_eq!(rest.ok(200)["items"][0]["status"], "completed");
    let failed = u
        .get(&format!("/v1/runs?processId={p}&status=failed"))
        .await;
    assert_eq!(failed.ok(200)["items"], json!([]));
    let theirs = other.get(&format!("/v1/runs?processId={p}")).await;
    assert_eq!(theirs.ok(200)["items"], json!([]), "runs are private");
    let all = admin().get(&format!("/v1/runs?processId={p}")).await;
    assert_eq!(all.ok(200)["items"].as_array().unwrap().len(), 2);
    let bad = u.get("/v1/runs?status=sideways").await;
    assert_eq!((bad.status.as_u16(), bad.code()), (400, "VALIDATION_ERROR"));

    // The Process is private: invisible to the other user.
    let r = other
        .post(
            &format!("/v1/processes/{p}/runs"),
            json!({"inputs": {"q": "x"}}),
        )
        .await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    let r = u
        .post(
            &format!("/v1/processes/{}/runs", unique("nope")),
            json!({"inputs": {}}),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (404, "NOT_FOUND"),
        "{:?}",
        r.body
    );
    let r = u
        .post(&format!("/v1/processes/{p}/runs"), json!({"inputs": {}}))
        .await;
    // PROC-5 for the caller: the inputs satisfy the Process's initialContext.
    r.rejects(422, "PROC-5");
    u.patch(&format!("/v1/processes/{p}"), json!({"enabled": false}))
        .await
        .ok(200);
    u.post(
        &format!("/v1/processes/{p}/runs"),
        json!({"inputs": {"q": "x"}}),
    )
    .await
    .rejects(422, "PROC-8");
    assert_eq!(
        k.up.calls().len(),
        2,
        "only the two accepted runs called out"
    );
    // The event stream of a missing run is a 404 too, before any streaming.
    let missing = u
        .raw(reqwest::Method::GET, "/v1/runs/nope/events")
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}
