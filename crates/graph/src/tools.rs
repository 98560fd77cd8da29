//! A Tool's edges: `USES_SERVICE` (carrying `connectionParams`) and `USES_SECRET`.

use aiden_domain::{tool::Tool, Checked};

use crate::{cypher, query_file, resources, tx::IdRow, Error, Kind, Tx};

pub async fn create(tx: &mut Tx, tool: &Checked<Tool>, now: &str) -> Result<(), Error> {
    let t = tool.get();
    resources::create(tx, Kind::Tool, t.id.as_str(), t.owner_id.as_str(), t, now).await?;
    let q = cypher(query_file!("tool/link_service.cypher"), None)
        .param("toolId", t.id.as_str())
        .param("serviceId", t.service_id.as_str())
        .param("connectionParams", t.connection_params.to_string())
        .param("now", now);
    if tx.one::<IdRow>(q).await?.is_none() {
        return Err(Error::Transient(format!(
            "service {} vanished since it was read",
            t.service_id
        )));
    }
    link_secret(tx, t, now).await
}

/// Writes the change if `current_revision` still holds; `false` on a lost race.
pub async fn update(
    tx: &mut Tx,
    current_revision: i64,
    tool: &Checked<Tool>,
    secret_changed: bool,
    now: &str,
) -> Result<bool, Error> {
    let t = tool.get();
    if !resources::update(tx, Kind::Tool, t.id.as_str(), current_revision, t).await? {
        return Ok(false);
    }
    let q = cypher(query_file!("tool/set_connection_params.cypher"), None)
        .param("toolId", t.id.as_str())
        .param("connectionParams", t.connection_params.to_string());
    tx.run(q).await?;
    if secret_changed {
        tx.run(
            cypher(query_file!("tool/unlink_secret.cypher"), None).param("toolId", t.id.as_str()),
        )
        .await?;
        link_secret(tx, t, now).await?;
    }
    Ok(true)
}

async fn link_secret(tx: &mut Tx, t: &Tool, now: &str) -> Result<(), Error> {
    let Some(secret_id) = &t.secret_id else {
        return Ok(());
    };
    let q = cypher(query_file!("tool/link_secret.cypher"), None)
        .param("toolId", t.id.as_str())
        .param("secretId", secret_id.as_str())
        .param("scope", t.secret_scope.clone())
        .param("now", now);
    match tx.one::<IdRow>(q).await? {
        Some(_) => Ok(()),
        None => Err(Error::Transient(format!(
            "secret {secret_id} vanished since it was read"
        ))),
    }
}

/// The health of the Service each of Tools `ids` uses, as last probed.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceHealth {
    pub id: String,
    pub status: Option<String>,
    pub last_health_check: Option<String>,
    pub error_message: Option<String>,
}

pub async fn service_health(tx: &mut Tx, ids: Vec<String>) -> Result<Vec<ServiceHealth>, Error> {
    tx.rows(cypher(query_file!("tool/service_health.cypher"), None).param("ids", ids))
        .await
}
