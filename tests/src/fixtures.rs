//! Valid definitions to start from; tests change one thing to break one rule.

use serde_json::{json, Value};

use crate::{unique, Client};

pub fn rest_schema() -> Value {
    json!({"type": "object", "required": ["endpoint"], "properties": {"endpoint": {"type": "string"}, "timeoutMs": {"type": "integer"}}})
}

/// A `rest_api` Service body (no secret required).
pub fn rest_service_body(shared: bool) -> Value {
    json!({"id": unique("svc"), "name": "REST", "type": "rest_api", "protocol": "http",
           "connectionSchema": rest_schema(), "requiresSecret": false, "enabled": true, "shared": shared})
}

/// A `neo4j_graph` Service body that requires a Secret.
pub fn graph_service_body() -> Value {
    json!({"id": unique("svc"), "name": "Graph", "type": "neo4j_graph", "protocol": "bolt",
           "connectionSchema": {"type": "object", "required": ["endpoint", "database"],
               "properties": {"endpoint": {"type": "string"}, "database": {"type": "string"}}},
           "requiresSecret": true})
}

/// A `rest_api` Tool body on `service_id` using `{{query}}`.
pub fn rest_tool_body(service_id: &str) -> Value {
    json!({"id": unique("tool"), "name": "Search", "serviceId": service_id,
           "connectionParams": {"endpoint": "http://127.0.0.1:18080"},
           "operation": {"type": "rest_api", "method": "GET", "path": "/echo?q={{query}}"},
           "inputSchema": {"type": "object", "required": ["query"], "properties": {"query": {"type": "string"}}},
           "outputSchema": {"type": "object"}, "shared": true})
}

pub async fn create(client: &Client, collection: &str, body: Value) -> Value {
    let reply = client.post(&format!("/v1/{collection}"), body).await;
    reply.ok(201).clone()
}

pub async fn rest_service(client: &Client, shared: bool) -> String {
    create(client, "services", rest_service_body(shared)).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub async fn rest_tool(client: &Client, service_id: &str) -> String {
    create(client, "tools", rest_tool_body(service_id)).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub async fn secret(client: &Client, value: &str) -> String {
    let body = json!({"id": unique("sec"), "name": "key", "type": "api_key", "value": value});
    create(client, "secrets", body).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A one-step Process calling `tool_id` with `{{q}}`.
pub fn process_body(tool_id: &str) -> Value {
    json!({"id": unique("proc"), "name": "P", "initialContext": ["q"],
           "steps": [{"id": "s1", "tool": tool_id, "inputs": {"query": "{{q}}"}, "output": {"variable": "r", "required": true}}],
           "outputTemplate": "{{json r}}", "shared": true})
}
