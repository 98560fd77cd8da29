//! JSON Schema checks: schemas against the meta-schema, instances against schemas.
//! Remote `$ref` resolution is compiled out (no network or file access from a rule).

use serde_json::Value;

use crate::Violation;

const KNOWN_DRAFTS: &[&str] = &[
    "http://json-schema.org/draft-04/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
];

/// A schema must be valid per its meta-schema and describe an object.
pub fn check_object_schema(invariant: &'static str, path: &str, schema: &Value) -> Vec<Violation> {
    if !schema.is_object() {
        return vec![Violation::rule(
            invariant,
            path,
            "must be a JSON Schema object",
        )];
    }
    // The meta-schema lookup panics on a `$schema` it does not know, so vet it first.
    if let Some(declared) = schema.get("$schema") {
        let known = declared
            .as_str()
            .is_some_and(|d| KNOWN_DRAFTS.contains(&d.trim_end_matches('#')));
        if !known {
            let message = "unsupported $schema: use draft 4, 6, 7, 2019-09 or 2020-12";
            return vec![Violation::rule(
                invariant,
                format!("{path}/$schema"),
                message,
            )];
        }
    }
    if let Err(e) = jsonschema::meta::validate(schema) {
        return vec![Violation::rule(
            invariant,
            path,
            format!("not a valid JSON Schema: {e}"),
        )];
    }
    if let Err(e) = jsonschema::validator_for(schema) {
        return vec![Violation::rule(
            invariant,
            path,
            format!("not a usable JSON Schema: {e}"),
        )];
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => Vec::new(),
        _ => vec![Violation::rule(
            invariant,
            format!("{path}/type"),
            "must be \"object\"",
        )],
    }
}

/// Every way `instance` fails `schema`, each pointing at the offending place under `path`.
/// An unusable schema is reported as one violation rather than silently passing.
pub fn check_instance(
    invariant: &'static str,
    path: &str,
    schema: &Value,
    instance: &Value,
) -> Vec<Violation> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => {
            return vec![Violation::rule(
                invariant,
                path,
                format!("schema is not usable: {e}"),
            )]
        }
    };
    validator
        .iter_errors(instance)
        .map(|e| {
            Violation::rule(
                invariant,
                format!("{path}{}", e.instance_path),
                e.to_string(),
            )
        })
        .collect()
}

/// The property names an object schema declares.
pub fn property_names(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The `required` list of an object schema.
pub fn required_names(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rejects_invalid_and_non_object_schemas() {
        assert!(check_object_schema("SVC-2", "/s", &json!({"type": "object"})).is_empty());
        assert!(!check_object_schema("SVC-2", "/s", &json!({"type": "nope"})).is_empty());
        assert!(!check_object_schema("SVC-2", "/s", &json!({"type": "string"})).is_empty());
        assert!(!check_object_schema("SVC-2", "/s", &json!([1])).is_empty());
        assert!(!check_object_schema(
            "SVC-2",
            "/s",
            &json!({"type": "object", "$schema": "http://nope/"})
        )
        .is_empty());
        let draft7 =
            json!({"type": "object", "$schema": "http://json-schema.org/draft-07/schema#"});
        assert!(check_object_schema("SVC-2", "/s", &draft7).is_empty());
    }

    #[test]
    fn instance_errors_carry_the_pointer() {
        let schema = json!({"type": "object", "properties": {"endpoint": {"type": "string"}}, "required": ["endpoint"]});
        let v = check_instance(
            "TOOL-1",
            "/connectionParams",
            &schema,
            &json!({"endpoint": 5}),
        );
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].path, "/connectionParams/endpoint");
    }
}
