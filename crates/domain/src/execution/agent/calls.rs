//! What follows a model answer: the tool calls it asks for, their approvals (AGT-9) and
//! results, and the next turn once a round is complete.

use serde_json::{json, Value};

use super::tools::schema_problem;
use super::{
    memory_suggestions, Action, Decision, FinishReason, Held, Loop, Message, ModelAnswer, Pending,
    Refusal,
};

/// SRCH-5: how many of a pre-fetch's hits join the prompt, each cut to this many characters.
const RECALLED_HITS: usize = 8;
const RECALLED_CHARS: usize = 400;

impl Loop {
    /// The model answered turn `iterations + 1`.
    pub fn answered(&mut self, agent_step: &str, answer: ModelAnswer, now_ms: i64) -> Vec<Action> {
        self.iterations += 1;
        let text = answer.text.clone().filter(|t| !t.trim().is_empty());
        if answer.tool_calls.is_empty() {
            self.messages.push(Message::Assistant {
                content: text.clone(),
                tool_calls: Vec::new(),
            });
            let text = text.unwrap_or_else(|| self.best_answer());
            // AGT-13: the post-hook reads what the answer proposes to remember.
            let (shown, suggestions, dropped) = memory_suggestions(&text);
            let mut done = self.finish(FinishReason::Complete, shown);
            if let Action::Finish(out) = &mut done {
                out["memorySuggestions"] = json!(suggestions);
                out["droppedSensitive"] = json!(dropped);
            }
            return vec![done];
        }
        if self.iterations >= self.caps.max_iterations {
            // No model turn may follow: running the tools would be wasted.
            self.messages.push(Message::Assistant {
                content: text,
                tool_calls: Vec::new(),
            });
            let best = self.best_answer();
            return vec![self.finish(FinishReason::IterationLimit, best)];
        }
        if self.timed_out(now_ms) {
            let best = self.best_answer();
            return vec![self.finish(FinishReason::Timeout, best)];
        }
        self.messages.push(Message::Assistant {
            content: text,
            tool_calls: answer.tool_calls.clone(),
        });
        let mut actions = Vec::new();
        for call in answer.tool_calls {
            let tool = self
                .tools
                .iter()
                .find(|t| t.call_name == call.name)
                .cloned();
            let refusal = match &tool {
                None => Some((
                    "TOOL_FORBIDDEN",
                    format!("`{}` is not one of the tools you may call", call.name),
                )),
                Some(t) => schema_problem(&t.input_schema, &call.arguments).map(|p| {
                    (
                        "INPUT_INVALID",
                        format!("arguments do not match the tool's inputSchema: {p}"),
                    )
                }),
            };
            if let Some((code, reason)) = refusal {
                actions.push(self.refuse(call.id, call.name, code, reason));
                continue;
            }
            let tool = tool.expect("checked above");
            let held = Held {
                call_id: call.id,
                name: call.name,
                tool_id: tool.id.clone(),
                operation_type: tool.operation_type,
                arguments: call.arguments,
                capability: tool.capability.clone().unwrap_or_default(),
            };
            match tool.capability.as_deref().map(|c| self.decided(c, now_ms)) {
                Some(None) => {
                    actions.push(Action::Wait {
                        capability: held.capability.clone(),
                        name: held.name.clone(),
                    });
                    self.held.push(held);
                }
                Some(Some(false)) => actions.push(self.deny(held)),
                None | Some(Some(true)) => {
                    if let Some(end) = self.dispatch(agent_step, held, &mut actions) {
                        actions.push(end);
                        return actions;
                    }
                }
            }
        }
        if self.pending.is_empty() && self.held.is_empty() {
            actions.push(self.call_model(agent_step));
        }
        actions
    }

    /// The owner's standing decision on `capability`: granted (and not expired), denied, or
    /// none yet.
    fn decided(&self, capability: &str, now_ms: i64) -> Option<bool> {
        self.decisions
            .iter()
            .rev()
            .find(|d| d.capability == capability)
            .and_then(|d| match (d.grant, d.expires_ms) {
                (true, Some(t)) if t <= now_ms => None,
                (grant, _) => Some(grant),
            })
    }

    /// Runs a call (or, past `maxToolCalls`, ends the loop: the returned action).
    fn dispatch(
        &mut self,
        agent_step: &str,
        call: Held,
        actions: &mut Vec<Action>,
    ) -> Option<Action> {
        if self.tool_calls >= self.caps.max_tool_calls {
            self.held.clear();
            let best = self.best_answer();
            return Some(self.finish(FinishReason::ToolCallLimit, best));
        }
        let cost = self
            .tools
            .iter()
            .find(|t| t.id == call.tool_id)
            .map_or(0, |t| t.cost_micros);
        if let Err(reason) = self.affords(cost, &format!("a call of `{}`", call.name)) {
            // Refused before spending, and told to the model, which may answer without it.
            actions.push(self.refuse(call.call_id, call.name, "BUDGET_EXCEEDED", reason));
            return None;
        }
        self.charge(cost as i64);
        self.tool_calls += 1;
        let step_id = self.next_id(agent_step, 't');
        self.pending.push(Pending {
            call_id: call.call_id,
            step_id: step_id.clone(),
            tool_id: call.tool_id.clone(),
            name: call.name.clone(),
            result: None,
        });
        actions.push(Action::CallTool {
            step_id,
            tool_id: call.tool_id,
            operation_type: call.operation_type,
            name: call.name,
            arguments: call.arguments,
        });
        None
    }

    /// A call whose capability the owner denied: refused, and the model told so.
    fn deny(&mut self, call: Held) -> Action {
        let reason = format!("the user did not approve `{}`", call.capability);
        self.refuse(call.call_id, call.name, "APPROVAL_DENIED", reason)
    }

    /// A call that does not run: recorded, and returned to the model as the call's error.
    fn refuse(&mut self, call_id: String, name: String, code: &str, reason: String) -> Action {
        let r = Refusal {
            call_id: call_id.clone(),
            name: name.clone(),
            code: code.into(),
            reason,
        };
        self.refusals.push(r.clone());
        self.messages.push(Message::Tool {
            tool_call_id: call_id,
            name,
            content: json!({"error": {"code": r.code, "message": r.reason}}).to_string(),
        });
        Action::Refused(r)
    }

    /// The capabilities held calls wait for.
    pub fn waiting_for(&self) -> Vec<String> {
        let mut caps: Vec<String> = self.held.iter().map(|h| h.capability.clone()).collect();
        caps.sort();
        caps.dedup();
        caps
    }

    /// AGT-9: the owner granted (until `expires_ms`) or denied `capability`: the calls held
    /// for it run or are refused, and the loop goes on once the round is complete.
    pub fn decide(&mut self, agent_step: &str, decision: Decision, now_ms: i64) -> Vec<Action> {
        let capability = decision.capability.clone();
        let grant = decision.grant;
        self.decisions.push(decision);
        let (these, rest): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| h.capability == capability);
        self.held = rest;
        if these.is_empty() {
            return Vec::new();
        }
        let mut actions = Vec::new();
        for call in these {
            if grant {
                if let Some(end) = self.dispatch(agent_step, call, &mut actions) {
                    actions.push(end);
                    return actions;
                }
            } else {
                actions.push(self.deny(call));
            }
        }
        actions.extend(self.round_done(agent_step, now_ms));
        actions
    }

    /// When every call of the round has its result and none waits: the results go to the
    /// model, which is asked again (unless the total timeout passed).
    fn round_done(&mut self, agent_step: &str, now_ms: i64) -> Vec<Action> {
        if self.pending.iter().any(|p| p.result.is_none()) || !self.held.is_empty() {
            return Vec::new();
        }
        for p in std::mem::take(&mut self.pending) {
            self.messages.push(Message::Tool {
                tool_call_id: p.call_id,
                name: p.name,
                content: p.result.unwrap_or_default(),
            });
        }
        if self.timed_out(now_ms) {
            let best = self.best_answer();
            return vec![self.finish(FinishReason::Timeout, best)];
        }
        vec![self.call_model(agent_step)]
    }

    /// The tool call `step_id` settled with `result` (its output, or an error the model reads:
    /// a failed tool does not fail the step, the model may answer without it).
    pub fn tool_settled(
        &mut self,
        agent_step: &str,
        step_id: &str,
        result: Result<Value, Value>,
        now_ms: i64,
    ) -> Vec<Action> {
        if self.prefetch.as_deref() == Some(step_id) {
            self.prefetch = None;
            if let Ok(answer) = &result {
                self.recalled(answer);
            }
            if self.timed_out(now_ms) {
                let best = self.best_answer();
                return vec![self.finish(FinishReason::Timeout, best)];
            }
            return vec![self.call_model(agent_step)];
        }
        let Some(p) = self
            .pending
            .iter_mut()
            .find(|p| p.step_id == step_id && p.result.is_none())
        else {
            return Vec::new(); // a duplicate or late result
        };
        p.result = Some(match result {
            Ok(v) => v.to_string(),
            Err(e) => json!({"error": e}).to_string(),
        });
        self.round_done(agent_step, now_ms)
    }

    /// The user's message the loop answers (the last one in its prompt).
    pub fn last_user_message(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content } => Some(content.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// SRCH-5: a pre-fetch's hits (a search answer) join layer 4, after the prompt's other
    /// system messages and before the conversation; a failed or empty recall adds nothing.
    fn recalled(&mut self, answer: &Value) {
        let lines: Vec<String> = answer["hits"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|h| h["text"].as_str())
            .filter(|t| !t.trim().is_empty())
            .take(RECALLED_HITS)
            .map(|t| t.chars().take(RECALLED_CHARS).collect())
            .collect();
        if lines.is_empty() {
            return;
        }
        let at = self
            .messages
            .iter()
            .position(|m| !matches!(m, Message::System { .. }))
            .unwrap_or(self.messages.len());
        let content = format!("RECALLED FROM MEMORY:\n- {}", lines.join("\n- "));
        self.messages.insert(at, Message::System { content });
    }

    /// The total timeout passed while calls were outstanding: ends with the best answer.
    pub fn expire(&mut self) -> Action {
        self.pending.clear();
        self.held.clear();
        let best = self.best_answer();
        self.finish(FinishReason::Timeout, best)
    }
}
