//! Logs, and traces when asked for.
//!
//! Logs go to stderr, filtered by `RUST_LOG` (default info), as JSON lines when
//! `AIDEN_LOG_FORMAT=json`. Traces are off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set: then the runtime's spans (`run.start`,
//! `step.dispatch`, `step`, `tool.call`) go to that OTLP/HTTP endpoint in protobuf, batched. The
//! exporter reads the standard `OTEL_*` variables (headers, timeout, `OTEL_BSP_*` batching).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::filter::{filter_fn, EnvFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// Flushes the spans not yet exported when dropped... by `shutdown`, at a clean exit.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    pub fn shutdown(self) {
        if let Some(provider) = self.provider {
            if let Err(e) = provider.shutdown() {
                eprintln!("warning: flushing traces: {e}");
            }
        }
    }
}

/// `service`: the OTel `service.name` unless `OTEL_SERVICE_NAME` says otherwise; `attributes`
/// go on the resource too (a worker pool's operation type).
pub fn init(service: &str, attributes: Vec<KeyValue>) -> Telemetry {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,neo4rs=warn,lapin=warn"));
    let json = std::env::var("AIDEN_LOG_FORMAT").is_ok_and(|v| v == "json");
    let logs: BoxedLayer = if json {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed()
    };
    let mut layers = vec![logs];
    let provider = otlp_provider(service, attributes);
    if let Some(provider) = &provider {
        let tracer = provider.tracer("aiden");
        // Only the runtime's own spans: not every span of hyper, lapin or neo4rs.
        let spans = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(filter_fn(|m| {
                m.is_span() && m.target().starts_with("aiden")
            }))
            .boxed();
        layers.push(spans);
    }
    tracing_subscriber::registry().with(layers).init();
    if provider.is_some() {
        aiden_jobs::trace::enable();
        tracing::info!("traces exported over OTLP/HTTP");
    }
    Telemetry { provider }
}

fn otlp_provider(service: &str, attributes: Vec<KeyValue>) -> Option<SdkTracerProvider> {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.trim().is_empty());
    if !set("OTEL_EXPORTER_OTLP_ENDPOINT") && !set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return None;
    }
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
    {
        Ok(e) => e,
        Err(e) => {
            eprintln!("warning: traces off, the OTLP exporter could not be built: {e}");
            return None;
        }
    };
    let name = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| service.to_owned());
    let resource = Resource::builder()
        .with_service_name(name)
        .with_attributes(attributes)
        .build();
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build(),
    )
}
