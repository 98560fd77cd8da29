//! The OpenAPI 3.1 document, written by the route table as it registers each route. Request
//! and response schemas come from the Rust types the handlers read and answer (`schemars`, in
//! the deserialising view: what the server accepts), so the document cannot drift from them.

mod portable;

use schemars::{generate::SchemaSettings, JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

enum Answer {
    Json(u16, SchemaFn),
    /// 201/202 whose `Location` names the new resource.
    Located(u16, SchemaFn),
    Empty(u16),
    EventStream,
    Text(&'static str),
}

/// `(prefix, field)`: the answer's `field` is the `{id}` of the operations under `prefix/{id}`.
type Link = (&'static str, &'static str);

/// One operation's documentation, built next to its route.
pub struct Op {
    summary: &'static str,
    auth: bool,
    body: Option<SchemaFn>,
    query: Option<SchemaFn>,
    headers: Vec<(&'static str, &'static str, Value)>,
    answer: Answer,
    also: Vec<(u16, &'static str, SchemaFn)>,
    errors: Vec<u16>,
    links: Vec<Link>,
    documented: bool,
}

impl Op {
    /// An authenticated operation (bearer token; 401 without one).
    pub fn new(summary: &'static str) -> Self {
        Self {
            summary,
            auth: true,
            body: None,
            query: None,
            headers: Vec::new(),
            answer: Answer::Empty(204),
            also: Vec::new(),
            errors: Vec::new(),
            links: Vec::new(),
            documented: true,
        }
    }
    /// An operation anyone may call (health, metrics, this document).
    pub fn open(summary: &'static str) -> Self {
        Self {
            auth: false,
            ..Self::new(summary)
        }
    }
    /// A JSON request body of this type (400 when it does not fit, 413, 415).
    pub fn body<T: JsonSchema>(mut self) -> Self {
        self.body = Some(schema_of::<T>);
        self
    }
    /// Query parameters: the properties of this type.
    pub fn query<T: JsonSchema>(mut self) -> Self {
        self.query = Some(schema_of::<T>);
        self
    }
    /// `?limit=&cursor=&includeArchived=`.
    pub fn paged(self) -> Self {
        self.query::<crate::extract::PageQuery>()
    }
    /// A request header the operation reads.
    pub fn header(mut self, name: &'static str, description: &'static str, schema: Value) -> Self {
        self.headers.push((name, description, schema));
        self
    }
    /// `If-Match: <revision>` (optional; a stale one answers 409).
    pub fn if_match(self) -> Self {
        self.header(
            "If-Match",
            "The revision last read; a different current revision answers 409",
            json!({"type": "string", "pattern": "^\"?[0-9]{1,18}\"?$"}),
        )
        .errors(&[409])
    }
    pub fn ok<T: JsonSchema>(mut self) -> Self {
        self.answer = Answer::Json(200, schema_of::<T>);
        self
    }
    /// 201 with the created resource and its `Location`.
    pub fn created<T: JsonSchema>(mut self) -> Self {
        self.answer = Answer::Located(201, schema_of::<T>);
        self
    }
    /// 201 with the created resource, which has no route of its own.
    pub fn created_unlocated<T: JsonSchema>(mut self) -> Self {
        self.answer = Answer::Json(201, schema_of::<T>);
        self
    }
    /// 202 with the new resource (still being made) and its `Location`.
    pub fn accepted_at<T: JsonSchema>(mut self) -> Self {
        self.answer = Answer::Located(202, schema_of::<T>);
        self
    }
    /// 202: accepted, the work goes on in the background.
    pub fn accepted<T: JsonSchema>(mut self) -> Self {
        self.answer = Answer::Json(202, schema_of::<T>);
        self
    }
    pub fn no_content(mut self) -> Self {
        self.answer = Answer::Empty(204);
        self
    }
    /// Another success answer besides the main one.
    pub fn also<T: JsonSchema>(mut self, status: u16, description: &'static str) -> Self {
        self.also.push((status, description, schema_of::<T>));
        self
    }
    pub fn event_stream(mut self) -> Self {
        self.answer = Answer::EventStream;
        self
    }
    pub fn text(mut self, media_type: &'static str) -> Self {
        self.answer = Answer::Text(media_type);
        self
    }
    /// A route that exists only to refuse (it is described on a documented neighbour).
    pub fn undocumented(mut self) -> Self {
        self.documented = false;
        self
    }
    /// OpenAPI links: the answer's `field` is the `{id}` of every operation under
    /// `prefix/{id}` (what a client, or a stateful fuzzer, can call next).
    pub fn links(mut self, prefix: &'static str, field: &'static str) -> Self {
        self.links.push((prefix, field));
        self
    }
    /// Error statuses besides the ones every operation of its kind can answer.
    pub fn errors(mut self, statuses: &[u16]) -> Self {
        self.errors.extend_from_slice(statuses);
        self
    }

    /// Every error status: the operation's own plus what its shape implies.
    fn error_statuses(&self, path_params: bool) -> Vec<u16> {
        let mut s = self.errors.clone();
        if self.auth {
            // 401 without a valid token; 429 when the source sent too many unknown ones (USR-4);
            // 503 while the graph or the broker is away.
            s.extend([401, 429, 503]);
        }
        if path_params {
            s.push(404);
        }
        if self.body.is_some() {
            s.extend([400, 413, 415]);
        }
        if self.query.is_some() || self.headers.iter().any(|h| h.0 == "If-Match") {
            s.push(400);
        }
        s.sort_unstable();
        s.dedup();
        s
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "The request does not fit the schema (VALIDATION_ERROR, with the field's path)",
        401 => "No bearer token, or an unknown one (RATE_LIMITED with `Retry-After` once this source has sent too many unknown ones, USR-4)",
        403 => "Not allowed for this caller (an admin-only operation, or not the owner: OWN-3)",
        404 => "No such resource, or one the caller may not see (OWN-2)",
        405 => "Never allowed for this resource (the invariant is named)",
        409 => "Conflicts with the current state (a stale If-Match, a taken id, a reference that still exists, a run still going)",
        413 => "Request body over 1 MiB",
        415 => "The body is not `application/json`",
        422 => "An invariant is violated (its ID is in `details[].invariant`)",
        429 => "A quota or spending budget is exhausted (QUOTA_EXCEEDED, BUDGET_EXCEEDED), `Retry-After` says when to retry",
        503 => "The graph or the broker is unavailable (UNAVAILABLE), or the run queues are past their bound (OVERLOADED); `Retry-After` says when to retry",
        _ => "error",
    }
}

#[derive(Default)]
pub struct Spec {
    paths: Map<String, Value>,
    generator: Option<SchemaGenerator>,
    /// (path, method, status, links) to resolve in `document`.
    pending_links: Vec<(String, String, u16, Vec<Link>)>,
}

fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .for_deserialize()
        .into_generator()
}

impl Spec {
    pub fn add(&mut self, method: &str, path: &str, op: Op) {
        if !op.documented {
            return;
        }
        let g = self.generator.get_or_insert_with(generator);
        let method = method.to_ascii_lowercase();
        let path_names: Vec<&str> = path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .collect();
        let mut params: Vec<Value> = path_names
            .iter()
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "minLength": 1}}))
            .collect();
        if let Some(query) = op.query {
            let schema = query(g);
            params.extend(query_params(g, schema));
        }
        for (name, description, schema) in &op.headers {
            params.push(
                json!({"name": name, "in": "header", "description": description, "schema": schema}),
            );
        }
        let mut responses = Map::new();
        let (status, success) = match op.answer {
            Answer::Json(status, schema) => (
                status,
                json!({"description": "ok", "content": {"application/json": {"schema": schema(g)}}}),
            ),
            Answer::Located(status, schema) => (
                status,
                json!({"description": "ok", "content": {"application/json": {"schema": schema(g)}},
                       "headers": {"Location": {"description": "The new resource", "required": true, "schema": {"type": "string"}}}}),
            ),
            Answer::Empty(status) => (status, json!({"description": "done"})),
            Answer::EventStream => (
                200,
                json!({"description": "Server-Sent Events: `id` is the event's sequence, `event` its type, `data` a JSON object; ends after the run's terminal event", "content": {"text/event-stream": {"schema": sse_event()}}}),
            ),
            Answer::Text(media_type) => (
                200,
                json!({"description": "ok", "content": {media_type: {"schema": {"type": "string"}}}}),
            ),
        };
        responses.insert(status.to_string(), success);
        for (status, description, schema) in &op.also {
            let mut r = json!({"description": description, "content": {"application/json": {"schema": schema(g)}}});
            // Only an answer that names a resource carries its Location.
            let location = match status {
                201 | 202 => Some("The new resource"),
                300..=399 => Some("Where the resource is now"),
                _ => None,
            };
            if let Some(l) = location {
                r["headers"] = json!({"Location": {"description": l, "required": true, "schema": {"type": "string"}}});
            }
            responses.insert(status.to_string(), r);
        }
        for status in op.error_statuses(!path_names.is_empty()) {
            let mut r = json!({"description": reason(status), "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}});
            if status == 429 || status == 503 {
                r["headers"] = json!({"Retry-After": {"description": "Seconds to wait", "schema": {"type": "string"}}});
            }
            responses.insert(status.to_string(), r);
        }
        let mut operation = json!({
            "summary": op.summary,
            "operationId": operation_id(&method, path),
            "tags": [tag(path)],
            "parameters": params,
            "responses": responses,
        });
        operation["security"] = if op.auth {
            json!([{"bearer": []}])
        } else {
            json!([])
        };
        if let Some(body) = op.body {
            operation["requestBody"] =
                json!({"required": true, "content": {"application/json": {"schema": body(g)}}});
        }
        if !op.links.is_empty() {
            self.pending_links
                .push((path.to_owned(), method.clone(), status, op.links.clone()));
        }
        let entry = self
            .paths
            .entry(path.to_owned())
            .or_insert_with(|| json!({}));
        entry[method.as_str()] = operation;
    }

    /// Resolves each operation's `links` once every path is known.
    fn add_links(&mut self) {
        for (path, method, status, links) in std::mem::take(&mut self.pending_links) {
            let mut found = Map::new();
            for (prefix, field) in links {
                let item = format!("{prefix}/{{id}}");
                for (target, ops) in &self.paths {
                    if target != &item && !target.starts_with(&format!("{item}/")) {
                        continue;
                    }
                    for op in ops.as_object().into_iter().flat_map(|o| o.values()) {
                        let Some(id) = op["operationId"].as_str() else {
                            continue;
                        };
                        found.insert(
                            id.to_owned(),
                            json!({"operationId": id, "parameters": {"id": format!("$response.body#/{field}")}}),
                        );
                    }
                }
            }
            self.paths[&path][&method]["responses"][status.to_string()]["links"] =
                Value::Object(found);
        }
    }

    pub fn document(mut self) -> Value {
        self.add_links();
        let mut schemas = self
            .generator
            .take()
            .map(|mut g| g.take_definitions(true))
            .unwrap_or_default();
        schemas.insert("Error".into(), error_schema());
        let mut document = json!({
            "openapi": "3.1.0",
            "info": {
                "title": "Aiden API",
                "version": env!("CARGO_PKG_VERSION"),
                "description": "Graph-native Process / Tool / Service runtime. Every error answers in the `Error` shape; invariant IDs are in `details[].invariant`.",
            },
            "paths": self.paths,
            "components": {
                "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
                "schemas": schemas,
            }
        });
        portable::tidy(&mut document);
        document
    }
}

/// `post /v1/conversations/{id}/turns` → `post_v1_conversations_id_turns`.
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_owned();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        id.push('_');
        id.push_str(&seg.replace(['{', '}'], "").replace(['-', '.'], "_"));
    }
    id
}

/// The resource family: `/v1/service-templates/{id}` → `service-templates`.
fn tag(path: &str) -> String {
    match path.strip_prefix("/v1/") {
        Some(rest) => rest.split('/').next().unwrap_or("v1").to_owned(),
        None => "operations".into(),
    }
}

/// A query type's properties as `in: query` parameters.
fn query_params(g: &mut SchemaGenerator, schema: Schema) -> Vec<Value> {
    let value = resolve(g, schema.to_value());
    let required: Vec<String> = value
        .get("required")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default();
    let Some(props) = value.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, schema)| {
            let mut schema = without_null(schema.clone());
            let description = schema
                .as_object_mut()
                .and_then(|o| o.remove("description"));
            let mut p = json!({"name": name, "in": "query", "required": required.contains(name), "schema": schema});
            if let Some(d) = description {
                p["description"] = d;
            }
            p
        })
        .collect()
}

/// `["string", "null"]` → `"string"`: a query string has no null.
fn without_null(mut schema: Value) -> Value {
    if let Some(types) = schema.get("type").and_then(Value::as_array) {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        schema["type"] = if kept.len() == 1 {
            kept[0].clone()
        } else {
            Value::Array(kept)
        };
    }
    schema
}

/// The schema a `$ref` names (query types are described inline, not by reference).
fn resolve(g: &mut SchemaGenerator, v: Value) -> Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap_or_default();
            g.definitions().get(name).cloned().unwrap_or(v)
        }
        None => v,
    }
}

fn error_schema() -> Value {
    json!({
        "type": "object", "required": ["error"], "additionalProperties": false,
        "properties": {"error": {
            "type": "object", "required": ["code", "message", "requestId", "details"],
            "properties": {
                "code": {"type": "string", "enum": ["VALIDATION_ERROR", "UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "NOT_ALLOWED", "CONFLICT", "INVARIANT_VIOLATION", "PAYLOAD_TOO_LARGE", "QUOTA_EXCEEDED", "BUDGET_EXCEEDED", "RATE_LIMITED", "UNAVAILABLE", "OVERLOADED", "INTERNAL"]},
                "message": {"type": "string"},
                "requestId": {"type": "string"},
                "details": {"type": "array", "items": {
                    "type": "object", "required": ["message"],
                    "properties": {
                        "invariant": {"type": "string", "description": "The rule's ID, e.g. PROC-3"},
                        "path": {"type": "string", "description": "JSON pointer into the request"},
                        "message": {"type": "string"}
                    }
                }}
            }
        }}
    })
}

/// The stream's text, or one of its events as fields. Before OpenAPI 3.2 tools disagree on
/// what `schema` describes: generators read it as the whole body (a string), SSE-aware checkers
/// (schemathesis) as each event; this schema is true under both readings.
fn sse_event() -> Value {
    json!({"anyOf": [
        {"type": "string"},
        {"type": "object", "required": ["data"], "properties": {
            "id": {"type": "string"},
            "event": {"type": "string"},
            "data": {"type": "string", "contentMediaType": "application/json"},
            "retry": {"type": "integer", "minimum": 0}
        }}
    ]})
}
