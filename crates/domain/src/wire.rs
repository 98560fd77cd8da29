//! JSON Schema fragments for request fields whose rules the domain checks by hand, so the
//! OpenAPI document states the same limits the server enforces (a name is 1-200 characters
//! and not blank, content is not blank, ...).

use schemars::{json_schema, Schema, SchemaGenerator};

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

/// Message content: not blank, at most `MAX_CONTENT_CHARS`.
pub fn content(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "minLength": 1, "maxLength": crate::conversation::MAX_CONTENT_CHARS, "pattern": NOT_BLANK})
}

pub fn content_or_null(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"anyOf": [
        {"type": "string", "minLength": 1, "maxLength": crate::conversation::MAX_CONTENT_CHARS, "pattern": NOT_BLANK},
        {"type": "null"}
    ]})
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
