//! `rest_api` executor: one HTTP request per call. URL = endpoint + rendered `path` (interpolated
//! values are percent-encoded), rendered headers, rendered body; the Secret applied per
//! `secretScope`. Output: `{"status", "body"}` with the body parsed as JSON when it is JSON.

use std::time::Duration;

use aiden_domain::execution::interpolate::render_string;
use aiden_domain::tool::{HttpMethod, Operation};
use serde_json::{Map, Value};

use super::http_status::{status_failure, transport_failure};
use crate::tool::{FailureClass, Invocation, Telemetry, Tool, ToolFailure, ToolOutput};

pub struct RestApi {
    http: reqwest::Client,
}

impl Default for RestApi {
    fn default() -> Self {
        Self::new()
    }
}

impl RestApi {
    pub fn new() -> Self {
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(64)
            .build()
            .unwrap_or_default();
        Self { http }
    }
}

fn invalid(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new(FailureClass::InvalidRequest, message)
}

/// The input with every string (at any depth) percent-encoded, for rendering into a URL.
fn url_encoded(input: &Value) -> Value {
    match input {
        Value::String(s) => Value::String(percent_encode(s)),
        Value::Array(items) => Value::Array(items.iter().map(url_encoded).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), url_encoded(v)))
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    }
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn method(m: HttpMethod) -> reqwest::Method {
    match m {
        HttpMethod::Get => reqwest::Method::GET,
        HttpMethod::Post => reqwest::Method::POST,
        HttpMethod::Put => reqwest::Method::PUT,
        HttpMethod::Patch => reqwest::Method::PATCH,
        HttpMethod::Delete => reqwest::Method::DELETE,
        HttpMethod::Head => reqwest::Method::HEAD,
    }
}

#[async_trait::async_trait]
impl Tool for RestApi {
    async fn call(&self, inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        let Operation::RestApi {
            method: m,
            path,
            headers,
            body_template,
        } = inv.operation
        else {
            return Err(invalid("not a rest_api operation"));
        };
        let base = inv
            .endpoint()
            .ok_or_else(|| invalid("no endpoint configured (connectionParams.endpoint)"))?;
        let path =
            render_string(path, &url_encoded(inv.input)).map_err(|e| invalid(e.to_string()))?;
        let mut url = format!("{}{path}", base.trim_end_matches('/'));
        let timeout = inv
            .connection
            .get("timeoutMs")
            .and_then(Value::as_u64)
            .map_or(inv.timeout, |ms| {
                inv.timeout.min(Duration::from_millis(ms.max(1)))
            });
        let mut req_headers = Vec::new();
        for (name, template) in headers {
            let value = render_string(template, inv.input).map_err(|e| invalid(e.to_string()))?;
            req_headers.push((name.clone(), value));
        }
        if let Some(secret) = inv.secret {
            match inv.secret_scope.unwrap_or("bearer") {
                "bearer" => req_headers.push((
                    "Authorization".into(),
                    format!("Bearer {}", secret.as_str()),
                )),
                scope => {
                    if let Some(name) = scope.strip_prefix("header:") {
                        req_headers.push((name.to_owned(), secret.to_string()));
                    } else if let Some(param) = scope.strip_prefix("query:") {
                        let sep = if url.contains('?') { '&' } else { '?' };
                        url.push(sep);
                        url.push_str(&percent_encode(param));
                        url.push('=');
                        url.push_str(&percent_encode(secret));
                    } else {
                        return Err(invalid(format!("unknown secretScope `{scope}`")));
                    }
                }
            }
        }
        let mut req = self.http.request(method(*m), &url).timeout(timeout);
        for (name, value) in req_headers {
            req = req.header(name, value);
        }
        if let Some(t) = body_template {
            let body = render_string(t, inv.input).map_err(|e| invalid(e.to_string()))?;
            if serde_json::from_str::<Value>(&body).is_ok() {
                req = req.header("content-type", "application/json");
            }
            req = req.body(body);
        }
        let resp = req.send().await.map_err(transport_failure)?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(transport_failure)?;
        if !(200..300).contains(&status) {
            return Err(status_failure(status, &text));
        }
        let body = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Ok(ToolOutput {
            value: serde_json::json!({"status": status, "body": body}),
            telemetry: Telemetry {
                provider: Some("rest_api".into()),
                ..Telemetry::default()
            },
        })
    }
}
