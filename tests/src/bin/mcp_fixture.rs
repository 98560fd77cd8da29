//! A real MCP server for the tests, built with `rmcp`: stdio by default, streamable HTTP with
//! `--http 127.0.0.1:PORT`. Tools: `search {query}`, `fail {}`, `slow {ms}`.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{schemars, tool, tool_router, ErrorData, ServiceExt};
use serde_json::json;

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct SearchRequest {
    query: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct SlowRequest {
    ms: u64,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Empty {}

#[derive(Debug, Clone)]
struct Fixture;

#[tool_router(server_handler)]
impl Fixture {
    #[tool(description = "Search: returns text and structured hits")]
    fn search(
        &self,
        Parameters(SearchRequest { query }): Parameters<SearchRequest>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut result = CallToolResult::structured(
            json!({"hits": [{"title": format!("{query} 1")}, {"title": format!("{query} 2")}]}),
        );
        result.content = vec![ContentBlock::text(format!("results for {query}"))];
        Ok(result)
    }

    #[tool(description = "Always fails with isError")]
    fn fail(&self, Parameters(Empty {}): Parameters<Empty>) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::error(vec![ContentBlock::text(
            "deliberate failure",
        )]))
    }

    #[tool(description = "Sleeps for ms milliseconds")]
    async fn slow(&self, Parameters(SlowRequest { ms }): Parameters<SlowRequest>) -> String {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        "slept".to_owned()
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--http") {
        use rmcp::transport::streamable_http_server::{
            session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
        };
        let addr = args
            .get(i + 1)
            .cloned()
            .unwrap_or_else(|| "127.0.0.1:18090".into());
        let service = StreamableHttpService::new(
            || Ok(Fixture),
            LocalSessionManager::default().into(),
            StreamableHttpServerConfig::default(),
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        axum::serve(listener, router).await?;
    } else {
        let running = Fixture.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
    }
    Ok(())
}
