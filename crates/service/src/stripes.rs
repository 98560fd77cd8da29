//! In-process serialization of writes that would contend on one graph node. Concurrent writes
//! to one Turn (switches, new Alternatives) or one Conversation (new Turns) are correct without
//! this — the graph rejects all but one and the service retries — but under a burst every loser
//! retries, and a burst of 50 on one Turn could run out of retries (409). Queuing them here first
//! leaves the graph's check as the backstop across several API servers.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use tokio::sync::{Mutex, MutexGuard};

const STRIPES: usize = 64;

#[derive(Clone)]
pub(crate) struct Stripes(Arc<Vec<Mutex<()>>>);

impl Default for Stripes {
    fn default() -> Self {
        Self(Arc::new((0..STRIPES).map(|_| Mutex::new(())).collect()))
    }
}

impl Stripes {
    /// Waits for the stripe `key` hashes to; unrelated keys rarely share one.
    pub(crate) async fn lock(&self, key: &str) -> MutexGuard<'_, ()> {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        self.0[(h.finish() as usize) % STRIPES].lock().await
    }
}
