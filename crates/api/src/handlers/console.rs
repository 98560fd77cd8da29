//! The web console: static files compiled into the binary, served at `/` and under
//! `/ui/`. It is a client of the public API like any other: no route here reads data.

use axum::{
    extract::Path,
    http::header,
    response::{IntoResponse, Response},
};

use crate::error::ApiError;

/// Scripts and styles from this origin only; data only through `fetch` to this origin.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; \
    frame-ancestors 'none'";

/// `(name, media type, content)` of every file under `/ui/`.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.js", JS, include_str!("../../assets/console/app.js")),
    ("api.js", JS, include_str!("../../assets/console/api.js")),
    ("dom.js", JS, include_str!("../../assets/console/dom.js")),
    ("dag.js", JS, include_str!("../../assets/console/dag.js")),
    (
        "memories.js",
        JS,
        include_str!("../../assets/console/memories.js"),
    ),
    (
        "knowledge.js",
        JS,
        include_str!("../../assets/console/knowledge.js"),
    ),
    (
        "connect.js",
        JS,
        include_str!("../../assets/console/connect.js"),
    ),
    (
        "words.js",
        JS,
        include_str!("../../assets/console/words.js"),
    ),
    (
        "lineage.js",
        JS,
        include_str!("../../assets/console/lineage.js"),
    ),
    (
        "conversations.js",
        JS,
        include_str!("../../assets/console/conversations.js"),
    ),
    ("runs.js", JS, include_str!("../../assets/console/runs.js")),
    (
        "catalog.js",
        JS,
        include_str!("../../assets/console/catalog.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../assets/console/style.css"),
    ),
];
const JS: &str = "text/javascript; charset=utf-8";

fn file(media_type: &str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, media_type),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            // Compiled in: a new binary is a new console, so revalidate rather than cache.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `GET /`: the console's page; it routes itself by the URL fragment.
pub async fn index() -> Response {
    file(
        "text/html; charset=utf-8",
        include_str!("../../assets/console/index.html"),
    )
}

/// `GET /ui/{file}`.
pub async fn asset(Path(name): Path<String>) -> Result<Response, ApiError> {
    ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, media_type, body)| file(media_type, body))
        .ok_or_else(|| aiden_domain::Error::NotFound.into())
}

#[cfg(test)]
mod tests {
    use super::ASSETS;

    /// Every file the page and the modules import is served (a missing one is a blank console).
    #[test]
    fn every_imported_module_is_served() {
        let served: Vec<&str> = ASSETS.iter().map(|(n, _, _)| *n).collect();
        let sources = ASSETS
            .iter()
            .map(|(_, _, body)| *body)
            .chain([include_str!("../../assets/console/index.html")]);
        for body in sources {
            for piece in body.split(['\'', '"']) {
                let Some(name) = piece
                    .strip_prefix("./")
                    .or_else(|| piece.strip_prefix("/ui/"))
                else {
                    continue;
                };
                assert!(served.contains(&name), "{name} is imported but not served");
            }
        }
    }
}
