//! The [`Lane`]: admission, slots and leases, the run FIFO, verdicts, poison and recovery,
//! publication and close, driven by commands and backend events.

use core::num::NonZeroU64;

use smallvec::SmallVec;
use status_latch::{Class, Failure, LaunchProgress, Stage};
use stream_pair::{Owner, Readiness, Retirement, Role, StreamPair};

use crate::effect::Effect;
use crate::error::{EventError, InvariantViolation, LeaseError, PublishError, SubmitError};
use crate::event::{Event, FinaliseFailure, LaunchStep};
use crate::ids::{
    CodeRef, DeviceTiming, Generation, Lease, PublicationId, RunId, SlotId, Tag, Timestamp,
};
use crate::outcome::{Cause, Outcome, PublicationOutcome, PublicationResult, RunOutcome, Verdict};
use crate::profile::{MAX_PENDING_PUBLICATIONS, MAX_SLOTS, Profile};
use crate::queue::Fifo;
use crate::run::{RunInput, RunPhase, step};
use crate::state::{LaneInput, LaneRefusal, LaneState, RecoveryStep, lane_step};

/// Inline capacity of the item FIFO: every slot's run plus the waiting publications, with
/// room for finished runs held behind an unfinished predecessor.
const ITEMS_INLINE: usize = MAX_SLOTS as usize * 2 + MAX_PENDING_PUBLICATIONS;
/// Inline capacity of the effect queue (one input emits at most a handful).
const EFFECTS_INLINE: usize = 16;
/// Inline capacity of the outcome queue.
const OUTCOMES_INLINE: usize = ITEMS_INLINE;

/// What a caller asks the lane to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RunRequest {
    /// The caller's tag (the runtime's dispatch id); two live runs may not share one.
    pub tag: Option<Tag>,
    /// Whether the run collects diagnostics: it then runs alone, at depth one (L-3).
    pub diagnostics: bool,
    /// A lease from [`Lane::reserve`]; `None` lets the lane take a slot now.
    pub lease: Option<Lease>,
}

impl RunRequest {
    /// A plain request: no tag, no diagnostics, the lane picks the slot.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            tag: None,
            diagnostics: false,
            lease: None,
        }
    }

    /// This request with a caller tag.
    #[must_use]
    pub const fn tagged(mut self, tag: u64) -> Self {
        self.tag = Some(Tag(tag));
        self
    }

    /// This request with diagnostics enabled.
    #[must_use]
    pub const fn with_diagnostics(mut self) -> Self {
        self.diagnostics = true;
        self
    }

    /// This request on a lease taken earlier with [`Lane::reserve`].
    #[must_use]
    pub const fn on_lease(mut self, lease: Lease) -> Self {
        self.lease = Some(lease);
        self
    }
}

/// The most recent device poison: which run caused it and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoisonRecord {
    /// The run whose failure poisoned the device.
    pub origin: RunId,
    /// Its cause.
    pub cause: Cause,
}

/// What `close` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CloseReport {
    /// The lane's state right after the call (`Closed` when nothing was left to finish).
    pub state: LaneState,
    /// The most recent poison in this lane's life, if there was one (L-15).
    pub poison: Option<PoisonRecord>,
    /// Whether recovery failed every attempt (the device must be reset outside the lane).
    /// A close during a recovery reports `false` here until that recovery ends; check
    /// [`Lane::device_lost`] once the lane is `Closed`.
    pub device_lost: bool,
}

/// A stream teardown failure seen while closing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TeardownFailure {
    /// Which stream survived.
    pub role: Role,
    /// The destroy's code.
    pub code: status_latch::AclCode,
}

#[derive(Clone, Copy, Debug)]
struct RunRecord {
    id: RunId,
    tag: Option<Tag>,
    diagnostics: bool,
    lease: Lease,
    phase: RunPhase,
    /// Prepared incompatible once: prepare again only after every earlier run is done.
    incompatible: bool,
    /// Close arrived while the prepare was out.
    cancel: bool,
    /// The verdict decided so far (final once the phase is `Done`).
    verdict: Option<Verdict>,
    timing: Option<DeviceTiming>,
    deadline: Option<Timestamp>,
    /// AICore stream creations counted by the pair when this run's launch was submitted to
    /// it; `None` if it never reached the pair.
    launched_on: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PublicationPhase {
    Waiting,
    Uploading,
    Done,
}

#[derive(Clone, Copy, Debug)]
struct PublicationRecord {
    id: PublicationId,
    code: CodeRef,
    phase: PublicationPhase,
    result: Option<PublicationResult>,
}

#[derive(Clone, Copy, Debug)]
enum Item {
    Run(RunRecord),
    Publication(PublicationRecord),
}

impl Item {
    const fn seq(&self) -> u64 {
        match self {
            Self::Run(r) => r.id.0,
            Self::Publication(p) => p.id.0,
        }
    }

    const fn is_done(&self) -> bool {
        match self {
            Self::Run(r) => r.phase.is_done(),
            Self::Publication(p) => matches!(p.phase, PublicationPhase::Done),
        }
    }

    const fn as_run(&self) -> Option<&RunRecord> {
        match self {
            Self::Run(r) => Some(r),
            Self::Publication(_) => None,
        }
    }

    const fn is_live_publication(&self) -> bool {
        matches!(self, Self::Publication(p) if !matches!(p.phase, PublicationPhase::Done))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Free,
    Reserved(Generation),
    Leased { generation: Generation, run: RunId },
}

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
///   [`close`](Self::close).
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
/// # Effect order
///
/// Effects come out in the order the lane decided them. Within one call the lane first
/// finishes what the input completes (a finalise, a status read), then starts, in item
/// order: an upload at the front, the next preparation, the next launch (stream create or
/// destroy effects first when the pair needs them), then the next completion await.
#[derive(Clone, Debug)]
pub struct Lane {
    profile: Profile,
    state: LaneState,
    pair: StreamPair,
    items: SmallVec<[Item; ITEMS_INLINE]>,
    slots: [SlotState; MAX_SLOTS as usize],
    next_seq: u64,
    generations_minted: u64,
    effects: Fifo<Effect, EFFECTS_INLINE>,
    outcomes: Fifo<Outcome, OUTCOMES_INLINE>,
    poison: Option<PoisonRecord>,
    launch_waiter: Option<RunId>,
    last_publication: Option<PublicationMark>,
    teardown_started: bool,
    teardown_failure: Option<TeardownFailure>,
    device_lost: bool,
    accepted: u64,
    delivered: u64,
    last_delivered_seq: u64,
    rejected_events: u64,
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
            slots: [SlotState::Free; MAX_SLOTS as usize],
            next_seq: 1,
            generations_minted: 0,
            effects: Fifo::new(),
            outcomes: Fifo::new(),
            poison: None,
            launch_waiter: None,
            last_publication: None,
            teardown_started: false,
            teardown_failure: None,
            device_lost: false,
            accepted: 0,
            delivered: 0,
            last_delivered_seq: 0,
            rejected_events: 0,
        }
    }

    // ----- commands -------------------------------------------------------------------

    /// Takes a slot now and returns its lease, for a later [`RunRequest::on_lease`]. The
    /// reservation counts against capacity until it is used or [released](Self::release).
    pub fn reserve(&mut self, _now: Timestamp) -> Result<Lease, SubmitError> {
        self.admission(LaneInput::Submit)?;
        if self.held_runs() + self.reserved_slots() >= usize::from(self.profile.slots()) {
            return Err(SubmitError::Full {
                slots: self.profile.slots(),
            });
        }
        let (slot, generation) = self.take_slot().ok_or(SubmitError::Full {
            slots: self.profile.slots(),
        })?;
        self.slots[usize::from(slot.0)] = SlotState::Reserved(generation);
        Ok(Lease { slot, generation })
    }

    /// Gives back a reservation that will not be used.
    pub fn release(&mut self, lease: Lease) -> Result<(), LeaseError> {
        match self.slot_state(lease.slot) {
            Some(SlotState::Reserved(generation)) if generation == lease.generation => {
                self.slots[usize::from(lease.slot.0)] = SlotState::Free;
                Ok(())
            }
            _ => Err(LeaseError::NotReserved { lease }),
        }
    }

    /// Accepts a run (L-1): returns its id, or a typed refusal with nothing accepted.
    pub fn submit(&mut self, now: Timestamp, request: RunRequest) -> Result<RunId, SubmitError> {
        self.admission(LaneInput::Submit)?;
        if let Some(tag) = request.tag {
            if let Some(live) = self.live_runs().find(|r| r.tag == Some(tag)) {
                return Err(SubmitError::DuplicateRun { tag, run: live.id });
            }
        }
        let lease = match request.lease {
            Some(lease) => match self.slot_state(lease.slot) {
                Some(SlotState::Reserved(generation)) if generation == lease.generation => lease,
                _ => return Err(SubmitError::StaleLease { lease }),
            },
            None => {
                let full = SubmitError::Full {
                    slots: self.profile.slots(),
                };
                if self.held_runs() + self.reserved_slots() >= usize::from(self.profile.slots()) {
                    return Err(full);
                }
                let (slot, generation) = self.take_slot().ok_or(full)?;
                Lease { slot, generation }
            }
        };
        let id = RunId(self.mint_seq());
        self.slots[usize::from(lease.slot.0)] = SlotState::Leased {
            generation: lease.generation,
            run: id,
        };
        self.items.push(Item::Run(RunRecord {
            id,
            tag: request.tag,
            diagnostics: request.diagnostics,
            lease,
            phase: RunPhase::Queued,
            incompatible: false,
            cancel: false,
            verdict: None,
            timing: None,
            deadline: None,
            launched_on: None,
        }));
        self.accepted += 1;
        self.progress(now);
        Ok(id)
    }

    /// Accepts a publication of new AICore code (L-12): it waits until every earlier item has
    /// its outcome, uploads, and leaves the AICore stream stale, so the next launch runs on a
    /// fresh one. Runs submitted after it wait behind it.
    pub fn publish(
        &mut self,
        now: Timestamp,
        code: CodeRef,
    ) -> Result<PublicationId, PublishError> {
        match lane_step(
            self.state,
            LaneInput::Publish,
            self.profile.recovery_attempts(),
        ) {
            Ok(_) => {}
            Err(LaneRefusal::Recovering) => {
                return Err(PublishError::Poisoned {
                    origin: self.poison.map_or(RunId(0), |p| p.origin),
                });
            }
            Err(LaneRefusal::Lost) => {
                return Err(PublishError::Lost {
                    origin: self.poison.map_or(RunId(0), |p| p.origin),
                });
            }
            Err(LaneRefusal::Closed | LaneRefusal::NotExpected) => {
                return Err(PublishError::Closed);
            }
        }
        if self
            .items
            .iter()
            .filter(|i| i.is_live_publication())
            .count()
            >= MAX_PENDING_PUBLICATIONS
        {
            return Err(PublishError::Full);
        }
        let id = PublicationId(self.mint_seq());
        self.items.push(Item::Publication(PublicationRecord {
            id,
            code,
            phase: PublicationPhase::Waiting,
            result: None,
        }));
        self.accepted += 1;
        self.progress(now);
        Ok(id)
    }

    /// Closes the lane (L-15): stops admission, lets launched runs finish, cancels prepared
    /// and queued runs and waiting publications, and destroys the streams once idle. Closing
    /// twice is harmless. The report carries the most recent poison, if any.
    pub fn close(&mut self, now: Timestamp) -> CloseReport {
        let was_open = self.state == LaneState::Open;
        if let Ok(next) = lane_step(
            self.state,
            LaneInput::Close,
            self.profile.recovery_attempts(),
        ) {
            self.state = next;
        }
        if was_open {
            self.cancel_unlaunched();
        }
        self.progress(now);
        CloseReport {
            state: self.state,
            poison: self.poison,
            device_lost: self.device_lost,
        }
    }

    // ----- events ---------------------------------------------------------------------

    /// Feeds one backend event. A rejected event changes nothing (it answers nothing the lane
    /// asked for: a stale lease, a duplicate, an unknown run, a wrong order).
    pub fn handle(&mut self, now: Timestamp, event: Event) -> Result<(), EventError> {
        let result = self.apply_event(now, event);
        match result {
            Ok(()) => self.progress(now),
            Err(_) => self.rejected_events += 1,
        }
        result
    }

    /// Tells the lane the clock reached `now`: a run whose completion deadline passed poisons
    /// the device (its work may still be running). Spurious calls are harmless.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        let expired = self.items.iter().position(|item| {
            matches!(item, Item::Run(r) if r.phase == RunPhase::Awaiting
                && r.deadline.is_some_and(|d| d <= now))
        });
        if let Some(idx) = expired {
            if self
                .advance(idx, RunInput::DeadlineExpired, "deadline")
                .is_ok()
            {
                self.poison_from(idx, Cause::of(Failure::HostWaitTimeout));
                self.progress(now);
            }
        }
    }

    // ----- polls ----------------------------------------------------------------------

    /// The next thing the backend must do, in decision order.
    #[must_use]
    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.effects.take()
    }

    /// The next outcome, in submission order: one per accepted run or publication.
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
            .filter(|r| r.phase == RunPhase::Awaiting)
            .filter_map(|r| r.deadline)
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
        self.items
            .iter()
            .filter_map(Item::as_run)
            .find(|r| r.id == run)
            .map(|r| r.phase)
    }

    /// Whether every accepted item has its outcome and nothing is in flight.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.items.is_empty()
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

    /// Whether a recovery failed every attempt: the device could not be proven usable and
    /// must be reset outside the lane. Stays true for the lane's life.
    #[must_use]
    pub const fn device_lost(&self) -> bool {
        self.device_lost
    }

    /// The first stream teardown failure seen while closing, if any.
    #[must_use]
    pub const fn teardown_failure(&self) -> Option<TeardownFailure> {
        self.teardown_failure
    }
}

// ----- admission and slots ----------------------------------------------------------------

impl Lane {
    fn admission(&self, input: LaneInput) -> Result<(), SubmitError> {
        match lane_step(self.state, input, self.profile.recovery_attempts()) {
            Ok(_) => Ok(()),
            Err(LaneRefusal::Recovering) => Err(match self.poison {
                Some(p) => SubmitError::Poisoned {
                    origin: p.origin,
                    cause: p.cause,
                },
                None => SubmitError::Closed,
            }),
            Err(LaneRefusal::Lost) => Err(match self.poison {
                Some(p) => SubmitError::Lost {
                    origin: p.origin,
                    cause: p.cause,
                },
                None => SubmitError::Closed,
            }),
            Err(LaneRefusal::Closed | LaneRefusal::NotExpected) => Err(SubmitError::Closed),
        }
    }

    fn mint_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// The lowest free slot, with a freshly minted generation.
    fn take_slot(&mut self) -> Option<(SlotId, Generation)> {
        let slots = usize::from(self.profile.slots());
        let idx = self.slots[..slots]
            .iter()
            .position(|s| *s == SlotState::Free)?;
        self.generations_minted += 1;
        let generation = Generation(NonZeroU64::new(self.generations_minted)?);
        let slot = SlotId(u8::try_from(idx).ok()?);
        Some((slot, generation))
    }

    fn slot_state(&self, slot: SlotId) -> Option<SlotState> {
        if slot.0 < self.profile.slots() {
            self.slots.get(usize::from(slot.0)).copied()
        } else {
            None
        }
    }

    /// Runs the lane holds: every accepted run whose outcome is not delivered yet, including
    /// finished runs held behind an unfinished predecessor (so the FIFO stays bounded).
    fn held_runs(&self) -> usize {
        self.items
            .iter()
            .filter(|i| matches!(i, Item::Run(_)))
            .count()
    }

    fn reserved_slots(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s, SlotState::Reserved(_)))
            .count()
    }

    fn live_runs(&self) -> impl Iterator<Item = &RunRecord> {
        self.items
            .iter()
            .filter_map(Item::as_run)
            .filter(|r| !r.phase.is_done())
    }

    #[inline]
    fn run(&self, idx: usize) -> &RunRecord {
        match &self.items[idx] {
            Item::Run(r) => r,
            // Callers only pass indices they found as runs.
            Item::Publication(_) => unreachable!("item {idx} is a publication"),
        }
    }

    #[inline]
    fn run_mut(&mut self, idx: usize) -> &mut RunRecord {
        match &mut self.items[idx] {
            Item::Run(r) => r,
            Item::Publication(_) => unreachable!("item {idx} is a publication"),
        }
    }

    /// Finds the live run an event names and checks its lease.
    #[inline]
    fn live_run(&self, run: RunId, lease: Lease, event: &'static str) -> Result<usize, EventError> {
        let (idx, live) = self
            .items
            .iter()
            .enumerate()
            .find_map(|(idx, item)| match item {
                Item::Run(r) if r.id == run && !r.phase.is_done() => Some((idx, r.lease)),
                _ => None,
            })
            .ok_or(EventError::UnknownRun { run, event })?;
        if live != lease {
            return Err(EventError::StaleLease {
                run,
                event,
                got: lease,
                live,
            });
        }
        Ok(idx)
    }

    /// Applies one phase-machine input to a run and returns the run; refused inputs change
    /// nothing.
    #[inline]
    fn advance(
        &mut self,
        idx: usize,
        input: RunInput,
        event: &'static str,
    ) -> Result<&mut RunRecord, EventError> {
        let r = self.run_mut(idx);
        match step(r.phase, input) {
            Ok(next) => {
                r.phase = next;
                Ok(r)
            }
            Err(refusal) => Err(EventError::UnexpectedForRun {
                run: r.id,
                event,
                phase: r.phase,
                refusal,
            }),
        }
    }

    /// Checks an input is allowed without applying it.
    fn expect(&self, idx: usize, input: RunInput, event: &'static str) -> Result<(), EventError> {
        let r = self.run(idx);
        step(r.phase, input)
            .map(|_| ())
            .map_err(|refusal| EventError::UnexpectedForRun {
                run: r.id,
                event,
                phase: r.phase,
                refusal,
            })
    }

    /// Frees the run's slot (its events were released by finalisation or abandoned by a
    /// reset) and fixes its verdict.
    fn settle(&mut self, idx: usize, verdict: Verdict) {
        let r = self.run_mut(idx);
        r.verdict = Some(verdict);
        r.deadline = None;
        let (lease, id) = (r.lease, r.id);
        if let Some(slot) = self.slots.get_mut(usize::from(lease.slot.0)) {
            if *slot
                == (SlotState::Leased {
                    generation: lease.generation,
                    run: id,
                })
            {
                *slot = SlotState::Free;
            }
        }
        if self.launch_waiter == Some(id) {
            self.launch_waiter = None;
        }
    }

    #[inline]
    fn emit(&mut self, effect: Effect) {
        self.effects.push(effect);
    }

    fn finalise(&mut self, idx: usize, verdict: Verdict, copy_back: bool) {
        let r = self.run_mut(idx);
        r.verdict = Some(verdict);
        let (run, lease) = (r.id, r.lease);
        self.emit(Effect::FinaliseRun {
            run,
            lease,
            copy_back,
        });
    }
}

// ----- progress: what the lane starts next --------------------------------------------

impl Lane {
    /// Delivers finished outcomes in order, then starts whatever the current state allows.
    ///
    /// One pass is enough, in this order: an upload, a launch, a preparation, an await.
    /// Preparing, uploading and launching are answered by events, so none of them enables
    /// another start before the next input, except a launch, which can let the next queued
    /// run prepare; that is why the launch comes before the preparation. No start finishes an
    /// item, so nothing new is left to deliver afterwards.
    fn progress(&mut self, now: Timestamp) {
        self.deliver();
        match self.state {
            LaneState::Open => {
                self.start_upload();
                self.start_launch();
                self.start_prepare();
                self.start_await(now);
            }
            LaneState::Closing => {
                self.start_await(now);
                if self.finish_closing() {
                    self.release_streams();
                }
            }
            LaneState::ReleasingStreams => {
                self.release_streams();
            }
            LaneState::Recovering { .. } | LaneState::Lost | LaneState::Closed => {}
        }
        debug_assert!(
            !self.items.first().is_some_and(Item::is_done),
            "a start finished an item"
        );
    }

    /// Moves finished items at the front into the outcome queue (L-2, L-14).
    fn deliver(&mut self) {
        while self.items.first().is_some_and(Item::is_done) {
            let item = self.items.remove(0);
            let outcome = match item {
                Item::Run(r) => Outcome::Run(RunOutcome {
                    run: r.id,
                    tag: r.tag,
                    verdict: r.verdict.unwrap_or(Verdict::Cancelled),
                    timing: r.timing,
                }),
                Item::Publication(p) => Outcome::Publication(PublicationOutcome {
                    publication: p.id,
                    result: p.result.unwrap_or(PublicationResult::Cancelled),
                }),
            };
            self.last_delivered_seq = item.seq();
            self.delivered += 1;
            self.outcomes.push(outcome);
        }
    }

    /// A publication at the front of the FIFO uploads: every earlier item has its outcome.
    fn start_upload(&mut self) -> bool {
        let Some(Item::Publication(p)) = self.items.first_mut() else {
            return false;
        };
        if p.phase != PublicationPhase::Waiting {
            return false;
        }
        p.phase = PublicationPhase::Uploading;
        let (publication, code) = (p.id, p.code);
        self.emit(Effect::UploadCode { publication, code });
        true
    }

    /// What stands before the item at `idx`: whether a publication is unfinished, whether any
    /// run is unfinished, whether all unfinished runs have launched, and whether one of them
    /// collects diagnostics.
    fn ahead_of(&self, idx: usize) -> Ahead {
        let mut ahead = Ahead::default();
        for item in &self.items[..idx] {
            match item {
                Item::Publication(_) if !item.is_done() => ahead.publication = true,
                Item::Run(r) if !r.phase.is_done() => {
                    ahead.live_run = true;
                    ahead.all_launched &= r.phase.past_launch();
                    ahead.diagnostics |= r.diagnostics;
                }
                _ => {}
            }
        }
        ahead
    }

    /// Prepares the oldest queued run when the profile and its predecessors allow (L-3, §5.4).
    fn start_prepare(&mut self) -> bool {
        let Some(idx) = self.first_run_in(RunPhase::Queued) else {
            return false;
        };
        let ahead = self.ahead_of(idx);
        let r = self.run(idx);
        if ahead.publication || !ahead.all_launched {
            return false;
        }
        if ahead.live_run
            && (!self.profile.concurrent_prepare()
                || r.diagnostics
                || r.incompatible
                || ahead.diagnostics)
        {
            return false;
        }
        let (run, lease, diagnostics) = (r.id, r.lease, r.diagnostics);
        if self.advance(idx, RunInput::Prepare, "prepare").is_err() {
            return false;
        }
        self.emit(Effect::PrepareRun {
            run,
            lease,
            diagnostics,
        });
        true
    }

    /// Launches the oldest prepared run when order, depth and the pair allow (L-2, L-3, L-11).
    fn start_launch(&mut self) -> bool {
        let Some(idx) = self.first_run_in(RunPhase::Prepared) else {
            return false;
        };
        let ahead = self.ahead_of(idx);
        let r = self.run(idx);
        let (run, lease, diagnostics) = (r.id, r.lease, r.diagnostics);
        if ahead.publication || !ahead.all_launched {
            return false;
        }
        if (diagnostics || ahead.diagnostics) && ahead.live_run {
            return false;
        }
        let on_pair = self.live_runs().filter(|r| r.phase.on_pair()).count();
        if on_pair >= usize::from(self.profile.launch_depth().get()) {
            return false;
        }
        match self.pair.ready() {
            Readiness::Ready { aicpu, aicore } => {
                if self.pair.submit(Owner(run.0)).is_err() {
                    return false;
                }
                let created = self.pair.created_count();
                match self.advance(idx, RunInput::Launch, "launch") {
                    Ok(r) => r.launched_on = Some(created),
                    Err(_) => return false,
                }
                self.launch_waiter = None;
                self.emit(Effect::LaunchRun {
                    run,
                    lease,
                    aicpu,
                    aicore,
                });
                true
            }
            Readiness::Pending(effects) => {
                self.launch_waiter = Some(run);
                let changed = !effects.is_empty();
                for effect in effects {
                    self.emit(match effect {
                        stream_pair::Effect::Create { role } => Effect::CreateStream { role },
                        stream_pair::Effect::Destroy { role, handle } => {
                            Effect::DestroyStream { role, handle }
                        }
                    });
                }
                changed
            }
            _ => false,
        }
    }

    /// Awaits the oldest launched run once nothing older is awaited: its deadline starts now,
    /// when its predecessor completed or when it launched (SPEC §5.4).
    fn start_await(&mut self, now: Timestamp) -> bool {
        if self.live_runs().any(|r| r.phase == RunPhase::Awaiting) {
            return false;
        }
        let Some(idx) = self
            .items
            .iter()
            .position(|i| matches!(i, Item::Run(r) if r.phase.on_pair()))
        else {
            return false;
        };
        if self.run(idx).phase != RunPhase::Launched {
            return false;
        }
        let deadline = now.after_ns(self.profile.completion_timeout_ns());
        let Ok(r) = self.advance(idx, RunInput::Await, "await") else {
            return false;
        };
        r.deadline = Some(deadline);
        let (run, lease) = (r.id, r.lease);
        self.emit(Effect::AwaitCompletion {
            run,
            lease,
            deadline,
        });
        true
    }

    fn first_run_in(&self, phase: RunPhase) -> Option<usize> {
        self.items
            .iter()
            .position(|i| matches!(i, Item::Run(r) if r.phase == phase))
    }

    /// Closing and every item has its outcome: release the streams.
    fn finish_closing(&mut self) -> bool {
        if !self.items.is_empty() {
            return false;
        }
        match lane_step(
            self.state,
            LaneInput::Idle,
            self.profile.recovery_attempts(),
        ) {
            Ok(next) if next != self.state => {
                self.state = next;
                true
            }
            _ => false,
        }
    }

    /// Destroys the pair once (retrying while stream results are still outstanding), and
    /// closes when nothing is left alive.
    fn release_streams(&mut self) -> bool {
        if !self.teardown_started {
            match self.pair.destroy_all() {
                Ok(effects) => {
                    self.teardown_started = true;
                    for effect in effects {
                        if let stream_pair::Effect::Destroy { role, handle } = effect {
                            self.emit(Effect::DestroyStream { role, handle });
                        }
                    }
                }
                Err(_) => return false,
            }
        }
        if self.pair.teardown_complete() {
            if let Ok(next) = lane_step(
                self.state,
                LaneInput::StreamsReleased,
                self.profile.recovery_attempts(),
            ) {
                self.state = next;
                return true;
            }
        }
        false
    }

    /// Close: cancel everything that has not launched (L-14, L-15).
    fn cancel_unlaunched(&mut self) {
        for idx in 0..self.items.len() {
            let phase = match &mut self.items[idx] {
                Item::Publication(p) => {
                    if p.phase == PublicationPhase::Waiting {
                        p.phase = PublicationPhase::Done;
                        p.result = Some(PublicationResult::Cancelled);
                    }
                    continue;
                }
                Item::Run(r) => r.phase,
            };
            match phase {
                // The prepare is out: cancel when it answers.
                RunPhase::Preparing => self.run_mut(idx).cancel = true,
                RunPhase::Queued if self.advance(idx, RunInput::Cancel, "close").is_ok() => {
                    self.settle(idx, Verdict::Cancelled);
                }
                RunPhase::Prepared if self.advance(idx, RunInput::Cancel, "close").is_ok() => {
                    self.finalise(idx, Verdict::Cancelled, false);
                }
                _ => {}
            }
        }
        for slot in &mut self.slots {
            if matches!(slot, SlotState::Reserved(_)) {
                *slot = SlotState::Free;
            }
        }
        self.launch_waiter = None;
    }
}

#[derive(Clone, Copy, Debug)]
struct Ahead {
    publication: bool,
    live_run: bool,
    all_launched: bool,
    diagnostics: bool,
}

impl Default for Ahead {
    fn default() -> Self {
        Self {
            publication: false,
            live_run: false,
            all_launched: true,
            diagnostics: false,
        }
    }
}

// ----- events ---------------------------------------------------------------------------

impl Lane {
    fn apply_event(&mut self, now: Timestamp, event: Event) -> Result<(), EventError> {
        let name = event.name();
        match event {
            Event::Prepared { run, lease } => {
                let idx = self.live_run(run, lease, name)?;
                let cancel = self.advance(idx, RunInput::Prepared, name)?.cancel;
                if cancel && self.advance(idx, RunInput::Cancel, name).is_ok() {
                    self.finalise(idx, Verdict::Cancelled, false);
                }
            }
            Event::PrepareIncompatible { run, lease } => {
                let idx = self.live_run(run, lease, name)?;
                self.advance(idx, RunInput::Incompatible, name)?;
                self.run_mut(idx).incompatible = true;
                if self.run(idx).cancel && self.advance(idx, RunInput::Cancel, name).is_ok() {
                    self.settle(idx, Verdict::Cancelled);
                }
            }
            Event::PrepareFailed { run, lease, code } => {
                let idx = self.live_run(run, lease, name)?;
                let cause = Cause::of(Failure::Acl {
                    stage: Stage::Prepare,
                    code,
                });
                self.fail(idx, RunInput::PrepareFailed(cause.class()), cause, name)?;
            }
            Event::StreamCreated { role, handle } => {
                self.pair_result(stream_pair::Input::Created { role, handle }, name)?;
            }
            Event::StreamDestroyed { role, handle } => {
                self.pair_result(stream_pair::Input::Destroyed { role, handle }, name)?;
            }
            Event::StreamCreateFailed { role, code } => {
                self.pair_result(
                    stream_pair::Input::CreateFailed {
                        role,
                        code: code.raw(),
                    },
                    name,
                )?;
                self.stream_failed(role, Stage::StreamCreate, code);
            }
            Event::StreamDestroyFailed { role, handle, code } => {
                self.pair_result(
                    stream_pair::Input::DestroyFailed {
                        role,
                        handle,
                        code: code.raw(),
                    },
                    name,
                )?;
                self.stream_failed(role, Stage::StreamDestroy, code);
            }
            Event::Launched { run, lease } => {
                let idx = self.live_run(run, lease, name)?;
                self.advance(idx, RunInput::Launched, name)?;
            }
            Event::LaunchFailed {
                run,
                lease,
                step,
                code,
            } => {
                let idx = self.live_run(run, lease, name)?;
                let failure = match step {
                    LaunchStep::Arm | LaunchStep::Aicore => Failure::Launch {
                        progress: LaunchProgress::NotStarted,
                        code,
                    },
                    LaunchStep::Aicpu => Failure::Launch {
                        progress: LaunchProgress::Partial,
                        code,
                    },
                    LaunchStep::RecordEvent => Failure::Acl {
                        stage: Stage::EventRecord,
                        code,
                    },
                };
                let cause = Cause::of(failure);
                let input = RunInput::LaunchFailed(cause.class());
                self.expect(idx, input, name)?;
                if cause.class() == Class::RunOnly {
                    // Nothing reached a stream: the submission leaves without staleness (S-2).
                    let _ = self.pair.withdraw(Owner(run.0));
                }
                self.fail(idx, input, cause, name)?;
            }
            Event::Completed { run, lease } => {
                let idx = self.live_run(run, lease, name)?;
                self.advance(idx, RunInput::Completed, name)?.deadline = None;
                let _ = self.pair.retire(Owner(run.0), Retirement::Complete);
                let layout = self.profile.header();
                self.emit(Effect::ReadStatus { run, lease, layout });
            }
            Event::CompletionFailed { run, lease, code } => {
                let idx = self.live_run(run, lease, name)?;
                self.advance(idx, RunInput::CompletionFailed, name)?;
                let cause = Cause::of(Failure::Acl {
                    stage: Stage::EventWait,
                    code,
                });
                self.poison_from(idx, cause);
            }
            Event::StatusRead {
                run,
                lease,
                status,
                timing,
            } => {
                let idx = self.live_run(run, lease, name)?;
                match status.latched() {
                    None => {
                        self.advance(idx, RunInput::StatusClean, name)?.timing = Some(timing);
                        self.finalise(idx, Verdict::Ok, true);
                    }
                    Some(latch) => {
                        let cause = Cause::of(Failure::Latched(latch));
                        self.expect(idx, RunInput::StatusLatched(cause.class()), name)?;
                        self.run_mut(idx).timing = Some(timing);
                        self.fail(idx, RunInput::StatusLatched(cause.class()), cause, name)?;
                    }
                }
            }
            Event::StatusReadFailed { run, lease, code } => {
                let idx = self.live_run(run, lease, name)?;
                self.advance(idx, RunInput::StatusReadFailed, name)?;
                let cause = Cause::of(Failure::Acl {
                    stage: Stage::StatusRead,
                    code,
                });
                self.poison_from(idx, cause);
            }
            Event::Finalised { run, lease } => {
                let idx = self.live_run(run, lease, name)?;
                let verdict = self
                    .advance(idx, RunInput::Finalised, name)?
                    .verdict
                    .unwrap_or(Verdict::Ok);
                self.settle(idx, verdict);
            }
            Event::FinaliseFailed {
                run,
                lease,
                failure,
            } => {
                let idx = self.live_run(run, lease, name)?;
                let failure = match failure {
                    FinaliseFailure::Validation => Failure::CopyBackValidation,
                    FinaliseFailure::Acl(code) => Failure::Acl {
                        stage: Stage::CopyBack,
                        code,
                    },
                };
                let cause = Cause::of(failure);
                match cause.class() {
                    Class::RunOnly => {
                        self.advance(idx, RunInput::FinaliseFailed(Class::RunOnly), name)?;
                        // The first failure wins: a run that already failed keeps its cause.
                        let verdict = match self.run(idx).verdict {
                            Some(Verdict::Ok) | None => Verdict::Failed { cause },
                            Some(earlier) => earlier,
                        };
                        self.settle(idx, verdict);
                    }
                    Class::Poison => {
                        self.advance(idx, RunInput::FinaliseFailed(Class::Poison), name)?;
                        self.poison_from(idx, cause);
                    }
                }
            }
            Event::Uploaded { publication } => {
                self.finish_upload(publication, PublicationResult::Uploaded, name)?;
            }
            Event::UploadFailed { publication, code } => {
                let cause = Cause::of(Failure::Acl {
                    stage: Stage::Upload,
                    code,
                });
                self.finish_upload(publication, PublicationResult::Failed { cause }, name)?;
            }
            Event::DeviceDrained { attempt } => {
                self.recovery(RecoveryStep::Drain, LaneInput::Drained, attempt, name)?;
            }
            Event::ResetDone { attempt } => {
                self.recovery(RecoveryStep::Reset, LaneInput::ResetDone, attempt, name)?;
            }
            Event::ResetFailed { attempt, .. } => {
                self.recovery(RecoveryStep::Reset, LaneInput::ResetFailed, attempt, name)?;
            }
            Event::ProbePassed { attempt } => {
                self.recovery(RecoveryStep::Probe, LaneInput::ProbePassed, attempt, name)?;
            }
            Event::ProbeFailed { attempt, .. } => {
                self.recovery(RecoveryStep::Probe, LaneInput::ProbeFailed, attempt, name)?;
            }
        }
        let _ = now;
        Ok(())
    }

    /// A run-only failure finalises the run (no copy-back); a poison takes the device down.
    fn fail(
        &mut self,
        idx: usize,
        input: RunInput,
        cause: Cause,
        event: &'static str,
    ) -> Result<(), EventError> {
        self.advance(idx, input, event)?;
        match cause.class() {
            Class::RunOnly => self.finalise(idx, Verdict::Failed { cause }, false),
            Class::Poison => self.poison_from(idx, cause),
        }
        Ok(())
    }

    fn pair_result(
        &mut self,
        input: stream_pair::Input,
        event: &'static str,
    ) -> Result<(), EventError> {
        self.pair
            .handle(input)
            .map(|_| ())
            .map_err(|rejection| EventError::Stream { event, rejection })
    }

    /// A stream create or destroy failed: on the launch path the waiting run fails
    /// `NotStarted` (the next launch retries); while closing it is the teardown's report.
    fn stream_failed(&mut self, role: Role, stage: Stage, code: status_latch::AclCode) {
        if matches!(self.state, LaneState::ReleasingStreams) {
            self.teardown_failure
                .get_or_insert(TeardownFailure { role, code });
            return;
        }
        let Some(waiter) = self.launch_waiter.take() else {
            return;
        };
        let Some(idx) = self.items.iter().position(
            |i| matches!(i, Item::Run(r) if r.id == waiter && r.phase == RunPhase::Prepared),
        ) else {
            return;
        };
        let cause = Cause::of(Failure::Acl { stage, code });
        let _ = self.fail(idx, RunInput::StreamsFailed(cause.class()), cause, "stream");
    }

    fn finish_upload(
        &mut self,
        publication: PublicationId,
        result: PublicationResult,
        event: &'static str,
    ) -> Result<(), EventError> {
        let Some(Item::Publication(p)) = self.items.iter_mut().find(|i| {
            matches!(i, Item::Publication(p) if p.id == publication && p.phase == PublicationPhase::Uploading)
        }) else {
            return Err(EventError::UnexpectedForPublication { publication, event });
        };
        p.phase = PublicationPhase::Done;
        p.result = Some(result);
        // Uploaded or not, cores may hold instructions from the replaced code: the AICore
        // stream is stale either way (L-12).
        self.pair.mark_stale();
        self.last_publication = Some(PublicationMark {
            seq: publication.0,
            aicore_creations: self.pair.created_count(),
        });
        Ok(())
    }

    /// Poison (L-10): the origin run gets its own cause, every other unfinished item names it
    /// as origin, handles are abandoned without destroys, and recovery starts.
    fn poison_from(&mut self, origin_idx: usize, cause: Cause) {
        let origin = self.run(origin_idx).id;
        self.poison = Some(PoisonRecord { origin, cause });
        // Effects not yet taken are for work the reset abandons.
        self.effects.clear();
        for idx in 0..self.items.len() {
            match &mut self.items[idx] {
                Item::Run(r) if r.id == origin => {
                    r.phase = RunPhase::Done;
                    self.settle(idx, Verdict::Failed { cause });
                }
                Item::Run(r) if !r.phase.is_done() => {
                    r.phase = RunPhase::Done;
                    self.settle(idx, Verdict::Poisoned { cause, origin });
                }
                Item::Publication(p) if p.phase != PublicationPhase::Done => {
                    p.phase = PublicationPhase::Done;
                    p.result = Some(PublicationResult::Poisoned { cause, origin });
                }
                _ => {}
            }
        }
        self.slots = [SlotState::Free; MAX_SLOTS as usize];
        self.pair.abandon();
        self.launch_waiter = None;
        self.teardown_started = false;
        if let Ok(next) = lane_step(
            self.state,
            LaneInput::Poison,
            self.profile.recovery_attempts(),
        ) {
            self.state = next;
            self.emit(Effect::DrainDevice {
                attempt: 1,
                timeout_ns: self.profile.drain_timeout_ns(),
            });
        }
    }

    /// One recovery event: checks it answers the step in flight, then emits the next step.
    fn recovery(
        &mut self,
        expected: RecoveryStep,
        input: LaneInput,
        attempt: u8,
        event: &'static str,
    ) -> Result<(), EventError> {
        let unexpected = EventError::UnexpectedRecovery {
            event,
            attempt,
            state: self.state,
        };
        match self.state {
            LaneState::Recovering {
                step,
                attempt: live,
                ..
            } if step == expected && live == attempt => {}
            _ => return Err(unexpected),
        }
        let next = lane_step(self.state, input, self.profile.recovery_attempts())
            .map_err(|_| unexpected)?;
        if matches!(input, LaneInput::ResetFailed | LaneInput::ProbeFailed)
            && !matches!(next, LaneState::Recovering { .. })
        {
            self.device_lost = true;
        }
        self.state = next;
        match next {
            LaneState::Recovering {
                step: RecoveryStep::Drain,
                attempt,
                ..
            } => self.emit(Effect::DrainDevice {
                attempt,
                timeout_ns: self.profile.drain_timeout_ns(),
            }),
            LaneState::Recovering {
                step: RecoveryStep::Reset,
                attempt,
                ..
            } => self.emit(Effect::ForceReset { attempt }),
            LaneState::Recovering {
                step: RecoveryStep::Probe,
                attempt,
                ..
            } => self.emit(Effect::Probe { attempt }),
            // Confirmed: every handle was abandoned at poison time, so the next launch
            // creates a fresh pair (L-10).
            LaneState::Open | LaneState::Closing | LaneState::Lost => {}
            LaneState::ReleasingStreams | LaneState::Closed => {}
        }
        Ok(())
    }
}

// ----- invariants -----------------------------------------------------------------------

impl Lane {
    /// Checks every lane invariant (for tests, the simulator and the fuzzers; call it after
    /// every step). Allocates only to describe a violation.
    ///
    /// - Exactly one outcome per accepted run and publication, in submission order.
    /// - No slot is both free and owned; every unfinished run holds its slot's live lease.
    /// - The stream pair's own invariants hold, and its FIFO is exactly the runs on the
    ///   pair, in order.
    /// - No run launched before its predecessor; no launch behind an unfinished publication.
    /// - Runs on the pair never exceed the launch depth; a diagnostics run is alone.
    /// - No run launched after a publication runs on an AICore stream created before it.
    /// - Recovering, lost and closed lanes have no unfinished run.
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        let fail = |what: &str| Err(InvariantViolation(what.to_owned()));

        if let Err(e) = self.pair.check_invariants() {
            return Err(InvariantViolation(format!("stream pair: {e}")));
        }

        // One outcome per accepted item, in order.
        let queued_outcomes = u64::try_from(self.outcomes.len()).unwrap_or(u64::MAX);
        let pending = u64::try_from(self.items.len()).unwrap_or(u64::MAX);
        if self.delivered + pending != self.accepted {
            return Err(InvariantViolation(format!(
                "accepted {} items but {} delivered + {} pending",
                self.accepted, self.delivered, pending
            )));
        }
        if queued_outcomes > self.delivered {
            return fail("more outcomes queued than delivered");
        }
        let mut prev = 0;
        for outcome in self.outcomes.as_slice() {
            if outcome.seq() <= prev {
                return fail("outcomes out of submission order");
            }
            prev = outcome.seq();
        }
        let mut prev = self.last_delivered_seq;
        for item in &self.items {
            if item.seq() <= prev {
                return fail("items out of submission order, or behind a delivered outcome");
            }
            prev = item.seq();
        }
        if self.items.first().is_some_and(Item::is_done) {
            return fail("a finished item at the front was not delivered");
        }

        // Slots and leases.
        let slots = usize::from(self.profile.slots());
        for (i, slot) in self.slots.iter().enumerate() {
            match *slot {
                SlotState::Leased { generation, run } => {
                    let holder = self.live_runs().find(|r| r.id == run);
                    match holder {
                        Some(r)
                            if usize::from(r.lease.slot.0) == i
                                && r.lease.generation == generation => {}
                        _ => {
                            return Err(InvariantViolation(format!(
                                "slot {i} is leased to {run}, which does not hold it"
                            )));
                        }
                    }
                    if i >= slots {
                        return fail("a slot beyond the profile is leased");
                    }
                }
                SlotState::Reserved(_) if i >= slots => {
                    return fail("a slot beyond the profile is reserved");
                }
                SlotState::Free | SlotState::Reserved(_) => {}
            }
        }
        for r in self.live_runs() {
            let held = self.slots.get(usize::from(r.lease.slot.0)).copied();
            if held
                != Some(SlotState::Leased {
                    generation: r.lease.generation,
                    run: r.id,
                })
            {
                return Err(InvariantViolation(format!(
                    "{} is live but its slot is not leased to it",
                    r.id
                )));
            }
        }
        if self.held_runs() + self.reserved_slots() > slots {
            return fail("the lane holds more runs than slots");
        }
        if self
            .items
            .iter()
            .filter(|i| i.is_live_publication())
            .count()
            > MAX_PENDING_PUBLICATIONS
        {
            return fail("too many publications waiting");
        }

        // The pair's FIFO is exactly the runs on the pair, in order.
        let mut on_pair = self
            .live_runs()
            .filter(|r| r.phase.on_pair())
            .map(|r| Owner(r.id.0));
        let submissions = self.pair.submissions();
        for owner in submissions {
            if on_pair.next() != Some(*owner) {
                return fail("the pair's submissions differ from the runs on the pair");
            }
        }
        if on_pair.next().is_some() {
            return fail("a run is on the pair without a submission");
        }
        if submissions.len() > usize::from(self.profile.launch_depth().get()) {
            return fail("more runs on the pair than the launch depth");
        }

        // Launch order, publication barrier, diagnostics alone, one await.
        let mut ahead = Ahead::default();
        let mut awaiting = 0;
        let mut first_on_pair = true;
        for item in &self.items {
            match item {
                Item::Publication(_) if !item.is_done() => ahead.publication = true,
                Item::Run(r) if !r.phase.is_done() => {
                    if r.phase.past_launch() {
                        if !ahead.all_launched {
                            return Err(InvariantViolation(format!(
                                "{} launched before its predecessor",
                                r.id
                            )));
                        }
                        if ahead.publication {
                            return Err(InvariantViolation(format!(
                                "{} launched behind an unfinished publication",
                                r.id
                            )));
                        }
                        if (r.diagnostics || ahead.diagnostics) && ahead.live_run {
                            return Err(InvariantViolation(format!(
                                "{} launched alongside a diagnostics run",
                                r.id
                            )));
                        }
                    }
                    if r.phase == RunPhase::Awaiting {
                        awaiting += 1;
                        if !first_on_pair {
                            return Err(InvariantViolation(format!(
                                "{} is awaited but is not the oldest on the pair",
                                r.id
                            )));
                        }
                    }
                    if r.phase.on_pair() {
                        first_on_pair = false;
                    }
                    if let Some(mark) = self.last_publication {
                        if r.launched_on
                            .is_some_and(|created| created <= mark.aicore_creations)
                            && r.id.0 > mark.seq
                        {
                            return Err(InvariantViolation(format!(
                                "{} launched on the AICore stream made stale by publication {}",
                                r.id, mark.seq
                            )));
                        }
                    }
                    ahead.live_run = true;
                    ahead.all_launched &= r.phase.past_launch();
                    ahead.diagnostics |= r.diagnostics;
                }
                _ => {}
            }
        }
        if awaiting > 1 {
            return fail("more than one run awaited at once");
        }

        // Effects refer to live runs only.
        for effect in self.effects.as_slice() {
            if let Some(run) = effect.run() {
                if !self.live_runs().any(|r| r.id == run) {
                    return Err(InvariantViolation(format!(
                        "a pending {} names {run}, which is done",
                        effect.name()
                    )));
                }
            }
        }

        match self.state {
            LaneState::Recovering { .. } | LaneState::Lost => {
                if matches!(self.state, LaneState::Lost) && !self.device_lost {
                    return fail("lost without a failed recovery");
                }
                if self.live_runs().next().is_some() {
                    return fail("a run is live while the device is being recovered or lost");
                }
                if self.poison.is_none() {
                    return fail("recovering or lost without a poison record");
                }
            }
            LaneState::Closed | LaneState::ReleasingStreams => {
                if !self.items.is_empty() {
                    return fail("closed with items pending");
                }
            }
            LaneState::Open | LaneState::Closing => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! `check_invariants` must catch what it names: each test corrupts one fact of a healthy
    //! lane (reaching inside, which only this module can) and expects a violation.

    use super::*;

    /// A lane with run 1 awaited and run 2 launched behind it on a fresh pair.
    fn two_in_flight() -> Lane {
        let mut lane = Lane::new(Profile::a2a3());
        let now = Timestamp(0);
        let mut handle = 0;
        for _ in 0..2 {
            lane.submit(now, RunRequest::new()).unwrap();
            while let Some(effect) = lane.poll_effect() {
                let event = match effect {
                    Effect::PrepareRun { run, lease, .. } => Event::Prepared { run, lease },
                    Effect::CreateStream { role } => {
                        handle += 1;
                        Event::StreamCreated {
                            role,
                            handle: stream_pair::StreamHandle(handle),
                        }
                    }
                    Effect::LaunchRun { run, lease, .. } => Event::Launched { run, lease },
                    Effect::AwaitCompletion { .. } => continue,
                    other => panic!("{other:?}"),
                };
                lane.handle(now, event).unwrap();
            }
        }
        lane.check_invariants().unwrap();
        lane
    }

    fn violation(lane: &Lane) -> String {
        lane.check_invariants()
            .expect_err("corruption not caught")
            .0
    }

    #[test]
    fn a_freed_slot_still_owned_by_a_live_run_is_caught() {
        let mut lane = two_in_flight();
        lane.slots[0] = SlotState::Free;
        assert!(violation(&lane).contains("slot is not leased"));
    }

    #[test]
    fn a_run_on_the_pair_without_a_submission_is_caught() {
        let mut lane = two_in_flight();
        lane.pair.withdraw(Owner(2)).unwrap();
        assert!(violation(&lane).contains("without a submission"));
    }

    #[test]
    fn a_run_launched_before_its_predecessor_is_caught() {
        let mut lane = two_in_flight();
        lane.run_mut(0).phase = RunPhase::Prepared;
        assert!(
            violation(&lane).contains("before its predecessor")
                || violation(&lane).contains("submissions")
        );
    }

    #[test]
    fn two_awaited_runs_are_caught() {
        let mut lane = two_in_flight();
        lane.run_mut(1).phase = RunPhase::Awaiting;
        assert!(violation(&lane).contains("awaited"));
    }

    #[test]
    fn a_lost_outcome_is_caught() {
        let mut lane = two_in_flight();
        lane.accepted += 1;
        assert!(violation(&lane).contains("accepted"));
    }

    #[test]
    fn outcomes_out_of_order_are_caught() {
        let mut lane = two_in_flight();
        let outcome = |seq| {
            Outcome::Run(RunOutcome {
                run: RunId(seq),
                tag: None,
                verdict: Verdict::Cancelled,
                timing: None,
            })
        };
        lane.outcomes.push(outcome(9));
        lane.outcomes.push(outcome(8));
        lane.delivered += 2;
        lane.accepted += 2;
        assert!(violation(&lane).contains("out of submission order"));
    }

    #[test]
    fn a_launch_on_a_stream_made_stale_by_a_publication_is_caught() {
        let mut lane = two_in_flight();
        lane.last_publication = Some(PublicationMark {
            seq: 0,
            aicore_creations: lane.pair.created_count(),
        });
        assert!(violation(&lane).contains("made stale by publication"));
    }

    #[test]
    fn a_live_run_while_recovering_is_caught() {
        let mut lane = two_in_flight();
        lane.state = LaneState::Lost;
        assert!(violation(&lane).contains("lost without a failed recovery"));
        lane.device_lost = true;
        assert!(violation(&lane).contains("live while the device"));
    }

    #[test]
    fn a_pending_effect_for_a_finished_run_is_caught() {
        let mut lane = two_in_flight();
        let lease = lane.run(0).lease;
        lane.effects.push(Effect::FinaliseRun {
            run: RunId(42),
            lease,
            copy_back: false,
        });
        assert!(violation(&lane).contains("which is done"));
    }
}
