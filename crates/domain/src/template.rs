//! ServiceTemplates and ToolTemplates: immutable blueprints (TPL-1..3).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    error::Violations,
    service::{check_name, ServiceStructure},
    tool::ToolStructure,
    Checked, Error, Id,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceTemplate {
    pub id: Id,
    pub name: String,
    pub description: Option<String>,
    #[serde(flatten)]
    pub structure: ServiceStructure,
    pub shared: bool,
    pub archived: bool,
    pub owner_id: Id,
    pub created_at: String,
    pub updated_at: String,
    pub revision: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolTemplate {
    pub id: Id,
    pub name: String,
    pub description: Option<String>,
    #[serde(flatten)]
    pub structure: ToolStructure,
    pub shared: bool,
    pub archived: bool,
    pub owner_id: Id,
    pub created_at: String,
    pub updated_at: String,
    pub revision: i64,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewServiceTemplate {
    pub id: Option<Id>,
    #[schemars(schema_with = "crate::wire::name")]
    pub name: String,
    pub description: Option<String>,
    #[serde(rename = "type")]
    pub service_type: crate::service::ServiceType,
    pub protocol: crate::service::Protocol,
    pub connection_schema: Value,
    #[serde(default)]
    pub requires_secret: bool,
    #[serde(default)]
    pub shared: bool,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewToolTemplate {
    pub id: Option<Id>,
    #[schemars(schema_with = "crate::wire::name")]
    pub name: String,
    pub description: Option<String>,
    pub operation: crate::tool::Operation,
    pub input_schema: Value,
    pub output_schema: Value,
    #[serde(default)]
    pub shared: bool,
}

/// PATCH body for either template kind. Structural fields may be repeated unchanged (so a
/// re-applied file is a no-op) but never changed (TPL-1).
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TemplatePatch {
    pub id: Option<Id>,
    #[serde(default)]
    #[schemars(schema_with = "crate::wire::name_or_null")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub description: Option<Option<String>>,
    pub shared: Option<bool>,
    pub archived: Option<bool>,
    #[serde(rename = "type")]
    pub service_type: Option<Value>,
    pub protocol: Option<Value>,
    pub connection_schema: Option<Value>,
    pub requires_secret: Option<Value>,
    pub operation: Option<Value>,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
}

impl TemplatePatch {
    /// TPL-1: every structural field present must equal the stored one.
    fn check_structure(&self, stored: &Value) -> Result<(), Error> {
        let mut v = Violations::default();
        let fields = [
            ("type", &self.service_type),
            ("protocol", &self.protocol),
            ("connectionSchema", &self.connection_schema),
            ("requiresSecret", &self.requires_secret),
            ("operation", &self.operation),
            ("inputSchema", &self.input_schema),
            ("outputSchema", &self.output_schema),
        ];
        for (name, given) in fields {
            if let Some(given) = given {
                // Compare as the stored record is written (defaults filled in), so repeating an
                // unchanged definition that leaves defaults out is not a change. One that is
                // not an Operation at all differs from the stored one just the same.
                let given = match name {
                    "operation" => serde_json::from_value::<crate::tool::Operation>(given.clone())
                        .ok()
                        .and_then(|typed| serde_json::to_value(typed).ok())
                        .unwrap_or_else(|| given.clone()),
                    _ => given.clone(),
                };
                if stored.get(name) != Some(&given) {
                    v.rule(
                        "TPL-1",
                        format!("/{name}"),
                        "template structure is immutable",
                    );
                }
            }
        }
        if self.id.is_some()
            && self.id.as_ref().map(Id::as_str) != stored.get("id").and_then(Value::as_str)
        {
            v.rule("TPL-1", "/id", "immutable");
        }
        v.into_result()
    }
}

pub fn decide_create_service_template(
    input: NewServiceTemplate,
    owner: &Id,
    now: &str,
) -> Result<Checked<ServiceTemplate>, Error> {
    check_name(&input.name)?;
    let structure = ServiceStructure {
        service_type: input.service_type,
        protocol: input.protocol,
        connection_schema: input.connection_schema,
        requires_secret: input.requires_secret,
    };
    let violations = structure.check();
    if !violations.is_empty() {
        return Err(Error::Invariant(violations));
    }
    Ok(Checked::new(ServiceTemplate {
        id: crate::ids::id_or_new(input.id),
        name: input.name,
        description: input.description,
        structure,
        shared: input.shared,
        archived: false,
        owner_id: owner.clone(),
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
        revision: 1,
    }))
}

pub fn decide_create_tool_template(
    input: NewToolTemplate,
    owner: &Id,
    now: &str,
) -> Result<Checked<ToolTemplate>, Error> {
    check_name(&input.name)?;
    let structure = ToolStructure {
        operation: input.operation,
        input_schema: input.input_schema,
        output_schema: input.output_schema,
    };
    let violations = structure.check();
    if !violations.is_empty() {
        return Err(Error::Invariant(violations));
    }
    Ok(Checked::new(ToolTemplate {
        id: crate::ids::id_or_new(input.id),
        name: input.name,
        description: input.description,
        structure,
        shared: input.shared,
        archived: false,
        owner_id: owner.clone(),
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
        revision: 1,
    }))
}

/// What both template kinds share: ownership facts, and the fields a PATCH may change.
pub trait Template: Serialize + Clone + PartialEq {
    fn id(&self) -> &Id;
    fn owner_id(&self) -> &Id;
    fn shared(&self) -> bool;
    fn revision(&self) -> i64;
    /// Applies the mutable fields of a PATCH (name, description, shared, archived).
    fn apply_meta(&mut self, patch: TemplatePatch) -> Result<(), Error>;
    /// Marks a change: new `updatedAt`, next revision.
    fn stamp(&mut self, now: &str);
}

macro_rules! template_record {
    ($t:ty) => {
        impl Template for $t {
            fn id(&self) -> &Id {
                &self.id
            }
            fn owner_id(&self) -> &Id {
                &self.owner_id
            }
            fn shared(&self) -> bool {
                self.shared
            }
            fn revision(&self) -> i64 {
                self.revision
            }
            fn apply_meta(&mut self, patch: TemplatePatch) -> Result<(), Error> {
                if let Some(name) = patch.name {
                    check_name(&name)?;
                    self.name = name;
                }
                if let Some(d) = patch.description {
                    self.description = d;
                }
                if let Some(s) = patch.shared {
                    self.shared = s;
                }
                if let Some(a) = patch.archived {
                    self.archived = a;
                }
                Ok(())
            }
            fn stamp(&mut self, now: &str) {
                self.updated_at = now.to_owned();
                self.revision += 1;
            }
        }
    };
}

template_record!(ServiceTemplate);
template_record!(ToolTemplate);

/// TPL-1: only name, description, shared and archived change; structural fields may be repeated
/// unchanged (so a re-applied file is a no-op) but never changed.
pub fn decide_update<T: Template>(
    current: &T,
    patch: TemplatePatch,
    now: &str,
) -> Result<Checked<T>, Error> {
    let stored = serde_json::to_value(current).unwrap_or(Value::Null);
    patch.check_structure(&stored)?;
    let mut next = current.clone();
    next.apply_meta(patch)?;
    if next != *current {
        next.stamp(now);
    }
    Ok(Checked::new(next))
}
