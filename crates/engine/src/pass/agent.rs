//! Agent steps inside an engine pass. The loop itself is pure
//! (`aiden_domain::execution::agent`); here each of its actions becomes durable state: every
//! model turn and tool call is a step run of its own (`<step>#m<n>`, `<step>#t<n>`), created
//! in the pass that decides it, dispatched to its Tool's typed pool like any step (retries,
//! audit records, exactly-once results), and the loop is written to the agent's step run
//! after every transition. A restarted engine rebuilds both from the graph and resumes.

use aiden_domain::execution::agent::router::MemoryUse;
use aiden_domain::execution::agent::{
    assemble, gate, layers_from_memory, Action, AgentTool, CallKind, Caller, Decision, Forbidden,
    Layers, Loop, ModelAnswer, Money,
};
use aiden_domain::execution::cost::StepCost;
use aiden_domain::execution::interpolate::render_tree;
use aiden_domain::execution::machine::{EventKind, Message, RunMessage};
use aiden_domain::execution::schedule::{PlanStep, StepStatus, Target};
use aiden_domain::process::{Mode, StepOutput};
use aiden_jobs::ErrorInfo;
use serde_json::{json, Map, Value};

use super::Pass;
use crate::state::{step_run_id, StepState};

/// The agent step's own inputs, rendered over the run's variables.
struct AgentInputs {
    message: String,
    memory: Value,
    preferences: Option<String>,
}

/// A model turn's reported token usage (its telemetry's `tokenUsage`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Usage {
    total: u64,
    input: u64,
    output: u64,
}

impl Usage {
    /// `(input, output)` tokens, if the provider reported any.
    pub(super) fn reported(self) -> Option<(u64, u64)> {
        (self.input + self.output > 0).then_some((self.input, self.output))
    }

    pub(super) fn of(telemetry: &Map<String, Value>) -> Self {
        let n = |k: &str| {
            telemetry
                .get("tokenUsage")
                .and_then(|u| u.get(k))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        Self {
            total: n("totalTokens"),
            input: n("promptTokens"),
            output: n("completionTokens"),
        }
    }
}

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl Pass<'_> {
    /// Starts agent step `i`: the policy gate, the prompt's five layers, the first model turn.
    pub(super) fn start_agent(&mut self, run_id: &str, i: usize, tools: Vec<AgentTool>) {
        let run = self.run(run_id).clone();
        let spec = &run.plan.steps[i];
        let Target::Agent {
            caps,
            system_prompt,
            model_name,
            router,
            ..
        } = &spec.target
        else {
            return;
        };
        // AGT-14: the model's price as the deployment sets it now; the run's daily windows.
        let money = Money {
            price: self.ledger.prices.price_of(model_name.as_deref()),
            allowance: self.charges.allowance(self.ledger, &run),
        };
        let inputs = match render_tree(
            &Value::Object(spec.inputs.clone()),
            &Value::Object(run.variables.clone()),
        ) {
            Ok(v) => AgentInputs {
                message: as_text(&v["message"]),
                memory: v["memory"].clone(),
                preferences: v.get("preferences").map(as_text).filter(|p| !p.is_empty()),
            },
            Err(e) => {
                let error = ErrorInfo::new("INTERPOLATION_ERROR", e.to_string());
                self.fail_step_now(run_id, i, error);
                return;
            }
        };
        // The run's owner is the caller the gate decides for; like the worker's resolution of
        // a Tool (TOOL-3), it allows the owner's own and shared tools, whatever the role.
        let caller = Caller {
            id: &run.owner_id,
            is_admin: false,
        };
        let (retrieved, history) = layers_from_memory(&inputs.memory, &inputs.message);
        let mut message = inputs.message;
        // AGT-15: a message starting with an intent's prefix is routed without a model turn;
        // any other message of a step with a router is classified by the router's turn first.
        let prefixed = router.as_ref().and_then(|r| {
            let (route, rest) = r.by_prefix(&message)?;
            let intent = r.intent(&route.intent)?.clone();
            Some((route, rest, intent))
        });
        let intent = prefixed.as_ref().map(|(_, _, i)| i);
        let decision = gate(&caller, &tools, intent);
        let ask_router = router.as_ref().filter(|_| prefixed.is_none());
        if let Some((_, rest, _)) = &prefixed {
            message.clone_from(rest);
        }
        let layers = Layers {
            system_prompt: system_prompt.clone(),
            preferences: inputs.preferences,
            retrieved,
            history,
            message,
        };
        // A routed loop adds the tool guardrail itself, once its intent leaves tools to offer.
        let offers = router.is_none() && !decision.allowed.is_empty();
        let messages = assemble(&layers, offers);
        self.refused_by_policy(run_id, &spec.id, &decision.forbidden);
        let now = self.now_ms;
        let (state, actions) = match prefixed {
            Some((route, _, intent)) => Loop::start_routed(
                &spec.id, messages, decision, *caps, money, now, route, &intent,
            ),
            None => {
                let request = ask_router.map(|r| r.request(&layers.message));
                Loop::start(&spec.id, messages, decision, *caps, money, now, request)
            }
        };
        if !self.transition(run_id, i, Message::StartAgent) {
            return;
        }
        self.run(run_id).loops.insert(i, state);
        self.perform(run_id, i, actions);
    }

    /// A call of an agent settled (`result`: its output, or its error): the loop goes on.
    pub(super) fn call_settled(
        &mut self,
        run_id: &str,
        call: usize,
        result: Result<Value, Value>,
        usage: Usage,
    ) {
        let run = self.run(run_id);
        let Some(parent) = run.plan.steps[call].call_of.clone() else {
            return;
        };
        let Some(agent) = run.plan.index_of(&parent) else {
            return;
        };
        if run.steps[agent].status.is_settled() {
            return;
        }
        let step_id = run.plan.steps[call].id.clone();
        let router = match &run.plan.steps[agent].target {
            Target::Agent { router, .. } => router.clone(),
            _ => None,
        };
        let now = self.now_ms;
        let Some(state) = self.loop_of(run_id, agent) else {
            return;
        };
        let kind = CallKind::of(&step_id);
        let actions = if let (Some(CallKind::Router), Some(router)) = (kind, router) {
            // AGT-15: a router turn that failed or answered nothing usable routes to the
            // fallback intent; the loop goes on either way.
            let text = match result {
                Ok(v) => {
                    state.spend(usage.total, usage.input, usage.output);
                    serde_json::from_value::<ModelAnswer>(v)
                        .ok()
                        .and_then(|a| a.text)
                }
                Err(_) => {
                    state.refund_turn();
                    None
                }
            };
            let route = router.read(text.as_deref());
            let intent = router
                .intent(&route.intent)
                .unwrap_or(router.fallback())
                .clone();
            state.routed(&parent, route, &intent, now)
        } else if kind == Some(CallKind::Model) {
            match result {
                Ok(v) => {
                    let answer: ModelAnswer = serde_json::from_value(v).unwrap_or_default();
                    state.spend(usage.total, usage.input, usage.output);
                    state.answered(&parent, answer, now)
                }
                Err(e) => {
                    state.refund_turn();
                    self.collect_charge(run_id, agent);
                    // The model could not be reached after its retries: the step fails.
                    let error = serde_json::from_value::<ErrorInfo>(e.clone())
                        .unwrap_or_else(|_| ErrorInfo::new("MODEL_ERROR", e.to_string()));
                    let error = ErrorInfo::new(
                        "MODEL_ERROR",
                        format!("model turn `{step_id}`: {}", error.message),
                    );
                    self.fail_agent(run_id, agent, error);
                    return;
                }
            }
        } else {
            state.tool_settled(&parent, &step_id, result, now)
        };
        self.perform(run_id, agent, actions);
    }

    /// Agent step `agent`'s loop, told what the run's daily windows have left (AGT-14).
    fn loop_of(&mut self, run_id: &str, agent: usize) -> Option<&mut Loop> {
        let allowance = self
            .runs
            .get(run_id)
            .and_then(|run| self.charges.allowance(self.ledger, run));
        let state = self.run(run_id).loops.get_mut(&agent)?;
        state.allowance = allowance;
        Some(state)
    }

    /// AGT-14: what the loop's last transition charged goes to the run's windows.
    fn collect_charge(&mut self, run_id: &str, agent: usize) {
        let Some(run) = self.runs.get_mut(run_id) else {
            return;
        };
        let micros = run.loops.get_mut(&agent).map_or(0, Loop::take_charge);
        self.charges.charge(self.ledger.day(), run, micros);
    }

    /// Turns the loop's decisions into step runs, jobs and events, then records the loop.
    fn perform(&mut self, run_id: &str, agent: usize, actions: Vec<Action>) {
        self.collect_charge(run_id, agent);
        let parent = self.run(run_id).plan.steps[agent].id.clone();
        let mut finished = None;
        for action in actions {
            match action {
                Action::CallModel { step_id, request } => {
                    let Target::Agent {
                        model,
                        model_operation_type,
                        caps,
                        ..
                    } = self.run(run_id).plan.steps[agent].target.clone()
                    else {
                        return;
                    };
                    let target = Target::Tool {
                        id: model,
                        operation_type: model_operation_type,
                        cost: StepCost::default(),
                    };
                    self.add_call(
                        run_id,
                        agent,
                        &step_id,
                        target,
                        request,
                        caps.tool_call_timeout_ms,
                    );
                }
                Action::CallTool {
                    step_id,
                    tool_id,
                    operation_type,
                    name,
                    arguments,
                } => {
                    self.event(
                        run_id,
                        EventKind::ToolRequested,
                        Some(&parent),
                        json!({"callStepId": step_id, "tool": name, "toolId": tool_id}),
                    );
                    let timeout = match &self.run(run_id).plan.steps[agent].target {
                        Target::Agent { caps, .. } => caps.tool_call_timeout_ms,
                        _ => 30_000,
                    };
                    let target = Target::Tool {
                        id: tool_id,
                        operation_type,
                        cost: StepCost::default(),
                    };
                    self.add_call(run_id, agent, &step_id, target, arguments, timeout);
                }
                Action::Refused(r) => self.event(
                    run_id,
                    EventKind::ToolRefused,
                    Some(&parent),
                    json!({"tool": r.name, "code": r.code, "reason": r.reason, "stage": "call"}),
                ),
                Action::Wait { capability, name } => self.event(
                    run_id,
                    EventKind::Waiting,
                    Some(&parent),
                    json!({"capability": capability, "tool": name}),
                ),
                Action::Finish(output) => finished = Some(output),
                Action::Fail { code, message } => {
                    self.fail_agent(run_id, agent, ErrorInfo::new(&code, message));
                    return;
                }
                Action::Routed { route, forbidden } => {
                    self.event(
                        run_id,
                        EventKind::Routed,
                        Some(&parent),
                        json!({"intent": route.intent, "confidence": route.confidence,
                               "source": route.source}),
                    );
                    self.refused_by_policy(run_id, &parent, &forbidden);
                }
            }
        }
        let state = self.run(run_id).loops.get(&agent).cloned();
        let sr = self.run(run_id).steps[agent].id.clone();
        if let Some(state) = state {
            let text = serde_json::to_string(&state).unwrap_or_default();
            self.set_step(&sr, json!({"agent": text}));
            self.mark_waiting(run_id, agent, state.waiting_for());
        }
        if let Some(output) = finished {
            self.finish_agent(run_id, agent, output);
        }
    }

    /// AGT-9: the step (and its run) is `waiting_for_approval` exactly while its loop holds a
    /// call; `waitingFor` lists what the owner is asked to approve. The step and run machines
    /// move them (a step or run already where the loop says is left as it is).
    fn mark_waiting(&mut self, run_id: &str, agent: usize, waiting_for: Vec<String>) {
        let was = self.run(run_id).steps[agent].status;
        let waits = !waiting_for.is_empty();
        let step = if waits {
            Message::AwaitApproval
        } else {
            Message::Resume
        };
        self.transition(run_id, agent, step);
        let any_waiting = self
            .run(run_id)
            .steps
            .iter()
            .any(|s| s.status == StepStatus::WaitingForApproval);
        let run = if any_waiting {
            RunMessage::AwaitApproval
        } else {
            RunMessage::Resume
        };
        self.run_transition(run_id, run);
        if waits || was == StepStatus::WaitingForApproval {
            self.set_run(run_id, json!({"waitingFor": waiting_for}));
        }
    }

    /// AGT-9: the owner decided on `capability`: every loop of the run holding a call for it
    /// goes on (the decision is kept for the loop's later calls too).
    pub(super) fn decide(&mut self, run_id: &str, decision: Decision) {
        let agents: Vec<usize> = self.run(run_id).loops.keys().copied().collect();
        for agent in agents {
            if self.run(run_id).steps[agent].status.is_settled() {
                continue;
            }
            let step = self.run(run_id).plan.steps[agent].id.clone();
            let now = self.now_ms;
            let Some(state) = self.loop_of(run_id, agent) else {
                continue;
            };
            let actions = state.decide(&step, decision.clone(), now);
            self.event(
                run_id,
                EventKind::Approval,
                Some(&step),
                json!({"capability": decision.capability, "grant": decision.grant,
                       "expiresMs": decision.expires_ms}),
            );
            self.perform(run_id, agent, actions);
        }
    }

    /// AGT-3 / AGT-15: the declared tools the gate does not offer, each recorded.
    fn refused_by_policy(&mut self, run_id: &str, step: &str, forbidden: &[Forbidden]) {
        for f in forbidden {
            self.event(
                run_id,
                EventKind::ToolRefused,
                Some(step),
                json!({"toolId": f.tool_id, "code": "TOOL_FORBIDDEN", "reason": f.reason,
                       "stage": "policy"}),
            );
        }
    }

    /// The loop cannot go on (over budget before its first turn, or the model failed): the
    /// step fails, with its pipeline's audit record.
    fn fail_agent(&mut self, run_id: &str, agent: usize, error: ErrorInfo) {
        self.audit_pipeline(run_id, agent, StepStatus::Failed, &Value::Null);
        self.fail_step_now(run_id, agent, error);
    }

    /// AGT-16: one audit record for the whole pipeline (router, policy, the executor's
    /// calls and round trips, post-hooks), beside the per-call records, on the agent's step run;
    /// its status is the one the agent's step settles with.
    fn audit_pipeline(&mut self, run_id: &str, agent: usize, status: StepStatus, output: &Value) {
        let (now, now_ms) = (self.now.clone(), self.now_ms);
        let run = self.run(run_id);
        let Some(state) = run.loops.get(&agent) else {
            return;
        };
        let parent = &run.plan.steps[agent].id;
        let mut pipeline = state.pipeline();
        let calls: Vec<Value> = run
            .plan
            .steps
            .iter()
            .zip(&run.steps)
            .filter(|(spec, _)| spec.call_of.as_deref() == Some(parent.as_str()))
            .map(|(spec, s)| {
                let tool = match &spec.target {
                    Target::Tool { id, .. } => id.as_str(),
                    _ => "",
                };
                json!({"stepId": spec.id, "toolId": tool, "status": s.status.as_str()})
            })
            .collect();
        pipeline["executor"]["calls"] = json!(calls);
        let count = |k: &str| output[k].as_array().map_or(0, Vec::len);
        pipeline["postHooks"] = json!({
            "memorySuggestions": count("memorySuggestions"),
            "droppedSensitive": output["droppedSensitive"].as_u64().unwrap_or(0),
        });
        let record = json!({
            "id": uuid::Uuid::now_v7().to_string(), "runId": run_id,
            "stepRunId": run.steps[agent].id, "actor": run.owner_id,
            "toolId": match &run.plan.steps[agent].target {
                Target::Agent { model, .. } => model.as_str(),
                _ => "",
            },
            "status": status.as_str(), "durationMs": now_ms - state.started_ms, "attempt": 1,
            "at": now, "kind": "pipeline", "pipeline": pipeline.to_string(),
        });
        tracing::info!(run_id, step = %parent, %pipeline, "agent pipeline");
        let sr = run.steps[agent].id.clone();
        self.audits.entry(sr).or_default().push(record);
    }

    /// The loop is over: the agent step completes with it (outstanding calls are canceled).
    fn finish_agent(&mut self, run_id: &str, agent: usize, output: Value) {
        let parent = self.run(run_id).plan.steps[agent].id.clone();
        let outstanding: Vec<usize> = {
            let run = self.run(run_id);
            (0..run.steps.len())
                .filter(|&j| {
                    run.plan.steps[j].call_of.as_deref() == Some(parent.as_str())
                        && !run.steps[j].status.is_settled()
                })
                .collect()
        };
        for j in outstanding {
            self.transition(run_id, j, Message::Cancel);
        }
        let mut telemetry = Map::new();
        telemetry.insert("finishReason".into(), output["finishReason"].clone());
        // AGT-13, the post-hook: what the answer proposed to remember becomes proposed
        // Entities of the run's owner, in this pass's transaction; none is memory until
        // confirmed.
        let owner = self.run(run_id).owner_id.clone();
        for s in output["memorySuggestions"].as_array().into_iter().flatten() {
            let Some(text) = s.as_str() else { continue };
            let name: String = text.chars().take(60).collect();
            self.proposals.push(json!({
                "uuid": uuid::Uuid::now_v7().to_string(), "name": name, "summary": text,
                "ownerId": owner, "runId": run_id, "at": self.now,
            }));
        }
        self.keep_memory(run_id, agent);
        self.audit_pipeline(run_id, agent, StepStatus::Completed, &output);
        self.complete_step(run_id, agent, output, telemetry);
    }

    /// SRCH-4, the `memory: write` post-hook: a step its router sent to such an intent keeps
    /// the message it answered as a Memory of the run's owner, in this pass's transaction.
    fn keep_memory(&mut self, run_id: &str, agent: usize) {
        let run = self.run(run_id);
        let Target::Agent {
            router: Some(router),
            ..
        } = &run.plan.steps[agent].target
        else {
            return;
        };
        let Some(state) = run.loops.get(&agent) else {
            return;
        };
        let writes = state
            .route
            .as_ref()
            .and_then(|r| router.intent(&r.intent))
            .is_some_and(|i| i.memory == Some(MemoryUse::Write));
        let Some(content) = writes
            .then(|| aiden_domain::knowledge::memory::from_message(&state.last_user_message()))
            .flatten()
        else {
            return;
        };
        let record = aiden_graph::memory::NewMemoryRecord {
            id: uuid::Uuid::now_v7().to_string(),
            owner_id: run.owner_id.clone(),
            content,
            run_id: Some(run_id.to_owned()),
            alternative_id: run.alternative_id.clone(),
            at: self.now.clone(),
        };
        self.memories.push(record);
    }

    /// A new call step run of agent step `agent`, recorded `queued` and dispatched.
    fn add_call(
        &mut self,
        run_id: &str,
        agent: usize,
        step_id: &str,
        target: Target,
        literal: Value,
        timeout_ms: u64,
    ) {
        let parent = self.run(run_id).plan.steps[agent].id.clone();
        let spec = PlanStep {
            id: step_id.to_owned(),
            mode: Mode::Parallel,
            depends_on: Vec::new(),
            condition: None,
            inputs: Map::new(),
            output: StepOutput::default(),
            timeout_ms,
            target,
            call_of: Some(parent.clone()),
            literal: Some(literal),
        };
        let sr = step_run_id(run_id, step_id);
        let tool_id = match &spec.target {
            Target::Tool { id, .. } => id.clone(),
            _ => String::new(),
        };
        let (order, parent_sr) = {
            let run = self.run(run_id);
            (
                1000 * (agent as i64 + 1) + run.steps.len() as i64,
                run.steps[agent].id.clone(),
            )
        };
        self.new_calls.push(json!({
            "id": sr, "runId": run_id, "stepId": step_id, "parentId": parent_sr,
            "kind": if CallKind::of(step_id).is_some_and(CallKind::asks_model) { "model" } else { "tool" },
            "toolId": tool_id, "order": order, "at": self.now,
            "spec": serde_json::to_string(&spec).unwrap_or_default(),
        }));
        let now = self.now.clone();
        let run = self.run(run_id);
        run.plan.steps.push(spec);
        run.steps.push(StepState {
            reserved_micros: 0,
            id: sr,
            status: StepStatus::Queued,
            attempts: 0,
            worker_id: None,
            started_at: None,
            queued_at: Some(now),
            child_run_id: None,
            retry_due: None,
        });
        let i = run.steps.len() - 1;
        let run = run.clone();
        if let Some(job) = self.job_for(&run, i) {
            self.event(
                run_id,
                EventKind::Queued,
                Some(step_id),
                json!({"attempt": job.attempt, "parentStepId": parent}),
            );
            self.jobs.push(job);
        }
    }
}
