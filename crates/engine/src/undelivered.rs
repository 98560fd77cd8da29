//! Jobs the broker lost (EXEC-2). A worker tells the engine when it takes a job (its start
//! notice or its result), and a pool takes no more jobs than it has slots, so a tool step the
//! engine still has `queued` long after it published the job, while its type's queue holds
//! nothing ready, has a job nobody will deliver: a message lost by the broker (a classic queue's
//! disk) or dropped by a defect. Without this its run would wait for the engine's next start.
//! The sweep publishes such a job again, the same attempt, marked as a possible copy.
//!
//! "Long after" is `AIDEN_ENGINE_JOB_LOST_AFTER_MS` (5 minutes), and never less than twice the
//! longest retry delay: a retry waits in its delay queue, not in the type's queue. The time is
//! counted from when the sweep first saw the step queued at that attempt, so it needs no clock
//! of the step's own and survives a cache reload.

use std::collections::HashMap;
use std::time::{Duration, Instant};

const DEFAULT_AFTER: Duration = Duration::from_secs(300);

/// One queued tool step the sweep saw: `(run id, step run id, attempts, operation type)`.
pub(crate) type Queued = (String, String, u32, aiden_domain::OperationType);

pub(crate) struct Watch {
    after: Duration,
    /// Step run id → the attempts it was at and when the sweep first saw it queued so.
    seen: HashMap<String, (u32, Instant)>,
}

impl Watch {
    pub fn from_env(max_retry_delay_ms: u64) -> Self {
        let after = std::env::var("AIDEN_ENGINE_JOB_LOST_AFTER_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(DEFAULT_AFTER, Duration::from_millis);
        Self::new(after, max_retry_delay_ms)
    }

    fn new(after: Duration, max_retry_delay_ms: u64) -> Self {
        Self {
            after: after.max(Duration::from_millis(2 * max_retry_delay_ms)),
            seen: HashMap::new(),
        }
    }

    /// Takes the steps queued now (forgetting the others) and answers those queued at the same
    /// attempt for at least `after`.
    pub fn overdue(&mut self, queued: Vec<Queued>, now: Instant) -> Vec<Queued> {
        let mut seen = HashMap::with_capacity(queued.len());
        let mut out = Vec::new();
        for q in queued {
            let since = match self.seen.get(&q.1) {
                Some(&(attempts, since)) if attempts == q.2 => since,
                _ => now,
            };
            seen.insert(q.1.clone(), (q.2, since));
            if now.duration_since(since) >= self.after {
                out.push(q);
            }
        }
        self.seen = seen;
        out
    }

    /// Their jobs were published again: their time starts over.
    pub fn republished(&mut self, step_run_ids: &[(String, String)], now: Instant) {
        for (_, id) in step_run_ids {
            if let Some(entry) = self.seen.get_mut(id) {
                entry.1 = now;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiden_domain::OperationType;

    fn watch(after_ms: u64) -> Watch {
        Watch::new(Duration::from_millis(after_ms), 0)
    }

    fn q(step: &str, attempts: u32) -> Queued {
        ("r".into(), step.into(), attempts, OperationType::RestApi)
    }

    #[test]
    fn a_step_is_overdue_once_queued_at_one_attempt_for_the_whole_time() {
        let mut w = watch(100);
        let t0 = Instant::now();
        assert!(w.overdue(vec![q("a", 0)], t0).is_empty());
        let later = t0 + Duration::from_millis(100);
        assert_eq!(w.overdue(vec![q("a", 0)], later), vec![q("a", 0)]);
        // At another attempt (a retry) its time starts over.
        assert!(w.overdue(vec![q("a", 1)], later).is_empty());
        // Once it was not queued, it is forgotten.
        let _ = w.overdue(vec![], later);
        assert!(w
            .overdue(vec![q("a", 1)], later + Duration::from_secs(1))
            .is_empty());
    }

    #[test]
    fn a_job_published_again_waits_the_whole_time_again() {
        let mut w = watch(100);
        let t0 = Instant::now();
        let _ = w.overdue(vec![q("a", 0)], t0);
        let t1 = t0 + Duration::from_millis(150);
        assert_eq!(w.overdue(vec![q("a", 0)], t1).len(), 1);
        w.republished(&[("r".into(), "a".into())], t1);
        assert!(w
            .overdue(vec![q("a", 0)], t1 + Duration::from_millis(50))
            .is_empty());
        assert_eq!(
            w.overdue(vec![q("a", 0)], t1 + Duration::from_millis(100))
                .len(),
            1
        );
    }

    #[test]
    fn never_sooner_than_twice_the_longest_retry_delay() {
        assert_eq!(Watch::new(DEFAULT_AFTER, 30_000).after, DEFAULT_AFTER);
        let long_retries = Watch::new(DEFAULT_AFTER, 600_000);
        assert_eq!(long_retries.after, Duration::from_secs(1_200));
    }
}
