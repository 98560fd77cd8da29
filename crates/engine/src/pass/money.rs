//! AGT-14 for steps that call a Tool themselves (a plain `llm_call` step, a REST or graph Tool
//! a Process calls directly): priced before dispatch like an agent's calls, against the run's
//! daily windows. The estimate is charged when the step is queued and kept on its step run
//! (`reservedMicros`, so a restarted engine settles it right); when the step settles, its
//! actual cost (the model's reported usage) replaces it.

use aiden_domain::execution::cost::{usd, Price, StepCost};
use aiden_domain::execution::interpolate::render_tree;
use aiden_domain::execution::schedule::Target;
use serde_json::{json, Map, Value};

use super::agent::Usage;
use super::Pass;

impl Pass<'_> {
    /// Step `i` of the run, if it calls a Tool itself and that costs something: its cost, and
    /// its model's price now.
    fn priced(&self, run_id: &str, i: usize) -> Option<(StepCost, Option<Price>)> {
        let run = self.runs.get(run_id)?;
        let spec = &run.plan.steps[i];
        let Target::Tool { cost, .. } = &spec.target else {
            return None;
        };
        if cost.is_free() || spec.call_of.is_some() {
            return None;
        }
        let price = cost
            .model
            .as_ref()
            .and_then(|m| self.ledger.prices.price_of(m.name.as_deref()));
        Some((cost.clone(), price))
    }

    /// Charges step `i`'s estimate before its job exists; `Err`: it does not fit what the
    /// run's daily windows have left, and it must not run.
    pub(super) fn charge_dispatch(&mut self, run_id: &str, i: usize) -> Result<(), String> {
        let (Some((cost, price)), Some(run)) = (self.priced(run_id, i), self.runs.get(run_id))
        else {
            return Ok(());
        };
        let spec = &run.plan.steps[i];
        let inputs = Value::Object(spec.inputs.clone());
        let rendered = render_tree(&inputs, &Value::Object(run.variables.clone()));
        let estimate = cost.estimate(price, rendered.as_ref().unwrap_or(&inputs));
        if estimate == 0 {
            return Ok(());
        }
        if let Some(left) = self.charges.allowance(self.ledger, run) {
            if estimate > left {
                return Err(format!(
                    "step `{}` is estimated at ${:.6}; the daily budget has ${:.6} left",
                    spec.id,
                    usd(estimate),
                    usd(left)
                ));
            }
        }
        self.charges.charge(self.ledger.day(), run, estimate as i64);
        let sr = run.steps[i].id.clone();
        self.run(run_id).steps[i].reserved_micros = estimate;
        self.set_step(&sr, json!({"reservedMicros": estimate}));
        Ok(())
    }

    /// Step `i` settled (`completed`: with an answer): what it cost replaces its estimate, and
    /// its telemetry says so (`costUsd`).
    pub(super) fn settle_cost(
        &mut self,
        run_id: &str,
        i: usize,
        telemetry: &mut Map<String, Value>,
        completed: bool,
    ) {
        let (Some((cost, price)), Some(run)) = (self.priced(run_id, i), self.runs.get(run_id))
        else {
            return;
        };
        let reserved = run.steps[i].reserved_micros;
        let usage = Usage::of(telemetry).reported();
        let actual = cost.settled(price, reserved, usage, completed);
        self.charges
            .charge(self.ledger.day(), run, actual as i64 - reserved as i64);
        telemetry.insert("costUsd".into(), json!(usd(actual)));
    }
}
