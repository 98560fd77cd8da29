//! Turns and Alternatives on the mutation path: user/system turns, agent turns run by a
//! Process, new Alternatives (edits, regenerations, continuing from another parent), switching
//! the active one, the tree and working memory. Every write decides from facts read in the same
//! transaction and writes the Turn first, so concurrent requests on one Turn serialize (TURN-2).

use std::collections::HashSet;

use aiden_domain::conversation::{
    memory::{self, PathRow, WorkingMemory},
    rules::{self, AlternativeKind, Attachment},
    tree::{self, AlternativeView, Context, TurnView},
    AltState, NewAgentTurn, NewAlternative, NewTurn, Regenerate, Speaker, SwitchActive,
    AGENT_CONTEXT,
};
use aiden_domain::{user::Caller, Error as Rule};
use aiden_graph::conversations::{self as conv, AltWithTurn};
use aiden_graph::{runs, Tx};
use aiden_jobs::EngineMessage;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::conversations::{conversation_view, ensure_own, status_of};
use crate::forks::{check_forkable, ForkSpec};
use crate::recall::Prefetched;
use crate::runs::{load_runnable, top_level_run};
use crate::views::{TreeView, TreeWindow};
use crate::{now, tx::write_tx, App, Result};

/// `202` for work handed to the engine: the Alternative is `generating` until its run ends.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Generating {
    pub turn_id: String,
    pub alternative_id: String,
    pub run_id: String,
    pub status: &'static str,
}

/// A new Alternative as it stands (`generating` for an agent one, whose run starts next).
pub struct AlternativeAdded {
    pub alternative: AlternativeView,
    pub generating: bool,
}

/// The Alternative `id` of a Turn view.
fn alternative_of(turn: TurnView, id: &str) -> Result<AlternativeView> {
    turn.alternatives
        .into_iter()
        .find(|a| a.id == id)
        .ok_or_else(|| Rule::NotFound.into())
}

fn one_turn(rows: Vec<AltWithTurn>) -> Result<TurnView> {
    let mut ctx = Context::default();
    for r in &rows {
        if let (Some(p), Some(a)) = (&r.parent_turn_id, &r.parent_active) {
            ctx.active_of_turn.insert(p.clone(), a.clone());
        }
        if r.has_children {
            ctx.responded_to.insert(r.alt.id.clone());
        }
    }
    let turn = rows
        .first()
        .map(AltWithTurn::turn_row)
        .ok_or(Rule::NotFound)?;
    let alts = rows.into_iter().map(AltWithTurn::alt_row).collect();
    Ok(tree::assemble(vec![turn], alts, &ctx)
        .pop()
        .ok_or(Rule::NotFound)?)
}

/// Where a new Turn of conversation `id` attaches (TURN-3), once the caller may write to it.
async fn attach_new_turn(
    tx: &mut Tx,
    caller: &Caller,
    id: &str,
    parent_turn_id: Option<&str>,
    parent_alternative_id: Option<&str>,
) -> Result<Attachment> {
    let (c, parent) = conv::facts_with_turn(tx, id, parent_turn_id)
        .await?
        .ok_or(Rule::NotFound)?;
    ensure_own(caller, &c.owner_id)?;
    rules::ensure_writable(status_of(&c.status))?;
    Ok(rules::attach(
        id,
        c.turn_count > 0,
        parent_turn_id,
        parent.as_ref(),
        parent_alternative_id,
    )?)
}

/// What an agent run is prepared to answer: a Turn of a Conversation, by a Process, attached
/// where `at` says, with the retrieved-context search made before the transaction, if any.
struct Answering<'a> {
    conversation_id: &'a str,
    turn_id: &'a str,
    process_id: &'a str,
    at: &'a Attachment,
    prefetched: Option<&'a Prefetched>,
}

/// An agent run to start once the transaction commits.
struct AgentRun {
    run_id: String,
    alternative: conv::NewAlternative,
}

impl App {
    /// WM-1..3: the view of `path` with its conversation's notes, and the ids on the path
    /// (which retrieved context does not repeat).
    async fn assemble_memory(
        &self,
        conversation_id: &str,
        path: Vec<PathRow>,
        notes: conv::MemoryNotes,
        last_updated: String,
    ) -> Result<(WorkingMemory, HashSet<String>)> {
        let on_path: HashSet<String> = path.iter().map(|p| p.alternative_id.clone()).collect();
        let conv::MemoryNotes {
            summaries,
            chosen,
            carousel,
        } = notes;
        let summaries = summaries.iter().map(Into::into).collect();
        let wm = memory::assemble(conversation_id, path, summaries, last_updated)?;
        Ok((self.with_notes(wm, chosen, carousel).await?, on_path))
    }

    /// The working memory at `alternative_id`, read inside `tx` (what an agent run is given),
    /// and that Alternative's own content (which a covering Summary may have replaced in it).
    async fn memory_in(
        &self,
        tx: &mut Tx,
        owner_id: &str,
        conversation_id: &str,
        alternative_id: &str,
        prefetched: Option<&Prefetched>,
    ) -> Result<(WorkingMemory, String)> {
        let (path, notes) = tokio::join!(
            conv::path_in(tx, alternative_id),
            conv::memory_notes(&self.graph, conversation_id)
        );
        let path = path?;
        let content = path
            .iter()
            .find(|p| p.alternative_id == alternative_id)
            .and_then(|p| p.content.clone())
            .unwrap_or_default();
        let (wm, on_path) = self
            .assemble_memory(conversation_id, path, notes?, now())
            .await?;
        Ok((
            self.with_retrieved_context(wm, owner_id, &on_path, prefetched)
                .await,
            content,
        ))
    }

    /// [`App::prefetch_context`] for a new generation of agent Turn `turn_id`: it answers its
    /// parent Turn's Alternative (`chosen`, else the active one).
    async fn prefetch_for_sibling(
        &self,
        caller: &Caller,
        turn_id: &str,
        chosen: Option<&str>,
    ) -> Option<Prefetched> {
        let rows = conv::turn_view_autocommit(&self.graph, turn_id)
            .await
            .ok()?;
        let parent_turn_id = rows.first()?.parent_turn_id.clone()?;
        self.prefetch_context(caller, &parent_turn_id, chosen).await
    }

    /// Checks the Process and prepares its run and the generating Alternative: the run's
    /// initial context is the agent context (PROC-6 when the Process asks for more).
    async fn prepare_agent_run(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        answer: Answering<'_>,
    ) -> Result<AgentRun> {
        let Answering {
            conversation_id,
            turn_id,
            process_id,
            at,
            prefetched,
        } = answer;
        let loaded = load_runnable(tx, caller, process_id).await?;
        let quota_now = self.clock.now();
        let quota = loaded.plan.quota.as_ref();
        crate::limits::check_start(tx, caller, process_id, quota, quota_now).await?;
        if let Some(name) = loaded
            .initial_context
            .iter()
            .find(|n| !AGENT_CONTEXT.contains(&n.as_str()))
        {
            return Err(Rule::invariant(
                "PROC-6",
                "/processId",
                format!(
                    "the process needs `{name}`; an agent turn offers {}",
                    AGENT_CONTEXT.join(", ")
                ),
            )
            .into());
        }
        let parent_alt = at.parent_alternative_id.as_deref().ok_or_else(|| {
            Rule::invariant(
                "TURN-3",
                "/parentTurnId",
                "an agent turn responds to a turn",
            )
        })?;
        let (wm, user_message) = self
            .memory_in(
                tx,
                caller.id.as_str(),
                conversation_id,
                parent_alt,
                prefetched,
            )
            .await?;
        let alternative_id = uuid::Uuid::now_v7().to_string();
        let run_id = uuid::Uuid::now_v7().to_string();
        let mut inputs = Map::new();
        inputs.insert("conversationId".into(), conversation_id.into());
        inputs.insert("turnId".into(), turn_id.into());
        inputs.insert("alternativeId".into(), alternative_id.clone().into());
        inputs.insert("userMessage".into(), user_message.into());
        inputs.insert(
            "workingMemory".into(),
            serde_json::to_value(&wm).unwrap_or(Value::Null),
        );
        let run = top_level_run(
            &run_id,
            caller,
            process_id,
            &loaded,
            &inputs,
            Some(alternative_id.clone()),
        );
        let now = now();
        runs::create(tx, &run, &now).await?;
        conv::set_default_process(tx, conversation_id, Some(process_id), &now).await?;
        Ok(AgentRun {
            run_id,
            alternative: conv::NewAlternative {
                alternative_id,
                content: None,
                state: AltState::Generating.as_str(),
                run_id: None,
                parent_alternative_id: at.parent_alternative_id.clone(),
                process_id: Some(process_id.to_owned()),
                process_version: Some(loaded.plan.version),
                process_version_id: Some(loaded.version_id.clone()),
            },
        })
    }

    /// FORK-1: an agent Alternative regenerated from a fork of the run that produced another
    /// Alternative of the Turn, with that run's inputs (its user message and working memory:
    /// the sibling answers the same message) and the new Alternative's id.
    async fn prepare_regeneration(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        answer: Answering<'_>,
        rg: &Regenerate,
    ) -> Result<AgentRun> {
        let source = conv::alternative_run(tx, answer.turn_id, &rg.alternative_id)
            .await?
            .ok_or_else(|| {
                Rule::invariant(
                    "FORK-3",
                    "/regenerate/alternativeId",
                    "not an Alternative of this Turn that a run generated",
                )
            })?;
        let original = runs::get(tx, &source).await?.ok_or(Rule::NotFound)?;
        check_forkable(&original, Some(answer.process_id))?;
        let mut inputs: Map<String, Value> = serde_json::from_str(&original.run.inputs)
            .map_err(|e| crate::Error::Internal(format!("run {source}: inputs: {e}")))?;
        let alternative_id = uuid::Uuid::now_v7().to_string();
        inputs.insert("alternativeId".into(), alternative_id.clone().into());
        let spec = ForkSpec {
            from_step: rg.from_step.clone(),
            process_version: rg.process_version,
            inputs,
            alternative_id: Some(alternative_id.clone()),
        };
        let forked = self.create_fork(tx, caller, &original, &spec).await?;
        Ok(AgentRun {
            run_id: forked.run_id,
            alternative: conv::NewAlternative {
                alternative_id,
                content: None,
                state: AltState::Generating.as_str(),
                run_id: None,
                parent_alternative_id: answer.at.parent_alternative_id.clone(),
                process_id: Some(answer.process_id.to_owned()),
                process_version: Some(forked.process_version),
                process_version_id: Some(forked.version_id),
            },
        })
    }

    async fn start_agent_run(&self, run_id: &str) {
        let start = EngineMessage::RunStart {
            run_id: run_id.to_owned(),
            created: None,
        };
        self.notify_engine(&start, false).await;
    }

    /// `POST /v1/conversations/{id}/turns`: a user or system Turn with its first Alternative.
    pub async fn create_turn(&self, caller: &Caller, id: &str, b: NewTurn) -> Result<TurnView> {
        rules::check_content(&b.content)?;
        let speaker = Speaker::from(b.speaker);
        let _queued = self.stripes.lock(id).await;
        let view = write_tx!(self, |tx| {
            let at = attach_new_turn(
                &mut tx,
                caller,
                id,
                b.parent_turn_id.as_deref(),
                b.parent_alternative_id.as_deref(),
            )
            .await?;
            let turn_id = uuid::Uuid::now_v7().to_string();
            let first = conv::NewAlternative {
                alternative_id: uuid::Uuid::now_v7().to_string(),
                content: Some(b.content.clone()),
                state: AltState::Valid.as_str(),
                parent_alternative_id: at.parent_alternative_id.clone(),
                ..Default::default()
            };
            let new_turn = conv::NewTurn {
                conversation_id: id,
                turn_id: &turn_id,
                speaker: speaker.as_str(),
                turn_type: b.turn_type.as_str(),
                sequence: at.sequence,
                parent_turn_id: at.parent_turn_id.as_deref(),
                first,
            };
            conv::create_turn(&mut tx, &new_turn, &now()).await?;
            one_turn(conv::turn_view(&mut tx, &turn_id).await?)
        })?;
        self.content_committed();
        Ok(view)
    }

    /// `POST /v1/conversations/{id}/agent-turns`: an agent Turn whose Alternative a run of the
    /// Process generates; the Conversation's DEFAULT_PROCESS follows the choice (CONV-2).
    pub async fn create_agent_turn(
        &self,
        caller: &Caller,
        id: &str,
        b: NewAgentTurn,
    ) -> Result<Generating> {
        self.admission.admit()?;
        let prefetched = self
            .prefetch_context(
                caller,
                &b.parent_turn_id,
                b.parent_alternative_id.as_deref(),
            )
            .await;
        let queued = self.stripes.lock(id).await;
        let started = write_tx!(self, |tx| {
            let at = attach_new_turn(
                &mut tx,
                caller,
                id,
                Some(&b.parent_turn_id),
                b.parent_alternative_id.as_deref(),
            )
            .await?;
            let turn_id = uuid::Uuid::now_v7().to_string();
            let process_id = match &b.process_id {
                Some(p) => p.clone(),
                None => default_answerer(&mut tx, caller, id).await?,
            };
            let answering = Answering {
                conversation_id: id,
                turn_id: &turn_id,
                process_id: &process_id,
                at: &at,
                prefetched: prefetched.as_ref(),
            };
            let mut agent = self.prepare_agent_run(&mut tx, caller, answering).await?;
            agent.alternative.run_id = Some(agent.run_id.clone());
            let new_turn = conv::NewTurn {
                conversation_id: id,
                turn_id: &turn_id,
                speaker: Speaker::Agent.as_str(),
                turn_type: "message",
                sequence: at.sequence,
                parent_turn_id: at.parent_turn_id.as_deref(),
                first: agent.alternative.clone(),
            };
            conv::create_turn(&mut tx, &new_turn, &now()).await?;
            Ok(Generating {
                turn_id,
                alternative_id: agent.alternative.alternative_id,
                run_id: agent.run_id,
                status: AltState::Generating.as_str(),
            })
        })?;
        drop(queued);
        self.start_agent_run(&started.run_id).await;
        Ok(started)
    }

    /// `POST /v1/turns/{turnId}/alternatives`: a revised prompt (user/system Turn) or a new
    /// generation (agent Turn), attached to the parent's chosen Alternative; it becomes active.
    pub async fn add_alternative(
        &self,
        caller: &Caller,
        turn_id: &str,
        b: NewAlternative,
    ) -> Result<AlternativeAdded> {
        let mut prefetched = None;
        if b.process_id.is_some() {
            self.admission.admit()?;
            prefetched = self
                .prefetch_for_sibling(caller, turn_id, b.parent_alternative_id.as_deref())
                .await;
        }
        let queued = self.stripes.lock(turn_id).await;
        let added = write_tx!(self, |tx| {
            let f = conv::facts_with_parent(&mut tx, turn_id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_own(caller, &f.conversation.owner_id)?;
            rules::ensure_writable(status_of(&f.conversation.status))?;
            let kind = rules::alternative_kind(
                f.turn.speaker,
                b.content.as_deref(),
                b.process_id.as_deref(),
            )?;
            let at = rules::attach_sibling(
                &f.turn,
                f.parent.as_ref(),
                b.parent_alternative_id.as_deref(),
            )?;
            let now = now();
            match kind {
                AlternativeKind::Content(content) => {
                    let alt = conv::NewAlternative {
                        alternative_id: uuid::Uuid::now_v7().to_string(),
                        content: Some(content.to_owned()),
                        state: AltState::Valid.as_str(),
                        parent_alternative_id: at.parent_alternative_id.clone(),
                        ..Default::default()
                    };
                    conv::add_alternative(&mut tx, turn_id, &alt, &now).await?;
                    let turn = one_turn(conv::turn_view(&mut tx, turn_id).await?)?;
                    Ok(AlternativeAdded {
                        alternative: alternative_of(turn, &alt.alternative_id)?,
                        generating: false,
                    })
                }
                AlternativeKind::Process(process_id) => {
                    let conversation_id = f.conversation.id.clone();
                    let answering = Answering {
                        conversation_id: &conversation_id,
                        turn_id,
                        process_id,
                        at: &at,
                        prefetched: prefetched.as_ref(),
                    };
                    let mut agent = match &b.regenerate {
                        Some(rg) => {
                            self.prepare_regeneration(&mut tx, caller, answering, rg)
                                .await?
                        }
                        None => self.prepare_agent_run(&mut tx, caller, answering).await?,
                    };
                    agent.alternative.run_id = Some(agent.run_id.clone());
                    conv::add_alternative(&mut tx, turn_id, &agent.alternative, &now).await?;
                    let turn = one_turn(conv::turn_view(&mut tx, turn_id).await?)?;
                    Ok(AlternativeAdded {
                        alternative: alternative_of(turn, &agent.alternative.alternative_id)?,
                        generating: true,
                    })
                }
            }
        })?;
        drop(queued);
        match (&added.alternative.run_id, added.generating) {
            (Some(run_id), true) => self.start_agent_run(run_id).await,
            _ => self.content_committed(),
        }
        Ok(added)
    }

    /// `GET /v1/alternatives/{id}`.
    pub async fn get_alternative(&self, caller: &Caller, id: &str) -> Result<AlternativeView> {
        let turn_id = conv::turn_of_alternative(&self.graph, id)
            .await?
            .ok_or(Rule::NotFound)?;
        alternative_of(self.get_turn(caller, &turn_id).await?, id)
    }

    /// `PUT /v1/turns/{turnId}/active`: exactly one active Alternative, always (TURN-2).
    pub async fn switch_active(
        &self,
        caller: &Caller,
        turn_id: &str,
        b: SwitchActive,
    ) -> Result<TurnView> {
        let _queued = self.stripes.lock(turn_id).await;
        write_tx!(self, |tx| {
            let f = conv::facts_with_parent(&mut tx, turn_id)
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_own(caller, &f.conversation.owner_id)?;
            rules::ensure_writable(status_of(&f.conversation.status))?;
            rules::switch_target(&f.turn, &b.alternative_id)?;
            conv::switch_active(&mut tx, turn_id, &b.alternative_id, &now()).await?;
            one_turn(conv::turn_view(&mut tx, turn_id).await?)
        })
    }

    /// `GET /v1/turns/{turnId}`.
    pub async fn get_turn(&self, caller: &Caller, turn_id: &str) -> Result<TurnView> {
        let rows = conv::turn_view_autocommit(&self.graph, turn_id).await?;
        let owner = match rows.first() {
            Some(r) => conv::get_autocommit(&self.graph, &r.conversation_id)
                .await?
                .map(|c| c.owner_id),
            None => None,
        };
        ensure_own(caller, &owner.ok_or(Rule::NotFound)?)?;
        one_turn(rows)
    }

    /// `GET /v1/conversations/{id}/tree`: every Turn and Alternative, derivations included;
    /// with a window, only the Turns whose sequence (depth) lies in `from..=to`.
    pub async fn conversation_tree(
        &self,
        caller: &Caller,
        id: &str,
        window: Option<(i64, i64)>,
    ) -> Result<TreeView> {
        if let Some((from, to)) = window {
            if from < 1 || to < 1 {
                return Err(Rule::validation(
                    "/fromSequence",
                    "sequences start at 1 (a window with fromSequence > toSequence is empty)",
                )
                .into());
            }
        }
        let c = conv::get_autocommit(&self.graph, id)
            .await?
            .ok_or(Rule::NotFound)?;
        ensure_own(caller, &c.owner_id)?;
        let rows = match window {
            // One level on each side too: the level above tells whether a shown Alternative
            // answered its parent's active version (stale), the level below whether it has
            // children. They are not shown.
            Some((from, to)) => {
                conv::tree_window(&self.graph, id, from - 1, to.saturating_add(1)).await?
            }
            None => conv::tree(&self.graph, id).await?,
        };
        let mut turns = std::collections::HashMap::new();
        let mut alts = Vec::with_capacity(rows.len());
        for r in rows {
            turns
                .entry(r.alt.turn_id.clone())
                .or_insert_with(|| r.turn_row());
            alts.push(r.alt_row());
        }
        let ctx = Context::of_whole(&alts);
        let mut turns = tree::assemble(turns.into_values().collect(), alts, &ctx);
        if let Some((from, to)) = window {
            turns.retain(|t| (from..=to).contains(&t.sequence));
        }
        Ok(TreeView {
            conversation: conversation_view(&c),
            window: window.map(|(from, to)| TreeWindow {
                from_sequence: from,
                to_sequence: to,
            }),
            turns,
        })
    }

    /// `GET /v1/conversations/{id}/working-memory`: computed now from the path (WM-1..3), with
    /// the context retrieved for the message it ends with.
    pub async fn working_memory(
        &self,
        caller: &Caller,
        id: &str,
        turn_id: Option<&str>,
        alternative_id: Option<&str>,
    ) -> Result<WorkingMemory> {
        // Boxed: its reads run side by side, and a debug build's future for all of them is
        // larger than a worker thread's stack.
        Box::pin(self.memory_view(caller, id, turn_id, alternative_id, true)).await
    }

    /// Working memory without retrieved context: what memory upkeep compresses (retrieved
    /// context is chosen anew for every message, so a Summary could never shrink it).
    pub(crate) async fn path_memory(&self, caller: &Caller, id: &str) -> Result<WorkingMemory> {
        Box::pin(self.memory_view(caller, id, None, None, false)).await
    }

    async fn memory_view(
        &self,
        caller: &Caller,
        id: &str,
        turn_id: Option<&str>,
        alternative_id: Option<&str>,
        retrieve: bool,
    ) -> Result<WorkingMemory> {
        // The conversation, checked to be the caller's, with the message the search is for:
        // `alternative`'s, else the current one's.
        let own_conversation = |alternative: Option<String>| async move {
            let read = conv::get_with_message(&self.graph, id, alternative.as_deref())
                .await?
                .ok_or(Rule::NotFound)?;
            ensure_own(caller, &read.conversation.owner_id)?;
            Ok::<_, crate::Error>(read)
        };
        let foreign = |what: &str, v: &str| -> crate::Error {
            Rule::invariant(
                "WM-3",
                format!("/{what}"),
                format!("`{v}` is not part of this conversation"),
            )
            .into()
        };
        // The Alternative the path ends with: the one named (the conversation is then read
        // beside the path), else the named Turn's active one, else the conversation's current.
        let (known, start) = match (alternative_id, turn_id) {
            (Some(a), _) => (None, a.to_owned()),
            (None, Some(t)) => {
                let active = conv::active_alternative(&self.graph, t)
                    .await?
                    .filter(|a| a.conversation_id == id);
                let read = own_conversation(active.as_ref().map(|a| a.id.clone())).await?;
                let active = active.ok_or_else(|| foreign("turnId", t))?;
                (Some(read), active.id)
            }
            (None, None) => {
                let read = own_conversation(None).await?;
                let Some(current) = read.conversation.current_alternative_id.clone() else {
                    let updated_at = read.conversation.updated_at;
                    let wm = memory::assemble(id, Vec::new(), Vec::new(), updated_at)?;
                    return self.with_entities(wm).await;
                };
                (Some(read), current)
            }
        };
        // The conversation's owner must be the caller: the other reads start beside its read,
        // but a stranger's request ends as soon as it fails (404, as before), and the message
        // goes to the embedder only once the caller is known to own it.
        let (owner_known, owned_message) = tokio::sync::oneshot::channel::<Option<String>>();
        let conversation = async {
            let read = match known {
                Some(read) => Ok(read),
                None => own_conversation(Some(start.clone())).await,
            };
            let text = read.as_ref().ok().and_then(|r| r.message.as_ref());
            let text = text.filter(|m| m.conversation_id == id && m.id == start);
            let _ = owner_known.send(text.and_then(|m| m.content.clone()));
            read.map(|r| r.conversation)
        };
        // The search needs only the message the path ends with (`start`'s): it runs beside
        // the path, as the caller (who is then the owner).
        let search = Box::pin(async {
            if !retrieve {
                return None;
            }
            let text = owned_message.await.ok().flatten();
            self.search_for_context(caller.id.as_str(), id, text.as_deref())
                .await
        });
        let reads = async {
            Ok(tokio::join!(
                conv::path(&self.graph, &start),
                conv::memory_notes(&self.graph, id),
                search
            ))
        };
        let (c, (path, notes, searched)) = tokio::try_join!(conversation, reads)?;
        let path = path?;
        let at_turn = path
            .iter()
            .find(|p| p.alternative_id == start)
            .map(|p| p.turn_id.clone());
        match (at_turn, turn_id) {
            (None, _) => return Err(foreign("alternativeId", &start)),
            (Some(t), Some(asked)) if t != asked => return Err(foreign("alternativeId", &start)),
            _ => {}
        }
        let (wm, on_path) = self.assemble_memory(id, path, notes?, c.updated_at).await?;
        if !retrieve {
            return Ok(wm);
        }
        Ok(self
            .with_retrieved_context(wm, &c.owner_id, &on_path, searched.as_ref())
            .await)
    }
}

/// The Process an agent turn runs when none is named: the conversation's default, else the
/// caller's (CONV-2).
async fn default_answerer(tx: &mut Tx, caller: &Caller, conversation_id: &str) -> Result<String> {
    let conversation = conv::get(tx, conversation_id)
        .await?
        .ok_or(Rule::NotFound)?;
    if let Some(p) = conversation.default_process_id {
        return Ok(p);
    }
    let user = aiden_graph::users::get(tx, caller.id.as_str()).await?;
    user.and_then(|u| u.default_process_id).ok_or_else(|| {
        Rule::invariant(
            "CONV-2",
            "/processId",
            "name the Process that answers: neither the conversation nor you have a default",
        )
        .into()
    })
}
