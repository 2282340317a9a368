//! [`LaneSteps`]: the lane with everything a driver does around a lane step (report it to
//! the observer, check the invariants, collect the outcomes), and no device. Together with
//! the [`Executor`](crate::Executor) it is the driver loop, taken apart at the one place a
//! multi-threaded caller must release its lock: between polling an effect and feeding the
//! event that answers it.

use lane_core::status_latch::Stage;
use lane_core::{
    Cause, CloseReport, CodeRef, Effect, Event, FaultNotice, Lane, LaneState, MAX_SLOTS, Outcome,
    Profile, PublicationId, PublicationResult, PublishError, RunId, RunRequest, SubmitError,
    Timestamp,
};
use std::collections::VecDeque;

use crate::driver::{DriverError, Report, Turn};
use crate::observer::{Command, NoObserver, Observation, Observer};

/// A lane, its observer, and the outcomes it delivered but nobody took yet. Every method is
/// one lane step at the `now` the caller read from [`Device::now`](crate::Device::now); none
/// makes a device call.
#[derive(Debug)]
pub struct LaneSteps<O: Observer = NoObserver> {
    lane: Lane,
    observer: O,
    check_invariants: bool,
    outcomes: VecDeque<Report>,
    /// The device's text about each failed call, keyed by the item (run or publication
    /// sequence number) whose effect failed. Empty unless a call failed.
    messages: Vec<(u64, String)>,
}

/// Device texts kept at most (one per failed item; a poison's origin is looked up by the
/// items it takes down, all delivered within a few steps).
const MAX_MESSAGES: usize = 2 * MAX_SLOTS as usize + lane_core::MAX_PENDING_PUBLICATIONS;

impl LaneSteps {
    /// A new lane with `profile`, observed by nobody, invariants checked after every step.
    #[must_use]
    pub fn new(profile: Profile) -> Self {
        Self {
            lane: Lane::new(profile),
            observer: NoObserver,
            check_invariants: true,
            outcomes: VecDeque::new(),
            messages: Vec::new(),
        }
    }
}

impl<O: Observer> LaneSteps<O> {
    /// The same steps, reported to `observer`.
    pub fn with_observer<P: Observer>(self, observer: P) -> LaneSteps<P> {
        LaneSteps {
            lane: self.lane,
            observer,
            check_invariants: self.check_invariants,
            outcomes: self.outcomes,
            messages: self.messages,
        }
    }

    /// Whether to run `Lane::check_invariants` after every step.
    #[must_use]
    pub fn check_invariants(mut self, on: bool) -> Self {
        self.check_invariants = on;
        self
    }

    /// The lane (read-only).
    pub const fn lane(&self) -> &Lane {
        &self.lane
    }

    /// The observer.
    pub const fn observer(&self) -> &O {
        &self.observer
    }

    /// The observer, mutably (the executor reports failed releases to it).
    pub fn observer_mut(&mut self) -> &mut O {
        &mut self.observer
    }

    /// The observer, consuming the steps.
    pub fn into_observer(self) -> O {
        self.observer
    }

    /// Gives the lane a run at `now`.
    pub fn submit(
        &mut self,
        now: Timestamp,
        request: RunRequest,
    ) -> Result<Result<RunId, SubmitError>, DriverError> {
        self.command(
            now,
            Command::Submit,
            |lane| lane.submit(now, request),
            |result| result.as_ref().ok().map(|r| r.0),
        )
    }

    /// Gives the lane a publication at `now`.
    pub fn publish(
        &mut self,
        now: Timestamp,
        code: CodeRef,
    ) -> Result<Result<PublicationId, PublishError>, DriverError> {
        self.command(
            now,
            Command::Publish,
            |lane| lane.publish(now, code),
            |result| result.as_ref().ok().map(|p| p.0),
        )
    }

    /// Tells the lane about a device fault notice that concerns its device at `now` (L-19):
    /// whether the lane acted on it.
    pub fn fault_notice(
        &mut self,
        now: Timestamp,
        notice: FaultNotice,
    ) -> Result<bool, DriverError> {
        self.command(
            now,
            Command::FaultNotice,
            |lane| lane.fault_notice(now, notice),
            |_| None,
        )
    }

    /// Closes the lane at `now`.
    pub fn close(&mut self, now: Timestamp) -> Result<CloseReport, DriverError> {
        self.command(now, Command::Close, |lane| lane.close(now), |_| None)
    }

    /// Destroys the streams a closed lane's teardown left once more at `now`
    /// ([`Lane::retry_teardown`]): whether there were any (their `DestroyStream` effects
    /// follow).
    pub fn retry_teardown(&mut self, now: Timestamp) -> Result<bool, DriverError> {
        self.command(
            now,
            Command::RetryTeardown,
            |lane| lane.retry_teardown(now),
            |_| None,
        )
    }

    /// The one command path: gives the lane `command`, reports it (with the id it
    /// `accepted`) and checks the lane.
    fn command<T>(
        &mut self,
        now: Timestamp,
        command: Command,
        apply: impl FnOnce(&mut Lane) -> T,
        accepted: impl FnOnce(&T) -> Option<u64>,
    ) -> Result<T, DriverError> {
        let result = apply(&mut self.lane);
        self.observer.observe(&Observation::Command {
            now,
            command,
            accepted: accepted(&result),
        });
        self.after_step(now)?;
        Ok(result)
    }

    /// The lane's next effect, reported as about to be executed.
    pub fn next_effect(&mut self, now: Timestamp) -> Option<Effect> {
        let effect = self.lane.poll_effect()?;
        self.observer.observe(&Observation::Effect {
            now,
            effect: &effect,
        });
        Some(effect)
    }

    /// Feeds the event that answers an effect; a rejected one is a driver bug.
    /// `device_message` is the device's text about the failed call behind a failure event
    /// ([`Executor::device_message`](crate::Executor::device_message)); it reaches the
    /// [`Report`] of every outcome that names this failure as its cause.
    pub fn feed(
        &mut self,
        now: Timestamp,
        event: Event,
        device_message: Option<String>,
    ) -> Result<(), DriverError> {
        if let Some(text) = device_message {
            let key = failed_item(&event).unwrap_or(STREAM_CALL);
            if self.messages.len() >= MAX_MESSAGES {
                self.messages.remove(0);
            }
            self.messages.push((key, text));
        }
        let result = self.lane.handle(now, event);
        self.observer.observe(&Observation::Event {
            now,
            event: &event,
            result: &result,
        });
        result.map_err(DriverError::Rejected)?;
        self.after_step(now)
    }

    /// Tells the lane the awaited run's deadline passed at `now`.
    pub fn expire(&mut self, now: Timestamp) -> Result<(), DriverError> {
        self.observer.observe(&Observation::Timeout { now });
        self.lane.handle_timeout(now);
        self.after_step(now)
    }

    /// The awaited run's deadline (`Lane::poll_deadline`), the bound on every wait.
    #[must_use]
    pub fn deadline(&self) -> Option<Timestamp> {
        self.lane.poll_deadline()
    }

    /// The next delivered outcome, in submission order.
    pub fn poll_outcome(&mut self) -> Option<Outcome> {
        self.poll_report().map(|report| report.outcome)
    }

    /// The next delivered outcome with the device's text about the failed call behind it.
    pub fn poll_report(&mut self) -> Option<Report> {
        self.outcomes.pop_front()
    }

    /// With no effect left and nothing awaited: [`Turn::Idle`] when every accepted item has
    /// its outcome (or the lane is closed or lost), else the lane is stuck.
    pub fn settled(&self) -> Result<Turn, DriverError> {
        if self.lane.is_idle() || matches!(self.lane.state(), LaneState::Lost | LaneState::Closed) {
            return Ok(Turn::Idle);
        }
        Err(DriverError::Stuck {
            pending: self.lane.pending_items(),
            state: self.lane.state(),
        })
    }

    fn after_step(&mut self, now: Timestamp) -> Result<(), DriverError> {
        while let Some(outcome) = self.lane.poll_outcome() {
            self.observer.observe(&Observation::Outcome {
                now,
                outcome: &outcome,
            });
            let stage = cause_of(&outcome).and_then(Cause::stage);
            let device_message = if stage == Some(Stage::FaultNotice) {
                // Taken down by a fault notice (L-19): the notice is the device's word on it
                // (device, stream id, code), so the outcome names which notice it was.
                self.lane.notice().map(|notice| notice.to_string())
            } else {
                outcome.cause_item().and_then(|item| {
                    // A stream create or destroy fails the run waiting to launch, which the
                    // executor cannot name when the call fails: its text is keyed by the stage.
                    let key = match stage {
                        Some(Stage::StreamCreate | Stage::StreamDestroy) => STREAM_CALL,
                        _ => item,
                    };
                    self.messages
                        .iter()
                        .find(|(k, _)| *k == key)
                        .map(|(_, text)| text.clone())
                })
            };
            self.outcomes.push_back(Report {
                outcome,
                device_message,
            });
        }
        // Every item has its outcome: no later outcome can name a kept text.
        if !self.messages.is_empty() && self.lane.pending_items() == 0 {
            self.messages.clear();
        }
        if self.check_invariants {
            self.lane.check_invariants()?;
        }
        Ok(())
    }
}

/// The key of the text of a failed stream create or destroy (no item's sequence number:
/// those start at 1 and never reach it).
const STREAM_CALL: u64 = u64::MAX;

/// The cause an outcome reports, if it has one.
const fn cause_of(outcome: &Outcome) -> Option<&Cause> {
    match outcome {
        Outcome::Run(r) => r.verdict.cause(),
        Outcome::Publication(p) => match &p.result {
            PublicationResult::Failed { cause } | PublicationResult::Poisoned { cause, .. } => {
                Some(cause)
            }
            PublicationResult::Uploaded | PublicationResult::Cancelled => None,
        },
    }
}

/// The item (run or publication sequence number) whose effect a failure event answers, for
/// the events that carry a device code and fail an item.
const fn failed_item(event: &Event) -> Option<u64> {
    match event {
        Event::PrepareFailed { run, .. }
        | Event::LaunchFailed { run, .. }
        | Event::CompletionFailed { run, .. }
        | Event::Completed { run, .. }
        | Event::StatusReadFailed { run, .. }
        | Event::FinaliseFailed { run, .. } => Some(run.0),
        Event::UploadFailed { publication, .. } => Some(publication.0),
        _ => None,
    }
}
