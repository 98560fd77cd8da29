//! ServiceTemplates and ToolTemplates (TPL-1..3).

use aiden_domain::{
    access::{ensure_owner, ensure_readable, Owned, Sharing},
    template::{
        decide_create_service_template, decide_create_tool_template,
        decide_update_service_template, decide_update_tool_template, NewServiceTemplate,
        NewToolTemplate, ServiceTemplate, TemplatePatch, ToolTemplate,
    },
    user::Caller,
    Error as Rule,
};
use aiden_graph::{resources, Kind};

use crate::{
    now,
    tx::{read_tx, write_tx},
    App, Page, PageRequest, Result,
};

fn owned<'a>(owner_id: &'a str, shared: bool) -> Owned<'a> {
    Owned {
        owner_id,
        shared,
        sharing: Sharing::Shareable,
    }
}

impl App {
    pub async fn create_service_template(
        &self,
        caller: &Caller,
        input: NewServiceTemplate,
    ) -> Result<ServiceTemplate> {
        let t = decide_create_service_template(input, &caller.id, &now())?;
        write_tx!(self, |tx| {
            ensure_absent(&mut tx, Kind::ServiceTemplate, t.get().id.as_str()).await?;
            resources::create(
                &mut tx,
                Kind::ServiceTemplate,
                t.get().id.as_str(),
                caller.id.as_str(),
                t.get(),
                &now(),
            )
            .await?;
            Ok(())
        })?;
        Ok(t.into_inner())
    }

    pub async fn get_service_template(&self, caller: &Caller, id: &str) -> Result<ServiceTemplate> {
        let t: ServiceTemplate = self.load(Kind::ServiceTemplate, id).await?;
        ensure_readable(caller, &owned(t.owner_id.as_str(), t.shared))?;
        Ok(t)
    }

    pub async fn list_service_templates(
        &self,
        caller: &Caller,
        page: PageRequest,
    ) -> Result<Page<ServiceTemplate>> {
        self.list(
            caller,
            Kind::ServiceTemplate,
            Sharing::Shareable,
            page,
            |t: &ServiceTemplate| t.id.to_string(),
        )
        .await
    }

    /// TPL-1: only name, description, shared, archived change.
    pub async fn update_service_template(
        &self,
        caller: &Caller,
        id: &str,
        patch: TemplatePatch,
    ) -> Result<ServiceTemplate> {
        write_tx!(self, |tx| {
            let current: ServiceTemplate = resources::get(&mut tx, Kind::ServiceTemplate, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(current.owner_id.as_str(), current.shared))?;
            let next = decide_update_service_template(&current, patch.clone(), &now())?;
            if next.get().revision != current.revision
                && !resources::update(
                    &mut tx,
                    Kind::ServiceTemplate,
                    id,
                    current.revision,
                    next.get(),
                )
                .await?
            {
                return Err(crate::Error::LostRace);
            }
            Ok(next.into_inner())
        })
    }

    /// TPL-3: always allowed; instances keep their copied structure and provenance id.
    pub async fn delete_service_template(&self, caller: &Caller, id: &str) -> Result<()> {
        write_tx!(self, |tx| {
            let current: ServiceTemplate = resources::get(&mut tx, Kind::ServiceTemplate, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(current.owner_id.as_str(), current.shared))?;
            resources::delete(&mut tx, Kind::ServiceTemplate, id).await?;
            Ok(())
        })
    }

    pub async fn create_tool_template(
        &self,
        caller: &Caller,
        input: NewToolTemplate,
    ) -> Result<ToolTemplate> {
        let t = decide_create_tool_template(input, &caller.id, &now())?;
        write_tx!(self, |tx| {
            ensure_absent(&mut tx, Kind::ToolTemplate, t.get().id.as_str()).await?;
            resources::create(
                &mut tx,
                Kind::ToolTemplate,
                t.get().id.as_str(),
                caller.id.as_str(),
                t.get(),
                &now(),
            )
            .await?;
            Ok(())
        })?;
        Ok(t.into_inner())
    }

    pub async fn get_tool_template(&self, caller: &Caller, id: &str) -> Result<ToolTemplate> {
        let t: ToolTemplate = self.load(Kind::ToolTemplate, id).await?;
        ensure_readable(caller, &owned(t.owner_id.as_str(), t.shared))?;
        Ok(t)
    }

    pub async fn list_tool_templates(
        &self,
        caller: &Caller,
        page: PageRequest,
    ) -> Result<Page<ToolTemplate>> {
        self.list(
            caller,
            Kind::ToolTemplate,
            Sharing::Shareable,
            page,
            |t: &ToolTemplate| t.id.to_string(),
        )
        .await
    }

    pub async fn update_tool_template(
        &self,
        caller: &Caller,
        id: &str,
        patch: TemplatePatch,
    ) -> Result<ToolTemplate> {
        write_tx!(self, |tx| {
            let current: ToolTemplate = resources::get(&mut tx, Kind::ToolTemplate, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(current.owner_id.as_str(), current.shared))?;
            let next = decide_update_tool_template(&current, patch.clone(), &now())?;
            if next.get().revision != current.revision
                && !resources::update(
                    &mut tx,
                    Kind::ToolTemplate,
                    id,
                    current.revision,
                    next.get(),
                )
                .await?
            {
                return Err(crate::Error::LostRace);
            }
            Ok(next.into_inner())
        })
    }

    pub async fn delete_tool_template(&self, caller: &Caller, id: &str) -> Result<()> {
        write_tx!(self, |tx| {
            let current: ToolTemplate = resources::get(&mut tx, Kind::ToolTemplate, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(current.owner_id.as_str(), current.shared))?;
            resources::delete(&mut tx, Kind::ToolTemplate, id).await?;
            Ok(())
        })
    }

    /// One record by id, or 404.
    pub(crate) async fn load<T: serde::de::DeserializeOwned>(
        &self,
        kind: Kind,
        id: &str,
    ) -> Result<T> {
        read_tx!(self, |tx| {
            Ok(resources::get::<T>(&mut tx, kind, id).await?)
        })?
        .ok_or_else(|| Rule::NotFound.into())
    }

    /// A page of what the caller may see, ordered by id; the cursor is the last id returned.
    pub(crate) async fn list<T: serde::de::DeserializeOwned>(
        &self,
        caller: &Caller,
        kind: Kind,
        sharing: Sharing,
        page: PageRequest,
        id_of: impl Fn(&T) -> String,
    ) -> Result<Page<T>> {
        let limit = page.limit()?;
        let filter = resources::ListFilter {
            caller_id: caller.id.as_str(),
            admin: caller.is_admin() && sharing == Sharing::Shareable,
            others_visible: sharing == Sharing::Shareable,
            include_archived: page.include_archived,
            after: page.cursor.as_deref().unwrap_or(""),
            limit: limit + 1,
        };
        let mut items: Vec<T> = read_tx!(self, |tx| {
            Ok(resources::list(&mut tx, kind, &filter).await?)
        })?;
        let next_cursor = if items.len() as i64 > limit {
            items.truncate(limit as usize);
            items.last().map(&id_of)
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }
}

/// A caller-chosen id that is taken answers 409 (the unique constraint is the backstop).
pub(crate) async fn ensure_absent(tx: &mut aiden_graph::Tx, kind: Kind, id: &str) -> Result<()> {
    if resources::get::<serde_json::Value>(tx, kind, id)
        .await?
        .is_some()
    {
        return Err(
            Rule::conflict(format!("a {} with id '{id}' already exists", kind.label())).into(),
        );
    }
    Ok(())
}
