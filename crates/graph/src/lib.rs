//! The graph: the only user of neo4rs. Owns connections, transactions with their retry
//! classification, the schema migrations and every Cypher statement (loaded from `cypher/`).
//! Must not decide domain rules: write methods take `Checked<_>` values from the domain crate.

pub mod audit;
pub mod conversations;
mod error;
pub mod knowledge;
pub mod lease;
pub mod limits;
pub mod measurements;
pub mod memory;
pub mod merges;
pub mod migrate;
pub mod processes;
pub mod recall;
pub mod references;
pub mod resources;
pub mod run_record;
pub mod runs;
pub mod secrets;
pub mod sessions;
pub mod tools;
mod tx;
pub mod upkeep;
pub mod users;
pub mod warm;

use std::time::Duration;

pub use error::Error;
pub use resources::Kind;
pub use tx::{IdRow, Tx};

/// Rows the server sends per PULL request.
const FETCH_SIZE: usize = 2_000;

/// How often a locked read is tried when Neo4j ends it to break a deadlock.
const LOCKED_READ_ATTEMPTS: u64 = 6;

/// Where the graph is (the `AIDEN_NEO4J_*` settings).
#[derive(Clone)]
pub struct Settings {
    pub uri: String,
    pub user: String,
    pub password: String,
    pub database: String,
    pub max_connections: usize,
    /// How long to wait for a connection and for each server response (neo4rs uses one
    /// setting for both): a statement running longer fails as `Unavailable`.
    pub timeout: Duration,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("uri", &self.uri)
            .field("user", &self.user)
            .field("password", &"[REDACTED]")
            .field("database", &self.database)
            .finish()
    }
}

/// A pool of Bolt connections to one database.
#[derive(Clone)]
pub struct Graph {
    inner: neo4rs::Graph,
}

impl Graph {
    pub async fn connect(settings: &Settings) -> Result<Self, Error> {
        let config = neo4rs::ConfigBuilder::default()
            .uri(&settings.uri)
            .user(&settings.user)
            .password(&settings.password)
            .db(settings.database.as_str())
            .max_connections(settings.max_connections)
            // Rows per PULL: a whole conversation tree (thousands of rows) in a few round trips
            // instead of one per 200 rows.
            .fetch_size(FETCH_SIZE)
            .connection_timeout(settings.timeout)
            .build()
            .map_err(Error::from_driver)?;
        let inner = neo4rs::Graph::connect(config).map_err(Error::from_driver)?;
        let graph = Self { inner };
        graph.ping().await?;
        Ok(graph)
    }

    /// A cheap round trip, for readiness.
    pub async fn ping(&self) -> Result<(), Error> {
        let mut tx = self.begin().await?;
        tx.run(neo4rs::query("RETURN 1 AS one")).await?;
        tx.commit().await
    }

    /// One read statement in an auto-commit transaction (a single round trip instead of
    /// BEGIN/RUN/ROLLBACK), for hot read paths that need no transaction around them.
    pub async fn read_rows<T: serde::de::DeserializeOwned>(
        &self,
        q: neo4rs::Query,
    ) -> Result<Vec<T>, Error> {
        let timer = tx::StatementTimer::start(&q);
        let mut stream = self
            .inner
            .execute_read(q)
            .await
            .map_err(Error::from_driver)?;
        let mut out = Vec::new();
        while let Some(row) = stream.next().await.map_err(Error::from_driver)? {
            out.push(row.to::<T>().map_err(|e| Error::Decode(e.to_string()))?);
        }
        timer.done();
        Ok(out)
    }

    /// One statement that reads under locks it takes with a no-op `SET` (so it needs a write
    /// transaction, which it ends having changed nothing), as its own transaction: a read that
    /// must show one commit (`run/get_run.cypher` says how). Its locks can close a cycle with a
    /// writer's (the engine's pass locks the Alternatives it settles in its runs' id order, an
    /// API write its Turn before its Conversation), and Neo4j then ends one of the two. The
    /// driver redoes a statement refused at its start; one ended while its rows are pulled is
    /// redone here: having changed nothing, the read is simply run again.
    pub async fn locked_read_rows<T: serde::de::DeserializeOwned>(
        &self,
        q: neo4rs::Query,
    ) -> Result<Vec<T>, Error> {
        let mut attempt = 1;
        loop {
            match self.locked_read_once(q.clone()).await {
                Err(e) if e.is_transient() && attempt < LOCKED_READ_ATTEMPTS => {
                    metrics::counter!("aiden_graph_locked_read_retries_total").increment(1);
                    tokio::time::sleep(Duration::from_millis(2 * attempt)).await;
                    attempt += 1;
                }
                outcome => return outcome,
            }
        }
    }

    async fn locked_read_once<T: serde::de::DeserializeOwned>(
        &self,
        q: neo4rs::Query,
    ) -> Result<Vec<T>, Error> {
        let timer = tx::StatementTimer::start(&q);
        let mut stream = self.inner.execute(q).await.map_err(Error::from_driver)?;
        let mut out = Vec::new();
        while let Some(row) = stream.next().await.map_err(Error::from_driver)? {
            out.push(row.to::<T>().map_err(|e| Error::Decode(e.to_string()))?);
        }
        timer.done();
        Ok(out)
    }

    /// One write statement as its own (auto-commit) transaction.
    pub async fn run_autocommit(&self, q: neo4rs::Query) -> Result<(), Error> {
        let timer = tx::StatementTimer::start(&q);
        self.inner.run(q).await.map_err(Error::from_driver)?;
        timer.done();
        Ok(())
    }

    /// Opens an explicit transaction. Callers retry the whole unit on `Error::is_transient`.
    pub async fn begin(&self) -> Result<Tx, Error> {
        let started = std::time::Instant::now();
        let tx = self.inner.start_txn().await;
        let took = started.elapsed();
        if took >= tx::SLOW {
            // A connection of the pool, or the server's answer to BEGIN, kept it waiting.
            tracing::info!(ms = took.as_millis() as u64, "slow graph begin");
        }
        tx.map(Tx::new).map_err(Error::from_driver)
    }
}

/// A JSON value as a Bolt parameter (lists of maps for `UNWIND`, property maps).
pub(crate) fn bolt(value: serde_json::Value) -> Result<neo4rs::BoltType, Error> {
    neo4rs::BoltType::try_from(value).map_err(|e| Error::Decode(e.to_string()))
}

/// A statement from `cypher/queries`, with the label filled in when the file has `__LABEL__`.
/// Labels come only from the closed `Kind` enum, never from input.
pub(crate) fn cypher(text: &str, label: Option<&str>) -> neo4rs::Query {
    match label {
        Some(l) => neo4rs::query(&text.replace("__LABEL__", l)),
        None => neo4rs::query(text),
    }
}

/// A file of `cypher/queries`, its path in a first comment line: [`tx::statement_file`] reads it
/// back so each statement's latency is recorded by the file it came from.
macro_rules! query_file {
    ($path:literal) => {
        concat!(
            "// aiden:",
            $path,
            "\n",
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../cypher/queries/",
                $path
            ))
        )
    };
}
pub(crate) use query_file;
