//! Starts admitted at a bounded rate while Processes share the machine (issue #49's
//! isolation). Creating a run is the costliest thing the engine and Neo4j do: a burst of one
//! Process's starts, taken as fast as they come, keeps the machine's cores busy for as long as
//! it lasts, and another Process's steps wait for the CPU at every hop. A burst creates runs
//! faster than its pool can drain them anyway, so while another Process has runs in flight
//! each Process's starts are taken at most `THROUGH` times as fast as its runs settle, and at
//! least `floor` a second (a token bucket per Process, a few at once). A Process alone on the
//! engine is never paced, and one whose starts keep pace with its settles is not either: only
//! a burst beyond what the Process drains waits, and its runs end no later for it.
//!
//! "Runs in flight" are top-level runs with a step queued or running (not one parked on an
//! approval). A Process counts as having them for `LINGER` after its last one: one that starts
//! runs one at a time has none between them, and an unpaced pass of 32 starts would then hold
//! its next start.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Starts a Process may take at once before its rate applies (a Process starting runs one at a
/// time never waits).
const BURST: f64 = 8.0;
/// A shared Process's starts a second, as a multiple of its runs settled a second.
const THROUGH: f64 = 1.5;
/// The time constant of a Process's settle rate (an exponentially decayed count).
const SETTLE_WINDOW: f64 = 1.0;
/// How long a Process counts as live after its last run in flight was seen.
const LINGER: Duration = Duration::from_secs(1);
/// How long which Processes are live is reused before the runs are read again.
const REUSE: Duration = Duration::from_millis(10);
/// Buckets kept beyond this many are pruned when full (a full bucket is the same as none).
const KEEP: usize = 1_024;

/// Which top-level Processes have runs in flight: enough to tell whether a Process is alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Live {
    None,
    One(String),
    Many,
}

impl Live {
    /// From the Processes of the runs in flight (stops at the second distinct one).
    pub fn of<'a>(processes: impl Iterator<Item = &'a str>) -> Self {
        let mut live = Live::None;
        for p in processes {
            match &live {
                Live::None => live = Live::One(p.to_owned()),
                Live::One(q) if q != p => return Live::Many,
                _ => {}
            }
        }
        live
    }

    /// Whether another Process than `process` has runs in flight.
    pub fn shared_with(&self, process: &str) -> bool {
        match self {
            Live::None => false,
            Live::One(q) => q != process,
            Live::Many => true,
        }
    }
}

/// A settle rate last updated `at`, decayed to `now`.
fn decayed(rate: f64, at: Instant, now: Instant) -> f64 {
    rate * (-now.saturating_duration_since(at).as_secs_f64() / SETTLE_WINDOW).exp()
}

pub(crate) struct Pacing {
    /// Starts a second a shared Process always gets.
    floor: f64,
    buckets: HashMap<String, Bucket>,
    /// Each Process's runs settled a second, decayed, and when last updated.
    settles: HashMap<String, (f64, Instant)>,
    /// When each top-level Process was last seen with runs in flight (within `LINGER`).
    seen: HashMap<String, Instant>,
    /// Which Processes were live, and when that was read.
    live: Option<(Instant, Live)>,
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Pacing {
    /// `None` when `floor` is 0 (starts are never paced).
    pub fn new(floor: u32) -> Option<Self> {
        (floor > 0).then(|| Pacing {
            floor: f64::from(floor),
            buckets: HashMap::new(),
            settles: HashMap::new(),
            seen: HashMap::new(),
            live: None,
        })
    }

    /// Which Processes are live at `now`: those of the runs in flight (`running`, read at most
    /// every `REUSE`) and those seen within `LINGER`.
    pub fn live<'a, I>(&mut self, now: Instant, running: impl FnOnce() -> I) -> Live
    where
        I: Iterator<Item = &'a str>,
    {
        if let Some((at, live)) = &self.live {
            if now.saturating_duration_since(*at) < REUSE {
                return live.clone();
            }
        }
        for p in running() {
            match self.seen.get_mut(p) {
                Some(at) => *at = now,
                None => {
                    self.seen.insert(p.to_owned(), now);
                }
            }
        }
        self.seen
            .retain(|_, at| now.saturating_duration_since(*at) < LINGER);
        let live = Live::of(self.seen.keys().map(String::as_str));
        self.live = Some((now, live.clone()));
        live
    }

    /// A run of `process` settled.
    pub fn settled(&mut self, process: &str, now: Instant) {
        let rate = self.settle_rate(process, now) + 1.0 / SETTLE_WINDOW;
        if self.settles.len() >= KEEP && !self.settles.contains_key(process) {
            // Decayed to nothing (below a settle a minute): the same as none.
            self.settles
                .retain(|_, (rate, at)| decayed(*rate, *at, now) > 1.0 / 60.0);
        }
        match self.settles.get_mut(process) {
            Some(s) => *s = (rate, now),
            None => {
                self.settles.insert(process.to_owned(), (rate, now));
            }
        }
    }

    fn settle_rate(&self, process: &str, now: Instant) -> f64 {
        self.settles
            .get(process)
            .map_or(0.0, |(rate, at)| decayed(*rate, *at, now))
    }

    /// The starts a second `process` is given while shared.
    fn rate(&self, process: &str, now: Instant) -> f64 {
        (THROUGH * self.settle_rate(process, now)).max(self.floor)
    }

    fn bucket(&self, process: &str, now: Instant) -> Bucket {
        match self.buckets.get(process) {
            Some(b) => Bucket {
                tokens: (b.tokens
                    + now.saturating_duration_since(b.at).as_secs_f64() * self.rate(process, now))
                .min(BURST),
                at: now,
            },
            None => Bucket {
                tokens: BURST,
                at: now,
            },
        }
    }

    /// Whether a start of `process` may be taken now, shared or not; a shared one takes a token.
    pub fn admit(&mut self, process: &str, shared: bool, now: Instant) -> bool {
        if !shared {
            return true;
        }
        let mut b = self.bucket(process, now);
        if b.tokens < 1.0 {
            return false;
        }
        b.tokens -= 1.0;
        if self.buckets.len() >= KEEP && !self.buckets.contains_key(process) {
            // Full at the floor's rate: the same as no bucket.
            let full = Duration::from_secs_f64(BURST / self.floor);
            self.buckets
                .retain(|_, b| now.saturating_duration_since(b.at) < full);
        }
        self.buckets.insert(process.to_owned(), b);
        true
    }

    /// When a start of `process` may next be taken.
    pub fn ready_at(&self, process: &str, shared: bool, now: Instant) -> Instant {
        let b = self.bucket(process, now);
        match !shared || b.tokens >= 1.0 {
            true => now,
            false => now + Duration::from_secs_f64((1.0 - b.tokens) / self.rate(process, now)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_alone_is_never_paced() {
        let mut pacing = Pacing::new(10).unwrap();
        let now = Instant::now();
        let live = Live::of(["burst", "burst"].into_iter());
        assert!(!live.shared_with("burst"));
        assert!((0..100).all(|_| pacing.admit("burst", live.shared_with("burst"), now)));
        assert!(Pacing::new(0).is_none(), "0 turns pacing off");
    }

    #[test]
    fn a_shared_process_takes_a_few_at_once_then_its_rate() {
        let mut pacing = Pacing::new(10).unwrap();
        let t0 = Instant::now();
        let live = Live::of(["burst", "other", "burst"].into_iter());
        assert_eq!(live, Live::Many);
        let taken = (0..20)
            .filter(|_| pacing.admit("burst", live.shared_with("burst"), t0))
            .count();
        assert_eq!(taken, BURST as usize, "the burst allowance, then none");
        let next = pacing.ready_at("burst", true, t0);
        assert_eq!(next - t0, Duration::from_millis(100), "one token at 10/s");
        assert!(!pacing.admit("burst", true, t0 + Duration::from_millis(50)));
        assert!(pacing.admit("burst", true, t0 + Duration::from_millis(160)));
        // Another Process has its own bucket: the burst's pacing does not hold it.
        assert!(pacing.admit("other", true, t0));
        assert_eq!(pacing.ready_at("other", true, t0), t0);
    }

    #[test]
    fn a_shared_process_that_drains_fast_is_given_starts_as_fast() {
        let mut pacing = Pacing::new(10).unwrap();
        let t0 = Instant::now();
        // 100 settles a second for 3 s: its settle rate nears 100.
        for i in 0..300 {
            pacing.settled("busy", t0 + Duration::from_millis(10 * i));
        }
        let now = t0 + Duration::from_secs(3);
        let rate = pacing.rate("busy", now);
        assert!((140.0..=150.0).contains(&rate), "{rate}");
        assert_eq!(pacing.rate("new", now), 10.0, "no settles yet: the floor");
        let later = now + Duration::from_secs(10);
        assert_eq!(
            pacing.rate("busy", later),
            10.0,
            "settles long past count for nothing"
        );
    }

    #[test]
    fn a_process_stays_live_a_moment_after_its_last_run() {
        let mut pacing = Pacing::new(10).unwrap();
        let t0 = Instant::now();
        let live = pacing.live(t0, || ["chain", "burst"].into_iter());
        assert_eq!(live, Live::Many);
        // Between two of `chain`'s runs: it still counts, so `burst` is still paced.
        let between = t0 + Duration::from_millis(200);
        assert_eq!(pacing.live(between, || ["burst"].into_iter()), Live::Many);
        let later = t0 + LINGER + Duration::from_millis(1);
        assert_eq!(
            pacing.live(later, || ["burst"].into_iter()),
            Live::One("burst".into())
        );
    }

    #[test]
    fn one_live_process_paces_only_the_others() {
        let live = Live::of(["chain"].into_iter());
        assert!(!live.shared_with("chain"));
        assert!(live.shared_with("burst"));
        assert!(!Live::of(std::iter::empty()).shared_with("any"));
    }
}
