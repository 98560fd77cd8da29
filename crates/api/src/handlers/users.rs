//! Users and their tokens (USR-1..4).

use aiden_domain::user::UserPatch;
use aiden_service::{NewToken, NewUser, Page};
use axum::{
    extract::{Path, State as S},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};

use super::catalog::{deleted, ok};
use crate::{
    error::ApiResult,
    extract::{AppJson, Auth},
    State,
};

pub async fn create_user(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(body): AppJson<NewUser>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    let user = st.app.create_user(&c, body).await?;
    Ok((
        StatusCode::CREATED,
        Json(serde_json::to_value(user).unwrap_or_default()),
    ))
}

pub async fn get_me(S(st): S<State>, Auth(c): Auth) -> ApiResult<Response> {
    Ok(ok(st.app.me(&c).await?))
}

pub async fn chat_processes(S(st): S<State>, Auth(c): Auth) -> ApiResult<Response> {
    let items = st.app.chat_processes(&c).await?;
    Ok(ok(aiden_service::views::Items { items }))
}
pub async fn set_default_process(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<aiden_service::chat::DefaultProcess>,
) -> ApiResult<Response> {
    Ok(ok(st.app.set_default_process(&c, b).await?))
}
pub async fn get_user(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.user(&c, &id).await?))
}

pub async fn patch_user(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(body): AppJson<UserPatch>,
) -> ApiResult<Response> {
    Ok(ok(st.app.update_user(&c, &id, body).await?))
}

pub async fn create_token(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(body): AppJson<NewToken>,
) -> ApiResult<Response> {
    let token = st.app.create_token(&c, &id, body).await?;
    Ok((StatusCode::CREATED, Json(token)).into_response())
}

pub async fn list_tokens(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let items = st.app.tokens(&c, &id).await?;
    Ok(ok(Page {
        items,
        next_cursor: None,
    }))
}

pub async fn revoke_token(
    S(st): S<State>,
    Auth(c): Auth,
    Path((id, token)): Path<(String, String)>,
) -> ApiResult<Response> {
    st.app.revoke_token(&c, &id, &token).await?;
    Ok(deleted())
}
