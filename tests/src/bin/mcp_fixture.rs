//! A real MCP server for the tests, built with `rmcp`: stdio by default, streamable HTTP with
//! `--http 127.0.0.1:PORT` (add `--token T` to answer 401 unless `Authorization: Bearer T`).
//! Tools: `search {query}`, `fail {}`, `slow {ms}`, `whoami {}` (this process's pid and
//! the MCP session's number, so tests can tell a reused session from a new one), and `meta {}`
//! (the request's `_meta`, as the server received it).

use std::sync::atomic::{AtomicU64, Ordering};

use axum::response::IntoResponse;
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

/// Sessions opened so far in this process.
static SESSIONS: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone)]
struct Fixture {
    session: u64,
}

impl Fixture {
    fn new() -> Self {
        Self {
            session: SESSIONS.fetch_add(1, Ordering::SeqCst) + 1,
        }
    }
}

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

    #[tool(description = "The request's _meta, as received")]
    fn meta(
        &self,
        meta: rmcp::model::RequestMetaObject,
        Parameters(Empty {}): Parameters<Empty>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::structured(serde_json::Value::Object(
            meta.0 .0.clone(),
        )))
    }

    #[tool(description = "This server process's pid and the session's number")]
    fn whoami(&self, Parameters(Empty {}): Parameters<Empty>) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::structured(
            json!({"pid": std::process::id(), "session": self.session}),
        ))
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
        let token = args
            .iter()
            .position(|a| a == "--token")
            .and_then(|i| args.get(i + 1))
            .map(|t| format!("Bearer {t}"));
        let service = StreamableHttpService::new(
            || Ok(Fixture::new()),
            LocalSessionManager::default().into(),
            StreamableHttpServerConfig::default(),
        );
        let router =
            axum::Router::new()
                .nest_service("/mcp", service)
                .layer(axum::middleware::from_fn(
                    move |req: axum::extract::Request, next: axum::middleware::Next| {
                        let token = token.clone();
                        async move {
                            let given = req
                                .headers()
                                .get(axum::http::header::AUTHORIZATION)
                                .and_then(|v| v.to_str().ok());
                            match token {
                                Some(t) if given != Some(t.as_str()) => {
                                    axum::http::StatusCode::UNAUTHORIZED.into_response()
                                }
                                _ => next.run(req).await,
                            }
                        }
                    },
                ));
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        axum::serve(listener, router).await?;
    } else {
        let running = Fixture::new().serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
    }
    Ok(())
}
