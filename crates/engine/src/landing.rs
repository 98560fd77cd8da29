//! What a written pass does once its commit is durable: the jobs it made ready are published,
//! the starts handed to it answered, its events handed to live streams and its messages acked.
//! The same code lands a pass committed in line and one committed in flight (`pipeline`).

use std::time::{Duration, Instant};

use aiden_jobs::{Broker, Job};
use lapin::acker::Acker;
use lapin::options::BasicAckOptions;

use crate::door::{self, Started};
use crate::{Committed, Notifier, SLOW_PASS};

/// What a written pass sends out once its commit is durable.
pub(crate) struct Outbound {
    pub jobs: Vec<Job>,
    pub cancels: Vec<String>,
    pub events: Vec<Committed>,
    /// The handed starts (by index) this pass could not prepare.
    pub unusable: Vec<usize>,
    pub clock: Instant,
    pub handle_us: u64,
    pub write: Duration,
    pub statement_start_us: i64,
}

impl Outbound {
    pub fn into_landing(
        self,
        handed: Vec<door::LocalStart>,
        ack: Option<Acker>,
        messages: usize,
    ) -> Landing {
        Landing {
            out: self,
            handed,
            ack,
            messages,
        }
    }
}

/// A written pass, waiting for its commit, with the starts it answers and the delivery it acks.
pub(crate) struct Landing {
    out: Outbound,
    pub handed: Vec<door::LocalStart>,
    /// The pass's last delivery: acked (with every one before it) once landed. `None` when
    /// the caller acks.
    pub ack: Option<Acker>,
    messages: usize,
}

impl Landing {
    /// After the commit: publishes, answers, notifies and acks (publish failures are logged:
    /// the steps are recorded queued and recovery publishes them again).
    pub async fn land(self, broker: &Broker, notifier: &Notifier) -> Result<(), lapin::Error> {
        let out = self.out;
        let commit = out.clock.elapsed();
        let hops = aiden_jobs::Hops {
            statement_start_us: out.statement_start_us,
            statement_us: out.write.as_micros() as i64,
            commit_end_us: aiden_jobs::epoch_us(),
            ..Default::default()
        };
        let mut jobs = out.jobs;
        for job in &mut jobs {
            job.hops = Some(hops.clone());
        }
        let job_count = jobs.len();
        metrics::histogram!("aiden_engine_pass_seconds").record(commit.as_secs_f64());
        metrics::histogram!("aiden_engine_pass_messages").record(self.messages as f64);
        metrics::counter!("aiden_jobs_dispatched_total").increment(job_count as u64);
        for (i, s) in self.handed.into_iter().enumerate() {
            s.answer(match out.unusable.contains(&i) {
                true => Started::Failed("the run could not be prepared".into()),
                false => Started::Created,
            });
        }
        crate::publish(broker, jobs, out.cancels).await;
        let took = out.clock.elapsed();
        let written = Duration::from_micros(out.handle_us) + out.write;
        macro_rules! pass_line {
            ($level:ident) => {
                tracing::$level!(
                    messages = self.messages,
                    jobs = job_count,
                    handle_us = out.handle_us,
                    write_us = out.write.as_micros() as u64,
                    commit_us = commit.saturating_sub(written).as_micros() as u64,
                    publish_us = (took - commit).as_micros() as u64,
                    "engine pass"
                )
            };
        }
        // A slow pass holds every run behind it: logged where operators look.
        match took >= SLOW_PASS {
            true => pass_line!(info),
            false => pass_line!(debug),
        }
        for c in out.events {
            notifier.committed(c);
        }
        if let Some(ack) = self.ack {
            ack.ack(BasicAckOptions { multiple: true }).await?;
        }
        Ok(())
    }
}
