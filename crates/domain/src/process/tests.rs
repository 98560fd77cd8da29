use std::collections::{BTreeSet, HashMap};

use serde_json::{json, Value};

use super::*;
use crate::{Error, Id};

fn def(steps: Value) -> Definition {
    serde_json::from_value(
        json!({"initialContext": ["q"], "steps": steps, "outputTemplate": "{{b}}"}),
    )
    .unwrap()
}

fn targets() -> Targets {
    let schema = json!({"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}, "n": {"type": "number"}}});
    let owner = Id::parse("owner").unwrap();
    Targets {
        tools: [(
            Id::parse("t").unwrap(),
            Target::Tool {
                owner_id: owner,
                shared: false,
                input_schema: schema,
                operation_type: crate::OperationType::RestApi,
            },
        )]
        .into(),
        processes: HashMap::new(),
    }
}

fn invariants(result: Result<(), Error>) -> Vec<&'static str> {
    match result {
        Err(Error::Invariant(v)) => v.iter().filter_map(|v| v.invariant).collect(),
        other => panic!("expected invariant violations, got {other:?}"),
    }
}

#[test]
fn sequential_waits_for_all_parallel_only_for_dependencies() {
    let d = def(json!([
        {"id": "a", "tool": "t", "inputs": {"x": "{{q}}"}, "output": {"variable": "a"}},
        {"id": "p1", "tool": "t", "inputs": {"x": "{{a}}"}, "output": {"variable": "p1"}, "execution": {"mode": "parallel"}, "dependsOn": ["a"]},
        {"id": "p2", "tool": "t", "inputs": {"x": "{{q}}"}, "output": {"variable": "p2"}, "execution": {"mode": "parallel"}},
        {"id": "b", "tool": "t", "inputs": {"x": "{{p1}}{{p2}}"}, "output": {"variable": "b"}}
    ]));
    let before = d.guaranteed_before();
    assert_eq!(before[1], BTreeSet::from([0]));
    assert!(before[2].is_empty());
    assert_eq!(before[3], BTreeSet::from([0, 1, 2]));
    assert!(d.check(&Id::parse("owner").unwrap(), &targets()).is_ok());
}

#[test]
fn parallel_step_cannot_read_an_unawaited_variable() {
    let d = def(json!([
        {"id": "a", "tool": "t", "inputs": {"x": "{{q}}"}, "output": {"variable": "a"}},
        {"id": "p", "tool": "t", "inputs": {"x": "{{a}}"}, "output": {"variable": "b"}, "execution": {"mode": "parallel"}}
    ]));
    assert_eq!(
        invariants(d.check(&Id::parse("owner").unwrap(), &targets())),
        vec!["PROC-6"]
    );
}

#[test]
fn literal_inputs_are_type_checked() {
    let d = def(
        json!([{"id": "a", "tool": "t", "inputs": {"x": "ok", "n": "0.3"}, "output": {"variable": "b"}}]),
    );
    assert_eq!(
        invariants(d.check(&Id::parse("owner").unwrap(), &targets())),
        vec!["PROC-5"]
    );
}

/// A quota is an object, as the schema says: a sequence of its fields is refused, not read as
/// an empty quota (fuzzing found `"quota": [null, null]` stored as `{}`).
#[test]
fn a_quota_is_only_ever_an_object() {
    assert!(serde_json::from_str::<Quota>("[null, null]").is_err());
    assert!(serde_json::from_str::<Quota>(r#"{"maxConcurrent": 2, "nope": 1}"#).is_err());
    let q: Quota = serde_json::from_str(r#"{"maxConcurrent": 2}"#).unwrap();
    assert_eq!(q.max_concurrent, Some(2));
    assert_eq!(
        serde_json::from_str::<Quota>("{}").unwrap(),
        Quota::default()
    );
}
