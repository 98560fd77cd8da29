//! Runs you can replay (FORK-1..3, REPLAY-1): a fork reuses the original's recorded results
//! without calling their Tools, runs its step and everything downstream anew, and is recorded as
//! such in the graph; the diff of two runs; a dry replay of a new version over recorded runs.

use aiden_tests::{ask_query, graph_rows, user};
use serde_json::json;

use super::*;

/// `a → b → c`, each echo step's input built from the one before; its run on `q`, settled.
async fn chain(u: &Client, k: &Kit) -> (String, String) {
    let p = process(
        u,
        json!({"initialContext": ["q"], "steps": [
            step(&k.echo, "a", json!({"q": "{{q}}"})),
            step(&k.echo, "b", json!({"q": "{{a.body.x}}-b"})),
            step(&k.echo, "c", json!({"q": "{{b.body.x}}-c"})),
        ], "outputTemplate": "{{c.body.x}}"}),
    )
    .await;
    let id = start(u, &p, json!({"q": "hi"})).await;
    let run = u.settled_run(&id).await;
    assert_eq!(run["output"], "hi-b-c", "{run}");
    (p, id)
}

async fn fork(u: &Client, run: &str, body: Value) -> Value {
    let r = u.post(&format!("/v1/runs/{run}/forks"), body).await;
    r.ok(202).clone()
}

fn step_view<'a>(run: &'a Value, id: &str) -> &'a Value {
    run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stepId"] == id)
        .unwrap_or_else(|| panic!("no step {id} in {run}"))
}

/// FORK-1: forked from its last step, a chain calls exactly that step's Tool; the earlier
/// steps take the original's outputs, say so in the view and the events, and the graph has
/// `FORKED_FROM {atStep}` and one `REUSED_FROM` per reused StepRun.
#[tokio::test]
async fn fork_1_a_fork_from_the_last_step_calls_only_it_and_reuses_the_rest() {
    let u = user().await;
    let k = kit(&u).await;
    let (_, original) = chain(&u, &k).await;
    assert_eq!(k.up.calls_to("echo").len(), 3);

    let started = fork(&u, &original, json!({"fromStep": "c"})).await;
    assert_eq!(started["forkedFrom"], original.as_str());
    assert_eq!(started["reusable"], json!(["a", "b"]));
    let id = started["runId"].as_str().unwrap().to_owned();
    let run = u.settled_run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], "hi-b-c");
    assert_eq!(
        (&run["forkedFrom"], &run["forkStep"]),
        (&json!(original), &json!("c"))
    );
    let calls = k.up.calls_to("echo");
    assert_eq!(
        calls.len(),
        4,
        "only the fork's step called its Tool: {calls:?}"
    );
    assert_eq!(calls[3].query["q"], "hi-b-c");
    for s in ["a", "b"] {
        let v = step_view(&run, s);
        assert_eq!(v["reusedFrom"], format!("{original}/{s}"), "{v}");
        assert_eq!(
            (&v["status"], &v["attempts"]),
            (&json!("completed"), &json!(0))
        );
    }
    assert!(step_view(&run, "c")["reusedFrom"].is_null());
    assert_eq!(step_view(&run, "c")["attempts"], 1);
    let events = sse(&u, &id, None).await;
    let reused: Vec<&str> = events
        .iter()
        .filter(|(_, e)| e["kind"] == "step.reused")
        .filter_map(|(_, e)| e["stepId"].as_str())
        .collect();
    assert_eq!(reused, ["a", "b"]);

    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Lineage {
        at_step: String,
        original: String,
        reused: Vec<(String, String, bool)>,
    }
    let rows: Vec<Lineage> = graph_rows(
        neo4rs::query(
            "MATCH (f:Run {id: $id})-[e:FORKED_FROM]->(o:Run)
             OPTIONAL MATCH (f)-[:HAS_STEP_RUN]->(s)-[:REUSED_FROM]->(src)
             WITH e, o, s, src ORDER BY s.stepId
             RETURN e.atStep AS atStep, o.id AS original,
                    collect([s.stepId, src.id, s.inputHash = src.inputHash]) AS reused",
        )
        .param("id", id.as_str()),
    )
    .await;
    // docs/queries.md, question 12: the original's forks and what each reused.
    let forks: Vec<Value> = graph_rows(ask_query("run_forks", &[("runId", json!(original))])).await;
    assert_eq!(forks.len(), 1, "{forks:?}");
    assert_eq!(
        (
            &forks[0]["forkId"],
            &forks[0]["atStep"],
            &forks[0]["reusedSteps"]
        ),
        (&json!(id), &json!("c"), &json!(["a", "b"]))
    );
    assert_eq!(rows.len(), 1, "one FORKED_FROM edge");
    assert_eq!(
        (rows[0].at_step.as_str(), &rows[0].original),
        ("c", &original)
    );
    assert_eq!(
        rows[0].reused,
        [
            ("a".to_owned(), format!("{original}/a"), true),
            ("b".to_owned(), format!("{original}/b"), true)
        ]
    );
}

/// FORK-1: changed run inputs change the first step's input, so nothing is reused and every
/// step runs; the diff marks the changed inputs, and a fork with the same inputs diffs as
/// reused and same.
#[tokio::test]
async fn fork_1_changed_inputs_run_every_step_whose_input_changed_and_the_diff_says_so() {
    let u = user().await;
    let k = kit(&u).await;
    let (_, original) = chain(&u, &k).await;
    let changed = fork(
        &u,
        &original,
        json!({"fromStep": "c", "inputs": {"q": "yo"}}),
    )
    .await;
    let changed = changed["runId"].as_str().unwrap().to_owned();
    let run = u.settled_run(&changed).await;
    assert_eq!(run["output"], "yo-b-c", "{run}");
    assert_eq!(k.up.calls_to("echo").len(), 6, "all three ran anew");
    assert!(run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["reusedFrom"].is_null()));

    let diff = u.get(&format!("/v1/runs/{original}/diff/{changed}")).await;
    let diff = diff.ok(200);
    let verdicts: Vec<&Value> = diff["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["verdict"])
        .collect();
    assert_eq!(verdicts, [&json!("input_changed"); 3], "{diff}");
    assert_eq!(diff["differing"], 3);
    assert_eq!(diff["steps"][0]["a"]["input"], json!({"q": "hi"}));
    assert_eq!(diff["steps"][0]["b"]["input"], json!({"q": "yo"}));

    let same = fork(&u, &original, json!({"fromStep": "c"})).await;
    let same = same["runId"].as_str().unwrap().to_owned();
    u.settled_run(&same).await;
    let diff = u.get(&format!("/v1/runs/{original}/diff/{same}")).await;
    let diff = diff.ok(200);
    let verdicts: Vec<&Value> = diff["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["verdict"])
        .collect();
    assert_eq!(
        verdicts,
        [&json!("reused"), &json!("reused"), &json!("same")],
        "{diff}"
    );
    assert_eq!(
        (&diff["differing"], &diff["bForkedFrom"]),
        (&json!(0), &json!(original))
    );
}

/// FORK-1 with a newer version: steps whose call and input are unchanged are reused, the
/// step the version changed runs with its new input.
#[tokio::test]
async fn fork_1_a_fork_on_a_newer_version_runs_the_changed_step_with_its_new_input() {
    let u = user().await;
    let k = kit(&u).await;
    let (p, original) = chain(&u, &k).await;
    let steps = json!([
        step(&k.echo, "a", json!({"q": "{{q}}"})),
        step(&k.echo, "b", json!({"q": "{{a.body.x}}-b"})),
        step(&k.echo, "c", json!({"q": "{{b.body.x}}-C2"})),
    ]);
    u.patch(&format!("/v1/processes/{p}"), json!({"steps": steps}))
        .await
        .ok(200);
    let started = fork(&u, &original, json!({"fromStep": "c", "processVersion": 2})).await;
    assert_eq!(started["processVersion"], 2);
    let run = u.settled_run(started["runId"].as_str().unwrap()).await;
    assert_eq!(
        (&run["processVersion"], &run["output"]),
        (&json!(2), &json!("hi-b-C2"))
    );
    assert_eq!(k.up.calls_to("echo").len(), 4);
}

/// FORK-2, FORK-3: refusals name their rule and create nothing.
#[tokio::test]
async fn fork_2_fork_3_refusals_name_the_rule_and_start_nothing() {
    let u = user().await;
    let k = kit(&u).await;
    let (_, original) = chain(&u, &k).await;
    let path = format!("/v1/runs/{original}/forks");
    u.post(&path, json!({"fromStep": "nope"}))
        .await
        .rejects(422, "FORK-3");
    u.post(&path, json!({"fromStep": "c", "processVersion": 9}))
        .await
        .rejects(422, "FORK-3");
    u.post(&path, json!({"fromStep": "c", "processId": "another"}))
        .await
        .rejects(422, "FORK-3");
    // Another user's run is not theirs to see.
    let other = user().await;
    assert_eq!(
        other.post(&path, json!({"fromStep": "c"})).await.status,
        404
    );

    let held = hold_process(&u, &k, "h", "fork-2", 3000).await;
    let running = start(&u, &held, json!({})).await;
    u.post(
        &format!("/v1/runs/{running}/forks"),
        json!({"fromStep": "h"}),
    )
    .await
    .rejects(409, "FORK-2");
    let runs = u.get("/v1/runs?limit=50").await;
    let forks = runs.ok(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["id"] != original.as_str() && r["id"] != running.as_str())
        .count();
    assert_eq!(forks, 0, "a refused fork starts nothing");
    u.post(&format!("/v1/runs/{running}/cancel"), json!({}))
        .await
        .ok(202);
}

/// REPLAY-1: a new version replayed over recorded runs calls and writes nothing, and names
/// the first step where each run diverges, with both inputs; the version the runs ran on
/// replays the same.
#[tokio::test]
async fn replay_1_a_new_version_replays_over_history_and_names_the_divergence() {
    let u = user().await;
    let k = kit(&u).await;
    let (p, first) = chain(&u, &k).await;
    let second = start(&u, &p, json!({"q": "yo"})).await;
    u.settled_run(&second).await;
    let steps = json!([
        step(&k.echo, "a", json!({"q": "{{q}}"})),
        step(&k.echo, "b", json!({"q": "{{a.body.x}}-B2"})),
        step(&k.echo, "c", json!({"q": "{{b.body.x}}-c"})),
    ]);
    u.patch(&format!("/v1/processes/{p}"), json!({"steps": steps}))
        .await
        .ok(200);
    let calls = k.up.calls().len();

    let report = u
        .post(
            &format!("/v1/processes/{p}/versions/2/replay"),
            json!({"last": 10}),
        )
        .await;
    let report = report.ok(200).clone();
    assert_eq!(
        (&report["same"], &report["diverged"]),
        (&json!(0), &json!(2)),
        "{report}"
    );
    for r in report["runs"].as_array().unwrap() {
        let d = &r["divergence"];
        assert_eq!(
            (&d["stepId"], &d["kind"]),
            (&json!("b"), &json!("input_changed")),
            "{r}"
        );
        let q = if r["runId"] == first.as_str() {
            "hi"
        } else {
            "yo"
        };
        assert_eq!(d["recordedInput"], json!({"q": format!("{q}-b")}));
        assert_eq!(d["replayedInput"], json!({"q": format!("{q}-B2")}));
        assert_eq!(r["stepsReplayed"], 1);
    }
    let same = u
        .post(
            &format!("/v1/processes/{p}/versions/1/replay"),
            json!({"runs": [first, second]}),
        )
        .await;
    let same = same.ok(200);
    assert_eq!(
        (&same["same"], &same["diverged"]),
        (&json!(2), &json!(0)),
        "{same}"
    );
    assert_eq!(k.up.calls().len(), calls, "a replay calls nothing");
    let listed = u.get(&format!("/v1/runs?processId={p}")).await;
    assert_eq!(
        listed.ok(200)["items"].as_array().unwrap().len(),
        2,
        "and starts nothing"
    );

    let path = format!("/v1/processes/{p}/versions/2/replay");
    u.post(&path, json!({"runs": [first], "last": 3}))
        .await
        .rejects(422, "REPLAY-1");
    let (_, elsewhere) = chain(&u, &k).await;
    u.post(&path, json!({"runs": [elsewhere]}))
        .await
        .rejects(422, "REPLAY-1");
}

/// FORK-1 (audit): `aiden check` finds a reused StepRun whose source is gone, doubled, of
/// another step or input, and is quiet again once it is repaired.
#[tokio::test]
async fn fork_1_check_reports_a_reused_step_run_without_its_one_true_source() {
    let u = user().await;
    let k = kit(&u).await;
    let (_, original) = chain(&u, &k).await;
    let started = fork(&u, &original, json!({"fromStep": "c"})).await;
    let id = started["runId"].as_str().unwrap().to_owned();
    u.settled_run(&id).await;
    let reused = format!("{id}/a");
    let findings = || crate::audit::findings_for(&reused);
    assert!(findings().await.is_empty(), "a fresh fork is clean");
    let q = |text: &str| {
        neo4rs::query(text)
            .param("sr", reused.as_str())
            .param("b", format!("{original}/b"))
    };
    // A second source, of another step.
    aiden_tests::graph_write(q(
        "MATCH (sr:StepRun {id: $sr}), (b:StepRun {id: $b}) CREATE (sr)-[:REUSED_FROM]->(b)",
    ))
    .await;
    assert_eq!(findings().await, vec!["FORK-1"]);
    aiden_tests::graph_write(q(
        "MATCH (:StepRun {id: $sr})-[e:REUSED_FROM]->(:StepRun {id: $b}) DELETE e",
    ))
    .await;
    assert!(findings().await.is_empty(), "repaired");
    // Another input than the source's.
    aiden_tests::graph_write(q(
        "MATCH (sr:StepRun {id: $sr}) SET sr.keptHash = sr.inputHash, sr.inputHash = 'other'",
    ))
    .await;
    assert_eq!(findings().await, vec!["FORK-1"]);
    aiden_tests::graph_write(q(
        "MATCH (sr:StepRun {id: $sr}) SET sr.inputHash = sr.keptHash REMOVE sr.keptHash",
    ))
    .await;
    assert!(findings().await.is_empty(), "repaired");
}
