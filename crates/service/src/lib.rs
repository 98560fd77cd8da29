//! The service: the one mutation path. Every write opens a graph transaction, loads a snapshot,
//! lets the domain decide, applies the checked change and commits, retrying the whole unit on
//! transient conflicts. HTTP and `aiden apply` come here; the engine and the
//! workers write run state through their own paths (docs/execution.md, "Who writes what").
//! Must not know HTTP.

pub mod accounts;
mod admission;
mod audit;
mod auth;
pub mod chat;
mod common;
mod conversations;
mod error;
pub mod events;
pub mod forks;
pub mod key_check;
mod knowledge;
mod limits;
pub mod measurements;
pub mod memories;
pub use aiden_recall::merges;
pub mod outbox;
mod plans;
mod probe;
mod processes;
pub mod recall;
mod run_list;
mod runs;
mod secrets;
mod services;
mod stripes;
mod templates;
mod throttle;
mod tools;
mod turns;
mod tx;
pub mod upkeep;
pub mod views;

use aiden_graph::Graph;

pub use admission::Admission;
pub use aiden_domain::clock::Clock;
pub use aiden_vault::Vault;
pub use audit::{Auditor, Finding};
pub use auth::{AuthPolicy, AuthRefusal, NewToken, NewUser, Token, Usage, User};
pub use error::Error;
pub use processes::ProcessVersion;
pub use run_list::RunQuery;
pub use runs::{run_view, RunStarted};
pub use secrets::{NewSecret, SecretPatch};
pub use turns::{AlternativeAdded, Generating};

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A page of a listing.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "{T}Page")]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// A page from `items` read with one more than `limit`: the extra one, when it came, says
    /// there is a next page, whose cursor is the last kept item's `id_of`.
    pub(crate) fn from_one_more(
        mut items: Vec<T>,
        limit: i64,
        id_of: impl Fn(&T) -> String,
    ) -> Self {
        let next_cursor = if items.len() as i64 > limit {
            items.truncate(limit as usize);
            items.last().map(id_of)
        } else {
            None
        };
        Page { items, next_cursor }
    }
}

/// `?limit=&cursor=` plus the listing's filter.
#[derive(Debug, Clone, Default)]
pub struct PageRequest {
    pub limit: Option<i64>,
    pub cursor: Option<String>,
    pub include_archived: bool,
}

impl PageRequest {
    pub const DEFAULT_LIMIT: i64 = 50;
    pub const MAX_LIMIT: i64 = 500;

    pub(crate) fn limit(&self) -> Result<i64> {
        match self.limit {
            None => Ok(Self::DEFAULT_LIMIT),
            Some(l) if (1..=Self::MAX_LIMIT).contains(&l) => Ok(l),
            Some(_) => Err(aiden_domain::Error::validation("/limit", "must be 1-500").into()),
        }
    }
}

/// The application core shared by every entry point.
#[derive(Clone)]
pub struct App {
    graph: Graph,
    vault: Vault,
    http: reqwest::Client,
    broker: Option<std::sync::Arc<aiden_jobs::SharedBroker>>,
    auth_cache: auth::AuthCache,
    auth_throttle: throttle::AuthThrottle,
    auth_source_header: Option<std::sync::Arc<str>>,
    /// Queues writes to one Conversation or Turn (see `stripes.rs`).
    stripes: stripes::Stripes,
    plans: plans::PlanCache,
    /// Wakes the outbox relay after a commit that recorded content to ingest.
    outbox_wake: std::sync::Arc<tokio::sync::Notify>,
    /// This process's engine, which creates the runs started here while it leads.
    door: Option<aiden_engine::Door>,
    /// Refuses new runs while the run queues are past their bound.
    admission: Admission,
    /// Where search embeds queries; how retrieved context is chosen.
    recall: recall::RecallSettings,
    /// What time it is for quota windows (AGT-10): the system clock, unless a test pins it.
    clock: Clock,
    /// Neo4j Browser's address for this graph, shown to admins (`GET /v1/me`).
    neo4j_browser: Option<std::sync::Arc<str>>,
}

impl App {
    pub fn new(graph: Graph, vault: Vault) -> Self {
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(5))
            .build()
            .unwrap_or_default();
        Self {
            graph,
            vault,
            http,
            broker: None,
            auth_cache: auth::AuthCache::new(auth::AuthPolicy::default().cache_ttl),
            auth_throttle: throttle::AuthThrottle::new(
                auth::AuthPolicy::default().failures_per_minute,
            ),
            auth_source_header: None,
            stripes: stripes::Stripes::default(),
            plans: plans::PlanCache::default(),
            outbox_wake: std::sync::Arc::default(),
            door: None,
            admission: Admission::default(),
            recall: recall::RecallSettings::default(),
            clock: Clock::system(),
            neo4j_browser: None,
        }
    }

    /// Where Neo4j Browser answers for this server's graph (an HTTP address, no credential):
    /// the console offers admins its lineage queries there.
    pub fn with_neo4j_browser(mut self, url: Option<String>) -> Self {
        self.neo4j_browser = url.filter(|u| !u.is_empty()).map(Into::into);
        self
    }

    /// The clock the start checks read: hourly quota windows (AGT-10) and the day of the daily
    /// spend windows (AGT-14). A test pins it so racing starts never straddle a window's end.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Search and retrieved context embed with this; without it they use words and
    /// the graph only.
    pub fn with_recall_settings(mut self, settings: recall::RecallSettings) -> Self {
        self.recall = settings;
        self
    }

    /// Refuses new runs (503, `Retry-After`) while the run queues are past the bound that
    /// `admission` carries; `aiden serve`'s queue watcher reports the backlog to it.
    pub fn with_admission(mut self, admission: Admission) -> Self {
        self.admission = admission;
        self
    }

    /// Hands run starts to this process's engine while it holds the lease.
    pub fn with_engine_door(mut self, door: aiden_engine::Door) -> Self {
        self.door = Some(door);
        self
    }

    /// How this instance authenticates (USR-2's cache bound, USR-4's throttle).
    pub fn with_auth_policy(mut self, policy: &auth::AuthPolicy) -> Self {
        self.auth_cache = auth::AuthCache::new(policy.cache_ttl);
        self.auth_throttle = throttle::AuthThrottle::new(policy.failures_per_minute);
        self.auth_source_header = policy.source_header.as_deref().map(Into::into);
        self
    }

    /// The header that names a request's source (USR-4), when behind a proxy.
    pub fn auth_source_header(&self) -> Option<&str> {
        self.auth_source_header.as_deref()
    }

    /// Lets the service tell the engine about runs (without it, the engine's sweep finds them).
    pub fn with_broker(mut self, amqp_uri: &str) -> Self {
        self.broker = Some(std::sync::Arc::new(aiden_jobs::SharedBroker::new(amqp_uri)));
        self
    }

    /// Shares the relay's wake-up with the engine, whose passes record agents' answers and
    /// memories for ingestion (`aiden_engine::Notifier::content_wake`).
    pub fn with_outbox_wake(mut self, wake: std::sync::Arc<tokio::sync::Notify>) -> Self {
        self.outbox_wake = wake;
        self
    }

    /// Graph reads of bearer tokens this instance made: one per token per cache TTL, however
    /// many requests carried it meanwhile.
    pub fn token_reads(&self) -> u64 {
        self.auth_cache.reads()
    }

    /// What the outbox relay waits on (`aiden serve` hands it to [`outbox::Relay`]).
    pub fn outbox_wake(&self) -> std::sync::Arc<tokio::sync::Notify> {
        self.outbox_wake.clone()
    }

    /// After a commit that wrote IngestItems: the relay publishes them now, not at its next poll.
    pub(crate) fn content_committed(&self) {
        self.outbox_wake.notify_one();
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Readiness: who holds the engine lease, as the graph says.
    pub async fn engine_lease(&self) -> Result<Option<aiden_graph::lease::LeaseRow>> {
        Ok(aiden_graph::lease::current(&self.graph).await?)
    }

    /// After a committed change to a Tool, Service or Secret: workers drop their cached
    /// resolutions before running another job (see `workers/src/resolve.rs`). If the broker
    /// is unreachable, the workers' periodic re-validation bounds the staleness.
    pub(crate) async fn catalog_changed(&self) {
        self.plans.clear();
        if let Some(broker) = &self.broker {
            if let Err(e) = broker.broadcast_catalog_changed().await {
                tracing::warn!(error = %e, "catalog change not broadcast; workers re-validate within seconds");
            }
        }
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
