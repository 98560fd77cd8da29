//! JSON Schema fragments for request fields whose rules the domain checks by hand, so the
//! OpenAPI document states the same limits the server enforces (a name is 1-200 characters
//! and not blank, content is not blank, ...).

use schemars::{json_schema, Schema, SchemaGenerator};
use serde_json::{json, Value};

/// Contains a character that is not whitespace (`char::is_whitespace`, i.e. Unicode
/// White_Space): what `trim().is_empty()` refuses.
pub const NOT_BLANK: &str =
    "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";

/// Names: 1-200 characters, not blank.
pub const MAX_NAME_CHARS: usize = 200;

pub fn name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS, "pattern": NOT_BLANK})
}

pub fn name_or_null(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"anyOf": [
        {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS, "pattern": NOT_BLANK},
        {"type": "null"}
    ]})
}

/// Message content: not blank, at most `MAX_CONTENT_CHARS`. The pattern sits in an `allOf`
/// of its own: the same schema, but schemathesis (4.32) cannot build a string at a 200,000
/// `maxLength` boundary that also matches a pattern beside it, and sends `0` instead.
fn content_string() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": crate::conversation::MAX_CONTENT_CHARS,
           "allOf": [{"pattern": NOT_BLANK}]})
}

pub fn content(_: &mut SchemaGenerator) -> Schema {
    Schema::try_from(content_string()).expect("an object is a schema")
}

pub fn content_or_null(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"anyOf": [content_string(), {"type": "null"}]})
}

/// A Secret's value: 1-`MAX_VALUE_CHARS` characters.
pub fn secret_value(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "minLength": 1, "maxLength": crate::secret::MAX_VALUE_CHARS, "writeOnly": true})
}

pub fn secret_value_or_null(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"anyOf": [
        {"type": "string", "minLength": 1, "maxLength": crate::secret::MAX_VALUE_CHARS},
        {"type": "null"}
    ], "writeOnly": true})
}

// Rules across fields. They are stated as a `not` (the combinations the server refuses) rather
// than as `oneOf` branches beside `properties`: the same constraint, and client generators
// (openapi-python-client) still see one object with all its fields instead of a union of
// partial objects. A field counts as given when it is present and not null, as serde reads it.

fn given(field: &str) -> Value {
    json!({"required": [field], "properties": {field: {"not": {"type": "null"}}}})
}

fn not_given(field: &str) -> Value {
    json!({"not": given(field)})
}

fn refuse(schema: &mut Schema, combinations: Value) {
    schema.insert("not".into(), json!({"anyOf": combinations}));
}

/// `NewAlternative`: exactly one of `content` and `processId`.
pub fn content_xor_process(schema: &mut Schema) {
    refuse(
        schema,
        json!([
            {"allOf": [given("content"), given("processId")]},
            {"allOf": [not_given("content"), not_given("processId")]}
        ]),
    );
}

/// `NewTool`: a `toolTemplateId`, or the whole structure, never both.
pub fn template_xor_tool_structure(schema: &mut Schema) {
    let structure = ["operation", "inputSchema", "outputSchema"];
    refuse(
        schema,
        json!([
            {"allOf": [given("toolTemplateId"), {"anyOf": structure.map(given)}]},
            {"allOf": [not_given("toolTemplateId"), {"anyOf": structure.map(not_given)}]}
        ]),
    );
}

/// `NewService`: a `serviceTemplateId`, or the whole structure (both together is SVC-6, a 422).
pub fn template_or_service_structure(schema: &mut Schema) {
    let structure = ["type", "protocol", "connectionSchema"];
    refuse(
        schema,
        json!([{"allOf": [not_given("serviceTemplateId"), {"anyOf": structure.map(not_given)}]}]),
    );
}

/// `Step`: a Tool step's `execution.timeout` is at most `TOOL_MAX_TIMEOUT_MS`; only a step that
/// calls a Process may wait up to `PROCESS_MAX_TIMEOUT_MS` (the field's own range).
pub fn tool_step_timeout(schema: &mut Schema) {
    let too_long = json!({"required": ["execution"], "properties": {"execution": {
        "required": ["timeout"],
        "properties": {"timeout": {"type": "integer", "minimum": crate::process::TOOL_MAX_TIMEOUT_MS + 1}}
    }}});
    refuse(schema, json!([{"allOf": [not_given("process"), too_long]}]));
}

/// `agent.approvals`: tool id → the capability to approve (1-64 of `A-Za-z0-9._:-`).
pub fn approvals(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "propertyNames": {"pattern": "^[A-Za-z0-9._-]{1,128}$"},
        "additionalProperties": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,64}$"}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pattern's class is exactly the characters `trim` removes.
    #[test]
    fn not_blank_matches_what_trim_keeps() {
        let class: Vec<char> = (0..=0x3000u32)
            .filter_map(char::from_u32)
            .filter(|c| c.is_whitespace())
            .collect();
        for c in class {
            let escaped = format!("\\u{:04x}", c as u32);
            let literal = match c {
                '\t' => "\\t".to_owned(),
                '\n' => "\\n".to_owned(),
                '\x0c' => "\\f".to_owned(),
                '\r' => "\\r".to_owned(),
                ' ' => " ".to_owned(),
                _ => escaped.clone(),
            };
            let in_range = ('\u{2000}'..='\u{200a}').contains(&c);
            assert!(
                in_range || NOT_BLANK.contains(&literal),
                "{escaped} is whitespace but not in NOT_BLANK"
            );
        }
    }
}
