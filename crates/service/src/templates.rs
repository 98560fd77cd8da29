//! ServiceTemplates and ToolTemplates (TPL-1..3), through one generic path.

use aiden_domain::{
    access::{ensure_owner, ensure_readable, Owned, Sharing},
    template::{
        decide_create_service_template, decide_create_tool_template, decide_update,
        NewServiceTemplate, NewToolTemplate, ServiceTemplate, Template, TemplatePatch,
        ToolTemplate,
    },
    user::Caller,
    Checked, Error as Rule,
};
use aiden_graph::{resources, Kind};
use serde::de::DeserializeOwned;

use crate::{common::ensure_absent, now, tx::write_tx, App, Page, PageRequest, Result};

/// Where each template kind is stored.
trait Stored: Template + DeserializeOwned {
    const KIND: Kind;
}

impl Stored for ServiceTemplate {
    const KIND: Kind = Kind::ServiceTemplate;
}

impl Stored for ToolTemplate {
    const KIND: Kind = Kind::ToolTemplate;
}

fn owned<T: Template>(t: &T) -> Owned<'_> {
    Owned {
        owner_id: t.owner_id().as_str(),
        shared: t.shared(),
        sharing: Sharing::Shareable,
    }
}

impl App {
    pub async fn create_service_template(
        &self,
        caller: &Caller,
        input: NewServiceTemplate,
    ) -> Result<ServiceTemplate> {
        self.create_template(
            caller,
            decide_create_service_template(input, &caller.id, &now())?,
        )
        .await
    }

    pub async fn get_service_template(&self, caller: &Caller, id: &str) -> Result<ServiceTemplate> {
        self.get_template(caller, id).await
    }

    pub async fn list_service_templates(
        &self,
        caller: &Caller,
        page: PageRequest,
    ) -> Result<Page<ServiceTemplate>> {
        self.list_templates(caller, page).await
    }

    pub async fn update_service_template(
        &self,
        caller: &Caller,
        id: &str,
        patch: TemplatePatch,
    ) -> Result<ServiceTemplate> {
        self.update_template(caller, id, patch).await
    }

    /// TPL-3: always allowed; instances keep their copied structure and provenance id.
    pub async fn delete_service_template(&self, caller: &Caller, id: &str) -> Result<()> {
        self.delete_template::<ServiceTemplate>(caller, id).await
    }

    pub async fn create_tool_template(
        &self,
        caller: &Caller,
        input: NewToolTemplate,
    ) -> Result<ToolTemplate> {
        self.create_template(
            caller,
            decide_create_tool_template(input, &caller.id, &now())?,
        )
        .await
    }

    pub async fn get_tool_template(&self, caller: &Caller, id: &str) -> Result<ToolTemplate> {
        self.get_template(caller, id).await
    }

    pub async fn list_tool_templates(
        &self,
        caller: &Caller,
        page: PageRequest,
    ) -> Result<Page<ToolTemplate>> {
        self.list_templates(caller, page).await
    }

    pub async fn update_tool_template(
        &self,
        caller: &Caller,
        id: &str,
        patch: TemplatePatch,
    ) -> Result<ToolTemplate> {
        self.update_template(caller, id, patch).await
    }

    pub async fn delete_tool_template(&self, caller: &Caller, id: &str) -> Result<()> {
        self.delete_template::<ToolTemplate>(caller, id).await
    }

    async fn create_template<T: Stored>(&self, caller: &Caller, t: Checked<T>) -> Result<T> {
        write_tx!(self, |tx| {
            ensure_absent(&mut tx, T::KIND, t.get().id().as_str()).await?;
            let id = t.get().id().as_str();
            resources::create(&mut tx, T::KIND, id, caller.id.as_str(), t.get(), &now()).await?;
            Ok(())
        })?;
        Ok(t.into_inner())
    }

    async fn get_template<T: Stored>(&self, caller: &Caller, id: &str) -> Result<T> {
        let t: T = self.load(T::KIND, id).await?;
        ensure_readable(caller, &owned(&t))?;
        Ok(t)
    }

    async fn list_templates<T: Stored>(
        &self,
        caller: &Caller,
        page: PageRequest,
    ) -> Result<Page<T>> {
        self.list(caller, T::KIND, Sharing::Shareable, page, |t: &T| {
            t.id().to_string()
        })
        .await
    }

    /// TPL-1: only name, description, shared, archived change.
    async fn update_template<T: Stored>(
        &self,
        caller: &Caller,
        id: &str,
        patch: TemplatePatch,
    ) -> Result<T> {
        write_tx!(self, |tx| {
            let current: T = resources::get_for_update(&mut tx, T::KIND, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(&current))?;
            let next = decide_update(&current, patch.clone(), &now())?;
            if next.get().revision() != current.revision()
                && !resources::update(&mut tx, T::KIND, id, current.revision(), next.get()).await?
            {
                return Err(crate::Error::LostRace);
            }
            Ok(next.into_inner())
        })
    }

    async fn delete_template<T: Stored>(&self, caller: &Caller, id: &str) -> Result<()> {
        write_tx!(self, |tx| {
            let current: T = resources::get_for_update(&mut tx, T::KIND, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(&current))?;
            resources::delete(&mut tx, T::KIND, id).await?;
            Ok(())
        })
    }
}
