//! Token estimates and budgets (EXEC-3 `output.tokenBudget`, the Process `tokenBudget`, WM-2).
//!
//! The estimate is deliberately provider-neutral: one token per four characters of the value's
//! text (a string counts its characters, anything else its compact JSON), rounded up. That is
//! the usual rule of thumb for English with BPE tokenizers and never needs a model's vocabulary.

use serde_json::Value;

pub const CHARS_PER_TOKEN: usize = 4;

pub fn estimate_text_tokens(text: &str) -> u64 {
    text.chars().count().div_ceil(CHARS_PER_TOKEN) as u64
}

pub fn estimate_tokens(value: &Value) -> u64 {
    match value {
        Value::Null => 0,
        Value::String(s) => estimate_text_tokens(s),
        other => estimate_text_tokens(&other.to_string()),
    }
}

/// Shrinks `value` until its estimate fits `budget`: strings are cut, arrays lose trailing
/// items, objects shrink their largest member. Returns the value and whether it was cut.
pub fn fit_to_budget(value: Value, budget: u64) -> (Value, bool) {
    if estimate_tokens(&value) <= budget {
        return (value, false);
    }
    (shrink(value, budget), true)
}

fn shrink(value: Value, budget: u64) -> Value {
    match value {
        Value::String(s) => {
            let keep = (budget as usize).saturating_mul(CHARS_PER_TOKEN);
            Value::String(s.chars().take(keep).collect())
        }
        Value::Array(mut items) => {
            while !items.is_empty() && estimate_tokens(&Value::Array(items.clone())) > budget {
                if items.len() == 1 {
                    let only = items.pop().unwrap_or(Value::Null);
                    let inner = budget.saturating_sub(1);
                    items.push(shrink(only, inner));
                    break;
                }
                items.pop();
            }
            Value::Array(items)
        }
        Value::Object(mut map) => {
            // Shrink the largest member step by step; bounded by the member count.
            for _ in 0..64 {
                let total = estimate_tokens(&Value::Object(map.clone()));
                if total <= budget {
                    break;
                }
                let Some((key, size)) = map
                    .iter()
                    .map(|(k, v)| (k.clone(), estimate_tokens(v)))
                    .max_by_key(|(_, size)| *size)
                else {
                    break;
                };
                let excess = total - budget;
                let target = size.saturating_sub(excess + 1);
                let member = map.remove(&key).unwrap_or(Value::Null);
                let shrunk = if target == 0 {
                    Value::Null
                } else {
                    shrink(member, target)
                };
                map.insert(key, shrunk);
                if size == 0 {
                    break;
                }
            }
            Value::Object(map)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn estimates_are_a_quarter_of_the_characters_rounded_up() {
        assert_eq!(estimate_tokens(&json!("abcd")), 1);
        assert_eq!(estimate_tokens(&json!("abcde")), 2);
        assert_eq!(estimate_tokens(&Value::Null), 0);
        assert_eq!(estimate_tokens(&json!({"a": 1})), 2); // {"a":1} is 7 chars
    }

    #[test]
    fn values_within_budget_are_untouched() {
        let v = json!({"rows": [1, 2, 3]});
        assert_eq!(fit_to_budget(v.clone(), 100), (v, false));
    }

    #[test]
    fn oversized_values_are_cut_to_fit() {
        let (s, cut) = fit_to_budget(json!("x".repeat(100)), 10);
        assert!(cut);
        assert_eq!(s.as_str().unwrap().len(), 40);

        let (a, cut) = fit_to_budget(json!((0..100).collect::<Vec<_>>()), 10);
        assert!(cut && estimate_tokens(&a) <= 10 && !a.as_array().unwrap().is_empty());

        let big = json!({"small": "ok", "big": "y".repeat(400)});
        let (o, cut) = fit_to_budget(big, 20);
        assert!(cut && estimate_tokens(&o) <= 20, "{o}");
        assert_eq!(o["small"], "ok");
    }
}
