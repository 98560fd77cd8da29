//! The loop's durable state and what it asks the engine to do: how it starts, routes, and asks
//! the model within its caps and budgets. What follows an answer is in `calls.rs`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::policy::intent_forbids;
use super::{router, AgentTool, Forbidden, Message, PolicyDecision, TOOL_GUARDRAIL};
use crate::execution::{budget, cost};

/// Graceful degradation: what the step answers when the loop ends without any answer text, so
/// a user is told the limits stopped it rather than shown nothing (AGT-7).
pub const NO_ANSWER: &str = "I was unable to complete this task within the limits set for it. \
Please try breaking it into smaller requests.";

/// The limits of one loop (AGT-7), with their defaults (docs/agents.md, "Defining one").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Caps {
    pub max_iterations: u32,
    pub max_tool_calls: u32,
    pub tool_call_timeout_ms: u64,
    pub total_timeout_ms: u64,
    /// AGT-11: tokens the whole loop may spend (model input + output), if limited.
    #[serde(default)]
    pub token_budget: Option<u64>,
    /// AGT-14: micro-dollars the whole loop may spend, if limited.
    #[serde(default)]
    pub cost_budget_micros: Option<u64>,
}

/// What a model turn's answer is assumed to cost at most, for the pre-flight estimate.
pub const TURN_OUTPUT_TOKENS: u64 = 1024;

impl Default for Caps {
    fn default() -> Self {
        Self {
            max_iterations: 5,
            max_tool_calls: 10,
            tool_call_timeout_ms: 30_000,
            total_timeout_ms: 120_000,
            token_budget: None,
            cost_budget_micros: None,
        }
    }
}

/// AGT-14: what the loop's spend is priced and limited by beyond its own caps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Money {
    /// The model's price; none: its turns cost nothing.
    pub price: Option<cost::Price>,
    /// What the run's daily windows have left, if any is limited.
    pub allowance: Option<u64>,
}

/// A tool call the loop dispatched, waiting for its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    /// The model's id for the call (echoed in the tool message).
    pub call_id: String,
    /// The call's own step id (`<agent step>#t<n>`).
    pub step_id: String,
    pub tool_id: String,
    pub name: String,
    #[serde(default)]
    pub result: Option<String>,
}

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Complete,
    IterationLimit,
    ToolCallLimit,
    Timeout,
    BudgetExceeded,
}

/// A call waiting for its capability to be approved (AGT-9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Held {
    pub call_id: String,
    pub name: String,
    pub tool_id: String,
    pub operation_type: crate::OperationType,
    pub arguments: Value,
    pub capability: String,
}

/// An approval decision the loop holds: a grant until `expiresMs` (none: for the run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub capability: String,
    pub grant: bool,
    #[serde(default)]
    pub expires_ms: Option<i64>,
}

/// `POST /v1/runs/{id}/approvals` (AGT-9).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRequest {
    pub capability: String,
    pub decision: ApprovalDecision,
    /// How long a grant lasts; the rest of the run when absent.
    #[serde(default)]
    #[schemars(range(min = 1, max = 86400))]
    pub ttl_seconds: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalDecision {
    Grant,
    Deny,
}

/// The longest a grant may last (a day); without `ttlSeconds` it lasts for the run.
pub const MAX_APPROVAL_TTL_SECONDS: u64 = 86_400;

/// A call that never ran, and why (forbidden, unknown, or arguments not matching).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    pub call_id: String,
    pub name: String,
    pub code: String,
    pub reason: String,
}

/// The loop's durable state (stored on the agent step run as JSON after every transition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Loop {
    pub messages: Vec<Message>,
    pub tools: Vec<AgentTool>,
    pub forbidden: Vec<Forbidden>,
    pub caps: Caps,
    /// Model turns answered so far.
    pub iterations: u32,
    /// Tool calls dispatched so far (refused ones do not count).
    pub tool_calls: u32,
    /// Step ids given out so far (`#m<n>` for model turns, `#t<n>` for tool calls).
    pub seq: u32,
    pub pending: Vec<Pending>,
    #[serde(default)]
    pub held: Vec<Held>,
    #[serde(default)]
    pub decisions: Vec<Decision>,
    pub refusals: Vec<Refusal>,
    /// Tokens the model turns used so far (their reported usage).
    #[serde(default)]
    pub spent_tokens: u64,
    /// AGT-14: the model's price (from the deployment's table when the loop started; none:
    /// its turns cost nothing).
    #[serde(default)]
    pub price: Option<cost::Price>,
    /// Micro-dollars spent so far: settled model turns at their reported usage, dispatched
    /// tool calls, and the estimate of the model turn in flight.
    #[serde(default)]
    pub spent_micros: u64,
    /// The estimate charged for the model turn in flight (replaced by its actual cost).
    #[serde(default)]
    pub reserved_micros: u64,
    /// What the run's daily windows (its Process's and owner's `maxCostUsdPerDay`) have left,
    /// set by the engine before each transition; not part of the loop's state.
    #[serde(skip)]
    pub allowance: Option<u64>,
    /// Micro-dollars charged (or, negative, given back) since [`Loop::take_charge`]: what the
    /// engine adds to the daily windows in the same transaction.
    #[serde(skip)]
    pub charged: i64,
    pub started_ms: i64,
    #[serde(default)]
    pub finished: Option<FinishReason>,
    /// AGT-15: the router turn is out and the loop waits for it before asking the model.
    #[serde(default)]
    pub routing: bool,
    /// AGT-15: what the router decided (none: the step has no router).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<router::Routed>,
    /// SRCH-5: the step id of a `memory: read` intent's recall call in flight; the model is
    /// asked once its hits are in the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch: Option<String>,
}

/// What the engine must do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Ask the model: `request` is the model call's literal input (`{messages, tools}`).
    CallModel { step_id: String, request: Value },
    /// Run a tool with these (validated) arguments.
    CallTool {
        step_id: String,
        tool_id: String,
        operation_type: crate::OperationType,
        name: String,
        arguments: Value,
    },
    /// A call refused without running (event `tool.refused`).
    Refused(Refusal),
    /// A call waits for the owner to approve `capability` (the step pauses).
    Wait { capability: String, name: String },
    /// The loop is over: the agent step's output.
    Finish(Value),
    /// The loop cannot even start its first turn (AGT-11): the step fails.
    Fail { code: String, message: String },
    /// The router decided (AGT-15); `forbidden` are the declared tools its intent leaves out.
    Routed {
        route: router::Routed,
        forbidden: Vec<Forbidden>,
    },
}

impl Loop {
    /// A new loop for `agent_step`, and its first turn: the router's when `router` is its
    /// request (AGT-15; `messages` are then the prompt's layers without the tool guardrail,
    /// which follows once the intent leaves tools to offer), else the model's.
    pub fn start(
        agent_step: &str,
        messages: Vec<Message>,
        decision: PolicyDecision,
        caps: Caps,
        money: Money,
        now_ms: i64,
        router: Option<Value>,
    ) -> (Self, Vec<Action>) {
        let mut l = Self::new(messages, decision, caps, money, now_ms);
        let first = match router {
            Some(request) => {
                l.routing = true;
                l.ask(agent_step, 'r', request)
            }
            None => l.call_model(agent_step),
        };
        (l, vec![first])
    }

    /// A new loop whose message was routed by its prefix (AGT-15): `decision` already offers
    /// only `intent`'s tools; it goes on as after a router turn.
    #[allow(clippy::too_many_arguments)]
    pub fn start_routed(
        agent_step: &str,
        messages: Vec<Message>,
        decision: PolicyDecision,
        caps: Caps,
        money: Money,
        now_ms: i64,
        route: router::Routed,
        intent: &router::Intent,
    ) -> (Self, Vec<Action>) {
        let mut l = Self::new(messages, decision, caps, money, now_ms);
        let actions = l.routed(agent_step, route, intent, now_ms);
        (l, actions)
    }

    fn new(
        messages: Vec<Message>,
        decision: PolicyDecision,
        caps: Caps,
        money: Money,
        now_ms: i64,
    ) -> Self {
        Self {
            messages,
            tools: decision.allowed,
            forbidden: decision.forbidden,
            caps,
            iterations: 0,
            tool_calls: 0,
            seq: 0,
            pending: Vec::new(),
            held: Vec::new(),
            decisions: Vec::new(),
            refusals: Vec::new(),
            spent_tokens: 0,
            price: money.price,
            spent_micros: 0,
            reserved_micros: 0,
            allowance: money.allowance,
            charged: 0,
            started_ms: now_ms,
            finished: None,
            routing: false,
            route: None,
            prefetch: None,
        }
    }

    /// AGT-15: the router chose `intent` (how: `route`). The tools it does not name are no
    /// longer offered; then the model is asked.
    pub fn routed(
        &mut self,
        agent_step: &str,
        route: router::Routed,
        intent: &router::Intent,
        now_ms: i64,
    ) -> Vec<Action> {
        self.routing = false;
        let mut left_out = Vec::new();
        self.tools.retain(|t| match intent_forbids(intent, t) {
            Some(reason) => {
                left_out.push(Forbidden {
                    tool_id: t.id.clone(),
                    reason,
                });
                false
            }
            None => true,
        });
        self.forbidden.extend(left_out.iter().cloned());
        // SRCH-5: a memory read pre-fetches with its recall Tool, which the model is not offered.
        let recall = (intent.memory == Some(router::MemoryUse::Read))
            .then(|| std::mem::take(&mut self.tools))
            .and_then(|tools| {
                tools
                    .into_iter()
                    .find(|t| t.operation_type == crate::OperationType::Recall)
            });
        if !self.tools.is_empty() {
            self.messages.push(Message::System {
                content: TOOL_GUARDRAIL.into(),
            });
        }
        self.route = Some(route.clone());
        let mut actions = vec![Action::Routed {
            route,
            forbidden: left_out,
        }];
        if let Some(tool) = recall.filter(|_| !self.timed_out(now_ms)) {
            let step_id = self.next_id(agent_step, 't');
            self.tool_calls += 1;
            self.prefetch = Some(step_id.clone());
            actions.push(Action::CallTool {
                step_id,
                tool_id: tool.id,
                operation_type: tool.operation_type,
                name: tool.call_name,
                arguments: json!({"q": self.last_user_message()}),
            });
        } else if self.timed_out(now_ms) {
            let best = self.best_answer();
            actions.push(self.finish(FinishReason::Timeout, best));
        } else {
            actions.push(self.call_model(agent_step));
        }
        actions
    }

    /// AGT-16: the pipeline as the loop saw it (router, policy, executor), for its one
    /// audit record; the engine adds the calls' step runs and the post-hooks.
    pub fn pipeline(&self) -> Value {
        let decision = PolicyDecision {
            allowed: self.tools.clone(),
            forbidden: self.forbidden.clone(),
        };
        let offered: Vec<&str> = self.tools.iter().map(|t| t.call_name.as_str()).collect();
        json!({
            "router": self.route,
            "policy": {"offered": offered, "forbidden": self.forbidden,
                       "capabilities": decision.capabilities(), "decisions": self.decisions},
            "executor": {"roundTrips": self.iterations, "toolCalls": self.tool_calls,
                         "refused": self.refusals, "finishReason": self.finished,
                         "tokens": self.spent_tokens,
                         "costUsd": cost::usd(self.spent_micros)},
        })
    }

    pub(super) fn next_id(&mut self, agent_step: &str, kind: char) -> String {
        self.seq += 1;
        format!("{agent_step}#{kind}{}", self.seq)
    }

    pub(super) fn call_model(&mut self, agent_step: &str) -> Action {
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|t| {
                json!({"name": t.call_name, "description": t.description.clone().unwrap_or_default(),
                       "parameters": t.input_schema})
            })
            .collect();
        let request = json!({"messages": self.messages, "tools": tools});
        self.ask(agent_step, 'm', request)
    }

    /// A model turn (`kind` `m`, or `r` for the router's) with `request`, if it fits the
    /// budgets (AGT-11, AGT-14); its estimate is charged now.
    fn ask(&mut self, agent_step: &str, kind: char, request: Value) -> Action {
        let input_tokens = budget::estimate_tokens(&request);
        if let Some(budget) = self.caps.token_budget {
            // AGT-11: the turn's cost is estimated before it is asked for, never after.
            let estimate = input_tokens + TURN_OUTPUT_TOKENS;
            if self.spent_tokens + estimate > budget {
                let message = format!(
                    "the next model turn needs about {estimate} tokens; {} of the budget of {budget} are left",
                    budget.saturating_sub(self.spent_tokens)
                );
                return self.over_budget(message);
            }
        }
        let estimate = self
            .price
            .map_or(0, |p| p.cost(input_tokens, TURN_OUTPUT_TOKENS));
        if let Err(message) = self.affords(estimate, "the next model turn") {
            return self.over_budget(message);
        }
        self.charge(estimate as i64);
        self.reserved_micros = estimate;
        Action::CallModel {
            step_id: self.next_id(agent_step, kind),
            request,
        }
    }

    /// The next turn does not fit a budget (AGT-11, AGT-14): a loop that has not asked the
    /// model yet fails before spending anything; a later one ends with the best answer.
    fn over_budget(&mut self, message: String) -> Action {
        if self.iterations == 0 {
            self.finished = Some(FinishReason::BudgetExceeded);
            return Action::Fail {
                code: "BUDGET_EXCEEDED".into(),
                message,
            };
        }
        let best = self.best_answer();
        self.finish(FinishReason::BudgetExceeded, best)
    }

    /// A model turn reported using `tokens` (counted before its answer is read); with a
    /// price, its actual cost replaces the estimate charged when it was asked for.
    pub fn spend(&mut self, tokens: u64, input: u64, output: u64) {
        self.spent_tokens += tokens;
        let actual = self.price.map_or(0, |p| p.cost(input, output));
        let reserved = std::mem::take(&mut self.reserved_micros);
        self.charge(actual as i64 - reserved as i64);
    }

    /// A model turn failed: what was charged for it in advance is given back (a provider
    /// that answered nothing usable reported no usage to pay for).
    pub fn refund_turn(&mut self) {
        let reserved = std::mem::take(&mut self.reserved_micros);
        self.charge(-(reserved as i64));
    }

    /// AGT-14: whether `cost` fits both the loop's own budget and what the run's daily
    /// windows have left; if not, why.
    pub(super) fn affords(&self, cost: u64, what: &str) -> Result<(), String> {
        if cost == 0 {
            return Ok(());
        }
        let own = self.caps.cost_budget_micros.map(|b| {
            (
                "the step's costBudgetUsd",
                b.saturating_sub(self.spent_micros),
            )
        });
        let daily = self.allowance.map(|left| ("the daily budget", left));
        for (name, left) in own.into_iter().chain(daily) {
            if cost > left {
                return Err(format!(
                    "{what} is estimated at ${:.6}; {name} has ${:.6} left",
                    cost::usd(cost),
                    cost::usd(left)
                ));
            }
        }
        Ok(())
    }

    pub(super) fn charge(&mut self, micros: i64) {
        self.spent_micros = self.spent_micros.saturating_add_signed(micros);
        self.charged += micros;
        if let Some(left) = self.allowance.as_mut() {
            *left = left.saturating_add_signed(-micros);
        }
    }

    /// The spend to record in the daily windows since the last call.
    pub fn take_charge(&mut self) -> i64 {
        std::mem::take(&mut self.charged)
    }

    /// The last answer text the model gave, or the graceful fallback.
    pub(super) fn best_answer(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Assistant {
                    content: Some(c), ..
                } if !c.trim().is_empty() => Some(c.clone()),
                _ => None,
            })
            .unwrap_or_else(|| NO_ANSWER.to_owned())
    }

    pub(super) fn finish(&mut self, reason: FinishReason, text: String) -> Action {
        self.finished = Some(reason);
        Action::Finish(json!({
            "text": text,
            "finishReason": reason,
            "iterations": self.iterations,
            "toolCalls": self.tool_calls,
            "refused": self.refusals.len(),
            "tokens": self.spent_tokens,
            "costUsd": cost::usd(self.spent_micros),
            "priced": self.price.is_some(),
        }))
    }

    pub(super) fn timed_out(&self, now_ms: i64) -> bool {
        now_ms - self.started_ms > self.caps.total_timeout_ms as i64
    }
}
