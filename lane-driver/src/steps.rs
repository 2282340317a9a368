//! [`LaneSteps`]: the lane with everything a driver does around a lane step (report it to
//! the observer, check the invariants, collect the outcomes), and no device. Together with
//! the [`Executor`](crate::Executor) it is the driver loop, taken apart at the one place a
//! multi-threaded caller must release its lock: between polling an effect and feeding the
//! event that answers it.

use lane_core::status_latch::{Class, Stage};
use lane_core::{
    Cause, CloseReport, CodeRef, ControlError, DeviceResetError, Effect, Event, FaultNotice, Lane,
    LaneState, Outcome, Profile, PublicationId, PublicationResult, PublishError, RunId, RunPhase,
    RunRequest, SubmitError, Timestamp,
};
use std::collections::{BTreeMap, VecDeque};

use crate::answer::Answer;
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
    /// The device's texts fed with failures whose outcomes are not all delivered yet.
    texts: Texts,
}

impl LaneSteps {
    /// A new lane with `profile`, observed by nobody, invariants checked after every step.
    #[must_use]
    pub fn new(profile: Profile) -> Self {
        Self {
            lane: Lane::new(profile),
            observer: NoObserver,
            check_invariants: true,
            outcomes: VecDeque::new(),
            texts: Texts::default(),
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
            texts: self.texts,
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
        self.command(now, Command::FaultNotice, |lane| lane.fault_notice(now, notice), |_| None)
    }

    /// Tells the lane at `now` that the runtime reset the device ([`Lane::device_reset`],
    /// L-24).
    pub fn device_reset(
        &mut self,
        now: Timestamp,
    ) -> Result<Result<(), DeviceResetError>, DriverError> {
        self.command(now, Command::DeviceReset, |lane| lane.device_reset(now), |_| None)
    }

    /// Activates a held run at `now` (`Lane::activate`).
    pub fn activate(
        &mut self,
        now: Timestamp,
        run: RunId,
    ) -> Result<Result<(), ControlError>, DriverError> {
        self.command(now, Command::Activate, |lane| lane.activate(now, run), |_| None)
    }

    /// Cancels an unlaunched run (`Lane::cancel`) or a waiting publication
    /// (`Lane::cancel_publication`) at `now`: `item` is its sequence number, `run` whether it
    /// names a run.
    pub fn cancel(
        &mut self,
        now: Timestamp,
        item: u64,
        run: bool,
    ) -> Result<Result<(), ControlError>, DriverError> {
        self.command(
            now,
            Command::Cancel,
            |lane| {
                if run {
                    lane.cancel(now, RunId(item))
                } else {
                    lane.cancel_publication(now, PublicationId(item))
                }
            },
            |_| None,
        )
    }

    /// Closes the lane at `now`.
    pub fn close(&mut self, now: Timestamp) -> Result<CloseReport, DriverError> {
        self.command(now, Command::Close, |lane| lane.close(now), |_| None)
    }

    /// Destroys the streams a closed lane's teardown left once more at `now`
    /// ([`Lane::retry_teardown`]): whether there were any.
    pub fn retry_teardown(&mut self, now: Timestamp) -> Result<bool, DriverError> {
        self.command(now, Command::RetryTeardown, |lane| lane.retry_teardown(now), |_| None)
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
        let accepted = accepted(&result);
        self.observer.observe(&Observation::Command { now, command, accepted });
        self.after_step(now)?;
        Ok(result)
    }

    /// The lane's next effect, reported as about to be executed.
    pub fn next_effect(&mut self, now: Timestamp) -> Option<Effect> {
        let effect = self.lane.poll_effect()?;
        self.observer.observe(&Observation::Effect { now, effect: &effect });
        Some(effect)
    }

    /// Feeds the answer to an effect; a rejected event is a driver bug. The answer's text is
    /// held for the item whose failure the event reports, and reaches the [`Report`] of every
    /// outcome that names that failure as its cause (those its poison takes down too).
    pub fn feed(&mut self, now: Timestamp, answer: Answer) -> Result<(), DriverError> {
        let Answer { event, text } = answer;
        // The item the failure belongs to: the one the event names; a failed stream create
        // or destroy names none and fails the run whose launch waits for the pair.
        let item = text.as_ref().and_then(|_| match failed_item(&event) {
            Some(item) => Some(item),
            None if stream_failure(&event) => self.lane.readying_pair().map(|run| run.0),
            None => None,
        });
        let result = self.lane.handle(now, event);
        self.observer.observe(&Observation::Event { now, event: &event, result: &result });
        result.map_err(DriverError::Rejected)?;
        if let (Some(item), Some(text)) = (item, text) {
            // A stream failure the lane failed no run with (a teardown's) explains no outcome.
            let still_waiting = stream_failure(&event)
                && matches!(self.lane.phase_of(RunId(item)), Some(RunPhase::Prepared { .. }));
            if !still_waiting {
                self.texts.hold(item, text);
            }
        }
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
    /// its outcome, or the rest wait for the caller to activate a held run (or the lane is
    /// closed or lost), else the lane is stuck.
    pub fn settled(&self) -> Result<Turn, DriverError> {
        if self.lane.is_idle()
            || self.lane.holds_a_run()
            || matches!(self.lane.state(), LaneState::Lost | LaneState::Closed { .. })
        {
            return Ok(Turn::Idle);
        }
        Err(DriverError::Stuck { pending: self.lane.pending_items(), state: self.lane.state() })
    }

    fn after_step(&mut self, now: Timestamp) -> Result<(), DriverError> {
        while let Some(outcome) = self.lane.poll_outcome() {
            self.observer.observe(&Observation::Outcome { now, outcome: &outcome });
            let held = self.texts.deliver(&outcome);
            let device_message =
                if cause_of(&outcome).and_then(Cause::stage) == Some(Stage::FaultNotice) {
                    // Taken down by a fault notice (L-19): the notice is the device's word on it
                    // (device, stream id, code), so the outcome names which notice it was.
                    self.lane.notice().map(|notice| notice.to_string())
                } else {
                    held
                };
            self.outcomes.push_back(Report { outcome, device_message });
        }
        // Every item has its outcome: no later outcome can name a held text.
        if self.lane.pending_items() == 0 {
            self.texts.clear();
        }
        if self.check_invariants {
            self.lane.check_invariants()?;
        }
        Ok(())
    }
}

/// The device's texts about failed calls, held by the item whose failure each reports until
/// the outcomes it explains are delivered (an outcome takes the text of the item its cause
/// names). The latest poison's text stays until the next poison or until every item has its
/// outcome: the items it takes down may be delivered after its origin.
#[derive(Debug, Default)]
struct Texts {
    /// By item, for items whose outcome is not delivered yet; the first text fed for an item
    /// is the one kept.
    held: BTreeMap<u64, String>,
    /// The latest poison's origin and its text, once the origin's own outcome is delivered.
    poison: Option<(u64, String)>,
}

impl Texts {
    /// Holds `text` for `item`.
    fn hold(&mut self, item: u64, text: String) {
        self.held.entry(item).or_insert(text);
    }

    /// `outcome` is delivered: the text of the item its cause names, if one is held. The
    /// item's own text leaves with it (into [`Texts::poison`] when its failure poisoned).
    fn deliver(&mut self, outcome: &Outcome) -> Option<String> {
        let item = outcome.seq();
        let own = self.held.remove(&item);
        let cause = outcome.cause_item()?;
        if cause == item {
            if cause_of(outcome).map(Cause::class) == Some(Class::Poison) {
                self.poison = own.clone().map(|text| (item, text));
            }
            return own;
        }
        // Taken down by a poison: its origin's text.
        self.held.get(&cause).cloned().or_else(|| {
            self.poison
                .as_ref()
                .filter(|(origin, _)| *origin == cause)
                .map(|(_, text)| text.clone())
        })
    }

    /// Forgets every text (every item has its outcome).
    fn clear(&mut self) {
        self.held.clear();
        self.poison = None;
    }
}

/// Whether `event` reports a failed stream create or destroy (it names no item).
const fn stream_failure(event: &Event) -> bool {
    matches!(event, Event::StreamCreateFailed { .. } | Event::StreamDestroyFailed { .. })
}

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
        // Only a decline that fails its run (nothing ahead of it) carries a text.
        | Event::LaunchDeclined { run, .. }
        | Event::CompletionFailed { run, .. }
        | Event::Completed { run, .. }
        | Event::StatusReadFailed { run, .. }
        | Event::FinaliseFailed { run, .. } => Some(run.0),
        Event::UploadFailed { publication, .. } => Some(publication.0),
        _ => None,
    }
}
