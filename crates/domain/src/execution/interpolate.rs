//! Step-input interpolation with Handlebars in strict mode (PROC-5, PROC-6).
//!
//! - A template that is exactly one expression (`{{name}}`, `{{a.b}}`, `{{pluck rows "uuid"}}`,
//!   or the single-brace `{step.name}`) yields that expression's JSON value unchanged.
//! - Anything else renders to a string; `{{json x}}` embeds a value as JSON text.
//! - A missing variable is an error, never an empty string (strict mode).

use std::num::NonZeroUsize;
use std::sync::{Arc, LazyLock, Mutex};

use handlebars::{
    handlebars_helper, no_escape, Context, Handlebars, RenderContext, RenderError, Renderable,
    Template,
};
use lru::LruCache;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InterpolationError(pub String);

handlebars_helper!(json_helper: |v: Json| serde_json::to_string(v).unwrap_or_default());
handlebars_helper!(pluck_helper: |items: Json, key: str| pluck(items, key));

fn pluck(items: &Value, key: &str) -> Value {
    match items {
        Value::Array(list) => Value::Array(
            list.iter()
                .map(|item| item.get(key).cloned().unwrap_or(Value::Null))
                .collect(),
        ),
        other => other.get(key).cloned().unwrap_or(Value::Null),
    }
}

/// Rendered through [`compiled`] templates, which read the registry's strict mode, escape
/// function and helpers but not its template options (`prevent_indent`, `dev_mode`,
/// `recursive_lookup`): those must stay at their defaults here.
static ENGINE: LazyLock<Handlebars<'static>> = LazyLock::new(|| {
    let mut engine = Handlebars::new();
    engine.set_strict_mode(true);
    engine.register_escape_fn(no_escape);
    engine.register_helper("json", Box::new(json_helper));
    engine.register_helper("pluck", Box::new(pluck_helper));
    engine
});

/// Renders `template` over `vars` (a JSON object) to a JSON value: the value itself when the
/// template is one expression, otherwise the rendered string.
pub fn render_value(template: &str, vars: &Value) -> Result<Value, InterpolationError> {
    let template = normalize_seed_form(template);
    if let Some(expr) = sole_expression(&template) {
        // A bare path is passed as is; a helper call becomes a subexpression.
        let wrapped = if expr.contains(char::is_whitespace) {
            format!("{{{{json ({expr})}}}}")
        } else {
            format!("{{{{json {expr}}}}}")
        };
        let text = render_raw(&wrapped, vars)?;
        return serde_json::from_str(&text)
            .map_err(|e| InterpolationError(format!("expression `{expr}`: {e}")));
    }
    render_raw(&template, vars).map(Value::String)
}

/// Renders `template` to a string (a whole-template expression of a string value renders
/// as the string itself; other values as JSON text).
pub fn render_string(template: &str, vars: &Value) -> Result<String, InterpolationError> {
    render_raw(&normalize_seed_form(template), vars)
}

/// Renders every string inside `value` (objects and arrays recursively) with [`render_value`].
pub fn render_tree(value: &Value, vars: &Value) -> Result<Value, InterpolationError> {
    Ok(match value {
        Value::String(s) => render_value(s, vars)?,
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| render_tree(i, vars))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), render_tree(v, vars)?)))
                .collect::<Result<_, InterpolationError>>()?,
        ),
        other => other.clone(),
    })
}

/// A step `condition`: runs unless it renders empty, `false` or `0`.
pub fn condition_holds(template: &str, vars: &Value) -> Result<bool, InterpolationError> {
    let rendered = render_string(template, vars)?;
    let text = rendered.trim();
    Ok(!(text.is_empty() || text.eq_ignore_ascii_case("false") || text == "0"))
}

/// Compiled templates by their text. A Process's templates are few and rendered for every job
/// and pass; parsing one again each time was about 5 % of a worker's CPU.
static COMPILED: LazyLock<Mutex<LruCache<String, Arc<Template>>>> =
    LazyLock::new(|| Mutex::new(LruCache::new(NonZeroUsize::new(1024).expect("not zero"))));

fn compiled(template: &str) -> Result<Arc<Template>, RenderError> {
    let cache = || {
        COMPILED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    if let Some(hit) = cache().get(template) {
        return Ok(hit.clone());
    }
    // Compiled outside the lock: two callers may compile one text side by side, harmlessly.
    let compiled = Arc::new(Template::compile(template)?);
    cache().put(template.to_owned(), compiled.clone());
    Ok(compiled)
}

fn render_raw(template: &str, vars: &Value) -> Result<String, InterpolationError> {
    // Text with no expression renders as itself: not parsed, and not cached.
    if !template.contains("{{") {
        return Ok(template.to_owned());
    }
    let render = || {
        let compiled = compiled(template)?;
        let context = Context::wraps(vars)?;
        // Declared after what it borrows, so that it is dropped first.
        let mut state = RenderContext::new(None);
        compiled.renders(&ENGINE, &context, &mut state)
    };
    render().map_err(|e| InterpolationError(describe(&e)))
}

fn describe(error: &handlebars::RenderError) -> String {
    use handlebars::RenderErrorReason as R;
    match error.reason() {
        R::MissingVariable(Some(name)) => format!("missing variable `{name}`"),
        R::MissingVariable(None) => "missing variable".to_owned(),
        R::ParamNotFoundForName(helper, _) | R::ParamNotFoundForIndex(helper, _) => {
            format!(
                "missing variable in an argument of `{}`",
                helper.trim_end_matches("_helper")
            )
        }
        R::TemplateError(t) => format!("bad template: {}", t.reason()),
        other => other.to_string(),
    }
}

/// The inside of a template that is exactly one plain `{{ … }}` expression (not a block,
/// comment, partial or `json` call), trimmed.
fn sole_expression(template: &str) -> Option<&str> {
    let t = template.trim();
    let inner = t
        .strip_prefix("{{{")
        .and_then(|r| r.strip_suffix("}}}"))
        .or_else(|| t.strip_prefix("{{").and_then(|r| r.strip_suffix("}}")))?
        .trim();
    let first = inner.split_whitespace().next()?;
    let plain = !inner.contains("{{")
        && !inner.contains("}}")
        && !inner.starts_with(['#', '/', '!', '>', '^', '~', '&'])
        && first != "json"
        && first != "else";
    plain.then_some(inner)
}

/// The single-brace `{step.name}` means `{{name}}`; double braces are left alone.
fn normalize_seed_form(template: &str) -> String {
    const OPEN: &str = "{step.";
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find(OPEN) {
        let preceded_by_brace = rest[..at].ends_with('{');
        let after = &rest[at + OPEN.len()..];
        let name_len = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(after.len());
        let closes = after[name_len..].starts_with('}') && !after[name_len..].starts_with("}}");
        if preceded_by_brace || name_len == 0 || !closes {
            out.push_str(&rest[..at + OPEN.len()]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        out.push_str("{{");
        out.push_str(&after[..name_len]);
        out.push_str("}}");
        rest = &after[name_len + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars() -> Value {
        json!({"q": "hello", "n": 3, "obj": {"a": [1, 2]}, "rows": [{"uuid": "u1"}, {"uuid": "u2"}],
               "nothing": null, "flag": false})
    }

    #[test]
    fn sole_expression_passes_the_json_value_unchanged() {
        assert_eq!(
            render_value("{{obj}}", &vars()).unwrap(),
            json!({"a": [1, 2]})
        );
        assert_eq!(render_value(" {{ n }} ", &vars()).unwrap(), json!(3));
        assert_eq!(render_value("{{obj.a}}", &vars()).unwrap(), json!([1, 2]));
        assert_eq!(render_value("{{nothing}}", &vars()).unwrap(), Value::Null);
        assert_eq!(
            render_value("{step.obj}", &vars()).unwrap(),
            json!({"a": [1, 2]})
        );
        assert_eq!(
            render_value("{{pluck rows \"uuid\"}}", &vars()).unwrap(),
            json!(["u1", "u2"])
        );
    }

    #[test]
    fn mixed_templates_render_strings_and_json_embeds() {
        assert_eq!(
            render_value("q={{q}} n={{n}}", &vars()).unwrap(),
            json!("q=hello n=3")
        );
        assert_eq!(
            render_value("data: {{json obj}}", &vars()).unwrap(),
            json!("data: {\"a\":[1,2]}")
        );
        assert_eq!(
            render_value("{{json obj}}", &vars()).unwrap(),
            json!("{\"a\":[1,2]}")
        );
        assert_eq!(render_string("<{{q}}>", &vars()).unwrap(), "<hello>");
        assert_eq!(render_string("x {step.q} y", &vars()).unwrap(), "x hello y");
    }

    #[test]
    fn a_missing_variable_is_an_error_never_empty() {
        let err = render_value("{{missing}}", &vars()).unwrap_err();
        assert!(err.0.contains("missing"), "{err}");
        assert!(render_value("a {{missing}} b", &vars()).is_err());
        assert!(render_value("{{json missing}}", &vars()).is_err());
        assert!(render_value("{{obj.nope}}", &vars()).is_err());
    }

    #[test]
    fn conditions_follow_the_contract() {
        assert!(condition_holds("{{#if q}}true{{/if}}", &vars()).unwrap());
        assert!(!condition_holds("{{#if nothing}}true{{/if}}", &vars()).unwrap());
        assert!(!condition_holds("{{flag}}", &vars()).unwrap());
        assert!(!condition_holds(" 0 ", &vars()).unwrap());
        assert!(condition_holds("{{n}}", &vars()).unwrap());
    }

    #[test]
    fn a_compiled_template_renders_each_call_over_its_own_variables() {
        let template = "hello {{name}} #{{n}}";
        let first = render_value(template, &json!({"name": "ada", "n": 1})).unwrap();
        let second = render_value(template, &json!({"name": "bo", "n": 2})).unwrap();
        assert_eq!(first, json!("hello ada #1"));
        assert_eq!(second, json!("hello bo #2"));
        let missing = render_value(template, &json!({"name": "cy"})).unwrap_err();
        assert_eq!(missing.0, "missing variable `n`");
        for _ in 0..2 {
            let bad = render_string("{{#if x}}open", &json!({"x": true})).unwrap_err();
            assert!(bad.0.starts_with("bad template: "), "{}", bad.0);
        }
    }

    #[test]
    fn trees_render_leaf_by_leaf() {
        let tree = json!({"query": "{{q}}", "list": ["{{n}}", 4], "fixed": true});
        assert_eq!(
            render_tree(&tree, &vars()).unwrap(),
            json!({"query": "hello", "list": [3, 4], "fixed": true})
        );
    }
}
