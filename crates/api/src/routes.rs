//! Every route, registered through one table that also writes the OpenAPI document.

use std::{collections::BTreeMap, sync::Arc};

use aiden_service::App;
use axum::{
    extract::DefaultBodyLimit,
    middleware,
    routing::{on, MethodFilter, MethodRouter},
    Router,
};

use crate::{
    handlers::{
        catalog as c, conversations as cv, knowledge as k, ops, processes as p, runs as r,
        users as u,
    },
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
        $t.add(stringify!($m), $path, $op, on(MethodFilter::$m, $handler))
    };
}

pub fn router(app: App, amqp_uri: String, notifier: aiden_engine::Notifier) -> Router {
    let t = Table {
        paths: BTreeMap::new(),
        spec: Spec::default(),
    };
    let t = route!(t, GET, "/healthz", ops::healthz, Op::open("Liveness", 200));
    let t = route!(
        t,
        GET,
        "/readyz",
        ops::readyz,
        Op::open("Readiness: graph and broker reachable", 200)
    );
    let t = route!(
        t,
        GET,
        "/metrics",
        ops::metrics,
        Op::open("Prometheus metrics", 200)
    );
    let t = route!(
        t,
        GET,
        "/openapi.json",
        ops::openapi,
        Op::open("This document", 200)
    );
    let t = route!(
        t,
        POST,
        "/v1/users",
        u::create_user,
        Op::body("Create a user (admin); the token is shown once", 201)
    );
    let t = route!(t, GET, "/v1/me", u::get_me, Op::read("The caller", 200));

    let t = route!(
        t,
        POST,
        "/v1/service-templates",
        c::create_service_template,
        Op::body("Create a ServiceTemplate", 201)
    );
    let t = route!(
        t,
        GET,
        "/v1/service-templates",
        c::list_service_templates,
        Op::list("List ServiceTemplates")
    );
    let t = route!(
        t,
        GET,
        "/v1/service-templates/{id}",
        c::get_service_template,
        Op::read("Get a ServiceTemplate", 200)
    );
    let t = route!(
        t,
        PATCH,
        "/v1/service-templates/{id}",
        c::patch_service_template,
        Op::body("Update name, description, shared, archived (TPL-1)", 200)
    );
    let t = route!(
        t,
        DELETE,
        "/v1/service-templates/{id}",
        c::delete_service_template,
        Op::read("Delete a ServiceTemplate (TPL-3)", 204)
    );

    let t = route!(
        t,
        POST,
        "/v1/tool-templates",
        c::create_tool_template,
        Op::body("Create a ToolTemplate", 201)
    );
    let t = route!(
        t,
        GET,
        "/v1/tool-templates",
        c::list_tool_templates,
        Op::list("List ToolTemplates")
    );
    let t = route!(
        t,
        GET,
        "/v1/tool-templates/{id}",
        c::get_tool_template,
        Op::read("Get a ToolTemplate", 200)
    );
    let t = route!(
        t,
        PATCH,
        "/v1/tool-templates/{id}",
        c::patch_tool_template,
        Op::body("Update name, description, shared, archived (TPL-1)", 200)
    );
    let t = route!(
        t,
        DELETE,
        "/v1/tool-templates/{id}",
        c::delete_tool_template,
        Op::read("Delete a ToolTemplate (TPL-3)", 204)
    );

    let t = route!(
        t,
        POST,
        "/v1/services",
        c::create_service,
        Op::body("Create a Service, or instantiate a ServiceTemplate", 201)
    );
    let t = route!(
        t,
        GET,
        "/v1/services",
        c::list_services,
        Op::list("List visible Services")
    );
    let t = route!(
        t,
        GET,
        "/v1/services/{id}",
        c::get_service,
        Op::read("Get a Service", 200)
    );
    let t = route!(
        t,
        PATCH,
        "/v1/services/{id}",
        c::patch_service,
        Op::body("Update a Service (If-Match: revision)", 200)
    );
    let t = route!(
        t,
        DELETE,
        "/v1/services/{id}",
        c::delete_service,
        Op::read("Delete a Service no Tool uses (SVC-5)", 204)
    );
    let t = route!(
        t,
        POST,
        "/v1/services/{id}/health-check",
        c::health_check_service,
        Op::read("Probe the endpoint now", 200)
    );

    let t = route!(
        t,
        POST,
        "/v1/secrets",
        c::create_secret,
        Op::body(
            "Store an encrypted Secret; the value is never returned",
            201
        )
    );
    let t = route!(
        t,
        GET,
        "/v1/secrets",
        c::list_secrets,
        Op::list("List the caller's Secrets (metadata)")
    );
    let t = route!(
        t,
        GET,
        "/v1/secrets/{id}",
        c::get_secret,
        Op::read("Get a Secret's metadata", 200)
    );
    let t = route!(
        t,
        PATCH,
        "/v1/secrets/{id}",
        c::patch_secret,
        Op::body("Rename or rotate a Secret (SEC-4)", 200)
    );
    let t = route!(
        t,
        DELETE,
        "/v1/secrets/{id}",
        c::delete_secret,
        Op::read("Delete a Secret no Tool uses (SEC-5)", 204)
    );

    let t = route!(
        t,
        POST,
        "/v1/tools",
        c::create_tool,
        Op::body("Create a Tool, or instantiate a ToolTemplate", 201)
    );
    let t = route!(
        t,
        GET,
        "/v1/tools",
        c::list_tools,
        Op::list("List visible Tools")
    );
    let t = route!(
        t,
        GET,
        "/v1/tools/{id}",
        c::get_tool,
        Op::read("Get a Tool", 200)
    );
    let t = route!(
        t,
        PATCH,
        "/v1/tools/{id}",
        c::patch_tool,
        Op::body("Update a Tool (If-Match: revision)", 200)
    );
    let t = route!(
        t,
        DELETE,
        "/v1/tools/{id}",
        c::delete_tool,
        Op::read("Delete a Tool no step calls (TOOL-8)", 204)
    );

    let t = route!(
        t,
        POST,
        "/v1/processes",
        p::create_process,
        Op::body("Create a Process (version 1)", 201)
    );
    let t = route!(
        t,
        GET,
        "/v1/processes",
        p::list_processes,
        Op::list("List visible Processes")
    );
    let t = route!(
        t,
        GET,
        "/v1/processes/{id}",
        p::get_process,
        Op::read("Get a Process at its current version", 200)
    );
    let t = route!(
        t,
        PUT,
        "/v1/processes/{id}",
        p::put_process,
        Op::body(
            "Replace a Process; a changed definition is a new version (PROC-9)",
            200
        )
    );
    let t = route!(
        t,
        PATCH,
        "/v1/processes/{id}",
        p::patch_process,
        Op::body(
            "Update a Process; a changed definition is a new version (PROC-9)",
            200
        )
    );
    let t = route!(
        t,
        DELETE,
        "/v1/processes/{id}",
        p::delete_process,
        Op::read("Delete an unreferenced Process (PROC-10)", 204)
    );
    let t = route!(
        t,
        GET,
        "/v1/processes/{id}/versions",
        p::list_process_versions,
        Op::read("Every version of a Process", 200)
    );

    let t = route!(
        t,
        POST,
        "/v1/processes/{id}/runs",
        r::start_run,
        Op::body(
            "Start a run of the Process's current version (Idempotency-Key: same key, same run)",
            202
        )
    );
    let t = route!(
        t,
        GET,
        "/v1/runs/{id}",
        r::get_run,
        Op::read("A run with per-step status, output and telemetry", 200)
    );
    let t = route!(
        t,
        POST,
        "/v1/runs/{id}/cancel",
        r::cancel_run,
        Op::read(
            "Cancel a run: pending work never starts, in-flight calls are abandoned",
            202
        )
    );
    let t = route!(
        t,
        POST,
        "/v1/runs/{id}/approvals",
        r::approve_run,
        Op::read(
            "Grant (for ttlSeconds, or the rest of the run) or deny a capability an agent step waits for",
            202
        )
    );
    let t = route!(
        t,
        GET,
        "/v1/runs/{id}/events",
        r::run_events,
        Op::read(
            "The run's events as Server-Sent Events (resume with Last-Event-ID)",
            200
        )
    );
    let t = route!(
        t,
        GET,
        "/v1/workers",
        r::list_workers,
        Op::read("Worker slots with heartbeat, status and counts", 200)
    );

    let t = conversation_routes(t);
    let t = knowledge_routes(t);

    let Table { paths, spec } = t;
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
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(request_id::layer))
        .with_state(state)
}

fn conversation_routes(t: Table) -> Table {
    let t = route!(
        t,
        POST,
        "/v1/conversations",
        cv::create_conversation,
        Op::body(
            "Create a Conversation (optionally with a default Process, CONV-2)",
            201
        )
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations",
        cv::list_conversations,
        Op::list("The caller's Conversations (?includeArchived=true for archived ones)")
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations/{id}",
        cv::get_conversation,
        Op::read("A Conversation", 200)
    );
    let t = route!(
        t,
        PATCH,
        "/v1/conversations/{id}",
        cv::patch_conversation,
        Op::body(
            "Rename, archive/unarchive, or set the default Process (If-Match: revision)",
            200
        )
    );
    let t = route!(
        t,
        DELETE,
        "/v1/conversations/{id}",
        cv::delete_conversation,
        Op::read(
            "Never allowed: Conversations are permanent (CONV-1); archive instead",
            405
        )
    );
    let t = route!(
        t,
        POST,
        "/v1/conversations/{id}/fork",
        cv::fork_conversation,
        Op::body(
            "Fork at an Alternative: a new Conversation with its own copy of the path (CONV-3)",
            201
        )
    );
    let t = route!(
        t,
        POST,
        "/v1/conversations/{id}/turns",
        cv::create_turn,
        Op::body(
            "Append a user or system Turn with its first, active Alternative",
            201
        )
    );
    let t = route!(
        t,
        POST,
        "/v1/conversations/{id}/agent-turns",
        cv::create_agent_turn,
        Op::body(
            "Append an agent Turn generated by a run of a Process (Alternative `generating`)",
            202
        )
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations/{id}/tree",
        cv::conversation_tree,
        Op::read(
            "Every Turn and Alternative with isActive, cacheStatus, hasChildren, respondsTo",
            200
        )
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations/{id}/working-memory",
        cv::working_memory,
        Op::read(
            "Working memory at ?alternativeId= or ?turnId= (default: the current position)",
            200
        )
    );
    let t = route!(
        t,
        POST,
        "/v1/conversations/{id}/summaries",
        cv::create_summary,
        Op::body(
            "Record a Summary that stands in for the path up to a Turn (SUM-1, WM-3)",
            201
        )
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations/{id}/summaries",
        cv::list_summaries,
        Op::read("The Conversation's Summaries", 200)
    );
    let t = route!(
        t,
        GET,
        "/v1/turns/{id}",
        cv::get_turn,
        Op::read("A Turn with its Alternatives", 200)
    );
    let t = route!(
        t,
        POST,
        "/v1/turns/{id}/alternatives",
        cv::add_alternative,
        Op::body(
            "A new Alternative: content (user/system Turn, 201) or processId (agent Turn, 202)",
            201
        )
    );
    route!(
        t,
        PUT,
        "/v1/turns/{id}/active",
        cv::switch_active,
        Op::body(
            "Make an Alternative of this Turn the active one (TURN-2)",
            200
        )
    )
}

fn knowledge_routes(t: Table) -> Table {
    let t = route!(
        t,
        POST,
        "/v1/entities",
        k::create_entity,
        Op::body(
            "Create an Entity (name and summary required, source user; ENT-1)",
            201
        )
    );
    let t = route!(
        t,
        GET,
        "/v1/entities",
        k::list_entities,
        Op::list("Entities the caller may see (?conversationId=, ?q= name filter)")
    );
    let t = route!(
        t,
        GET,
        "/v1/entities/{id}",
        k::get_entity,
        Op::read(
            "An Entity with its sources (creator, mentioning Episodes)",
            200
        )
    );
    let t = route!(
        t,
        POST,
        "/v1/entities/{id}/confirm",
        k::confirm_entity,
        Op::read(
            "Confirm an Entity an agent proposed to remember (it becomes yours)",
            200
        )
    );
    let t = route!(
        t,
        POST,
        "/v1/entities/{id}/reject",
        k::reject_entity,
        Op::read(
            "Reject (remove) an Entity an agent proposed to remember",
            200
        )
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations/{id}/entities",
        k::conversation_entities,
        Op::read(
            "The Conversation's active entities (HAS_ACTIVE_ENTITY)",
            200
        )
    );
    let t = route!(
        t,
        PUT,
        "/v1/conversations/{id}/entities/{uuid}",
        k::activate_entity,
        Op::body(
            "Add an Entity to the Conversation's active entities, with its include flags",
            200
        )
    );
    route!(
        t,
        DELETE,
        "/v1/conversations/{id}/entities/{uuid}",
        k::deactivate_entity,
        Op::read(
            "Remove an Entity from the Conversation's active entities",
            204
        )
    )
}
