//! A scripted OpenAI-compatible model served in the benchmark's process, with its Service and
//! `llm_call` Tool defined through the API (the agent loop's and the isolation backlog's).

use axum::{routing::post, Router};
use serde_json::json;

use crate::Api;

/// Serves `app` (its `/v1/chat/completions` answers) on a free local port and defines
/// `service` (an `llm_provider`) and `tool` (an `llm_call` over it, prompt `{{message}}`).
pub async fn serve_and_define<H, T>(
    api: &Api,
    chat: H,
    service: &str,
    tool: &str,
    name: &str,
) -> anyhow::Result<()>
where
    H: axum::handler::Handler<T, ()>,
    T: 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}/v1", listener.local_addr()?);
    let app = Router::new().route("/v1/chat/completions", post(chat));
    tokio::spawn(async move { axum::serve(listener, app).await });
    api.send(
        reqwest::Method::POST,
        "/v1/services",
        Some(json!({
        "id": service, "name": name, "type": "llm_provider",
        "protocol": "http", "requiresSecret": false, "endpoint": endpoint, "enabled": true,
        "connectionSchema": {"type": "object", "required": ["endpoint", "model"],
            "properties": {"endpoint": {"type": "string"}, "model": {"type": "string"}}}})),
    )
    .await?;
    api.send(
        reqwest::Method::POST,
        "/v1/tools",
        Some(json!({
        "id": tool, "name": "model", "serviceId": service,
        "connectionParams": {"endpoint": endpoint, "model": "scripted"},
        "operation": {"type": "llm_call", "api": "openai", "promptTemplate": "{{message}}"},
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
        "outputSchema": {"type": "object"}, "enabled": true})),
    )
    .await?;
    Ok(())
}
