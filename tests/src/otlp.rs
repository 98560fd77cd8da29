//! A local OTLP/HTTP trace receiver: what a collector would get from `aiden serve`
//! and the worker pools, decoded from the real protobuf wire format.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::{body::Bytes, http::header, response::IntoResponse, routing::post, Router};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value::Value as Any, KeyValue};
use prost::Message;

/// One received span, flattened.
#[derive(Debug, Clone)]
pub struct Span {
    pub service: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub attributes: HashMap<String, String>,
}

#[derive(Clone, Default)]
pub struct Collector {
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Collector {
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }
}

fn text(attrs: &[KeyValue]) -> HashMap<String, String> {
    attrs
        .iter()
        .filter_map(|kv| {
            let v = match kv.value.as_ref()?.value.as_ref()? {
                Any::StringValue(s) => s.clone(),
                Any::IntValue(i) => i.to_string(),
                Any::BoolValue(b) => b.to_string(),
                Any::DoubleValue(d) => d.to_string(),
                _ => return None,
            };
            Some((kv.key.clone(), v))
        })
        .collect()
}

/// Starts the receiver; returns it and the endpoint for `OTEL_EXPORTER_OTLP_ENDPOINT`.
pub async fn start() -> (Collector, String) {
    let collector = Collector::default();
    let store = collector.spans.clone();
    let app = Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let store = store.clone();
            async move {
                let req = match ExportTraceServiceRequest::decode(body) {
                    Ok(r) => r,
                    Err(e) => {
                        return (axum::http::StatusCode::BAD_REQUEST, e.to_string()).into_response()
                    }
                };
                let mut out = store.lock().unwrap();
                for rs in req.resource_spans {
                    let resource = rs.resource.map(|r| text(&r.attributes)).unwrap_or_default();
                    let service = resource.get("service.name").cloned().unwrap_or_default();
                    for ss in rs.scope_spans {
                        for s in ss.spans {
                            out.push(Span {
                                service: service.clone(),
                                name: s.name,
                                trace_id: hex::encode(&s.trace_id),
                                span_id: hex::encode(&s.span_id),
                                parent_span_id: hex::encode(&s.parent_span_id),
                                attributes: text(&s.attributes),
                            });
                        }
                    }
                }
                (
                    [(header::CONTENT_TYPE, "application/x-protobuf")],
                    ExportTraceServiceResponse::default().encode_to_vec(),
                )
                    .into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (collector, format!("http://{addr}"))
}
