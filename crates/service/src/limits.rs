//! Limits on starts, checked in the start's own transaction, before anything is
//! written (a refusal rolls the count back):
//! - AGT-10: the Process's quota and the caller's own (`PATCH /v1/users/{id}`), each counted in
//!   its hourly `QuotaWindow` so concurrent starts on any API instance serialize on it;
//! - AGT-14: their daily money budgets: a start whose Process or owner has spent its
//!   `maxCostUsdPerDay` today is refused. (Within a run, the engine checks each call before it
//!   spends: `aiden_engine`'s spend ledger.)

use aiden_domain::execution::cost::{day_of, seconds_to_midnight, usd};
use aiden_domain::process::Quota;
use aiden_domain::user::Caller;
use aiden_domain::{Error as Domain, Violation};
use aiden_graph::limits::{self, Subject};

use crate::{Error, Result};

/// Checks and counts one start of `process_id` by `caller`, at `now` (the App's clock).
pub(crate) async fn check_start(
    tx: &mut aiden_graph::Tx,
    caller: &Caller,
    process_id: &str,
    process_quota: Option<&Quota>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<()> {
    let user_id = caller.id.as_str();
    let subjects = [
        (Subject::Process(process_id), process_quota),
        (Subject::User(user_id), caller.quota.as_ref()),
    ];
    check_budgets(tx, &subjects, now).await?;
    for (subject, quota) in &subjects {
        if let Some(q) = quota {
            count_start(tx, subject, q, now).await?;
        }
    }
    Ok(())
}

fn name(subject: &Subject<'_>) -> String {
    match subject {
        Subject::Process(p) => format!("process `{p}`"),
        Subject::User(u) => format!("user `{u}`"),
    }
}

/// AGT-10: the start counts in the subject's hour; past either limit it is refused.
async fn count_start(
    tx: &mut aiden_graph::Tx,
    subject: &Subject<'_>,
    quota: &Quota,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<()> {
    if quota.max_invocations_per_hour.is_none() && quota.max_concurrent.is_none() {
        return Ok(());
    }
    use chrono::Timelike;
    let hour = now.format("%Y-%m-%dT%H:00:00Z").to_string();
    let stamp = now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let key = subject.quota_key(&hour);
    let started = limits::quota_window(tx, &key, subject, &hour, &stamp).await?;
    let who = name(subject);
    let refuse = |field: &str, message: String, retry_after_secs: u64| -> Error {
        Domain::Quota {
            details: vec![Violation::rule(
                "AGT-10",
                format!("/quota/{field}"),
                message.clone(),
            )],
            message,
            retry_after_secs,
        }
        .into()
    };
    if let Some(max) = quota.max_invocations_per_hour {
        if started > i64::from(max) {
            let left = 3600 - u64::from(now.minute() * 60 + now.second());
            return Err(refuse(
                "maxInvocationsPerHour",
                format!("{who} may start {max} runs an hour"),
                left,
            ));
        }
    }
    if let Some(max) = quota.max_concurrent {
        if limits::active_runs(tx, subject).await? >= i64::from(max) {
            return Err(refuse(
                "maxConcurrent",
                format!("{who} may have {max} runs at once"),
                1,
            ));
        }
    }
    Ok(())
}

/// AGT-14: a subject whose daily budget is spent starts nothing more today.
async fn check_budgets(
    tx: &mut aiden_graph::Tx,
    subjects: &[(Subject<'_>, Option<&Quota>)],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<()> {
    let day = day_of(now);
    let budgeted: Vec<(String, &Subject<'_>, u64)> = subjects
        .iter()
        .filter_map(|(subject, quota)| {
            let budget = quota.and_then(|q| q.cost_budget_micros())?;
            let key = subject.spend_key(&day);
            Some((key, subject, budget))
        })
        .collect();
    if budgeted.is_empty() {
        return Ok(());
    }
    let keys: Vec<String> = budgeted.iter().map(|b| b.0.clone()).collect();
    let spent = limits::spent(tx, &keys).await?;
    for (key, subject, budget) in budgeted {
        let used = spent.get(&key).copied().unwrap_or(0).max(0) as u64;
        if used >= budget {
            let message = format!(
                "{} has spent ${:.6} of its ${:.6} for today (UTC)",
                name(subject),
                usd(used),
                usd(budget)
            );
            return Err(Domain::Budget {
                details: vec![Violation::rule(
                    "AGT-14",
                    "/quota/maxCostUsdPerDay",
                    message.clone(),
                )],
                message,
                retry_after_secs: seconds_to_midnight(now),
            }
            .into());
        }
    }
    Ok(())
}
