//! Fault tests: real `aiden serve` and `aiden worker` processes, killed and restarted mid-run
//! (also while an agent Alternative is generating), a RabbitMQ restart mid-run, the active one
//! of two `aiden serve` instances killed (engine takeover), traces across the processes and a
//! graph outage; a retry that overtakes its failed attempt's result; a job the broker lost. Each run must still
//! complete, its step results recorded once, and `aiden check` must stay clean. One test per
//! fault, each on a [`Rig`] of its own processes; they restart the broker and kill servers, so
//! the rig's lock runs them one at a time.

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use aiden_tests::chaos::{
    assert_completed_once, define, define_agent, rabbitmqctl, running_on, stack, start,
    start_at_slow_step, start_upstream, Upstream,
};
use aiden_tests::procs::{
    admin_token, assert_check_clean, free_port, log_level_with, sigkill, spawn_env, spawn_logged,
    wait_until, Api, Proc,
};
use serde_json::{json, Value};

/// The tests of this binary restart the broker and kill `aiden serve`: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What the engine logs when a pass could not be written (the graph is down): its messages go
/// back to RabbitMQ.
const PASS_FAILED: &str = "engine pass failed; messages requeued";
/// What the engine logs when it could not renew its lease and stops (the graph is down): it
/// consumes nothing more, so what the workers report waits in RabbitMQ.
const ENGINE_STOPPING: &str = "stopping the engine";

/// One fault test's processes: an `aiden serve` and a `rest_api` pool (both logging to files
/// the test can wait on), the counting upstream, and the binary's lock, held until the
/// processes are gone (the lock is the last field, so it is dropped last).
struct Rig {
    port: u16,
    api: Api,
    up: Upstream,
    upstream: String,
    serve: Proc,
    worker: Proc,
    serve_env: Vec<(&'static str, String)>,
    worker_env: Vec<(&'static str, String)>,
    suffix: String,
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

impl Rig {
    async fn new() -> Self {
        Self::with_env(Vec::new(), Vec::new()).await
    }

    /// `serve_env` and `worker_env` are added to each process's environment (also on restarts).
    async fn with_env(
        serve_env: Vec<(&'static str, String)>,
        worker_env: Vec<(&'static str, String)>,
    ) -> Self {
        let serial = SERIAL.lock().await;
        let port = free_port();
        let api = Api::local(port);
        let (up, upstream) = start_upstream().await;
        let serve = spawn_logged(&["serve"], port, &serve_env);
        api.wait_ready().await;
        let worker = Self::pool(port, &worker_env);
        Self {
            port,
            api,
            up,
            upstream,
            serve,
            worker,
            serve_env,
            worker_env,
            suffix: uuid::Uuid::now_v7().simple().to_string(),
            _serial: serial,
        }
    }

    fn pool(port: u16, env: &[(&'static str, String)]) -> Proc {
        spawn_logged(
            &["worker", "--type", "rest_api", "--concurrency", "2"],
            port,
            env,
        )
    }

    /// `what` and a suffix unique to this run of the test: ids that never meet an earlier run's.
    fn tag(&self, what: &str) -> String {
        format!("{what}-{}", &self.suffix[20..])
    }

    /// SIGKILLs the `rest_api` pool and starts a new one.
    fn restart_worker(&mut self) {
        sigkill(&mut self.worker);
        self.worker = Self::pool(self.port, &self.worker_env);
    }

    /// SIGKILLs `aiden serve` and starts a new one. `sigkill` waits for the process to be gone,
    /// so its port and connections are closed by then: no pause is needed before the new one.
    async fn restart_serve(&mut self) {
        sigkill(&mut self.serve);
        self.serve = spawn_logged(&["serve"], self.port, &self.serve_env);
        self.api.wait_ready().await;
    }
}

/// GRAPH-4, EXEC-2: a worker SIGKILLed in the middle of step b; its job is redelivered to a new
/// worker, the run completes with every step recorded once, and the graph names the lost
/// attempt (`LOST_ON` the killed worker; docs/queries.md, "which runs a Worker held when it
/// died").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_graph_4_exec_2_a_killed_workers_step_is_redelivered_and_recorded_lost_on_it() {
    let mut rig = Rig::new().await;
    let (api, up) = (rig.api.clone(), rig.up.clone());
    let tag = rig.tag("kill");
    let run = start_at_slow_step(&api, &rig.upstream, &up, &tag).await;
    let b = format!("{tag}-b");
    let killed = running_on(&api, &run, "b").await;
    rig.restart_worker();
    assert_completed_once(&api, &run, &up, &tag).await;
    assert_eq!(
        up.calls_for(&b),
        2,
        "the killed attempt and the redelivered one"
    );
    let lost = aiden_tests::graph_rows::<Value>(aiden_tests::ask_query(
        "worker_lost_runs",
        &[("workerId", json!(killed))],
    ))
    .await;
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(
        (&lost[0]["runId"], &lost[0]["stepId"], &lost[0]["attempt"]),
        (&json!(run), &json!("b"), &json!(1)),
    );
    assert_eq!(lost[0]["stepStatus"], "completed");
    assert_eq!(lost[0]["runStatus"], "completed");
    assert!(lost[0]["finishedOn"].as_str().is_some_and(|w| w != killed));
    assert_check_clean(None);
}

/// EXEC-2: RabbitMQ restarted while step b runs (durable queues, a reconnecting engine and
/// pool): the run completes with every step recorded once. The broker stays down until both
/// processes have logged that they lost it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_exec_2_a_broker_restart_mid_step_loses_nothing_and_records_each_step_once() {
    let rig = Rig::new().await;
    let (api, up) = (&rig.api, &rig.up);
    let tag = rig.tag("mq");
    let run = start_at_slow_step(api, &rig.upstream, up, &tag).await;
    let engine_lost = "engine session failed; reconnecting";
    let pool_lost = "worker session ended; reconnecting";
    let (engine_before, pool_before) = (
        rig.serve.log_count(engine_lost),
        rig.worker.log_count(pool_lost),
    );
    rabbitmqctl(&["stop_app"]);
    let within = Duration::from_secs(30);
    rig.serve
        .wait_log(engine_lost, engine_before + 1, within)
        .await;
    rig.worker
        .wait_log(pool_lost, pool_before + 1, within)
        .await;
    rabbitmqctl(&["start_app"]);
    rabbitmqctl(&["await_startup"]);
    assert_completed_once(api, &run, up, &tag).await;
    assert_check_clean(None);
}

/// EXEC-4, EXEC-2: a retry is published (to its delay queue) before its failed attempt's
/// result, so with a short delay it can reach the pool that ran that attempt before the result
/// is confirmed. The pool must run it, not take it for a copy of the attempt it is reporting
/// (which left the step `queued` for good). Every step fails twice; retries are 1 ms apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_exec_4_a_retry_that_arrives_before_its_failed_attempts_result_still_runs() {
    let quick = vec![("AIDEN_RETRY_INITIAL_DELAY_MS", "1".to_owned())];
    let rig = Rig::with_env(Vec::new(), quick).await;
    let (api, up) = (&rig.api, &rig.up);
    let tag = rig.tag("retry");
    for step in ["a", "b", "c"] {
        up.fail_next(&format!("{tag}-{step}"), 2);
    }
    let process = define(api, &rig.upstream, &tag, 0).await;
    let run = start(api, &process).await;
    let settled = api.wait_settled(&run, Duration::from_secs(60)).await;
    assert_eq!(settled["status"], "completed", "{settled}");
    assert_eq!(
        settled["output"],
        json!({"tag": format!("{tag}-c"), "ok": true})
    );
    let events = api.events(&run).await;
    for step in ["a", "b", "c"] {
        let count = |kind: &str| {
            let of = |e: &&Value| e["kind"] == kind && e["stepId"] == step;
            events.iter().filter(of).count()
        };
        assert_eq!(count("step.retrying"), 2, "step {step}: {events:?}");
        assert_eq!(count("step.completed"), 1, "step {step}: {events:?}");
        assert_eq!(up.calls_for(&format!("{tag}-{step}")), 3, "step {step}");
    }
    assert_check_clean(None);
}

/// EXEC-2: a job the broker lost, here purged from its queue while no pool consumed it. Once
/// the step has been queued at one attempt for `AIDEN_ENGINE_JOB_LOST_AFTER_MS` and its type's
/// queue held nothing ready at two sweeps in a row, the engine publishes the job again, the
/// same attempt;
/// a pool started afterwards runs it and the run completes with every step run once. Before,
/// the run waited for the engine's next start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_exec_2_a_job_the_broker_lost_is_published_again_and_its_run_completes() {
    let serve = vec![("AIDEN_ENGINE_JOB_LOST_AFTER_MS", "2000".to_owned())];
    let mut rig = Rig::with_env(serve, Vec::new()).await;
    sigkill(&mut rig.worker);
    let (api, up) = (rig.api.clone(), rig.up.clone());
    let tag = rig.tag("lost");
    let process = define(&api, &rig.upstream, &tag, 0).await;
    let run = start(&api, &process).await;
    let uri = aiden_tests::setting("AIDEN_AMQP_URI", None);
    let broker = aiden_jobs::Broker::connect(&uri).await.expect("broker");
    let queue = aiden_jobs::topology::job_queue("rest_api");
    let ready = || async {
        let depths = broker.queue_depths().await.expect("queue depths");
        depths.into_iter().find(|d| d.0 == queue).map_or(0, |d| d.1)
    };
    let within = |what: &str| (what.to_owned(), Instant::now() + Duration::from_secs(30));
    let (what, deadline) = within("step a's job in its queue");
    while ready().await != 1 {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let channel = broker.connection().create_channel().await.expect("channel");
    let purged = channel
        .queue_purge(&queue, lapin::options::QueuePurgeOptions::default())
        .await
        .expect("purge");
    assert_eq!(purged, 1, "the job was lost");
    let (what, deadline) = within("the engine to publish the lost job again");
    while ready().await != 1 {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    rig.worker = Rig::pool(rig.port, &rig.worker_env);
    assert_completed_once(&api, &run, &up, &tag).await;
    let events = api.events(&run).await;
    let requeued: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "step.queued" && e["stepId"] == "a")
        .collect();
    assert_eq!(requeued.len(), 2, "{events:?}");
    assert_eq!(requeued[1]["data"]["reason"], "job lost", "{events:?}");
    assert_eq!(requeued[1]["data"]["attempt"], 1, "the same attempt");
    assert!(
        rig.serve
            .log_count("jobs lost by the broker published again")
            >= 1
    );
    assert_check_clean(None);
}

/// EXEC-5: `aiden serve` (API and engine) SIGKILLed while step b runs; a new one finishes the
/// run (step b not run again), and a client's event stream resumes across the restart with
/// `Last-Event-ID` without a gap (the run's event log is durable at the end of every engine
/// pass): what the client saw before and after is the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_exec_5_a_killed_server_finishes_the_run_and_its_event_stream_resumes_without_a_gap()
{
    let mut rig = Rig::new().await;
    let (api, up) = (rig.api.clone(), rig.up.clone());
    let tag = rig.tag("serve");
    let run = start_at_slow_step(&api, &rig.upstream, &up, &tag).await;
    let b = format!("{tag}-b");
    let seen = api
        .events_until(&run, None, |e| {
            e["kind"] == "step.started" && e["stepId"] == "b"
        })
        .await;
    let last = seen
        .last()
        .and_then(|e| e["seq"].as_i64())
        .expect("b started");
    rig.restart_serve().await;
    let tail = api.events_until(&run, Some(last), |_| false).await;
    assert_completed_once(&api, &run, &up, &tag).await;
    assert_eq!(up.calls_for(&b), 1, "step b was not re-run");
    let seqs: Vec<i64> = tail.iter().filter_map(|e| e["seq"].as_i64()).collect();
    assert_eq!(
        seqs,
        ((last + 1)..=(last + tail.len() as i64)).collect::<Vec<_>>(),
        "the resumed stream continues the log without a gap: {tail:?}"
    );
    let kinds: Vec<String> = tail
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["kind"].as_str().unwrap(),
                e["stepId"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert!(kinds.contains(&"step.completed b".to_owned()), "{kinds:?}");
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("run.completed "),
        "{kinds:?}"
    );
    let replay = api.events(&run).await;
    let resumed: Vec<Value> = seen.into_iter().chain(tail).collect();
    assert_eq!(
        replay, resumed,
        "what the client saw before and after is the log"
    );
    assert_check_clean(None);
}

/// TURN-6: `aiden serve` SIGKILLed while an agent Alternative is generating: the new engine
/// finishes the run and the Alternative gets the run's output, once (`valid`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_turn_6_a_server_killed_while_an_alternative_generates_leaves_it_valid_once() {
    let mut rig = Rig::new().await;
    let (api, up) = (rig.api.clone(), rig.up.clone());
    let tag = rig.tag("agent");
    let process = define(&api, &rig.upstream, &tag, 1500).await;
    let (s, conv) = api
        .call(
            reqwest::Method::POST,
            "/v1/conversations",
            Some(json!({"title": "fault"})),
        )
        .await;
    assert_eq!(s, 201, "{conv}");
    let conv = conv["id"].as_str().unwrap().to_owned();
    let (s, turn) = api
        .call(
            reqwest::Method::POST,
            &format!("/v1/conversations/{conv}/turns"),
            Some(json!({"speaker": "user", "content": "go"})),
        )
        .await;
    assert_eq!(s, 201, "{turn}");
    let (s, agent) = api
        .call(
            reqwest::Method::POST,
            &format!("/v1/conversations/{conv}/agent-turns"),
            Some(json!({"processId": process, "parentTurnId": turn["id"]})),
        )
        .await;
    assert_eq!(s, 202, "{agent}");
    let b = format!("{tag}-b");
    wait_until(
        "step b to reach the upstream",
        Duration::from_secs(30),
        || up.calls_for(&b) >= 1,
    )
    .await;
    rig.restart_serve().await;
    assert_completed_once(&api, agent["runId"].as_str().unwrap(), &up, &tag).await;
    let (s, t) = api
        .call(
            reqwest::Method::GET,
            &format!("/v1/turns/{}", agent["turnId"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(s, 200, "{t}");
    let alt = &t["alternatives"][0];
    assert_eq!(alt["cacheStatus"], "valid", "{t}");
    let content: Value = serde_json::from_str(alt["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"tag": format!("{tag}-c"), "ok": true}));
    assert_check_clean(None);
}

/// AGT-4: an agent loop whose tool's worker is SIGKILLed during the first tool call (the
/// unrecorded call runs again), then `aiden serve` during the second: the new engine resumes the
/// loop from the graph; no recorded model turn or tool result is asked again, and each call is
/// recorded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_agt_4_an_agent_loop_survives_a_killed_tool_worker_and_a_killed_server() {
    let mut rig = Rig::new().await;
    let (api, up) = (rig.api.clone(), rig.up.clone());
    let _llm_worker = spawn_env(
        &["worker", "--type", "llm_call", "--concurrency", "2"],
        rig.port,
        &[],
    );
    let tag = rig.tag("loop");
    let (model, model_url) = aiden_tests::scripted_model::start().await;
    let agent_process = define_agent(&api, &rig.upstream, &model_url, &tag).await;
    let (t1, t2) = (format!("{tag}-t1"), format!("{tag}-t2"));
    let script = json!([
        {"calls": [{"name": "slow_call", "args": {"tag": t1, "ms": "1500"}}]},
        {"calls": [{"name": "slow_call", "args": {"tag": t2, "ms": "1500"}}]},
        {"answer": "done"}]);
    let (s, b) = api
        .call(
            reqwest::Method::POST,
            &format!("/v1/processes/{agent_process}/runs"),
            Some(json!({"inputs": {"question": format!("script:{script}")}})),
        )
        .await;
    assert_eq!(s, 202, "{b}");
    let run = b["runId"].as_str().unwrap().to_owned();
    wait_until("the first tool call", Duration::from_secs(30), || {
        up.calls_for(&t1) == 1
    })
    .await;
    rig.restart_worker();
    wait_until("the second tool call", Duration::from_secs(60), || {
        up.calls_for(&t2) == 1
    })
    .await;
    rig.restart_serve().await;
    let settled = api.wait_settled(&run, Duration::from_secs(60)).await;
    assert_eq!(settled["status"], "completed", "{settled}");
    let text = settled["output"].as_str().unwrap();
    assert!(
        text.starts_with("done | ") && text.contains(&t1) && text.contains(&t2),
        "{text}"
    );
    assert_eq!(up.calls_for(&t1), 2, "the killed call and its redelivery");
    assert_eq!(
        up.calls_for(&t2),
        1,
        "a recorded tool result is never asked again"
    );
    assert_eq!(model.requests().len(), 3, "each model turn asked once");
    let events = api.events(&run).await;
    for call in [
        "answer#m1",
        "answer#t2",
        "answer#m3",
        "answer#t4",
        "answer#m5",
    ] {
        let completions = events
            .iter()
            .filter(|e| e["kind"] == "step.completed" && e["stepId"] == call)
            .count();
        assert_eq!(
            completions, 1,
            "{call} recorded {completions} times: {events:?}"
        );
    }
    assert_check_clean(None);
}

/// MEM-6, SUM-1: `aiden serve` (engine and upkeep loop) SIGKILLed while a compression run is
/// in flight: no half-made Summary, and after the restart exactly one Summary from that one run,
/// its slow step run under one Idempotency-Key, and the upkeep claim gone with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_mem_6_a_server_killed_mid_compression_writes_one_summary_under_one_key() {
    let mut rig = Rig::with_env(
        vec![log_level_with("aiden_service::upkeep=debug")],
        Vec::new(),
    )
    .await;
    let (api, up) = (rig.api.clone(), rig.up.clone());
    let tag = rig.tag("compress");
    let process = define(&api, &rig.upstream, &tag, 1500).await;
    let (s, b) = api
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/processes/{process}"),
            Some(json!({"outputTemplate": "summary of {{c.body.tag}}"})),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let (s, conv) = api
        .call(reqwest::Method::POST, "/v1/conversations", Some(json!({})))
        .await;
    assert_eq!(s, 201, "{conv}");
    let conv = conv["id"].as_str().unwrap().to_owned();
    let (s, b) = api
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/conversations/{conv}"),
            Some(json!({"compressionTokenBudget": 200, "compressionProcessId": process})),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let mut parent = Value::Null;
    for i in 0..14 {
        let (s, t) = api
            .call(
                reqwest::Method::POST,
                &format!("/v1/conversations/{conv}/turns"),
                Some(json!({"speaker": "user", "parentTurnId": parent,
                    "content": format!("turn {i:03}: a message long enough to matter for the budget of this conversation, twice over")})),
            )
            .await;
        assert_eq!(s, 201, "{t}");
        parent = t["id"].clone();
    }
    let b = format!("{tag}-b");
    wait_until(
        "the compression's slow step",
        Duration::from_secs(30),
        || up.calls_for(&b) == 1,
    )
    .await;
    sigkill(&mut rig.serve);
    let summaries = || async {
        aiden_tests::graph_rows::<Value>(
            aiden_tests::aiden_graph_query(
                "MATCH (s:Summary {conversationId: $c}) RETURN s.content AS content",
            )
            .param("c", conv.as_str()),
        )
        .await
    };
    assert!(summaries().await.is_empty(), "nothing written mid-run");
    rig.serve = spawn_logged(&["serve"], rig.port, &rig.serve_env);
    api.wait_ready().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while summaries().await.is_empty() {
        assert!(Instant::now() < deadline, "no Summary after the restart");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Two more ticks of the new server's upkeep loop: a second compression would have been
    // claimed and started by then; and every run of the conversation settled, so whatever one
    // started has written what it writes.
    let tick = "memory upkeep tick done";
    let ticks = rig.serve.log_count(tick);
    rig.serve
        .wait_log(tick, ticks + 2, Duration::from_secs(30))
        .await;
    runs_settled(&conv).await;
    let written = summaries().await;
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0]["content"], json!(format!("summary of {tag}-c")));
    // The step ran once, or, when the restarted engine re-dispatched it before the first
    // attempt's result was read (at-least-once calls), twice under one Idempotency-Key: an
    // upstream that honours the header runs it once.
    let runs = aiden_tests::graph_rows::<Value>(
        aiden_tests::aiden_graph_query(
            "MATCH (r:Run {triggerSubjectId: $c}) RETURN r.id AS id, r.status AS status, \
             r.error AS error, r.createdAt AS at ORDER BY at",
        )
        .param("c", conv.as_str()),
    )
    .await;
    // The run the killed server started (its step runs' ids, the keys, begin with its id): its
    // slow step ran under its one key. (A later compression of the same conversation is the
    // upkeep's business, not this fault's.)
    let first = runs
        .first()
        .and_then(|r| r["id"].as_str())
        .expect("a compression run");
    let calls: Vec<String> = up
        .keys
        .lock()
        .unwrap()
        .iter()
        .filter(|(t, _)| *t == b)
        .filter_map(|(_, k)| k.clone())
        .filter(|k| k.starts_with(first))
        .collect();
    assert!((1..=2).contains(&calls.len()), "{calls:?}");
    let keys: std::collections::HashSet<&String> = calls.iter().collect();
    assert_eq!(
        keys.len(),
        1,
        "the compression's slow step ran under one key: {keys:?}; the conversation's runs: {runs:?}"
    );
    let claims = aiden_tests::graph_rows::<Value>(
        aiden_tests::aiden_graph_query(
            "MATCH (k:UpkeepClaim {key: 'compression:' + $c}) RETURN k.key AS key",
        )
        .param("c", conv.as_str()),
    )
    .await;
    assert!(
        claims.is_empty(),
        "the claim went with the Summary: {claims:?}"
    );
    assert_check_clean(None);
}

/// Waits until the conversation `c` has runs and every one of them has settled.
async fn runs_settled(c: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let runs = aiden_tests::graph_rows::<Value>(
            aiden_tests::aiden_graph_query(
                "MATCH (r:Run {triggerSubjectId: $c}) RETURN r.id AS id, r.status AS status",
            )
            .param("c", c),
        )
        .await;
        let settled = |r: &Value| {
            matches!(
                r["status"].as_str(),
                Some("completed" | "failed" | "canceled")
            )
        };
        if !runs.is_empty() && runs.iter().all(settled) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "runs of {c} not settled: {runs:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Engine takeover (no catalogued rule; docs/operations.md): two `aiden serve` instances, one
/// engine holding the lease and the other only serving the API. The active one is SIGKILLed
/// mid-run: the standby takes the engine over within 4/3 of the lease's time to live and
/// finishes the run, step b not run again; a standby stopped with SIGTERM releases the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_engine_takeover_a_standby_finishes_the_run_of_a_killed_active_server() {
    let lease_ms = 3000u64;
    let short_lease = vec![("AIDEN_ENGINE_LEASE_MS", lease_ms.to_string())];
    let mut rig = Rig::with_env(short_lease, Vec::new()).await;
    let up = rig.up.clone();
    let port_b = free_port();
    let mut standby = spawn_env(
        &["serve"],
        port_b,
        &[
            ("AIDEN_ENGINE_LEASE_MS", lease_ms.to_string()),
            ("AIDEN_INSTANCE_ID", "takeover-b".to_owned()),
        ],
    );
    let api_b = Api {
        http: reqwest::Client::new(),
        base: format!("http://127.0.0.1:{port_b}"),
        token: admin_token(),
    };
    api_b.wait_ready().await;
    wait_for_holder(aiden_tests::TEST_INSTANCE_ID, Duration::from_secs(15)).await;
    let tag = rig.tag("takeover");
    let run = start_at_slow_step(&api_b, &rig.upstream, &up, &tag).await;
    let b = format!("{tag}-b");
    assert_eq!(
        holder().await.as_deref(),
        Some(aiden_tests::TEST_INSTANCE_ID),
        "the standby never took the lease while the first instance lived"
    );
    sigkill(&mut rig.serve);
    let killed_at = Instant::now();
    wait_for_holder("takeover-b", Duration::from_millis(lease_ms * 4 / 3 + 3000)).await;
    let took = killed_at.elapsed();
    assert_completed_once(&api_b, &run, &up, &tag).await;
    assert_eq!(up.calls_for(&b), 1, "step b was not re-run");
    assert_check_clean(None);
    eprintln!("engine takeover after SIGKILL: {} ms", took.as_millis());
    // SIGTERM: the standby gives the lease up as it stops, for the next test's engine.
    let stopped = Command::new("kill")
        .arg(standby.0.id().to_string())
        .status()
        .expect("kill");
    assert!(stopped.success());
    let _ = standby.0.wait();
    assert_eq!(
        holder().await,
        None,
        "a stopped instance releases the lease"
    );
}

/// Traces (no catalogued rule; docs/operations.md): with an OTLP endpoint set, one trace per
/// run across `aiden serve` and the worker pool. The trace id is the run id; each step's span
/// (worker) is a child of its dispatch span (engine) and the parent of its tool call's span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_traces_one_trace_per_run_spans_serve_and_the_worker_pool() {
    let (collector, otlp) = aiden_tests::otlp::start().await;
    let traced = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp),
        ("OTEL_BSP_SCHEDULE_DELAY", "100".to_owned()),
    ];
    let rig = Rig::with_env(traced.to_vec(), traced.to_vec()).await;
    let (api, up) = (&rig.api, &rig.up);
    let tag = rig.tag("trace");
    let process = define(api, &rig.upstream, &tag, 0).await;
    let run = start(api, &process).await;
    assert_completed_once(api, &run, up, &tag).await;
    let trace_id = run.replace('-', "");
    let deadline = Instant::now() + Duration::from_secs(20);
    let spans = loop {
        let spans: Vec<_> = collector
            .spans()
            .into_iter()
            .filter(|s| s.trace_id == trace_id)
            .collect();
        let tool_calls = spans.iter().filter(|s| s.name == "tool.call").count();
        // Each process exports on its own schedule: the API's later dispatch spans may arrive
        // after the worker's spans, and a step's span ends (and is exported) after its tool
        // call's, maybe in the pool's next batch: wait for every step's dispatch and span.
        let every_step_has = |name: &str| {
            ["a", "b", "c"].iter().all(|step| {
                spans.iter().any(|s| {
                    s.name == name && s.attributes.get("step.id").map(String::as_str) == Some(*step)
                })
            })
        };
        let (dispatched, stepped) = (every_step_has("step.dispatch"), every_step_has("step"));
        if tool_calls >= 3 && dispatched && stepped && spans.iter().any(|s| s.name == "run.start") {
            break spans;
        }
        assert!(
            Instant::now() < deadline,
            "spans of run {run} so far: {spans:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let of_step = |name: &str, step: &str| -> Vec<aiden_tests::otlp::Span> {
        spans
            .iter()
            .filter(|s| {
                s.name == name && s.attributes.get("step.id").map(String::as_str) == Some(step)
            })
            .cloned()
            .collect()
    };
    let start_span = spans.iter().find(|s| s.name == "run.start").unwrap();
    assert_eq!(start_span.service, "aiden-serve");
    assert_eq!(start_span.attributes["run.id"], run);
    for step in ["a", "b", "c"] {
        // A step may be dispatched twice (a recovery racing the start): the one that ran is a
        // child of one of its dispatches, and any duplicate is recorded as skipped.
        let dispatches = of_step("step.dispatch", step);
        assert!(
            dispatches.iter().all(|d| d.service == "aiden-serve"),
            "{dispatches:#?}"
        );
        let ran: Vec<_> = of_step("step", step)
            .into_iter()
            .filter(|s| s.attributes.get("outcome").map(String::as_str) != Some("skipped"))
            .collect();
        assert_eq!(ran.len(), 1, "step {step} ran once: {spans:#?}");
        let worked = &ran[0];
        assert_eq!(worked.service, "aiden-worker");
        assert!(
            dispatches
                .iter()
                .any(|d| d.span_id == worked.parent_span_id),
            "step {step}'s span is a child of its dispatch: {spans:#?}"
        );
        assert_eq!(worked.attributes["run.id"], run);
        assert_eq!(worked.attributes["tool.id"], format!("tool-{tag}"));
        assert_eq!(worked.attributes["attempt"], "1");
        assert_eq!(worked.attributes["outcome"], "completed");
        let call = spans
            .iter()
            .find(|s| s.name == "tool.call" && s.parent_span_id == worked.span_id)
            .unwrap_or_else(|| panic!("no tool.call under step {step}: {spans:#?}"));
        assert_eq!(call.attributes["tool.id"], format!("tool-{tag}"));
    }
}

/// Graph outage (no catalogued rule; docs/operations.md): the Bolt server stops while step b
/// runs. The API answers 503 with Retry-After (never a 500, never a hang), and the outage lasts
/// until step b's call has ended and the engine has demonstrably failed to write (a pass's
/// messages requeued, or the engine stopping for want of its lease): the worker's result waits
/// in RabbitMQ. Once the graph is back the run completes with step b run once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_graph_outage_answers_503_with_retry_after_and_the_run_completes_after_it() {
    let rig = Rig::new().await;
    let (api, up) = (&rig.api, &rig.up);
    let tag = rig.tag("outage");
    let run = start_at_slow_step(api, &rig.upstream, up, &tag).await;
    let b = format!("{tag}-b");
    let stopping_before = rig.serve.log_count(ENGINE_STOPPING);
    stack("graph-down");
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut unavailable = 0;
    // The engine's failed passes once step b's call had ended (and its result was reported).
    let mut failed_when_b_ended = None;
    loop {
        let asked = Instant::now();
        let resp = api
            .http
            .get(format!("{}/v1/runs/{run}", api.base))
            .bearer_auth(&api.token)
            .timeout(Duration::from_secs(15))
            .send()
            .await
            .expect("the API answers while the graph is down");
        let status = resp.status().as_u16();
        assert!(
            asked.elapsed() < Duration::from_secs(12),
            "an answer took {:?}",
            asked.elapsed()
        );
        assert_ne!(status, 500, "a 500 during the outage");
        if status == 503 {
            assert!(
                resp.headers().contains_key("retry-after"),
                "503 without Retry-After"
            );
            unavailable += 1;
        }
        let b_ended = up.calls_for(&b) == 1 && up.in_flight.load(Ordering::SeqCst) == 0;
        if b_ended && failed_when_b_ended.is_none() {
            failed_when_b_ended = Some(rig.serve.log_count(PASS_FAILED));
        }
        let engine_held_off = failed_when_b_ended
            .is_some_and(|n| rig.serve.log_count(PASS_FAILED) > n)
            || rig.serve.log_count(ENGINE_STOPPING) > stopping_before;
        if unavailable > 0 && b_ended && engine_held_off {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "during the graph outage: {unavailable} answers 503, step b ended: {b_ended}, \
             engine held off: {engine_held_off}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(unavailable > 0, "no 503 during the graph outage");
    stack("graph-up");
    assert_completed_once(api, &run, up, &tag).await;
    assert_eq!(up.calls_for(&b), 1, "step b ran once");
    assert_check_clean(None);
}

async fn holder() -> Option<String> {
    aiden_tests::graph_rows::<Value>(aiden_tests::aiden_graph_query(
        "MATCH (l:EngineLease {id: 'engine'}) RETURN l.holder AS holder",
    ))
    .await
    .first()
    .and_then(|r| r["holder"].as_str().map(str::to_owned))
}

async fn wait_for_holder(expected: &str, within: Duration) {
    let deadline = std::time::Instant::now() + within;
    loop {
        let now = holder().await;
        if now.as_deref() == Some(expected) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "engine lease held by {now:?}, not {expected}, after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
