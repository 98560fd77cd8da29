//! Resolving a job's Tool at execution time. The resolution (parsed records, compiled
//! schemas, the decrypted Secret, and the facts PROC-8, TOOL-3 and SEC-6 are checked on) is
//! cached per Tool, so a job costs no graph read. The cache never outlives a change: every
//! write to a Tool, Service or Secret broadcasts `catalog_changed` on the control exchange
//! (confirmed before the API answers) and the pool drops the cache; a pool that was
//! disconnected drops it on reconnecting; and an entry is re-validated against the graph's
//! revisions after [`REVALIDATE_AFTER`] whatever happens, bounding any staleness a lost
//! broadcast could cause.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aiden_domain::service::{HealthStatus, Service};
use aiden_domain::tool::Tool as ToolRecord;
use aiden_graph::{runs, Graph};
use aiden_vault::Vault;
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

/// A cached entry is checked against the graph's revisions at least this often.
pub const REVALIDATE_AFTER: Duration = Duration::from_secs(10);

/// Tool, Service and Secret revisions the resolution was built from.
type Revisions = (i64, i64, Option<i64>);

/// (ToolTemplate id, caller): the key of the caller's own Tool of that template, if any.
type TemplateOfCaller = (String, String);

struct Entry {
    resolved: Arc<Resolved>,
    revisions: Revisions,
    secret_owner_id: Option<String>,
    checked_at: Instant,
}

pub struct Resolver {
    graph: Graph,
    vault: Vault,
    cache: Mutex<HashMap<String, Entry>>,
    callers: Mutex<HashMap<TemplateOfCaller, (Option<String>, Instant)>>,
}

impl Resolver {
    pub fn new(graph: Graph, vault: Vault) -> Self {
        Self {
            graph,
            vault,
            cache: Mutex::new(HashMap::new()),
            callers: Mutex::new(HashMap::new()),
        }
    }

    /// Forgets every cached resolution (a catalog change, or a reconnect that may have
    /// missed one).
    pub async fn invalidate(&self) {
        self.cache.lock().await.clear();
        self.callers.lock().await.clear();
    }

    /// The Tool a step naming `tool_id` runs on for `run_owner`: the caller's own Tool of the
    /// same ToolTemplate when they have one (a model they connected), else the named Tool,
    /// whose Secret must then be the caller's (SEC-6; docs/connections.md).
    pub async fn resolve(
        &self,
        tool_id: &str,
        run_owner: &str,
    ) -> Result<Arc<Resolved>, NotRunnable> {
        let named = self.resolve_exact(tool_id, run_owner).await;
        let template = match &named {
            Ok(r) if r.tool.owner_id.as_str() == run_owner => return named,
            Ok(r) => r.tool.tool_template_id.as_ref().map(|t| t.to_string()),
            Err(NotRunnable::Rule { .. }) => self.template_of(tool_id).await,
            Err(NotRunnable::Graph(_)) => return named,
        };
        let Some(template) = template else {
            return named;
        };
        match self.callers_tool(template.as_str(), run_owner).await? {
            Some(own) if own != tool_id => self.resolve_exact(&own, run_owner).await,
            _ => named,
        }
    }

    /// The ToolTemplate a Tool was made from, from the cache: a Tool that was loaded is cached
    /// even when it cannot run for this caller; one that no longer exists has none.
    async fn template_of(&self, tool_id: &str) -> Option<String> {
        if let Some(e) = self.cache.lock().await.get(tool_id) {
            return e
                .resolved
                .tool
                .tool_template_id
                .as_ref()
                .map(|t| t.to_string());
        }
        None
    }

    async fn callers_tool(
        &self,
        template: &str,
        owner: &str,
    ) -> Result<Option<String>, NotRunnable> {
        let key = (template.to_owned(), owner.to_owned());
        if let Some((hit, at)) = self.callers.lock().await.get(&key) {
            if at.elapsed() < REVALIDATE_AFTER {
                return Ok(hit.clone());
            }
        }
        let found = runs::callers_tool_of_template(&self.graph, template, owner).await?;
        self.callers
            .lock()
            .await
            .insert(key, (found.clone(), Instant::now()));
        Ok(found)
    }

    /// Resolves exactly `tool_id`, checked for `run_owner` (SEC-6).
    async fn resolve_exact(
        &self,
        tool_id: &str,
        run_owner: &str,
    ) -> Result<Arc<Resolved>, NotRunnable> {
        let fresh = {
            let cache = self.cache.lock().await;
            cache
                .get(tool_id)
                .filter(|e| e.checked_at.elapsed() < REVALIDATE_AFTER)
                .map(|e| (e.resolved.clone(), e.secret_owner_id.clone()))
        };
        let (resolved, secret_owner) = match fresh {
            Some(hit) => hit,
            None => self.load(tool_id).await?,
        };
        check_runnable(&resolved, secret_owner.as_deref())?;
        if let Some(owner) = secret_owner.as_deref() {
            if owner != run_owner {
                // Someone else's key: the caller has not connected their own (docs/connections.md).
                return Err(rule("PERMISSION_DENIED", not_connected(&resolved.service)));
            }
        }
        Ok(resolved)
    }

    /// Reads the Tool's row; rebuilds the resolution only if a revision moved.
    async fn load(&self, tool_id: &str) -> Result<(Arc<Resolved>, Option<String>), NotRunnable> {
        let row = runs::tool_for_call(&self.graph, tool_id).await?;
        let Some(row) = row else {
            self.cache.lock().await.remove(tool_id);
            return Err(rule("PROC-8", format!("tool `{tool_id}` no longer exists")));
        };
        let revisions = (row.tool_revision, row.service_revision, row.secret_revision);
        let reusable = self
            .cache
            .lock()
            .await
            .get(tool_id)
            .filter(|e| e.revisions == revisions)
            .map(|e| e.resolved.clone());
        let resolved = match reusable {
            Some(r) => r,
            None => Arc::new(self.build(&row)?),
        };
        self.cache.lock().await.insert(
            tool_id.to_owned(),
            Entry {
                resolved: resolved.clone(),
                revisions,
                secret_owner_id: row.secret_owner_id.clone(),
                checked_at: Instant::now(),
            },
        );
        Ok((resolved, row.secret_owner_id))
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

/// SEC-6 at execution, in a sentence that says what to do: a model's key is connected in the
/// console; other credentials are their owner's alone.
fn not_connected(service: &Service) -> String {
    if service.structure.service_type == aiden_domain::service::ServiceType::LlmProvider {
        format!(
            "{} needs your own API key. Open \"Connect a model\" in the console (#/connect) to \
             add it; your answers then use it. (SEC-6: the tool's secret belongs to another user.)",
            service.name
        )
    } else {
        format!(
            "This step uses {} with another user's credentials, which only they can use. (SEC-6: \
             the tool's secret belongs to another user.)",
            service.name
        )
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
