//! Jobs the broker lost (EXEC-2). A worker tells the engine when it takes a job (its start
//! notice or its result), and a pool takes no more jobs than it has slots, so a tool step the
//! engine still has `queued` long after it published the job, while its type's queue holds
//! nothing ready, has a job nobody will deliver: a message lost by the broker (a classic queue's
//! disk) or dropped by a defect. Without this its run would wait for the engine's next start.
//! The sweep publishes such a job again, the same attempt, marked as a possible copy.
//!
//! "Long after" is `AIDEN_ENGINE_JOB_LOST_AFTER_MS` (5 minutes), counted from when the sweep
//! first saw the step queued at that attempt (so it needs no clock of the step's own and
//! survives a cache reload), or from when its retry leaves its delay queue. A job a worker has
//! only just taken is not yet known to the engine, so a step is lost only when its queue held
//! nothing ready at two checks in a row (a sweep apart: its notice would have landed between
//! them); a queue seen holding jobs, or the engine's own queue holding notices it has not
//! read, starts the step's time over.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use aiden_domain::OperationType;

const DEFAULT_AFTER: Duration = Duration::from_secs(300);

/// One queued tool step the sweep saw.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Queued {
    pub run_id: String,
    pub step_run_id: String,
    pub attempts: u32,
    pub operation_type: OperationType,
    /// When its retry leaves its delay queue, for a step waiting for one.
    pub retry_due: Option<Instant>,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    attempts: u32,
    since: Instant,
    /// Overdue, and its queue held nothing ready at the last check.
    suspect: bool,
}

pub(crate) struct Watch {
    after: Duration,
    seen: HashMap<String, Seen>,
}

impl Watch {
    pub fn from_env() -> Self {
        let after = std::env::var("AIDEN_ENGINE_JOB_LOST_AFTER_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(DEFAULT_AFTER, Duration::from_millis);
        Self::new(after)
    }

    fn new(after: Duration) -> Self {
        Self {
            after,
            seen: HashMap::new(),
        }
    }

    /// Takes the steps queued now (forgetting the others) and answers those queued at the same
    /// attempt for at least the watch's time.
    pub fn overdue(&mut self, queued: Vec<Queued>, now: Instant) -> Vec<Queued> {
        let mut seen = HashMap::with_capacity(queued.len());
        let mut out = Vec::new();
        for q in queued {
            let mut s = match self.seen.get(&q.step_run_id) {
                Some(s) if s.attempts == q.attempts => *s,
                _ => Seen {
                    attempts: q.attempts,
                    since: now,
                    suspect: false,
                },
            };
            if let Some(due) = q.retry_due {
                s.since = s.since.max(due);
            }
            seen.insert(q.step_run_id.clone(), s);
            if now.saturating_duration_since(s.since) >= self.after {
                out.push(q);
            }
        }
        self.seen = seen;
        out
    }

    /// The overdue steps after their queues were read: `idle` says whether a step's queue (and
    /// the engine's) held nothing ready. Answers the steps idle at this check and the last.
    pub fn checked(
        &mut self,
        overdue: Vec<Queued>,
        idle: impl Fn(&Queued) -> bool,
        now: Instant,
    ) -> Vec<Queued> {
        let mut lost = Vec::new();
        for q in overdue {
            let Some(s) = self.seen.get_mut(&q.step_run_id) else {
                continue;
            };
            if !idle(&q) {
                *s = Seen {
                    since: now,
                    suspect: false,
                    ..*s
                };
            } else if s.suspect {
                lost.push(q);
            } else {
                s.suspect = true;
            }
        }
        lost
    }

    /// Their jobs were published again: their time starts over.
    pub fn republished(&mut self, lost: &[Queued], now: Instant) {
        for q in lost {
            if let Some(s) = self.seen.get_mut(&q.step_run_id) {
                *s = Seen {
                    since: now,
                    suspect: false,
                    ..*s
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(step: &str, attempts: u32) -> Queued {
        Queued {
            run_id: "r".into(),
            step_run_id: step.into(),
            attempts,
            operation_type: OperationType::RestApi,
            retry_due: None,
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_step_is_overdue_once_queued_at_one_attempt_for_the_whole_time() {
        let mut w = Watch::new(ms(100));
        let t0 = Instant::now();
        assert!(w.overdue(vec![q("a", 0)], t0).is_empty());
        assert_eq!(w.overdue(vec![q("a", 0)], t0 + ms(100)), vec![q("a", 0)]);
        // At another attempt (after a retry) its time starts over.
        assert!(w.overdue(vec![q("a", 1)], t0 + ms(100)).is_empty());
        // Once it was not queued, it is forgotten.
        let _ = w.overdue(vec![], t0 + ms(100));
        assert!(w.overdue(vec![q("a", 1)], t0 + ms(1_000)).is_empty());
    }

    #[test]
    fn a_retry_counts_from_when_it_leaves_its_delay_queue() {
        let mut w = Watch::new(ms(100));
        let t0 = Instant::now();
        let retrying = Queued {
            retry_due: Some(t0 + ms(500)),
            ..q("a", 1)
        };
        assert!(w.overdue(vec![retrying.clone()], t0).is_empty());
        assert!(w.overdue(vec![retrying.clone()], t0 + ms(550)).is_empty());
        assert_eq!(w.overdue(vec![retrying.clone()], t0 + ms(600)).len(), 1);
    }

    #[test]
    fn lost_only_when_its_queue_held_nothing_at_two_checks_in_a_row() {
        let mut w = Watch::new(ms(100));
        let t0 = Instant::now();
        let _ = w.overdue(vec![q("a", 0)], t0);
        let check = |w: &mut Watch, at: Instant, idle: bool| {
            let overdue = w.overdue(vec![q("a", 0)], at);
            w.checked(overdue, |_| idle, at)
        };
        assert!(
            check(&mut w, t0 + ms(100), true).is_empty(),
            "first idle check"
        );
        // Its queue held jobs: a backlog, and its time starts over.
        assert!(check(&mut w, t0 + ms(200), false).is_empty());
        assert!(
            check(&mut w, t0 + ms(250), true).is_empty(),
            "not overdue again yet"
        );
        assert!(
            check(&mut w, t0 + ms(300), true).is_empty(),
            "first idle check again"
        );
        assert_eq!(check(&mut w, t0 + ms(400), true), vec![q("a", 0)]);
        w.republished(&[q("a", 0)], t0 + ms(400));
        assert!(
            check(&mut w, t0 + ms(450), true).is_empty(),
            "published again"
        );
    }
}
