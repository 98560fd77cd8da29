//! One explicit transaction. Rows come back as serde structs named by their `AS` columns.

use serde::de::DeserializeOwned;

use crate::Error;

/// A statement's `RETURN x.id AS id`: present when the statement matched.
#[derive(Debug, serde::Deserialize)]
pub struct IdRow {
    pub id: String,
}

/// A statement's `RETURN count(…) AS n`.
#[derive(Debug, serde::Deserialize)]
struct CountRow {
    n: i64,
}

pub struct Tx {
    inner: neo4rs::Txn,
    updated: u64,
}

impl Tx {
    pub(crate) fn new(inner: neo4rs::Txn) -> Self {
        Self { inner, updated: 0 }
    }

    /// Every row, in one round trip (with the transaction's BEGIN when this is its first).
    pub async fn rows<T: DeserializeOwned>(&mut self, q: neo4rs::Query) -> Result<Vec<T>, Error> {
        decode(self.fetch(q).await?)
    }

    /// Every row whose `id` column is not null. Neo4j reads at read committed: a node another
    /// transaction deletes while this statement reads it comes back with every property null,
    /// so it passes any `IS NULL` test. A statement that scans what others write (the audit)
    /// skips such rows instead of reporting, or failing to decode, a node that is gone. A live
    /// node without an id would be skipped too (none is written so: every id is required and
    /// unique), so skipped rows are logged.
    pub async fn live_rows<T: DeserializeOwned>(
        &mut self,
        q: neo4rs::Query,
    ) -> Result<Vec<T>, Error> {
        let file = statement_file(q.query());
        let (live, gone): (Vec<neo4rs::Row>, Vec<neo4rs::Row>) = self
            .fetch(q)
            .await?
            .into_iter()
            .partition(|row| matches!(row.get::<Option<String>>("id"), Ok(Some(_))));
        if !gone.is_empty() {
            tracing::info!(
                file,
                rows = gone.len(),
                "rows without an id skipped (deleted while read?)"
            );
        }
        decode(live)
    }

    /// The `n` a counting statement returns (0 when it returns no row).
    pub async fn count(&mut self, q: neo4rs::Query) -> Result<i64, Error> {
        Ok(self.one::<CountRow>(q).await?.map_or(0, |c| c.n))
    }

    pub async fn one<T: DeserializeOwned>(&mut self, q: neo4rs::Query) -> Result<Option<T>, Error> {
        Ok(self.rows(q).await?.into_iter().next())
    }

    async fn fetch(&mut self, q: neo4rs::Query) -> Result<Vec<neo4rs::Row>, Error> {
        let timer = StatementTimer::start(&q);
        let rows = self
            .inner
            .fetch_all(q, neo4rs::Fetch::All)
            .await
            .map_err(Error::from_driver)?;
        timer.done();
        Ok(rows)
    }

    pub async fn run(&mut self, q: neo4rs::Query) -> Result<(), Error> {
        let timer = StatementTimer::start(&q);
        self.inner
            .fetch_all(q, neo4rs::Fetch::Discard)
            .await
            .map_err(Error::from_driver)?;
        timer.done();
        Ok(())
    }

    /// The nodes and edges this transaction's statements created so far (their summaries).
    pub fn written(&self) -> neo4rs::WriteStats {
        self.inner.written()
    }

    /// Notes that this transaction updates `n` nodes it did not create (the server's summary
    /// counts properties set, not nodes): the engine's pass says how many it wrote.
    pub fn count_updates(&mut self, n: u64) {
        self.updated += n;
    }

    /// Commits; `aiden_graph_commits_total` counts the commits that succeeded (transactions
    /// that wrote nothing included: Neo4j logs nothing for those).
    /// `aiden_graph_records_total{what}` counts the records committed transactions wrote: nodes
    /// and edges created, as the server's statement summaries reported them, and the nodes
    /// updated that the writer counted ([`Tx::count_updates`]): the benchmark's records per step.
    pub async fn commit(self) -> Result<(), Error> {
        let written = self.inner.written();
        self.inner.commit().await.map_err(Error::from_driver)?;
        count_commit(written, self.updated);
        Ok(())
    }

    /// A last statement (its rows discarded) and the commit in one round trip
    /// (vendor/README.md). An error means nothing was committed, except
    /// [`Error::Unavailable`]: the commit's answer was not read, and it may have committed, as
    /// for [`Tx::commit`]. Only for a statement whose rows could not change the decision to
    /// commit. Its time in `aiden_graph_statement_seconds` includes the commit.
    pub async fn run_and_commit(self, q: neo4rs::Query) -> Result<(), Error> {
        let timer = StatementTimer::start(&q);
        let written = self
            .inner
            .run_and_commit(q)
            .await
            .map_err(Error::from_driver)?;
        timer.done();
        count_commit(written, self.updated);
        Ok(())
    }

    pub async fn rollback(self) -> Result<(), Error> {
        self.inner.rollback().await.map_err(Error::from_driver)
    }
}

/// `aiden_graph_commits_total` and `aiden_graph_records_total{what}` for a commit that landed.
fn count_commit(written: neo4rs::WriteStats, updated: u64) {
    metrics::counter!("aiden_graph_commits_total").increment(1);
    for (what, n) in [
        ("nodes_created", written.nodes_created),
        ("edges_created", written.relationships_created),
        ("nodes_updated", updated),
    ] {
        metrics::counter!("aiden_graph_records_total", "what" => what).increment(n);
    }
}

fn decode<T: DeserializeOwned>(rows: Vec<neo4rs::Row>) -> Result<Vec<T>, Error> {
    rows.into_iter()
        .map(|row| row.to::<T>().map_err(|e| Error::Decode(e.to_string())))
        .collect()
}

/// A statement or a begin this slow is logged (the slow query log, at `info`).
pub(crate) const SLOW: std::time::Duration = std::time::Duration::from_millis(250);

/// `aiden_graph_statement_seconds{file}`: one statement's round trip (sent, every row read),
/// successful ones only, by the `cypher/queries` file it came from.
pub(crate) struct StatementTimer {
    file: &'static str,
    started: std::time::Instant,
}

impl StatementTimer {
    pub(crate) fn start(q: &neo4rs::Query) -> Self {
        Self {
            file: statement_file(q.query()),
            started: std::time::Instant::now(),
        }
    }

    pub(crate) fn done(self) {
        let took = self.started.elapsed();
        metrics::histogram!("aiden_graph_statement_seconds", "file" => self.file)
            .record(took.as_secs_f64());
        if took >= SLOW {
            tracing::info!(
                file = self.file,
                ms = took.as_millis() as u64,
                "slow graph statement"
            );
        }
    }
}

/// The `cypher/queries` file a statement came from (`query_file!`'s first line), or `inline`.
/// Interned: a label value per file, allocated once.
pub(crate) fn statement_file(text: &str) -> &'static str {
    use std::{collections::HashSet, sync::Mutex};
    static FILES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let Some(path) = text
        .strip_prefix("// aiden:")
        .and_then(|rest| rest.split_once('\n'))
        .map(|(path, _)| path)
    else {
        return "inline";
    };
    let Ok(mut files) = FILES.lock() else {
        return "inline";
    };
    let files = files.get_or_insert_with(HashSet::new);
    match files.get(path) {
        Some(known) => known,
        None => {
            let leaked: &'static str = Box::leak(path.to_owned().into_boxed_str());
            files.insert(leaked);
            leaked
        }
    }
}

#[cfg(test)]
mod tests {
    use super::statement_file;

    #[test]
    fn a_statement_is_named_by_its_query_file() {
        let text = crate::query_file!("user/get_user.cypher");
        assert_eq!(statement_file(text), "user/get_user.cypher");
        assert!(
            std::ptr::eq(statement_file(text), statement_file(text)),
            "interned"
        );
        assert_eq!(statement_file("MATCH (n) RETURN n"), "inline");
    }
}
