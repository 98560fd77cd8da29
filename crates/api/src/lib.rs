//! The HTTP API (axum): extracts, validates, calls one service method, maps the result.
//! No Cypher and no domain rules here. Owns the error shape, auth, request ids and the
//! OpenAPI document (built from the same table that registers the routes, so they cannot drift).

mod error;
mod extract;
mod handlers;
pub mod metrics;
mod openapi;
mod request_id;
mod routes;

use std::{net::SocketAddr, sync::Arc};

use aiden_service::App;
use tokio::net::TcpListener;

pub use error::ApiError;
pub use routes::{openapi_document, router, BODY_LIMIT};

/// What handlers share.
#[derive(Clone)]
pub struct State {
    pub app: App,
    pub amqp_uri: Arc<String>,
    /// Wakes SSE streams when the in-process engine commits a run's events.
    pub notifier: aiden_engine::Notifier,
    pub openapi: Arc<serde_json::Value>,
}

/// The server, bound and ready to run (tests bind port 0 and read `port()`).
pub struct Application {
    listener: TcpListener,
    router: axum::Router,
}

impl Application {
    pub async fn build(
        app: App,
        addr: &str,
        amqp_uri: String,
        notifier: aiden_engine::Notifier,
    ) -> std::io::Result<Self> {
        metrics::install();
        let listener = TcpListener::bind(addr).await?;
        Ok(Self {
            listener,
            router: router(app, amqp_uri, notifier),
        })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub async fn run(self) -> std::io::Result<()> {
        use axum::serve::ListenerExt;
        // TCP_NODELAY: small responses (an SSE event, a 202) must not wait for a delayed ACK.
        let listener = self.listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        // The peer address is a request's source for authentication throttling (USR-4).
        let service = self
            .router
            .into_make_service_with_connect_info::<SocketAddr>();
        axum::serve(listener, service)
            .with_graceful_shutdown(shutdown_signal())
            .await
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
