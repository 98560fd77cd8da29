//! The upkeep loop (hosted by `aiden serve`). Each tick it
//! 1. settles claims: starts the run of a claim that has none (after a crash or a retry's
//!    wait), applies a completed run's result and releases the claim in one transaction (so a
//!    crash never leaves half a Summary or carousel), and retries a failed one with backoff;
//! 2. measures working memory of the conversations changed since the last tick and claims a
//!    compression where it exceeds the budget (MEM-6);
//! 3. every few ticks, claims an enrichment for Entities mentioned often enough (MEM-4).
//!
//! A claim is a unique node per subject, so another `aiden serve` running the same loop
//! neither starts a second run (the run's idempotency key is the claim's) nor applies a result
//! twice (the release is in the applying transaction).

use std::time::Duration;

use aiden_domain::conversation::upkeep::{
    merge_facets, next_position, parse_enrichment, plan_compression, CompressionSpan,
    MemorySettings,
};
use aiden_domain::conversation::NewSummary;
use aiden_domain::user::{Caller, Role};
use aiden_domain::{ids::Id, Error as Rule};
use aiden_graph::upkeep::{self as store, Claim, NewClaim};
use aiden_graph::Tx;
use serde_json::{json, Map, Value};

use super::{carousel, load_settings};
use crate::{
    conversations::summary_in_tx,
    now,
    tx::{read_tx, write_tx},
    App, Result,
};

const CLAIMS_PER_TICK: i64 = 100;
const CONVERSATIONS_PER_TICK: i64 = 50;
/// At start, changes this old are looked at (older ones wait for their next change; claims
/// under way are resumed whatever their age).
const LOOK_BACK: chrono::Duration = chrono::Duration::minutes(1);
const ENTITIES_PER_TICK: i64 = 20;
/// Enrichment candidates are looked for every this many ticks (a scan of MENTIONS).
const ENRICH_EVERY: u32 = 5;
/// Runs per claim before it is given up.
pub const MAX_ATTEMPTS: i64 = 5;
/// After a give-up, the subject waits this long.
const GIVE_UP_WAIT: chrono::Duration = chrono::Duration::minutes(10);
/// Changes this close to a tick's start are looked at again next tick (a commit racing the read).
const OVERLAP: chrono::Duration = chrono::Duration::seconds(2);
/// Episodes an enrichment is given.
const MENTIONS_GIVEN: i64 = 20;

pub struct Runner {
    app: App,
    every: Duration,
}

fn stamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// 2, 4, 8 … 60 seconds.
fn backoff(attempts: i64) -> chrono::Duration {
    chrono::Duration::seconds((1i64 << attempts.clamp(1, 6)).min(60))
}

impl Runner {
    pub fn new(app: App, every: Duration) -> Self {
        Self { app, every }
    }

    pub async fn run(self) {
        let mut since = stamp(chrono::Utc::now() - LOOK_BACK);
        let mut tick = 0u32;
        loop {
            if let Err(e) = self
                .tick(&mut since, tick.is_multiple_of(ENRICH_EVERY))
                .await
            {
                tracing::warn!(error = %e, "memory upkeep tick failed; next tick retries");
            }
            // A marker tests wait on instead of sleeping: whatever this tick does is done.
            tracing::debug!(tick, "memory upkeep tick done");
            tick = tick.wrapping_add(1);
            tokio::time::sleep(self.every).await;
        }
    }

    /// One pass: settle claims, measure changed conversations, maybe look for enrichments.
    async fn tick(&self, since: &mut String, enrich: bool) -> Result<()> {
        let app = &self.app;
        let settings = read_tx!(app, |tx| { Ok(load_settings(&mut tx).await?.0) })?;
        for claim in store::claims(&app.graph, CLAIMS_PER_TICK).await? {
            let key = claim.key.clone();
            if let Err(e) = self.settle(&settings, claim).await {
                tracing::warn!(claim = %key, error = %e, "upkeep claim not settled; next tick retries");
            }
        }
        let started = chrono::Utc::now();
        let changed =
            store::changed_conversations(&app.graph, since, CONVERSATIONS_PER_TICK).await?;
        let full = changed.len() as i64 == CONVERSATIONS_PER_TICK;
        let mut ids: Vec<String> = changed.iter().map(|c| c.id.clone()).collect();
        ids.extend(
            store::due_retries(&app.graph, since, &stamp(started))
                .await?
                .into_iter()
                .map(|c| c.id),
        );
        *since = match changed.last().and_then(|c| c.updated_at.clone()) {
            Some(last) if full => last,
            _ => stamp(started - OVERLAP),
        };
        ids.sort();
        ids.dedup();
        for id in ids {
            if let Err(e) = self.consider_compression(&settings, &id).await {
                tracing::warn!(conversation = %id, error = %e, "compression not considered");
            }
        }
        if enrich {
            self.consider_enrichment(&settings).await?;
        }
        Ok(())
    }

    async fn owner(&self, id: &str) -> Result<Option<Caller>> {
        let app = &self.app;
        let row = read_tx!(app, |tx| {
            Ok(aiden_graph::users::get(&mut tx, id).await?)
        })?;
        Ok(row.and_then(|u| {
            Some(Caller {
                quota: crate::auth::quota_of(&u),
                id: Id::parse(&u.id).ok()?,
                role: Role::parse(&u.role)?,
            })
        }))
    }

    /// MEM-6: a compression claim when working memory (path + summaries) exceeds the budget.
    async fn consider_compression(&self, settings: &MemorySettings, id: &str) -> Result<()> {
        let app = &self.app;
        let Some(facts) = store::conversation_facts(&app.graph, id).await? else {
            return Ok(());
        };
        let waiting = facts
            .retry_at
            .as_deref()
            .is_some_and(|r| r > now().as_str());
        let process = facts
            .compression_process_id
            .clone()
            .or_else(|| settings.compression_process_id.clone());
        let (Some(process), false, false) = (process, facts.claimed, waiting) else {
            return Ok(());
        };
        let Some(owner) = self.owner(&facts.owner_id).await? else {
            return Ok(());
        };
        let budget = facts
            .compression_token_budget
            .unwrap_or(settings.compression_token_budget)
            .max(0) as u64;
        let wm = app.path_memory(&owner, id).await?;
        let keep = settings.compression_keep_recent.max(1) as usize;
        let Some(span) = plan_compression(&wm, budget, keep) else {
            return Ok(());
        };
        let inputs = json!({
            "conversationId": id,
            "transcript": span.transcript,
            "sourceIds": span.sources,
            "sourceTokens": span.tokens,
            "targetCompressionRatio": "0.3",
        });
        let payload =
            json!({"inputs": inputs, "span": span, "workingMemoryTokens": wm.total_tokens});
        tracing::info!(conversation = %id, tokens = wm.total_tokens, budget, sources = span.sources.len(), "compression claimed");
        self.claim("compression", id, &facts.owner_id, &process, &payload)
            .await
    }

    /// Claims a subject and starts its run at once (if the claim is new).
    async fn claim(
        &self,
        kind: &str,
        subject: &str,
        owner: &str,
        process: &str,
        payload: &Value,
    ) -> Result<()> {
        let app = &self.app;
        let text = payload.to_string();
        let claim_id = uuid::Uuid::now_v7().to_string();
        let new = NewClaim {
            id: &claim_id,
            kind,
            subject_id: subject,
            owner_id: owner,
            process_id: process,
            payload: &text,
        };
        let claimed = write_tx!(app, |tx| { Ok(store::claim(&mut tx, &new, &now()).await?) });
        match claimed {
            Ok(Some(_)) => {}
            // Taken (here or by another instance) or lost to a concurrent claim at commit.
            Ok(None) | Err(crate::Error::LostRace) => return Ok(()),
            Err(e) => return Err(e),
        }
        metrics::counter!("aiden_upkeep_claims_total", "kind" => kind.to_owned()).increment(1);
        let claim = Claim {
            key: new.key(),
            id: claim_id.clone(),
            kind: kind.to_owned(),
            subject_id: subject.to_owned(),
            owner_id: owner.to_owned(),
            process_id: process.to_owned(),
            payload: text.clone(),
            run_id: None,
            created_at: now(),
            attempts: 0,
            retry_at: None,
            run_status: None,
        };
        self.start(&claim).await
    }

    async fn settle(&self, settings: &MemorySettings, c: Claim) -> Result<()> {
        match (&c.run_id, c.run_status.as_deref()) {
            (None, _) => {
                if c.retry_at.as_deref().is_none_or(|r| r <= now().as_str()) {
                    self.start(&c).await?;
                }
                Ok(())
            }
            (Some(run), Some("completed")) => {
                let run = run.clone();
                let applied = self.apply(settings, &c, &run).await;
                if let Err(e) = applied {
                    self.failed(&c, &format!("its result could not be applied: {e}"))
                        .await?;
                }
                Ok(())
            }
            (Some(run), Some("failed" | "canceled") | None) => {
                let reason = format!("run {run} did not complete");
                self.failed(&c, &reason).await
            }
            _ => Ok(()),
        }
    }

    async fn start(&self, c: &Claim) -> Result<()> {
        let Some(owner) = self.owner(&c.owner_id).await? else {
            return self.give_up(c, "its owner no longer exists").await;
        };
        // The Process as configured now: a retry after the settings changed runs the new one.
        let Some(process) = self.process_for(c).await? else {
            return self.give_up(c, "its loop was turned off").await;
        };
        let payload: Value = serde_json::from_str(&c.payload).unwrap_or_default();
        let inputs: Map<String, Value> = payload["inputs"].as_object().cloned().unwrap_or_default();
        let key = format!("upkeep:{}#{}", c.id, c.attempts);
        let trigger = Some((c.kind.clone(), c.subject_id.clone()));
        match self
            .app
            .start_run_for(&owner, &process, inputs, Some(&key), trigger)
            .await
        {
            Ok(started) => {
                store::claim_started(&self.app.graph, &c.key, &started.run_id, &process).await?;
                tracing::info!(claim = %c.key, run = %started.run_id, "upkeep run started");
                Ok(())
            }
            Err(e) if !matches!(e, crate::Error::Domain(_)) => Err(e),
            // Refused (the Process is gone, disabled or not the owner's, its inputs do not fit,
            // a quota is spent): trying again at once would be refused again.
            Err(e) => {
                self.give_up(c, &format!("the run could not start: {e}"))
                    .await
            }
        }
    }

    /// The Process a claim's loop runs now (a Conversation's override first for compression);
    /// None when the loop is off.
    async fn process_for(&self, c: &Claim) -> Result<Option<String>> {
        let app = &self.app;
        let settings = read_tx!(app, |tx| { Ok(load_settings(&mut tx).await?.0) })?;
        Ok(match c.kind.as_str() {
            "compression" => store::conversation_facts(&app.graph, &c.subject_id)
                .await?
                .and_then(|f| f.compression_process_id)
                .or(settings.compression_process_id),
            "introspection" => settings.introspection_process_id,
            "enrichment" => settings.enrichment_process_id,
            _ => Some(c.process_id.clone()),
        })
    }

    /// A failed attempt: retried with backoff up to [`MAX_ATTEMPTS`], then given up.
    async fn failed(&self, c: &Claim, reason: &str) -> Result<()> {
        let attempts = c.attempts + 1;
        if attempts >= MAX_ATTEMPTS {
            return self.give_up(c, reason).await;
        }
        let app = &self.app;
        let at = stamp(chrono::Utc::now() + backoff(attempts));
        tracing::warn!(claim = %c.key, attempts, reason, retry_at = %at, "upkeep run failed; retrying");
        write_tx!(app, |tx| {
            Ok(store::claim_retry(&mut tx, &c.key, &at, reason).await?)
        })
    }

    /// Memory stays as it was; the subject waits [`GIVE_UP_WAIT`] before it is looked at again.
    async fn give_up(&self, c: &Claim, reason: &str) -> Result<()> {
        let app = &self.app;
        let at = stamp(chrono::Utc::now() + GIVE_UP_WAIT);
        tracing::warn!(claim = %c.key, reason, "upkeep gave up on this claim");
        metrics::counter!("aiden_upkeep_given_up_total", "kind" => c.kind.clone()).increment(1);
        write_tx!(app, |tx| {
            if store::release(&mut tx, &c.key).await? {
                match c.kind.as_str() {
                    "compression" => {
                        store::compression_failed(&mut tx, &c.subject_id, &at, reason).await?
                    }
                    "enrichment" => {
                        store::enrichment_later(&mut tx, &c.subject_id, &at, reason).await?
                    }
                    _ => {}
                }
            }
            Ok(())
        })
    }

    /// Applies a completed run's result and releases its claim, in one transaction.
    async fn apply(&self, settings: &MemorySettings, c: &Claim, run_id: &str) -> Result<()> {
        let app = &self.app;
        let row = read_tx!(app, |tx| {
            Ok(aiden_graph::runs::get(&mut tx, run_id).await?)
        })?
        .ok_or(Rule::NotFound)?;
        let output = crate::run_view(&row)?.output;
        let payload: Value = serde_json::from_str(&c.payload).unwrap_or_default();
        let owner = self.owner(&c.owner_id).await?.ok_or(Rule::NotFound)?;
        match c.kind.as_str() {
            "compression" => {
                let text = output_text(&output).ok_or_else(|| {
                    Rule::validation("/output", "the run produced no summary text")
                })?;
                let span: CompressionSpan = serde_json::from_value(payload["span"].clone())
                    .map_err(|e| Rule::validation("/payload", e.to_string()))?;
                write_tx!(app, |tx| {
                    if !store::release(&mut tx, &c.key).await? {
                        return Ok(());
                    }
                    let b = NewSummary {
                        content: text.clone(),
                        covers_up_to_turn_id: span.covers_up_to_turn_id.clone(),
                        sources: span.sources.clone(),
                        created_by_process_id: None,
                        run_id: Some(run_id.to_owned()),
                        token_count: None,
                    };
                    summary_in_tx(&mut tx, &owner, &c.subject_id, &b).await?;
                    self.after_compression(&mut tx, settings, c).await
                })?;
                metrics::counter!("aiden_upkeep_applied_total", "kind" => "compression")
                    .increment(1);
            }
            "introspection" => {
                let text = output_text(&output)
                    .ok_or_else(|| Rule::validation("/output", "the run produced no note"))?;
                let position = payload["position"].as_i64();
                let context = payload["conversationContext"].as_str().map(str::to_owned);
                write_tx!(app, |tx| {
                    if !store::release(&mut tx, &c.key).await? {
                        return Ok(());
                    }
                    let (now_settings, _) = load_settings(&mut tx).await?;
                    let position = position.filter(|p| *p < now_settings.max_rotation);
                    carousel::place(
                        &mut tx,
                        &c.owner_id,
                        position,
                        &text,
                        context.as_deref(),
                        Some(run_id),
                    )
                    .await
                    .map(|_| ())
                })?;
                metrics::counter!("aiden_upkeep_applied_total", "kind" => "introspection")
                    .increment(1);
            }
            "enrichment" => {
                let found = parse_enrichment(&output)
                    .ok_or_else(|| Rule::validation("/output", "the run produced no enrichment"))?;
                write_tx!(app, |tx| {
                    if !store::release(&mut tx, &c.key).await? {
                        return Ok(());
                    }
                    let Some(ctx) = store::enrichment_context(&mut tx, &c.subject_id, 0).await?
                    else {
                        return Ok(());
                    };
                    let existing: Map<String, Value> = ctx
                        .facets
                        .as_deref()
                        .and_then(|f| serde_json::from_str(f).ok())
                        .unwrap_or_default();
                    let facets = Value::Object(merge_facets(&existing, &found.facets)).to_string();
                    let enrichment = json!({"summary": found.summary, "facets": found.facets,
                                            "edges": payload["edges"], "runId": run_id})
                    .to_string();
                    let e = store::Enriched {
                        uuid: &c.subject_id,
                        enrichment: &enrichment,
                        facets: &facets,
                        process_id: &c.process_id,
                        run_id,
                    };
                    store::enrich(&mut tx, &e, &now()).await?;
                    Ok(())
                })?;
                metrics::counter!("aiden_upkeep_applied_total", "kind" => "enrichment")
                    .increment(1);
            }
            other => tracing::warn!(kind = other, "unknown upkeep claim kind; left alone"),
        }
        if c.kind != "enrichment" {
            self.app.content_committed();
        }
        Ok(())
    }

    /// MEM-2: counts the compression; at the threshold, claims an introspection for the
    /// conversation's owner with the position it will replace announced (INT-1).
    async fn after_compression(
        &self,
        tx: &mut Tx,
        settings: &MemorySettings,
        c: &Claim,
    ) -> Result<()> {
        let now = now();
        let counters = store::compressed(tx, &c.subject_id, &now).await?;
        let Some(process) = settings.introspection_process_id.clone() else {
            return Ok(());
        };
        if counters.since_introspection < settings.introspection_compression_threshold {
            return Ok(());
        }
        let notes = store::carousel(tx, &c.owner_id).await?;
        let position = next_position(&carousel::slots(&notes), settings.max_rotation);
        let recent = store::recent_summaries(
            tx,
            &c.subject_id,
            settings.introspection_compression_threshold,
        )
        .await?;
        let first = counters.compressions - counters.since_introspection + 1;
        let context = format!(
            "conversation {}, compressions {first}-{}",
            c.subject_id, counters.compressions
        );
        let notes: Vec<Value> = notes
            .iter()
            .map(|n| json!({"position": n.carousel_position, "content": n.content, "createdAt": n.created_at}))
            .collect();
        let inputs = json!({
            "userId": c.owner_id,
            "conversationId": c.subject_id,
            "position": position,
            "maxRotation": settings.max_rotation,
            "warning": format!("Position {position} will be replaced: keep what matters in it."),
            "notes": notes,
            "recentCompressions": recent,
            "conversationContext": context,
        });
        let payload =
            json!({"inputs": inputs, "position": position, "conversationContext": context});
        let text = payload.to_string();
        let claim_id = uuid::Uuid::now_v7().to_string();
        let new = NewClaim {
            id: &claim_id,
            kind: "introspection",
            subject_id: &c.owner_id,
            owner_id: &c.owner_id,
            process_id: &process,
            payload: &text,
        };
        // One introspection per user at a time: if one is under way, the counter keeps
        // growing and the next compression claims again.
        if store::claim(tx, &new, &now).await?.is_some() {
            store::introspection_claimed(tx, &c.subject_id, &now).await?;
        }
        Ok(())
    }

    /// MEM-4: Entities MENTIONed by at least `enrichmentEdgeThreshold` Episodes, once each.
    async fn consider_enrichment(&self, settings: &MemorySettings) -> Result<()> {
        let Some(process) = settings.enrichment_process_id.clone() else {
            return Ok(());
        };
        let app = &self.app;
        let found = store::enrichment_candidates(
            &app.graph,
            settings.enrichment_edge_threshold,
            &now(),
            ENTITIES_PER_TICK,
        )
        .await?;
        for e in found {
            let Some(owner) = e.owner_id.clone() else {
                continue;
            };
            let uuid = e.uuid.clone();
            let ctx = read_tx!(app, |tx| {
                Ok(store::enrichment_context(&mut tx, &uuid, MENTIONS_GIVEN).await?)
            })?;
            let Some(ctx) = ctx else { continue };
            let facets: Value = ctx
                .facets
                .as_deref()
                .and_then(|f| serde_json::from_str(f).ok())
                .unwrap_or_else(|| json!({}));
            let inputs = json!({
                "entityUuid": ctx.uuid, "name": ctx.name, "summary": ctx.summary,
                "category": ctx.category, "facets": facets, "edges": e.edges,
                "mentions": ctx.mentions.into_iter().flatten().collect::<Vec<_>>(),
            });
            let payload = json!({"inputs": inputs, "edges": e.edges});
            self.claim("enrichment", &e.uuid, &owner, &process, &payload)
                .await?;
        }
        Ok(())
    }
}

/// A run's output as text: a string, or an object's `text`/`summary`/`note`.
fn output_text(output: &Value) -> Option<String> {
    let text = match output {
        Value::String(s) => Some(s.as_str()),
        Value::Object(m) => ["text", "summary", "note"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str)),
        _ => None,
    }?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}
