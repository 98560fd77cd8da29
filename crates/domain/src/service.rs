//! Services: where work runs (SVC-1..6).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{error::Violations, schema::check_object_schema, template::ServiceTemplate, Error, Id};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServiceType {
    Neo4jGraph,
    RestApi,
    LlmProvider,
    McpServer,
    // Aiden's own knowledge: the Graphiti service, whose embedder the `recall`
    // operation type uses to search what the caller owns. (A doc comment here would turn the
    // schema's enum into a oneOf, and generated clients' ServiceType with it.)
    Knowledge,
}

impl ServiceType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Neo4jGraph => "neo4j_graph",
            Self::RestApi => "rest_api",
            Self::LlmProvider => "llm_provider",
            Self::McpServer => "mcp_server",
            Self::Knowledge => "knowledge",
        }
    }

    /// SVC-1: the protocols each type may speak.
    pub fn allows(self, protocol: Protocol) -> bool {
        use Protocol::*;
        match self {
            Self::Neo4jGraph => matches!(protocol, Bolt | BoltS),
            Self::RestApi | Self::LlmProvider | Self::Knowledge => {
                matches!(protocol, Http | Https)
            }
            Self::McpServer => matches!(protocol, Stdio | Sse | Http | Https),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Bolt,
    #[serde(rename = "bolt+s")]
    BoltS,
    Http,
    Https,
    Stdio,
    Sse,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bolt => "bolt",
            Self::BoltS => "bolt+s",
            Self::Http => "http",
            Self::Https => "https",
            Self::Stdio => "stdio",
            Self::Sse => "sse",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    Healthy,
    Degraded,
    Down,
}

impl HealthStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Healthy => "healthy",
            Self::Degraded => "degraded",
            Self::Down => "down",
        }
    }

    /// The stored word; `None` for one no status has.
    pub fn parse(word: &str) -> Option<Self> {
        [Self::Healthy, Self::Degraded, Self::Down]
            .into_iter()
            .find(|s| s.as_str() == word)
    }
}

/// The structural fields a Service shares with its ServiceTemplate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceStructure {
    #[serde(rename = "type")]
    pub service_type: ServiceType,
    pub protocol: Protocol,
    pub connection_schema: Value,
    pub requires_secret: bool,
}

impl ServiceStructure {
    /// SVC-1 and SVC-2.
    pub fn check(&self) -> Vec<crate::Violation> {
        let mut v = Vec::new();
        if !self.service_type.allows(self.protocol) {
            v.push(crate::Violation::rule(
                "SVC-1",
                "/protocol",
                format!(
                    "{} services cannot use protocol {}",
                    self.service_type.as_str(),
                    self.protocol.as_str()
                ),
            ));
        }
        v.extend(check_object_schema(
            "SVC-2",
            "/connectionSchema",
            &self.connection_schema,
        ));
        v
    }
}

/// A Service as stored and as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Service {
    pub id: Id,
    pub name: String,
    pub description: Option<String>,
    #[serde(flatten)]
    pub structure: ServiceStructure,
    pub endpoint: Option<String>,
    pub enabled: bool,
    pub shared: bool,
    pub status: HealthStatus,
    pub last_health_check: Option<String>,
    pub error_message: Option<String>,
    pub schema_version: i64,
    pub service_template_id: Option<Id>,
    pub owner_id: Id,
    pub created_at: String,
    pub updated_at: String,
    pub revision: i64,
}

/// Create body. Either the structure or a `serviceTemplateId` to copy it from (SVC-6).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = crate::wire::template_or_service_structure)]
pub struct NewService {
    pub id: Option<Id>,
    #[schemars(schema_with = "crate::wire::name")]
    pub name: String,
    pub description: Option<String>,
    #[serde(rename = "type")]
    pub service_type: Option<ServiceType>,
    pub protocol: Option<Protocol>,
    pub connection_schema: Option<Value>,
    pub requires_secret: Option<bool>,
    pub service_template_id: Option<Id>,
    pub endpoint: Option<String>,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub shared: bool,
}

fn yes() -> bool {
    true
}

/// PATCH body. Immutable fields are accepted only when unchanged (SVC-3), so that re-applying a
/// whole definition is a no-op.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServicePatch {
    pub id: Option<Id>,
    #[serde(default)]
    #[schemars(schema_with = "crate::wire::name_or_null")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub description: Option<Option<String>>,
    #[serde(rename = "type")]
    pub service_type: Option<ServiceType>,
    pub protocol: Option<Protocol>,
    pub connection_schema: Option<Value>,
    pub requires_secret: Option<bool>,
    pub service_template_id: Option<Id>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub endpoint: Option<Option<String>>,
    pub enabled: Option<bool>,
    pub shared: Option<bool>,
}

/// SVC-1, SVC-2, SVC-6: the Service to create, structure copied from the template when given.
pub fn decide_create(
    input: NewService,
    template: Option<&ServiceTemplate>,
    owner: &Id,
    now: &str,
) -> Result<crate::Checked<Service>, Error> {
    check_name(&input.name)?;
    let structure = match (&input.service_template_id, template) {
        (Some(_), Some(t)) => {
            if input.service_type.is_some()
                || input.protocol.is_some()
                || input.connection_schema.is_some()
                || input.requires_secret.is_some()
            {
                return Err(Error::invariant(
                    "SVC-6",
                    "/serviceTemplateId",
                    "a Service made from a template copies its structure; omit type, protocol, connectionSchema and requiresSecret",
                ));
            }
            t.structure.clone()
        }
        (Some(_), None) => return Err(Error::NotFound),
        (None, _) => ServiceStructure {
            service_type: input
                .service_type
                .ok_or_else(|| Error::validation("/type", "required"))?,
            protocol: input
                .protocol
                .ok_or_else(|| Error::validation("/protocol", "required"))?,
            connection_schema: input
                .connection_schema
                .ok_or_else(|| Error::validation("/connectionSchema", "required"))?,
            requires_secret: input.requires_secret.unwrap_or(false),
        },
    };
    let mut v = Violations::default();
    v.extend(structure.check());
    v.into_result()?;
    Ok(crate::Checked::new(Service {
        id: crate::ids::id_or_new(input.id),
        name: input.name,
        description: input.description,
        structure,
        endpoint: input.endpoint,
        enabled: input.enabled,
        shared: input.shared,
        // SVC-4: never healthy before a probe; a disabled one is down.
        status: if input.enabled {
            HealthStatus::Degraded
        } else {
            HealthStatus::Down
        },
        last_health_check: None,
        error_message: None,
        schema_version: 1,
        service_template_id: input.service_template_id,
        owner_id: owner.clone(),
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
        revision: 1,
    }))
}

/// SVC-2, SVC-3, SVC-4: the Service after a PATCH.
pub fn decide_update(
    current: &Service,
    patch: ServicePatch,
    now: &str,
) -> Result<crate::Checked<Service>, Error> {
    let mut v = Violations::default();
    let s = &current.structure;
    let immutable = |changed: bool, path: &str, v: &mut Violations| {
        if changed {
            v.rule("SVC-3", path, "immutable after creation");
        }
    };
    immutable(
        patch.id.as_ref().is_some_and(|id| *id != current.id),
        "/id",
        &mut v,
    );
    immutable(
        patch.service_type.is_some_and(|t| t != s.service_type),
        "/type",
        &mut v,
    );
    immutable(
        patch.protocol.is_some_and(|p| p != s.protocol),
        "/protocol",
        &mut v,
    );
    immutable(
        patch
            .requires_secret
            .is_some_and(|r| r != s.requires_secret),
        "/requiresSecret",
        &mut v,
    );
    immutable(
        patch.service_template_id.is_some()
            && patch.service_template_id != current.service_template_id,
        "/serviceTemplateId",
        &mut v,
    );
    v.into_result()?;

    let mut next = current.clone();
    if let Some(name) = patch.name {
        check_name(&name)?;
        next.name = name;
    }
    if let Some(d) = patch.description {
        next.description = d;
    }
    if let Some(e) = patch.endpoint {
        next.endpoint = e;
    }
    if let Some(shared) = patch.shared {
        next.shared = shared;
    }
    if let Some(schema) = patch.connection_schema {
        if schema != s.connection_schema {
            let violations = check_object_schema("SVC-2", "/connectionSchema", &schema);
            if !violations.is_empty() {
                return Err(Error::Invariant(violations));
            }
            next.structure.connection_schema = schema;
            next.schema_version += 1;
        }
    }
    if let Some(enabled) = patch.enabled {
        next.enabled = enabled;
        if !enabled {
            // SVC-4: disabling sets down.
            next.status = HealthStatus::Down;
        }
    }
    Ok(crate::Checked::new(finish_update(current, next, now)))
}

/// SVC-4: the outcome of a probe; a disabled Service stays down whatever the probe saw.
pub fn decide_health(
    current: &Service,
    probed: HealthStatus,
    message: Option<String>,
    now: &str,
) -> crate::Checked<Service> {
    let mut next = current.clone();
    if current.enabled {
        next.status = probed;
        next.error_message = message;
    } else {
        next.status = HealthStatus::Down;
        next.error_message = Some("service is disabled".into());
    }
    next.last_health_check = Some(now.to_owned());
    crate::Checked::new(finish_update(current, next, now))
}

fn finish_update(current: &Service, mut next: Service, now: &str) -> Service {
    if next != *current {
        next.updated_at = now.to_owned();
        next.revision = current.revision + 1;
    }
    next
}

pub fn check_name(name: &str) -> Result<(), Error> {
    if name.trim().is_empty() || name.chars().count() > crate::wire::MAX_NAME_CHARS {
        return Err(Error::validation("/name", "must be 1-200 characters"));
    }
    Ok(())
}
