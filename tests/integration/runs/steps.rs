//! Steps: a sequential chain passing outputs on (EXEC-1), the seed form, parallel steps and
//! their join (PROC-4), conditions, and a variable missing at run time.

use std::sync::atomic::Ordering;

use aiden_tests::{step_of, user};
use serde_json::json;

use super::*;

/// EXEC-1: three sequential steps, each one job on the rest_api queue; outputs flow on by path
/// access, exact `{{name}}` inputs keep their JSON type, `{{json v}}` embeds JSON and the
/// single-brace `{step.name}` form works; the run output is the outputTemplate.
#[tokio::test]
async fn exec_1_sequential_chain_passes_outputs_with_their_json_types() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"initialContext": ["q"], "steps": [
            step(&k.echo, "a", json!({"q": "{{q}}"})),
            step(&k.post, "b", json!({"tag": "{{a.body.x}}", "n": "{{a.body.n}}", "obj": "{{a.body.obj}}"})),
            step(&k.post, "c", json!({"tag": "j={{json b.body.got.obj}};s={step.q}",
                                      "n": "{{b.body.got.n}}", "obj": "{step.b}"})),
        ], "outputTemplate": "{{a.body.x}}:{{c.body.got.n}}:{{c.body.got.obj.body.tag}}"}),
    )
    .await;
    let id = start(&u, &p, json!({"q": "hello world"})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["processId"], p);
    assert_eq!(run["depth"], 1);
    assert!(run["parentRunId"].is_null());
    assert_eq!(run["output"], "hello world:7:hello world", "{run}");

    let calls = k.up.calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(
        (calls[0].route.as_str(), calls[0].query["q"].as_str()),
        ("echo", "hello world")
    );
    // b: `{{a.body.n}}` stayed an integer and `{{a.body.obj}}` an object.
    assert_eq!(
        (calls[1].route.as_str(), calls[1].method.as_str()),
        ("post", "POST")
    );
    assert_eq!(calls[1].query["tag"], "hello world");
    assert_eq!(
        calls[1].body,
        json!({"n": 7, "obj": {"k": [1, 2], "s": "deep"}})
    );
    assert!(calls[1].body["n"].is_i64(), "{:?}", calls[1].body);
    // c: `{{json …}}` embedded JSON text; `{step.q}` read the initial context; the seed form
    // as a whole input kept the value's type too.
    assert_eq!(
        calls[2].query["tag"],
        r#"j={"k":[1,2],"s":"deep"};s=hello world"#
    );
    assert_eq!(
        calls[2].body,
        json!({"n": 7, "obj": {"status": 200, "body": {"tag": "hello world",
                               "got": {"n": 7, "obj": {"k": [1, 2], "s": "deep"}}}}})
    );

    for s in run["steps"].as_array().unwrap() {
        assert_eq!(s["status"], "completed", "{s}");
        assert_eq!(s["attempts"], 1, "{s}");
        assert!(
            s["workerId"]
                .as_str()
                .is_some_and(|w| w.starts_with("rest_api-")),
            "{s}"
        );
        assert!(s["telemetry"]["latencyMs"].is_u64(), "{s}");
        assert_eq!(s["telemetry"]["retryCount"], 0, "{s}");
        assert!(
            s["startedAt"].is_string() && s["finishedAt"].is_string(),
            "{s}"
        );
        assert!(s["error"].is_null(), "{s}");
    }
    // Each step's output is the executor's {status, body}.
    assert_eq!(
        step_of(&run, "b")["output"],
        json!({"status": 200, "body": {"tag": "hello world",
               "got": {"n": 7, "obj": {"k": [1, 2], "s": "deep"}}}})
    );
}

/// The seed form with a path, `{step.a.body.x}`: the interpolator rewrites it to
/// `{{a.body.x}}`, so the job must carry `a` and the step must see the nested value.
#[tokio::test]
async fn seed_form_with_a_path_reads_a_nested_value() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"initialContext": ["q"], "steps": [
            step(&k.echo, "a", json!({"q": "{{q}}"})),
            step(&k.echo, "b", json!({"q": "t-{step.a.body.x}"}))],
            "outputTemplate": "{{b.body.x}}"}),
    )
    .await;
    let run = u
        .settled_run(&start(&u, &p, json!({"q": "seed"})).await)
        .await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], "t-seed");
    let calls = k.up.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].query["q"], "t-seed");
}

/// PROC-4 at run time: parallel steps without dependsOn start together; a sequential step
/// after them waits for both.
#[tokio::test]
async fn parallel_steps_run_concurrently_and_a_sequential_step_joins_them() {
    let u = user().await;
    let k = kit(&u).await;
    let par = |id: &str| {
        json!({"id": id, "tool": k.hold, "inputs": {"tag": id, "ms": 300},
               "output": {"variable": id}, "execution": {"mode": "parallel"}})
    };
    let p = process(
        &u,
        json!({"steps": [par("p1"), par("p2"),
            step(&k.echo, "join", json!({"q": "{{p1.body.tag}}+{{p2.body.tag}}"}))],
            "outputTemplate": "{{join.body.x}}"}),
    )
    .await;
    let id = start(&u, &p, json!({})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], "p1+p2");

    let (h1, h2) = (k.up.hold("p1").unwrap(), k.up.hold("p2").unwrap());
    let (e1, e2) = (h1.end.unwrap(), h2.end.unwrap());
    assert!(
        h1.start < e2 && h2.start < e1,
        "both parallel calls began before either finished: {h1:?} {h2:?}"
    );
    assert_eq!(k.up.max_in_flight.load(Ordering::SeqCst), 2);
    let calls = k.up.calls();
    assert_eq!(
        calls.last().unwrap().route,
        "echo",
        "join called last: {calls:?}"
    );
    assert_eq!(calls.len(), 3);

    let log = kinds(&sse(&u, &id, None).await);
    let pos = |k: &str| {
        log.iter()
            .position(|x| x == k)
            .unwrap_or_else(|| panic!("no {k} in {log:?}"))
    };
    assert!(pos("step.queued p2") < pos("step.completed p1"), "{log:?}");
    assert!(pos("step.queued p1") < pos("step.completed p2"), "{log:?}");
    assert!(
        pos("step.completed p1") < pos("step.queued join"),
        "{log:?}"
    );
    assert!(
        pos("step.completed p2") < pos("step.queued join"),
        "{log:?}"
    );
}

/// A false condition skips the step (variable `null`) and later steps still run.
#[tokio::test]
async fn a_false_condition_skips_the_step_with_a_null_variable_and_the_run_goes_on() {
    let u = user().await;
    let k = kit(&u).await;
    let mut maybe = step(&k.echo, "maybe", json!({"q": "never"}));
    maybe["execution"] = json!({"condition": "{{#if go}}yes{{/if}}"});
    let mut zero = step(&k.echo, "zero", json!({"q": "never-zero"}));
    zero["execution"] = json!({"condition": "{{count}}"});
    let p = process(
        &u,
        json!({"initialContext": ["go", "count"], "steps": [maybe, zero,
            step(&k.echo, "after", json!({"q": "after-{{json maybe}}-{{json zero}}"}))],
            "outputTemplate": "{{after.body.x}}"}),
    )
    .await;
    let id = start(&u, &p, json!({"go": false, "count": 0})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    for s in ["maybe", "zero"] {
        let st = step_of(&run, s);
        assert_eq!(st["status"], "skipped", "{st}");
        assert_eq!(st["attempts"], 0, "{st}");
        assert!(st["output"].is_null());
    }
    assert_eq!(run["output"], "after-null-null");
    let calls = k.up.calls();
    assert_eq!(
        calls.len(),
        1,
        "only `after` called the upstream: {calls:?}"
    );
    assert_eq!(calls[0].query["q"], "after-null-null");
    let log = kinds(&sse(&u, &id, None).await);
    assert!(log.contains(&"step.skipped maybe".to_owned()), "{log:?}");
    assert!(!log.contains(&"step.queued maybe".to_owned()), "{log:?}");

    // The same Process with a true condition runs the step.
    let run = u
        .settled_run(&start(&u, &p, json!({"go": "yes", "count": 2})).await)
        .await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(step_of(&run, "maybe")["status"], "completed");
    assert_eq!(step_of(&run, "zero")["status"], "completed");
    assert_eq!(k.up.calls_with("q", "never").len(), 1);
}

/// A variable missing at run time fails the step with INTERPOLATION_ERROR and the run with
/// it; the Tool is never called with an empty value, and later steps never run.
#[tokio::test]
async fn a_missing_variable_fails_with_interpolation_error_and_nothing_is_sent() {
    let u = user().await;
    let k = kit(&u).await;
    let p = process(
        &u,
        json!({"initialContext": ["q"], "steps": [
            step(&k.echo, "a", json!({"q": "{{q}}"})),
            step(&k.echo, "b", json!({"q": "v={{a.body.nope}}"})),
            step(&k.echo, "c", json!({"q": "c"}))]}),
    )
    .await;
    let id = start(&u, &p, json!({"q": "first"})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(step_of(&run, "a")["status"], "completed");
    let b = step_of(&run, "b");
    assert_eq!(b["status"], "failed", "{b}");
    assert_eq!(b["error"]["code"], "INTERPOLATION_ERROR", "{b}");
    assert!(
        b["error"]["message"].as_str().unwrap().contains("nope"),
        "the error names what is missing: {b}"
    );
    assert_eq!(run["error"]["code"], "INTERPOLATION_ERROR", "{run}");
    assert_eq!(step_of(&run, "c")["status"], "canceled");
    let calls = k.up.calls();
    assert_eq!(calls.len(), 1, "only `a` reached the upstream: {calls:?}");
    assert_eq!(calls[0].query["q"], "first");
    let log = kinds(&sse(&u, &id, None).await);
    assert_eq!(log.last().unwrap(), "run.failed", "{log:?}");
    assert!(log.contains(&"step.failed b".to_owned()), "{log:?}");
    assert!(!log.iter().any(|e| e.ends_with(" c")), "{log:?}");
    take_dead_letter(&format!("{id}/b")).await;
}

/// Where a step's time went (issue #49): every settled step of a chain shows `queuedAt` and
/// `hops`, stamped by the engine (its pass's write and commit) and the worker (delivery and
/// result), in the order they happened, and the next step's pass writes after the result.
#[tokio::test]
async fn a_settled_step_shows_where_its_time_went_hop_by_hop() {
    let u = user().await;
    let k = kit(&u).await;
    let id = start_echo_pair(&u, &k.echo).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    let steps = run["steps"].as_array().unwrap();
    let at = |s: &serde_json::Value, k: &str| {
        s["hops"][k]
            .as_i64()
            .unwrap_or_else(|| panic!("no {k}: {s}"))
    };
    for s in steps {
        assert!(s["queuedAt"].is_string(), "{s}");
        let written = at(s, "statementStartUs") + at(s, "statementUs");
        assert!(at(s, "statementUs") >= 0, "{s}");
        assert!(
            written <= at(s, "commitEndUs"),
            "committed after it was written: {s}"
        );
        assert!(
            at(s, "commitEndUs") <= at(s, "deliveredUs"),
            "published once durable: {s}"
        );
        assert!(at(s, "deliveredUs") <= at(s, "resultUs"), "{s}");
    }
    assert!(
        at(&steps[0], "resultUs") <= at(&steps[1], "statementStartUs"),
        "b is dispatched by a pass after a's result: {run}"
    );
}
