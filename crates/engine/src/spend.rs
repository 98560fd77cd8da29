//! Money in the engine (AGT-14): the deployment's model prices and the day's spend windows.
//!
//! The engine is the only writer of `SpendWindow` nodes, and only the lease holder writes, so
//! once it has read the day's windows (when it takes the lease, and at each UTC midnight) it
//! keeps them in memory: checking a loop's next call against its run's daily budgets costs no
//! read. A pass adds its charges to the graph in its own transaction; the ledger takes them
//! only once that transaction committed.

use std::collections::{BTreeMap, HashMap};

use aiden_domain::clock::Clock;
use aiden_domain::execution::cost::{day_of, PriceTable};
use aiden_domain::process::Subject;
use aiden_graph::Graph;
use serde_json::{json, Value};

use crate::state::RunState;

pub struct Ledger {
    pub prices: PriceTable,
    day: String,
    spent: HashMap<String, u64>,
    loaded: bool,
    /// Which UTC day it is (the system clock, or the one a test pins).
    pub clock: Clock,
}

impl Ledger {
    pub fn new(prices: PriceTable) -> Self {
        Self {
            prices,
            day: String::new(),
            spent: HashMap::new(),
            loaded: false,
            clock: Clock::system(),
        }
    }

    /// Forgets the windows (the lease was lost: another engine may have charged them since).
    pub fn forget(&mut self) {
        self.loaded = false;
        self.spent.clear();
    }

    /// Reads today's windows unless they are in memory already.
    pub async fn ensure_today(&mut self, graph: &Graph) -> Result<(), aiden_graph::Error> {
        let day = day_of(self.clock.now());
        if self.loaded && day == self.day {
            return Ok(());
        }
        let mut tx = graph.begin().await?;
        let read = aiden_graph::limits::spent_on(&mut tx, &day).await;
        let _ = tx.rollback().await;
        self.spent = read?
            .into_iter()
            .map(|(k, v)| (k, v.max(0) as u64))
            .collect();
        self.day = day;
        self.loaded = true;
        Ok(())
    }

    pub fn day(&self) -> &str {
        &self.day
    }

    fn spent(&self, key: &str) -> u64 {
        self.spent.get(key).copied().unwrap_or(0)
    }

    /// A committed pass's charges.
    pub fn add(&mut self, charges: &Charges) {
        for (key, c) in &charges.0 {
            let v = self.spent.entry(key.clone()).or_insert(0);
            *v = v.saturating_add_signed(c.micros);
        }
    }
}

/// One window's charge in a pass.
struct Charge {
    scope: &'static str,
    subject: String,
    micros: i64,
}

/// What a pass charged, by window key (written in its transaction, added to the ledger after).
#[derive(Default)]
pub struct Charges(BTreeMap<String, Charge>);

impl Charges {
    /// The run's daily windows, each with its budget if it has one.
    fn windows(run: &RunState, day: &str) -> [(String, &'static str, String, Option<u64>); 2] {
        let process = &run.plan.process_id;
        let process_budget = run.plan.quota.and_then(|q| q.cost_budget_micros());
        [
            (
                Subject::Process(process).spend_key(day),
                "process",
                process.clone(),
                process_budget,
            ),
            (
                Subject::User(&run.owner_id).spend_key(day),
                "user",
                run.owner_id.clone(),
                run.owner_budget_micros,
            ),
        ]
    }

    /// What the run's budgeted windows have left (the least of them), if any is budgeted.
    pub fn allowance(&self, ledger: &Ledger, run: &RunState) -> Option<u64> {
        Self::windows(run, ledger.day())
            .into_iter()
            .filter_map(|(key, _, _, budget)| {
                let pending = self.0.get(&key).map_or(0, |c| c.micros);
                let spent = ledger.spent(&key).saturating_add_signed(pending);
                budget.map(|b| b.saturating_sub(spent))
            })
            .min()
    }

    /// Charges `micros` (negative: gives back) to both of the run's windows.
    pub fn charge(&mut self, day: &str, run: &RunState, micros: i64) {
        if micros == 0 {
            return;
        }
        for (key, scope, subject, _) in Self::windows(run, day) {
            self.0
                .entry(key)
                .or_insert(Charge {
                    scope,
                    subject,
                    micros: 0,
                })
                .micros += micros;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The rows `limit/record_spend.cypher` takes.
    pub fn rows(&self, day: &str) -> Vec<Value> {
        self.0
            .iter()
            .map(|(key, c)| {
                json!({"key": key, "scope": c.scope, "subjectId": c.subject, "day": day,
                       "micros": c.micros})
            })
            .collect()
    }
}
