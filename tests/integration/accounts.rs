//! Accounts for people (USR-5, USR-6): a password set from a one-time link, stored only as an
//! argon2id hash; sign-in by name and password to a session cookie (HttpOnly, SameSite) whose
//! mutations carry a CSRF token; sessions that end on sign-out and when the user is disabled;
//! failed sign-ins throttled per source (USR-4).

use aiden_tests::{admin, graph_rows, new_user, scan, server, unique};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery staple";

/// A browser: no bearer token, its own source address, and the cookie it was given.
struct Browser {
    http: reqwest::Client,
    source: String,
    cookie: Option<String>,
    csrf: Option<String>,
}

impl Browser {
    fn new() -> Self {
        Self {
            http: reqwest::Client::new(),
            source: fresh_source(),
            cookie: None,
            csrf: None,
        }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        csrf: bool,
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", server().base))
            .header("x-forwarded-for", &self.source);
        if let Some(c) = &self.cookie {
            req = req.header("cookie", format!("aiden_session={c}"));
        }
        if let (true, Some(t)) = (csrf, &self.csrf) {
            req = req.header("x-csrf-token", t);
        }
        if let Some(b) = &body {
            req = req.json(b);
        }
        let res = req.send().await.expect("a response");
        let (status, headers) = (res.status(), res.headers().clone());
        let text = res.text().await.unwrap_or_default();
        scan::record("responses", &text);
        if let Some(p) = body.as_ref().and_then(|b| b["password"].as_str()) {
            scan::record_plaintext(p);
        }
        (
            status,
            headers,
            serde_json::from_str(&text).unwrap_or(Value::Null),
        )
    }

    /// Signs in; the session cookie's attributes are checked on the way.
    async fn sign_in(&mut self, name: &str, password: &str) -> StatusCode {
        let (status, headers, body) = self
            .send(
                Method::POST,
                "/v1/sessions",
                Some(json!({"name": name, "password": password})),
                false,
            )
            .await;
        if status == StatusCode::CREATED {
            let cookie = headers["set-cookie"].to_str().unwrap().to_owned();
            for attr in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age="] {
                assert!(cookie.contains(attr), "{attr} in {cookie}");
            }
            let id = cookie
                .split(';')
                .next()
                .and_then(|c| c.strip_prefix("aiden_session="))
                .unwrap()
                .to_owned();
            scan::record_plaintext(&id);
            self.cookie = Some(id);
            self.csrf = body["csrfToken"].as_str().map(str::to_owned);
        }
        status
    }
}

/// An address of its own per browser (USR-4 counts failures per source).
fn fresh_source() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed) + (std::process::id() % 200) * 256;
    format!("10.77.{}.{}", (n >> 8) % 250, n % 250 + 1)
}

/// A new user and a password set through an admin's one-time link.
async fn with_password() -> (String, String) {
    let u = new_user("user").await;
    let link = admin()
        .post(&format!("/v1/users/{}/password-link", u.id), json!({}))
        .await;
    let token = link.ok(201)["token"].as_str().unwrap().to_owned();
    let b = Browser::new();
    let (status, _, _) = b
        .send(
            Method::POST,
            "/v1/password",
            Some(json!({"token": token, "password": PASSWORD})),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    (u.id.clone(), u.id)
}

#[tokio::test]
async fn usr_5_usr_6_a_password_from_a_one_time_link_signs_in_and_out_with_csrf() {
    let u = new_user("user").await;
    // Only an admin makes links.
    let own = u
        .post(&format!("/v1/users/{}/password-link", u.id), json!({}))
        .await;
    assert_eq!(
        own.status.as_u16(),
        403,
        "only an admin makes a password link"
    );
    let link = admin()
        .post(&format!("/v1/users/{}/password-link", u.id), json!({}))
        .await;
    let link = link.ok(201).clone();
    assert!(link["path"]
        .as_str()
        .unwrap()
        .starts_with("/#/password?token="));
    let token = link["token"].as_str().unwrap();
    let mut b = Browser::new();
    let (status, _, body) = b
        .send(
            Method::POST,
            "/v1/password",
            Some(json!({"token": token, "password": "short"})),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["details"][0]["invariant"], "USR-5");
    let set = json!({"token": token, "password": PASSWORD});
    assert_eq!(
        b.send(Method::POST, "/v1/password", Some(set.clone()), false)
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        b.send(Method::POST, "/v1/password", Some(set), false)
            .await
            .0,
        StatusCode::UNAUTHORIZED,
        "a link works once"
    );

    assert_eq!(
        b.sign_in(&u.id, "not the password at all").await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        b.sign_in(&unique("nobody"), PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(b.sign_in(&u.id, PASSWORD).await, StatusCode::CREATED);
    let (status, _, me) = b.send(Method::GET, "/v1/me", None, false).await;
    assert_eq!((status, &me["id"]), (StatusCode::OK, &json!(u.id)), "{me}");
    let (status, _, current) = b
        .send(Method::GET, "/v1/sessions/current", None, false)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(current["csrfToken"].as_str(), b.csrf.as_deref());

    // USR-6: a mutation with the cookie and without its CSRF token is refused, and writes nothing.
    let conv = json!({"title": unique("from-the-browser")});
    let (status, _, body) = b
        .send(Method::POST, "/v1/conversations", Some(conv.clone()), false)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["details"][0]["invariant"], "USR-6");
    let (status, _, made) = b
        .send(Method::POST, "/v1/conversations", Some(conv), true)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    assert_eq!(made["ownerId"], json!(u.id));

    // Stored: an argon2id hash, never the password; a session's hash, never its id.
    let rows: Vec<Value> = graph_rows(
        neo4rs::query(
            "MATCH (u:User {id: $id}) OPTIONAL MATCH (s:Session {userId: $id})
             RETURN u.passwordHash AS hash, collect(s.hash) AS sessions",
        )
        .param("id", u.id.as_str()),
    )
    .await;
    let hash = rows[0]["hash"].as_str().unwrap();
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    assert!(!hash.contains(PASSWORD));
    let cookie = b.cookie.clone().unwrap();
    assert!(!rows[0]["sessions"].to_string().contains(&cookie));

    let (status, _, _) = b
        .send(Method::DELETE, "/v1/sessions/current", None, true)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        b.send(Method::GET, "/v1/me", None, false).await.0,
        StatusCode::UNAUTHORIZED,
        "signed out for good"
    );
}

#[tokio::test]
async fn usr_6_disabling_a_user_or_changing_the_password_ends_their_sessions() {
    let (id, name) = with_password().await;
    let mut first = Browser::new();
    let mut second = Browser::new();
    assert_eq!(first.sign_in(&name, PASSWORD).await, StatusCode::CREATED);
    assert_eq!(second.sign_in(&name, PASSWORD).await, StatusCode::CREATED);
    // The user sets a new password from the first session: the other one ends, this one stays.
    let path = format!("/v1/users/{id}/password");
    let new = "another long passphrase";
    let (status, _, body) = first
        .send(Method::PUT, &path, Some(json!({"password": new})), true)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(
        second.send(Method::GET, "/v1/me", None, false).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        first.send(Method::GET, "/v1/me", None, false).await.0,
        StatusCode::OK
    );
    assert_eq!(
        second.sign_in(&name, PASSWORD).await,
        StatusCode::UNAUTHORIZED,
        "the old password is gone"
    );
    // Someone else's password is not theirs to set.
    let other = new_user("user").await;
    assert_eq!(
        other
            .put(&path, json!({"password": new}))
            .await
            .status
            .as_u16(),
        404
    );

    admin()
        .patch(&format!("/v1/users/{id}"), json!({"disabled": true}))
        .await
        .ok(200);
    assert_eq!(
        first.send(Method::GET, "/v1/me", None, false).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        first.sign_in(&name, new).await,
        StatusCode::UNAUTHORIZED,
        "a disabled user cannot sign in"
    );
}

#[tokio::test]
async fn usr_4_failed_sign_ins_are_throttled_per_source() {
    let (_, name) = with_password().await;
    let mut guesser = Browser::new();
    let mut refused = 0;
    let mut throttled = false;
    for i in 0..30 {
        let (status, _, body) = guesser
            .send(
                Method::POST,
                "/v1/sessions",
                Some(json!({"name": name, "password": format!("guess number {i}")})),
                false,
            )
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        refused += 1;
        if body["error"]["code"] == "RATE_LIMITED" {
            throttled = true;
            break;
        }
    }
    assert!(throttled, "{refused} wrong passwords and no throttle");
    // The throttled source is refused even the right password until its budget refills;
    // another source signs in.
    assert_eq!(
        guesser.sign_in(&name, PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        Browser::new().sign_in(&name, PASSWORD).await,
        StatusCode::CREATED
    );
}

/// The admins' user list says who has a password (never its hash); a user may not list users;
/// an admin narrows the run list to one user's runs.
#[tokio::test]
async fn usr_5_the_user_list_shows_who_has_a_password_and_a_users_runs_filter() {
    let (id, _) = with_password().await;
    let plain = new_user("user").await;
    let of = |who: String| async move {
        let list = admin().get(&format!("/v1/users?q={who}")).await;
        assert!(!list.body.to_string().contains("argon2"), "never the hash");
        let items = list.ok(200)["items"].as_array().unwrap().clone();
        items.into_iter().find(|u| u["id"] == who.as_str()).unwrap()
    };
    assert_eq!(of(id.clone()).await["hasPassword"], true);
    assert_eq!(of(plain.id.clone()).await["hasPassword"], false);
    assert_eq!(plain.get("/v1/users").await.status.as_u16(), 403);
    let runs = admin().get(&format!("/v1/runs?ownerId={}", plain.id)).await;
    assert_eq!(
        runs.ok(200)["items"],
        json!([]),
        "the new user has started nothing"
    );
}

/// The admins' user list comes a page at a time by name (case-insensitive, then id), narrowed
/// by `?q=` to names that contain it or ids that start with it; a bad page size is a 400.
#[tokio::test]
async fn the_user_list_pages_by_name_and_finds_users_by_name_or_id() {
    let a = admin();
    let stem = unique("Pager");
    let mut ids = Vec::new();
    for name in ["b", "A", "c"] {
        let made = a
            .post(
                "/v1/users",
                json!({"name": format!("{stem} {name}"), "role": "user"}),
            )
            .await;
        ids.push(made.ok(201)["id"].as_str().unwrap().to_owned());
    }
    let names = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let q = stem.to_uppercase();
    let first = a.get(&format!("/v1/users?q={q}&limit=2")).await;
    let first = first.ok(200).clone();
    assert_eq!(names(&first), [format!("{stem} A"), format!("{stem} b")]);
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = a
        .get(&format!("/v1/users?q={q}&limit=2&cursor={cursor}"))
        .await;
    let second = second.ok(200).clone();
    assert_eq!(names(&second), [format!("{stem} c")]);
    assert!(second["nextCursor"].is_null(), "{second}");
    assert!(second["items"][0]["usage"]["runs"].is_number(), "{second}");

    // By id: the user whose id starts with the text, whatever their name.
    let by_id = a.get(&format!("/v1/users?q={}", ids[2])).await;
    assert_eq!(names(by_id.ok(200)), [format!("{stem} c")]);

    // Without `limit`, a page of 50 at most.
    let page = a.get("/v1/users").await;
    assert!(page.ok(200)["items"].as_array().unwrap().len() <= 50);
    let bad = a.get("/v1/users?limit=0").await;
    assert_eq!(bad.status.as_u16(), 400, "{}", bad.body);
    let unknown = a.get("/v1/users?name=x").await;
    assert_eq!(unknown.status.as_u16(), 400, "{}", unknown.body);
}
