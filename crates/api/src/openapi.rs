//! The OpenAPI 3.1 document, written by the route table as it registers each route.

use serde_json::{json, Map, Value};

/// One operation's documentation.
pub struct Op {
    summary: &'static str,
    status: u16,
    auth: bool,
    body: bool,
    list: bool,
}

impl Op {
    /// No auth, no body (ops routes).
    pub fn open(summary: &'static str, status: u16) -> Self {
        Self {
            summary,
            status,
            auth: false,
            body: false,
            list: false,
        }
    }
    /// Authenticated, no body.
    pub fn read(summary: &'static str, status: u16) -> Self {
        Self {
            summary,
            status,
            auth: true,
            body: false,
            list: false,
        }
    }
    /// Authenticated, JSON body.
    pub fn body(summary: &'static str, status: u16) -> Self {
        Self {
            summary,
            status,
            auth: true,
            body: true,
            list: false,
        }
    }
    /// Authenticated list with paging.
    pub fn list(summary: &'static str) -> Self {
        Self {
            summary,
            status: 200,
            auth: true,
            body: false,
            list: true,
        }
    }
}

#[derive(Default)]
pub struct Spec {
    paths: Map<String, Value>,
}

impl Spec {
    pub fn add(&mut self, method: &str, path: &str, op: Op) {
        let method = method.to_ascii_lowercase();
        let mut params: Vec<Value> = path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        if op.list {
            params.push(json!({"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}}));
            params.push(json!({"name": "cursor", "in": "query", "schema": {"type": "string"}}));
            params.push(
                json!({"name": "includeArchived", "in": "query", "schema": {"type": "boolean"}}),
            );
        }
        let success = if op.status == 204 {
            json!({"description": "done"})
        } else if op.list {
            json!({"description": "a page", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Page"}}}})
        } else {
            json!({"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}})
        };
        let mut operation = json!({
            "summary": op.summary,
            "operationId": format!("{method}{}", path.replace(['/', '{', '}', '-', '.'], "_")),
            "parameters": params,
            "responses": {op.status.to_string(): success, "default": {"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}},
        });
        if op.auth {
            operation["security"] = json!([{"bearer": []}]);
        }
        if op.body {
            operation["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"type": "object"}}}});
        }
        let entry = self
            .paths
            .entry(path.to_owned())
            .or_insert_with(|| json!({}));
        entry[method.as_str()] = operation;
    }

    pub fn document(&self) -> Value {
        json!({
            "openapi": "3.1.0",
            "info": {"title": "Aiden API", "version": env!("CARGO_PKG_VERSION")},
            "paths": self.paths,
            "components": {
                "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
                "schemas": {
                    "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object",
                        "required": ["code", "message", "requestId", "details"],
                        "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "requestId": {"type": "string"},
                            "details": {"type": "array", "items": {"type": "object", "properties": {
                                "invariant": {"type": "string"}, "path": {"type": "string"}, "message": {"type": "string"}}}}}}}},
                    "Page": {"type": "object", "required": ["items", "nextCursor"], "properties": {
                        "items": {"type": "array", "items": {"type": "object"}}, "nextCursor": {"type": ["string", "null"]}}}
                }
            }
        })
    }
}
