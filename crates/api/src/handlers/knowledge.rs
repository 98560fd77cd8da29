//! Entities and a Conversation's active entities.

use aiden_domain::knowledge::memory::NewMemory;
use aiden_domain::knowledge::{ActiveEntityFlags, NewEntity};
use aiden_domain::user::Caller;
use axum::{
    extract::{Path, Query, State as S},
    http::{header, StatusCode},
    response::{IntoResponse, Response},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::catalog::{created, ok};
use crate::{
    error::{ApiError, ApiResult},
    extract::{AppJson, Auth},
    State,
};

pub async fn create_entity(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewEntity>,
) -> ApiResult<Response> {
    Ok(created("/v1/entities", st.app.create_entity(&c, b).await?))
}

/// `POST /v1/memories` (SRCH-4).
pub async fn remember(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewMemory>,
) -> ApiResult<Response> {
    let m = st.app.remember(&c, b).await?;
    Ok((StatusCode::CREATED, axum::Json(m)).into_response())
}

/// `GET /v1/memories`.
pub async fn memories(S(st): S<State>, Auth(c): Auth) -> ApiResult<Response> {
    Ok(ok(st.app.memories(&c).await?))
}

/// `DELETE /v1/memories/{id}`.
pub async fn forget(S(st): S<State>, Auth(c): Auth, Path(id): Path<String>) -> ApiResult<Response> {
    st.app.forget(&c, &id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn get_entity(
    S(st): S<State>,
    Auth(c): Auth,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    match st.app.get_entity(&c, &uuid).await {
        Err(e) if is_not_found(&e) => merged_or(&st, &c, &uuid, "", e).await,
        answer => Ok(ok(answer?)),
    }
}

/// ENT-5: where a merged Entity's uuid leads (308's body; `Location` names the same).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntityMerged {
    /// The Entity it merged into.
    merged_into: String,
}

fn is_not_found(e: &aiden_service::Error) -> bool {
    matches!(
        e,
        aiden_service::Error::Domain(aiden_domain::Error::NotFound)
    )
}

/// An Entity the caller cannot find: a merged one's uuid answers 308 to the Entity it merged
/// into (`suffix` keeps the sub-resource), when the caller may see that one; any other, the
/// 404 it was.
async fn merged_or(
    st: &State,
    c: &Caller,
    uuid: &str,
    suffix: &str,
    not_found: aiden_service::Error,
) -> ApiResult<Response> {
    let Some(into) = st.app.survivor_of(c, uuid).await? else {
        return Err(not_found.into());
    };
    let location = format!("/v1/entities/{into}{suffix}");
    let body = EntityMerged { merged_into: into };
    Ok((
        StatusCode::PERMANENT_REDIRECT,
        [(header::LOCATION, location)],
        axum::Json(body),
    )
        .into_response())
}

/// `POST /v1/entities/{uuid}/confirm` (AGT-13).
pub async fn confirm_entity(
    S(st): S<State>,
    Auth(c): Auth,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.decide_proposal(&c, &uuid, true).await?))
}

/// `POST /v1/entities/{uuid}/reject` (AGT-13).
pub async fn reject_entity(
    S(st): S<State>,
    Auth(c): Auth,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.decide_proposal(&c, &uuid, false).await?))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntityQuery {
    /// Only the entities of this Conversation (one of the caller's).
    conversation_id: Option<String>,
    /// Name contains (case-insensitive).
    q: Option<String>,
}

pub async fn list_entities(
    S(st): S<State>,
    Auth(c): Auth,
    q: Result<Query<EntityQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let Query(q) =
        q.map_err(|e| ApiError::from(aiden_domain::Error::validation("query", e.body_text())))?;
    Ok(ok(st
        .app
        .list_entities(&c, q.conversation_id.as_deref(), q.q.as_deref())
        .await?))
}

pub async fn activate_entity(
    S(st): S<State>,
    Auth(c): Auth,
    Path((id, uuid)): Path<(String, String)>,
    AppJson(b): AppJson<ActiveEntityFlags>,
) -> ApiResult<Response> {
    Ok(ok(st.app.activate_entity(&c, &id, &uuid, b).await?))
}

pub async fn deactivate_entity(
    S(st): S<State>,
    Auth(c): Auth,
    Path((id, uuid)): Path<(String, String)>,
) -> ApiResult<Response> {
    st.app.deactivate_entity(&c, &id, &uuid).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn conversation_entities(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.conversation_entities(&c, &id).await?))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchQuery {
    /// What to look for, in words (1 to 1000 characters).
    q: Option<String>,
    /// Only within this Conversation (one of the caller's).
    conversation_id: Option<String>,
    /// Comma-separated: episode, entity, fact, summary, introspection, memory (default: all).
    kinds: Option<String>,
    /// 1 to 50 (default 10).
    limit: Option<i64>,
}

/// `GET /v1/search`: the caller's own content and knowledge by meaning, words and
/// the graph, with provenance (SRCH-1, SRCH-2).
pub async fn search(
    S(st): S<State>,
    Auth(c): Auth,
    q: Result<Query<SearchQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let Query(q) =
        q.map_err(|e| ApiError::from(aiden_domain::Error::validation("query", e.body_text())))?;
    let search = aiden_domain::knowledge::recall::check_search(
        q.q.as_deref(),
        q.conversation_id.as_deref(),
        q.kinds.as_deref(),
        q.limit,
    )?;
    Ok(ok(st.app.search(&c, search).await?))
}

/// `GET /v1/entities/{uuid}/context`: the Entity, its mentions, facts and neighbours.
pub async fn entity_page(
    S(st): S<State>,
    Auth(c): Auth,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    match st.app.entity_page(&c, &uuid).await {
        Err(e) if is_not_found(&e) => merged_or(&st, &c, &uuid, "/context", e).await,
        answer => Ok(ok(answer?)),
    }
}
