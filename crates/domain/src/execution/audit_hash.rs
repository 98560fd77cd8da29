//! The audit input hash, so a step run can prove what it was given without storing it: SHA-256,
//! lowercase hex, over canonical JSON (object keys sorted) after every PII/secret-looking key's
//! value is replaced by `[REDACTED]`, so the raw input of a secret-bearing call is never what
//! is hashed or stored.

use serde_json::Value;
use sha2::{Digest, Sha256};

pub const REDACTED: &str = "[REDACTED]";

/// Key fragments (case-insensitive) that mark a value as personal or secret: its value is
/// replaced by [`REDACTED`] before hashing.
const EXCLUDED: &[&str] = &[
    "password",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "credential",
    "email",
    "phone",
    "address",
    "ssn",
    "creditcard",
    "credit_card",
    "credit-card",
    "_key",
];

pub fn is_excluded_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    EXCLUDED.iter().any(|p| {
        if *p == "_key" {
            lower.ends_with(p)
        } else {
            lower.contains(p)
        }
    })
}

/// Copy of `value` with excluded keys' values replaced by `[REDACTED]`, at any depth.
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_excluded_key(k) {
                        Value::String(REDACTED.to_owned())
                    } else {
                        redact(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

/// Canonical JSON: compact, object keys sorted by code point, regardless of map ordering.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

pub fn input_hash(input: &Value) -> String {
    hex::encode(Sha256::digest(canonical_json(&redact(input)).as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hash_ignores_key_order_and_redacts_pii() {
        let a = json!({"query": "x", "apiKey": "sk-1", "nested": {"email": "a@b", "n": 1}});
        let b = json!({"nested": {"n": 1, "email": "other@b"}, "apiKey": "sk-2", "query": "x"});
        assert_eq!(input_hash(&a), input_hash(&b));
        assert_ne!(input_hash(&a), input_hash(&json!({"query": "y"})));
        assert_eq!(input_hash(&a).len(), 64);
        let redacted = canonical_json(&redact(&a));
        assert!(
            !redacted.contains("sk-1") && !redacted.contains("a@b"),
            "{redacted}"
        );
        assert_eq!(
            redacted,
            r#"{"apiKey":"[REDACTED]","nested":{"email":"[REDACTED]","n":1},"query":"x"}"#
        );
    }

    #[test]
    fn exclusion_patterns_follow_the_standard() {
        for key in [
            "password",
            "client_secret",
            "accessToken",
            "api-key",
            "x_key",
            "SSN",
        ] {
            assert!(is_excluded_key(key), "{key}");
        }
        for key in ["query", "name", "keyword", "monkey"] {
            assert!(!is_excluded_key(key), "{key}");
        }
    }
}
