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
        "runlist.js",
        JS,
        include_str!("../../assets/console/runlist.js"),
    ),
    (
        "waterfall.js",
        JS,
        include_str!("../../assets/console/waterfall.js"),
    ),
    (
        "neo4j.js",
        JS,
        include_str!("../../assets/console/neo4j.js"),
    ),
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
        "statuses.js",
        JS,
        include_str!("../../assets/console/statuses.js"),
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
    (
        "markdown.js",
        JS,
        include_str!("../../assets/console/markdown.js"),
    ),
    // Vendored libraries (see assets/console/vendor/README.md), served flat: `/ui/{file}` is
    // one path segment.
    (
        "marked.esm.js",
        JS,
        include_str!("../../assets/console/vendor/marked.esm.js"),
    ),
    (
        "purify.es.mjs",
        JS,
        include_str!("../../assets/console/vendor/purify.es.mjs"),
    ),
    (
        "highlight.min.js",
        JS,
        include_str!("../../assets/console/vendor/highlight.min.js"),
    ),
    (
        "highlight-github.min.css",
        "text/css; charset=utf-8",
        include_str!("../../assets/console/vendor/highlight-github.min.css"),
    ),
    ("runs.js", JS, include_str!("../../assets/console/runs.js")),
    (
        "users.js",
        JS,
        include_str!("../../assets/console/users.js"),
    ),
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
    use std::collections::HashMap;

    use serde_json::Value;

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

    /// The words of an enum schema: its `enum`, or a `oneOf` of `enum`s and `const`s (as
    /// statuses.js reads them).
    fn words_of(schema: &Value) -> Vec<String> {
        let of = |s: &Value| -> Vec<String> {
            match (s["enum"].as_array(), s["const"].as_str()) {
                (Some(e), _) => e
                    .iter()
                    .filter_map(|w| w.as_str().map(str::to_owned))
                    .collect(),
                (None, Some(c)) => vec![c.to_owned()],
                (None, None) => Vec::new(),
            }
        };
        match schema["oneOf"].as_array() {
            Some(parts) => parts.iter().flat_map(of).collect(),
            None => of(schema),
        }
    }

    /// `waiting_for_approval` → `waitingForApproval`, the name statuses.js gives a word.
    fn camel(word: &str) -> String {
        let mut parts = word.split('_');
        let first = parts.next().unwrap_or_default().to_owned();
        parts.fold(first, |mut out, p| {
            let mut c = p.chars();
            out.extend(c.next().map(|c| c.to_ascii_uppercase()));
            out.push_str(c.as_str());
            out
        })
    }

    /// Every status the console names (`run.completed`, `alternative.stale`) is a word of the
    /// OpenAPI document's enum statuses.js reads it from: a status renamed in the domain fails
    /// here, not in a browser.
    #[test]
    fn every_status_the_console_names_is_one_the_api_lists() {
        let doc = crate::openapi_document();
        let statuses = include_str!("../../assets/console/statuses.js");
        // `const SCHEMAS = { run: 'RunStatus', ... };`
        let table = statuses
            .split_once("const SCHEMAS = {")
            .and_then(|(_, rest)| rest.split_once('}'))
            .expect("statuses.js: SCHEMAS")
            .0;
        let schemas: HashMap<&str, Vec<String>> = table
            .split(',')
            .filter_map(|pair| pair.split_once(':'))
            .map(|(name, schema)| {
                let schema = schema.trim().trim_matches('\'');
                let words = words_of(&doc["components"]["schemas"][schema]);
                assert!(!words.is_empty(), "/openapi.json: no words for {schema}");
                (name.trim(), words.iter().map(|w| camel(w)).collect())
            })
            .collect();
        assert_eq!(schemas.len(), 3, "{table}");
        let mut named = 0;
        for (file, _, body) in ASSETS {
            let Some((before, _)) = body.split_once("from './statuses.js'") else {
                continue;
            };
            let imports = before.rsplit_once('{').expect("import {").1;
            for import in imports.trim().trim_end_matches('}').split(',') {
                let (name, alias) = import
                    .split_once(" as ")
                    .unwrap_or((import.trim(), import.trim()));
                let Some(known) = schemas.get(name.trim()) else {
                    continue;
                };
                let alias = format!("{}.", alias.trim());
                for (at, _) in body.match_indices(&alias) {
                    let before = body[..at].chars().next_back().unwrap_or(' ');
                    if before.is_alphanumeric() || before == '_' || before == '.' {
                        continue;
                    }
                    let rest = &body[at + alias.len()..];
                    let word: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    assert!(
                        known.contains(&word),
                        "{file} names `{alias}{word}`, which the API's {} has no word for",
                        name.trim()
                    );
                    named += 1;
                }
            }
        }
        assert!(named >= 10, "only {named} statuses named");
    }
}
