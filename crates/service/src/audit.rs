//! `aiden check`: a read-only audit of the stored graph against the (audit) rules.

use aiden_domain::service::Service;
use aiden_graph::{audit, Kind};
use serde::Serialize;

use crate::{tx::read_tx, Result};

/// One stored violation.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
                let (Some(service), Some(params)) = (&row.service, &row.connection_params) else {
                    continue;
                };
                let service: Service = serde_json::from_str(service)
                    .map_err(|e| aiden_graph::Error::Decode(e.to_string()))?;
                let params: serde_json::Value = serde_json::from_str(params)
                    .map_err(|e| aiden_graph::Error::Decode(e.to_string()))?;
                if !aiden_domain::tool::params_fit(&service, &params) {
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
            for row in audit::bad_workers(&mut tx, &aiden_jobs::OperationType::names()).await? {
                findings.push(Finding {
                    invariant: "WRK-1",
                    id: row.id,
                    message: "Worker type/status is unknown, or currentJobId disagrees with status"
                        .into(),
                });
            }
            let now_ms = chrono::Utc::now().timestamp_millis();
            for row in aiden_graph::measurements::audit(&mut tx, now_ms).await? {
                let (invariant, message) = if row.rule == "MET-4" {
                    (
                        "MET-4",
                        "metric value kept past its definition's retentionDays",
                    )
                } else {
                    ("MET-1", "metric value without its definition")
                };
                findings.push(Finding {
                    invariant,
                    id: row.id,
                    message: message.into(),
                });
            }
            for row in audit::bad_tokens(&mut tx).await? {
                findings.push(Finding {
                    invariant: "USR-3",
                    id: row.id,
                    message: "token without a hash or its user, or a token kept on a User".into(),
                });
            }
            for row in audit::unsettled_steps_of_settled_runs(&mut tx).await? {
                findings.push(Finding {
                    invariant: "EXEC-5",
                    id: row.id,
                    message: "settled run has a step still pending, queued or running".into(),
                });
            }
            for row in audit::event_gaps(&mut tx).await? {
                findings.push(Finding {
                    invariant: "EXEC-5",
                    id: row.id,
                    message: "settled run's event log is not exactly 1..eventSeq".into(),
                });
            }
            for (invariant, rows, message) in audit::id_findings(&mut tx).await? {
                findings.extend(rows.into_iter().map(|row| Finding {
                    invariant,
                    id: row.id,
                    message: message.into(),
                }));
            }
            for row in audit::episode_identities(&mut tx).await? {
                if let Some(message) = episode_identity_problem(&row) {
                    findings.push(Finding {
                        invariant: "EPI-1",
                        id: row.id,
                        message,
                    });
                }
            }
            Ok(findings)
        })
    }
}

/// EPI-1: the Episode is the one derived from the id (uuid and name), in the conversation's
/// group. A changed episodeId cannot pass: the uuid is derived, not chosen.
fn episode_identity_problem(row: &audit::EpisodeIdentity) -> Option<String> {
    use aiden_domain::knowledge::episode::{episode_name, episode_uuid, EpisodeSource};
    let source = EpisodeSource::parse(&row.kind)?;
    let key = match row.revision {
        Some(r) if r > 1 => format!("{}#{r}", row.id),
        _ => row.id.clone(),
    };
    let uuid = episode_uuid(source, &key);
    if row.episode_id != uuid {
        return Some(format!(
            "episodeId {} is not the derived {uuid}",
            row.episode_id
        ));
    }
    if row.name.as_deref() != Some(episode_name(source, &key).as_str()) {
        return Some("its Episode's name is not the derived one".into());
    }
    if row.group_id.as_deref() != Some(row.conversation_id.as_str()) {
        return Some("its Episode's group_id is not its conversation".into());
    }
    None
}
