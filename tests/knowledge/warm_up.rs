//! The search's warm-up (`App::warm_recall`, docs/knowledge.md "Warm from the first query")
//! against real processes: an `aiden serve` given time for it searches as the owners of
//! embedded messages before its port opens; one whose embedder does not answer searches as
//! them by words and the graph only, and says so once instead of warning at every search.

use std::time::Duration;

use aiden_tests::procs::{free_port, log_level_with, spawn_logged, wait_until, Proc};

use super::recall::{conversation, new_user, say, wait_embedded};

/// A second `aiden serve` (an instance of its own, so the test's serve keeps the engine) with
/// `warm_up_ms` for the search's warm-up, once it has logged its warm-up's end: its log.
async fn warmed_serve(extra: &[(&'static str, String)], warm_up_ms: u64) -> (Proc, String) {
    let mut env = extra.to_vec();
    env.extend([
        ("AIDEN_RECALL_WARM_UP_MS", warm_up_ms.to_string()),
        ("AIDEN_INSTANCE_ID", aiden_tests::unique("warm-up")),
        log_level_with("aiden=info"),
        // Plain text: the test reads its fields (`searches=4`).
        ("NO_COLOR", "1".to_owned()),
    ]);
    let serve = spawn_logged(&["serve"], free_port(), &env);
    // Its end is logged either way: done, or cut at its bound (a graph just started can take
    // seconds a statement while it plans and compiles).
    let ended = || serve.log_count("recall warmed") + serve.log_count(CUT) > 0;
    wait_until("the search warm-up's end", Duration::from_secs(120), ended).await;
    let log = serve.log();
    (serve, log)
}

/// `aiden serve`'s line when the warm-up outlasted its bound.
const CUT: &str = "recall warm-up did not finish in time";

/// The `searches=` count of the `recall warmed` line.
fn searches(log: &str) -> u64 {
    let line = log
        .lines()
        .find(|l| l.contains("recall warmed"))
        .unwrap_or_else(|| panic!("no recall warmed line in\n{log}"));
    let count = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("searches="))
        .unwrap_or_else(|| panic!("no searches= in {line:?}"));
    count.parse().expect("a count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_warm_up_searches_as_owners_and_not_without_an_embedder() {
    let _serial = super::SERIAL.lock().await;
    super::episodes::retire();
    let procs = super::recall_procs().await;
    let (_, api) = new_user(&procs.admin).await;
    let c = conversation(&api, "warm-up").await;
    let (_, alt) = say(
        &api,
        &c,
        "My sister plays the cello in an orchestra in Vienna.",
        None,
    )
    .await;
    wait_embedded(&procs.graph, &[alt], Duration::from_secs(120)).await;

    // Two searches as an owner of nothing (the plans), then three per embedded message as its
    // owner for the time given.
    let (serve, log) = warmed_serve(&procs.extra, 800).await;
    drop(serve);
    assert!(!log.contains(CUT), "the warm-up outlasted its bound\n{log}");
    let made = searches(&log);
    assert!(
        made > 2,
        "with an embedder and an embedded message it searches as owners: {made} searches\n{log}"
    );
    assert!(!log.contains("by words and the graph only"), "{log}");

    // The embedder's address answers nothing: the two searches as nobody find no meaning, and
    // the owners' searches do not ask the embedder again.
    let mut dead = procs.extra.clone();
    dead.push((
        "AIDEN_GRAPHITI_URL",
        format!("http://127.0.0.1:{}", free_port()),
    ));
    let (serve, log) = warmed_serve(&dead, 800).await;
    drop(serve);
    // Searches by words and the graph are planned anew here; on a graph just restarted they
    // can take seconds each, and the warm-up is cut at its bound with no count. The checks
    // below, that the embedder was not asked again, hold either way.
    if !log.contains(CUT) {
        let made = searches(&log);
        assert!(
            made > 2,
            "it still searches as owners: {made} searches\n{log}"
        );
    }
    assert_eq!(
        log.matches("by words and the graph only").count(),
        1,
        "{log}"
    );
    let unembedded = log.matches("the query was not embedded").count();
    assert!(
        unembedded <= 2,
        "the embedder is asked by the first two searches only, not by the owners': {unembedded}"
    );
}
