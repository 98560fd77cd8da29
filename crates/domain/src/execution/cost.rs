//! Money (AGT-14): every call is priced before it is dispatched (the pre-flight estimate) and
//! checked against its budgets (cost control). Amounts are kept as whole micro-dollars (`u64`), so
//! sums never drift; USD figures are only for the wire.
//!
//! - [`PriceTable`]: a model's price per million input and output tokens, from the
//!   deployment's configuration (`AIDEN_MODEL_PRICES`), by the model name a Tool's
//!   `connectionParams.model` gives; `"*"` prices any other model. A model without a price
//!   costs nothing (and the loop's output says `priced: false`).
//! - A Tool's `costPerCallUsd` is what one call of it costs.
//! - The daily windows a run's spend counts in are its Process's and its owner's
//!   ([`crate::process::Subject::spend_key`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// USD amounts accepted on the wire (budgets, a Tool's cost): positive, at most a million.
pub const MAX_USD: f64 = 1_000_000.0;

/// Whole micro-dollars for `usd`, rounded up (a budget or cost never rounds in our favour).
pub fn micros(usd: f64) -> u64 {
    (usd * 1_000_000.0).ceil().max(0.0) as u64
}

/// `micros` as USD, for outputs.
pub fn usd(micros: u64) -> f64 {
    micros as f64 / 1_000_000.0
}

/// Whether `usd` is a usable amount (finite, `> 0` unless `zero_ok`, at most [`MAX_USD`]).
pub fn valid_usd(usd: f64, zero_ok: bool) -> bool {
    usd.is_finite() && usd <= MAX_USD && (usd > 0.0 || (zero_ok && usd == 0.0))
}

/// A model's price in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Price {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl Price {
    /// What `input` prompt tokens and `output` answer tokens cost. USD per million tokens is
    /// micro-dollars per token.
    pub fn cost(&self, input: u64, output: u64) -> u64 {
        (input as f64 * self.input_per_million + output as f64 * self.output_per_million).ceil()
            as u64
    }
}

/// Model prices by model name (`"*"`: any other model).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceTable(BTreeMap<String, Price>);

impl PriceTable {
    /// `{"<model>": {"inputPerMillion": 2.5, "outputPerMillion": 10}, "*": {...}}`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let table: BTreeMap<String, Price> =
            serde_json::from_str(text).map_err(|e| format!("model prices: {e}"))?;
        for (model, p) in &table {
            if !valid_usd(p.input_per_million, true) || !valid_usd(p.output_per_million, true) {
                return Err(format!(
                    "model prices: `{model}` needs prices of 0-{MAX_USD} USD per million tokens"
                ));
            }
        }
        Ok(Self(table))
    }

    /// `AIDEN_MODEL_PRICES`: the table as JSON, or `@path` to a file holding it; empty when
    /// unset. A table that does not parse is an error: a deployment that meant to price its
    /// models must not silently run them for free.
    pub fn from_env() -> Result<Self, String> {
        let Ok(raw) = std::env::var("AIDEN_MODEL_PRICES") else {
            return Ok(Self::default());
        };
        let text = match raw.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("AIDEN_MODEL_PRICES: cannot read {path}: {e}"))?,
            None => raw,
        };
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        Self::parse(&text)
    }

    pub fn price_of(&self, model: Option<&str>) -> Option<Price> {
        model
            .and_then(|m| self.0.get(m))
            .or_else(|| self.0.get("*"))
            .copied()
    }
}

/// What a step that calls a Tool itself (not an agent's call) costs, from its Tool as the run
/// was planned: its `costPerCallUsd` and, for an `llm_call` Tool, its model turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepCost {
    #[serde(default)]
    pub per_call_micros: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelTurn>,
}

/// A plain `llm_call` step's turn, for its pre-flight estimate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelTurn {
    /// `connectionParams.model`: what the turn is priced by.
    #[serde(default)]
    pub name: Option<String>,
    /// The prompt template's tokens (the rendered inputs are added at dispatch).
    pub template_tokens: u64,
    /// The longest answer: `connectionParams.maxTokens`, else 1,024.
    pub output_tokens: u64,
}

impl StepCost {
    pub fn is_free(&self) -> bool {
        self.per_call_micros == 0 && self.model.is_none()
    }

    /// Before the call: its per-call cost, plus the model turn at `price` (the template and
    /// the rendered `inputs` in, the longest answer out).
    pub fn estimate(&self, price: Option<Price>, inputs: &serde_json::Value) -> u64 {
        let turn = match (&self.model, price) {
            (Some(m), Some(p)) => {
                let input = m.template_tokens + super::budget::estimate_tokens(inputs);
                p.cost(input, m.output_tokens)
            }
            _ => 0,
        };
        self.per_call_micros + turn
    }

    /// Once settled: the per-call cost, plus the model turn at its reported usage (`None`:
    /// none reported, so the estimate stands) if it completed; a failed turn costs nothing.
    pub fn settled(
        &self,
        price: Option<Price>,
        estimate: u64,
        usage: Option<(u64, u64)>,
        completed: bool,
    ) -> u64 {
        let turn = match (price.filter(|_| self.model.is_some()), usage) {
            (None, _) => 0,
            _ if !completed => 0,
            (Some(p), Some((input, output))) => p.cost(input, output),
            (Some(_), None) => estimate.saturating_sub(self.per_call_micros),
        };
        self.per_call_micros + turn
    }
}

/// The UTC day of `now`, as windows name it.
pub fn day_of(now: chrono::DateTime<chrono::Utc>) -> String {
    now.format("%Y-%m-%d").to_string()
}

/// Seconds from `now` to the next UTC midnight (a spent daily budget's `Retry-After`).
pub fn seconds_to_midnight(now: chrono::DateTime<chrono::Utc>) -> u64 {
    use chrono::Timelike;
    86_400 - u64::from(now.num_seconds_from_midnight())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agt_14_a_plain_steps_cost_is_estimated_then_settled_at_its_usage() {
        let p = Price {
            input_per_million: 1_000.0,
            output_per_million: 2_000.0,
        };
        let model = StepCost {
            per_call_micros: 0,
            model: Some(ModelTurn {
                name: Some("m".into()),
                template_tokens: 3,
                output_tokens: 100,
            }),
        };
        // 3 + 2 input tokens (a string counts its 8 characters) and 100 answer tokens.
        let estimate = model.estimate(Some(p), &serde_json::json!("abcdefgh"));
        assert_eq!(estimate, 5 * 1_000 + 100 * 2_000);
        assert_eq!(
            model.settled(Some(p), estimate, Some((10, 5)), true),
            20_000
        );
        assert_eq!(model.settled(Some(p), estimate, None, true), estimate);
        assert_eq!(model.settled(Some(p), estimate, Some((10, 5)), false), 0);
        assert_eq!(model.estimate(None, &serde_json::json!("x")), 0, "unpriced");
        let tool = StepCost {
            per_call_micros: 500_000,
            model: None,
        };
        assert!(!tool.is_free() && StepCost::default().is_free());
        assert_eq!(tool.estimate(Some(p), &serde_json::json!("x")), 500_000);
        assert_eq!(
            tool.settled(Some(p), 500_000, None, false),
            500_000,
            "it was called"
        );
    }

    #[test]
    fn agt_14_amounts_round_up_to_whole_micro_dollars() {
        assert_eq!(micros(0.5), 500_000);
        assert_eq!(micros(0.000_000_1), 1);
        assert_eq!(usd(1_250_000), 1.25);
        let p = Price {
            input_per_million: 2.5,
            output_per_million: 10.0,
        };
        // 1,000 input tokens at $2.50/M and 100 output at $10/M: $0.0025 + $0.001.
        assert_eq!(p.cost(1_000, 100), 3_500);
        assert_eq!(
            p.cost(1, 0),
            3,
            "a fraction of a micro-dollar is charged whole"
        );
    }

    #[test]
    fn agt_14_the_price_table_falls_back_to_star_and_rejects_bad_prices() {
        let t = PriceTable::parse(
            r#"{"gpt": {"inputPerMillion": 1, "outputPerMillion": 2},
                "*": {"inputPerMillion": 5, "outputPerMillion": 6}}"#,
        )
        .unwrap();
        assert_eq!(t.price_of(Some("gpt")).unwrap().output_per_million, 2.0);
        assert_eq!(t.price_of(Some("other")).unwrap().input_per_million, 5.0);
        assert_eq!(t.price_of(None).unwrap().input_per_million, 5.0);
        let bare =
            PriceTable::parse(r#"{"gpt": {"inputPerMillion": 1, "outputPerMillion": 2}}"#).unwrap();
        assert_eq!(bare.price_of(Some("other")), None);
        assert!(
            PriceTable::parse(r#"{"gpt": {"inputPerMillion": -1, "outputPerMillion": 2}}"#)
                .is_err()
        );
        assert!(PriceTable::parse(r#"{"gpt": {"inputPerMillion": 1}}"#).is_err());
    }

    #[test]
    fn agt_14_windows_are_per_scope_and_utc_day() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-25T23:59:30Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let day = day_of(now);
        use crate::process::Subject;
        assert_eq!(Subject::User("u1").spend_key(&day), "user:u1#2026-11-25");
        assert_eq!(
            Subject::Process("p").spend_key(&day),
            "process:p#2026-11-25"
        );
        assert_eq!(Subject::User("u1").quota_key("H"), "user:u1#H");
        assert_eq!(Subject::Process("p").quota_key("H"), "p#H");
        assert_eq!(seconds_to_midnight(now), 30);
    }
}
