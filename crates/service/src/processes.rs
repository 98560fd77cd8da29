//! Processes (PROC-1..7, PROC-9, PROC-10).

use std::collections::{HashMap, HashSet};

use aiden_domain::{
    access::{ensure_owner, ensure_readable, Owned, Sharing},
    process::{
        decide_create, decide_update, merge_patch, Definition, NewProcess, Process, ProcessPatch,
        Target, Targets,
    },
    tool::Tool,
    user::Caller,
    Error as Rule, Id,
};
use aiden_graph::{processes, references, resources, Kind, Tx};
use serde::Serialize;

use crate::{
    common::check_precondition,
    common::ensure_absent,
    now,
    tx::{read_tx, write_tx},
    App, Page, PageRequest, Result,
};

/// One immutable version of a Process definition.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessVersion {
    pub version: i64,
    pub created_at: String,
    #[serde(flatten)]
    pub definition: serde_json::Value,
}

fn owned(p: &Process) -> Owned<'_> {
    Owned {
        owner_id: p.owner_id.as_str(),
        shared: p.shared,
        sharing: Sharing::Shareable,
    }
}

/// The static depth of each Process reachable from `roots` (PROC-7), walking current versions
/// level by level; `None` when a chain reaches `defining` (a cycle through the new definition).
async fn static_depths(
    tx: &mut Tx,
    roots: &[Id],
    defining: &Id,
    limit: u32,
) -> Result<HashMap<Id, Option<u32>>> {
    let mut calls: HashMap<String, Vec<String>> = HashMap::new();
    let mut frontier: Vec<String> = roots.iter().map(|r| r.to_string()).collect();
    let mut seen: HashSet<String> = frontier.iter().cloned().collect();
    for _ in 0..=limit {
        if frontier.is_empty() {
            break;
        }
        let found = processes::callees(tx, &frontier).await?;
        frontier = found
            .values()
            .flatten()
            .filter(|c| seen.insert((*c).clone()))
            .cloned()
            .collect();
        calls.extend(found);
    }
    fn depth(
        id: &str,
        calls: &HashMap<String, Vec<String>>,
        defining: &str,
        stack: &mut Vec<String>,
        cap: u32,
    ) -> Option<u32> {
        if id == defining || stack.iter().any(|s| s == id) || stack.len() as u32 > cap {
            return None;
        }
        stack.push(id.to_owned());
        let mut deepest = 0;
        for c in calls.get(id).into_iter().flatten() {
            match depth(c, calls, defining, stack, cap) {
                Some(d) => deepest = deepest.max(d),
                None => {
                    stack.pop();
                    return None;
                }
            }
        }
        stack.pop();
        Some(deepest + 1)
    }
    Ok(roots
        .iter()
        .map(|r| {
            (
                r.clone(),
                depth(
                    r.as_str(),
                    &calls,
                    defining.as_str(),
                    &mut Vec::new(),
                    limit + 1,
                ),
            )
        })
        .collect())
}

/// Looks up every step target the rules need (PROC-2, PROC-5, PROC-7).
async fn load_targets(tx: &mut Tx, process_id: &Id, def: &Definition) -> Result<Targets> {
    let mut tools = HashMap::new();
    for id in def.tool_ids() {
        if let Some(t) = resources::get::<Tool>(tx, Kind::Tool, id.as_str()).await? {
            tools.insert(
                id,
                Target::Tool {
                    owner_id: t.owner_id,
                    shared: t.shared,
                    operation_type: t.structure.operation.operation_type(),
                    input_schema: t.structure.input_schema,
                },
            );
        }
    }
    let called: Vec<Id> = def.process_ids().into_iter().collect();
    let depths = static_depths(tx, &called, process_id, def.max_recursion_depth).await?;
    let mut procs = HashMap::new();
    for id in called {
        if let Some(p) = resources::get::<Process>(tx, Kind::Process, id.as_str()).await? {
            let depth = depths.get(&id).copied().flatten();
            procs.insert(
                id,
                Target::Process {
                    owner_id: p.owner_id,
                    shared: p.shared,
                    initial_context: p.definition.initial_context,
                    depth,
                },
            );
        }
    }
    Ok(Targets {
        tools,
        processes: procs,
    })
}

impl App {
    pub async fn create_process(&self, caller: &Caller, input: NewProcess) -> Result<Process> {
        let id = aiden_domain::ids::id_or_new(input.id.clone());
        write_tx!(self, |tx| {
            ensure_absent(&mut tx, Kind::Process, id.as_str()).await?;
            let targets = load_targets(&mut tx, &id, &input.definition()).await?;
            let mut body = input.clone();
            body.id = Some(id.clone());
            let p = decide_create(body, &targets, &caller.id, &now())?;
            processes::create(&mut tx, &p, &now()).await?;
            Ok(p.into_inner())
        })
    }

    pub async fn get_process(&self, caller: &Caller, id: &str) -> Result<Process> {
        let p: Process = self.load(Kind::Process, id).await?;
        ensure_readable(caller, &owned(&p))?;
        Ok(p)
    }

    pub async fn list_processes(
        &self,
        caller: &Caller,
        page: PageRequest,
    ) -> Result<Page<Process>> {
        self.list(
            caller,
            Kind::Process,
            Sharing::Shareable,
            page,
            |p: &Process| p.id.to_string(),
        )
        .await
    }

    /// PUT: the whole Process; a changed definition becomes a new version (PROC-9).
    pub async fn replace_process(
        &self,
        caller: &Caller,
        id: &str,
        input: NewProcess,
        if_revision: Option<i64>,
    ) -> Result<Process> {
        self.update_process_with(caller, id, if_revision, move |_| Ok(input.clone()))
            .await
    }

    /// PATCH: merged into the current Process, then as PUT.
    pub async fn patch_process(
        &self,
        caller: &Caller,
        id: &str,
        patch: ProcessPatch,
        if_revision: Option<i64>,
    ) -> Result<Process> {
        self.update_process_with(caller, id, if_revision, move |current| {
            Ok(merge_patch(current, patch.clone())?)
        })
        .await
    }

    async fn update_process_with(
        &self,
        caller: &Caller,
        id: &str,
        if_revision: Option<i64>,
        body: impl Fn(&Process) -> Result<NewProcess>,
    ) -> Result<Process> {
        write_tx!(self, |tx| {
            let current: Process = resources::get_for_update(&mut tx, Kind::Process, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(&current))?;
            check_precondition(if_revision, current.revision)?;
            let input = body(&current)?;
            let targets = load_targets(&mut tx, &current.id, &input.definition()).await?;
            let update = decide_update(&current, input, &targets, &now())?;
            if update.get().process.revision != current.revision
                && !processes::update(&mut tx, current.revision, &update, &now()).await?
            {
                return Err(crate::Error::LostRace);
            }
            Ok(update.into_inner().process)
        })
    }

    pub async fn process_versions(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Page<ProcessVersion>> {
        self.get_process(caller, id).await?;
        let rows = read_tx!(self, |tx| { Ok(processes::versions(&mut tx, id).await?) })?;
        let items = rows
            .into_iter()
            .map(|r| {
                let definition = serde_json::from_str(&r.doc)
                    .map_err(|e| aiden_graph::Error::Decode(e.to_string()))?;
                Ok(ProcessVersion {
                    version: r.number,
                    created_at: r.created_at,
                    definition,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Page {
            items,
            next_cursor: None,
        })
    }

    /// PROC-10: not while a Conversation or Alternative refers to it; nor while another
    /// Process calls it (its versions must replay).
    pub async fn delete_process(&self, caller: &Caller, id: &str) -> Result<()> {
        write_tx!(self, |tx| {
            let current: Process = resources::get_for_update(&mut tx, Kind::Process, id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_owner(caller, &owned(&current))?;
            let refs = references::process_references(&mut tx, id).await?;
            if refs.conversations > 0 || refs.alternatives > 0 || refs.callers > 0 {
                return Err(Rule::referenced(
                    "PROC-10",
                    format!(
                        "referenced by {} Conversation(s), {} Alternative(s) and {} step(s) of other Processes; disable it instead",
                        refs.conversations, refs.alternatives, refs.callers
                    ),
                )
                .into());
            }
            processes::delete(&mut tx, id).await?;
            Ok(())
        })
    }
}
