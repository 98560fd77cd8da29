//! A run's event stream (`GET /v1/runs/{id}/events`): its durable log from a sequence number
//! (`Last-Event-ID`), read from the engine's memory when this process holds the engine, else
//! from the graph, then live events as the engine commits them, with streamed model text between
//! them. It never ends early on a failed read, reads the graph again after a gap, a lag or a
//! quiet spell (the engine may run in another `aiden serve`), and ends after the terminal event.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use aiden_domain::{user::Caller, Error as Domain};
use aiden_engine::{Notifier, StepDelta, Subscription};
pub use aiden_graph::runs::EventRow;
use aiden_graph::runs::RunHead;

use crate::{App, Result};

/// What the stream sends next.
pub enum TailItem {
    /// A durable event of the run's log (it has a sequence number: the SSE `id:`).
    Event(EventRow),
    /// Streamed model text, not replayed on resume.
    Delta(Arc<StepDelta>),
}

impl App {
    /// `GET /v1/runs/{id}/events`: the run's log after `after`, then live events as the engine
    /// commits them. Only its owner (or an admin) may follow a run: 404 otherwise, checked
    /// before anything is streamed. Subscribes before the first read, so nothing committed in
    /// between is missed.
    pub async fn run_tail(
        &self,
        caller: &Caller,
        notifier: &Notifier,
        run_id: &str,
        after: i64,
    ) -> Result<RunTail> {
        let live = notifier.subscribe(run_id);
        let mut buffer = VecDeque::new();
        let (catch_up, head, done) = match notifier.snapshot(run_id, after) {
            // The engine in this process holds the whole log: no graph read.
            Some(mem) => {
                // Runs are private to whoever started them; admins see every run.
                if mem.owner_id != caller.id.as_str() && !caller.is_admin() {
                    return Err(Domain::NotFound.into());
                }
                let done = mem.settled && mem.events.is_empty() && after >= mem.last_seq;
                buffer.extend(mem.events);
                (false, None, done)
            }
            // Checks visibility before streaming anything, then catches up from the graph.
            None => (true, Some(self.run_head(caller, run_id).await?), false),
        };
        Ok(RunTail {
            app: self.clone(),
            run_id: run_id.to_owned(),
            after,
            buffer,
            deltas: VecDeque::new(),
            live,
            catch_up,
            head,
            done,
        })
    }
}

const TERMINAL: [&str; 3] = ["run.completed", "run.failed", "run.canceled"];
/// Events read from the graph per catch-up.
const PAGE: i64 = 200;
/// How long a stream waits for a live event before it looks at the graph itself (the engine
/// may run in another `aiden serve`).
const POLL_EVERY: Duration = Duration::from_millis(500);
/// A settled run whose last events are not readable yet is looked at again this soon.
const SETTLING_RETRY: Duration = Duration::from_millis(20);

/// A run's event stream, positioned after a sequence number: what `GET /v1/runs/{id}/events`
/// sends, one item at a time.
pub struct RunTail {
    app: App,
    run_id: String,
    /// The last sequence number sent.
    after: i64,
    buffer: VecDeque<EventRow>,
    /// Streamed model text received live: sent as `step.delta`, without an id.
    deltas: VecDeque<Arc<StepDelta>>,
    live: Subscription,
    /// Read the graph before waiting for live events (start, gap, lag, timeout).
    catch_up: bool,
    /// A head read before the last catch-up, reused once instead of reading it again.
    head: Option<RunHead>,
    done: bool,
}

impl RunTail {
    /// The next item: a durable event (in order, each once), or streamed text; `None` once
    /// the terminal event was sent.
    pub async fn next(&mut self) -> Option<TailItem> {
        loop {
            if let Some(d) = self.deltas.pop_front() {
                if !self.done {
                    return Some(TailItem::Delta(d));
                }
            }
            if let Some(row) = self.buffer.pop_front() {
                if row.seq <= self.after {
                    continue;
                }
                self.after = row.seq;
                self.done = TERMINAL.contains(&row.kind.as_str());
                return Some(TailItem::Event(row));
            }
            if self.done {
                return None;
            }
            if self.catch_up {
                match self.read_graph().await {
                    Ok(Read::Events) => continue,
                    Ok(Read::Ended) => return None,
                    Ok(Read::Settling) => {
                        tokio::time::sleep(SETTLING_RETRY).await;
                        continue;
                    }
                    Ok(Read::Nothing) => self.catch_up = false,
                    Err(e) => {
                        // Never end early on a failed read: wait and read again.
                        tracing::warn!(run_id = %self.run_id, error = %e, "event stream read failed");
                        tokio::time::sleep(POLL_EVERY).await;
                        continue;
                    }
                }
            }
            self.wait_live().await;
        }
    }

    /// Reads the log after `after`; when it holds nothing new, whether the stream is over.
    async fn read_graph(&mut self) -> Result<Read> {
        let head = self.head.take();
        let rows = self
            .app
            .run_events_unchecked(&self.run_id, self.after, PAGE)
            .await?;
        if !rows.is_empty() {
            // A full page may have more behind it; otherwise live events take over.
            self.catch_up = rows.len() as i64 == PAGE;
            self.buffer.extend(rows);
            return Ok(Read::Events);
        }
        // The head must be read no later than the empty read, so a head saying "settled with
        // its log up to N" and an empty read after N means the client has everything.
        let head = match head {
            Some(h) => h,
            None => match self.app.run_head_unchecked(&self.run_id).await? {
                Some(h) => h,
                None => return Ok(Read::Ended),
            },
        };
        if !head.is_settled() {
            return Ok(Read::Nothing);
        }
        if self.after >= head.event_seq {
            return Ok(Read::Ended);
        }
        // Settled, but its last events are not visible to this read yet.
        Ok(Read::Settling)
    }

    /// Takes live events that continue the log; a gap, a lag or a quiet spell means the
    /// next round reads the graph.
    async fn wait_live(&mut self) {
        let live = &mut self.live;
        let next = async {
            tokio::select! {
                batch = live.events.recv() => Ok(batch),
                delta = live.deltas.recv() => Err(delta),
            }
        };
        let batch = match tokio::time::timeout(POLL_EVERY, next).await {
            Ok(Ok(batch)) => Ok(batch),
            Ok(Err(Ok(delta))) => {
                self.deltas.push_back(delta);
                return;
            }
            // Deltas are not replayed: a stream that lagged behind them just skips some.
            Ok(Err(Err(_))) => return,
            Err(elapsed) => Err(elapsed),
        };
        match batch {
            Ok(Ok(batch)) => {
                let mut next = self.buffer.back().map_or(self.after, |r| r.seq) + 1;
                for row in batch.iter() {
                    if row.seq < next {
                        continue;
                    }
                    if row.seq > next {
                        self.catch_up = true;
                        return;
                    }
                    self.buffer.push_back(row.clone());
                    next += 1;
                }
            }
            Ok(Err(_)) | Err(_) => self.catch_up = true,
        }
    }
}

enum Read {
    /// New events are buffered.
    Events,
    /// Nothing new; the run goes on.
    Nothing,
    /// The run settled and the client has its whole log.
    Ended,
    /// The run settled but its last events are not readable yet.
    Settling,
}
