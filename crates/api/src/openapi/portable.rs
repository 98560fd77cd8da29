//! Passes over the generated document that keep its meaning and make it readable by more
//! tools: integer formats as bounds, `true` schemas as `{}`, and tagged enum variants as named
//! components (openapi-python-client cannot name an inline object inside an inline variant).

use serde_json::{json, Map, Value};

pub(super) fn tidy(document: &mut Value) {
    bound_integers(document);
    no_boolean_schemas(document);
    if let Some(schemas) = document
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        name_tagged_variants(schemas);
    }
}

/// `Operation = oneOf[{type: const "rest_api", ...}, ...]` → `oneOf[{$ref: RestApiOperation}, ...]`
/// with `RestApiOperation` a component of its own: same schema, a name clients can use.
fn name_tagged_variants(schemas: &mut Map<String, Value>) {
    let taken: Vec<String> = schemas.keys().cloned().collect();
    let mut named = Vec::new();
    for (parent, schema) in schemas.iter_mut() {
        let Some(variants) = schema.get_mut("oneOf").and_then(Value::as_array_mut) else {
            continue;
        };
        for variant in variants.iter_mut() {
            let Some(tag) = variant
                .pointer("/properties/type/const")
                .and_then(Value::as_str)
            else {
                continue;
            };
            let name = format!("{}{parent}", pascal(tag));
            if taken.contains(&name) {
                continue;
            }
            let body = std::mem::replace(
                variant,
                json!({"$ref": format!("#/components/schemas/{name}")}),
            );
            named.push((name, body));
        }
    }
    schemas.extend(named);
}

/// `graph_query` → `GraphQuery`.
fn pascal(tag: &str) -> String {
    tag.split(['_', '-', '.'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// An integer `format` (`uint32`, `int64`, ...) as the bounds a client can check: what the
/// Rust type can hold, which is what the server accepts.
fn bound_integers(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let range: Option<(Value, Value)> = match map.get("format").and_then(Value::as_str) {
                Some("uint8") => Some((0.into(), u8::MAX.into())),
                Some("uint16") => Some((0.into(), u16::MAX.into())),
                Some("uint32") => Some((0.into(), u32::MAX.into())),
                Some("uint64" | "uint") => Some((0.into(), u64::MAX.into())),
                Some("int8") => Some((i8::MIN.into(), i8::MAX.into())),
                Some("int16") => Some((i16::MIN.into(), i16::MAX.into())),
                Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
                Some("int64" | "int") => Some((i64::MIN.into(), i64::MAX.into())),
                _ => None,
            };
            if let Some((min, max)) = range {
                let keep_higher = |old: Option<&Value>, new: Value| match old {
                    Some(o) if o.as_f64() > new.as_f64() => o.clone(),
                    _ => new,
                };
                let keep_lower = |old: Option<&Value>, new: Value| match old {
                    Some(o) if o.as_f64() < new.as_f64() => o.clone(),
                    _ => new,
                };
                let min = keep_higher(map.get("minimum"), min);
                let max = keep_lower(map.get("maximum"), max);
                map.insert("minimum".into(), min);
                map.insert("maximum".into(), max);
            }
            map.values_mut().for_each(bound_integers);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integers),
        _ => {}
    }
}

/// The schema `true` ("anything", e.g. a `serde_json::Value` field) as `{}`: the same schema,
/// in the form generators that predate JSON Schema 2020-12 (openapi-python-client) can read.
fn no_boolean_schemas(v: &mut Value) {
    const ONE: [&str; 4] = ["items", "not", "contains", "propertyNames"];
    const MAP: [&str; 3] = ["properties", "patternProperties", "schemas"];
    const LIST: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];
    let anything = |s: &mut Value| {
        if *s == Value::Bool(true) {
            *s = json!({});
        }
    };
    match v {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                match (key.as_str(), child) {
                    (k, s) if ONE.contains(&k) => anything(s),
                    (k, Value::Object(m)) if MAP.contains(&k) => m.values_mut().for_each(anything),
                    (k, Value::Array(a)) if LIST.contains(&k) => a.iter_mut().for_each(anything),
                    _ => {}
                }
            }
            map.values_mut().for_each(no_boolean_schemas);
        }
        Value::Array(items) => items.iter_mut().for_each(no_boolean_schemas),
        _ => {}
    }
}
