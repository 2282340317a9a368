//! [`Tally`]: the figures a scenario compares, counted from the driver's observations, so any
//! backend reports them the same way.

use lane_core::status_latch::Status;
use lane_core::stream_pair::Role;
use lane_core::{Effect, Event, LaunchStep, RunId};
use lane_driver::{Observation, Observer};

/// Counts lane steps: AICore streams created, force resets that succeeded, latched status
/// headers read, and queued launches.
///
/// A launch is *queued* when the lane launches a run (or fails a launch after its AICore
/// kernel reached the device) while an earlier launched run has no `Completed` or
/// `CompletionFailed` yet. That is an ordering of lane steps, not a timing, so the count is
/// the same on any machine, however loaded (the simulator counts on its virtual clock; the
/// scenarios' expectations hold for both).
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// AICore streams the lane created.
    pub aicore_streams_created: u64,
    /// Force resets that succeeded.
    pub resets: u64,
    /// Launches made while an earlier launched run had not completed.
    pub queued_launches: u64,
    /// Every status header read that latched a code, by run, in read order.
    pub latches: Vec<(RunId, Status)>,
    /// Runs launched and not yet known complete.
    in_flight: Vec<RunId>,
}

impl Observer for Tally {
    fn observe(&mut self, step: &Observation<'_>) {
        match *step {
            Observation::Effect { effect, .. } => {
                // A poison abandons every run in flight: the drain and reset end them.
                if matches!(effect, Effect::DrainDevice { .. } | Effect::ForceReset { .. }) {
                    self.in_flight.clear();
                }
            }
            Observation::Event { event, result: Ok(()), .. } => match *event {
                Event::StreamCreated { role: Role::Aicore, .. } => self.aicore_streams_created += 1,
                Event::ResetDone { .. } => self.resets += 1,
                Event::Launched { run, .. }
                | Event::LaunchFailed {
                    run,
                    step: LaunchStep::Aicpu | LaunchStep::CoreDone | LaunchStep::RecordEvent,
                    ..
                } => {
                    if !self.in_flight.is_empty() {
                        self.queued_launches += 1;
                    }
                    self.in_flight.push(run);
                }
                Event::Completed { run, .. } | Event::CompletionFailed { run, .. } => {
                    self.in_flight.retain(|r| *r != run);
                }
                Event::StatusRead { run, status, .. }
                    if status.orch.is_some() || status.sched.is_some() =>
                {
                    self.latches.push((run, status));
                }
                _ => {}
            },
            _ => {}
        }
    }
}
