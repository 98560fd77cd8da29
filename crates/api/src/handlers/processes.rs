use aiden_domain::process::{NewProcess, ProcessPatch};
use axum::{
    extract::{Path, State as S},
    response::Response,
};

use super::catalog::{created, deleted, ok};
use crate::{
    error::ApiResult,
    extract::{AppJson, Auth, IfMatch, Paging},
    State,
};

pub async fn create_process(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewProcess>,
) -> ApiResult<Response> {
    Ok(created(
        "/v1/processes",
        st.app.create_process(&c, b).await?,
    ))
}
pub async fn list_processes(
    S(st): S<State>,
    Auth(c): Auth,
    Paging(p): Paging,
) -> ApiResult<Response> {
    Ok(ok(st.app.list_processes(&c, p).await?))
}
pub async fn get_process(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.get_process(&c, &id).await?))
}
pub async fn put_process(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    IfMatch(r): IfMatch,
    AppJson(b): AppJson<NewProcess>,
) -> ApiResult<Response> {
    Ok(ok(st.app.replace_process(&c, &id, b, r).await?))
}
pub async fn patch_process(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    IfMatch(r): IfMatch,
    AppJson(b): AppJson<ProcessPatch>,
) -> ApiResult<Response> {
    Ok(ok(st.app.patch_process(&c, &id, b, r).await?))
}
pub async fn delete_process(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    st.app.delete_process(&c, &id).await?;
    Ok(deleted())
}
pub async fn list_process_versions(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.process_versions(&c, &id).await?))
}
