//! Runnable plans cached by the API, so starting a run costs one graph statement (the create)
//! instead of a plan read plus the create. A cached plan is never trusted blindly: the create
//! statement writes nothing unless the Process is still at the cached revision, enabled and on
//! the cached version (`cypher/queries/run/create_run.cypher`), and a miss there drops the
//! entry and retries with a fresh read. What a plan also holds of its Tools (the operation type
//! that picks the queue) is refreshed on every local catalog change and read again once it is
//! [`MAX_AGE`] old, by one start while the others use the old entry (at most 3 × `MAX_AGE`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiden_engine::plan::Loaded;

pub(crate) const MAX_AGE: Duration = Duration::from_secs(10);
/// Processes whose plan is kept at most (beyond it the cache starts over).
const CAPACITY: usize = 4_096;

pub(crate) struct CachedPlan {
    pub loaded: Loaded,
    /// The plan as stored on each Run (serialized once).
    pub plan_json: String,
    read_at: Instant,
    /// Set by the one caller that reads the plan again once it is [`MAX_AGE`] old; the others
    /// go on with this entry meanwhile (the create re-validates its revision in any case).
    refreshing: std::sync::atomic::AtomicBool,
}

#[derive(Clone, Default)]
pub(crate) struct PlanCache {
    entries: Arc<Mutex<HashMap<String, Arc<CachedPlan>>>>,
}

impl PlanCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<CachedPlan>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached plan; `None` when there is none, or for the one caller that is to read an
    /// old one again (a burst of starts then reads it once, not once per request).
    pub fn get(&self, process_id: &str) -> Option<Arc<CachedPlan>> {
        let entry = self.lock().get(process_id).cloned()?;
        let old = entry.read_at.elapsed() >= MAX_AGE;
        let claimed = old
            && !entry
                .refreshing
                .swap(true, std::sync::atomic::Ordering::AcqRel);
        match claimed || entry.read_at.elapsed() >= MAX_AGE * 3 {
            true => None,
            false => Some(entry),
        }
    }

    pub fn put(&self, process_id: &str, loaded: Loaded) -> Arc<CachedPlan> {
        let plan_json = serde_json::to_string(&loaded.plan).unwrap_or_default();
        let entry = Arc::new(CachedPlan {
            loaded,
            plan_json,
            read_at: Instant::now(),
            refreshing: Default::default(),
        });
        let mut entries = self.lock();
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(process_id.to_owned(), entry.clone());
        entry
    }

    pub fn forget(&self, process_id: &str) {
        self.lock().remove(process_id);
    }

    pub fn clear(&self) {
        self.lock().clear();
    }
}
