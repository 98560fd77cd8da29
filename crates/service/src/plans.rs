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
    /// One lock per Process whose plan is being read: a burst of starts of a Process not
    /// cached reads its plan once, the others wait for that read instead of making their own.
    loading: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
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

    /// The cached plan only if it is younger than [`MAX_AGE`]: what a start that reads the
    /// graph anyway (the slow path, and the one start [`get`](Self::get) sent to refresh) uses.
    pub fn fresh(&self, process_id: &str) -> Option<Arc<CachedPlan>> {
        self.lock()
            .get(process_id)
            .filter(|c| c.read_at.elapsed() < MAX_AGE)
            .cloned()
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

    /// The lock that whoever reads `process_id`'s plan holds meanwhile.
    pub fn loading(&self, process_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut loading = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        if loading.len() >= CAPACITY {
            loading.retain(|_, l| Arc::strong_count(l) > 1);
        }
        loading.entry(process_id.to_owned()).or_default().clone()
    }

    pub fn forget(&self, process_id: &str) {
        self.lock().remove(process_id);
    }

    pub fn clear(&self) {
        self.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiden_domain::execution::schedule::Plan;

    fn loaded() -> Loaded {
        Loaded {
            plan: Plan {
                process_id: "p".into(),
                version: 1,
                steps: Vec::new(),
                output_template: None,
                token_budget: None,
                max_recursion_depth: 1,
                quota: None,
            },
            initial_context: Vec::new(),
            version_id: "p@1".into(),
            enabled: true,
            revision: 1,
            owner_id: "u".into(),
            shared: false,
            steps: Vec::new(),
        }
    }

    /// Ages the cached entry by `by`.
    fn age(cache: &PlanCache, by: Duration) {
        let mut entries = cache.lock();
        let entry = entries.get_mut("p").unwrap();
        let plan = Arc::get_mut(entry).expect("no other holder");
        plan.read_at -= by;
    }

    #[test]
    fn an_old_plan_is_read_again_by_one_start_while_the_others_use_it() {
        let cache = PlanCache::default();
        cache.put("p", loaded());
        assert!(cache.get("p").is_some() && cache.fresh("p").is_some());
        age(&cache, MAX_AGE);
        assert!(
            cache.get("p").is_none(),
            "the first start to see it old reads it again"
        );
        assert!(
            cache.get("p").is_some(),
            "the others go on with the old entry"
        );
        assert!(
            cache.fresh("p").is_none(),
            "the slow path never uses an old entry"
        );
        cache.put("p", loaded());
        assert!(cache.get("p").is_some() && cache.fresh("p").is_some());
        age(&cache, MAX_AGE * 3);
        assert!(cache.get("p").is_none(), "claimed by the first");
        assert!(
            cache.get("p").is_none(),
            "too old for anyone once a refresh never came"
        );
    }
}
