//! One trace per run across processes. A run's trace id is its id (a UUID is 16
//! bytes, like a trace id), so every span of the run finds its trace from the run id alone,
//! after any restart. Spans hang off a virtual root whose span id is derived from the run id too;
//! the job carries its parent as a W3C `traceparent`.
//!
//! Spans are only made when an OTLP exporter is installed ([`enable`]): with tracing off, the
//! hot path pays nothing but the `traceparent` string.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanId, TraceContextExt, TraceId};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Called once an exporter is installed: from then on the runtime makes spans.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

fn run_ids(run_id: &str) -> (TraceId, SpanId) {
    let hex: String = run_id.chars().filter(char::is_ascii_hexdigit).collect();
    let hex = format!("{hex:0>32}");
    let trace = u128::from_str_radix(&hex[hex.len() - 32..], 16)
        .unwrap_or(1)
        .max(1);
    let root = (trace as u64 ^ (trace >> 64) as u64).max(1);
    (
        TraceId::from_bytes(trace.to_be_bytes()),
        SpanId::from_bytes(root.to_be_bytes()),
    )
}

/// The `traceparent` of the run's virtual root span.
pub fn run_traceparent(run_id: &str) -> String {
    let (trace, root) = run_ids(run_id);
    format!("00-{trace}-{root}-01")
}

/// A span in the run's trace when traces are on (`make` builds it), else a disabled one: a
/// child of the span `traceparent` names, or of the run's root when it is missing or unreadable.
pub fn run_span(
    run_id: &str,
    traceparent: Option<&str>,
    make: impl FnOnce() -> tracing::Span,
) -> tracing::Span {
    if !enabled() {
        return tracing::Span::none();
    }
    let span = make();
    let propagator = TraceContextPropagator::new();
    let extract = |tp: String| propagator.extract(&HashMap::from([("traceparent".to_owned(), tp)]));
    let mut cx = extract(traceparent.map_or_else(|| run_traceparent(run_id), str::to_owned));
    if !cx.span().span_context().is_valid() {
        cx = extract(run_traceparent(run_id));
    }
    let _ = span.set_parent(cx);
    span
}

/// `span`'s own context as a `traceparent`, to hand to the next process.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove("traceparent")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_trace_id_is_its_uuid() {
        let tp = run_traceparent("01a2117b-4dbc-7681-ba40-2e1ba02f710c");
        assert_eq!(
            tp,
            format!("00-01a2117b4dbc7681ba402e1ba02f710c-{}-01", &tp[36..52])
        );
        assert_ne!(&tp[36..52], "0000000000000000");
        assert_eq!(tp, run_traceparent("01a2117b-4dbc-7681-ba40-2e1ba02f710c"));
    }
}
