//! Routes: Health, readiness, metrics, the OpenAPI document, the console, users and tokens.

use aiden_service::Page;

use super::{route, Table};
use crate::handlers::{console, ops, users as u};
use crate::openapi::Op;

pub(super) fn routes(t: Table) -> Table {
    let t = route!(
        t,
        GET,
        "/healthz",
        ops::healthz,
        Op::open("Liveness").ok::<ops::Health>()
    );
    let t = route!(
        t,
        GET,
        "/readyz",
        ops::readyz,
        Op::open("Readiness: graph and broker reachable")
            .ok::<ops::Readiness>()
            .also::<ops::Readiness>(503, "Not ready: what is unreachable")
    );
    let t = route!(
        t,
        GET,
        "/metrics",
        ops::metrics,
        Op::open("Prometheus metrics").text("text/plain")
    );
    let t = route!(
        t,
        GET,
        "/openapi.json",
        ops::openapi,
        Op::open("This document").ok::<serde_json::Map<String, serde_json::Value>>()
    );
    let t = route!(
        t,
        GET,
        "/docs",
        ops::docs,
        Op::open("This document as a browsable reference (HTML)").text("text/html")
    );
    let t = route!(
        t,
        GET,
        "/",
        console::index,
        Op::open("The web console (HTML; its scripts and styles are under /ui/)").text("text/html")
    );
    let t = route!(
        t,
        GET,
        "/ui/{file}",
        console::asset,
        Op::open("A file of the web console").undocumented()
    );
    let t = route!(
        t,
        POST,
        "/v1/users",
        u::create_user,
        Op::new("Create a user (admin); the token is shown once")
            .body::<aiden_service::NewUser>()
            .created_unlocated::<aiden_service::User>()
            .errors(&[403, 409])
    );
    let t = route!(
        t,
        GET,
        "/v1/users",
        u::list_users,
        Op::new("A page of users by name (admin; ?q= narrows to names containing it or ids starting with it), with whether a password is set, their spend today (AGT-14) and their runs")
            .query::<u::UserListQuery>()
            .ok::<aiden_service::Page<aiden_service::User>>()
            .errors(&[403])
    );
    let t = route!(
        t,
        POST,
        "/v1/sessions",
        u::sign_in,
        Op::open("Sign in with a name and a password: a session cookie (HttpOnly, SameSite=Strict) and its CSRF token (USR-6)")
            .body::<aiden_service::accounts::SignIn>()
            .created_unlocated::<aiden_service::accounts::SessionView>()
            .errors(&[401])
    );
    let t = route!(
        t,
        GET,
        "/v1/sessions/current",
        u::current_session,
        Op::new("The session the cookie signs in, with its CSRF token")
            .ok::<aiden_service::accounts::SessionView>()
    );
    let t = route!(
        t,
        DELETE,
        "/v1/sessions/current",
        u::sign_out,
        Op::new("Sign out: the session is revoked (send X-CSRF-Token)")
            .no_content()
            .errors(&[403])
    );
    let t = route!(
        t,
        POST,
        "/v1/password",
        u::reset_password,
        Op::open("Set a password with a one-time link's token (USR-5); the user's sessions end")
            .body::<aiden_service::accounts::PasswordReset>()
            .no_content()
            .errors(&[401, 422])
    );
    let t = route!(
        t,
        POST,
        "/v1/users/{id}/password-link",
        u::password_link,
        Op::new("A one-time link for the user to set a password (admin; 24 h, the newest only)")
            .created_unlocated::<aiden_service::accounts::PasswordLink>()
            .errors(&[403])
    );
    let t = route!(
        t,
        PUT,
        "/v1/users/{id}/password",
        u::set_password,
        Op::new("Set your own password (USR-5); your other sessions end")
            .body::<aiden_service::accounts::NewPassword>()
            .no_content()
            .errors(&[403, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/me",
        u::get_me,
        Op::new("The caller").ok::<aiden_service::User>()
    );
    let t = route!(
        t,
        GET,
        "/v1/me/chat-processes",
        u::chat_processes,
        Op::new(
            "Processes that can answer a conversation, each with whether it runs for the caller"
        )
        .ok::<aiden_service::views::Items<aiden_service::chat::ChatProcess>>()
    );
    let t = route!(
        t,
        PUT,
        "/v1/me/default-process",
        u::set_default_process,
        Op::new("Set the Process your conversations answer with when none is named (CONV-2)")
            .body::<aiden_service::chat::DefaultProcess>()
            .ok::<aiden_service::User>()
            .errors(&[422])
    );
    let t = route!(
        t,
        GET,
        "/v1/users/{id}",
        u::get_user,
        Op::new("A user (admin, or the user themselves)")
            .ok::<aiden_service::User>()
            .errors(&[404])
    );
    let t = route!(
        t,
        PATCH,
        "/v1/users/{id}",
        u::patch_user,
        Op::new("Change a user's role or disable them (admin; USR-1, USR-2)")
            .body::<aiden_domain::user::UserPatch>()
            .ok::<aiden_service::User>()
            .errors(&[403, 404, 422])
    );
    let t = route!(
        t,
        POST,
        "/v1/users/{id}/tokens",
        u::create_token,
        Op::new("A new token for the user (admin or self; shown once, USR-3)")
            .body::<aiden_service::NewToken>()
            .created_unlocated::<aiden_service::Token>()
            .errors(&[404])
    );
    let t = route!(
        t,
        GET,
        "/v1/users/{id}/tokens",
        u::list_tokens,
        Op::new("The user's tokens, live and revoked (admin or self; never the values)")
            .ok::<Page<aiden_service::Token>>()
            .errors(&[404])
    );
    route!(
        t,
        DELETE,
        "/v1/users/{id}/tokens/{tokenId}",
        u::revoke_token,
        Op::new("Revoke a token for good (admin or self; USR-3)")
            .no_content()
            .errors(&[404, 422])
    )
}
