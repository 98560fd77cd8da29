//! Runs: start, read, cancel, the SSE event stream, and the worker list.

use std::convert::Infallible;
use std::time::Duration;

use aiden_service::events::{EventRow, TailItem};
use aiden_service::{views::RunStatus, PageRequest, RunQuery};
use axum::{
    extract::{rejection::QueryRejection, Path, Query, State as S},
    http::{HeaderMap, StatusCode},
    response::{
        sse::{Event, KeepAlive, Sse},
        IntoResponse, Response,
    },
    Json,
};
use futures::Stream;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::catalog::ok;
use crate::{
    error::ApiResult,
    extract::{AppJson, Auth},
    State,
};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    #[serde(default)]
    pub inputs: Map<String, Value>,
}

pub async fn start_run(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    headers: HeaderMap,
    AppJson(b): AppJson<StartRun>,
) -> ApiResult<Response> {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty() && k.len() <= 200);
    let started = st.app.start_run(&c, &id, b.inputs, key).await?;
    if started.created.is_some() {
        // Its event stream, opened next, starts from memory (the engine fills the log).
        st.notifier.expect(&started.run_id, c.id.as_str());
    }
    Ok((StatusCode::ACCEPTED, Json(started)).into_response())
}

/// `GET /v1/runs?limit=&cursor=&processId=&status=&ownerId=&idPrefix=`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunListQuery {
    /// Items per page.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<i64>,
    /// `nextCursor` of the previous page.
    cursor: Option<String>,
    /// Only runs of this Process.
    process_id: Option<String>,
    /// Only runs in this state.
    status: Option<RunStatus>,
    /// Only this user's runs (admins; a user sees only their own).
    owner_id: Option<String>,
    /// Only runs whose id starts with this (at least 4 characters: a search by id).
    id_prefix: Option<String>,
}

pub async fn list_runs(
    S(st): S<State>,
    Auth(c): Auth,
    q: Result<Query<RunListQuery>, QueryRejection>,
) -> ApiResult<Response> {
    let Query(q) = q.map_err(|e| {
        crate::error::ApiError::from(aiden_domain::Error::validation("query", e.body_text()))
    })?;
    let query = RunQuery {
        page: PageRequest {
            limit: q.limit,
            cursor: q.cursor,
            include_archived: false,
        },
        process_id: q.process_id,
        status: q.status,
        owner_id: q.owner_id,
        id_prefix: q.id_prefix,
    };
    Ok(ok(st.app.list_runs(&c, query).await?))
}

pub async fn get_run(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(ok(st.app.get_run(&c, &id).await?))
}

pub async fn cancel_run(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    // 202 either way (the contract's answer); the body says what was done: a run already
    // settled keeps its final status and gets no cancel request.
    let answer = st.app.cancel_run(&c, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(answer)).into_response())
}

/// `POST /v1/runs/{id}/approvals` (AGT-9).
pub async fn approve_run(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<aiden_domain::execution::agent::ApprovalRequest>,
) -> ApiResult<Response> {
    let answer = st.app.approve_run(&c, &id, b).await?;
    Ok((StatusCode::ACCEPTED, Json(answer)).into_response())
}

pub async fn list_workers(S(st): S<State>, Auth(c): Auth) -> ApiResult<Response> {
    Ok(ok(aiden_service::views::Items {
        items: st.app.list_workers(&c).await?,
    }))
}

/// `GET /v1/runs/{id}/events`: the run's event log from `Last-Event-ID` (or the start), then
/// live events as the engine commits them; the stream ends after the terminal event, and only
/// then (or when the client goes away). The stream itself is the service's (`RunTail`).
pub async fn run_events(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(0);
    let tail = st.app.run_tail(&c, &st.notifier, &id, after).await?;
    let stream = futures::stream::unfold(tail, |mut t| async move {
        let event = match t.next().await? {
            TailItem::Event(row) => to_event(row),
            TailItem::Delta(d) => delta_event(&d),
        };
        Some((Ok(event), t))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// `step.delta`: streamed model text, without an `id:` (a resumed stream is positioned by the
/// durable events alone).
fn delta_event(d: &aiden_engine::StepDelta) -> Event {
    let body = json!({"kind": "step.delta", "stepId": d.step_id, "index": d.index, "text": d.text});
    Event::default().event("step.delta").data(body.to_string())
}

fn to_event(row: EventRow) -> Event {
    let data = row
        .data
        .as_deref()
        .and_then(|d| serde_json::from_str::<Value>(d).ok())
        .unwrap_or(Value::Null);
    let body = json!({"seq": row.seq, "kind": row.kind, "stepId": row.step_id, "at": row.at, "data": data});
    Event::default()
        .id(row.seq.to_string())
        .event(row.kind)
        .data(body.to_string())
}
