//! Runs you can replay: forks, diffs and dry replays (FORK-1..3, REPLAY-1).

use aiden_service::forks::{ForkRequest, ReplayRequest};
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

pub async fn fork_run(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    AppJson(b): AppJson<ForkRequest>,
) -> ApiResult<Response> {
    let started = st.app.fork_run(&c, &id, b).await?;
    // Its event stream, opened next, starts from memory (the engine fills the log).
    st.notifier.expect(&started.run_id, c.id.as_str());
    Ok((StatusCode::ACCEPTED, Json(started)).into_response())
}

pub async fn diff_runs(
    S(st): S<State>,
    Auth(c): Auth,
    Path((a, b)): Path<(String, String)>,
) -> ApiResult<Response> {
    Ok(ok(st.app.diff_runs(&c, &a, &b).await?))
}

pub async fn replay_version(
    S(st): S<State>,
    Auth(c): Auth,
    Path((id, n)): Path<(String, String)>,
    AppJson(b): AppJson<ReplayRequest>,
) -> ApiResult<Response> {
    let n: i64 = n.parse().map_err(|_| {
        aiden_domain::Error::validation("/n", format!("`{n}` is not a version number"))
    })?;
    Ok(ok(st.app.replay_version(&c, &id, n, b).await?))
}
