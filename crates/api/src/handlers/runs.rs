//! Runs: start, read, cancel, the SSE event stream, and the worker list.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use aiden_graph::runs::EventRow;
use axum::{
    extract::{Path, State as S},
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

#[derive(Debug, Deserialize)]
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
    Ok((StatusCode::ACCEPTED, Json(started)).into_response())
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
    let answer = st.app.cancel_run(&c, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(answer)).into_response())
}

pub async fn list_workers(S(st): S<State>, Auth(c): Auth) -> ApiResult<Response> {
    Ok(ok(json!({"items": st.app.list_workers(&c).await?})))
}

const TERMINAL: [&str; 3] = ["run.completed", "run.failed", "run.canceled"];

/// `GET /v1/runs/{id}/events`: the run's event log from `Last-Event-ID` (or the start), then
/// live events as the engine commits them; the stream ends after the terminal event.
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
    // Checks visibility (404 for someone else's run) before streaming anything.
    st.app.get_run(&c, &id).await?;
    let wake = st.notifier.subscribe();
    let state = Tail {
        st,
        run_id: id,
        after,
        buffer: VecDeque::new(),
        wake,
        done: false,
    };
    let stream = futures::stream::unfold(state, |mut t| async move {
        let event = t.next().await?;
        Some((Ok(event), t))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

struct Tail {
    st: State,
    run_id: String,
    after: i64,
    buffer: VecDeque<EventRow>,
    wake: tokio::sync::broadcast::Receiver<String>,
    done: bool,
}

impl Tail {
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(row) = self.buffer.pop_front() {
                self.after = row.seq;
                if TERMINAL.contains(&row.kind.as_str()) {
                    self.done = true;
                }
                return Some(to_event(row));
            }
            if self.done {
                return None;
            }
            match self
                .st
                .app
                .run_events_unchecked(&self.run_id, self.after, 200)
                .await
            {
                Ok(rows) if !rows.is_empty() => {
                    self.buffer.extend(rows);
                    continue;
                }
                Ok(_) => {
                    // Resumed at or past the terminal event: nothing more will come.
                    if self.st.app.run_settled(&self.run_id).await.unwrap_or(false) {
                        // Status and events commit together; re-read what landed meanwhile.
                        let rest = self
                            .st
                            .app
                            .run_events_unchecked(&self.run_id, self.after, 200)
                            .await
                            .unwrap_or_default();
                        if rest.is_empty() {
                            return None;
                        }
                        self.buffer.extend(rest);
                        continue;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "event stream read failed"),
            }
            // Wait for the engine to commit something for this run (or poll: the engine may
            // live in another process).
            let wait = async {
                loop {
                    match self.wake.recv().await {
                        Ok(id) if id == self.run_id => return,
                        Ok(_) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                        Err(_) => std::future::pending::<()>().await,
                    }
                }
            };
            let _ = tokio::time::timeout(Duration::from_millis(500), wait).await;
        }
    }
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
