//! Processes and their immutable versions (PROC-9): each version is a `ProcessVersion` node
//! holding the definition, with one `ProcessStep` node per step wired by `CALLS_TOOL`,
//! `CALLS_PROCESS` and `DEPENDS_ON` edges, so references are graph facts, not strings.

use std::collections::HashMap;

use aiden_domain::{
    process::{Definition, Process, Update},
    Checked,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::{cypher, query_file, resources, Error, Kind, Tx};

pub fn version_id(process_id: &str, number: i64) -> String {
    format!("{process_id}@v{number}")
}

fn step_key(version_id: &str, step_id: &str) -> String {
    format!("{version_id}/{step_id}")
}

pub async fn create(tx: &mut Tx, process: &Checked<Process>, now: &str) -> Result<(), Error> {
    let p = process.get();
    resources::create(
        tx,
        Kind::Process,
        p.id.as_str(),
        p.owner_id.as_str(),
        p,
        now,
    )
    .await?;
    write_version(tx, p, now).await
}

/// Writes the change if `current_revision` still holds, adding a version when the definition
/// changed; `false` on a lost race.
pub async fn update(
    tx: &mut Tx,
    current_revision: i64,
    update: &Checked<Update>,
    now: &str,
) -> Result<bool, Error> {
    let u = update.get();
    if !resources::update(
        tx,
        Kind::Process,
        u.process.id.as_str(),
        current_revision,
        &u.process,
    )
    .await?
    {
        return Ok(false);
    }
    if u.new_version {
        write_version(tx, &u.process, now).await?;
    }
    Ok(true)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionDoc<'a> {
    version: i64,
    #[serde(flatten)]
    definition: &'a Definition,
}

async fn write_version(tx: &mut Tx, p: &Process, now: &str) -> Result<(), Error> {
    let vid = version_id(p.id.as_str(), p.version);
    let doc = serde_json::to_string(&VersionDoc {
        version: p.version,
        definition: &p.definition,
    })
    .map_err(|e| Error::Decode(e.to_string()))?;
    let q = cypher(query_file!("process/create_version.cypher"), None)
        .param("processId", p.id.as_str())
        .param("versionId", vid.as_str())
        .param("number", p.version)
        .param("doc", doc)
        .param("now", now);
    tx.run(q).await?;

    let steps = &p.definition.steps;
    let rows: Vec<Value> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({"order": i, "key": step_key(&vid, &s.id), "stepId": s.id,
                   "mode": match s.execution.mode { aiden_domain::process::Mode::Parallel => "parallel", _ => "sequential" },
                   "outputVariable": s.output.variable})
        })
        .collect();
    run_unwind(
        tx,
        query_file!("process/create_steps.cypher"),
        "steps",
        rows,
        Some(&vid),
    )
    .await?;

    let mut tools = Vec::new();
    let mut processes = Vec::new();
    let mut deps = Vec::new();
    for s in steps {
        let key = step_key(&vid, &s.id);
        if let Some(t) = &s.tool {
            let timeout = s
                .execution
                .timeout
                .unwrap_or(aiden_domain::process::TOOL_DEFAULT_TIMEOUT_MS);
            let mode = match s.execution.interaction_mode {
                aiden_domain::process::InteractionMode::Manual => "manual",
                aiden_domain::process::InteractionMode::Auto => "auto",
            };
            tools.push(json!({"step": key, "target": t.as_str(), "timeout": timeout, "interactionMode": mode}));
        }
        if let Some(c) = &s.process {
            let timeout = s
                .execution
                .timeout
                .unwrap_or(aiden_domain::process::PROCESS_MAX_TIMEOUT_MS);
            processes.push(json!({"step": key, "target": c.as_str(), "timeout": timeout}));
        }
        for (order, d) in s.depends_on.iter().enumerate() {
            deps.push(json!({"step": key, "target": step_key(&vid, d), "order": order}));
        }
    }
    // A target deleted since the rules saw it links nothing: retry the unit, whose fresh
    // check then rejects the step (PROC-2) instead of storing a step without its edge.
    link_all(tx, query_file!("process/link_step_tools.cypher"), tools).await?;
    link_all(
        tx,
        query_file!("process/link_step_processes.cypher"),
        processes,
    )
    .await?;
    run_unwind(
        tx,
        query_file!("process/link_step_dependencies.cypher"),
        "links",
        deps,
        None,
    )
    .await
}

async fn run_unwind(
    tx: &mut Tx,
    text: &str,
    name: &str,
    rows: Vec<Value>,
    version: Option<&str>,
) -> Result<(), Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let list =
        neo4rs::BoltType::try_from(Value::Array(rows)).map_err(|e| Error::Decode(e.to_string()))?;
    let mut q = cypher(text, None).param(name, list);
    if let Some(v) = version {
        q = q.param("versionId", v);
    }
    tx.run(q).await
}

async fn link_all(tx: &mut Tx, text: &str, links: Vec<Value>) -> Result<(), Error> {
    if links.is_empty() {
        return Ok(());
    }
    let expected = links.len() as i64;
    let list = neo4rs::BoltType::try_from(Value::Array(links))
        .map_err(|e| Error::Decode(e.to_string()))?;
    let made = tx.count(cypher(text, None).param("links", list)).await?;
    if made == expected {
        Ok(())
    } else {
        Err(Error::Transient(format!(
            "{} of {expected} step targets vanished since they were read",
            expected - made
        )))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionRow {
    pub number: i64,
    pub doc: String,
    pub created_at: String,
}

pub async fn versions(tx: &mut Tx, process_id: &str) -> Result<Vec<VersionRow>, Error> {
    tx.rows(
        cypher(query_file!("process/list_versions.cypher"), None).param("processId", process_id),
    )
    .await
}

#[derive(Deserialize)]
struct CalleeRow {
    id: String,
    callees: Vec<String>,
}

/// The Processes each of `ids` calls in its current version.
pub async fn callees(tx: &mut Tx, ids: &[String]) -> Result<HashMap<String, Vec<String>>, Error> {
    let rows: Vec<CalleeRow> = tx
        .rows(cypher(query_file!("process/callees.cypher"), None).param("ids", ids.to_vec()))
        .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.callees)).collect())
}

pub async fn delete(tx: &mut Tx, process_id: &str) -> Result<(), Error> {
    tx.run(cypher(query_file!("process/delete_steps.cypher"), None).param("processId", process_id))
        .await?;
    tx.run(
        cypher(query_file!("process/delete_versions.cypher"), None).param("processId", process_id),
    )
    .await?;
    resources::delete(tx, Kind::Process, process_id).await
}

/// What keeps a Process from running for a caller: a Service one of its Tools (or a child
/// Process's) reaches with another user's Secret, the caller having no Tool of their own of
/// that template. Only the Processes that have such a need are returned.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForeignSecretNeed {
    pub process_id: String,
    pub needs: Vec<ServiceNeed>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceNeed {
    pub service: String,
    pub service_type: Option<String>,
}

pub async fn needs_others_secrets(
    tx: &mut Tx,
    process_ids: &[String],
    caller_id: &str,
) -> Result<Vec<ForeignSecretNeed>, Error> {
    tx.rows(
        cypher(query_file!("process/needs_others_secrets.cypher"), None)
            .param("processIds", process_ids.to_vec())
            .param("callerId", caller_id),
    )
    .await
}
