use super::*;
use serde_json::{json, Value};

fn tool(id: &str, owner: &str, shared: bool, enabled: bool) -> AgentTool {
    AgentTool {
        id: id.into(),
        call_name: id.replace('-', "_"),
        description: Some(format!("the {id} tool")),
        input_schema: json!({"type": "object", "required": ["q"],
                              "properties": {"q": {"type": "string"}}}),
        operation_type: crate::OperationType::RestApi,
        owner_id: owner.into(),
        shared,
        enabled,
        capability: None,
        cost_micros: 0,
        secret_owner_id: None,
        template_id: None,
        caller_connected: false,
    }
}

fn alice() -> Caller<'static> {
    Caller {
        id: "alice",
        is_admin: false,
    }
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    }
}

/// A model turn that asks for `calls`.
fn asks(calls: Vec<ToolCall>) -> ModelAnswer {
    ModelAnswer {
        text: None,
        tool_calls: calls,
    }
}

/// A model turn with `text` (and `calls`).
fn says(text: &str, calls: Vec<ToolCall>) -> ModelAnswer {
    ModelAnswer {
        text: Some(text.into()),
        tool_calls: calls,
    }
}

/// A loop for step `answer` with no prompt, started at 0 without a router.
fn open(decision: PolicyDecision, caps: Caps, money: Money) -> (Loop, Vec<Action>) {
    Loop::start("answer", vec![], decision, caps, money, 0, None)
}

fn started(caps: Caps) -> Loop {
    let decision = gate(
        &alice(),
        &[
            tool("search", "alice", false, true),
            tool("lookup", "bob", true, true),
            tool("private", "bob", false, true),
        ],
        None,
    );
    let (l, actions) = open(decision, caps, Money::default());
    assert!(matches!(&actions[..], [Action::CallModel { step_id, .. }] if step_id == "answer#m1"));
    l
}

#[test]
fn the_gate_allows_own_and_shared_enabled_tools_and_says_why_it_forbids_the_rest() {
    let d = gate(
        &alice(),
        &[
            tool("mine", "alice", false, true),
            tool("shared", "bob", true, true),
            tool("theirs", "bob", false, true),
            tool("off", "alice", false, false),
        ],
        None,
    );
    let ids: Vec<&str> = d.allowed.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["mine", "shared"]);
    let why: Vec<(&str, &str)> = d
        .forbidden
        .iter()
        .map(|f| (f.tool_id.as_str(), &f.reason[..6]))
        .collect();
    assert_eq!(why, [("theirs", "TOOL-3"), ("off", "PROC-8")]);
    // An admin may use anything enabled; the decision depends on nothing else.
    let admin = Caller {
        id: "root",
        is_admin: true,
    };
    let d = gate(&admin, &[tool("theirs", "bob", false, true)], None);
    assert_eq!(d.allowed.len(), 1);
}

/// SEC-6 at the gate: a shared tool that uses its owner's Secret is offered to its owner, and to
/// another user only once they have connected their own Tool of its template.
#[test]
fn sec_6_a_tool_on_another_users_secret_is_not_offered_until_the_caller_connects() {
    let mut keyed = tool("llm", "root", true, true);
    keyed.secret_owner_id = Some("root".into());
    let keyless = tool("echo", "root", true, true);
    let d = gate(&alice(), &[keyed.clone(), keyless], None);
    assert_eq!(d.allowed.len(), 1);
    assert_eq!(d.allowed[0].id, "echo");
    assert_eq!(d.forbidden[0].tool_id, "llm");
    assert!(d.forbidden[0].reason.starts_with("SEC-6"));
    let owner = Caller {
        id: "root",
        is_admin: false,
    };
    assert_eq!(gate(&owner, &[keyed.clone()], None).allowed.len(), 1);
    keyed.caller_connected = true;
    assert_eq!(gate(&alice(), &[keyed], None).allowed.len(), 1);
}

#[test]
fn call_names_are_function_safe_and_unique() {
    assert_eq!(call_name("Web search!", &[]), "Web_search_");
    assert_eq!(call_name("a", &["a".into()]), "a_2");
    assert_eq!(call_name("", &[]), "tool");
    assert_eq!(call_name(&"x".repeat(100), &[]).len(), 60);
}

#[test]
fn the_prompt_keeps_the_five_layers_in_order_with_the_guardrail_last() {
    let layers = Layers {
        system_prompt: Some("You are Aiden.".into()),
        preferences: Some("be brief".into()),
        retrieved: vec!["Ada: a mathematician".into()],
        history: vec![Message::User {
            content: "earlier".into(),
        }],
        message: "now".into(),
    };
    let m = assemble(&layers, true);
    let text = |i: usize| match &m[i] {
        Message::System { content } | Message::User { content } => content.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(text(0), IMMUTABLE_CORE);
    assert_eq!(text(1), "You are Aiden.");
    assert!(text(2).contains("be brief"));
    assert!(text(3).contains("Ada: a mathematician"));
    assert_eq!(text(4), "earlier");
    assert_eq!(text(5), "now");
    assert_eq!(text(6), TOOL_GUARDRAIL);
    assert_eq!(assemble(&Layers::default(), false).len(), 2);
}

#[test]
fn working_memory_gives_context_and_history_without_the_message_itself() {
    let wm = json!({"summaries": [{"content": "they met"}],
        "activeEntities": [{"name": "Ada", "summary": "mathematician"}, {"name": "London"}],
        "retrievedContext": [{"text": "Ada's notes came out in 1843", "similarity": 0.6}],
        "immediatePath": [{"speaker": "user", "content": "hi"}, {"speaker": "agent", "content": "hello"},
                          {"speaker": "user", "content": "who is Ada?"}]});
    let (retrieved, history) = layers_from_memory(&wm, "who is Ada?");
    assert_eq!(
        retrieved,
        [
            "Summary: they met",
            "Ada: mathematician",
            "London",
            "Memory: Ada's notes came out in 1843"
        ]
    );
    assert_eq!(history.len(), 2);
    assert!(matches!(&history[1], Message::Assistant { content: Some(c), .. } if c == "hello"));
}

#[test]
fn tools_run_then_the_model_sees_their_results() {
    let mut l = started(Caps::default());
    let actions = l.answered(
        "answer",
        asks(vec![
            call("c1", "search", json!({"q": "a"})),
            call("c2", "lookup", json!({"q": "b"})),
        ]),
        1,
    );
    let ids: Vec<String> = actions
        .iter()
        .map(|a| match a {
            Action::CallTool { step_id, .. } => step_id.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids, ["answer#t2", "answer#t3"]);
    assert!(l
        .tool_settled("answer", "answer#t3", Ok(json!({"b": 1})), 2)
        .is_empty());
    // A duplicate result changes nothing.
    assert!(l
        .tool_settled("answer", "answer#t3", Ok(json!({"b": 2})), 2)
        .is_empty());
    let next = l.tool_settled("answer", "answer#t2", Err(json!({"code": "TIMEOUT"})), 3);
    let Action::CallModel { step_id, request } = &next[0] else {
        panic!("{next:?}")
    };
    assert_eq!(step_id, "answer#m4");
    let msgs = request["messages"].as_array().unwrap();
    let tail: Vec<(&str, &str)> = msgs[msgs.len() - 2..]
        .iter()
        .map(|m| {
            (
                m["toolCallId"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    // Results in the model's call order, an error as an error object.
    assert_eq!(
        tail,
        [
            ("c1", r#"{"error":{"code":"TIMEOUT"}}"#),
            ("c2", r#"{"b":1}"#)
        ]
    );
    assert_eq!(request["tools"][0]["name"], "search");
    assert_eq!(
        request["tools"].as_array().unwrap().len(),
        2,
        "the forbidden one is not offered"
    );
    let done = l.answered("answer", says("done", vec![]), 4);
    let Action::Finish(out) = &done[0] else {
        panic!()
    };
    assert_eq!(out["text"], "done");
    assert_eq!(out["finishReason"], "complete");
    assert_eq!(
        (out["iterations"].as_u64(), out["toolCalls"].as_u64()),
        (Some(2), Some(2))
    );
}

#[test]
fn forbidden_unknown_and_badly_argued_calls_are_refused_without_running() {
    let mut l = started(Caps::default());
    let actions = l.answered(
        "answer",
        asks(vec![
            call("c1", "private", json!({"q": "x"})),
            call("c2", "search", json!({"query": "wrong field"})),
        ]),
        1,
    );
    let codes: Vec<&str> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Refused(r) => Some(r.code.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(codes, ["TOOL_FORBIDDEN", "INPUT_INVALID"]);
    assert!(!actions.iter().any(|a| matches!(a, Action::CallTool { .. })));
    // Nothing ran, so the model is asked again, with the refusals to read.
    let Some(Action::CallModel { request, .. }) = actions.last() else {
        panic!("{actions:?}")
    };
    let last = request["messages"].as_array().unwrap().last().unwrap();
    assert!(last["content"].as_str().unwrap().contains("INPUT_INVALID"));
    assert_eq!(l.tool_calls, 0);
}

#[test]
fn the_iteration_cap_ends_with_the_best_answer_so_far() {
    let mut l = started(Caps {
        max_iterations: 2,
        ..Caps::default()
    });
    let a = l.answered(
        "answer",
        says(
            "thinking: partial",
            vec![call("c1", "search", json!({"q": "a"}))],
        ),
        1,
    );
    assert!(matches!(a[0], Action::CallTool { .. }));
    l.tool_settled("answer", "answer#t2", Ok(json!({})), 2);
    let end = l.answered(
        "answer",
        asks(vec![call("c2", "search", json!({"q": "b"}))]),
        3,
    );
    let [Action::Finish(out)] = &end[..] else {
        panic!("{end:?}")
    };
    assert_eq!(out["finishReason"], "iteration_limit");
    assert_eq!(out["text"], "thinking: partial");
}

#[test]
fn the_tool_call_cap_holds_across_iterations() {
    let mut l = started(Caps {
        max_tool_calls: 1,
        ..Caps::default()
    });
    l.answered(
        "answer",
        asks(vec![call("c1", "search", json!({"q": "a"}))]),
        1,
    );
    l.tool_settled("answer", "answer#t2", Ok(json!({})), 2);
    let end = l.answered(
        "answer",
        asks(vec![call("c2", "search", json!({"q": "b"}))]),
        3,
    );
    let [Action::Finish(out)] = &end[..] else {
        panic!("{end:?}")
    };
    assert_eq!(out["finishReason"], "tool_call_limit");
    assert_eq!(out["text"], NO_ANSWER);
    assert_eq!(out["toolCalls"], 1);
}

#[test]
fn the_total_timeout_ends_the_loop() {
    let mut l = started(Caps {
        total_timeout_ms: 10,
        ..Caps::default()
    });
    l.answered(
        "answer",
        says("so far", vec![call("c1", "search", json!({"q": "a"}))]),
        5,
    );
    let end = l.tool_settled("answer", "answer#t2", Ok(json!({})), 50);
    let [Action::Finish(out)] = &end[..] else {
        panic!("{end:?}")
    };
    assert_eq!(out["finishReason"], "timeout");
    assert_eq!(out["text"], "so far");
}

#[test]
fn openai_arguments_arrive_as_a_json_string() {
    assert_eq!(parse_arguments(&json!("{\"q\":\"x\"}")), json!({"q": "x"}));
    assert_eq!(parse_arguments(&Value::Null), json!({}));
    assert_eq!(parse_arguments(&json!({"q": 1})), json!({"q": 1}));
}

#[test]
fn a_call_needing_approval_waits_then_runs_when_granted_or_is_refused_when_denied() {
    let mut mail = tool("mail", "alice", false, true);
    mail.capability = Some("email.send".into());
    let decision = gate(
        &alice(),
        &[tool("search", "alice", false, true), mail],
        None,
    );
    let (mut l, _) = open(decision.clone(), Caps::default(), Money::default());
    let calls = vec![
        call("c1", "mail", json!({"q": "hi"})),
        call("c2", "search", json!({"q": "x"})),
    ];
    let a = l.answered("answer", asks(calls.clone()), 1);
    assert!(matches!(&a[0], Action::Wait { capability, .. } if capability == "email.send"));
    assert!(matches!(&a[1], Action::CallTool { name, .. } if name == "search"));
    assert_eq!(l.waiting_for(), ["email.send"]);
    // The search result alone does not complete the round: the mail call still waits.
    assert!(l
        .tool_settled("answer", "answer#t2", Ok(json!({})), 2)
        .is_empty());
    let granted = l.decide(
        "answer",
        Decision {
            capability: "email.send".into(),
            grant: true,
            expires_ms: Some(100),
        },
        3,
    );
    assert!(
        matches!(&granted[..], [Action::CallTool { name, .. }] if name == "mail"),
        "{granted:?}"
    );
    let next = l.tool_settled("answer", "answer#t3", Ok(json!({"sent": true})), 4);
    assert!(matches!(&next[..], [Action::CallModel { .. }]), "{next:?}");
    // Within the grant's time a later call runs at once; after it, it waits again.
    let again = l.answered(
        "answer",
        asks(vec![call("c3", "mail", json!({"q": "2"}))]),
        50,
    );
    assert!(matches!(&again[..], [Action::CallTool { .. }]), "{again:?}");
    l.tool_settled("answer", "answer#t5", Ok(json!({})), 60);
    let later = l.answered(
        "answer",
        asks(vec![call("c4", "mail", json!({"q": "3"}))]),
        200,
    );
    assert!(matches!(&later[..], [Action::Wait { .. }]), "{later:?}");

    let (mut d, _) = open(decision, Caps::default(), Money::default());
    d.answered("answer", asks(vec![calls[0].clone()]), 1);
    let denied = d.decide(
        "answer",
        Decision {
            capability: "email.send".into(),
            grant: false,
            expires_ms: None,
        },
        2,
    );
    assert!(matches!(&denied[0], Action::Refused(r) if r.code == "APPROVAL_DENIED"));
    assert!(
        matches!(&denied[1], Action::CallModel { .. }),
        "the model answers without it"
    );
    assert_eq!(d.tool_calls, 0);
}

#[test]
fn the_token_budget_is_checked_before_each_model_turn() {
    let decision = gate(&alice(), &[tool("search", "alice", false, true)], None);
    let tight = Caps {
        token_budget: Some(100),
        ..Caps::default()
    };
    let (l, first) = open(decision.clone(), tight, Money::default());
    assert!(
        matches!(&first[..], [Action::Fail { code, .. }] if code == "BUDGET_EXCEEDED"),
        "nothing is spent before the refusal: {first:?}"
    );
    assert_eq!(l.finished, Some(FinishReason::BudgetExceeded));
    // Room for one turn: the second is refused once the first reported its usage.
    let one_turn = Caps {
        token_budget: Some(TURN_OUTPUT_TOKENS + 200),
        ..Caps::default()
    };
    let (mut l, first) = open(decision, one_turn, Money::default());
    assert!(
        matches!(&first[..], [Action::CallModel { .. }]),
        "{first:?}"
    );
    l.spend(150, 100, 50);
    l.answered(
        "answer",
        says("partial", vec![call("c1", "search", json!({"q": "a"}))]),
        1,
    );
    let end = l.tool_settled("answer", "answer#t2", Ok(json!({})), 2);
    let [Action::Finish(out)] = &end[..] else {
        panic!("{end:?}")
    };
    assert_eq!(out["finishReason"], "budget_exceeded");
    assert_eq!(out["text"], "partial");
    assert_eq!(out["tokens"], 150);
}

#[test]
fn answers_propose_memories_structured_or_tagged_never_sensitive_ones() {
    let structured = r#"{"content": "Noted.", "memory_suggestions": ["Likes green tea",
        "My password is hunter2", "x", "  ", "a", "b", "c", "d"]}"#;
    let (text, kept, dropped) = memory_suggestions(structured);
    assert_eq!(text, "Noted.");
    assert_eq!(
        kept,
        ["Likes green tea", "x", "a", "b", "c"],
        "at most five"
    );
    assert_eq!(dropped, 1);
    let tagged = "Sure. [REMEMBER: Works in Kigali] Anything else? [REMEMBER: token sk-1]";
    let (text, kept, dropped) = memory_suggestions(tagged);
    assert_eq!(text, "Sure.  Anything else?");
    assert_eq!(kept, ["Works in Kigali"]);
    assert_eq!(dropped, 1);
    let opaque = format!("[REMEMBER: key {}]", "a1".repeat(20));
    assert_eq!(memory_suggestions(&opaque).2, 1);
    assert_eq!(memory_suggestions("plain").0, "plain");
}

fn priced() -> Money {
    Money {
        // $1 per million input tokens, $2 per million output: micro-dollars per token.
        price: Some(crate::execution::cost::Price {
            input_per_million: 1.0,
            output_per_million: 2.0,
        }),
        allowance: None,
    }
}

#[test]
fn agt_14_a_model_turn_is_charged_its_estimate_then_its_actual_cost() {
    let decision = gate(&alice(), &[tool("search", "alice", false, true)], None);
    let (mut l, first) = open(decision, Caps::default(), priced());
    assert!(
        matches!(&first[..], [Action::CallModel { .. }]),
        "{first:?}"
    );
    // The estimate: the request's tokens at $1/M plus 1,024 answer tokens at $2/M.
    let estimate = l.spent_micros;
    assert!(estimate > 2 * TURN_OUTPUT_TOKENS, "{estimate}");
    assert_eq!(
        l.take_charge(),
        estimate as i64,
        "charged before the turn runs"
    );
    // The turn reports 10 input and 5 output tokens: 10 + 2 × 5 micro-dollars.
    l.spend(15, 10, 5);
    assert_eq!(l.spent_micros, 20);
    assert_eq!(
        l.take_charge(),
        20 - estimate as i64,
        "the estimate is replaced"
    );
    let end = l.answered("answer", says("done", vec![]), 1);
    let [Action::Finish(out)] = &end[..] else {
        panic!("{end:?}")
    };
    assert_eq!(out["costUsd"], 0.00002);
    assert_eq!(out["priced"], true);
}

#[test]
fn agt_14_a_money_budget_refuses_the_first_turn_before_any_spend() {
    let decision = gate(&alice(), &[tool("search", "alice", false, true)], None);
    let tight = Caps {
        cost_budget_micros: Some(100),
        ..Caps::default()
    };
    let (mut l, first) = open(decision.clone(), tight, priced());
    let [Action::Fail { code, message }] = &first[..] else {
        panic!("{first:?}")
    };
    assert_eq!(code, "BUDGET_EXCEEDED");
    assert!(message.contains("costBudgetUsd"), "{message}");
    assert_eq!(l.take_charge(), 0, "nothing is charged for a refused turn");
    // The run's daily windows limit it the same way.
    let mut broke = priced();
    broke.allowance = Some(100);
    let (_, first) = open(decision, Caps::default(), broke);
    assert!(
        matches!(&first[..], [Action::Fail { code, message }]
            if code == "BUDGET_EXCEEDED" && message.contains("daily budget")),
        "{first:?}"
    );
}

#[test]
fn agt_14_a_tool_call_that_does_not_fit_is_refused_and_told_to_the_model() {
    let mut costly = tool("search", "alice", false, true);
    costly.cost_micros = 500_000;
    let decision = gate(&alice(), &[costly], None);
    let caps = Caps {
        cost_budget_micros: Some(100_000),
        ..Caps::default()
    };
    // Unpriced model: its turns cost nothing, the tool's $0.50 does not fit $0.10.
    let (mut l, _) = open(decision, caps, Money::default());
    let next = l.answered(
        "answer",
        asks(vec![call("c1", "search", json!({"q": "a"}))]),
        1,
    );
    assert!(
        matches!(&next[..], [Action::Refused(r), Action::CallModel { .. }]
            if r.code == "BUDGET_EXCEEDED"),
        "refused without running, and the model is asked again: {next:?}"
    );
    assert_eq!(l.tool_calls, 0);
    assert_eq!(l.take_charge(), 0);
    assert!(
        matches!(l.messages.last(), Some(Message::Tool { content, .. })
        if content.contains("BUDGET_EXCEEDED"))
    );
    // A tool that fits is charged when it is dispatched.
    let mut cheap = tool("search", "alice", false, true);
    cheap.cost_micros = 40_000;
    let (mut l, _) = open(gate(&alice(), &[cheap], None), caps, Money::default());
    let next = l.answered(
        "answer",
        asks(vec![call("c1", "search", json!({"q": "a"}))]),
        1,
    );
    assert!(matches!(&next[..], [Action::CallTool { .. }]), "{next:?}");
    assert_eq!(l.take_charge(), 40_000);
}

#[test]
fn agt_14_a_failed_turn_gives_its_estimate_back() {
    let decision = gate(&alice(), &[], None);
    let (mut l, _) = open(decision, Caps::default(), priced());
    let estimate = l.take_charge();
    assert!(estimate > 0);
    l.refund_turn();
    assert_eq!(l.take_charge(), -estimate);
    assert_eq!(l.spent_micros, 0);
}

fn router_intent(name: &str, tools: &[&str]) -> router::Intent {
    router::Intent {
        name: name.into(),
        description: None,
        tools: tools.iter().map(|t| crate::Id::parse(t).unwrap()).collect(),
        prefix: None,
        memory: None,
    }
}

#[test]
fn agt_15_the_gate_offers_only_the_intents_tools() {
    let declared = [
        tool("search", "alice", false, true),
        tool("lookup", "bob", true, true),
        tool("private", "bob", false, true),
    ];
    let d = gate(
        &alice(),
        &declared,
        Some(&router_intent("find", &["search"])),
    );
    let ids: Vec<&str> = d.allowed.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["search"]);
    let why: Vec<&str> = d.forbidden.iter().map(|f| &f.reason[..6]).collect();
    // Visibility is judged first: an intent cannot make a tool the owner may not use usable.
    assert_eq!(why, ["AGT-15", "TOOL-3"]);
}

#[test]
fn agt_15_a_routed_loop_asks_the_router_first_then_offers_only_the_intents_tools() {
    let declared = [
        tool("search", "alice", false, true),
        tool("lookup", "bob", true, true),
    ];
    let decision = gate(&alice(), &declared, None);
    let request = json!({"messages": [{"role": "user", "content": "hi"}], "tools": []});
    let (mut l, first) = Loop::start(
        "answer",
        vec![Message::User {
            content: "hi".into(),
        }],
        decision,
        Caps::default(),
        Money::default(),
        0,
        Some(request.clone()),
    );
    assert!(
        matches!(&first[..], [Action::CallModel { step_id, request: r }]
        if step_id == "answer#r1" && *r == request)
    );
    assert!(l.routing);
    let route = router::Routed {
        intent: "find".into(),
        confidence: 0.9,
        source: router::RouteSource::Model,
    };
    let actions = l.routed("answer", route, &router_intent("find", &["lookup"]), 1);
    let [Action::Routed { forbidden, .. }, Action::CallModel { step_id, request }] = &actions[..]
    else {
        panic!("{actions:?}")
    };
    assert_eq!(step_id, "answer#m2");
    assert_eq!(forbidden.len(), 1);
    assert_eq!(forbidden[0].tool_id, "search");
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["lookup"]);
    let last = request["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        last["content"], TOOL_GUARDRAIL,
        "tools are offered: the guardrail follows"
    );
    assert!(!l.routing);
    // The router's turn is not one of the loop's iterations.
    let done = l.answered("answer", says("hello", vec![]), 2);
    let Action::Finish(out) = &done[0] else {
        panic!()
    };
    assert_eq!(out["iterations"], 1);
    let p = l.pipeline();
    assert_eq!(p["router"]["intent"], "find");
    assert_eq!(p["policy"]["offered"], json!(["lookup"]));
    assert_eq!(p["policy"]["forbidden"][0]["toolId"], "search");
    assert_eq!(p["executor"]["roundTrips"], 1);
    assert_eq!(p["executor"]["finishReason"], "complete");
}

#[test]
fn agt_15_an_intent_without_tools_gets_no_tools_and_no_guardrail() {
    let decision = gate(&alice(), &[tool("search", "alice", false, true)], None);
    let (mut l, _) = Loop::start(
        "answer",
        vec![],
        decision,
        Caps::default(),
        Money::default(),
        0,
        Some(json!({"messages": [], "tools": []})),
    );
    let route = router::Routed {
        intent: "chat".into(),
        confidence: 0.0,
        source: router::RouteSource::Fallback,
    };
    let actions = l.routed("answer", route, &router_intent("chat", &[]), 1);
    let Action::CallModel { request, .. } = &actions[1] else {
        panic!("{actions:?}")
    };
    assert_eq!(request["tools"], json!([]));
    assert!(request["messages"].as_array().unwrap().is_empty());
    assert!(matches!(CallKind::of("answer#r1"), Some(CallKind::Router)));
    assert!(CallKind::of("answer#t2") == Some(CallKind::Tool));
    assert!(CallKind::of("answer").is_none());
}

#[test]
fn srch_5_a_memory_read_intent_prefetches_with_its_recall_tool_and_offers_the_model_none() {
    let mut recall = tool("my-memory", "alice", false, true);
    recall.operation_type = crate::OperationType::Recall;
    let decision = gate(
        &alice(),
        &[recall, tool("search", "alice", false, true)],
        None,
    );
    let messages = vec![
        Message::System {
            content: "core".into(),
        },
        Message::User {
            content: "where does my sister live?".into(),
        },
    ];
    let (mut l, _) = Loop::start(
        "answer",
        messages,
        decision,
        Caps::default(),
        Money::default(),
        0,
        Some(json!({"messages": [], "tools": []})),
    );
    let route = router::Routed {
        intent: "memory_read".into(),
        confidence: 0.9,
        source: router::RouteSource::Model,
    };
    let mut intent = router_intent("memory_read", &["my-memory"]);
    intent.memory = Some(router::MemoryUse::Read);
    let actions = l.routed("answer", route, &intent, 1);
    let [Action::Routed { .. }, Action::CallTool {
        step_id,
        tool_id,
        operation_type,
        arguments,
        ..
    }] = &actions[..]
    else {
        panic!("{actions:?}")
    };
    assert_eq!(
        (tool_id.as_str(), operation_type.as_str()),
        ("my-memory", "recall")
    );
    assert_eq!(arguments, &json!({"q": "where does my sister live?"}));
    assert_eq!(l.prefetch.as_deref(), Some(step_id.as_str()));
    // A duplicate of some other call changes nothing; the pre-fetch's answer asks the model.
    assert!(l
        .tool_settled("answer", "answer#t9", Ok(json!({})), 2)
        .is_empty());
    let hits = json!({"hits": [{"kind": "memory", "text": "My sister Ines lives in Porto"},
                                {"kind": "episode", "text": "  "}]});
    let next = l.tool_settled("answer", step_id, Ok(hits), 2);
    let [Action::CallModel { request, .. }] = &next[..] else {
        panic!("{next:?}")
    };
    assert_eq!(request["tools"], json!([]), "the model is offered no tool");
    let m = request["messages"].as_array().unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(
        m[1]["content"],
        "RECALLED FROM MEMORY:\n- My sister Ines lives in Porto"
    );
    assert_eq!(
        m[2]["role"], "user",
        "layer 4 comes before the conversation"
    );
    assert!(l.prefetch.is_none());
    // A late second answer of the pre-fetch is ignored.
    assert!(l
        .tool_settled("answer", step_id, Ok(json!({"hits": []})), 3)
        .is_empty());
}

#[test]
fn srch_5_a_failed_prefetch_still_asks_the_model_without_memory() {
    let mut recall = tool("my-memory", "alice", false, true);
    recall.operation_type = crate::OperationType::Recall;
    let decision = gate(&alice(), &[recall], None);
    let user = Message::User {
        content: "hi".into(),
    };
    let (mut l, _) = Loop::start(
        "answer",
        vec![user],
        decision,
        Caps::default(),
        Money::default(),
        0,
        Some(json!({"messages": [], "tools": []})),
    );
    let mut intent = router_intent("memory_read", &["my-memory"]);
    intent.memory = Some(router::MemoryUse::Read);
    let route = router::Routed {
        intent: "memory_read".into(),
        confidence: 1.0,
        source: router::RouteSource::Prefix,
    };
    let actions = l.routed("answer", route, &intent, 1);
    let Action::CallTool { step_id, .. } = &actions[1] else {
        panic!("{actions:?}")
    };
    let next = l.tool_settled("answer", step_id, Err(json!({"code": "TIMEOUT"})), 2);
    let [Action::CallModel { request, .. }] = &next[..] else {
        panic!("{next:?}")
    };
    assert_eq!(request["messages"].as_array().unwrap().len(), 1);
}
