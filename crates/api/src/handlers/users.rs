//! Users and their tokens (USR-1..4).

use aiden_domain::user::UserPatch;
use aiden_domain::Error as Rule;
use aiden_service::{NewToken, NewUser, Page, PageRequest};
use axum::{
    extract::{rejection::QueryRejection, Path, Query, State as S},
    http::{HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};

use super::catalog::{deleted, ok};
use crate::{
    error::{ApiError, ApiResult},
    extract::{AppJson, Auth, Session, Source},
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

/// `GET /v1/users`: `?q=&limit=&cursor=`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserListQuery {
    /// Only users whose name contains this (case-insensitive) or whose id starts with it.
    q: Option<String>,
    /// Users per page (1–500, 50 when not given).
    #[schemars(range(min = 1, max = 500))]
    limit: Option<i64>,
    /// `nextCursor` of the previous page.
    cursor: Option<String>,
}

pub async fn list_users(
    S(st): S<State>,
    Auth(c): Auth,
    q: Result<Query<UserListQuery>, QueryRejection>,
) -> ApiResult<Response> {
    let Query(q) = q.map_err(|e| ApiError::from(Rule::validation("query", e.body_text())))?;
    let page = PageRequest {
        limit: q.limit,
        cursor: q.cursor,
        include_archived: false,
    };
    Ok(ok(st.app.list_users(&c, q.q.as_deref(), page).await?))
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

// ---------------------------------------------------------------------------------------------
// Accounts for people (USR-5, USR-6): sessions and passwords.
// ---------------------------------------------------------------------------------------------

/// The session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site sends it),
/// Secure behind TLS, for as long as the session lasts.
fn session_cookie(id: &str, max_age: i64, headers: &axum::http::HeaderMap) -> HeaderValue {
    let secure = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.eq_ignore_ascii_case("https"));
    let text = format!(
        "{}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{}",
        aiden_service::accounts::SESSION_COOKIE,
        if secure { "; Secure" } else { "" }
    );
    HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static(""))
}

fn refused(r: aiden_service::AuthRefusal) -> crate::error::ApiError {
    use aiden_service::AuthRefusal as R;
    match r {
        R::Unknown => crate::error::ApiError::Unauthenticated,
        R::Throttled(wait) => crate::error::ApiError::RateLimited(wait),
        R::Failed(e) => e.into(),
    }
}

/// `POST /v1/sessions`: sign in with a name and a password.
pub async fn sign_in(
    S(st): S<State>,
    Source(source): Source,
    headers: axum::http::HeaderMap,
    AppJson(b): AppJson<aiden_service::accounts::SignIn>,
) -> ApiResult<Response> {
    let s = st.app.sign_in(source, b).await.map_err(refused)?;
    let max_age = aiden_service::accounts::SESSION_TTL.num_seconds();
    let mut res = (StatusCode::CREATED, Json(s.view)).into_response();
    res.headers_mut().insert(
        axum::http::header::SET_COOKIE,
        session_cookie(&s.id, max_age, &headers),
    );
    Ok(res)
}

/// `GET /v1/sessions/current`: who the cookie signs in, and its CSRF token (a new tab asks).
pub async fn current_session(Session(s, _): Session) -> ApiResult<Response> {
    Ok(ok(aiden_service::accounts::SessionView {
        user_id: s.caller.id.as_str().to_owned(),
        name: s.name,
        role: s.caller.role,
        csrf_token: s.csrf,
        expires_at: s.expires_at,
    }))
}

/// `DELETE /v1/sessions/current`: sign out; the session is revoked and the cookie cleared.
pub async fn sign_out(
    S(st): S<State>,
    Session(_, id): Session,
    headers: axum::http::HeaderMap,
) -> ApiResult<Response> {
    st.app.sign_out(&id).await?;
    let mut res = StatusCode::NO_CONTENT.into_response();
    res.headers_mut().insert(
        axum::http::header::SET_COOKIE,
        session_cookie("", 0, &headers),
    );
    Ok(res)
}

/// `POST /v1/users/{id}/password-link` (admins).
pub async fn password_link(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let link = st.app.create_password_link(&c, &id).await?;
    Ok((StatusCode::CREATED, Json(link)).into_response())
}

/// `POST /v1/password`: a one-time link's token sets the password.
pub async fn reset_password(
    S(st): S<State>,
    Source(source): Source,
    AppJson(b): AppJson<aiden_service::accounts::PasswordReset>,
) -> ApiResult<Response> {
    st.app.reset_password(source, b).await.map_err(refused)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `PUT /v1/users/{id}/password`: the signed-in user's own password; the session it was
/// set from (if any) stays signed in.
pub async fn set_password(
    S(st): S<State>,
    Auth(c): Auth,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    AppJson(b): AppJson<aiden_service::accounts::NewPassword>,
) -> ApiResult<Response> {
    let keep = crate::extract::session_cookie_in(&headers);
    st.app.set_own_password(&c, &id, b, keep.as_deref()).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
