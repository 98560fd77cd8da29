//! Which variables a Handlebars template (or a Cypher query) uses, for TOOL-5 and PROC-6.
//!
//! A deliberately small scanner over `{{ … }}` rather than the handlebars crate's AST, whose
//! element types are not a stable public API. It knows the helpers we register plus the
//! built-ins, skips literals, `this`, `@data` and `../` paths, and does not look inside
//! `#each`/`#with` blocks (whose inner names are relative to the item). The single-brace
//! `{step.name}` form counts as the variable `name`.

use std::collections::BTreeSet;

const HELPERS: &[&str] = &[
    "if", "unless", "each", "with", "lookup", "log", "json", "eq", "ne", "gt", "gte", "lt", "lte",
    "and", "or", "not", "len", "else", "pluck",
];
const SCOPED_BLOCKS: &[&str] = &["each", "with"];

/// Root variable names a template refers to.
pub fn template_variables(template: &str) -> BTreeSet<String> {
    let mut vars = BTreeSet::new();
    let mut depth_in_scope = 0usize;
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let inner = after[..end]
            .trim_matches(|c| c == '{' || c == '}' || c == '~' || c == '&')
            .trim();
        rest = &after[end + 2..];
        if inner.starts_with('!') {
            continue; // comment
        }
        if let Some(name) = inner.strip_prefix('/') {
            if SCOPED_BLOCKS.contains(&name.trim()) {
                depth_in_scope = depth_in_scope.saturating_sub(1);
            }
            continue;
        }
        let (opens_block, body) = match inner.strip_prefix('#').or_else(|| inner.strip_prefix('^'))
        {
            Some(b) => (true, b),
            None => (false, inner),
        };
        let mut tokens = body.split_whitespace();
        let Some(first) = tokens.next() else { continue };
        let is_helper = HELPERS.contains(&first);
        if depth_in_scope == 0 {
            if !is_helper {
                push_path(&mut vars, first);
            }
            for token in tokens {
                let value = token.split_once('=').map_or(token, |(_, v)| v);
                push_path(&mut vars, value.trim_matches(|c| c == '(' || c == ')'));
            }
        }
        if opens_block && SCOPED_BLOCKS.contains(&first) {
            depth_in_scope += 1;
        }
    }
    vars.extend(seed_step_variables(template));
    vars
}

fn push_path(vars: &mut BTreeSet<String>, token: &str) {
    if token.is_empty()
        || token.starts_with('"')
        || token.starts_with('\'')
        || token.starts_with('@')
        || token.starts_with("..")
        || token.starts_with("this")
        || token.parse::<f64>().is_ok()
        || matches!(token, "true" | "false" | "null" | "undefined" | "else")
        || HELPERS.contains(&token)
    {
        return;
    }
    let root = token.split(['.', '[', '/']).next().unwrap_or(token);
    if !root.is_empty() {
        vars.insert(root.to_owned());
    }
}

/// `{step.name}` or `{step.name.path}` (the single-brace form) uses the variable
/// `name`.
fn seed_step_variables(template: &str) -> BTreeSet<String> {
    let mut vars = BTreeSet::new();
    let mut rest = template;
    while let Some(start) = rest.find("{step.") {
        let after = &rest[start + 6..];
        let reference: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
            .collect();
        let name = reference.split('.').next().unwrap_or_default();
        if !name.is_empty() && after[reference.len()..].starts_with('}') {
            vars.insert(name.to_owned());
        }
        rest = &after[reference.len()..];
    }
    vars
}

/// True when the template is exactly one variable reference, so its JSON value passes unchanged.
pub fn sole_variable(template: &str) -> Option<String> {
    let t = template.trim();
    let inner = t
        .strip_prefix("{{")
        .and_then(|s| s.strip_suffix("}}"))
        .or_else(|| t.strip_prefix("{step.").and_then(|s| s.strip_suffix('}')))?;
    let inner = inner.trim();
    let valid = !inner.is_empty()
        && inner
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    valid.then(|| inner.split('.').next().unwrap_or(inner).to_owned())
}

/// Whether a string is a template at all (else it is a literal).
pub fn is_templated(value: &str) -> bool {
    value.contains("{{") || !seed_step_variables(value).is_empty()
}

/// `$param` names in a Cypher query, skipping string literals and comments.
pub fn cypher_parameters(query: &str) -> BTreeSet<String> {
    let mut params = BTreeSet::new();
    let chars: Vec<char> = query.chars().collect();
    let mut i = 0;
    let mut quote: Option<char> = None;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(_) if c == '\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' || c == '`' => quote = Some(c),
            None if c == '/' && chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            None if c == '$' => {
                let name: String = chars[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                    .collect();
                if !name.is_empty() {
                    i += name.len();
                    params.insert(name);
                }
            }
            None => {}
        }
        i += 1;
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn finds_plain_helper_and_block_variables() {
        assert_eq!(
            template_variables("{{instruction}}\n\n{{content}}"),
            set(&["content", "instruction"])
        );
        assert_eq!(
            template_variables("{{json searchResults}}"),
            set(&["searchResults"])
        );
        assert_eq!(
            template_variables("{{#if a.b}}x{{else}}{{c}}{{/if}}"),
            set(&["a", "c"])
        );
        assert_eq!(
            template_variables("{{#each items}}{{name}}{{/each}}{{z}}"),
            set(&["items", "z"])
        );
        assert_eq!(
            template_variables("{{{raw}}} {{! note}} {{lookup m \"k\"}}"),
            set(&["m", "raw"])
        );
        assert_eq!(
            template_variables("use {step.searchResults} here"),
            set(&["searchResults"])
        );
        assert_eq!(
            template_variables("{step.a.body.x} and {step.b}"),
            set(&["a", "b"])
        );
    }

    #[test]
    fn sole_variable_passes_json_through() {
        assert_eq!(sole_variable("{{userMessage}}"), Some("userMessage".into()));
        assert_eq!(
            sole_variable("{step.searchResults}"),
            Some("searchResults".into())
        );
        assert_eq!(sole_variable("x {{a}}"), None);
        assert_eq!(sole_variable("{{json a}}"), None);
    }

    #[test]
    fn cypher_params_skip_strings_and_comments() {
        let q = "MATCH (n:Entity) WHERE n.name = $name AND n.x = '$notme' // $nor\nRETURN n LIMIT $limit";
        assert_eq!(cypher_parameters(q), set(&["limit", "name"]));
    }
}
