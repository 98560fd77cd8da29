//! Templates, Services, Secrets and Tools: create, list, get, patch, delete.

use aiden_domain::{
    service::{NewService, ServicePatch},
    template::{NewServiceTemplate, NewToolTemplate, TemplatePatch},
    tool::{NewTool, ToolPatch},
};
use aiden_service::{NewSecret, SecretPatch};
use axum::{
    extract::{Path, State as S},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;

use crate::{
    error::ApiResult,
    extract::{AppJson, Auth, IfMatch, Paging},
    State,
};

/// 201 with the created resource, and its `Location` (`collection/id`; Entities by `uuid`).
pub fn created<T: Serialize>(collection: &str, value: T) -> Response {
    with_location(StatusCode::CREATED, collection, value)
}

pub fn with_location<T: Serialize>(status: StatusCode, collection: &str, value: T) -> Response {
    let body = serde_json::to_value(value).unwrap_or_default();
    let id = body
        .get("id")
        .or_else(|| body.get("uuid"))
        .and_then(serde_json::Value::as_str);
    match id {
        Some(id) => (
            status,
            [(axum::http::header::LOCATION, format!("{collection}/{id}"))],
            Json(body),
        )
            .into_response(),
        None => (status, Json(body)).into_response(),
    }
}

pub fn ok<T: Serialize>(value: T) -> Response {
    Json(value).into_response()
}

pub fn deleted() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

pub async fn create_service_template(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewServiceTemplate>,
) -> ApiResult<Response> {
    Ok(created(
        "/v1/service-templates",
        st.app.create_service_template(&c, b).await?,
    ))
}
pub async fn list_service_templates(
    S(st): S<State>,
    Auth(c): Auth,
    Paging(p): Paging,
) -> ApiResult<Response> {
    Ok(ok(st.app.list_service_templates(&c, p).await?))
}
pub async fn get_service_template(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.get_service_template(&c, &id).await?))
}
pub async fn patch_service_template(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<TemplatePatch>,
) -> ApiResult<Response> {
    Ok(ok(st.app.update_service_template(&c, &id, b).await?))
}
pub async fn delete_service_template(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    st.app.delete_service_template(&c, &id).await?;
    Ok(deleted())
}

pub async fn create_tool_template(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewToolTemplate>,
) -> ApiResult<Response> {
    Ok(created(
        "/v1/tool-templates",
        st.app.create_tool_template(&c, b).await?,
    ))
}
pub async fn list_tool_templates(
    S(st): S<State>,
    Auth(c): Auth,
    Paging(p): Paging,
) -> ApiResult<Response> {
    Ok(ok(st.app.list_tool_templates(&c, p).await?))
}
pub async fn get_tool_template(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.get_tool_template(&c, &id).await?))
}
pub async fn patch_tool_template(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<TemplatePatch>,
) -> ApiResult<Response> {
    Ok(ok(st.app.update_tool_template(&c, &id, b).await?))
}
pub async fn delete_tool_template(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    st.app.delete_tool_template(&c, &id).await?;
    Ok(deleted())
}

pub async fn create_service(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewService>,
) -> ApiResult<Response> {
    Ok(created("/v1/services", st.app.create_service(&c, b).await?))
}
pub async fn list_services(
    S(st): S<State>,
    Auth(c): Auth,
    Paging(p): Paging,
) -> ApiResult<Response> {
    Ok(ok(st.app.list_services(&c, p).await?))
}
pub async fn get_service(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.get_service(&c, &id).await?))
}
pub async fn patch_service(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    IfMatch(r): IfMatch,
    AppJson(b): AppJson<ServicePatch>,
) -> ApiResult<Response> {
    Ok(ok(st.app.update_service(&c, &id, b, r).await?))
}
pub async fn delete_service(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    st.app.delete_service(&c, &id).await?;
    Ok(deleted())
}
pub async fn health_check_service(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.health_check_service(&c, &id).await?))
}

pub async fn create_secret(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewSecret>,
) -> ApiResult<Response> {
    Ok(created("/v1/secrets", st.app.create_secret(&c, b).await?))
}
pub async fn list_secrets(
    S(st): S<State>,
    Auth(c): Auth,
    Paging(p): Paging,
) -> ApiResult<Response> {
    Ok(ok(st.app.list_secrets(&c, p).await?))
}
pub async fn get_secret(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.get_secret(&c, &id).await?))
}
pub async fn patch_secret(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<SecretPatch>,
) -> ApiResult<Response> {
    Ok(ok(st.app.update_secret(&c, &id, b).await?))
}
pub async fn delete_secret(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    st.app.delete_secret(&c, &id).await?;
    Ok(deleted())
}

pub async fn create_tool(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewTool>,
) -> ApiResult<Response> {
    Ok(created("/v1/tools", st.app.create_tool(&c, b).await?))
}
pub async fn list_tools(S(st): S<State>, Auth(c): Auth, Paging(p): Paging) -> ApiResult<Response> {
    Ok(ok(st.app.list_tools(&c, p).await?))
}
pub async fn get_tool(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.get_tool(&c, &id).await?))
}
pub async fn patch_tool(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    IfMatch(r): IfMatch,
    AppJson(b): AppJson<ToolPatch>,
) -> ApiResult<Response> {
    Ok(ok(st.app.update_tool(&c, &id, b, r).await?))
}
pub async fn delete_tool(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    st.app.delete_tool(&c, &id).await?;
    Ok(deleted())
}
