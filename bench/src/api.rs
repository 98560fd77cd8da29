//! The benchmarks' HTTP client: the API with a bearer token, JSON in and out.

use anyhow::bail;
use serde_json::Value;

/// `--server` / `--token`: where every benchmark finds the API and who it is.
#[derive(clap::Args)]
pub struct Target {
    #[arg(long, env = "AIDEN_SERVER", default_value = "http://127.0.0.1:8080")]
    pub server: String,
    #[arg(long, env = "AIDEN_TOKEN")]
    pub token: String,
}

impl Target {
    pub fn api(&self, http: reqwest::Client) -> Api {
        Api {
            http,
            base: self.server.trim_end_matches('/').to_owned(),
            token: self.token.clone(),
        }
    }
}

pub struct Api {
    pub http: reqwest::Client,
    pub base: String,
    pub token: String,
}

impl Api {
    /// One request; a non-2xx answer is an error, a body that is not JSON reads as `null`.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await?;
        let status = resp.status();
        let text = resp.text().await?;
        if !status.is_success() {
            bail!("{path}: {status}: {text}");
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}
