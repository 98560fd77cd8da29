use super::*;
use serde_json::json;

fn step(id: &str, mode: Mode, deps: &[&str], var: &str) -> PlanStep {
    PlanStep {
        id: id.into(),
        mode,
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
        condition: None,
        inputs: Map::new(),
        output: StepOutput {
            variable: Some(var.into()),
            required: false,
            token_budget: None,
        },
        timeout_ms: 1000,
        target: Target::Tool {
            id: "t".into(),
            operation_type: crate::OperationType::RestApi,
            cost: Default::default(),
        },
        call_of: None,
        literal: None,
    }
}

fn plan(steps: Vec<PlanStep>) -> Plan {
    Plan {
        process_id: "p".into(),
        version: 1,
        steps,
        output_template: None,
        token_budget: None,
        max_recursion_depth: 3,
        quota: None,
    }
}

use StepStatus::*;

#[test]
fn sequential_steps_wait_for_every_earlier_step() {
    let p = plan(vec![
        step("a", Mode::Sequential, &[], "a"),
        step("b", Mode::Sequential, &[], "b"),
    ]);
    let mut st = vec![Pending, Pending];
    let mut vars = Map::new();
    assert_eq!(advance(&p, &mut st, &mut vars), vec![Decision::Dispatch(0)]);
    assert_eq!(advance(&p, &mut st, &mut vars), vec![]);
    st[0] = Completed;
    assert_eq!(advance(&p, &mut st, &mut vars), vec![Decision::Dispatch(1)]);
}

#[test]
fn parallel_steps_wait_only_for_depends_on() {
    let p = plan(vec![
        step("a", Mode::Sequential, &[], "a"),
        step("p1", Mode::Parallel, &[], "p1"),
        step("p2", Mode::Parallel, &["a"], "p2"),
        step("join", Mode::Sequential, &[], "j"),
    ]);
    let mut st = vec![Pending; 4];
    let mut vars = Map::new();
    assert_eq!(
        advance(&p, &mut st, &mut vars),
        vec![Decision::Dispatch(0), Decision::Dispatch(1)]
    );
    st[0] = Completed;
    assert_eq!(advance(&p, &mut st, &mut vars), vec![Decision::Dispatch(2)]);
    st[1] = Completed;
    assert_eq!(advance(&p, &mut st, &mut vars), vec![]);
    st[2] = Completed;
    assert_eq!(advance(&p, &mut st, &mut vars), vec![Decision::Dispatch(3)]);
}

#[test]
fn false_conditions_skip_with_a_null_variable_and_unblock_successors() {
    let mut s = step("a", Mode::Sequential, &[], "a");
    s.condition = Some("{{#if go}}true{{/if}}".into());
    let p = plan(vec![s, step("b", Mode::Sequential, &[], "b")]);
    let mut st = vec![Pending; 2];
    let mut vars = Map::new();
    vars.insert("go".into(), json!(false));
    assert_eq!(
        advance(&p, &mut st, &mut vars),
        vec![Decision::Skip(0), Decision::Dispatch(1)]
    );
    assert_eq!(vars["a"], Value::Null);
}

#[test]
fn a_condition_that_cannot_render_fails_the_run() {
    let mut s = step("a", Mode::Sequential, &[], "a");
    s.condition = Some("{{missing}}".into());
    let p = plan(vec![s]);
    let mut st = vec![Pending];
    let d = advance(&p, &mut st, &mut Map::new());
    assert!(matches!(&d[0], Decision::FailStep(0, f) if f.code == "INTERPOLATION_ERROR"));
    assert!(matches!(&d[1], Decision::FailRun(_)));
}

#[test]
fn completion_renders_the_output_template() {
    let mut p = plan(vec![step("a", Mode::Sequential, &[], "answer")]);
    p.output_template = Some("{{answer}}".into());
    let mut st = vec![Completed];
    let mut vars = Map::new();
    vars.insert("answer".into(), json!({"x": 1}));
    assert_eq!(
        advance(&p, &mut st, &mut vars),
        vec![Decision::Complete(json!({"x": 1}))]
    );
}

#[test]
fn a_failed_step_fails_the_run() {
    let p = plan(vec![step("a", Mode::Sequential, &[], "a")]);
    let d = advance(&p, &mut [Failed], &mut Map::new());
    assert!(matches!(&d[..], [Decision::FailRun(f)] if f.code == "STEP_FAILED"));
}

#[test]
fn outputs_obey_required_and_budgets() {
    let mut s = step("a", Mode::Sequential, &[], "a");
    s.output.required = true;
    s.output.token_budget = Some(2);
    let mut p = plan(vec![s, step("b", Mode::Sequential, &[], "b")]);
    let vars = Map::new();
    let err = accept_output(&p, 0, Value::Null, &vars).unwrap_err();
    assert_eq!(err.code, "OUTPUT_REQUIRED");
    let (v, cut) = accept_output(&p, 0, json!("abcdefghijkl"), &vars).unwrap();
    assert_eq!((v, cut), (json!("abcdefgh"), true));

    // A rest_api result is `{status, body}`: an empty body is no output.
    let err = accept_output(&p, 0, json!({"status": 200, "body": null}), &vars).unwrap_err();
    assert_eq!(err.code, "OUTPUT_REQUIRED");
    assert!(accept_output(&p, 0, json!({"status": 200, "body": "x"}), &vars).is_ok());

    p.token_budget = Some(3);
    let mut vars = Map::new();
    vars.insert("a".into(), json!("abcdefgh")); // 2 tokens
    let err = accept_output(&p, 1, json!("abcdefgh"), &vars).unwrap_err();
    assert_eq!(err.code, "TOKEN_BUDGET_EXCEEDED");
    assert!(accept_output(&p, 1, json!("abc"), &vars).is_ok());
}

/// An agent's calls (AGT-4) are dispatched by its loop, never by the scheduler, and a failed
/// call (the model reads the error) does not fail the run.
#[test]
fn agent_calls_are_neither_scheduled_nor_fatal() {
    let mut call = step("answer#t1", Mode::Parallel, &[], "unused");
    call.output.variable = None;
    call.call_of = Some("answer".into());
    let p = plan(vec![step("answer", Mode::Sequential, &[], "a"), call]);
    let mut statuses = vec![StepStatus::Running, StepStatus::Pending];
    let mut vars = Map::new();
    assert!(advance(&p, &mut statuses, &mut vars).is_empty());
    let mut statuses = vec![StepStatus::Running, StepStatus::Failed];
    assert!(advance(&p, &mut statuses, &mut vars).is_empty());
}
