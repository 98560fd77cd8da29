//! The ingestion topology: content to turn into Graphiti Episodes.
//!
//! `aiden.episodes` (direct) → `aiden.episodes.<shard>`, [`SHARDS`] durable queues, each with a
//! single active consumer and dead-lettering to `aiden.dlx` → `aiden.dlq.episode`. A
//! conversation always hashes to the same shard, so its items are consumed in order by one
//! process at a time (Graphiti requires sequential adds per group), while conversations on other
//! shards — and other conversations within a shard — proceed in parallel.

use serde::{Deserialize, Serialize};

pub const EPISODE_EXCHANGE: &str = "aiden.episodes";
pub const EPISODE_DEAD_LETTER_KEY: &str = "episode";
pub const SHARDS: u32 = 8;
pub const INGEST_VERSION: u32 = 1;

pub fn episode_queue(shard: u32) -> String {
    format!("aiden.episodes.{shard}")
}

pub fn episode_dead_letter_queue() -> String {
    format!("aiden.dlq.{EPISODE_DEAD_LETTER_KEY}")
}

/// The shard of a conversation: FNV-1a of its id (stable across processes and releases).
pub fn shard_of(conversation_id: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in conversation_id.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h % SHARDS
}

/// One outbox item on the wire. `id` (`<kind>:<targetId>`) is also the AMQP message id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestMessage {
    pub v: u32,
    pub id: String,
    /// `message` (an Alternative) or `summary`.
    pub kind: String,
    pub target_id: String,
    pub conversation_id: String,
    /// When the content was committed (the lag is measured from here).
    pub created_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_always_maps_to_one_shard() {
        let s = shard_of("0192f0c4-aaaa-7bbb-8ccc-123456789abc");
        assert_eq!(s, shard_of("0192f0c4-aaaa-7bbb-8ccc-123456789abc"));
        assert!(s < SHARDS);
        let spread: std::collections::HashSet<u32> =
            (0..200).map(|i| shard_of(&format!("conv-{i}"))).collect();
        assert_eq!(spread.len(), SHARDS as usize);
    }
}
