//! Admission under overload: once the run queues hold more ready messages than a bound, new
//! runs are refused with 503 and `Retry-After` instead of piling up without limit. `aiden
//! serve`'s queue watcher keeps the backlog current (every second); a watcher that has not
//! reported lately does not refuse anything (the broker being away is answered where publishing
//! fails).

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// How old the backlog may be before it no longer counts.
const FRESH_FOR: Duration = Duration::from_secs(5);

#[derive(Clone, Default)]
pub struct Admission {
    /// Ready messages in the job queues and the engine's, as last seen.
    backlog: Arc<AtomicU64>,
    /// Milliseconds since `epoch` when the backlog was last seen.
    seen_at_ms: Arc<AtomicU64>,
    epoch: Option<Instant>,
    /// 0: admit everything.
    bound: u64,
}

impl Admission {
    pub fn new(bound: u64) -> Self {
        Self {
            bound,
            epoch: Some(Instant::now()),
            ..Self::default()
        }
    }

    /// What the queue watcher reports.
    pub fn observe(&self, backlog: u64) {
        self.backlog.store(backlog, Ordering::Relaxed);
        if let Some(epoch) = self.epoch {
            let ms = epoch.elapsed().as_millis() as u64;
            self.seen_at_ms.store(ms.max(1), Ordering::Relaxed);
        }
    }

    /// Refuses a new run while the backlog is past the bound.
    pub fn admit(&self) -> Result<()> {
        let Some(epoch) = self.epoch.filter(|_| self.bound > 0) else {
            return Ok(());
        };
        let seen = self.seen_at_ms.load(Ordering::Relaxed);
        let now = epoch.elapsed().as_millis() as u64;
        let fresh = seen > 0 && now.saturating_sub(seen) < FRESH_FOR.as_millis() as u64;
        if fresh && self.backlog.load(Ordering::Relaxed) > self.bound {
            return Err(Error::Overloaded(
                "the run queues are past their bound (AIDEN_ADMIT_QUEUE_BOUND); retry later",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_only_past_the_bound_and_only_on_a_fresh_reading() {
        let off = Admission::default();
        off.observe(1_000_000);
        assert!(off.admit().is_ok(), "no bound, no refusal");
        let a = Admission::new(10);
        a.observe(1_000);
        // A reading at 0 ms after the epoch is not mistaken for none.
        assert!(matches!(a.admit(), Err(Error::Overloaded(_))));
        a.observe(10);
        assert!(a.admit().is_ok(), "at the bound is admitted");
        let unseen = Admission::new(10);
        assert!(unseen.admit().is_ok(), "no reading yet: admitted");
    }
}
