//! The [`Lane`]: admission, slots and leases, the run FIFO, verdicts, poison and recovery,
//! publication and close, driven by commands and backend events.
//!
//! One file per concern: [`items`] (the FIFO and its records), [`slots`] (slots and
//! leases), [`schedule`] (what the lane starts next, and close), [`apply`] (backend events
//! and every run-phase change), [`poison`] (poison and recovery), [`notice`] (fault notices),
//! [`values`] (the requests and reports it takes and gives), [`invariants`]. This file holds
//! the public surface: the type, its commands, polls and getters.

mod apply;
mod invariants;
mod items;
mod notice;
mod poison;
mod schedule;
mod slots;
#[cfg(test)]
mod tests;
mod values;
mod work;

pub use values::{
    CloseReport, Fingerprint, PoisonRecord, RunRequest, RunState, RunStatus, StreamsLeft,
    TEARDOWN_ATTEMPTS, TeardownFailure,
};

use smallvec::SmallVec;
use stream_pair::StreamPair;

use crate::effect::Effect;
use crate::error::{
    ControlError, DeviceResetError, EpochRefusal, EventError, InvariantViolation, LeaseError,
    PublishError, Refused, SubmitError,
};
use crate::event::Event;
use crate::ids::{CodeRef, ItemOrder, Lease, PublicationId, RunId, Timestamp};
use crate::notice::FaultNotice;
use crate::outcome::{Outcome, PublicationResult};
use crate::profile::{MAX_PENDING_PUBLICATIONS, MAX_SLOTS, Profile};
use crate::publication::PublicationPhase;
use crate::queue::Fifo;
use crate::run::{RunInput, RunPhase};
use crate::state::{LaneInput, LaneRefusal, LaneState, lane_step};

use apply::Applied;
use items::{Item, PublicationRecord, RunRecord};
use slots::SlotTable;
use work::{RunnerWork, WorkTable};

/// Inline capacity of the item FIFO: every slot's run plus the waiting publications, with
/// room for finished runs held behind an unfinished predecessor.
const ITEMS_INLINE: usize = MAX_SLOTS as usize * 2 + MAX_PENDING_PUBLICATIONS;
/// Inline capacity of the effect queue (one input emits at most a handful).
const EFFECTS_INLINE: usize = 16;
/// Inline capacity of the outcome queue.
const OUTCOMES_INLINE: usize = ITEMS_INLINE;

/// Where the last publication left the AICore stream: every run launched after it must run
/// on an AICore stream created after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PublicationMark {
    seq: u64,
    aicore_creations: u64,
}

/// The run lane: a pure, sans-IO state machine (SPEC §3).
///
/// # Method kinds
///
/// - **Commands** return at once with a typed result: [`submit`](Self::submit),
///   [`reserve`](Self::reserve), [`release`](Self::release), [`publish`](Self::publish),
///   [`close`](Self::close), and the run controls [`activate`](Self::activate),
///   [`cancel`](Self::cancel) and [`cancel_publication`](Self::cancel_publication).
/// - **Events** from the backend: [`handle`](Self::handle), and
///   [`handle_timeout`](Self::handle_timeout) when the clock passes
///   [`poll_deadline`](Self::poll_deadline).
/// - **Polls**, drained by the driver after every command or event, in this order:
///   [`poll_effect`](Self::poll_effect) until `None` (execute each, feeding its event back),
///   then [`poll_outcome`](Self::poll_outcome) until `None`, then
///   [`poll_deadline`](Self::poll_deadline).
/// - **Getters** and [`check_invariants`](Self::check_invariants).
///
/// Time is a [`Timestamp`] passed in; the lane reads no clock. `now` must not go backwards.
///
/// Every run-phase change goes through [`run::step`](crate::run::step), every publication
/// phase change through [`publication::step`](crate::publication::step), and every lane
/// state change through [`lane_step`](crate::state::lane_step): the rendered tables are
/// exactly what the lane does.
///
/// # Effect order
///
/// Effects come out in the order the lane decided them. Within one call the lane first
/// finishes what the input completes (a finalise, a status read), then starts, in this
/// order: an upload at the front, the next launch (stream create or destroy effects first
/// when the pair needs them), the next preparations (up to the profile's prepare window, in
/// submission order), then the next completion await. The launch comes before the
/// preparations because a launch can let the next queued run prepare in the same call.
///
/// # Runner work out (L-18 Overlap)
///
/// A `PrepareRun` or `FinaliseRun` taken by [`poll_effect`](Self::poll_effect) is runner
/// work out until its answer arrives (a driver with host workers answers it later, and
/// answers of different runs in any order). A poison does not drain the device while any is
/// out: recovery waits in `Quiesce`, accepts each such answer once without changing
/// anything else, and drains after the last.
///
/// # `FinaliseRun`
///
/// Every run that was asked to prepare gets exactly one `FinaliseRun`, except on a device
/// reset (poison abandons per-run resources with the device) and in one case: a run
/// answered `PrepareIncompatible` is back in the queue with nothing touched, so when close
/// cancels it there, it is settled `Cancelled` without a `FinaliseRun`.
#[derive(Clone, Debug)]
pub struct Lane {
    profile: Profile,
    state: LaneState,
    pair: StreamPair,
    items: SmallVec<[Item; ITEMS_INLINE]>,
    slots: SlotTable,
    next_seq: u64,
    effects: Fifo<Effect, EFFECTS_INLINE>,
    outcomes: Fifo<Outcome, OUTCOMES_INLINE>,
    poison: Option<PoisonRecord>,
    /// The most recent fault notice that made the device suspect (L-19).
    notice: Option<FaultNotice>,
    /// Whether the suspect state or recovery in progress (or the loss it ended in) comes
    /// from `notice` rather than from `poison`.
    notice_recovery: bool,
    last_publication: Option<PublicationMark>,
    accepted: u64,
    delivered: u64,
    /// Where the last delivered item stood in the lane's order (L-2).
    last_delivered: Option<ItemOrder>,
    /// The last epoch a request carried and the lane accepted (0 before any).
    last_epoch: u64,
    /// Whether the lane's runs carry their own epochs, fixed by the first run accepted.
    runner_epochs: Option<bool>,
    rejected_events: u64,
    /// Runner work handed out and not answered yet, by slot (L-18).
    runner_work: WorkTable,
    /// The first lane bug seen while stepping (a refused pair call or phase input the lane
    /// itself decided); [`check_invariants`](Self::check_invariants) reports it.
    bug: Option<InvariantViolation>,
}

impl Lane {
    /// A new, open lane with no streams yet (they are created at the first launch, S-1).
    #[must_use]
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            state: LaneState::Open,
            pair: StreamPair::new(profile.launch_depth()),
            items: SmallVec::new(),
            slots: SlotTable::new(profile.slots()),
            next_seq: 1,
            effects: Fifo::new(),
            outcomes: Fifo::new(),
            poison: None,
            notice: None,
            notice_recovery: false,
            last_publication: None,
            accepted: 0,
            delivered: 0,
            last_delivered: None,
            last_epoch: 0,
            runner_epochs: None,
            rejected_events: 0,
            runner_work: [None; MAX_SLOTS as usize],
            bug: None,
        }
    }

    // ----- commands -------------------------------------------------------------------

    /// Takes a slot now and returns its lease, for a later [`RunRequest::on_lease`]. The
    /// reservation counts against capacity until it is used or [released](Self::release).
    pub fn reserve(&mut self, _now: Timestamp) -> Result<Lease, SubmitError> {
        self.admit(LaneInput::Submit)?;
        self.slots
            .reserve(self.held_runs())
            .ok_or(SubmitError::Full { slots: self.profile.slots() })
    }

    /// Gives back a reservation that will not be used.
    pub fn release(&mut self, lease: Lease) -> Result<(), LeaseError> {
        if self.slots.release(lease) { Ok(()) } else { Err(LeaseError::NotReserved { lease }) }
    }

    /// Accepts a run (L-1): returns its id, or a typed refusal with nothing accepted.
    pub fn submit(&mut self, now: Timestamp, request: RunRequest) -> Result<RunId, SubmitError> {
        self.admit(LaneInput::Submit)?;
        if let Some(tag) = request.tag {
            if let Some(live) = self.live_runs().find(|r| r.tag == Some(tag)) {
                return Err(SubmitError::DuplicateRun { tag, run: live.id });
            }
        }
        self.check_epoch(request.epoch)?;
        let lease = match request.lease {
            Some(lease) if self.slots.is_reserved(lease) => lease,
            Some(lease) => return Err(SubmitError::StaleLease { lease }),
            None => self
                .slots
                .reserve(self.held_runs())
                .ok_or(SubmitError::Full { slots: self.profile.slots() })?,
        };
        let id = RunId(self.mint_seq());
        self.slots.assign(lease, id);
        self.runner_epochs = Some(request.epoch.is_some());
        if let Some(epoch) = request.epoch {
            self.last_epoch = epoch;
        }
        let at = self.place_of(request.key);
        self.items.insert(at, Item::Run(RunRecord::queued(id, &request, lease)));
        self.accepted += 1;
        self.progress(now);
        Ok(id)
    }

    /// Activates a run submitted held ([`RunRequest::held`]): it launches once its turn comes
    /// (it may already be prepared).
    ///
    /// # Errors
    ///
    /// [`ControlError::Unknown`] for a run not in the lane, [`ControlError::Finished`] for one
    /// with its verdict (a cancelled one), [`ControlError::NotHeld`] for one not held (never,
    /// or activated already). Nothing changes.
    pub fn activate(&mut self, now: Timestamp, run: RunId) -> Result<(), ControlError> {
        let idx = self.control_index(run)?;
        let r = self.run(idx);
        if let Some(verdict) = r.phase.verdict() {
            return Err(ControlError::Finished { item: run.0, outcome: verdict.name() });
        }
        if !r.held {
            return Err(ControlError::NotHeld { run });
        }
        self.run_mut(idx).held = false;
        self.progress(now);
        Ok(())
    }

    /// Cancels a run that has not launched: queued, it is done `Cancelled` at once; preparing,
    /// when its prepare answers; prepared (held, waiting for its turn, or its launch declined),
    /// it is finalised without copy-back (L-7) and then done `Cancelled`. Its outcome comes in
    /// its turn (L-2). Cancelling a cancelled run again changes nothing.
    ///
    /// # Errors
    ///
    /// [`ControlError::Launched`] for a run that reached the pair (it finishes, L-14),
    /// [`ControlError::Finished`] for one with another verdict, [`ControlError::Unknown`] for
    /// one not in the lane. Nothing changes.
    pub fn cancel(&mut self, now: Timestamp, run: RunId) -> Result<(), ControlError> {
        let idx = self.control_index(run)?;
        let r = self.run(idx);
        let phase = r.phase;
        match crate::run::step(phase, RunInput::Cancel) {
            // Already cancelled while its prepare is out.
            Ok((next, _)) if next == phase => Ok(()),
            Ok(_) => {
                self.decide(idx, RunInput::Cancel);
                self.progress(now);
                Ok(())
            }
            Err(_) => match phase.verdict() {
                Some(crate::outcome::Verdict::Cancelled) => Ok(()),
                Some(verdict) if r.launched_on.is_none() || phase.is_done() => {
                    Err(ControlError::Finished { item: run.0, outcome: verdict.name() })
                }
                _ => Err(ControlError::Launched { run }),
            },
        }
    }

    /// Cancels a publication that waits for its turn: it is done `Cancelled` and uploads
    /// nothing (as at close). Cancelling it again changes nothing.
    ///
    /// # Errors
    ///
    /// [`ControlError::Uploading`] once its upload started, [`ControlError::Unknown`] for one
    /// not in the lane. Nothing changes.
    pub fn cancel_publication(
        &mut self,
        now: Timestamp,
        publication: PublicationId,
    ) -> Result<(), ControlError> {
        let unknown = ControlError::Unknown { item: publication.0 };
        let idx = self
            .items
            .iter()
            .position(|i| matches!(i, Item::Publication(p) if p.id == publication))
            .ok_or(unknown)?;
        match self.publication_phase(publication) {
            Some(PublicationPhase::Waiting) => {
                let _ = self.step_publication(idx, crate::publication::PublicationInput::Cancel);
                self.progress(now);
                Ok(())
            }
            Some(PublicationPhase::Done { result: PublicationResult::Cancelled }) => Ok(()),
            // Taken down with the device before its upload.
            Some(PublicationPhase::Done { result: PublicationResult::Poisoned { .. } }) => {
                Err(ControlError::Finished { item: publication.0, outcome: "Poisoned" })
            }
            Some(PublicationPhase::Done { result: PublicationResult::Failed { cause } })
                if cause.stage() == Some(status_latch::Stage::FaultNotice) =>
            {
                Err(ControlError::Finished { item: publication.0, outcome: "Failed" })
            }
            Some(PublicationPhase::Uploading | PublicationPhase::Done { .. }) | None => {
                Err(ControlError::Uploading { publication })
            }
        }
    }

    /// Accepts a publication of new AICore code (L-12): it waits until every earlier item has
    /// its outcome, uploads, and leaves the AICore stream stale, so the next launch runs on a
    /// fresh one. Runs submitted after it wait behind it.
    pub fn publish(
        &mut self,
        now: Timestamp,
        code: CodeRef,
    ) -> Result<PublicationId, PublishError> {
        self.admit(LaneInput::Publish)?;
        if self.live_publications() >= MAX_PENDING_PUBLICATIONS {
            return Err(PublishError::Full);
        }
        let id = PublicationId(self.mint_seq());
        self.items.push(Item::Publication(PublicationRecord {
            id,
            code,
            phase: PublicationPhase::Waiting,
        }));
        self.accepted += 1;
        self.progress(now);
        Ok(id)
    }

    /// Closes the lane (L-15): stops admission, lets launched runs finish, cancels prepared
    /// and queued runs and waiting publications, and destroys the streams once idle. Closing
    /// twice is harmless. The report carries the most recent poison, if any.
    pub fn close(&mut self, now: Timestamp) -> CloseReport {
        // Every state accepts a close (a repeated close changes nothing); an open lane's
        // action cancels what has not launched.
        let accepted = self.step_state(LaneInput::Close).is_ok();
        debug_assert!(accepted, "lane_step refused a close");
        self.progress(now);
        self.close_report()
    }

    /// Destroys the streams a closed lane's teardown left once more (S-7: a failed destroy is
    /// retried): the next opportunity after the lane settled, for a driver to take (the lane
    /// service does at its last drop). Returns whether there was one: the lane is then
    /// `ReleasingStreams` until the destroys answer, and `Closed` again after, with
    /// [`streams_left`](Self::streams_left) what still survives. Any other lane (not
    /// `Closed`, or nothing left) changes nothing.
    pub fn retry_teardown(&mut self, now: Timestamp) -> bool {
        // `ReleasingStreams { round: 0, rounds: 1, .. }`: one more round, settled once
        // answered; refused unless closed with streams left.
        if self.step_state(LaneInput::RetryTeardown).is_err() {
            return false;
        }
        self.progress(now);
        true
    }

    /// The runtime reports that it reset the device (L-24, its own recovery): the lane, which
    /// has made no device call since it handed the device over, forgets every handle (an
    /// `AdoptReset` effect: the backend drops them and every thread's binding, with no
    /// device call) and reopens; the next launch creates a fresh pair.
    ///
    /// # Errors
    ///
    /// [`DeviceResetError::NotAwaited`] unless the lane awaits the runtime's reset (it is
    /// [`LaneState::Unusable`]); nothing changes.
    pub fn device_reset(&mut self, now: Timestamp) -> Result<(), DeviceResetError> {
        let state = self.state;
        self.step_state(LaneInput::DeviceReset)
            .map_err(|_| DeviceResetError::NotAwaited { state })?;
        self.progress(now);
        Ok(())
    }

    // ----- events ---------------------------------------------------------------------

    /// Feeds one backend event. A rejected event changes nothing (it answers nothing the lane
    /// asked for: a stale lease, a duplicate, an unknown run, a wrong order).
    ///
    /// The answer to runner work that is out for a run a poison abandoned is accepted and
    /// changes nothing but the record of work out; the last such answer lets recovery drain.
    pub fn handle(&mut self, now: Timestamp, event: Event) -> Result<(), EventError> {
        // Taken before the event applies, so a poison it causes sees this work answered.
        let answered = self.take_answered(&event);
        let error = match self.apply_event(&event) {
            Ok(Applied::Applied) => {
                self.progress(now);
                return Ok(());
            }
            // The answered work's run is not live: a poison abandoned it while the work was
            // out. Nothing changed; the answer is accepted.
            Ok(Applied::NotLive(_)) if answered.is_some() => {
                // L-26: its outcome was held for this answer.
                self.deliver();
                self.quiesce_if_done();
                return Ok(());
            }
            Ok(Applied::NotLive(run)) => EventError::UnknownRun { run, event: event.name() },
            Err(error) => error,
        };
        if let Some((slot, work)) = answered {
            self.runner_work[slot] = Some(work);
        }
        self.rejected_events += 1;
        Err(error)
    }

    /// Tells the lane the clock reached `now`: a run whose completion deadline passed poisons
    /// the device (its work may still be running). Spurious calls are harmless.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        let expired = self.items.iter().position(|item| {
            matches!(item, Item::Run(r) if matches!(r.phase,
                RunPhase::Awaiting { deadline, .. } if deadline <= now))
        });
        // Its action poisons with the host wait timeout.
        if let Some(idx) = expired {
            if self.decide(idx, RunInput::DeadlineExpired) {
                self.progress(now);
            }
        }
    }

    // ----- polls ----------------------------------------------------------------------

    /// The next thing the backend must do, in decision order. A `PrepareRun` or
    /// `FinaliseRun` taken here is runner work out until its answer arrives (L-18).
    #[must_use]
    pub fn poll_effect(&mut self) -> Option<Effect> {
        // Recorded from the queued effect in place, so the effect itself is moved out once
        // (this is the hot path of every run).
        let Self { effects, runner_work, bug, .. } = self;
        effects.take_inspected(|effect| {
            if let Some(work) = RunnerWork::of_effect(effect) {
                work::hand_out(runner_work, bug, work);
            }
        })
    }

    /// The next outcome, in the lane's order (L-2: submission order, but for a run an earlier
    /// ordering key placed ahead): one per accepted run or publication.
    #[must_use]
    pub fn poll_outcome(&mut self) -> Option<Outcome> {
        self.outcomes.take()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called if nothing else happens
    /// first: the awaited run's completion deadline.
    #[must_use]
    pub fn poll_deadline(&self) -> Option<Timestamp> {
        self.items
            .iter()
            .filter_map(|item| item.as_run())
            .filter_map(|r| match r.phase {
                RunPhase::Awaiting { deadline, .. } => Some(deadline),
                _ => None,
            })
            .min()
    }

    // ----- getters --------------------------------------------------------------------

    /// The profile.
    #[must_use]
    pub const fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The lane's state.
    #[must_use]
    pub const fn state(&self) -> LaneState {
        self.state
    }

    /// The most recent poison, if any.
    #[must_use]
    pub const fn poison(&self) -> Option<PoisonRecord> {
        self.poison
    }

    /// The stream pair (read-only: for tests, traces and the simulator's checks).
    #[must_use]
    pub const fn pair(&self) -> &StreamPair {
        &self.pair
    }

    /// The phase of an accepted run whose outcome has not been delivered yet.
    #[must_use]
    pub fn phase_of(&self, run: RunId) -> Option<RunPhase> {
        self.items.iter().filter_map(Item::as_run).find(|r| r.id == run).map(|r| r.phase)
    }

    /// Where an accepted run whose outcome has not been delivered yet stands, with its hold,
    /// its declined launches and its ordering key; `None` for any other id.
    #[must_use]
    pub fn run_status(&self, run: RunId) -> Option<RunStatus> {
        let r = self.items.iter().filter_map(Item::as_run).find(|r| r.id == run)?;
        let state = match r.phase {
            RunPhase::Queued { .. } => RunState::Queued,
            RunPhase::Preparing { .. } => RunState::Preparing,
            RunPhase::Prepared { .. } => RunState::Prepared,
            RunPhase::Finalising { .. } if r.launched_on.is_none() => RunState::Prepared,
            RunPhase::Done { .. } => RunState::Done,
            RunPhase::Launching
            | RunPhase::Launched { .. }
            | RunPhase::Awaiting { .. }
            | RunPhase::Attributing { .. }
            | RunPhase::ReadingStatus { .. }
            | RunPhase::Finalising { .. } => RunState::Launched,
        };
        Some(RunStatus { state, held: r.held, declines: r.declines, key: r.key })
    }

    /// The run whose launch waits for the pair's stream results (a create, or a replacement
    /// destroy): the run a failed stream create or destroy on the launch path fails.
    #[must_use]
    pub fn readying_pair(&self) -> Option<RunId> {
        self.items.iter().find_map(|item| match item {
            Item::Run(r) if r.phase == (RunPhase::Prepared { readying_pair: true }) => Some(r.id),
            _ => None,
        })
    }

    /// The phase of an accepted publication whose outcome has not been delivered yet.
    #[must_use]
    pub fn publication_phase(&self, publication: PublicationId) -> Option<PublicationPhase> {
        self.items.iter().find_map(|item| match item {
            Item::Publication(p) if p.id == publication => Some(p.phase),
            _ => None,
        })
    }

    /// Whether every accepted item has its outcome and nothing is in flight.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.items.is_empty()
    }

    /// Whether a run submitted held waits for its activation
    /// ([`activate`](Self::activate)): the items from it on wait for the caller, not for the
    /// backend.
    #[must_use]
    pub fn holds_a_run(&self) -> bool {
        self.live_runs().any(|r| r.held && r.phase.verdict().is_none())
    }

    /// How many accepted items still wait for their outcome.
    #[must_use]
    pub fn pending_items(&self) -> usize {
        self.items.len()
    }

    /// How many events were rejected so far (a healthy backend never causes one).
    #[must_use]
    pub const fn rejected_events(&self) -> u64 {
        self.rejected_events
    }

    /// What [`close`](Self::close) would report now, without closing.
    #[must_use]
    pub const fn close_report(&self) -> CloseReport {
        CloseReport {
            state: self.state,
            poison: self.poison,
            notice: self.notice,
            device_lost: self.device_lost(),
            streams_left: match self.state {
                LaneState::Closed { left, .. } => left,
                _ => StreamsLeft::NONE,
            },
        }
    }

    /// Whether a recovery failed every attempt: the device could not be proven usable and
    /// must be reset outside the lane. Stays true for the lane's life.
    #[must_use]
    pub const fn device_lost(&self) -> bool {
        matches!(self.state, LaneState::Lost | LaneState::Closed { device_lost: true, .. })
    }

    /// A canonical view of the lane's whole state, for model checkers that deduplicate
    /// states: two lanes with equal fingerprints answer every future command, event and
    /// poll alike.
    ///
    /// It is the `Debug` text of every field (each prints every value it holds) except the
    /// count of rejected events: a rejected event changes nothing else, so counting them
    /// would make every refused answer a new state. The effect and outcome queues contribute
    /// only their untaken items, so taken items still in storage do not split a state.
    #[must_use]
    pub fn fingerprint(&self) -> Fingerprint {
        use core::fmt::Write as _;
        let mut text = String::with_capacity(1024);
        // Destructured so a new field cannot be left out silently.
        let Self {
            profile,
            state,
            pair,
            items,
            slots,
            next_seq,
            effects,
            outcomes,
            poison,
            notice,
            notice_recovery,
            last_publication,
            accepted,
            delivered,
            last_delivered,
            last_epoch,
            runner_epochs,
            rejected_events: _,
            runner_work,
            bug,
        } = self;
        // Writing to a String cannot fail.
        let _ = write!(
            text,
            "{profile:?}|{state:?}|{pair:?}|{items:?}|{slots:?}|{next_seq}|{:?}|{:?}|{poison:?}|\
             {notice:?}|{notice_recovery}|{last_publication:?}|\
             {accepted}|{delivered}|{last_delivered:?}|{last_epoch}|{runner_epochs:?}|\
             {runner_work:?}|{bug:?}",
            effects.as_slice(),
            outcomes.as_slice(),
        );
        Fingerprint(text)
    }

    /// The streams a close's teardown left alive, each with its last destroy's code: empty
    /// until the lane is `Closed`, then final until a [`retry_teardown`](Self::retry_teardown).
    #[must_use]
    pub const fn streams_left(&self) -> StreamsLeft {
        self.close_report().streams_left
    }
}

// ----- the lane state -------------------------------------------------------------------

impl Lane {
    /// Steps the lane state through [`lane_step`] (the one place it changes), performs the
    /// transition's action, and returns the new state; a refused input changes nothing.
    fn step_state(&mut self, input: LaneInput) -> Result<LaneState, LaneRefusal> {
        let (next, action) = lane_step(
            self.state,
            input,
            self.profile.recovery_attempts(),
            self.profile.recovery(),
        )?;
        self.state = next;
        self.perform_lane(action);
        Ok(next)
    }

    /// Admission for a command (`submit`, `reserve`, `publish`): the lane-level refusal as
    /// the one [`Refused`] both command errors convert from.
    fn admit(&mut self, input: LaneInput) -> Result<(), Refused> {
        let refusal = match self.step_state(input) {
            Ok(_) => return Ok(()),
            Err(refusal) => refusal,
        };
        let notice = self.notice.filter(|_| self.notice_recovery);
        match (refusal, notice, self.poison) {
            (LaneRefusal::Unusable, Some(notice), _) => Err(Refused::UnusableAfterNotice(notice)),
            (LaneRefusal::Unusable, None, Some(poison)) => Err(Refused::Unusable(poison)),
            (LaneRefusal::Suspect | LaneRefusal::Recovering, Some(notice), _) => {
                Err(Refused::Suspect(notice))
            }
            (LaneRefusal::Lost, Some(notice), _) => Err(Refused::LostAfterNotice(notice)),
            (LaneRefusal::Recovering, None, Some(poison)) => Err(Refused::Poisoned(poison)),
            (LaneRefusal::Lost, None, Some(poison)) => Err(Refused::Lost(poison)),
            // Suspect, recovering or lost without a record cannot happen (the record is
            // written before the state steps, and `check_invariants` reports it); the
            // lane takes no work either way.
            (
                LaneRefusal::Suspect
                | LaneRefusal::Recovering
                | LaneRefusal::Lost
                | LaneRefusal::Unusable,
                None,
                None,
            )
            | (LaneRefusal::Suspect, None, Some(_))
            | (LaneRefusal::Closed | LaneRefusal::NotExpected, _, _) => Err(Refused::Closed),
        }
    }

    /// The epoch rule of a request (L-8: a record counts only with its run's epoch): a
    /// runtime's epoch is non-zero and above the last one accepted, and a lane's runs either
    /// all carry one or none does.
    fn check_epoch(&self, epoch: Option<u64>) -> Result<(), SubmitError> {
        let refused = |refusal| SubmitError::Epoch { epoch: epoch.unwrap_or(0), refusal };
        if self.runner_epochs.is_some_and(|carried| carried != epoch.is_some()) {
            return Err(refused(EpochRefusal::Mixed));
        }
        match epoch {
            Some(0) => Err(refused(EpochRefusal::Zero)),
            Some(e) if e <= self.last_epoch => {
                Err(refused(EpochRefusal::NotAbove { last: self.last_epoch }))
            }
            _ => Ok(()),
        }
    }

    /// Where a new run with `key` goes in the FIFO (L-2 as amended): at the end, or, keyed,
    /// ahead of the unlaunched keyed runs with a greater key at the end of it. It never passes
    /// a run whose launch began (readying the pair included), a finished run, a run without a
    /// key or a publication.
    fn place_of(&self, key: Option<crate::ids::OrderKey>) -> usize {
        let mut at = self.items.len();
        let Some(key) = key else {
            return at;
        };
        while let Some(Item::Run(r)) = at.checked_sub(1).map(|i| &self.items[i]) {
            let unlaunched = matches!(
                r.phase,
                RunPhase::Queued { .. }
                    | RunPhase::Preparing { .. }
                    | RunPhase::Prepared { readying_pair: false }
            );
            if !(unlaunched && r.key.is_some_and(|k| k > key)) {
                break;
            }
            at -= 1;
        }
        at
    }

    /// The index of `run` for a control: refused `Unknown` unless it is in the FIFO.
    fn control_index(&self, run: RunId) -> Result<usize, ControlError> {
        self.items
            .iter()
            .position(|i| matches!(i, Item::Run(r) if r.id == run))
            .ok_or(ControlError::Unknown { item: run.0 })
    }

    /// Records the first lane bug seen; `check_invariants` reports it.
    fn record_bug(&mut self, violation: InvariantViolation) {
        self.bug.get_or_insert(violation);
    }

    #[inline]
    fn emit(&mut self, effect: Effect) {
        self.effects.push(effect);
    }
}
