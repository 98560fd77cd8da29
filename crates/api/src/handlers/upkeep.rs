//! Memory upkeep: the settings and the introspection carousel.

use aiden_domain::conversation::upkeep::SettingsPatch;
use aiden_service::upkeep::{NewIntrospection, NoteCorrection};
use axum::{
    extract::{Path, State as S},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};

use super::catalog::ok;
use crate::{
    error::ApiResult,
    extract::{AppJson, Auth},
    State,
};

pub async fn get_settings(S(st): S<State>, Auth(c): Auth) -> ApiResult<Response> {
    Ok(ok(st.app.memory_settings(&c).await?))
}

pub async fn patch_settings(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<SettingsPatch>,
) -> ApiResult<Response> {
    Ok(ok(st.app.patch_memory_settings(&c, b).await?))
}

pub async fn patch_summary(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<aiden_domain::conversation::SummaryPatch>,
) -> ApiResult<Response> {
    Ok(ok(st.app.patch_summary(&c, &id, b).await?))
}

pub async fn delete_summary(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    st.app.delete_summary(&c, &id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn carousel(S(st): S<State>, Auth(c): Auth) -> ApiResult<Response> {
    Ok(ok(st.app.carousel(&c).await?))
}

pub async fn archive(S(st): S<State>, Auth(c): Auth) -> ApiResult<Response> {
    Ok(ok(st.app.carousel_archive(&c).await?))
}

pub async fn inject(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewIntrospection>,
) -> ApiResult<Response> {
    let note = st.app.inject_introspection(&c, b).await?;
    Ok((StatusCode::CREATED, Json(note)).into_response())
}

pub async fn retire(S(st): S<State>, Auth(c): Auth, Path(id): Path<String>) -> ApiResult<Response> {
    st.app.retire_introspection(&c, &id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn correct(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<NoteCorrection>,
) -> ApiResult<Response> {
    Ok(ok(st.app.correct_introspection(&c, &id, b).await?))
}
