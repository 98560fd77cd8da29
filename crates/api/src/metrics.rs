//! Prometheus metrics through the `metrics` facade and `metrics-exporter-prometheus` (no
//! hand-written exposition). Every binary installs the one recorder ([`install`]); the crates
//! record with `metrics::counter!/histogram!/gauge!` and `/metrics` renders what they recorded.
//! Names and labels: `docs/operations.md`.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Seconds: from a fast graph read to a slow LLM call.
const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    120.0,
];
/// Counts (messages per engine pass).
const COUNT_BUCKETS: [f64; 10] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// Installs the process-wide recorder once; later calls return the same handle. `None` when
/// another recorder was installed first (then nothing here renders).
pub fn install() -> Option<PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets(&BUCKETS)
                .ok()?
                .set_buckets_for_metric(
                    metrics_exporter_prometheus::Matcher::Suffix("_messages".into()),
                    &COUNT_BUCKETS,
                )
                .ok()?
                .install_recorder()
                .ok()?;
            metrics::gauge!("aiden_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
            Some(handle)
        })
        .clone()
}

/// One HTTP request, by method, route template and status.
pub fn record_request(method: &str, route: String, status: u16, seconds: f64) {
    metrics::histogram!(
        "aiden_http_request_duration_seconds",
        "method" => method.to_owned(),
        "route" => route,
        "status" => status.to_string()
    )
    .record(seconds);
}

/// The Prometheus text exposition of everything recorded in this process.
pub fn render() -> String {
    install().map(|h| h.render()).unwrap_or_default()
}
