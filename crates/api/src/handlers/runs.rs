//! Runs: start, read, cancel, the SSE event stream, and the worker list.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use aiden_graph::runs::EventRow;
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

/// `GET /v1/runs?limit=&cursor=&processId=&status=`.
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

const TERMINAL: [&str; 3] = ["run.completed", "run.failed", "run.canceled"];
/// Events read from the graph per catch-up.
const PAGE: i64 = 200;
/// How long a stream waits for a live event before it looks at the graph itself (the engine
/// may run in another `aiden serve`).
const POLL_EVERY: Duration = Duration::from_millis(500);
/// A settled run whose last events are not readable yet is looked at again this soon.
const SETTLING_RETRY: Duration = Duration::from_millis(20);

/// `GET /v1/runs/{id}/events`: the run's event log from `Last-Event-ID` (or the start), then
/// live events as the engine commits them; the stream ends after the terminal event, and only
/// then (or when the client goes away).
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
    // Subscribe before the first read, so nothing committed in between is missed.
    let live = st.notifier.subscribe(&id);
    let mut buffer = VecDeque::new();
    let (catch_up, head, done) = match st.notifier.snapshot(&id, after) {
        // The engine in this process holds the whole log: no graph read.
        Some(mem) => {
            // Runs are private to whoever started them; admins see every run (404 otherwise).
            if mem.owner_id != c.id.as_str() && !c.is_admin() {
                return Err(aiden_service::Error::from(aiden_domain::Error::NotFound).into());
            }
            let done = mem.settled && mem.events.is_empty() && after >= mem.last_seq;
            buffer.extend(mem.events);
            (false, None, done)
        }
        // Checks visibility before streaming anything, then catches up from the graph.
        None => (true, Some(st.app.run_head(&c, &id).await?), false),
    };
    let state = Tail {
        st,
        run_id: id,
        after,
        buffer,
        deltas: VecDeque::new(),
        live,
        catch_up,
        head,
        done,
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
    /// The last sequence number sent.
    after: i64,
    buffer: VecDeque<EventRow>,
    /// Streamed model text received live (issue #11): sent as `step.delta`, without an id.
    deltas: VecDeque<std::sync::Arc<aiden_engine::StepDelta>>,
    live: aiden_engine::Subscription,
    /// Read the graph before waiting for live events (start, gap, lag, timeout).
    catch_up: bool,
    /// A head read before the last catch-up, reused once instead of reading it again.
    head: Option<aiden_graph::runs::RunHead>,
    done: bool,
}

impl Tail {
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(d) = self.deltas.pop_front() {
                if !self.done {
                    return Some(delta_event(&d));
                }
            }
            if let Some(row) = self.buffer.pop_front() {
                if row.seq <= self.after {
                    continue;
                }
                self.after = row.seq;
                self.done = TERMINAL.contains(&row.kind.as_str());
                return Some(to_event(row));
            }
            if self.done {
                return None;
            }
            if self.catch_up {
                match self.read_graph().await {
                    Ok(Read::Events) => continue,
                    Ok(Read::Ended) => return None,
                    Ok(Read::Settling) => {
                        tokio::time::sleep(SETTLING_RETRY).await;
                        continue;
                    }
                    Ok(Read::Nothing) => self.catch_up = false,
                    Err(e) => {
                        // Never end early on a failed read: wait and read again.
                        tracing::warn!(run_id = %self.run_id, error = %e, "event stream read failed");
                        tokio::time::sleep(POLL_EVERY).await;
                        continue;
                    }
                }
            }
            self.wait_live().await;
        }
    }

    /// Reads the log after `after`; when it holds nothing new, whether the stream is over.
    async fn read_graph(&mut self) -> Result<Read, aiden_service::Error> {
        let head = self.head.take();
        let rows = self
            .st
            .app
            .run_events_unchecked(&self.run_id, self.after, PAGE)
            .await?;
        if !rows.is_empty() {
            // A full page may have more behind it; otherwise live events take over.
            self.catch_up = rows.len() as i64 == PAGE;
            self.buffer.extend(rows);
            return Ok(Read::Events);
        }
        // The head must be read no later than the empty read, so a head saying "settled with
        // its log up to N" and an empty read after N means the client has everything.
        let head = match head {
            Some(h) => h,
            None => match self.st.app.run_head_unchecked(&self.run_id).await? {
                Some(h) => h,
                None => return Ok(Read::Ended),
            },
        };
        if !head.is_settled() {
            return Ok(Read::Nothing);
        }
        if self.after >= head.event_seq {
            return Ok(Read::Ended);
        }
        // Settled, but its last events are not visible to this read yet.
        Ok(Read::Settling)
    }

    /// Takes live events that continue the log; a gap, a lag or a quiet spell means the
    /// next round reads the graph.
    async fn wait_live(&mut self) {
        let live = &mut self.live;
        let next = async {
            tokio::select! {
                batch = live.events.recv() => Ok(batch),
                delta = live.deltas.recv() => Err(delta),
            }
        };
        let batch = match tokio::time::timeout(POLL_EVERY, next).await {
            Ok(Ok(batch)) => Ok(batch),
            Ok(Err(Ok(delta))) => {
                self.deltas.push_back(delta);
                return;
            }
            // Deltas are not replayed: a stream that lagged behind them just skips some.
            Ok(Err(Err(_))) => return,
            Err(elapsed) => Err(elapsed),
        };
        match batch {
            Ok(Ok(batch)) => {
                let mut next = self.buffer.back().map_or(self.after, |r| r.seq) + 1;
                for row in batch.iter() {
                    if row.seq < next {
                        continue;
                    }
                    if row.seq > next {
                        self.catch_up = true;
                        return;
                    }
                    self.buffer.push_back(row.clone());
                    next += 1;
                }
            }
            Ok(Err(_)) | Err(_) => self.catch_up = true,
        }
    }
}

enum Read {
    /// New events are buffered.
    Events,
    /// Nothing new; the run goes on.
    Nothing,
    /// The run settled and the client has its whole log.
    Ended,
    /// The run settled but its last events are not readable yet.
    Settling,
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
