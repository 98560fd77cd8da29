//! MetricDefinition / MetricValue (MET-1..4).

use aiden_domain::metric::{MetricDefinitionPatch, NewMetricDefinition};
use aiden_service::measurements::{MetricValueQuery, NewMetricValue};
use aiden_service::PageRequest;
use axum::{
    extract::{rejection::QueryRejection, Path, Query, State as S},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;

use super::catalog::{created, deleted, ok};
use crate::{
    error::{ApiError, ApiResult},
    extract::{AppJson, Auth, Paging},
    State,
};

/// `?cascade=true`: the definition's values go with it (MET-2).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct CascadeQuery {
    /// Delete the metric's values too.
    #[serde(default)]
    cascade: bool,
}

/// `GET /v1/metric-values`' query: the filter plus `limit`/`cursor`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValuesQuery {
    #[serde(flatten)]
    filter: MetricValueQuery,
    /// Items per page.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<i64>,
    /// `nextCursor` of the previous page.
    cursor: Option<String>,
}

fn query<T>(q: Result<Query<T>, QueryRejection>) -> ApiResult<T> {
    q.map(|Query(q)| q)
        .map_err(|e| ApiError::from(aiden_domain::Error::validation("query", e.body_text())))
}

pub async fn create_definition(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewMetricDefinition>,
) -> ApiResult<Response> {
    Ok(created(
        "/v1/metric-definitions",
        st.app.create_metric_definition(&c, b).await?,
    ))
}

pub async fn list_definitions(
    S(st): S<State>,
    Auth(c): Auth,
    Paging(p): Paging,
) -> ApiResult<Response> {
    Ok(ok(st.app.metric_definitions(&c, p).await?))
}

pub async fn get_definition(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.metric_definition(&c, &id).await?))
}

pub async fn patch_definition(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<MetricDefinitionPatch>,
) -> ApiResult<Response> {
    Ok(ok(st.app.update_metric_definition(&c, &id, b).await?))
}

pub async fn delete_definition(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    q: Result<Query<CascadeQuery>, QueryRejection>,
) -> ApiResult<Response> {
    let q = query(q)?;
    st.app.delete_metric_definition(&c, &id, q.cascade).await?;
    Ok(deleted())
}

pub async fn record_value(
    S(st): S<State>,
    Auth(c): Auth,
    AppJson(b): AppJson<NewMetricValue>,
) -> ApiResult<Response> {
    let value = st.app.record_metric_value(&c, b).await?;
    Ok((StatusCode::CREATED, Json(value)).into_response())
}

pub async fn list_values(
    S(st): S<State>,
    Auth(c): Auth,
    q: Result<Query<ValuesQuery>, QueryRejection>,
) -> ApiResult<Response> {
    let q = query(q)?;
    let page = PageRequest {
        limit: q.limit,
        cursor: q.cursor,
        include_archived: false,
    };
    Ok(ok(st.app.metric_values(&c, q.filter, page).await?))
}

pub async fn aggregate(
    S(st): S<State>,
    Auth(c): Auth,
    q: Result<Query<MetricValueQuery>, QueryRejection>,
) -> ApiResult<Response> {
    Ok(ok(st.app.aggregate_metric_values(&c, query(q)?).await?))
}
