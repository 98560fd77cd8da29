//! Tools: one operation bound to a Service (TOOL-1..8, SEC-6 at definition time).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    error::Violations,
    schema::{check_instance, check_object_schema, property_names},
    service::{check_name, HealthStatus, Service, ServiceType},
    template::ToolTemplate,
    template_vars::{cypher_parameters, template_variables},
    Checked, Error, Id,
};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    #[default]
    Read,
    Write,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LlmApi {
    #[default]
    Openai,
    Anthropic,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ResponseFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    Get,
    Post,
    Put,
    Patch,
    Delete,
    Head,
}

/// What a Tool does, by operation type (TOOL-4: it fits the Service's type).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Operation {
    GraphQuery {
        query: String,
        #[serde(default)]
        access: Access,
    },
    LlmCall {
        #[serde(default)]
        api: LlmApi,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system_prompt: Option<String>,
        prompt_template: String,
        #[serde(default)]
        response_format: ResponseFormat,
    },
    RestApi {
        method: HttpMethod,
        path: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body_template: Option<String>,
        /// The request header that carries the step run's idempotency key, the same for every
        /// re-delivery and retry of that step run (the IETF draft's `Idempotency-Key`, the
        /// default); `null` sends none.
        #[serde(
            default = "default_idempotency_header",
            skip_serializing_if = "is_default_idempotency_header"
        )]
        idempotency_header: Option<String>,
    },
    McpCall {
        tool_name: String,
        #[serde(default = "empty_object")]
        arguments: Value,
    },
    /// Search what the run's owner owns: the input's `q` (and optional
    /// `conversationId`), as `GET /v1/search` answers it.
    Recall {
        /// Comma-separated kinds (SRCH-1); all when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kinds: Option<String>,
        /// 1..=50 (default 10).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<i64>,
    },
}

/// An HTTP field name (RFC 9110 `token`), at most 64 characters.
fn is_header_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn default_idempotency_header() -> Option<String> {
    Some(IDEMPOTENCY_HEADER.to_owned())
}

/// The default is left out of what is stored and shown (an operation reads back as written);
/// `null` (none) is kept, so "off" survives a round trip.
fn is_default_idempotency_header(h: &Option<String>) -> bool {
    h.as_deref() == Some(IDEMPOTENCY_HEADER)
}

/// The header a `rest_api` call carries its idempotency key in unless its Tool says otherwise.
pub const IDEMPOTENCY_HEADER: &str = "Idempotency-Key";

fn empty_object() -> Value {
    Value::Object(Default::default())
}

impl Operation {
    pub fn operation_type(&self) -> crate::OperationType {
        use crate::OperationType as T;
        match self {
            Self::GraphQuery { .. } => T::GraphQuery,
            Self::LlmCall { .. } => T::LlmCall,
            Self::RestApi { .. } => T::RestApi,
            Self::McpCall { .. } => T::McpCall,
            Self::Recall { .. } => T::Recall,
        }
    }

    /// TOOL-4: the Service type this operation runs against.
    pub fn service_type(&self) -> ServiceType {
        match self {
            Self::GraphQuery { .. } => ServiceType::Neo4jGraph,
            Self::LlmCall { .. } => ServiceType::LlmProvider,
            Self::RestApi { .. } => ServiceType::RestApi,
            Self::McpCall { .. } => ServiceType::McpServer,
            Self::Recall { .. } => ServiceType::Knowledge,
        }
    }

    /// TOOL-5: every variable the operation uses.
    pub fn variables(&self) -> BTreeSet<String> {
        match self {
            Self::GraphQuery { query, .. } => cypher_parameters(query),
            Self::LlmCall {
                system_prompt,
                prompt_template,
                ..
            } => {
                let mut v = template_variables(prompt_template);
                if let Some(s) = system_prompt {
                    v.extend(template_variables(s));
                }
                v
            }
            Self::RestApi {
                path,
                headers,
                body_template,
                ..
            } => {
                let mut v = template_variables(path);
                for h in headers.values() {
                    v.extend(template_variables(h));
                }
                if let Some(b) = body_template {
                    v.extend(template_variables(b));
                }
                v
            }
            Self::McpCall { arguments, .. } => {
                let mut v = BTreeSet::new();
                collect_string_variables(arguments, &mut v);
                v
            }
            Self::Recall { .. } => BTreeSet::from(["q".to_owned()]),
        }
    }
}

fn collect_string_variables(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => out.extend(template_variables(s)),
        Value::Array(items) => items.iter().for_each(|i| collect_string_variables(i, out)),
        Value::Object(map) => map.values().for_each(|i| collect_string_variables(i, out)),
        _ => {}
    }
}

/// The structural fields a Tool shares with its ToolTemplate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolStructure {
    pub operation: Operation,
    pub input_schema: Value,
    pub output_schema: Value,
}

impl ToolStructure {
    /// TOOL-5 and TOOL-6.
    pub fn check(&self) -> Vec<crate::Violation> {
        let mut v = check_object_schema("TOOL-6", "/inputSchema", &self.input_schema);
        v.extend(check_object_schema(
            "TOOL-6",
            "/outputSchema",
            &self.output_schema,
        ));
        if let Operation::Recall { kinds, limit } = &self.operation {
            let checked =
                crate::knowledge::recall::check_search(Some("q"), None, kinds.as_deref(), *limit);
            if let Err(e) = checked {
                v.push(crate::Violation::field("/operation", e.to_string()));
            }
        }
        if let Operation::McpCall { arguments, .. } = &self.operation {
            if !arguments.is_object() {
                v.push(crate::Violation::field(
                    "/operation/arguments",
                    "must be an object",
                ));
            }
        }
        if let Operation::RestApi {
            idempotency_header: Some(name),
            ..
        } = &self.operation
        {
            if !is_header_name(name) {
                v.push(crate::Violation::field(
                    "/operation/idempotencyHeader",
                    "must be an HTTP header name (1 to 64 token characters) or null",
                ));
            }
        }
        let used = self.operation.variables();
        let declared: BTreeSet<String> = property_names(&self.input_schema).into_iter().collect();
        for missing in used.difference(&declared) {
            v.push(crate::Violation::rule(
                "TOOL-5",
                "/inputSchema/properties",
                format!("the operation uses '{missing}', which inputSchema does not declare"),
            ));
        }
        for unused in declared.difference(&used) {
            v.push(crate::Violation::rule(
                "TOOL-5",
                format!("/inputSchema/properties/{unused}"),
                format!("inputSchema declares '{unused}', which the operation never uses"),
            ));
        }
        v
    }
}

/// A Tool as stored and shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub id: Id,
    pub name: String,
    pub description: Option<String>,
    pub service_id: Id,
    pub connection_params: Value,
    #[serde(flatten)]
    pub structure: ToolStructure,
    pub secret_id: Option<Id>,
    pub secret_scope: Option<String>,
    pub enabled: bool,
    pub shared: bool,
    pub status: HealthStatus,
    pub last_health_check: Option<String>,
    pub error_message: Option<String>,
    pub tool_template_id: Option<Id>,
    /// AGT-14: what one call costs in USD, checked against budgets before an agent calls it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_call_usd: Option<f64>,
    pub owner_id: Id,
    pub created_at: String,
    pub updated_at: String,
    pub revision: i64,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = crate::wire::template_xor_tool_structure)]
pub struct NewTool {
    pub id: Option<Id>,
    #[schemars(schema_with = "crate::wire::name")]
    pub name: String,
    pub description: Option<String>,
    pub service_id: Id,
    #[serde(default = "empty_object")]
    pub connection_params: Value,
    pub operation: Option<Operation>,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    pub secret_id: Option<Id>,
    pub secret_scope: Option<String>,
    pub tool_template_id: Option<Id>,
    /// AGT-14: what one call costs in USD (0-1000000).
    #[schemars(range(min = 0.0, max = 1_000_000.0))]
    pub cost_per_call_usd: Option<f64>,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub shared: bool,
}

fn yes() -> bool {
    true
}

/// A Tool's `costPerCallUsd`: 0-1000000 USD (plain validation, 400).
fn check_cost(usd: Option<f64>) -> Result<Option<f64>, Error> {
    match usd {
        Some(c) if !crate::execution::cost::valid_usd(c, true) => Err(Error::validation(
            "/costPerCallUsd",
            "must be 0-1000000 (USD)",
        )),
        other => Ok(other),
    }
}

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolPatch {
    pub id: Option<Id>,
    #[serde(default)]
    #[schemars(schema_with = "crate::wire::name_or_null")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub description: Option<Option<String>>,
    pub service_id: Option<Id>,
    pub connection_params: Option<Value>,
    pub operation: Option<Operation>,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub secret_id: Option<Option<Id>>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub secret_scope: Option<Option<String>>,
    pub tool_template_id: Option<Id>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    #[schemars(range(min = 0.0, max = 1_000_000.0))]
    pub cost_per_call_usd: Option<Option<f64>>,
    pub enabled: Option<bool>,
    pub shared: Option<bool>,
}

/// What the rules need to know about the things a Tool points at.
pub struct ToolContext<'a> {
    pub owner: &'a Id,
    pub service: Option<&'a Service>,
    /// The owner of the named Secret, when it exists.
    pub secret_owner: Option<&'a Id>,
}

impl ToolContext<'_> {
    /// Every rule that ties a Tool to its Service and Secret.
    fn check(&self, tool: &Tool) -> Vec<crate::Violation> {
        let mut v = Violations::default();
        v.extend(tool.structure.check());
        if !tool.connection_params.is_object() {
            v.rule("TOOL-1", "/connectionParams", "must be an object");
        }
        // TOOL-3: a Service that is not the owner's must be shared. Absent and private look the
        // same here, so the answer never hints at another user's Service (OWN-2).
        let service = match self.service {
            Some(s) if s.owner_id == *self.owner || s.shared => s,
            _ => {
                v.rule(
                    "TOOL-3",
                    "/serviceId",
                    "no Service with this id that you own or that is shared",
                );
                return v.into_vec();
            }
        };
        if tool.structure.operation.service_type() != service.structure.service_type {
            v.rule(
                "TOOL-4",
                "/operation/type",
                format!(
                    "{} operations need a {} Service, not {}",
                    tool.structure.operation.operation_type().as_str(),
                    tool.structure.operation.service_type().as_str(),
                    service.structure.service_type.as_str()
                ),
            );
        }
        v.extend(check_instance(
            "TOOL-1",
            "/connectionParams",
            &service.structure.connection_schema,
            &tool.connection_params,
        ));
        match (&tool.secret_id, self.secret_owner) {
            (None, _) if service.structure.requires_secret => {
                v.rule("TOOL-2", "/secretId", "the Service requires a Secret");
            }
            (Some(_), Some(owner)) if owner == self.owner => {}
            (Some(_), _) => v.rule(
                "SEC-6",
                "/secretId",
                "no Secret with this id owned by the Tool's owner",
            ),
            (None, _) => {}
        }
        v.into_vec()
    }
}

pub fn decide_create(
    input: NewTool,
    template: Option<&ToolTemplate>,
    ctx: &ToolContext<'_>,
    now: &str,
) -> Result<Checked<Tool>, Error> {
    check_name(&input.name)?;
    let structure = match (&input.tool_template_id, template) {
        (Some(_), Some(t)) => {
            if input.operation.is_some()
                || input.input_schema.is_some()
                || input.output_schema.is_some()
            {
                return Err(Error::validation(
                    "/toolTemplateId",
                    "a Tool made from a template copies its operation and schemas; omit them",
                ));
            }
            t.structure.clone()
        }
        (Some(_), None) => return Err(Error::NotFound),
        (None, _) => ToolStructure {
            operation: input
                .operation
                .ok_or_else(|| Error::validation("/operation", "required"))?,
            input_schema: input
                .input_schema
                .ok_or_else(|| Error::validation("/inputSchema", "required"))?,
            output_schema: input
                .output_schema
                .ok_or_else(|| Error::validation("/outputSchema", "required"))?,
        },
    };
    let tool = Tool {
        id: crate::ids::id_or_new(input.id),
        name: input.name,
        description: input.description,
        service_id: input.service_id,
        connection_params: input.connection_params,
        structure,
        secret_id: input.secret_id,
        secret_scope: input.secret_scope,
        enabled: input.enabled,
        shared: input.shared,
        status: HealthStatus::Degraded,
        last_health_check: None,
        error_message: None,
        tool_template_id: input.tool_template_id,
        cost_per_call_usd: check_cost(input.cost_per_call_usd)?,
        owner_id: ctx.owner.clone(),
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
        revision: 1,
    };
    let violations = ctx.check(&tool);
    if !violations.is_empty() {
        return Err(Error::Invariant(violations));
    }
    Ok(Checked::new(tool))
}

/// TOOL-7: the Service binding is fixed; everything else is re-checked after the change.
pub fn decide_update(
    current: &Tool,
    patch: ToolPatch,
    ctx: &ToolContext<'_>,
    now: &str,
) -> Result<Checked<Tool>, Error> {
    let mut v = Violations::default();
    if patch
        .service_id
        .as_ref()
        .is_some_and(|s| *s != current.service_id)
    {
        v.rule(
            "TOOL-7",
            "/serviceId",
            "the Service a Tool uses is fixed at creation",
        );
    }
    if patch.tool_template_id.is_some() && patch.tool_template_id != current.tool_template_id {
        v.rule("TOOL-7", "/toolTemplateId", "provenance is immutable");
    }
    if patch.id.as_ref().is_some_and(|id| *id != current.id) {
        v.rule("TOOL-7", "/id", "immutable");
    }
    v.into_result()?;
    let mut next = current.clone();
    if let Some(name) = patch.name {
        check_name(&name)?;
        next.name = name;
    }
    if let Some(d) = patch.description {
        next.description = d;
    }
    if let Some(p) = patch.connection_params {
        next.connection_params = p;
    }
    if let Some(c) = patch.cost_per_call_usd {
        next.cost_per_call_usd = check_cost(c)?;
    }
    if let Some(o) = patch.operation {
        next.structure.operation = o;
    }
    if let Some(s) = patch.input_schema {
        next.structure.input_schema = s;
    }
    if let Some(s) = patch.output_schema {
        next.structure.output_schema = s;
    }
    if let Some(s) = patch.secret_id {
        next.secret_id = s;
    }
    if let Some(s) = patch.secret_scope {
        next.secret_scope = s;
    }
    if let Some(e) = patch.enabled {
        next.enabled = e;
    }
    if let Some(s) = patch.shared {
        next.shared = s;
    }
    if next == *current {
        return Ok(Checked::new(next));
    }
    let violations = ctx.check(&next);
    if !violations.is_empty() {
        return Err(Error::Invariant(violations));
    }
    next.updated_at = now.to_owned();
    next.revision += 1;
    Ok(Checked::new(next))
}

/// SVC-3 at audit time: the stored Tools whose parameters no longer fit their Service's schema.
pub fn params_fit(service: &Service, params: &Value) -> bool {
    check_instance("TOOL-1", "", &service.structure.connection_schema, params).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn structure(operation: Value) -> ToolStructure {
        serde_json::from_value(serde_json::json!({
            "operation": operation,
            "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object"}}))
        .expect("a structure")
    }

    #[test]
    fn a_rest_call_names_its_idempotency_header_by_default_and_may_rename_or_drop_it() {
        let op = |extra: Value| {
            let mut o = serde_json::json!({"type": "rest_api", "method": "GET", "path": "/x"});
            o.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            structure(o)
        };
        let default = op(serde_json::json!({}));
        assert!(matches!(&default.operation,
            Operation::RestApi { idempotency_header: Some(h), .. } if h == IDEMPOTENCY_HEADER));
        assert!(default.check().is_empty());
        let shown = serde_json::to_value(&default).unwrap();
        assert!(shown["operation"].get("idempotencyHeader").is_none());
        let off = op(serde_json::json!({"idempotencyHeader": null}));
        assert!(matches!(
            &off.operation,
            Operation::RestApi {
                idempotency_header: None,
                ..
            }
        ));
        // Stored as null, so "off" survives a round trip.
        let stored = serde_json::to_value(&off).unwrap();
        assert_eq!(stored["operation"]["idempotencyHeader"], Value::Null);
        assert_eq!(
            serde_json::from_value::<ToolStructure>(stored).unwrap(),
            off
        );
        assert!(op(serde_json::json!({"idempotencyHeader": "X-Key"}))
            .check()
            .is_empty());
        for bad in ["", "Bad Header", "x:y", &"k".repeat(65)] {
            let v = op(serde_json::json!({ "idempotencyHeader": bad })).check();
            assert!(
                v.iter().any(|v| v.path == "/operation/idempotencyHeader"),
                "{bad:?}: {v:?}"
            );
        }
    }
}
