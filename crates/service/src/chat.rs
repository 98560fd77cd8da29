//! Which Processes can answer a conversation for the caller: the console's "answer with"
//! picker offers only these, so a pick that cannot answer is never offered
//! (docs/connections.md).

use aiden_domain::{conversation::AGENT_CONTEXT, user::Caller};
use aiden_graph::processes;
use schemars::JsonSchema;
use serde::Serialize;

use crate::{
    tx::{read_tx, write_tx},
    App, PageRequest, Result, User,
};

/// `PUT /v1/me/default-process`.
#[derive(Debug, Clone, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefaultProcess {
    /// An enabled Process the caller may run; null clears the default.
    pub process_id: Option<String>,
}

/// A Process that takes only what an agent turn offers, reads the message or the working
/// memory, and whether it runs for the caller.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatProcess {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// False when a Tool it reaches uses another user's Secret and the caller has not
    /// connected their own Tool of that template.
    pub ready: bool,
    /// Why it is not ready, in a sentence that says what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn reason(needs: &[processes::ServiceNeed]) -> String {
    let names: Vec<&str> = needs.iter().map(|n| n.service.as_str()).collect();
    let model = needs
        .iter()
        .any(|n| n.service_type.as_deref() == Some("llm_provider"));
    if model {
        format!(
            "Connect a model first: this answers with {} on another user's key.",
            names.join(", ")
        )
    } else {
        format!(
            "It uses {} with another user's credentials, which only they can use.",
            names.join(", ")
        )
    }
}

impl App {
    /// Sets the caller's default chat Process: what their conversations answer with when
    /// neither the request nor the conversation names one (CONV-2).
    pub async fn set_default_process(&self, caller: &Caller, b: DefaultProcess) -> Result<User> {
        write_tx!(self, |tx| {
            if let Some(p) = &b.process_id {
                crate::conversations::check_default_process(&mut tx, caller, p).await?;
            }
            aiden_graph::users::set_default_process(
                &mut tx,
                caller.id.as_str(),
                b.process_id.as_deref(),
            )
            .await?;
            Ok(())
        })?;
        self.me(caller).await
    }

    /// `GET /v1/me/chat-processes`: enabled, visible Processes whose initial context an agent
    /// turn offers, each with whether it can run for the caller now.
    pub async fn chat_processes(&self, caller: &Caller) -> Result<Vec<ChatProcess>> {
        let mut fitting = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .list_processes(
                    caller,
                    PageRequest {
                        limit: Some(PageRequest::MAX_LIMIT),
                        cursor,
                        include_archived: false,
                    },
                )
                .await?;
            fitting.extend(page.items.into_iter().filter(|p| {
                let wants = &p.definition.initial_context;
                // An answer responds to the message: it reads it or the working memory.
                p.enabled
                    && wants.iter().all(|n| AGENT_CONTEXT.contains(&n.as_str()))
                    && wants
                        .iter()
                        .any(|n| n == "userMessage" || n == "workingMemory")
            }));
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        let ids: Vec<String> = fitting.iter().map(|p| p.id.to_string()).collect();
        let blocked = read_tx!(self, |tx| {
            Ok(processes::needs_others_secrets(&mut tx, &ids, caller.id.as_str()).await?)
        })?;
        Ok(fitting
            .into_iter()
            .map(|p| {
                let need = blocked.iter().find(|b| b.process_id == p.id.as_str());
                ChatProcess {
                    id: p.id.to_string(),
                    name: p.name,
                    description: p.description,
                    ready: need.is_none(),
                    reason: need.map(|n| reason(&n.needs)),
                }
            })
            .collect())
    }
}
