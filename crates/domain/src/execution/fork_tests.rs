use serde_json::json;

use super::*;
use crate::execution::schedule::Target;
use crate::process::StepOutput;

/// A step calling Tool `tool` with `input` rendered from `{{prev}}`-style templates.
pub(crate) fn step(id: &str, mode: Mode, deps: &[&str], input: &str, tool: &str) -> PlanStep {
    PlanStep {
        id: id.into(),
        mode,
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
        condition: None,
        inputs: [("q".to_owned(), json!(input))].into_iter().collect(),
        output: StepOutput {
            variable: Some(id.into()),
            required: false,
            token_budget: None,
        },
        timeout_ms: 1000,
        target: Target::Tool {
            id: tool.into(),
            operation_type: crate::OperationType::RestApi,
            cost: Default::default(),
        },
        call_of: None,
        literal: None,
    }
}

pub(crate) fn plan(steps: Vec<PlanStep>) -> Plan {
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

/// `a → b → c`, each step's input naming the one before it.
pub(crate) fn chain() -> Plan {
    plan(vec![
        step("a", Mode::Sequential, &[], "{{topic}}", "t"),
        step("b", Mode::Sequential, &[], "{{a}}", "t"),
        step("c", Mode::Sequential, &[], "{{b}}", "t"),
    ])
}

/// The record of `plan` run on `inputs`, each step answering its input upper-cased.
pub(crate) fn record(
    plan: &Plan,
    inputs: &Map<String, Value>,
) -> (Map<String, Value>, Vec<RecordedStep>) {
    let mut vars = inputs.clone();
    let mut steps = Vec::new();
    for s in &plan.steps {
        let input = rendered_input(s, &vars).unwrap();
        let output = json!(input["q"].as_str().unwrap().to_uppercase());
        vars.insert(s.id.clone(), output.clone());
        steps.push(RecordedStep {
            step_id: s.id.clone(),
            step_run_id: format!("r0/{}", s.id),
            status: StepStatus::Completed,
            input_hash: Some(input_hash(&input)),
            output: Some(output),
            reused_from: None,
        });
    }
    (vars, steps)
}

pub(crate) fn topic(t: &str) -> Map<String, Value> {
    [("topic".to_owned(), json!(t))].into_iter().collect()
}

#[test]
fn fork_1_steps_upstream_of_the_fork_step_are_reusable_and_it_and_its_downstream_are_not() {
    let p = chain();
    let (vars, steps) = record(&p, &topic("x"));
    let original = Recorded {
        plan: &p,
        variables: &vars,
        steps: &steps,
    };
    let reuse = reusable(&p, 1, &original);
    assert_eq!(reuse.keys().collect::<Vec<_>>(), vec!["a"]);
    assert_eq!(reuse["a"].step_run_id, "r0/a");
    assert_eq!(reuse["a"].output, json!("X"));
    // From the last step: both earlier steps.
    assert_eq!(reusable(&p, 2, &original).len(), 2);
}

#[test]
fn fork_1_a_parallel_branch_beside_the_fork_step_is_reused() {
    let p = plan(vec![
        step("a", Mode::Sequential, &[], "{{topic}}", "t"),
        step("left", Mode::Parallel, &["a"], "{{a}}-l", "t"),
        step("right", Mode::Parallel, &["a"], "{{a}}-r", "t"),
        step(
            "join",
            Mode::Parallel,
            &["left", "right"],
            "{{left}}{{right}}",
            "t",
        ),
    ]);
    assert_eq!(downstream(&p, 1), vec![false, true, false, true]);
    let (vars, steps) = record(&p, &topic("x"));
    let original = Recorded {
        plan: &p,
        variables: &vars,
        steps: &steps,
    };
    let reuse = reusable(&p, 1, &original);
    assert_eq!(reuse.keys().collect::<Vec<_>>(), vec!["a", "right"]);
}

#[test]
fn fork_1_a_step_is_reused_only_when_its_input_renders_to_the_recorded_hash() {
    let p = chain();
    let (vars, steps) = record(&p, &topic("x"));
    let original = Recorded {
        plan: &p,
        variables: &vars,
        steps: &steps,
    };
    let reuse = reusable(&p, 2, &original);
    // The same run input: `a` is reused; a changed one renders another input and runs.
    assert!(reuse_for(&p.steps[0], &topic("x"), &reuse).is_some());
    assert!(reuse_for(&p.steps[0], &topic("y"), &reuse).is_none());
    // Not a candidate at all (the fork's step).
    assert!(reuse_for(&p.steps[2], &vars, &reuse).is_none());
}

#[test]
fn fork_1_a_step_bound_to_another_tool_in_the_new_version_is_not_reused() {
    let p = chain();
    let (vars, steps) = record(&p, &topic("x"));
    let original = Recorded {
        plan: &p,
        variables: &vars,
        steps: &steps,
    };
    let mut v2 = chain();
    v2.steps[0] = step("a", Mode::Sequential, &[], "{{topic}}", "other");
    let reuse = reusable(&v2, 2, &original);
    assert_eq!(reuse.keys().collect::<Vec<_>>(), vec!["b"]);
}

#[test]
fn fork_1_a_step_the_original_did_not_complete_is_not_reused() {
    let p = chain();
    let (vars, mut steps) = record(&p, &topic("x"));
    steps[0].status = StepStatus::Skipped;
    let original = Recorded {
        plan: &p,
        variables: &vars,
        steps: &steps,
    };
    assert!(!reusable(&p, 2, &original).contains_key("a"));
    // A step with no recorded hash (an agent step) is hashed from the original's plan.
    let (vars, mut steps) = record(&p, &topic("x"));
    steps[1].input_hash = None;
    let original = Recorded {
        plan: &p,
        variables: &vars,
        steps: &steps,
    };
    let reuse = reusable(&p, 2, &original);
    assert_eq!(reuse["b"].input_hash, input_hash(&json!({"q": "X"})));
}
