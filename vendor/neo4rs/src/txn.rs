#[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
use crate::messages::{BoltRequest, BoltResponse};
#[cfg(feature = "unstable-bolt-protocol-impl-v2")]
use {
    crate::bolt::{Begin, Commit, Rollback, Summary},
    crate::bookmarks::Bookmark,
    log::debug,
};

use crate::config::ImpersonateUser;
use crate::{
    Operation, RunResult, config::Database, errors::Result, pool::ManagedConnection, query::Query,
    stream::RowStream,
};
#[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
use crate::{row::Row, types::BoltList};

/// A handle which is used to control a transaction, created as a result of [`crate::Graph::start_txn`]
///
/// When a transaction is started, a dedicated connection is reserved and moved into the handle which
/// will be released to the connection pool when the [`Txn`] handle is dropped.
pub struct Txn {
    /// BEGIN not sent yet: it goes out in the same flush as the first statement (vendor/README.md).
    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    begin_pending: bool,
    db: Option<Database>,
    fetch_size: usize,
    connection: ManagedConnection,
    operation: Operation,
    imp_user: Option<ImpersonateUser>,
    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    bookmark: Option<String>,
    /// What the statements of this transaction wrote, as the server counted it (vendor/README.md).
    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    written: WriteStats,
}

/// The write counters of a statement's summary (`stats`), summed over a transaction.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct WriteStats {
    pub nodes_created: u64,
    pub relationships_created: u64,
    pub properties_set: u64,
}

impl Txn {
    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    pub(crate) async fn new(
        db: Option<Database>,
        fetch_size: usize,
        connection: ManagedConnection,
        operation: Operation,
        imp_user: Option<ImpersonateUser>,
    ) -> Result<Self> {
        Ok(Txn {
            begin_pending: true,
            db,
            fetch_size,
            connection,
            operation,
            imp_user,
            written: WriteStats::default(),
        })
    }

    /// Sends the deferred BEGIN on its own, for the calls that do not pipeline it.
    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    async fn ensure_begun(&mut self) -> Result<()> {
        if !self.begin_pending {
            return Ok(());
        }
        self.begin_pending = false;
        let begin = BoltRequest::begin(self.db.as_deref());
        match self.connection.send_recv(begin).await? {
            BoltResponse::Success(_) => Ok(()),
            msg => Err(msg.into_error("BEGIN")),
        }
    }

    /// Runs one statement and reads its whole result in a single round trip: the deferred
    /// BEGIN (on the transaction's first statement), RUN, then PULL of every record (or DISCARD)
    /// go out in one flush.
    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    pub async fn fetch_all(&mut self, q: impl Into<Query>, fetch: Fetch) -> Result<Vec<Row>> {
        let follow_up = match fetch {
            Fetch::All => vec![(BoltRequest::pull_all_for(-1), "PULL")],
            Fetch::Discard => vec![(BoltRequest::discard_all_for(-1), "DISCARD")],
        };
        let (requests, names) = self.flush_of(q.into(), follow_up)?;
        self.connection.send_pipelined(requests).await?;
        self.begin_pending = false;
        // One summary per request, in order; after a FAILURE the server answers IGNORED.
        let mut failure = None;
        let mut fields = BoltList::default();
        let mut rows = Vec::new();
        let mut more = false;
        for name in names {
            loop {
                match self.connection.recv().await? {
                    BoltResponse::Record(record) if name == "PULL" => {
                        rows.push(Row::new(fields.clone(), record.data));
                    }
                    BoltResponse::Success(success) => {
                        if name == "RUN" {
                            fields = success.get("fields").unwrap_or_default();
                        }
                        more = name == "PULL" && success.get("has_more").unwrap_or(false);
                        if name != "RUN" {
                            self.add_written(&success);
                        }
                        break;
                    }
                    BoltResponse::Record(_) => {
                        failure.get_or_insert(crate::errors::Error::UnexpectedMessage(format!(
                            "a record in answer to {name}"
                        )));
                    }
                    other => {
                        if failure.is_none() {
                            failure = Some(other.into_error(name));
                        }
                        break;
                    }
                }
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        // A server that caps a PULL of all records says so with `has_more`: read on.
        while more {
            self.connection.send(BoltRequest::pull_all_for(-1)).await?;
            loop {
                match self.connection.recv().await? {
                    BoltResponse::Record(record) => rows.push(Row::new(fields.clone(), record.data)),
                    BoltResponse::Success(success) => {
                        more = success.get("has_more").unwrap_or(false);
                        break;
                    }
                    other => return Err(other.into_error("PULL")),
                }
            }
        }
        Ok(rows)
    }

    /// Runs the transaction's last statement, its result discarded, with the COMMIT in the
    /// same flush: one round trip for both (vendor/README.md). Answers what the whole
    /// transaction wrote once the COMMIT answered SUCCESS. Any other answer is an error:
    /// - a FAILURE from the server (the statement's, and the COMMIT behind it IGNORED, or the
    ///   COMMIT's own): nothing was committed;
    /// - [`Error::CommitOutcomeUnknown`]: the COMMIT went out, or may have, and its answer was
    ///   never read (the connection failed): it may have committed.
    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    pub async fn run_and_commit(mut self, q: impl Into<Query>) -> Result<WriteStats> {
        use crate::errors::Error;
        let unknown = |e: Error| Error::CommitOutcomeUnknown(e.to_string());
        let follow_up = vec![
            (BoltRequest::discard_all_for(-1), "DISCARD"),
            (BoltRequest::commit(), "COMMIT"),
        ];
        let (requests, names) = self.flush_of(q.into(), follow_up)?;
        self.begin_pending = false;
        // A write that failed midway may have delivered the COMMIT.
        self.connection
            .send_pipelined(requests)
            .await
            .map_err(unknown)?;
        // One summary per request, in order; after a FAILURE the server answers IGNORED.
        let mut failure = None;
        let mut committed = false;
        for name in names {
            loop {
                match self.connection.recv().await.map_err(unknown)? {
                    BoltResponse::Success(success) => {
                        if name == "DISCARD" {
                            self.add_written(&success);
                        }
                        committed = name == "COMMIT";
                        break;
                    }
                    // Nothing asked for records: skipped, the summary follows.
                    BoltResponse::Record(_) => {}
                    other => {
                        if failure.is_none() {
                            failure = Some(other.into_error(name));
                        }
                        break;
                    }
                }
            }
        }
        if !committed {
            return Err(failure.unwrap_or_else(|| {
                Error::UnexpectedMessage("the COMMIT was not answered SUCCESS".into())
            }));
        }
        self.connection.mark_clean();
        Ok(self.written)
    }

    /// The requests of one flush and their names, in order: the deferred BEGIN (on the
    /// transaction's first statement), RUN, then `follow_up`.
    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    fn flush_of(
        &self,
        q: Query,
        follow_up: Vec<(BoltRequest, &'static str)>,
    ) -> Result<(Vec<bytes::Bytes>, Vec<&'static str>)> {
        let query = self.with_extras(q);
        let version = self.connection.version();
        let mut requests = Vec::with_capacity(2 + follow_up.len());
        let mut names = Vec::with_capacity(2 + follow_up.len());
        if self.begin_pending {
            requests.push(BoltRequest::begin(self.db.as_deref()).into_bytes(version)?);
            names.push("BEGIN");
        }
        requests.push(query.into_run_request().into_bytes(version)?);
        names.push("RUN");
        for (request, name) in follow_up {
            requests.push(request.into_bytes(version)?);
            names.push(name);
        }
        Ok((requests, names))
    }

    /// Adds a statement summary's write counters to the transaction's.
    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    fn add_written(&mut self, success: &crate::messages::Success) {
        if let Ok(stats) = success.get::<WriteStats>("stats") {
            self.written.nodes_created += stats.nodes_created;
            self.written.relationships_created += stats.relationships_created;
            self.written.properties_set += stats.properties_set;
        }
    }

    /// What this transaction's statements wrote so far (summed from their summaries).
    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    pub fn written(&self) -> WriteStats {
        self.written
    }

    fn with_extras(&self, q: Query) -> Query {
        let mut query = q;
        if let Some(db) = self.db.as_ref() {
            query = query.extra("db", db.to_string());
        }
        query.extra(
            "mode",
            match self.operation {
                Operation::Read => "r",
                Operation::Write => "w",
            },
        )
    }

    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    pub(crate) async fn new(
        db: Option<Database>,
        fetch_size: usize,
        mut connection: ManagedConnection,
        operation: Operation,
        imp_user: Option<ImpersonateUser>,
        bookmarks: &[String],
    ) -> Result<Self> {
        debug!("Starting transaction with bookmarks: {:?}", bookmarks);
        let begin = Begin::builder(db.as_deref())
            .with_bookmarks(bookmarks.to_vec())
            .build(connection.version());
        match connection.send_recv_as(begin).await? {
            Summary::Success(response) => Ok(Txn {
                db: response.metadata.db.or(db),
                fetch_size,
                connection,
                operation,
                bookmark: None,
                imp_user,
            }),
            Summary::Ignored => Err(crate::errors::Error::Ignored("Failed to start transaction")),
            Summary::Failure(failure) => Err(failure.into_error()),
        }
    }

    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    /// Runs multiple queries one after the other in the same connection,
    /// merging all counters from each result summary.
    pub async fn run_queries<Q: Into<Query>>(
        &mut self,
        queries: impl IntoIterator<Item = Q>,
    ) -> Result<crate::summary::Counters> {
        let mut counters = crate::summary::Counters::default();
        for query in queries {
            let q = query.into().imp_user(self.imp_user.clone());
            let summary = self.run(q).await?;
            counters += summary.stats();
            self.save_bookmark_state(&summary);
        }
        Ok(counters)
    }

    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    /// Runs multiple queries one after the other in the same connection
    pub async fn run_queries<Q: Into<Query>>(
        &mut self,
        queries: impl IntoIterator<Item = Q>,
    ) -> Result<()> {
        for query in queries {
            let q = query.into().imp_user(self.imp_user.clone());
            self.run(q).await?;
        }
        Ok(())
    }

    /// Runs a single query and discards the stream.
    pub async fn run(&mut self, q: impl Into<Query>) -> Result<RunResult> {
        #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
        self.ensure_begun().await?;
        let query = self.with_extras(q.into());
        match query.run(&mut self.connection).await {
            Ok(result) => {
                #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
                self.save_bookmark_state(&result);
                Ok(result)
            }
            Err(e) => Err(e),
        }
    }

    /// Executes a query and returns a [`RowStream`]
    pub async fn execute(&mut self, q: impl Into<Query>) -> Result<RowStream> {
        #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
        self.ensure_begun().await?;
        self.with_extras(q.into())
            .execute_mut(self.fetch_size, &mut self.connection)
            .await
    }

    /// Commits the transaction in progress
    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    pub async fn commit(mut self) -> Result<()> {
        // A transaction that never ran a statement was never begun: nothing to commit.
        if !self.begin_pending {
            let commit = BoltRequest::commit();
            match self.connection.send_recv(commit).await? {
                BoltResponse::Success(_) => {}
                msg => return Err(msg.into_error("COMMIT")),
            }
        }
        self.connection.mark_clean();
        Ok(())
    }

    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    pub async fn commit(mut self) -> Result<Option<String>> {
        match self.connection.send_recv_as(Commit).await? {
            Summary::Success(resp) => {
                self.save_bookmark_state(&resp.metadata);
                Ok(self.bookmark)
            }
            msg => Err(msg.into_error("COMMIT")),
        }
    }

    /// rollback/abort the current transaction
    pub async fn rollback(mut self) -> Result<()> {
        #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
        {
            if !self.begin_pending {
                let rollback = BoltRequest::rollback();
                match self.connection.send_recv(rollback).await? {
                    BoltResponse::Success(_) => {}
                    msg => return Err(msg.into_error("ROLLBACK")),
                }
            }
            self.connection.mark_clean();
            Ok(())
        }

        #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
        {
            match self.connection.send_recv_as(Rollback).await? {
                Summary::Success(_) => Ok(()),
                msg => Err(msg.into_error("ROLLBACK")),
            }
        }
    }

    pub fn handle(&mut self) -> &mut impl TransactionHandle {
        self
    }

    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    pub fn last_bookmark(&self) -> Option<&str> {
        self.bookmark.as_deref()
    }

    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    fn save_bookmark_state(&mut self, summary: &impl Bookmark) {
        if let Some(bookmark) = summary.get_bookmark() {
            self.bookmark = Some(bookmark.to_string());
        } else {
            self.bookmark = None;
        }
    }
}

const _: () = {
    const fn assert_send_sync<T: ?Sized + Send + Sync>() {}
    assert_send_sync::<Txn>();
};

/// What [`Txn::fetch_all`] asks for after RUN.
#[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    /// PULL every record.
    All,
    /// DISCARD the result (statements run for their writes).
    Discard,
}

pub trait TransactionHandle: private::Handle {}

impl TransactionHandle for Txn {}
impl TransactionHandle for ManagedConnection {}
impl<T: TransactionHandle> TransactionHandle for &mut T {}

pub(crate) mod private {
    use crate::{Txn, pool::ManagedConnection};

    pub trait Handle {
        fn connection(&mut self) -> &mut ManagedConnection;
    }

    impl Handle for Txn {
        fn connection(&mut self) -> &mut ManagedConnection {
            &mut self.connection
        }
    }

    impl Handle for ManagedConnection {
        fn connection(&mut self) -> &mut ManagedConnection {
            self
        }
    }

    impl<T: Handle> Handle for &mut T {
        fn connection(&mut self) -> &mut ManagedConnection {
            (**self).connection()
        }
    }
}
