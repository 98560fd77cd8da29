//! Resolving a job's Tool at execution time: one indexed graph read per job re-checks PROC-8,
//! TOOL-3 and SEC-6 against the current graph; parsing, schema compilation and Secret
//! decryption are cached per (tool, service, secret) revision.

use std::collections::HashMap;
use std::sync::Arc;

use aiden_domain::service::{HealthStatus, Service};
use aiden_domain::tool::Tool as ToolRecord;
use aiden_graph::{runs, Graph};
use aiden_service::Vault;
use jsonschema::Validator;
use tokio::sync::Mutex;
use zeroize::Zeroizing;

pub struct Resolved {
    pub tool: ToolRecord,
    pub service: Service,
    pub secret: Option<Zeroizing<String>>,
    pub input_validator: Validator,
    pub output_validator: Validator,
}

/// Why a Tool cannot run now (a permanent failure of the step).
#[derive(Debug, thiserror::Error)]
pub enum NotRunnable {
    #[error("{invariant}: {message}")]
    Rule {
        invariant: &'static str,
        message: String,
    },
    #[error("graph: {0}")]
    Graph(#[from] aiden_graph::Error),
}

fn rule(invariant: &'static str, message: impl Into<String>) -> NotRunnable {
    NotRunnable::Rule {
        invariant,
        message: message.into(),
    }
}

type Key = (String, i64, i64, Option<i64>);

pub struct Resolver {
    graph: Graph,
    vault: Vault,
    cache: Mutex<HashMap<Key, Arc<Resolved>>>,
}

impl Resolver {
    pub fn new(graph: Graph, vault: Vault) -> Self {
        Self {
            graph,
            vault,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// `run_owner` is the user on whose behalf the run executes (SEC-6).
    pub async fn resolve(
        &self,
        tool_id: &str,
        run_owner: &str,
    ) -> Result<Arc<Resolved>, NotRunnable> {
        let row = runs::tool_for_call(&self.graph, tool_id)
            .await?
            .ok_or_else(|| rule("PROC-8", format!("tool `{tool_id}` no longer exists")))?;
        let key = (
            tool_id.to_owned(),
            row.tool_revision,
            row.service_revision,
            row.secret_revision,
        );
        let cached = self.cache.lock().await.get(&key).cloned();
        let resolved = match cached {
            Some(r) => r,
            None => {
                let r = Arc::new(self.build(&row)?);
                let mut cache = self.cache.lock().await;
                cache.retain(|k, _| k.0 != tool_id);
                cache.insert(key, r.clone());
                r
            }
        };
        check_runnable(&resolved, row.secret_owner_id.as_deref())?;
        if let Some(owner) = row.secret_owner_id.as_deref() {
            if owner != run_owner {
                return Err(rule(
                    "PERMISSION_DENIED",
                    "SEC-6: the tool's secret belongs to another user than the run's",
                ));
            }
        }
        Ok(resolved)
    }

    fn build(&self, row: &runs::ToolCallRow) -> Result<Resolved, NotRunnable> {
        let tool: ToolRecord = serde_json::from_str(&row.tool_doc)
            .map_err(|e| rule("TOOL-6", format!("stored tool is unreadable: {e}")))?;
        let service: Service = serde_json::from_str(&row.service_doc)
            .map_err(|e| rule("TOOL-4", format!("stored service is unreadable: {e}")))?;
        let secret = match (&row.secret_id, &row.ciphertext) {
            (Some(id), Some(ct)) => Some(
                self.vault
                    .decrypt(id, ct)
                    .map_err(|_| rule("SEC-2", "the tool's secret cannot be decrypted"))?,
            ),
            (Some(_), None) => return Err(rule("SEC-2", "the tool's secret has no ciphertext")),
            _ => None,
        };
        let compile = |schema| {
            jsonschema::validator_for(schema)
                .map_err(|e| rule("TOOL-6", format!("schema is not usable: {e}")))
        };
        Ok(Resolved {
            input_validator: compile(&tool.structure.input_schema)?,
            output_validator: compile(&tool.structure.output_schema)?,
            tool,
            service,
            secret,
        })
    }
}

/// PROC-8, TOOL-3 and SEC-6, as they hold now.
fn check_runnable(r: &Resolved, secret_owner: Option<&str>) -> Result<(), NotRunnable> {
    let (tool, service) = (&r.tool, &r.service);
    if !tool.enabled {
        return Err(rule("PROC-8", format!("tool `{}` is disabled", tool.id)));
    }
    if !service.enabled {
        return Err(rule(
            "PROC-8",
            format!("service `{}` is disabled", service.id),
        ));
    }
    if service.status == HealthStatus::Down {
        return Err(rule("PROC-8", format!("service `{}` is down", service.id)));
    }
    if service.owner_id != tool.owner_id && !service.shared {
        return Err(rule(
            "TOOL-3",
            format!(
                "service `{}` is no longer shared with the tool's owner",
                service.id
            ),
        ));
    }
    if let Some(owner) = secret_owner {
        if owner != tool.owner_id.as_str() {
            return Err(rule("SEC-6", "the tool's secret belongs to another user"));
        }
    }
    Ok(())
}
