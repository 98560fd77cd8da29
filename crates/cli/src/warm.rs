//! What `aiden serve` warms before it opens its port. A Neo4j just started plans each
//! statement on its first use (about a second each on a small machine): without this the
//! first run held the engine's one writer for seconds, and the first search took seconds.
//! Then it runs the engine's pass statement and commits in the interpreter until its JIT has
//! compiled them: warm-up passes (`aiden_graph::warm::drive_passes`) do that before the first
//! run instead of during the first thousands.
//! The warm-ups run one after the other (side by side, on a Neo4j still starting, their
//! connections timed out), each within a bound, and log how long they took.

use std::time::{Duration, Instant};

use aiden_graph::Graph;
use aiden_service::App;

/// The longest `aiden serve` waits for a warm-up before it opens its port, beyond the time
/// that warm-up is given (the engine's passes, the search's).
const BOUND: Duration = Duration::from_secs(30);

/// A graph server that has run this long has compiled the path of the runs it served: an
/// `aiden serve` restarted against it opens its port without warm-up passes.
const COMPILED_AFTER: Duration = Duration::from_secs(600);

/// The warm-up passes' time: none against a graph server that has run for long.
async fn passes_for(graph: &Graph, passes: Duration) -> Duration {
    if passes.is_zero() {
        return passes;
    }
    // Within the warm-ups' own bound, not only the graph's statement timeout.
    let uptime = tokio::time::timeout(BOUND, aiden_graph::warm::server_uptime(graph)).await;
    match uptime.unwrap_or_else(|_| Err(aiden_graph::Error::Unavailable("timed out".into()))) {
        Ok(up) if up >= COMPILED_AFTER => {
            tracing::info!(
                server_uptime_s = up.as_secs(),
                "the graph server has run for long: no warm-up passes"
            );
            Duration::ZERO
        }
        Ok(_) => passes,
        Err(e) => {
            tracing::warn!(error = %e, "the graph server's uptime is unknown: warm-up passes");
            passes
        }
    }
}

/// `recall`: how long the search warm-up goes on after its first owner's searches (`None`: no
/// search warm-up).
pub async fn before_serving(app: &App, graph: &Graph, passes: Duration, recall: Option<Duration>) {
    let runs = async {
        let started = Instant::now();
        match tokio::time::timeout(BOUND, aiden_engine::warm_up(graph)).await {
            Ok(Ok(())) => tracing::info!(ms = started.elapsed().as_millis() as u64, "runs warmed"),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "runs warm-up failed; the first run will be slower")
            }
            Err(_) => tracing::warn!(
                bound_s = BOUND.as_secs(),
                "runs warm-up did not finish in time; the first run will be slower"
            ),
        }
    };
    // Called with no time too: it deletes what a killed warm-up left.
    let engine = async {
        let started = Instant::now();
        let passes = passes_for(graph, passes).await;
        let driven = aiden_graph::warm::drive_passes(graph, passes);
        match tokio::time::timeout(passes + BOUND, driven).await {
            Ok(Ok(w)) if w.passes == 0 => {}
            Ok(Ok(w)) => tracing::info!(
                ms = started.elapsed().as_millis() as u64,
                passes = w.passes,
                nodes = w.nodes_created,
                first_round_pass_us = w.first_round_pass.as_micros() as u64,
                last_round_pass_us = w.last_round_pass.as_micros() as u64,
                "engine passes warmed"
            ),
            Ok(Err(e)) => tracing::warn!(
                error = %e,
                "engine warm-up passes failed; the first runs will be slower"
            ),
            Err(_) => tracing::warn!(
                bound_s = (passes + BOUND).as_secs(),
                "engine warm-up passes did not finish in time; the first runs will be slower"
            ),
        }
    };
    let search = async {
        let Some(recall) = recall else {
            return;
        };
        match tokio::time::timeout(recall + BOUND, app.warm_recall(recall)).await {
            Ok(w) => tracing::info!(
                ms = w.took.as_millis() as u64,
                searches = w.searches,
                first_ms = w.first.as_millis() as u64,
                last_ms = w.last.as_millis() as u64,
                "recall warmed"
            ),
            Err(_) => tracing::warn!(
                bound_s = (recall + BOUND).as_secs(),
                "recall warm-up did not finish in time; the first searches will be slower"
            ),
        }
    };
    runs.await;
    engine.await;
    search.await;
}
