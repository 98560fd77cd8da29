//! Tools (TOOL-1..8, SEC-6 at definition time).

use aiden_domain::{
    access::{ensure_owner, ensure_readable, Owned, Sharing},
    secret::Secret,
    service::{HealthStatus, Service},
    template::ToolTemplate,
    tool::{decide_create, decide_update, NewTool, Tool, ToolContext, ToolPatch},
    user::Caller,
    Error as Rule, Id,
};
use aiden_graph::{references, resources, tools, Kind, Tx};

use crate::{
    common::check_precondition, common::ensure_absent, now, tx::read_tx, tx::write_tx, App, Page,
    PageRequest, Result,
};

fn owned(t: &Tool) -> Owned<'_> {
    Owned {
        owner_id: t.owner_id.as_str(),
        shared: t.shared,
        sharing: Sharing::Shareable,
    }
}

/// The Service and the Secret's owner, as the rules need them.
async fn context_facts(
    tx: &mut Tx,
    service_id: &Id,
    secret_id: Option<&Id>,
) -> Result<(Option<Service>, Option<Id>)> {
    let service: Option<Service> = resources::get(tx, Kind::Service, service_id.as_str()).await?;
    let secret_owner = match secret_id {
        Some(id) => resources::get::<Secret>(tx, Kind::Secret, id.as_str())
            .await?
            .map(|s| s.owner_id),
        None => None,
    };
    Ok((service, secret_owner))
}

impl App {
    pub async fn create_tool(&self, caller: &Caller, input: NewTool) -> Result<Tool> {
        let created = write_tx!(self, |tx| {
            let template = match &input.tool_template_id {
                Some(tid) => {
                    let t: Option<ToolTemplate> =
                        resources::get(&mut tx, Kind::ToolTemplate, tid.as_str()).await?;
                    let visible = t.filter(|t| {
                        aiden_domain::access::can_read(
                            caller,
                            &Owned {
                                owner_id: t.owner_id.as_str(),
                                shared: t.shared,
                                sharing: Sharing::Shareable,
                            },
                        )
                    });
                    Some(visible.ok_or_else(|| {
                        Rule::invariant(
                            "TOOL-7",
                            "/toolTemplateId",
                            "no ToolTemplate with this id that you own or that is shared",
                        )
                    })?)
                }
                None => None,
            };
            let (service, secret_owner) =
                context_facts(&mut tx, &input.service_id, input.secret_id.as_ref()).await?;
            let ctx = ToolContext {
                owner: &caller.id,
                service: service.as_ref(),
                secret_owner: secret_owner.as_ref(),
            };
            let tool = decide_create(input.clone(), template.as_ref(), &ctx, &now())?;
            ensure_absent(&mut tx, Kind::Tool, tool.get().id.as_str()).await?;
            tools::create(&mut tx, &tool, &now()).await?;
            Ok(tool.into_inner())
        })?;
        // A new Tool of a template can take a shared Tool's place in its owner's runs
        // (docs/connections.md): pools forget what they resolved for that template.
        if created.tool_template_id.is_some() {
            self.catalog_changed().await;
        }
        Ok(created)
    }

    pub async fn get_tool(&self, caller: &Caller, id: &str) -> Result<Tool> {
        let t: Tool = self.load(Kind::Tool, id).await?;
        ensure_readable(caller, &owned(&t))?;
        let mut one = [t];
        self.with_service_health(&mut one).await?;
        let [t] = one;
        Ok(t)
    }

    pub async fn list_tools(&self, caller: &Caller, page: PageRequest) -> Result<Page<Tool>> {
        let mut page = self
            .list(caller, Kind::Tool, Sharing::Shareable, page, |t: &Tool| {
                t.id.to_string()
            })
            .await?;
        self.with_service_health(&mut page.items).await?;
        Ok(page)
    }

    /// A Tool's health is its Service's, as last probed (SVC-4): a Tool has no probe of its
    /// own, and the status it was created with would otherwise stand forever.
    async fn with_service_health(&self, tools: &mut [Tool]) -> Result<()> {
        let ids: Vec<String> = tools.iter().map(|t| t.id.to_string()).collect();
        let rows = read_tx!(self, |tx| {
            Ok(aiden_graph::tools::service_health(&mut tx, ids.clone()).await?)
        })?;
        for t in tools.iter_mut() {
            let Some(h) = rows.iter().find(|h| h.id == t.id.as_str()) else {
                continue;
            };
            if let Some(status) = h.status.as_deref().and_then(HealthStatus::parse) {
                t.status = status;
                t.last_health_check = h.last_health_check.clone();
                t.error_message = h.error_message.clone();
            }
        }
        Ok(())
    }

    /// Every rule re-checked against the merged Tool; `if_revision` is the client's `If-Match`.
    pub async fn update_tool(
        &self,
        caller: &Caller,
        id: &str,
        patch: ToolPatch,
        if_revision: Option<i64>,
    ) -> Result<Tool> {
        let changed = write_tx!(self, |tx| {
            let current: Tool = resources::get_for_update(&mut tx, Kind::Tool, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(&current))?;
            check_precondition(if_revision, current.revision)?;
            let secret_id = match &patch.secret_id {
                Some(s) => s.clone(),
                None => current.secret_id.clone(),
            };
            let (service, secret_owner) =
                context_facts(&mut tx, &current.service_id, secret_id.as_ref()).await?;
            let ctx = ToolContext {
                owner: &current.owner_id,
                service: service.as_ref(),
                secret_owner: secret_owner.as_ref(),
            };
            let next = decide_update(&current, patch.clone(), &ctx, &now())?;
            if next.get().revision != current.revision {
                let secret_changed = next.get().secret_id != current.secret_id
                    || next.get().secret_scope != current.secret_scope;
                if !tools::update(&mut tx, current.revision, &next, secret_changed, &now()).await? {
                    return Err(crate::Error::LostRace);
                }
            }
            Ok(next.into_inner())
        })?;
        self.catalog_changed().await;
        Ok(changed)
    }

    /// TOOL-8: only when no ProcessStep calls it.
    pub async fn delete_tool(&self, caller: &Caller, id: &str) -> Result<()> {
        write_tx!(self, |tx| {
            let current: Tool = resources::get_for_update(&mut tx, Kind::Tool, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(&current))?;
            let callers = references::steps_calling_tool(&mut tx, id).await?;
            if callers > 0 {
                return Err(Rule::referenced(
                    "TOOL-8",
                    format!("{callers} ProcessStep(s) call this Tool"),
                )
                .into());
            }
            aiden_graph::runs::forget_tool(&mut tx, id).await?;
            resources::delete(&mut tx, Kind::Tool, id).await?;
            Ok(())
        })?;
        self.catalog_changed().await;
        Ok(())
    }
}
