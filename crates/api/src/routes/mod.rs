//! Every route, registered through one table that also writes the OpenAPI document; each
//! area's routes are declared in a file of their own, beside its handlers' module.

mod catalog;
mod conversations;
mod knowledge;
mod measurements;
mod ops;
mod processes;
mod upkeep;

use std::{collections::BTreeMap, sync::Arc};

use aiden_service::App;
use axum::{extract::DefaultBodyLimit, middleware, routing::MethodRouter, Router};

use crate::{
    handlers,
    openapi::{Op, Spec},
    request_id, State,
};

/// Largest request body accepted (a big Process definition fits many times over).
pub const BODY_LIMIT: usize = 1024 * 1024;

struct Table {
    paths: BTreeMap<&'static str, MethodRouter<State>>,
    spec: Spec,
}

impl Table {
    fn add(
        mut self,
        method: &'static str,
        path: &'static str,
        op: Op,
        handler: MethodRouter<State>,
    ) -> Self {
        self.spec.add(method, path, op);
        let entry = self.paths.remove(path).unwrap_or_default();
        self.paths.insert(path, entry.merge(handler));
        self
    }
}

macro_rules! route {
    ($t:expr, $m:ident, $path:literal, $handler:expr, $op:expr) => {
        $t.add(
            stringify!($m),
            $path,
            $op,
            axum::routing::on(axum::routing::MethodFilter::$m, $handler),
        )
    };
}
pub(super) use route;

fn table() -> Table {
    let t = Table {
        paths: BTreeMap::new(),
        spec: Spec::default(),
    };
    let t = ops::routes(t);
    let t = catalog::routes(t);
    let t = processes::routes(t);
    let t = conversations::routes(t);
    let t = knowledge::routes(t);
    let t = measurements::routes(t);
    upkeep::routes(t)
}

/// The OpenAPI document, without a server (`aiden openapi`).
pub fn openapi_document() -> serde_json::Value {
    table().spec.document()
}

pub fn router(app: App, amqp_uri: String, notifier: aiden_engine::Notifier) -> Router {
    let Table { paths, spec } = table();
    let state = State {
        app,
        amqp_uri: Arc::new(amqp_uri),
        notifier,
        openapi: Arc::new(spec.document()),
    };
    let mut router = Router::new();
    for (path, methods) in paths {
        router = router.route(path, methods);
    }
    router
        .fallback(handlers::ops::not_found)
        .method_not_allowed_fallback(handlers::ops::method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(request_id::layer))
        .with_state(state)
}
