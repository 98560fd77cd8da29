//! Resolving a Process's current version into a [`Plan`]: its definition plus what each step
//! calls (operation type for the queue, the `CALLS_TOOL` timeout).

use aiden_domain::execution::agent::{call_name, AgentTool, TURN_OUTPUT_TOKENS};
use aiden_domain::execution::budget::estimate_text_tokens;
use aiden_domain::execution::cost::{micros, ModelTurn, StepCost};
use aiden_domain::execution::schedule::{Plan, Target};
use aiden_domain::process::{Definition, TOOL_DEFAULT_TIMEOUT_MS, TOOL_MAX_TIMEOUT_MS};
use aiden_domain::tool::Tool;
use aiden_graph::{resources, runs, Kind, Tx};
use serde_json::Value;

pub struct Loaded {
    pub plan: Plan,
    /// The version's `initialContext` names.
    pub initial_context: Vec<String>,
    pub version_id: String,
    pub enabled: bool,
    /// The Process's revision when the plan was read (a cached plan is used only while the
    /// Process is still at it).
    pub revision: i64,
    pub owner_id: String,
    pub shared: bool,
    /// `(stepId, ProcessStep node id)` in step order.
    pub steps: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("process not found")]
    NotFound,
    #[error("process version is inconsistent: {0}")]
    Corrupt(String),
    #[error(transparent)]
    Graph(#[from] aiden_graph::Error),
}

pub async fn load(tx: &mut Tx, process_id: &str) -> Result<Loaded, LoadError> {
    load_version(tx, process_id, None).await
}

/// Version `number` of a Process (`None`: its current one) as a plan.
pub async fn load_version(
    tx: &mut Tx,
    process_id: &str,
    number: Option<i64>,
) -> Result<Loaded, LoadError> {
    let rows = runs::plan_source(tx, process_id, number).await?;
    let first = rows.first().ok_or(LoadError::NotFound)?;
    let definition: Definition = serde_json::from_str(&first.doc)
        .or_else(|_| {
            // Versions store the whole process record; the definition is a subset of it.
            serde_json::from_str::<Value>(&first.doc).and_then(|v| {
                let mut m = v.as_object().cloned().unwrap_or_default();
                m.retain(|k, _| {
                    matches!(
                        k.as_str(),
                        "initialContext"
                            | "steps"
                            | "outputTemplate"
                            | "tokenBudget"
                            | "maxRecursionDepth"
                            | "quota"
                    )
                });
                serde_json::from_value(Value::Object(m))
            })
        })
        .map_err(|e| LoadError::Corrupt(e.to_string()))?;
    let mut targets = Vec::new();
    let mut timeouts = Vec::new();
    let mut steps = Vec::new();
    for step in &definition.steps {
        let row = rows
            .iter()
            .find(|r| r.step_id == step.id)
            .ok_or_else(|| LoadError::Corrupt(format!("step `{}` has no node", step.id)))?;
        let target = match (&row.tool_id, &row.child_process_id) {
            (Some(model), _) if step.agent.is_some() => {
                let agent = step.agent.as_ref().expect("guarded");
                Target::Agent {
                    model: model.clone(),
                    model_operation_type: operation_type(row.tool_doc.as_deref()).ok_or_else(
                        || LoadError::Corrupt(format!("tool `{model}` has no operation")),
                    )?,
                    tools: agent_tools(tx, &agent.tools, &|id| agent.approvals.get(id).cloned())
                        .await?,
                    caps: agent.caps(),
                    system_prompt: agent.system_prompt.clone(),
                    model_name: doc_field(row.tool_doc.as_deref(), "/connectionParams/model"),
                    router: agent.router.clone(),
                }
            }
            (Some(tool), _) => Target::Tool {
                id: tool.clone(),
                operation_type: operation_type(row.tool_doc.as_deref())
                    .ok_or_else(|| LoadError::Corrupt(format!("tool `{tool}` has no operation")))?,
                cost: step_cost(row.tool_doc.as_deref()),
            },
            (None, Some(child)) => Target::Process { id: child.clone() },
            (None, None) => {
                return Err(LoadError::Corrupt(format!(
                    "step `{}` calls nothing",
                    step.id
                )))
            }
        };
        let timeout = row
            .timeout
            .map(|t| t.max(1) as u64)
            .or(step.execution.timeout)
            .unwrap_or(TOOL_DEFAULT_TIMEOUT_MS)
            .min(TOOL_MAX_TIMEOUT_MS);
        targets.push(target);
        timeouts.push(timeout);
        steps.push((step.id.clone(), row.process_step_id.clone()));
    }
    Ok(Loaded {
        plan: Plan::new(process_id, first.number, &definition, targets, timeouts),
        initial_context: definition.initial_context.clone(),
        version_id: first.version_id.clone(),
        enabled: first.enabled,
        revision: first.revision,
        owner_id: first.owner_id.clone(),
        shared: first.shared,
        steps,
    })
}

/// AGT-14: what a step calling this Tool itself costs (its `costPerCallUsd`; an `llm_call`
/// Tool's turn, priced at dispatch by the deployment's table).
fn step_cost(tool_doc: Option<&str>) -> StepCost {
    let Some(doc) = tool_doc.and_then(|d| serde_json::from_str::<Value>(d).ok()) else {
        return StepCost::default();
    };
    let model = (doc.pointer("/operation/type") == Some(&Value::from("llm_call"))).then(|| {
        let template = doc
            .pointer("/operation/promptTemplate")
            .and_then(Value::as_str);
        ModelTurn {
            name: doc
                .pointer("/connectionParams/model")
                .and_then(Value::as_str)
                .map(str::to_owned),
            template_tokens: template.map_or(0, estimate_text_tokens),
            output_tokens: doc
                .pointer("/connectionParams/maxTokens")
                .and_then(Value::as_u64)
                .unwrap_or(TURN_OUTPUT_TOKENS),
        }
    });
    StepCost {
        per_call_micros: doc["costPerCallUsd"].as_f64().map_or(0, micros),
        model,
    }
}

fn operation_type(tool_doc: Option<&str>) -> Option<aiden_domain::OperationType> {
    aiden_domain::OperationType::parse(&doc_field(tool_doc, "/operation/type")?)
}

/// A text field of a Tool's stored document.
fn doc_field(tool_doc: Option<&str>, pointer: &str) -> Option<String> {
    let doc: Value = serde_json::from_str(tool_doc?).ok()?;
    doc.pointer(pointer)?.as_str().map(str::to_owned)
}

/// Marks the tools that use another user's Secret but that `owner` has connected their own
/// Tool of the same template for (the worker then runs that one; docs/connections.md).
pub(crate) async fn mark_connected(
    tx: &mut Tx,
    tools: &mut [AgentTool],
    owner: &str,
) -> Result<(), aiden_graph::Error> {
    for t in tools.iter_mut() {
        if t.secret_owner_id.as_deref().is_none_or(|o| o == owner) {
            continue;
        }
        let Some(template) = t.template_id.clone() else {
            continue;
        };
        t.caller_connected = aiden_graph::runs::callers_tool_of_template_in(tx, &template, owner)
            .await?
            .is_some();
    }
    Ok(())
}

/// The facts the agent loop and its policy gate need about each declared tool, as of now (a
/// Tool deleted since is left out: it cannot be offered), with the capability a call to it
/// needs approved (AGT-9).
pub(crate) async fn agent_tools(
    tx: &mut Tx,
    ids: &[aiden_domain::Id],
    capability_of: &(dyn Fn(&aiden_domain::Id) -> Option<String> + Sync),
) -> Result<Vec<AgentTool>, LoadError> {
    let mut out: Vec<AgentTool> = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(t) = resources::get::<Tool>(tx, Kind::Tool, id.as_str()).await? else {
            continue;
        };
        let taken: Vec<String> = out.iter().map(|t| t.call_name.clone()).collect();
        out.push(AgentTool {
            id: t.id.as_str().to_owned(),
            call_name: call_name(&t.name, &taken),
            description: t.description.clone(),
            input_schema: t.structure.input_schema.clone(),
            operation_type: t.structure.operation.operation_type(),
            owner_id: t.owner_id.as_str().to_owned(),
            shared: t.shared,
            enabled: t.enabled,
            capability: capability_of(id),
            cost_micros: t
                .cost_per_call_usd
                .map_or(0, aiden_domain::execution::cost::micros),
            secret_owner_id: t.secret_id.as_ref().map(|_| t.owner_id.as_str().to_owned()),
            template_id: t.tool_template_id.as_ref().map(|i| i.as_str().to_owned()),
            caller_connected: false,
        });
    }
    Ok(out)
}
