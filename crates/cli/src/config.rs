//! Settings: flags with `AIDEN_*` environment fallbacks and their defaults (README.md,
//! "Programs and configuration").

use anyhow::Context;
use clap::Args;

#[derive(Args, Clone)]
pub struct GraphArgs {
    #[arg(long, env = "AIDEN_NEO4J_URI", default_value = "bolt://127.0.0.1:7687")]
    pub neo4j_uri: String,
    #[arg(long, env = "AIDEN_NEO4J_USER", default_value = "neo4j")]
    pub neo4j_user: String,
    #[arg(
        long,
        env = "AIDEN_NEO4J_PASSWORD",
        default_value = "",
        hide_env_values = true
    )]
    pub neo4j_password: String,
    #[arg(long, env = "AIDEN_NEO4J_DATABASE", default_value = "neo4j")]
    pub neo4j_database: String,
    #[arg(long, env = "AIDEN_NEO4J_MAX_CONNECTIONS", default_value_t = 32)]
    pub neo4j_max_connections: usize,
    /// Connect timeout and the longest wait for one graph response.
    #[arg(long, env = "AIDEN_NEO4J_TIMEOUT_MS", default_value_t = 5_000)]
    pub neo4j_timeout_ms: u64,
}

/// How long a process waits at its start for a graph that does not answer yet.
const CONNECT_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

impl GraphArgs {
    pub async fn connect(&self) -> anyhow::Result<aiden_graph::Graph> {
        self.connect_pool(self.neo4j_max_connections).await
    }

    /// A pool of its own, of `max_connections`: the engine's, which the API's load never
    /// leaves waiting for a connection.
    pub async fn connect_pool(&self, max_connections: usize) -> anyhow::Result<aiden_graph::Graph> {
        let settings = aiden_graph::Settings {
            uri: self.neo4j_uri.clone(),
            user: self.neo4j_user.clone(),
            password: self.neo4j_password.clone(),
            database: self.neo4j_database.clone(),
            max_connections,
            timeout: std::time::Duration::from_millis(self.neo4j_timeout_ms.max(1)),
        };
        // A graph still starting (a Neo4j whose JVM is cold, or not listening yet) is waited
        // for, as a supervisor would retry us; a refusal (credentials, database) is not.
        let deadline = std::time::Instant::now() + CONNECT_WAIT;
        let mut pause = std::time::Duration::from_millis(250);
        loop {
            match aiden_graph::Graph::connect(&settings).await {
                Ok(graph) => return Ok(graph),
                Err(e @ aiden_graph::Error::Unavailable(_))
                    if !e.is_refused_credentials()
                        && std::time::Instant::now() + pause < deadline =>
                {
                    tracing::warn!(error = %e, uri = %self.neo4j_uri, "the graph does not answer yet; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_secs(2));
                }
                Err(e) => {
                    return Err(anyhow::Error::from(e))
                        .with_context(|| format!("connecting to the graph at {}", self.neo4j_uri))
                }
            }
        }
    }
}

#[derive(Args, Clone)]
pub struct ServeArgs {
    #[command(flatten)]
    pub graph: GraphArgs,
    #[arg(
        long,
        env = "AIDEN_AMQP_URI",
        default_value = "amqp://guest:guest@127.0.0.1:5672/%2f",
        hide_env_values = true
    )]
    pub amqp_uri: String,
    #[arg(long, env = "AIDEN_HTTP_ADDR", default_value = "127.0.0.1:8080")]
    pub http_addr: String,
    #[arg(long, env = "AIDEN_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    #[arg(long, env = "AIDEN_MASTER_KEY", hide_env_values = true)]
    pub master_key: Option<String>,
    /// How often memory upkeep looks for work (compression, introspection, enrichment), in
    /// milliseconds; 0 turns the loop off in this instance.
    #[arg(long, env = "AIDEN_UPKEEP_INTERVAL_MS", default_value_t = 1000)]
    pub upkeep_interval_ms: u64,
    /// Ready messages in the run queues (the engine's and every operation type's) past which
    /// new runs and agent turns are refused with 503 and `Retry-After`; 0 admits everything.
    #[arg(long, env = "AIDEN_ADMIT_QUEUE_BOUND", default_value_t = 10_000)]
    pub admit_queue_bound: u64,
    /// This instance's name in the engine lease. Default: the host name and the HTTP port, so a
    /// restarted instance takes its lease back at once while another host waits for it to run
    /// out.
    #[arg(long, env = "AIDEN_INSTANCE_ID")]
    pub instance_id: Option<String>,
    /// The engine lease's time to live in milliseconds: a standby instance takes over within
    /// 4/3 of it after the active one dies.
    #[arg(long, env = "AIDEN_ENGINE_LEASE_MS", default_value_t = 10_000)]
    pub engine_lease_ms: u64,
    /// While another Process has runs in flight, the engine takes a Process's starts at most 1.5
    /// times as fast as its runs settle, and at least this many a second (0: never paced): a
    /// burst of one Process's starts leaves the CPU to the other's steps (docs/execution.md,
    /// "A burst of starts beside other work").
    #[arg(long, env = "AIDEN_ENGINE_SHARED_START_FLOOR", default_value_t = aiden_engine::DEFAULT_SHARED_START_FLOOR)]
    pub engine_shared_start_floor: u32,
    /// How long `aiden serve` drives warm-up passes through Neo4j before it opens its port
    /// (milliseconds; 0: none): a Neo4j just started runs the engine's statement and commits
    /// at two thirds of its speed until its JIT has compiled them (docs/execution.md). None
    /// against a Neo4j whose JVM has run for 10 minutes.
    #[arg(long, env = "AIDEN_ENGINE_WARM_UP_MS", default_value_t = 40_000)]
    pub engine_warm_up_ms: u64,
    /// Neo4j Browser for this graph, shown to admins in the console ("Open in Neo4j Browser").
    /// Default: `http://<the Bolt host>:7474/browser/` (Neo4j's own HTTP port); empty: none.
    #[arg(long, env = "AIDEN_NEO4J_BROWSER_URL")]
    pub neo4j_browser_url: Option<String>,
    #[command(flatten)]
    pub auth: AuthArgs,
    #[command(flatten)]
    pub recall: RecallArgs,
}

impl ServeArgs {
    /// Neo4j Browser's address: the one configured, else Neo4j's default HTTP port on the
    /// Bolt URI's host. Only the host is taken from the URI, never a user or password in it.
    pub fn neo4j_browser(&self) -> Option<String> {
        if let Some(url) = &self.neo4j_browser_url {
            return Some(url.trim().to_owned()).filter(|u| !u.is_empty());
        }
        let rest = self.graph.neo4j_uri.split_once("://")?.1;
        let authority = rest.split('/').next()?;
        let host_port = authority.rsplit('@').next()?;
        let host = match host_port.strip_prefix('[') {
            Some(v6) => format!("[{}]", v6.split(']').next()?),
            None => host_port.split(':').next()?.to_owned(),
        };
        Some(format!("http://{host}:7474/browser/")).filter(|_| !host.is_empty())
    }
}

/// Search and retrieved context.
#[derive(Args, Clone)]
pub struct RecallArgs {
    /// The Graphiti service, whose embedder turns a query into the vector content is compared
    /// with; empty: search by words and the graph only.
    #[arg(
        long = "recall-embedder-url",
        env = "AIDEN_GRAPHITI_URL",
        default_value = "http://127.0.0.1:8091"
    )]
    pub embedder_url: String,
    /// The most tokens working memory's retrievedContext carries (0: none).
    #[arg(long, env = "AIDEN_RECALL_CONTEXT_TOKENS", default_value_t = 400)]
    pub context_tokens: u64,
    /// The least cosine similarity to the message for a memory to be retrieved.
    #[arg(long, env = "AIDEN_RECALL_MIN_SIMILARITY", default_value_t = 0.3)]
    pub min_similarity: f64,
    /// Warm the search before the API answers (the embedder's first call, Neo4j's plans of
    /// the search statements), so the first query after a start is as fast as the others.
    #[arg(long = "recall-warm-up", env = "AIDEN_RECALL_WARM_UP", default_value_t = true, action = clap::ArgAction::Set)]
    pub warm_up: bool,
    /// How long the search warm-up goes on searching (milliseconds) once its shapes of
    /// search are planned: a Neo4j just started runs the search's code in its interpreter
    /// until its JIT has compiled it (docs/knowledge.md).
    #[arg(
        long = "recall-warm-up-ms",
        env = "AIDEN_RECALL_WARM_UP_MS",
        default_value_t = 5_000
    )]
    pub warm_up_ms: u64,
}

impl RecallArgs {
    pub fn settings(&self) -> aiden_service::recall::RecallSettings {
        aiden_service::recall::RecallSettings {
            embedder: (!self.embedder_url.trim().is_empty())
                .then(|| aiden_service::recall::Embedder::for_queries(&self.embedder_url)),
            context: aiden_domain::knowledge::recall::ContextPolicy {
                max_tokens: self.context_tokens,
                min_similarity: self.min_similarity,
            },
        }
    }
}

impl ServeArgs {
    pub fn instance_id(&self, port: u16) -> String {
        if let Some(id) = &self.instance_id {
            return id.clone();
        }
        let host = std::env::var("HOSTNAME")
            .ok()
            .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        format!("{host}:{port}")
    }
}

/// Authentication across instances (USR-2) and against guessing (USR-4).
#[derive(Args, Clone)]
pub struct AuthArgs {
    /// How long a known token is trusted without asking the graph, in milliseconds: the bound
    /// within which every instance refuses a disabled user or a revoked token.
    #[arg(long, env = "AIDEN_AUTH_CACHE_TTL_MS", default_value_t = 5_000)]
    pub auth_cache_ttl_ms: u64,
    /// Unknown tokens one source may send per minute before it is refused (429 RATE_LIMITED);
    /// 0 turns the throttle off.
    #[arg(long, env = "AIDEN_AUTH_FAILURES_PER_MINUTE", default_value_t = 20)]
    pub auth_failures_per_minute: u32,
    /// Behind a proxy: the header that carries the client's address (e.g. x-forwarded-for).
    /// Only set it when the proxy overwrites that header: clients could forge it otherwise.
    #[arg(long, env = "AIDEN_AUTH_SOURCE_HEADER")]
    pub auth_source_header: Option<String>,
}

impl AuthArgs {
    pub fn policy(&self) -> aiden_service::AuthPolicy {
        aiden_service::AuthPolicy {
            cache_ttl: std::time::Duration::from_millis(self.auth_cache_ttl_ms),
            failures_per_minute: self.auth_failures_per_minute,
            source_header: self.auth_source_header.clone(),
        }
    }
}

#[derive(Args, Clone)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub graph: GraphArgs,
    /// Operation type this pool consumes (`aiden operation-types` lists them), or `episode`,
    /// the Graphiti ingestion pool.
    #[arg(long = "type", env = "AIDEN_WORKER_TYPE")]
    pub operation_type: String,
    /// Jobs run at once (the queue prefetch); one Worker node per slot.
    #[arg(long, env = "AIDEN_WORKER_CONCURRENCY", default_value_t = 8)]
    pub concurrency: usize,
    #[arg(
        long,
        env = "AIDEN_AMQP_URI",
        default_value = "amqp://guest:guest@127.0.0.1:5672/%2f",
        hide_env_values = true
    )]
    pub amqp_uri: String,
    #[arg(long, env = "AIDEN_MASTER_KEY", hide_env_values = true)]
    pub master_key: Option<String>,
    /// Serve this pool's Prometheus `/metrics` here (e.g. 127.0.0.1:9101); off when unset.
    #[arg(long, env = "AIDEN_WORKER_METRICS_ADDR")]
    pub metrics_addr: Option<String>,
    /// How long a call runs, in milliseconds, before the engine is told it started (the step
    /// then reads `running`); a call that ends sooner is reported by its result alone.
    #[arg(long, env = "AIDEN_WORKER_STARTED_NOTICE_AFTER_MS", default_value_t = aiden_workers::pool::STARTED_NOTICE_AFTER.as_millis() as u64)]
    pub started_notice_after_ms: u64,
    /// The Graphiti service (`workers/graphiti/`), for `--type episode`.
    #[arg(
        long,
        env = "AIDEN_GRAPHITI_URL",
        default_value = "http://127.0.0.1:8091"
    )]
    pub graphiti_url: String,
    /// How long one extraction may take, in seconds (`--type episode`).
    #[arg(long, env = "AIDEN_GRAPHITI_EXTRACT_TIMEOUT_S", default_value_t = 600)]
    pub extract_timeout_s: u64,
}
