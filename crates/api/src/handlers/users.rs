use aiden_service::NewUser;
use axum::{extract::State as S, http::StatusCode, Json};

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

pub async fn get_me(S(st): S<State>, Auth(c): Auth) -> ApiResult<Json<serde_json::Value>> {
    Ok(Json(
        serde_json::to_value(st.app.me(&c).await?).unwrap_or_default(),
    ))
}
