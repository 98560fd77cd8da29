//! How runs move on inside a pass: advancing them by the schedule's decisions, settling them
//! through the run state machine, and a settled child run reaching its parent step.

use aiden_domain::execution::machine::{
    self, Call, Decided, Message, Outcome, Refused, RunEffect, RunMessage, Terminal,
};
use aiden_domain::execution::schedule::{accept_output, advance, Decision, StepStatus};
use aiden_jobs::ErrorInfo;
use serde_json::Value;

use super::{error_value, ChildResult, Pass};

impl Pass<'_> {
    /// Applies queued advances and child results until nothing more can happen now.
    pub(super) async fn drain(&mut self) -> Result<(), aiden_graph::Error> {
        loop {
            if let Some(child) = self.child_results.pop_front() {
                self.apply_child_result(child).await?;
                continue;
            }
            let Some(run_id) = self.to_advance.pop_front() else {
                return Ok(());
            };
            self.advance_run(&run_id).await?;
        }
    }

    async fn apply_child_result(&mut self, child: ChildResult) -> Result<(), aiden_graph::Error> {
        if !self.ensure(&child.parent_run_id).await? {
            return Ok(());
        }
        let run_id = child.parent_run_id;
        let Some(i) = self.run(&run_id).step_index(&child.parent_step_run_id) else {
            return Ok(());
        };
        let run = self.run(&run_id);
        if run.steps[i].status.is_settled() || run.status.is_settled() {
            return Ok(());
        }
        let outcome = match child.outcome {
            Ok(output) => match accept_output(&run.plan, i, output, &run.variables) {
                Ok((output, truncated)) => Outcome::Completed { output, truncated },
                Err(f) => Outcome::Failed {
                    error: error_value(&ErrorInfo::new(f.code, f.message)),
                },
            },
            Err(error) => Outcome::Failed { error },
        };
        let call = Call::internal(&self.now);
        self.finish(&run_id, i, &call, outcome);
        Ok(())
    }

    async fn advance_run(&mut self, run_id: &str) -> Result<(), aiden_graph::Error> {
        if !self.run(run_id).status.is_active() {
            return Ok(());
        }
        let decisions = {
            let run = self.run(run_id);
            let mut statuses = run.statuses();
            let mut vars = std::mem::take(&mut run.variables);
            let d = advance(&run.plan, &mut statuses, &mut vars);
            run.variables = vars;
            d
        };
        for decision in decisions {
            match decision {
                Decision::Dispatch(i) => self.dispatch(run_id, i).await?,
                Decision::Skip(i) => {
                    self.transition(run_id, i, Message::Skip);
                }
                Decision::FailStep(i, f) => {
                    let error = error_value(&ErrorInfo::new(f.code, f.message));
                    self.transition(run_id, i, Message::Fail { error });
                }
                Decision::Complete(output) => {
                    self.stop_run(run_id, Terminal::Completed, Some(output), None);
                }
                Decision::FailRun(f) => {
                    let error = self
                        .first_step_error(run_id)
                        .unwrap_or(ErrorInfo::new(f.code, f.message));
                    self.stop_run(run_id, Terminal::Failed, None, Some(error));
                }
            }
        }
        Ok(())
    }

    /// The failing step's own error, so a run's error says what actually went wrong.
    fn first_step_error(&self, run_id: &str) -> Option<ErrorInfo> {
        let run = self.runs.get(run_id)?;
        let i = run
            .steps
            .iter()
            .position(|s| s.status == StepStatus::Failed)?;
        let set = self.step_sets.get(&run.steps[i].id)?;
        let text = set.get("error")?.as_str()?;
        let inner: ErrorInfo = serde_json::from_str(text).ok()?;
        Some(ErrorInfo::new(
            &inner.code,
            format!("step `{}`: {}", run.plan.steps[i].id, inner.message),
        ))
    }

    /// Settles a run: unstarted steps are canceled, children are canceled, a parent step hears.
    pub(super) fn stop_run(
        &mut self,
        run_id: &str,
        outcome: Terminal,
        output: Option<Value>,
        error: Option<ErrorInfo>,
    ) {
        let error = error.as_ref().map(error_value);
        let settle = RunMessage::Settle {
            outcome,
            output,
            error,
        };
        self.run_transition(run_id, settle);
    }

    /// Runs `run_id` through the run state machine and executes what it decided, in order;
    /// the child runs of canceled steps are canceled last, then the parent step hears.
    pub(super) fn run_transition(&mut self, run_id: &str, message: RunMessage) {
        let (core, statuses) = {
            let run = self.run(run_id);
            (
                run.core(),
                run.steps.iter().map(|s| s.status).collect::<Vec<_>>(),
            )
        };
        let (after, effects) = match machine::run(core, &statuses, message, &self.now) {
            Ok(Decided::Moved(after, effects)) => (after, effects),
            Ok(Decided::Ignored(why)) => {
                tracing::debug!(run_id, why = why.as_str(), "run message ignored");
                return;
            }
            Err(refused) => return self.refused(run_id, None, &refused),
        };
        self.run(run_id).status = after.status;
        let mut children = Vec::new();
        let mut parent = None;
        for effect in effects {
            match effect {
                RunEffect::Write(patch) => self.set_run(run_id, Value::Object(patch.to_set())),
                RunEffect::Event(kind, data) => self.event(run_id, kind, None, data),
                RunEffect::Link => self.links.push(run_id.to_owned()),
                RunEffect::CancelStep(i) => {
                    children.extend(self.run(run_id).steps[i].child_run_id.clone());
                    self.transition(run_id, i, Message::Cancel);
                }
                RunEffect::Canceled => self.cancels.push(run_id.to_owned()),
                RunEffect::TellParent(outcome) => parent = Some(outcome),
                RunEffect::Advance => self.to_advance.push_back(run_id.to_owned()),
            }
        }
        for child in children {
            if self
                .runs
                .get(&child)
                .is_some_and(|c| !c.status.is_settled())
            {
                // Kept as it was: a failed commit puts it back, and a pipelined pass sees it used.
                self.remember(&child);
                self.stop_run(
                    &child,
                    Terminal::Canceled,
                    None,
                    Some(ErrorInfo::new("CANCELED", "the parent run stopped")),
                );
            }
        }
        let run = self.run(run_id);
        let caller = run
            .parent_run_id
            .clone()
            .zip(run.parent_step_run_id.clone());
        if let (Some((parent_run_id, parent_step_run_id)), Some(outcome)) = (caller, parent) {
            self.child_results.push_back(ChildResult {
                parent_run_id,
                parent_step_run_id,
                outcome,
            });
        }
    }

    /// A message its machine refused: the transition does not exist. Logged and counted
    /// (`aiden_engine_refused_transitions_total`), never applied.
    pub(super) fn refused(&self, run_id: &str, step_id: Option<&str>, refused: &Refused) {
        let machine = refused.machine.as_str();
        tracing::warn!(
            run_id,
            step_id,
            machine,
            state = refused.state,
            message = refused.message,
            "transition refused"
        );
        metrics::counter!(
            "aiden_engine_refused_transitions_total",
            "machine" => machine,
            "state" => refused.state,
            "message" => refused.message
        )
        .increment(1);
    }
}
