//! The knowledge layer: what an Alternative or Summary becomes in Graphiti (its
//! Episode: identity, name, group, content), the binding lifecycle that links it back, and the
//! Entities working memory carries. Pure: no graph, no network.

pub mod currency;
pub mod entity;
pub mod episode;
pub mod memory;
pub mod merge;
pub mod recall;

pub use entity::{ActiveEntityFlags, EntityReference, NewEntity};
pub use episode::{Binding, EpisodeDraft, EpisodeSource, OutboxState};
