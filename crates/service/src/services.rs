//! Services (SVC-1..6) and their health checks.

use aiden_domain::{
    access::{ensure_owner, ensure_readable, Owned, Sharing},
    service::{decide_create, decide_health, decide_update, NewService, Service, ServicePatch},
    template::ServiceTemplate,
    user::Caller,
    Error as Rule,
};
use aiden_graph::{references, resources, Kind};

use crate::{
    common::{check_precondition, ensure_absent},
    now,
    tx::write_tx,
    App, Page, PageRequest, Result,
};

pub(crate) fn owned(s: &Service) -> Owned<'_> {
    Owned {
        owner_id: s.owner_id.as_str(),
        shared: s.shared,
        sharing: Sharing::Shareable,
    }
}

impl App {
    pub async fn create_service(&self, caller: &Caller, input: NewService) -> Result<Service> {
        write_tx!(self, |tx| {
            let template = match &input.service_template_id {
                Some(tid) => {
                    let t: Option<ServiceTemplate> =
                        resources::get(&mut tx, Kind::ServiceTemplate, tid.as_str()).await?;
                    // SVC-6 / OWN-2: a template the caller cannot see is as good as absent.
                    t.filter(|t| {
                        aiden_domain::access::can_read(
                            caller,
                            &Owned {
                                owner_id: t.owner_id.as_str(),
                                shared: t.shared,
                                sharing: Sharing::Shareable,
                            },
                        )
                    })
                }
                None => None,
            };
            if input.service_template_id.is_some() && template.is_none() {
                return Err(Rule::invariant(
                    "SVC-6",
                    "/serviceTemplateId",
                    "no visible ServiceTemplate with this id",
                )
                .into());
            }
            let s = decide_create(input.clone(), template.as_ref(), &caller.id, &now())?;
            ensure_absent(&mut tx, Kind::Service, s.get().id.as_str()).await?;
            resources::create(
                &mut tx,
                Kind::Service,
                s.get().id.as_str(),
                caller.id.as_str(),
                s.get(),
                &now(),
            )
            .await?;
            Ok(s.into_inner())
        })
    }

    pub async fn get_service(&self, caller: &Caller, id: &str) -> Result<Service> {
        let s: Service = self.load(Kind::Service, id).await?;
        ensure_readable(caller, &owned(&s))?;
        Ok(s)
    }

    pub async fn list_services(&self, caller: &Caller, page: PageRequest) -> Result<Page<Service>> {
        self.list(
            caller,
            Kind::Service,
            Sharing::Shareable,
            page,
            |s: &Service| s.id.to_string(),
        )
        .await
    }

    pub async fn update_service(
        &self,
        caller: &Caller,
        id: &str,
        patch: ServicePatch,
        if_revision: Option<i64>,
    ) -> Result<Service> {
        let changed = write_tx!(self, |tx| {
            let current: Service = resources::get_for_update(&mut tx, Kind::Service, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(&current))?;
            check_precondition(if_revision, current.revision)?;
            let next = decide_update(&current, patch.clone(), &now())?;
            if next.get().revision != current.revision
                && !resources::update(&mut tx, Kind::Service, id, current.revision, next.get())
                    .await?
            {
                return Err(crate::Error::LostRace);
            }
            Ok(next.into_inner())
        })?;
        self.catalog_changed().await;
        Ok(changed)
    }

    /// SVC-5: only when no Tool uses it.
    pub async fn delete_service(&self, caller: &Caller, id: &str) -> Result<()> {
        write_tx!(self, |tx| {
            let current: Service = resources::get_for_update(&mut tx, Kind::Service, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(&current))?;
            let users = references::tools_using_service(&mut tx, id).await?;
            if users > 0 {
                return Err(
                    Rule::referenced("SVC-5", format!("{users} Tool(s) use this Service")).into(),
                );
            }
            resources::delete(&mut tx, Kind::Service, id).await?;
            Ok(())
        })?;
        self.catalog_changed().await;
        Ok(())
    }

    /// Probes the endpoint now (outside any transaction), then records the outcome (SVC-4).
    pub async fn health_check_service(&self, caller: &Caller, id: &str) -> Result<Service> {
        let s: Service = self.load(Kind::Service, id).await?;
        ensure_owner(caller, &owned(&s))?;
        let (status, message) = if s.enabled {
            crate::probe::probe(&self.http, s.structure.protocol, s.endpoint.as_deref()).await
        } else {
            (
                aiden_domain::service::HealthStatus::Down,
                Some("service is disabled".into()),
            )
        };
        let changed = write_tx!(self, |tx| {
            let current: Service = resources::get_for_update(&mut tx, Kind::Service, id)
                .await?
                .ok_or(Rule::NotFound)?;
            let next = decide_health(&current, status, message.clone(), &now());
            if !resources::update(&mut tx, Kind::Service, id, current.revision, next.get()).await? {
                return Err(crate::Error::LostRace);
            }
            Ok(next.into_inner())
        })?;
        self.catalog_changed().await;
        Ok(changed)
    }
}
