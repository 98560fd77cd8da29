//! A Process as stored, the bodies that create and change it, and the decisions that make a new
//! version only when what runs changes (PROC-9).

use serde::{Deserialize, Serialize};

use super::definition::default_depth;
use super::{Definition, Quota, Step, Targets};
use crate::{service::check_name, Checked, Error, Id};

/// A Process as stored and shown: its current definition inline, plus `version`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Process {
    pub id: Id,
    pub name: String,
    pub description: Option<String>,
    #[serde(flatten)]
    pub definition: Definition,
    pub version: i64,
    pub enabled: bool,
    pub shared: bool,
    pub owner_id: Id,
    pub created_at: String,
    pub updated_at: String,
    pub revision: i64,
}

/// Create or PUT body.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewProcess {
    pub id: Option<Id>,
    #[schemars(schema_with = "crate::wire::name")]
    pub name: String,
    pub description: Option<String>,
    #[serde(default)]
    #[schemars(inner(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")))]
    pub initial_context: Vec<String>,
    pub steps: Vec<Step>,
    #[serde(default)]
    pub output_template: Option<String>,
    #[serde(default)]
    pub token_budget: Option<u64>,
    #[serde(default = "default_depth")]
    #[schemars(range(min = 1, max = 32))]
    pub max_recursion_depth: u32,
    #[serde(default)]
    pub quota: Option<Quota>,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub shared: bool,
}

impl NewProcess {
    /// The versioned part of the body.
    pub fn definition(&self) -> Definition {
        Definition {
            initial_context: self.initial_context.clone(),
            steps: self.steps.clone(),
            output_template: self.output_template.clone(),
            token_budget: self.token_budget,
            max_recursion_depth: self.max_recursion_depth,
            quota: self.quota,
        }
    }
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcessPatch {
    pub id: Option<Id>,
    #[serde(default)]
    #[schemars(schema_with = "crate::wire::name_or_null")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub description: Option<Option<String>>,
    #[schemars(inner(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")))]
    pub initial_context: Option<Vec<String>>,
    pub steps: Option<Vec<Step>>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub output_template: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub token_budget: Option<Option<u64>>,
    #[schemars(range(min = 1, max = 32))]
    pub max_recursion_depth: Option<u32>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub quota: Option<Option<Quota>>,
    pub enabled: Option<bool>,
    pub shared: Option<bool>,
}

pub fn decide_create(
    input: NewProcess,
    targets: &Targets,
    owner: &Id,
    now: &str,
) -> Result<Checked<Process>, Error> {
    check_name(&input.name)?;
    let definition = input.definition();
    definition.check(owner, targets)?;
    Ok(Checked::new(Process {
        id: crate::ids::id_or_new(input.id),
        name: input.name,
        description: input.description,
        definition,
        version: 1,
        enabled: input.enabled,
        shared: input.shared,
        owner_id: owner.clone(),
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
        revision: 1,
    }))
}

/// Merges a PATCH into a whole-Process body (PUT takes the body as it is).
pub fn merge_patch(current: &Process, patch: ProcessPatch) -> Result<NewProcess, Error> {
    if patch.id.as_ref().is_some_and(|id| *id != current.id) {
        return Err(Error::invariant("PROC-9", "/id", "a Process keeps its id"));
    }
    let d = &current.definition;
    Ok(NewProcess {
        id: Some(current.id.clone()),
        name: patch.name.unwrap_or_else(|| current.name.clone()),
        description: patch
            .description
            .unwrap_or_else(|| current.description.clone()),
        initial_context: patch
            .initial_context
            .unwrap_or_else(|| d.initial_context.clone()),
        steps: patch.steps.unwrap_or_else(|| d.steps.clone()),
        output_template: patch
            .output_template
            .unwrap_or_else(|| d.output_template.clone()),
        token_budget: patch.token_budget.unwrap_or(d.token_budget),
        max_recursion_depth: patch.max_recursion_depth.unwrap_or(d.max_recursion_depth),
        quota: patch.quota.unwrap_or(d.quota),
        enabled: patch.enabled.unwrap_or(current.enabled),
        shared: patch.shared.unwrap_or(current.shared),
    })
}

/// The result of an update: the Process, and whether it made a new version (PROC-9).
pub struct Update {
    pub process: Process,
    pub new_version: bool,
}

pub fn decide_update(
    current: &Process,
    input: NewProcess,
    targets: &Targets,
    now: &str,
) -> Result<Checked<Update>, Error> {
    if input.id.as_ref().is_some_and(|id| *id != current.id) {
        return Err(Error::invariant("PROC-9", "/id", "a Process keeps its id"));
    }
    check_name(&input.name)?;
    let definition = input.definition();
    let new_version = definition != current.definition;
    if new_version {
        definition.check(&current.owner_id, targets)?;
    }
    let mut next = current.clone();
    next.name = input.name;
    next.description = input.description;
    next.enabled = input.enabled;
    next.shared = input.shared;
    if new_version {
        next.definition = definition;
        next.version += 1;
    }
    if next != *current {
        next.updated_at = now.to_owned();
        next.revision += 1;
    }
    Ok(Checked::new(Update {
        process: next,
        new_version,
    }))
}
