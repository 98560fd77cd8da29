//! The rules a definition must keep (PROC-1..7, AGT-1/2), checked against the targets its steps
//! call before any version of it is stored.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::{Definition, Mode, Step, MAX_STEPS, PROCESS_MAX_TIMEOUT_MS, TOOL_MAX_TIMEOUT_MS};
use crate::{
    error::Violations,
    schema::{check_instance, property_names, required_names},
    template_vars::{is_templated, template_variables},
    Error, Id,
};

/// What the rules know about a step's target.
#[derive(Debug, Clone)]
pub enum Target {
    Tool {
        owner_id: Id,
        shared: bool,
        input_schema: Value,
        /// AGT-1: an agent step's model is an `llm_call` Tool.
        operation_type: crate::OperationType,
    },
    /// `depth`: the length of the longest static CALLS_PROCESS chain starting at that Process
    /// (1 when it calls none); `None` when the chain reaches back to the Process being defined.
    Process {
        owner_id: Id,
        shared: bool,
        initial_context: Vec<String>,
        depth: Option<u32>,
    },
}

/// Targets by id, looked up by the service before deciding. Absent ids are missing here.
pub struct Targets {
    pub tools: HashMap<Id, Target>,
    pub processes: HashMap<Id, Target>,
}

impl Definition {
    /// The Tools the steps call, agent steps' tools included.
    pub fn tool_ids(&self) -> BTreeSet<Id> {
        let agent_tools = self
            .steps
            .iter()
            .filter_map(|s| s.agent.as_ref())
            .flat_map(|a| a.tools.iter().cloned());
        self.steps
            .iter()
            .filter_map(|s| s.tool.clone())
            .chain(agent_tools)
            .collect()
    }

    pub fn process_ids(&self) -> BTreeSet<Id> {
        self.steps
            .iter()
            .filter_map(|s| s.process.clone())
            .collect()
    }

    /// The static depth of this definition given its callees' depths (PROC-7).
    pub fn depth(&self, targets: &Targets) -> Option<u32> {
        let mut deepest = 0;
        for id in self.process_ids() {
            match targets.processes.get(&id) {
                Some(Target::Process { depth: Some(d), .. }) => deepest = deepest.max(*d),
                Some(Target::Process { depth: None, .. }) => return None,
                _ => {}
            }
        }
        Some(deepest + 1)
    }

    /// Every rule of PROC-1..7 for this definition owned by `owner`.
    pub fn check(&self, owner: &Id, targets: &Targets) -> Result<(), Error> {
        let mut v = Violations::default();
        self.check_shape(&mut v)?;
        self.check_dependencies(&mut v);
        self.check_targets(owner, targets, &mut v);
        self.check_variables(&mut v);
        match self.depth(targets) {
            None => v.rule(
                "PROC-7",
                "/steps",
                "the CALLS_PROCESS chain leads back to this Process",
            ),
            Some(d) if d > self.max_recursion_depth => v.rule(
                "PROC-7",
                "/maxRecursionDepth",
                format!(
                    "the static CALLS_PROCESS chain is {d} deep, above maxRecursionDepth {}",
                    self.max_recursion_depth
                ),
            ),
            Some(_) => {}
        }
        v.into_result()
    }

    /// PROC-1 plus plain field validation (400s).
    fn check_shape(&self, v: &mut Violations) -> Result<(), Error> {
        if self.steps.is_empty() {
            v.rule("PROC-1", "/steps", "a Process needs at least one step");
        }
        if self.steps.len() > MAX_STEPS {
            return Err(Error::validation(
                "/steps",
                format!("at most {MAX_STEPS} steps"),
            ));
        }
        if !(1..=32).contains(&self.max_recursion_depth) {
            return Err(Error::validation("/maxRecursionDepth", "must be 1-32"));
        }
        if let Some(q) = &self.quota {
            q.check("/quota")?;
        }
        let mut seen = BTreeSet::new();
        for (i, step) in self.steps.iter().enumerate() {
            if Id::parse(&step.id).is_err() {
                return Err(Error::validation(
                    format!("/steps/{i}/id"),
                    "step ids are 1-128 letters, digits, '-', '_' or '.'",
                ));
            }
            if !seen.insert(step.id.as_str()) {
                v.rule(
                    "PROC-1",
                    format!("/steps/{i}/id"),
                    format!("step id '{}' is used twice", step.id),
                );
            }
            if let Some(agent) = &step.agent {
                agent.check_bounds(&format!("/steps/{i}"))?;
            }
            let max = if step.process.is_some() {
                PROCESS_MAX_TIMEOUT_MS
            } else {
                TOOL_MAX_TIMEOUT_MS
            };
            if let Some(t) = step.execution.timeout {
                if t == 0 || t > max {
                    return Err(Error::validation(
                        format!("/steps/{i}/execution/timeout"),
                        format!("must be 1-{max} ms"),
                    ));
                }
            }
        }
        for (i, name) in self.initial_context.iter().enumerate() {
            if !is_identifier(name) {
                return Err(Error::validation(
                    format!("/initialContext/{i}"),
                    "must be an identifier",
                ));
            }
        }
        Ok(())
    }

    /// PROC-3 and PROC-4.
    fn check_dependencies(&self, v: &mut Violations) {
        let position: HashMap<&str, usize> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i))
            .collect();
        for (i, step) in self.steps.iter().enumerate() {
            for (k, dep) in step.depends_on.iter().enumerate() {
                let path = format!("/steps/{i}/dependsOn/{k}");
                match position.get(dep.as_str()) {
                    Some(&j) if j == i => v.rule("PROC-3", path, "a step cannot depend on itself"),
                    Some(&j) if j > i => {
                        v.rule("PROC-3", path, format!("'{dep}' is listed after this step"))
                    }
                    Some(_) => {}
                    None => v.rule("PROC-3", path, format!("no step '{dep}' in this Process")),
                }
            }
        }
        for group in parallel_groups(&self.steps) {
            let members: BTreeSet<&str> =
                group.iter().map(|&i| self.steps[i].id.as_str()).collect();
            for &i in &group {
                for (k, dep) in self.steps[i].depends_on.iter().enumerate() {
                    if members.contains(dep.as_str()) {
                        v.rule(
                            "PROC-4",
                            format!("/steps/{i}/dependsOn/{k}"),
                            format!("'{dep}' is in the same parallel group"),
                        );
                    }
                }
            }
        }
    }

    /// PROC-2 and PROC-5.
    fn check_targets(&self, owner: &Id, targets: &Targets, v: &mut Violations) {
        for (i, step) in self.steps.iter().enumerate() {
            let path = format!("/steps/{i}");
            let target = match (&step.tool, &step.process) {
                (Some(_), Some(_)) | (None, None) => {
                    v.rule(
                        "PROC-2",
                        &path,
                        "a step calls exactly one of `tool` or `process`",
                    );
                    continue;
                }
                (Some(id), None) => targets.tools.get(id).map(|t| (t, "tool")),
                (None, Some(id)) => targets.processes.get(id).map(|t| (t, "process")),
            };
            let visible = |o: &Id, shared: bool| o == owner || shared;
            match target {
                Some((
                    Target::Tool {
                        owner_id,
                        shared,
                        operation_type,
                        ..
                    },
                    _,
                )) if visible(owner_id, *shared) && step.agent.is_some() => {
                    check_agent(&path, step, *operation_type, owner, targets, v);
                }
                Some((
                    Target::Tool {
                        owner_id,
                        shared,
                        input_schema,
                        ..
                    },
                    _,
                )) if visible(owner_id, *shared) => {
                    check_tool_inputs(&path, &step.inputs, input_schema, v);
                }
                Some((
                    Target::Process {
                        owner_id,
                        shared,
                        initial_context,
                        ..
                    },
                    _,
                )) if visible(owner_id, *shared) => {
                    check_process_inputs(&path, &step.inputs, initial_context, v);
                }
                _ => {
                    let field = if step.tool.is_some() {
                        "tool"
                    } else {
                        "process"
                    };
                    v.rule(
                        "PROC-2",
                        format!("{path}/{field}"),
                        format!("no {field} with this id that the Process owner can use"),
                    );
                }
            }
        }
    }

    /// PROC-6: every variable comes from initialContext or a step guaranteed to finish first.
    fn check_variables(&self, v: &mut Violations) {
        let initial: BTreeSet<&str> = self.initial_context.iter().map(String::as_str).collect();
        let mut producer: HashMap<&str, usize> = HashMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            if let Some(var) = &step.output.variable {
                let path = format!("/steps/{i}/output/variable");
                if !is_identifier(var) {
                    v.rule("PROC-6", path, "must be an identifier");
                } else if initial.contains(var.as_str()) || producer.insert(var, i).is_some() {
                    v.rule("PROC-6", path, format!("'{var}' is already defined"));
                }
            }
        }
        let before = self.guaranteed_before();
        let defined_for = |i: Option<usize>, var: &str| -> bool {
            initial.contains(var)
                || producer.get(var).is_some_and(|&p| match i {
                    Some(i) => before[i].contains(&p),
                    None => true,
                })
        };
        for (i, step) in self.steps.iter().enumerate() {
            let mut used: Vec<(String, String)> = Vec::new();
            for (key, value) in &step.inputs {
                let mut vars = BTreeSet::new();
                collect_vars(value, &mut vars);
                used.extend(
                    vars.into_iter()
                        .map(|var| (format!("/steps/{i}/inputs/{key}"), var)),
                );
            }
            if let Some(c) = &step.execution.condition {
                used.extend(
                    template_variables(c)
                        .into_iter()
                        .map(|var| (format!("/steps/{i}/execution/condition"), var)),
                );
            }
            for (path, var) in used {
                if !defined_for(Some(i), &var) {
                    v.rule("PROC-6", path, format!("'{var}' is not in initialContext nor produced by a step that finishes before this one"));
                }
            }
        }
        if let Some(t) = &self.output_template {
            for var in template_variables(t) {
                if !defined_for(None, &var) {
                    v.rule(
                        "PROC-6",
                        "/outputTemplate",
                        format!("'{var}' is not in initialContext nor produced by any step"),
                    );
                }
            }
        }
    }

    /// For each step, the steps certain to have finished before it starts: a sequential step
    /// waits for every earlier step; a parallel one only for its `dependsOn` (transitively).
    pub fn guaranteed_before(&self) -> Vec<BTreeSet<usize>> {
        let position: HashMap<&str, usize> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i))
            .collect();
        let mut before: Vec<BTreeSet<usize>> = Vec::with_capacity(self.steps.len());
        for (i, step) in self.steps.iter().enumerate() {
            let set = match step.execution.mode {
                Mode::Sequential => (0..i).collect(),
                Mode::Parallel => {
                    let mut set = BTreeSet::new();
                    for dep in &step.depends_on {
                        if let Some(&j) = position.get(dep.as_str()).filter(|&&j| j < i) {
                            set.insert(j);
                            set.extend(before[j].iter().copied());
                        }
                    }
                    set
                }
            };
            before.push(set);
        }
        before
    }
}

/// Maximal runs of consecutive parallel steps (PROC-4).
pub fn parallel_groups(steps: &[Step]) -> Vec<Vec<usize>> {
    let mut groups = Vec::new();
    let mut current = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if step.execution.mode == Mode::Parallel {
            current.push(i);
        } else if !current.is_empty() {
            groups.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

fn collect_vars(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => out.extend(template_variables(s)),
        Value::Array(items) => items.iter().for_each(|i| collect_vars(i, out)),
        Value::Object(map) => map.values().for_each(|i| collect_vars(i, out)),
        _ => {}
    }
}

fn is_templated_value(value: &Value) -> bool {
    match value {
        Value::String(s) => is_templated(s),
        Value::Array(items) => items.iter().any(is_templated_value),
        Value::Object(map) => map.values().any(is_templated_value),
        _ => false,
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// PROC-5 for a Tool: required keys present, no unknown keys, literals type-checked now.
fn check_tool_inputs(path: &str, inputs: &Map<String, Value>, schema: &Value, v: &mut Violations) {
    for key in required_names(schema) {
        if !inputs.contains_key(&key) {
            v.rule(
                "PROC-5",
                format!("{path}/inputs"),
                format!("the Tool requires input '{key}'"),
            );
        }
    }
    let declared: BTreeSet<String> = property_names(schema).into_iter().collect();
    let properties = schema.get("properties");
    for (key, value) in inputs {
        if !declared.contains(key) {
            v.rule(
                "PROC-5",
                format!("{path}/inputs/{key}"),
                format!("the Tool has no input '{key}'"),
            );
            continue;
        }
        if is_templated_value(value) {
            continue; // checked at execution time, once interpolated
        }
        if let Some(prop) = properties.and_then(|p| p.get(key)) {
            v.extend(check_instance(
                "PROC-5",
                &format!("{path}/inputs/{key}"),
                prop,
                value,
            ));
        }
    }
}

/// PROC-5 for a called Process: every initialContext variable provided, nothing unknown.
fn check_process_inputs(
    path: &str,
    inputs: &Map<String, Value>,
    initial_context: &[String],
    v: &mut Violations,
) {
    for name in initial_context {
        if !inputs.contains_key(name) {
            v.rule(
                "PROC-5",
                format!("{path}/inputs"),
                format!("the called Process requires '{name}'"),
            );
        }
    }
    for key in inputs.keys() {
        if !initial_context.contains(key) {
            v.rule(
                "PROC-5",
                format!("{path}/inputs/{key}"),
                format!("the called Process has no initialContext '{key}'"),
            );
        }
    }
}

/// AGT-1 / AGT-2: an agent step's model is an `llm_call` Tool, it is given a `message`, and
/// every tool it may call exists and is usable by the Process owner (the policy gate decides
/// per run what the model is actually offered).
fn check_agent(
    path: &str,
    step: &Step,
    model_operation: crate::OperationType,
    owner: &Id,
    targets: &Targets,
    v: &mut Violations,
) {
    if model_operation != crate::OperationType::LlmCall {
        v.rule(
            "AGT-1",
            format!("{path}/tool"),
            format!("an agent step's model must be an llm_call Tool, not {model_operation}"),
        );
    }
    if step.process.is_some() {
        v.rule(
            "AGT-1",
            format!("{path}/process"),
            "an agent step calls a model Tool, not a Process",
        );
    }
    if !step.inputs.contains_key("message") {
        v.rule(
            "AGT-1",
            format!("{path}/inputs"),
            "an agent step needs a `message` input",
        );
    }
    if let Some(k) = step
        .inputs
        .keys()
        .find(|k| !matches!(k.as_str(), "message" | "memory" | "preferences"))
    {
        v.rule(
            "AGT-1",
            format!("{path}/inputs/{k}"),
            "an agent step takes `message`, `memory` and `preferences`",
        );
    }
    let Some(agent) = &step.agent else { return };
    if let Some(router) = &agent.router {
        router.check(&format!("{path}/agent/router"), &agent.tools, v);
    }
    for tool in agent.approvals.keys() {
        if !agent.tools.contains(tool) {
            v.rule(
                "AGT-2",
                format!("{path}/agent/approvals/{tool}"),
                format!("`{tool}` is not one of the agent's tools"),
            );
        }
    }
    let mut seen = BTreeSet::new();
    for (k, id) in agent.tools.iter().enumerate() {
        let tool_path = format!("{path}/agent/tools/{k}");
        if !seen.insert(id) {
            v.rule("AGT-2", tool_path, format!("`{id}` is listed twice"));
            continue;
        }
        match targets.tools.get(id) {
            Some(Target::Tool {
                owner_id, shared, ..
            }) if owner_id == owner || *shared => {}
            _ => v.rule(
                "AGT-2",
                tool_path,
                format!("no tool `{id}` that the Process owner can use"),
            ),
        }
    }
}
