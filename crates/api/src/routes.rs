//! Every route, registered through one table that also writes the OpenAPI document.

use std::{collections::BTreeMap, sync::Arc};

use aiden_domain::knowledge::memory::NewMemory;
use aiden_service::memories::MemoryRow;
use aiden_service::{App, Page};
use axum::{
    extract::DefaultBodyLimit,
    middleware,
    routing::{on, MethodFilter, MethodRouter},
    Router,
};

use crate::{
    handlers::{
        catalog as c, console, conversations as cv, knowledge as k, ops, processes as p, runs as r,
        upkeep as m, users as u,
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

fn table() -> Table {
    let t = Table {
        paths: BTreeMap::new(),
        spec: Spec::default(),
    };
    let t = ops_routes(t);
    let t = catalog_routes(t);
    let t = process_routes(t);
    let t = conversation_routes(t);
    let t = knowledge_routes(t);
    let t = metric_routes(t);
    upkeep_routes(t)
}

fn metric_routes(t: Table) -> Table {
    use crate::handlers::measurements as mt;
    use aiden_domain::metric::{MetricDefinitionPatch, NewMetricDefinition};
    use aiden_service::measurements::{
        Aggregate, MetricDefinition, MetricValue, MetricValueQuery, NewMetricValue,
    };
    let t = route!(
        t,
        POST,
        "/v1/metric-definitions",
        mt::create_definition,
        Op::new("Define a metric (admin; MET-1 name unique in its scope, MET-3)")
            .body::<NewMetricDefinition>()
            .created::<MetricDefinition>()
            .errors(&[403, 409, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/metric-definitions",
        mt::list_definitions,
        Op::new("Metric definitions (admin)")
            .paged()
            .ok::<Page<MetricDefinition>>()
            .errors(&[403])
    );
    let t = route!(
        t,
        GET,
        "/v1/metric-definitions/{id}",
        mt::get_definition,
        Op::new("A metric definition (any caller: to write values of its type)")
            .ok::<MetricDefinition>()
    );
    let t = route!(
        t,
        PATCH,
        "/v1/metric-definitions/{id}",
        mt::patch_definition,
        Op::new("Change a metric's name, description, aggregation or retention (admin; MET-3)")
            .body::<MetricDefinitionPatch>()
            .ok::<MetricDefinition>()
            .errors(&[403, 409, 422])
    );
    let t = route!(
        t,
        DELETE,
        "/v1/metric-definitions/{id}",
        mt::delete_definition,
        Op::new("Delete a metric (admin); with values only with ?cascade=true (MET-2)")
            .query::<mt::CascadeQuery>()
            .no_content()
            .errors(&[403, 409])
    );
    let t = route!(
        t,
        POST,
        "/v1/metric-values",
        mt::record_value,
        Op::new("Append a measurement of an entity you can see (MET-1)")
            .body::<NewMetricValue>()
            .created_unlocated::<MetricValue>()
            .errors(&[422])
    );
    let t = route!(
        t,
        GET,
        "/v1/metric-values",
        mt::list_values,
        Op::new("Measurements in [from, to), newest first (an admin: any; a user: name an entityId you can see)")
            .query::<mt::ValuesQuery>()
            .ok::<Page<MetricValue>>()
            .errors(&[403, 404])
    );
    route!(
        t,
        GET,
        "/v1/metric-values/aggregate",
        mt::aggregate,
        Op::new("The metric's aggregation over [from, to): {value}, or {groups} by entityId or a dimension")
            .query::<MetricValueQuery>()
            .ok::<Aggregate>()
            .errors(&[403, 404])
    )
}

fn upkeep_routes(t: Table) -> Table {
    use aiden_domain::conversation::upkeep::{MemorySettings, SettingsPatch};
    use aiden_service::upkeep::{IntrospectionRecord, NewIntrospection, NoteCorrection};
    let t = route!(
        t,
        GET,
        "/v1/settings",
        m::get_settings,
        Op::new("Memory upkeep settings (admin)")
            .ok::<MemorySettings>()
            .errors(&[403])
    );
    let t = route!(
        t,
        PATCH,
        "/v1/settings",
        m::patch_settings,
        Op::new("Change memory upkeep settings (admin; MEM-1..5, INT-1)")
            .body::<SettingsPatch>()
            .ok::<MemorySettings>()
            .errors(&[403, 409, 422])
    );
    let t = route!(
        t,
        PATCH,
        "/v1/summaries/{id}",
        m::patch_summary,
        Op::new(
            "Repair a Summary (admin): tokenCount, corrected content (a new Episode; the old kept)"
        )
        .body::<aiden_domain::conversation::SummaryPatch>()
        .ok::<aiden_graph::conversations::SummaryRecord>()
        .errors(&[403, 404, 409, 422])
    );
    let t = route!(
        t,
        DELETE,
        "/v1/summaries/{id}",
        m::delete_summary,
        Op::new("Delete a Summary (admin): working memory falls back to the path (409 SUM-1 while another summarizes it)")
            .no_content()
            .errors(&[403, 404, 409])
    );
    let t = route!(
        t,
        GET,
        "/v1/introspections",
        m::carousel,
        Op::new("The caller's introspection carousel, by position (INT-1)")
            .ok::<Page<IntrospectionRecord>>()
    );
    let t = route!(
        t,
        GET,
        "/v1/introspections/archive",
        m::archive,
        Op::new("The caller's replaced introspection notes, newest first")
            .ok::<Page<IntrospectionRecord>>()
    );
    let t = route!(
        t,
        POST,
        "/v1/introspections",
        m::inject,
        Op::new("Inject a note into the caller's carousel (INT-1: the note in its position is archived)")
            .body::<NewIntrospection>()
            .created_unlocated::<IntrospectionRecord>()
            .errors(&[409, 422])
    );
    let t = route!(
        t,
        DELETE,
        "/v1/introspections/{id}",
        m::retire,
        Op::new("Retire a note: it leaves the carousel, archived (INT-1); its position is free")
            .no_content()
            .errors(&[404])
    );
    route!(
        t,
        PUT,
        "/v1/introspections/{id}/content",
        m::correct,
        Op::new("Correct a current note: new content and Episode; the old ones are kept")
            .body::<NoteCorrection>()
            .ok::<IntrospectionRecord>()
            .errors(&[409, 422])
    )
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
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(request_id::layer))
        .with_state(state)
}

fn ops_routes(t: Table) -> Table {
    let t = route!(
        t,
        GET,
        "/healthz",
        ops::healthz,
        Op::open("Liveness").ok::<ops::Health>()
    );
    let t = route!(
        t,
        GET,
        "/readyz",
        ops::readyz,
        Op::open("Readiness: graph and broker reachable")
            .ok::<ops::Readiness>()
            .also::<ops::Readiness>(503, "Not ready: what is unreachable")
    );
    let t = route!(
        t,
        GET,
        "/metrics",
        ops::metrics,
        Op::open("Prometheus metrics").text("text/plain")
    );
    let t = route!(
        t,
        GET,
        "/openapi.json",
        ops::openapi,
        Op::open("This document").ok::<serde_json::Map<String, serde_json::Value>>()
    );
    let t = route!(
        t,
        GET,
        "/docs",
        ops::docs,
        Op::open("This document as a browsable reference (HTML)").text("text/html")
    );
    let t = route!(
        t,
        GET,
        "/",
        console::index,
        Op::open("The web console (HTML; its scripts and styles are under /ui/)").text("text/html")
    );
    let t = route!(
        t,
        GET,
        "/ui/{file}",
        console::asset,
        Op::open("A file of the web console").undocumented()
    );
    let t = route!(
        t,
        POST,
        "/v1/users",
        u::create_user,
        Op::new("Create a user (admin); the token is shown once")
            .body::<aiden_service::NewUser>()
            .created_unlocated::<aiden_service::User>()
            .errors(&[403, 409])
    );
    let t = route!(
        t,
        GET,
        "/v1/me",
        u::get_me,
        Op::new("The caller").ok::<aiden_service::User>()
    );
    let t = route!(
        t,
        GET,
        "/v1/me/chat-processes",
        u::chat_processes,
        Op::new(
            "Processes that can answer a conversation, each with whether it runs for the caller"
        )
        .ok::<aiden_service::views::Items<aiden_service::chat::ChatProcess>>()
    );
    let t = route!(
        t,
        PUT,
        "/v1/me/default-process",
        u::set_default_process,
        Op::new("Set the Process your conversations answer with when none is named (CONV-2)")
            .body::<aiden_service::chat::DefaultProcess>()
            .ok::<aiden_service::User>()
            .errors(&[422])
    );
    let t = route!(
        t,
        GET,
        "/v1/users/{id}",
        u::get_user,
        Op::new("A user (admin, or the user themselves)")
            .ok::<aiden_service::User>()
            .errors(&[404])
    );
    let t = route!(
        t,
        PATCH,
        "/v1/users/{id}",
        u::patch_user,
        Op::new("Change a user's role or disable them (admin; USR-1, USR-2)")
            .body::<aiden_domain::user::UserPatch>()
            .ok::<aiden_service::User>()
            .errors(&[403, 404, 422])
    );
    let t = route!(
        t,
        POST,
        "/v1/users/{id}/tokens",
        u::create_token,
        Op::new("A new token for the user (admin or self; shown once, USR-3)")
            .body::<aiden_service::NewToken>()
            .created_unlocated::<aiden_service::Token>()
            .errors(&[404])
    );
    let t = route!(
        t,
        GET,
        "/v1/users/{id}/tokens",
        u::list_tokens,
        Op::new("The user's tokens, live and revoked (admin or self; never the values)")
            .ok::<Page<aiden_service::Token>>()
            .errors(&[404])
    );
    route!(
        t,
        DELETE,
        "/v1/users/{id}/tokens/{tokenId}",
        u::revoke_token,
        Op::new("Revoke a token for good (admin or self; USR-3)")
            .no_content()
            .errors(&[404, 422])
    )
}

/// Create, list, get, patch (`If-Match`), delete: the shape every catalog resource shares.
/// `$shareable`: others may see it, so changing it without owning it is a 403 (a Secret is
/// only ever seen by its owner: 404).
macro_rules! crud {
    ($t:expr, $path:literal, $item:literal, $module:ident, $new:ty, $patch:ty, $view:ty, $if_match:expr, $shareable:expr,
     $create:ident, $list:ident, $get:ident, $update:ident, $delete:ident,
     $create_doc:expr, $list_doc:expr, $patch_doc:expr, $delete_doc:expr) => {{
        let t = route!(
            $t,
            POST,
            $path,
            $module::$create,
            Op::new($create_doc)
                .body::<$new>()
                .created::<$view>()
                .links($path, "id")
                .errors(&[409, 422])
        );
        let t = route!(
            t,
            GET,
            $path,
            $module::$list,
            Op::new($list_doc).paged().ok::<Page<$view>>()
        );
        let t = route!(
            t,
            GET,
            $item,
            $module::$get,
            Op::new(concat!("Get one (", $path, ")")).ok::<$view>()
        );
        let t = route!(t, PATCH, $item, $module::$update, {
            let op = Op::new($patch_doc)
                .body::<$patch>()
                .ok::<$view>()
                .errors(if $shareable {
                    &[403, 409, 422]
                } else {
                    &[409, 422]
                });
            if $if_match {
                op.if_match()
            } else {
                op
            }
        });
        route!(
            t,
            DELETE,
            $item,
            $module::$delete,
            Op::new($delete_doc)
                .no_content()
                .errors(if $shareable { &[403, 409] } else { &[409] })
        )
    }};
}

fn catalog_routes(t: Table) -> Table {
    use aiden_domain::{
        service::{NewService, Service, ServicePatch},
        template::{
            NewServiceTemplate, NewToolTemplate, ServiceTemplate, TemplatePatch, ToolTemplate,
        },
        tool::{NewTool, Tool, ToolPatch},
    };
    use aiden_service::{NewSecret, SecretPatch};
    let t = crud!(
        t,
        "/v1/service-templates",
        "/v1/service-templates/{id}",
        c,
        NewServiceTemplate,
        TemplatePatch,
        ServiceTemplate,
        false,
        true,
        create_service_template,
        list_service_templates,
        get_service_template,
        patch_service_template,
        delete_service_template,
        "Create a ServiceTemplate",
        "List ServiceTemplates",
        "Update name, description, shared, archived (TPL-1)",
        "Delete a ServiceTemplate (TPL-3)"
    );
    let t = crud!(
        t,
        "/v1/tool-templates",
        "/v1/tool-templates/{id}",
        c,
        NewToolTemplate,
        TemplatePatch,
        ToolTemplate,
        false,
        true,
        create_tool_template,
        list_tool_templates,
        get_tool_template,
        patch_tool_template,
        delete_tool_template,
        "Create a ToolTemplate",
        "List ToolTemplates",
        "Update name, description, shared, archived (TPL-1)",
        "Delete a ToolTemplate (TPL-3)"
    );
    let t = crud!(
        t,
        "/v1/services",
        "/v1/services/{id}",
        c,
        NewService,
        ServicePatch,
        Service,
        true,
        true,
        create_service,
        list_services,
        get_service,
        patch_service,
        delete_service,
        "Create a Service, or instantiate a ServiceTemplate",
        "List visible Services",
        "Update a Service (If-Match: revision)",
        "Delete a Service no Tool uses (SVC-5)"
    );
    let t = route!(
        t,
        POST,
        "/v1/services/{id}/health-check",
        c::health_check_service,
        Op::new("Probe the endpoint now")
            .ok::<Service>()
            .errors(&[403])
    );
    let t = crud!(
        t,
        "/v1/secrets",
        "/v1/secrets/{id}",
        c,
        NewSecret,
        SecretPatch,
        aiden_domain::secret::Secret,
        false,
        false,
        create_secret,
        list_secrets,
        get_secret,
        patch_secret,
        delete_secret,
        "Store an encrypted Secret; the value is never returned",
        "List the caller's Secrets (metadata)",
        "Rename or rotate a Secret (SEC-4)",
        "Delete a Secret no Tool uses (SEC-5)"
    );
    crud!(
        t,
        "/v1/tools",
        "/v1/tools/{id}",
        c,
        NewTool,
        ToolPatch,
        Tool,
        true,
        true,
        create_tool,
        list_tools,
        get_tool,
        patch_tool,
        delete_tool,
        "Create a Tool, or instantiate a ToolTemplate",
        "List visible Tools",
        "Update a Tool (If-Match: revision)",
        "Delete a Tool no step calls (TOOL-8)"
    )
}

fn process_routes(t: Table) -> Table {
    use aiden_domain::execution::agent::ApprovalRequest;
    use aiden_domain::process::{NewProcess, Process, ProcessPatch};
    use aiden_service::{
        views::{ApprovalAnswer, CancelAnswer, Items, RunView, WorkerView},
        ProcessVersion, RunStarted,
    };
    let t = route!(
        t,
        POST,
        "/v1/processes",
        p::create_process,
        Op::new("Create a Process (version 1)")
            .body::<NewProcess>()
            .created::<Process>()
            .links("/v1/processes", "id")
            .errors(&[403, 404, 409, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/processes",
        p::list_processes,
        Op::new("List visible Processes")
            .paged()
            .ok::<Page<Process>>()
    );
    let t = route!(
        t,
        GET,
        "/v1/processes/{id}",
        p::get_process,
        Op::new("Get a Process at its current version").ok::<Process>()
    );
    let t = route!(
        t,
        PUT,
        "/v1/processes/{id}",
        p::put_process,
        Op::new("Replace a Process; a changed definition is a new version (PROC-9)")
            .body::<NewProcess>()
            .if_match()
            .ok::<Process>()
            .errors(&[403, 422])
    );
    let t = route!(
        t,
        PATCH,
        "/v1/processes/{id}",
        p::patch_process,
        Op::new("Update a Process; a changed definition is a new version (PROC-9)")
            .body::<ProcessPatch>()
            .if_match()
            .ok::<Process>()
            .errors(&[403, 422])
    );
    let t = route!(
        t,
        DELETE,
        "/v1/processes/{id}",
        p::delete_process,
        Op::new("Delete an unreferenced Process (PROC-10)")
            .no_content()
            .errors(&[403, 409])
    );
    let t = route!(
        t,
        GET,
        "/v1/processes/{id}/versions",
        p::list_process_versions,
        Op::new("Every version of a Process").ok::<Page<ProcessVersion>>()
    );
    let t = route!(
        t,
        POST,
        "/v1/processes/{id}/runs",
        r::start_run,
        Op::new(
            "Start a run of the Process's current version (Idempotency-Key: same key, same run)"
        )
        .body::<r::StartRun>()
        .header(
            "Idempotency-Key",
            "Same key and caller: the same run (keys over 200 characters are ignored)",
            serde_json::json!({"type": "string", "maxLength": 200}),
        )
        .accepted::<RunStarted>()
        .links("/v1/runs", "runId")
        .errors(&[409, 422, 429])
    );
    let t = route!(
        t,
        GET,
        "/v1/runs",
        r::list_runs,
        Op::new("Runs, newest first: your own (every run for an admin), by Process and status")
            .query::<r::RunListQuery>()
            .ok::<Page<aiden_service::views::RunSummary>>()
    );
    let t = route!(
        t,
        GET,
        "/v1/runs/{id}",
        r::get_run,
        Op::new("A run with per-step status, output and telemetry").ok::<RunView>()
    );
    let t = route!(
        t,
        POST,
        "/v1/runs/{id}/cancel",
        r::cancel_run,
        Op::new("Cancel a run: pending work never starts, in-flight calls are abandoned")
            .accepted::<CancelAnswer>()
            .errors(&[409])
    );
    let t = route!(
        t,
        POST,
        "/v1/runs/{id}/approvals",
        r::approve_run,
        Op::new("Grant (for ttlSeconds, or the rest of the run) or deny a capability an agent step waits for (AGT-9)")
            .body::<ApprovalRequest>()
            .accepted::<ApprovalAnswer>()
            .errors(&[409, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/runs/{id}/events",
        r::run_events,
        Op::new("The run's events as Server-Sent Events (resume with Last-Event-ID)")
            .header(
                "Last-Event-ID",
                "Resume after this event sequence",
                serde_json::json!({"type": "string"}),
            )
            .event_stream()
    );
    route!(
        t,
        GET,
        "/v1/workers",
        r::list_workers,
        Op::new("Worker slots with heartbeat, status and counts").ok::<Items<WorkerView>>()
    )
}

fn conversation_routes(t: Table) -> Table {
    use aiden_domain::conversation::{
        memory::WorkingMemory,
        tree::{AlternativeView, TurnView},
        ConversationPatch, ForkRequest, NewAgentTurn, NewAlternative, NewConversation, NewSummary,
        NewTurn, SwitchActive,
    };
    use aiden_graph::conversations::SummaryRecord;
    use aiden_service::{
        views::{ConversationView, TreeView},
        Generating,
    };
    let t = route!(
        t,
        POST,
        "/v1/conversations",
        cv::create_conversation,
        Op::new("Create a Conversation (optionally with a default Process, CONV-2)")
            .body::<NewConversation>()
            .created::<ConversationView>()
            .links("/v1/conversations", "id")
            .errors(&[404, 409, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations",
        cv::list_conversations,
        Op::new("The caller's Conversations (?includeArchived=true for archived ones)")
            .paged()
            .ok::<Page<ConversationView>>()
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations/{id}",
        cv::get_conversation,
        Op::new("A Conversation").ok::<ConversationView>()
    );
    let t = route!(
        t,
        PATCH,
        "/v1/conversations/{id}",
        cv::patch_conversation,
        Op::new("Rename, archive/unarchive, or set the default Process (If-Match: revision). Conversations are never deleted: DELETE answers 405 naming CONV-1")
            .body::<ConversationPatch>()
            .if_match()
            .ok::<ConversationView>()
            .errors(&[422])
    );
    let t = route!(
        t,
        DELETE,
        "/v1/conversations/{id}",
        cv::delete_conversation,
        Op::new("Never allowed: Conversations are permanent (CONV-1); archive instead")
            .undocumented()
    );
    let t = route!(
        t,
        POST,
        "/v1/conversations/{id}/fork",
        cv::fork_conversation,
        Op::new(
            "Fork at an Alternative: a new Conversation with its own copy of the path (CONV-3)"
        )
        .body::<ForkRequest>()
        .created::<ConversationView>()
        .links("/v1/conversations", "id")
        .errors(&[409, 422])
    );
    let t = route!(
        t,
        POST,
        "/v1/conversations/{id}/turns",
        cv::create_turn,
        Op::new("Append a user or system Turn with its first, active Alternative")
            .body::<NewTurn>()
            .created::<TurnView>()
            .links("/v1/turns", "id")
            .errors(&[403, 409, 422])
    );
    let t = route!(
        t,
        POST,
        "/v1/conversations/{id}/agent-turns",
        cv::create_agent_turn,
        Op::new("Append an agent Turn generated by a run of a Process (Alternative `generating`)")
            .body::<NewAgentTurn>()
            .accepted_at::<Generating>()
            .links("/v1/turns", "turnId")
            .links("/v1/alternatives", "alternativeId")
            .links("/v1/runs", "runId")
            .errors(&[409, 422, 429])
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations/{id}/tree",
        cv::conversation_tree,
        Op::new("Every Turn and Alternative with isActive, cacheStatus, hasChildren, respondsTo")
            .query::<cv::TreeWindow>()
            .ok::<TreeView>()
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations/{id}/working-memory",
        cv::working_memory,
        Op::new("Working memory at ?alternativeId= or ?turnId= (default: the current position)")
            .query::<cv::Position>()
            .ok::<WorkingMemory>()
            .errors(&[422])
    );
    let t = route!(
        t,
        POST,
        "/v1/conversations/{id}/summaries",
        cv::create_summary,
        Op::new("Record a Summary that stands in for the path up to a Turn (SUM-1, WM-3)")
            .body::<NewSummary>()
            .created_unlocated::<SummaryRecord>()
            .errors(&[409, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations/{id}/summaries",
        cv::list_summaries,
        Op::new("The Conversation's Summaries").ok::<Page<SummaryRecord>>()
    );
    let t = route!(
        t,
        GET,
        "/v1/turns/{id}",
        cv::get_turn,
        Op::new("A Turn with its Alternatives").ok::<TurnView>()
    );
    let t = route!(
        t,
        POST,
        "/v1/turns/{id}/alternatives",
        cv::add_alternative,
        Op::new(
            "A new Alternative: content (user/system Turn, 201) or processId (agent Turn, 202)"
        )
        .body::<NewAlternative>()
        .created::<AlternativeView>()
        .links("/v1/alternatives", "id")
        .also::<AlternativeView>(202, "An agent Alternative, generating: its run starts")
        .errors(&[409, 422, 429])
    );
    let t = route!(
        t,
        GET,
        "/v1/alternatives/{id}",
        cv::get_alternative,
        Op::new("An Alternative with its cacheStatus, run and Episode binding")
            .ok::<AlternativeView>()
    );
    route!(
        t,
        PUT,
        "/v1/turns/{id}/active",
        cv::switch_active,
        Op::new("Make an Alternative of this Turn the active one (TURN-2)")
            .body::<SwitchActive>()
            .ok::<TurnView>()
            .errors(&[409, 422])
    )
}

fn knowledge_routes(t: Table) -> Table {
    use aiden_domain::knowledge::{entity::EntityReference, ActiveEntityFlags, NewEntity};
    use aiden_service::views::{EntityView, Items, ProposalDecision};
    let t = route!(
        t,
        POST,
        "/v1/entities",
        k::create_entity,
        Op::new("Create an Entity (name and summary required, source user; ENT-1)")
            .body::<NewEntity>()
            .created::<EntityView>()
            .links("/v1/entities", "uuid")
            .errors(&[409, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/entities",
        k::list_entities,
        Op::new("Entities the caller may see (?conversationId=, ?q= name filter)")
            .query::<k::EntityQuery>()
            .ok::<Page<EntityView>>()
            .errors(&[404])
    );
    let t = route!(
        t,
        GET,
        "/v1/entities/{id}",
        k::get_entity,
        Op::new("An Entity with its sources (creator, mentioning Episodes)").ok::<EntityView>()
    );
    let t = route!(
        t,
        GET,
        "/v1/entities/{id}/context",
        k::entity_page,
        Op::new("An Entity's page: the Entity, the caller's Alternatives that mention it, its facts and neighbours")
            .ok::<aiden_service::recall::EntityPage>()
    );
    let t = route!(
        t,
        POST,
        "/v1/entities/{id}/confirm",
        k::confirm_entity,
        Op::new("Confirm an Entity an agent proposed to remember (it becomes yours)")
            .ok::<ProposalDecision>()
            .errors(&[409])
    );
    let t = route!(
        t,
        POST,
        "/v1/entities/{id}/reject",
        k::reject_entity,
        Op::new("Reject (remove) an Entity an agent proposed to remember")
            .ok::<ProposalDecision>()
            .errors(&[409])
    );
    let t = route!(
        t,
        GET,
        "/v1/memories",
        k::memories,
        Op::new("The caller's memories (SRCH-4), newest first").ok::<Page<MemoryRow>>()
    );
    let t = route!(
        t,
        POST,
        "/v1/memories",
        k::remember,
        Op::new(
            "Keep a memory (SRCH-4): the caller's alone, recalled in any of their conversations"
        )
        .body::<NewMemory>()
        .created_unlocated::<MemoryRow>()
        .errors(&[422])
    );
    let t = route!(
        t,
        DELETE,
        "/v1/memories/{id}",
        k::forget,
        Op::new("Forget a memory (SRCH-4): search and retrieved context no longer find it")
            .no_content()
            .errors(&[404])
    );
    let t = route!(
        t,
        GET,
        "/v1/search",
        k::search,
        Op::new(
            "Search what the caller owns by meaning, words and the graph (?q=, ?conversationId=, \
             ?kinds=episode,entity,fact,summary,introspection,memory, ?limit=); each hit with its \
             score and provenance"
        )
        .query::<k::SearchQuery>()
        .ok::<aiden_service::recall::SearchAnswer>()
        .errors(&[404, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations/{id}/entities",
        k::conversation_entities,
        Op::new("The Conversation's active entities (HAS_ACTIVE_ENTITY)")
            .ok::<Items<EntityReference>>()
    );
    let t = route!(
        t,
        PUT,
        "/v1/conversations/{id}/entities/{uuid}",
        k::activate_entity,
        Op::new("Add an Entity to the Conversation's active entities, with its include flags")
            .body::<ActiveEntityFlags>()
            .ok::<EntityReference>()
            .errors(&[409])
    );
    route!(
        t,
        DELETE,
        "/v1/conversations/{id}/entities/{uuid}",
        k::deactivate_entity,
        Op::new("Remove an Entity from the Conversation's active entities").no_content()
    )
}
