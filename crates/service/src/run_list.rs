//! The run list (`GET /v1/runs`): a page of runs, newest first, each line with its Process's
//! and owner's names, how long it took (or has taken so far) and, for a run that answers a
//! conversation turn, the message it answered.

use aiden_domain::user::Caller;
use aiden_domain::Error as Domain;
use aiden_graph::runs;
use chrono::{DateTime, Utc};
use serde_json::json;

use crate::{
    runs::typed,
    tx::read_tx,
    views::{RunMessage, RunStatus, RunSummary, RunTrigger},
    App, Page, PageRequest, Result,
};

/// `GET /v1/runs` narrowed by Process and status.
pub struct RunQuery {
    pub page: PageRequest,
    pub process_id: Option<String>,
    pub status: Option<RunStatus>,
    /// An admin's narrowing to one user's runs (a user sees only their own anyway).
    pub owner_id: Option<String>,
    /// Only runs whose id starts with this: a search by id, so at least
    /// [`ID_PREFIX_MIN`] characters of an id's alphabet.
    pub id_prefix: Option<String>,
}

/// The shortest id prefix the run list takes: shorter ones match most runs and say little.
pub const ID_PREFIX_MIN: usize = 4;

/// A run id prefix as the list takes it: lower-case hex digits and dashes, at least
/// [`ID_PREFIX_MIN`] of them.
fn id_prefix(raw: Option<&str>) -> Result<Option<String>> {
    let Some(raw) = raw.map(str::trim).filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let prefix = raw.to_ascii_lowercase();
    if prefix.chars().count() < ID_PREFIX_MIN
        || !prefix.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
    {
        return Err(Domain::validation(
            "/idPrefix",
            format!("a run id prefix is at least {ID_PREFIX_MIN} hex digits or dashes"),
        )
        .into());
    }
    Ok(Some(prefix))
}

/// How long a run has taken: to its end, or, while it runs, to `now`; none before it starts.
fn duration_ms(started: Option<&str>, finished: Option<&str>, now: DateTime<Utc>) -> Option<i64> {
    let at = |t: &str| {
        DateTime::parse_from_rfc3339(t)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    };
    let start = at(started?)?;
    let end = match finished {
        Some(f) => at(f)?,
        None => now,
    };
    Some((end - start).num_milliseconds().max(0))
}

impl App {
    /// `GET /v1/runs`: newest first; a user's own runs, every run for an admin.
    pub async fn list_runs(&self, caller: &Caller, q: RunQuery) -> Result<Page<RunSummary>> {
        let limit = q.page.limit()?;
        let before = q.page.cursor.clone().unwrap_or_default();
        let status = q.status.map(|s| s.as_str());
        let prefix = id_prefix(q.id_prefix.as_deref())?;
        let filter = runs::RunFilter {
            owner_id: match caller.is_admin() {
                true => q.owner_id.as_deref(),
                false => Some(caller.id.as_str()),
            },
            process_id: q.process_id.as_deref(),
            status,
            id_prefix: prefix.as_deref(),
            before: &before,
            limit: limit + 1,
        };
        let mut rows = read_tx!(self, |tx| { Ok(runs::list(&mut tx, &filter).await?) })?;
        let next_cursor = if rows.len() as i64 > limit {
            rows.truncate(limit as usize);
            rows.last().map(|r| r.id.clone())
        } else {
            None
        };
        let now = Utc::now();
        let items = rows
            .into_iter()
            .map(|r| {
                let n = r.names;
                Ok(RunSummary {
                    duration_ms: duration_ms(
                        r.started_at.as_deref(),
                        r.finished_at.as_deref(),
                        now,
                    ),
                    process_name: n.process_name,
                    owner_name: n.owner_name,
                    message: RunMessage::from_parts(
                        n.conversation_id,
                        n.answer_id,
                        n.answer_turn_id,
                        n.message_id,
                        n.message_turn_id,
                        n.message_text,
                    ),
                    status: typed(json!(r.status))?,
                    id: r.id,
                    process_id: r.process_id,
                    process_version: r.process_version,
                    depth: r.depth,
                    parent_run_id: r.parent_run_id,
                    owner_id: r.owner_id,
                    created_at: r.created_at,
                    started_at: r.started_at,
                    finished_at: r.finished_at,
                    trigger: RunTrigger::from_parts(r.trigger_kind, r.trigger_subject_id),
                })
            })
            .collect::<Result<_>>()?;
        Ok(Page { items, next_cursor })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_runs_to_the_end_or_to_now() {
        let now = DateTime::parse_from_rfc3339("2025-01-01T00:00:10Z")
            .unwrap()
            .with_timezone(&Utc);
        let start = Some("2025-01-01T00:00:01.500Z");
        assert_eq!(
            duration_ms(start, Some("2025-01-01T00:00:03Z"), now),
            Some(1500)
        );
        assert_eq!(
            duration_ms(start, None, now),
            Some(8500),
            "a running run's time so far"
        );
        assert_eq!(
            duration_ms(None, None, now),
            None,
            "not started: no duration"
        );
    }

    #[test]
    fn an_id_prefix_is_hex_and_long_enough() {
        assert_eq!(id_prefix(Some(" 019A-")).unwrap().as_deref(), Some("019a-"));
        assert_eq!(id_prefix(Some("")).unwrap(), None);
        assert!(id_prefix(Some("019")).is_err(), "too short");
        assert!(id_prefix(Some("019a' OR 1=1")).is_err(), "not an id");
    }
}
