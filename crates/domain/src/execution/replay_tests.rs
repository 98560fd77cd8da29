use serde_json::json;

use super::*;
use crate::execution::fork::tests::{chain, plan, record, step, topic};
use crate::process::Mode;

fn replay_of(version: &Plan, recorded_plan: &Plan) -> Replayed {
    let inputs = topic("x");
    let (vars, steps) = record(recorded_plan, &inputs);
    let rec = Recorded {
        plan: recorded_plan,
        variables: &vars,
        steps: &steps,
    };
    replay(version, &inputs, &rec)
}

#[test]
fn replay_1_the_same_plan_replays_every_step_and_does_not_diverge() {
    let r = replay_of(&chain(), &chain());
    assert_eq!(r.steps_replayed, 3);
    assert_eq!(r.divergence, None);
}

#[test]
fn replay_1_a_changed_input_is_the_divergence_with_both_inputs() {
    let mut v2 = chain();
    v2.steps[1] = step("b", Mode::Sequential, &[], "{{a}}!", "t");
    let r = replay_of(&v2, &chain());
    let d = r.divergence.unwrap();
    assert_eq!(
        (d.step_id.as_str(), d.kind),
        ("b", DivergenceKind::InputChanged)
    );
    assert_eq!(d.recorded_input, Some(json!({"q": "X"})));
    assert_eq!(d.replayed_input, Some(json!({"q": "X!"})));
    assert_eq!(r.steps_replayed, 1);
}

#[test]
fn replay_1_a_new_step_a_gone_step_and_a_new_target_diverge() {
    let mut v2 = chain();
    v2.steps
        .insert(1, step("extra", Mode::Sequential, &[], "{{a}}", "t"));
    let d = replay_of(&v2, &chain()).divergence.unwrap();
    assert_eq!((d.step_id.as_str(), d.kind), ("extra", DivergenceKind::New));

    let mut v3 = chain();
    v3.steps.pop();
    let d = replay_of(&v3, &chain()).divergence.unwrap();
    assert_eq!((d.step_id.as_str(), d.kind), ("c", DivergenceKind::Gone));

    let mut v4 = chain();
    v4.steps[2] = step("c", Mode::Sequential, &[], "{{b}}", "another-tool");
    let d = replay_of(&v4, &chain()).divergence.unwrap();
    assert_eq!(
        (d.step_id.as_str(), d.kind),
        ("c", DivergenceKind::CallChanged)
    );
}

#[test]
fn replay_1_a_condition_that_now_skips_a_recorded_step_diverges() {
    let mut v2 = chain();
    v2.steps[1].condition = Some("{{#if nope}}true{{/if}}".into());
    let d = replay_of(&v2, &chain()).divergence.unwrap();
    assert_eq!(
        (d.step_id.as_str(), d.kind),
        ("b", DivergenceKind::NowSkipped)
    );
}

#[test]
fn replay_1_a_hundred_runs_of_ten_steps_each_replay_whole() {
    let steps = (0..10)
        .map(|i| {
            let input = if i == 0 {
                "{{topic}}".to_owned()
            } else {
                format!("{{{{s{}}}}}", i - 1)
            };
            step(&format!("s{i}"), Mode::Sequential, &[], &input, "t")
        })
        .collect();
    let p = plan(steps);
    let inputs = topic("x");
    let (vars, recorded) = record(&p, &inputs);
    let rec = Recorded {
        plan: &p,
        variables: &vars,
        steps: &recorded,
    };
    for _ in 0..100 {
        assert_eq!(replay(&p, &inputs, &rec).steps_replayed, 10);
    }
}
