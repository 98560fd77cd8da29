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
}

impl Tx {
    pub(crate) fn new(inner: neo4rs::Txn) -> Self {
        Self { inner }
    }

    pub async fn rows<T: DeserializeOwned>(&mut self, q: neo4rs::Query) -> Result<Vec<T>, Error> {
        let mut stream = self.inner.execute(q).await.map_err(Error::from_driver)?;
        let mut out = Vec::new();
        while let Some(row) = stream
            .next(&mut self.inner)
            .await
            .map_err(Error::from_driver)?
        {
            out.push(row.to::<T>().map_err(|e| Error::Decode(e.to_string()))?);
        }
        Ok(out)
    }

    /// The `n` a counting statement returns (0 when it returns no row).
    pub async fn count(&mut self, q: neo4rs::Query) -> Result<i64, Error> {
        Ok(self.one::<CountRow>(q).await?.map_or(0, |c| c.n))
    }

    pub async fn one<T: DeserializeOwned>(&mut self, q: neo4rs::Query) -> Result<Option<T>, Error> {
        Ok(self.rows(q).await?.into_iter().next())
    }

    pub async fn run(&mut self, q: neo4rs::Query) -> Result<(), Error> {
        self.inner
            .run(q)
            .await
            .map(|_| ())
            .map_err(Error::from_driver)
    }

    pub async fn commit(self) -> Result<(), Error> {
        self.inner.commit().await.map_err(Error::from_driver)
    }

    pub async fn rollback(self) -> Result<(), Error> {
        self.inner.rollback().await.map_err(Error::from_driver)
    }
}
