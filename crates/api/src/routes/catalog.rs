//! Routes: The catalog: Service and Tool templates, Services, Secrets, Tools.

use aiden_service::Page;

use super::{route, Table};
use crate::handlers::catalog as c;
use crate::openapi::Op;

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

pub(super) fn routes(t: Table) -> Table {
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
