//! USR-4: failed-authentication throttling per source. Each unknown token a source sends takes
//! a cell from its GCRA budget (`governor`, `failures_per_minute` a minute, that many at once);
//! when the budget is spent the source's unknown tokens are refused (401 `RATE_LIMITED`, with
//! `Retry-After`) until a cell is back.
//! A valid token is never refused: one bad client behind a shared address (a proxy, a NAT)
//! must not lock out everyone behind it, and a 256-bit token cannot be guessed at any rate.
//! Counted per API instance (N instances allow N times the rate; docs/operations.md).

use std::{
    collections::HashMap,
    net::IpAddr,
    num::NonZeroU32,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use governor::{clock::Clock, DefaultKeyedRateLimiter, Quota, RateLimiter};

#[derive(Clone)]
pub(crate) struct AuthThrottle(Option<Arc<Inner>>);

struct Inner {
    failures: DefaultKeyedRateLimiter<IpAddr>,
    /// Sources refused until then.
    refused: Mutex<HashMap<IpAddr, Instant>>,
}

impl AuthThrottle {
    /// Sources remembered before the idle ones are dropped.
    const MAX_SOURCES: usize = 100_000;

    pub(crate) fn new(failures_per_minute: u32) -> Self {
        Self(NonZeroU32::new(failures_per_minute).map(|n| {
            Arc::new(Inner {
                failures: RateLimiter::keyed(Quota::per_minute(n)),
                refused: Mutex::new(HashMap::new()),
            })
        }))
    }

    /// How long `source` is still refused, if it is.
    pub(crate) fn refused_for(&self, source: IpAddr) -> Option<Duration> {
        let inner = self.0.as_ref()?;
        let mut refused = inner.refused.lock().ok()?;
        let until = *refused.get(&source)?;
        let left = until.checked_duration_since(Instant::now());
        if left.is_none() {
            refused.remove(&source);
        }
        left
    }

    /// `source` sent an unknown token; how long it is refused now, if this one was over its
    /// budget.
    pub(crate) fn failed(&self, source: IpAddr) -> Option<Duration> {
        let inner = self.0.as_ref()?;
        let mut refused_for = None;
        if let Err(not_until) = inner.failures.check_key(&source) {
            let wait = not_until.wait_time_from(inner.failures.clock().now());
            if let Ok(mut refused) = inner.refused.lock() {
                if refused.len() >= Self::MAX_SOURCES {
                    let now = Instant::now();
                    refused.retain(|_, until| *until > now);
                }
                refused.insert(source, Instant::now() + wait);
            }
            tracing::warn!(%source, wait_ms = wait.as_millis() as u64, "authentication throttled");
            refused_for = Some(wait);
        }
        if inner.failures.len() >= Self::MAX_SOURCES {
            inner.failures.retain_recent();
        }
        refused_for
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usr_4_a_source_is_refused_after_its_budget_and_others_are_not() {
        let t = AuthThrottle::new(3);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..3 {
            assert!(t.refused_for(a).is_none());
            assert!(t.failed(a).is_none());
        }
        assert!(t.refused_for(a).is_none(), "three failures are the budget");
        assert!(t.failed(a).is_some(), "the fourth is over it");
        let wait = t
            .refused_for(a)
            .expect("and the source is refused from then on");
        assert!(
            wait <= Duration::from_secs(20),
            "one cell back in a third of a minute"
        );
        assert!(t.refused_for(b).is_none(), "another source is not touched");
    }

    #[test]
    fn usr_4_zero_turns_the_throttle_off() {
        let t = AuthThrottle::new(0);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..100 {
            assert!(t.failed(a).is_none());
        }
        assert!(t.refused_for(a).is_none());
    }
}
