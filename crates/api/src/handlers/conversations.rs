//! Conversations, Turns, Alternatives, working memory and Summaries.

use aiden_domain::conversation::{
    ConversationPatch, ForkRequest, NewAgentTurn, NewAlternative, NewConversation, NewSummary,
    NewTurn, SwitchActive,
};
use axum::{
    extract::{Path, Query, State as S},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;

use super::catalog::{created, ok, with_location};
use crate::{
    error::{ApiError, ApiResult},
    extract::{AppJson, Auth, IfMatch, Paging},
    State,
};

pub async fn create_conversation(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewConversation>,
) -> ApiResult<Response> {
    Ok(created(
        "/v1/conversations",
        st.app.create_conversation(&c, b).await?,
    ))
}
pub async fn list_conversations(
    S(st): S<State>,
    Auth(c): Auth,
    Paging(p): Paging,
) -> ApiResult<Response> {
    Ok(ok(st.app.list_conversations(&c, p).await?))
}
pub async fn get_conversation(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.get_conversation(&c, &id).await?))
}
pub async fn patch_conversation(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    IfMatch(r): IfMatch,
    AppJson(b): AppJson<ConversationPatch>,
) -> ApiResult<Response> {
    Ok(ok(st.app.patch_conversation(&c, &id, b, r).await?))
}
pub async fn delete_conversation(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> Response {
    match st.app.delete_conversation(&c, &id).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        // CONV-1's 405 names what the resource allows, like any other 405.
        Err(e) => (
            [(axum::http::header::ALLOW, "GET, PATCH")],
            ApiError::from(e),
        )
            .into_response(),
    }
}
pub async fn fork_conversation(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<ForkRequest>,
) -> ApiResult<Response> {
    Ok(created(
        "/v1/conversations",
        st.app.fork_conversation(&c, &id, b).await?,
    ))
}
pub async fn create_turn(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<NewTurn>,
) -> ApiResult<Response> {
    Ok(created("/v1/turns", st.app.create_turn(&c, &id, b).await?))
}
pub async fn create_agent_turn(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<NewAgentTurn>,
) -> ApiResult<Response> {
    let started = st.app.create_agent_turn(&c, &id, b).await?;
    let location = format!("/v1/turns/{}", started.turn_id);
    Ok((
        StatusCode::ACCEPTED,
        [(axum::http::header::LOCATION, location)],
        Json(started),
    )
        .into_response())
}
pub async fn get_turn(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.get_turn(&c, &id).await?))
}
pub async fn add_alternative(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<NewAlternative>,
) -> ApiResult<Response> {
    let added = st.app.add_alternative(&c, &id, b).await?;
    let status = if added.generating {
        StatusCode::ACCEPTED
    } else {
        StatusCode::CREATED
    };
    Ok(with_location(status, "/v1/alternatives", added.alternative))
}
pub async fn get_alternative(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.get_alternative(&c, &id).await?))
}
pub async fn switch_active(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<SwitchActive>,
) -> ApiResult<Response> {
    Ok(ok(st.app.switch_active(&c, &id, b).await?))
}
/// `?fromSequence=&toSequence=`: a window of Turn sequences (depths), both inclusive; either
/// alone means from the root or to the deepest Turn.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "TreeWindowQuery")]
pub struct TreeWindow {
    /// First Turn sequence (depth) shown; 1 when absent.
    #[schemars(range(min = 1))]
    from_sequence: Option<i64>,
    /// Last Turn sequence shown; the deepest when absent.
    #[schemars(range(min = 1))]
    to_sequence: Option<i64>,
}

pub async fn conversation_tree(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    q: Result<Query<TreeWindow>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let Query(q) =
        q.map_err(|e| ApiError::from(aiden_domain::Error::validation("query", e.body_text())))?;
    let window = match (q.from_sequence, q.to_sequence) {
        (None, None) => None,
        (from, to) => Some((from.unwrap_or(1), to.unwrap_or(i64::MAX - 1))),
    };
    Ok(ok(st.app.conversation_tree(&c, &id, window).await?))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "PositionQuery")]
pub struct Position {
    /// At this Turn's active Alternative.
    turn_id: Option<String>,
    /// At this Alternative.
    alternative_id: Option<String>,
}

pub async fn working_memory(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    q: Result<Query<Position>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let Query(q) =
        q.map_err(|e| ApiError::from(aiden_domain::Error::validation("query", e.body_text())))?;
    let wm = st
        .app
        .working_memory(&c, &id, q.turn_id.as_deref(), q.alternative_id.as_deref())
        .await?;
    Ok(ok(wm))
}
pub async fn create_summary(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<NewSummary>,
) -> ApiResult<Response> {
    // No route reads one Summary: they are listed with their Conversation.
    let summary = st.app.create_summary(&c, &id, b).await?;
    Ok((StatusCode::CREATED, Json(summary)).into_response())
}
pub async fn list_summaries(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.list_summaries(&c, &id).await?))
}
