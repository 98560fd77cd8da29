//! Quotas and money budgets: the hourly start counters (AGT-10), unsettled runs,
//! and the daily spend windows (AGT-14).

use std::collections::HashMap;

use aiden_domain::execution::machine::RunStatus;
pub use aiden_domain::process::Subject;
use serde::Deserialize;
use serde_json::Value;

use crate::{bolt, cypher, query_file, Error, Tx};

/// AGT-10: counts one more start in the window `key` of `subject`; the window's count.
pub async fn quota_window(
    tx: &mut Tx,
    key: &str,
    subject: &Subject<'_>,
    window_start: &str,
    now: &str,
) -> Result<i64, Error> {
    let (process, user) = match subject {
        Subject::Process(p) => (Some(*p), None),
        Subject::User(u) => (None, Some(*u)),
    };
    let q = cypher(query_file!("limit/quota_window.cypher"), None)
        .param("key", key)
        .param("processId", process)
        .param("userId", user)
        .param("windowStart", window_start)
        .param("now", now);
    tx.count(q).await
}

/// AGT-10: the subject's top-level runs not settled yet.
pub async fn active_runs(tx: &mut Tx, subject: &Subject<'_>) -> Result<i64, Error> {
    let q = match subject {
        Subject::Process(p) => {
            cypher(query_file!("limit/active_runs.cypher"), None).param("processId", *p)
        }
        Subject::User(u) => {
            cypher(query_file!("limit/active_runs_of_owner.cypher"), None).param("ownerId", *u)
        }
    };
    tx.count(q.param("open", RunStatus::words(|s| !s.is_settled())))
        .await
}

#[derive(Deserialize)]
struct Spent {
    key: String,
    spent: i64,
}

/// AGT-14: micro-dollars spent in each of the windows `keys` (0 for one not made yet).
pub async fn spent(tx: &mut Tx, keys: &[String]) -> Result<HashMap<String, i64>, Error> {
    let q = cypher(query_file!("limit/spent.cypher"), None).param("keys", keys.to_vec());
    let rows: Vec<Spent> = tx.rows(q).await?;
    Ok(rows.into_iter().map(|r| (r.key, r.spent)).collect())
}

/// AGT-14: every window of `day` and what it holds.
pub async fn spent_on(tx: &mut Tx, day: &str) -> Result<HashMap<String, i64>, Error> {
    let q = cypher(query_file!("limit/today_spend.cypher"), None).param("day", day);
    let rows: Vec<Spent> = tx.rows(q).await?;
    Ok(rows.into_iter().map(|r| (r.key, r.spent)).collect())
}

/// AGT-14: adds charges to windows: `{key, scope, subjectId, day, micros}` each.
pub async fn record_spend(tx: &mut Tx, spend: Vec<Value>, now: &str) -> Result<(), Error> {
    let q = cypher(query_file!("limit/record_spend.cypher"), None)
        .param("spend", bolt(Value::Array(spend))?)
        .param("now", now);
    tx.run(q).await
}
