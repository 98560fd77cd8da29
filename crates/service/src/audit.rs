//! `aiden check`: a read-only audit of the stored graph against the (audit) rules.

use aiden_domain::{service::Service, tool::Tool};
use aiden_graph::{audit, Kind};
use serde::Serialize;

use crate::{tx::read_tx, Result};

/// One stored violation.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub invariant: &'static str,
    pub id: String,
    pub message: String,
}

/// The audit needs only the graph (no vault, no HTTP client).
pub struct Auditor {
    graph: aiden_graph::Graph,
}

impl Auditor {
    pub fn new(graph: aiden_graph::Graph) -> Self {
        Self { graph }
    }

    pub async fn audit(&self) -> Result<Vec<Finding>> {
        read_tx!(self, |tx| {
            let mut findings = Vec::new();
            for kind in Kind::OWNED {
                for row in audit::bad_owners(&mut tx, kind).await? {
                    findings.push(Finding {
                        invariant: "OWN-1",
                        id: row.id,
                        message: format!(
                            "{} has {} OWNED_BY edge(s) matching its ownerId, not 1",
                            kind.label(),
                            row.owners
                        ),
                    });
                }
            }
            for row in audit::healthy_while_disabled(&mut tx).await? {
                findings.push(Finding {
                    invariant: "SVC-4",
                    id: row.id,
                    message: "disabled Service reports healthy".into(),
                });
            }
            for row in audit::tools_missing_secret(&mut tx).await? {
                findings.push(Finding {
                    invariant: "TOOL-2",
                    id: row.id,
                    message: "Tool of a Service that requires a Secret has no USES_SECRET".into(),
                });
            }
            for row in audit::tool_params(&mut tx).await? {
                let service: Service = serde_json::from_str(&row.service)
                    .map_err(|e| aiden_graph::Error::Decode(e.to_string()))?;
                let params: serde_json::Value = serde_json::from_str(&row.connection_params)
                    .map_err(|e| aiden_graph::Error::Decode(e.to_string()))?;
                let probe = Tool {
                    connection_params: params,
                    ..placeholder_tool(&service)
                };
                if !aiden_domain::tool::params_fit(&service, &probe) {
                    findings.push(Finding {
                        invariant: "SVC-3",
                        id: row.id,
                        message: format!(
                            "connectionParams no longer validate against Service {} schemaVersion {}",
                            service.id, service.schema_version
                        ),
                    });
                }
            }
            for row in audit::unencrypted_secrets(&mut tx).await? {
                findings.push(Finding {
                    invariant: "SEC-2",
                    id: row.id,
                    message: "Secret without a well-formed ciphertext".into(),
                });
            }
            Ok(findings)
        })
    }
}

/// `params_fit` reads only the parameters; the rest of the Tool is irrelevant to it.
fn placeholder_tool(service: &Service) -> Tool {
    Tool {
        id: service.id.clone(),
        name: String::new(),
        description: None,
        service_id: service.id.clone(),
        connection_params: serde_json::Value::Null,
        structure: aiden_domain::tool::ToolStructure {
            operation: aiden_domain::tool::Operation::McpCall {
                tool_name: String::new(),
                arguments: serde_json::json!({}),
            },
            input_schema: serde_json::json!({}),
            output_schema: serde_json::json!({}),
        },
        secret_id: None,
        secret_scope: None,
        enabled: true,
        shared: false,
        status: service.status,
        last_health_check: None,
        error_message: None,
        tool_template_id: None,
        owner_id: service.owner_id.clone(),
        created_at: String::new(),
        updated_at: String::new(),
        revision: 0,
    }
}
