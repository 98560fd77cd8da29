//! `rest_api` executor: one HTTP request per call. URL = endpoint + rendered `path` (interpolated
//! values are percent-encoded), rendered headers, rendered body; the Secret applied per
//! `secretScope`. Output: `{"status", "body"}` with the body parsed as JSON when it is JSON.

use std::time::Duration;

use aiden_domain::execution::interpolate::render_string;
use aiden_domain::tool::{HttpMethod, Operation};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use serde_json::{Map, Value};
use zeroize::Zeroizing;

use super::http_status::{
    percent_encode, redact, same_origin_redirects, status_failure, transport_failure,
};
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
            .redirect(same_origin_redirects())
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

/// A request header; the Secret's is marked sensitive (kept out of `Debug` output).
fn header(
    name: &str,
    value: &str,
    sensitive: bool,
) -> Result<(HeaderName, HeaderValue), ToolFailure> {
    let name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| invalid(format!("`{name}` is not a valid header name")))?;
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        invalid(if sensitive {
            format!("the Secret is not a valid value for header `{name}`")
        } else {
            format!("the rendered value of header `{name}` is not a valid header value")
        })
    })?;
    value.set_sensitive(sensitive);
    Ok((name, value))
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
        let secret = inv.secret.map(|s| s.as_str());
        self.request(inv)
            .await
            .map_err(|failure| redact(failure, secret))
    }
}

impl RestApi {
    async fn request(&self, inv: &Invocation<'_>) -> Result<ToolOutput, ToolFailure> {
        let Operation::RestApi {
            method: m,
            path,
            headers,
            body_template,
            idempotency_header,
        } = inv.operation
        else {
            return Err(invalid("not a rest_api operation"));
        };
        let base = inv
            .endpoint()
            .ok_or_else(|| invalid("no endpoint configured (connectionParams.endpoint)"))?;
        let path =
            render_string(path, &url_encoded(inv.input)).map_err(|e| invalid(e.to_string()))?;
        // Zeroized on drop: with `query:` scope it carries the Secret.
        let sep = if path.is_empty() || path.starts_with(['/', '?']) {
            ""
        } else {
            "/"
        };
        let mut url = Zeroizing::new(format!("{}{sep}{path}", base.trim_end_matches('/')));
        let timeout = inv
            .connection
            .get("timeoutMs")
            .and_then(Value::as_u64)
            .map_or(inv.timeout, |ms| {
                inv.timeout.min(Duration::from_millis(ms.max(1)))
            });
        let mut req_headers = HeaderMap::new();
        for (name, template) in headers {
            let value = render_string(template, inv.input).map_err(|e| invalid(e.to_string()))?;
            let (name, value) = header(name, &value, false)?;
            req_headers.append(name, value);
        }
        // The step run's key, the same on every re-delivery and retry: an upstream that honours
        // it sees the step once. A header of that name among the Tool's own wins.
        if let (Some(name), Some(key)) = (idempotency_header, inv.idempotency_key) {
            let (name, value) = header(name, key, false)?;
            if !req_headers.contains_key(&name) {
                req_headers.insert(name, value);
            }
        }
        if let Some(secret) = inv.secret {
            match inv.secret_scope.unwrap_or("bearer") {
                "bearer" => {
                    let bearer = Zeroizing::new(format!("Bearer {}", secret.as_str()));
                    let (name, value) = header("authorization", &bearer, true)?;
                    req_headers.insert(name, value);
                }
                scope => {
                    if let Some(name) = scope.strip_prefix("header:") {
                        let (name, value) = header(name, secret, true)?;
                        req_headers.insert(name, value);
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
        let body = match body_template {
            Some(t) => {
                let body = render_string(t, inv.input).map_err(|e| invalid(e.to_string()))?;
                if !req_headers.contains_key(CONTENT_TYPE)
                    && serde_json::from_str::<Value>(&body).is_ok()
                {
                    req_headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                }
                Some(body)
            }
            None => None,
        };
        let mut req = self
            .http
            .request(method(*m), url.as_str())
            .timeout(timeout)
            .headers(req_headers);
        if let Some(body) = body {
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
            telemetry: Telemetry::default(),
        })
    }
}
