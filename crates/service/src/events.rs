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
        let (catch_up, done) = match notifier.snapshot(run_id, after) {
            // The engine in this process holds the whole log: no graph read.
            Some(mem) => {
                // Runs are private to whoever started them; admins see every run.
                if mem.owner_id != caller.id.as_str() && !caller.is_admin() {
                    return Err(Domain::NotFound.into());
                }
                let done = mem.settled && mem.events.is_empty() && after >= mem.last_seq;
                buffer.extend(mem.events);
                (false, done)
            }
            // Checks visibility before streaming anything, then catches up from the graph.
            None => {
                self.run_head(caller, run_id).await?;
                (true, false)
            }
        };
        Ok(RunTail {
            app: self.clone(),
            run_id: run_id.to_owned(),
            after,
            buffer,
            deltas: VecDeque::new(),
            live,
            catch_up,
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

    /// Reads the log after `after` with the run's head, as of one commit
    /// (`runs::tail`); when it holds nothing new, whether the stream is over.
    async fn read_graph(&mut self) -> Result<Read> {
        let Some((head, rows)) = self
            .app
            .run_tail_unchecked(&self.run_id, self.after, PAGE)
            .await?
        else {
            return Ok(Read::Ended);
        };
        if !rows.is_empty() {
            // A full page may have more behind it; otherwise live events take over.
            self.catch_up = rows.len() as i64 == PAGE;
            self.buffer.extend(rows);
            return Ok(Read::Events);
        }
        if !head.is_settled() {
            return Ok(Read::Nothing);
        }
        if self.after < head.event_seq {
            // A settled head whose log ends before its last event: the read showed two
            // commits, which the Run's lock rules out. Reported, and the stream ends (the
            // client resumes with Last-Event-ID) rather than waiting for it.
            metrics::counter!("aiden_graph_torn_reads_total", "what" => "run_events").increment(1);
            tracing::error!(run_id = %self.run_id, after = self.after, event_seq = head.event_seq,
                            "a settled run's log read without its last events");
        }
        Ok(Read::Ended)
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
            // A lag, or a quiet spell of a run driven elsewhere: read the graph. A quiet run
            // this process's engine drives has nothing there that did not pass here.
            Ok(Err(_)) => self.catch_up = true,
            Err(_) => self.catch_up = !self.live.drives(),
        }
    }
}

enum Read {
    /// New events are buffered.
    Events,
    /// Nothing new; the run goes on.
    Nothing,
    /// The run settled and the client has its whole log (or is gone).
    Ended,
}
