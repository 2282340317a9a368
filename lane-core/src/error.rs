//! Typed errors: refused commands and rejected events. Each message says what to do.

use thiserror::Error;

use crate::ids::{Lease, PublicationId, RunId, SlotId, Tag};
use crate::lane::PoisonRecord;
use crate::notice::FaultNotice;
use crate::outcome::Cause;
use crate::run::{Refusal, RunInput, RunPhase};
use crate::state::LaneState;

/// Why `submit` or `reserve` refused a run (L-1). Nothing was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum SubmitError {
    /// The lane already holds `slots` runs (prepared, launched, or finished but not yet
    /// collected).
    #[error(
        "the lane holds {slots} runs already; collect an outcome with poll_outcome and submit again"
    )]
    Full {
        /// The profile's slot count.
        slots: u8,
    },
    /// The lane is closing or closed.
    #[error("the lane is closed; create a new lane to submit more runs")]
    Closed,
    /// A run poisoned the device and the lane is recovering it.
    #[error("the lane is recovering the device after {origin} poisoned it [{}]; submit again once recovery is confirmed", cause.line(*origin))]
    Poisoned {
        /// The run whose failure poisoned the device.
        origin: RunId,
        /// Its cause.
        cause: Cause,
    },
    /// Recovery failed every attempt; the device could not be proven usable.
    #[error("the lane is lost: after {origin} poisoned the device [{}], no recovery attempt proved it usable; reset the device outside the lane and create a new lane", cause.line(*origin))]
    Lost {
        /// The run whose failure poisoned the device.
        origin: RunId,
        /// Its cause.
        cause: Cause,
    },
    /// A device fault notice named this lane's device and stream (L-19): the lane lets its
    /// launched runs finish, then recovers the device.
    #[error(
        "the device is suspect after a {notice}; the lane recovers it once its launched runs have their verdicts: submit again once recovery is confirmed"
    )]
    Suspect {
        /// The notice.
        notice: FaultNotice,
    },
    /// Recovery after a fault notice failed every attempt.
    #[error(
        "the lane is lost: after a {notice}, no recovery attempt proved the device usable; reset the device outside the lane and create a new lane"
    )]
    LostAfterNotice {
        /// The notice.
        notice: FaultNotice,
    },
    /// The runtime owns recovery (L-24) and a run poisoned the device: the lane makes no
    /// device call until the runtime reports its reset.
    #[error("the device is unusable after {origin} poisoned it [{}]; the runtime owns recovery: reset the device, report it (device_reset), then submit again", cause.line(*origin))]
    Unusable {
        /// The run whose failure poisoned the device.
        origin: RunId,
        /// Its cause.
        cause: Cause,
    },
    /// The runtime owns recovery (L-24) and a device fault notice made the device suspect:
    /// the lane makes no device call until the runtime reports its reset.
    #[error(
        "the device is unusable after a {notice}; the runtime owns recovery: reset the device, report it (device_reset), then submit again"
    )]
    UnusableAfterNotice {
        /// The notice.
        notice: FaultNotice,
    },
    /// The request carried a lease that is not a live reservation.
    #[error(
        "{lease} is not a live reservation (released, already used, or dropped by a device reset); reserve a new lease"
    )]
    StaleLease {
        /// The refused lease.
        lease: Lease,
    },
    /// The request's tag belongs to a live run.
    #[error("tag {} belongs to live {run}; wait for its outcome or use another tag", tag.0)]
    DuplicateRun {
        /// The duplicated tag.
        tag: Tag,
        /// The live run holding it.
        run: RunId,
    },
    /// The request's epoch (the runtime's own, for the run's result record) cannot tell this
    /// run's record from an earlier one's.
    #[error("epoch {epoch} refused: {}", refusal.reason())]
    Epoch {
        /// The refused epoch (0 for a request without one in a lane whose runs carry them).
        epoch: u64,
        /// Why.
        refusal: EpochRefusal,
    },
}

/// Why a request's epoch was refused ([`SubmitError::Epoch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EpochRefusal {
    /// 0 is what a zeroed record region reads as: a record stamped 0 proves nothing.
    Zero,
    /// Not above the last epoch the lane accepted: a repeat, or an older value, could match
    /// a record an earlier run left in the slot.
    NotAbove {
        /// The last epoch accepted.
        last: u64,
    },
    /// The lane's runs mix epochs the runtime gives and epochs the driver mints, whose
    /// values could meet: give every run of a lane an epoch, or none.
    Mixed,
}

impl EpochRefusal {
    /// A one-line reason, with what to do.
    #[must_use]
    pub fn reason(self) -> String {
        match self {
            Self::Zero => "0 is what a zeroed record reads as; give a non-zero epoch".to_owned(),
            Self::NotAbove { last } => format!(
                "not above the last epoch accepted ({last}), so an earlier run's record could match it; give a larger epoch"
            ),
            Self::Mixed => "the lane's runs mix their own epochs with the lane's; give every run of a lane an epoch, or none".to_owned(),
        }
    }
}

/// Why a run control ([`Lane::activate`](crate::Lane::activate),
/// [`Lane::cancel`](crate::Lane::cancel),
/// [`Lane::cancel_publication`](crate::Lane::cancel_publication)) was refused. Nothing
/// changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum ControlError {
    /// No item by that id is in the lane: never accepted, or its outcome was delivered.
    #[error(
        "item {item} is not in the lane (never accepted, or its outcome was delivered); nothing to change"
    )]
    Unknown {
        /// The id named.
        item: u64,
    },
    /// The run launched: a launched run finishes and gets its own verdict (L-14).
    #[error("{run} has launched: it finishes and gets its own verdict; wait for its outcome")]
    Launched {
        /// The run.
        run: RunId,
    },
    /// The publication's upload started: it finishes and gets its own result.
    #[error(
        "{publication}'s upload started: it finishes and gets its own result; wait for its outcome"
    )]
    Uploading {
        /// The publication.
        publication: PublicationId,
    },
    /// The item's outcome is decided already (a run finalised or done with another verdict, a
    /// publication taken down): it only waits for its turn.
    #[error("item {item} has its outcome ({outcome}) already; take it")]
    Finished {
        /// The item.
        item: u64,
        /// The outcome's name (`Failed`, `Poisoned`, ...).
        outcome: &'static str,
    },
    /// `activate` of a run that was not submitted held, or was activated already.
    #[error(
        "{run} is not held (submitted without a hold, or activated already); nothing to activate"
    )]
    NotHeld {
        /// The run.
        run: RunId,
    },
}

/// Why `publish` refused a publication. Nothing was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum PublishError {
    /// Too many publications are waiting already.
    #[error("{max} publications are already waiting; collect an outcome with poll_outcome and publish again", max = crate::profile::MAX_PENDING_PUBLICATIONS)]
    Full,
    /// The lane is closing or closed.
    #[error("the lane is closed; create a new lane to publish")]
    Closed,
    /// The lane is recovering the device.
    #[error("the lane is recovering the device after {origin} poisoned it [{}]; publish again once recovery is confirmed (the reset wiped published code)", cause.line(*origin))]
    Poisoned {
        /// The run whose failure poisoned the device.
        origin: RunId,
        /// Its cause.
        cause: Cause,
    },
    /// The lane is lost.
    #[error("the lane is lost: after {origin} poisoned the device [{}], no recovery attempt proved it usable; reset the device outside the lane and create a new lane", cause.line(*origin))]
    Lost {
        /// The run whose failure poisoned the device.
        origin: RunId,
        /// Its cause.
        cause: Cause,
    },
    /// A device fault notice named this lane's device and stream (L-19): the lane lets its
    /// launched runs finish, then recovers the device.
    #[error(
        "the device is suspect after a {notice}; the lane recovers it once its launched runs have their verdicts: publish again once recovery is confirmed"
    )]
    Suspect {
        /// The notice.
        notice: FaultNotice,
    },
    /// Recovery after a fault notice failed every attempt.
    #[error(
        "the lane is lost: after a {notice}, no recovery attempt proved the device usable; reset the device outside the lane and create a new lane"
    )]
    LostAfterNotice {
        /// The notice.
        notice: FaultNotice,
    },
    /// The runtime owns recovery (L-24) and a run poisoned the device.
    #[error("the device is unusable after {origin} poisoned it [{}]; the runtime owns recovery: reset the device, report it (device_reset), then publish again (the reset wiped published code)", cause.line(*origin))]
    Unusable {
        /// The run whose failure poisoned the device.
        origin: RunId,
        /// Its cause.
        cause: Cause,
    },
    /// The runtime owns recovery (L-24) and a device fault notice made the device suspect.
    #[error(
        "the device is unusable after a {notice}; the runtime owns recovery: reset the device, report it (device_reset), then publish again"
    )]
    UnusableAfterNotice {
        /// The notice.
        notice: FaultNotice,
    },
}

/// Why [`Lane::device_reset`](crate::Lane::device_reset) refused the runtime's report of a
/// reset. Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum DeviceResetError {
    /// The lane does not await a reset: the runtime does not own its recovery, or no poison
    /// handed it the device (or the report came twice).
    #[error(
        "the lane awaits no reset (it is {state:?}): report a reset only after the lane handed the device over (on_poison), once"
    )]
    NotAwaited {
        /// The lane's state.
        state: crate::state::LaneState,
    },
}

/// Why the lane refuses new work, whatever the command: the one mapping from a lane-level
/// refusal to a caller error, shared by `submit`, `reserve` and `publish`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Closing or closed.
    Closed,
    /// Recovering after this poison.
    Poisoned(PoisonRecord),
    /// Lost after this poison.
    Lost(PoisonRecord),
    /// Suspect, or recovering, after this notice.
    Suspect(FaultNotice),
    /// Lost after this notice.
    LostAfterNotice(FaultNotice),
    /// Handed to the runtime's recovery after this poison.
    Unusable(PoisonRecord),
    /// Handed to the runtime's recovery after this notice.
    UnusableAfterNotice(FaultNotice),
}

impl From<Refused> for SubmitError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Closed => Self::Closed,
            Refused::Poisoned(PoisonRecord { origin, cause }) => Self::Poisoned { origin, cause },
            Refused::Lost(PoisonRecord { origin, cause }) => Self::Lost { origin, cause },
            Refused::Suspect(notice) => Self::Suspect { notice },
            Refused::LostAfterNotice(notice) => Self::LostAfterNotice { notice },
            Refused::Unusable(PoisonRecord { origin, cause }) => Self::Unusable { origin, cause },
            Refused::UnusableAfterNotice(notice) => Self::UnusableAfterNotice { notice },
        }
    }
}

impl From<Refused> for PublishError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Closed => Self::Closed,
            Refused::Poisoned(PoisonRecord { origin, cause }) => Self::Poisoned { origin, cause },
            Refused::Lost(PoisonRecord { origin, cause }) => Self::Lost { origin, cause },
            Refused::Suspect(notice) => Self::Suspect { notice },
            Refused::LostAfterNotice(notice) => Self::LostAfterNotice { notice },
            Refused::Unusable(PoisonRecord { origin, cause }) => Self::Unusable { origin, cause },
            Refused::UnusableAfterNotice(notice) => Self::UnusableAfterNotice { notice },
        }
    }
}

/// Why `release` refused to give a reservation back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum LeaseError {
    /// The lease is not a live reservation.
    #[error("{lease} is not a live reservation; nothing to release")]
    NotReserved {
        /// The refused lease.
        lease: Lease,
    },
}

/// Why [`Lane::handle`](crate::Lane::handle) rejected an event. A rejected event changed
/// nothing; it answers nothing the lane is waiting for (a broken or late backend). Log it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum EventError {
    /// The event names a run that is not live (never accepted, or already done).
    #[error("{event} for {run}, which is not live (unknown or already done); ignored")]
    UnknownRun {
        /// The run named.
        run: RunId,
        /// The event's name.
        event: &'static str,
    },
    /// The event's lease is not the run's live lease (an older generation, or another slot).
    #[error("{event} for {run} carries {got}, but the run holds {live}; a stale event, ignored")]
    StaleLease {
        /// The run named.
        run: RunId,
        /// The event's name.
        event: &'static str,
        /// The lease the event carried.
        got: Lease,
        /// The run's live lease.
        live: Lease,
    },
    /// The run is not in a phase where this event can arrive (not asked for, or duplicated).
    #[error("{event} for {run} in phase {phase:?}: {}; ignored", refusal.reason())]
    UnexpectedForRun {
        /// The run named.
        run: RunId,
        /// The event's name.
        event: &'static str,
        /// The run's phase.
        phase: RunPhase,
        /// Why the phase machine refused it.
        refusal: Refusal,
    },
    /// The event names a publication that is not uploading.
    #[error("{event} for {publication}, which is not uploading; ignored")]
    UnexpectedForPublication {
        /// The publication named.
        publication: PublicationId,
        /// The event's name.
        event: &'static str,
    },
    /// The stream pair rejected a stream result that answers nothing outstanding.
    #[error("{event} answers no outstanding stream effect: {rejection}; ignored")]
    Stream {
        /// The event's name.
        event: &'static str,
        /// The pair's reason.
        rejection: stream_pair::Rejection,
    },
    /// A recovery event arrived that the lane did not ask for (wrong step or attempt).
    #[error("{event} (attempt {attempt}) arrived in state {state:?}; ignored")]
    UnexpectedRecovery {
        /// The event's name.
        event: &'static str,
        /// The attempt it named.
        attempt: u8,
        /// The lane's state.
        state: LaneState,
    },
}

/// A broken lane invariant, found by [`Lane::check_invariants`](crate::Lane::check_invariants).
/// Seeing one is a bug in the lane (or in a test that reached into it): report it with the
/// seed that reproduces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum InvariantViolation {
    /// The stream pair's own invariants are broken.
    #[error("lane invariant broken: stream pair: {0}")]
    Pair(stream_pair::InvariantViolation),
    /// Accepted items and outcomes do not add up: an outcome was lost or invented.
    #[error(
        "lane invariant broken: accepted {accepted} items but {delivered} delivered + {pending} pending"
    )]
    OutcomeCount {
        /// Items accepted.
        accepted: u64,
        /// Outcomes delivered.
        delivered: u64,
        /// Items without an outcome.
        pending: u64,
    },
    /// More outcomes queued than were ever delivered.
    #[error("lane invariant broken: more outcomes queued than delivered")]
    OutcomesOverDelivered,
    /// Queued outcomes are not in the lane's order (submission order, but for a run an
    /// earlier key placed ahead, L-2).
    #[error("lane invariant broken: outcomes out of the lane's order")]
    OutcomesOutOfOrder,
    /// Pending items are not in the lane's order, or one is behind a delivered outcome.
    #[error("lane invariant broken: items out of the lane's order, or behind a delivered outcome")]
    ItemsOutOfOrder,
    /// A finished item at the front of the FIFO was not delivered.
    #[error("lane invariant broken: a finished item at the front was not delivered")]
    UndeliveredFront,
    /// A slot is leased to a run that does not hold it.
    #[error("lane invariant broken: {slot} is leased to {run}, which does not hold it")]
    SlotHolderMismatch {
        /// The slot.
        slot: SlotId,
        /// The run the slot names.
        run: RunId,
    },
    /// A slot beyond the profile's slot count is in use.
    #[error("lane invariant broken: {slot} is beyond the profile and in use")]
    SlotBeyondProfile {
        /// The slot.
        slot: SlotId,
    },
    /// A slot in use carries a generation that was never minted, or one another slot carries.
    #[error("lane invariant broken: {slot} carries an unminted or shared generation")]
    SlotGeneration {
        /// The slot.
        slot: SlotId,
    },
    /// A live run's slot is not leased to it.
    #[error("lane invariant broken: {run} is live but its slot is not leased to it")]
    RunWithoutSlot {
        /// The run.
        run: RunId,
    },
    /// Held runs and reservations exceed the slot count.
    #[error("lane invariant broken: the lane holds more runs than slots")]
    OverCapacity,
    /// More publications wait than the bound allows.
    #[error("lane invariant broken: too many publications waiting")]
    TooManyPublications,
    /// The pair's submission FIFO differs from the runs on the pair.
    #[error("lane invariant broken: the pair's submissions differ from the runs on the pair")]
    PairSubmissionsDiffer,
    /// A run is on the pair without a submission.
    #[error("lane invariant broken: a run is on the pair without a submission")]
    RunOnPairWithoutSubmission,
    /// More runs on the pair than the launch depth.
    #[error("lane invariant broken: more runs on the pair than the launch depth")]
    PairOverDepth,
    /// A run launched before its predecessor.
    #[error("lane invariant broken: {run} launched before its predecessor")]
    LaunchedBeforePredecessor {
        /// The run.
        run: RunId,
    },
    /// A run launched behind an unfinished publication.
    #[error("lane invariant broken: {run} launched behind an unfinished publication")]
    LaunchedBehindPublication {
        /// The run.
        run: RunId,
    },
    /// A run launched alongside a diagnostics run.
    #[error("lane invariant broken: {run} launched alongside a diagnostics run")]
    LaunchedWithDiagnostics {
        /// The run.
        run: RunId,
    },
    /// An awaited run is not the oldest on the pair.
    #[error("lane invariant broken: {run} is awaited but is not the oldest on the pair")]
    AwaitedNotOldest {
        /// The run.
        run: RunId,
    },
    /// More than one run is awaited.
    #[error("lane invariant broken: more than one run awaited at once")]
    SeveralAwaited,
    /// A run launched after a publication runs on an AICore stream created before it.
    #[error(
        "lane invariant broken: {run} launched on the AICore stream made stale by {publication}"
    )]
    LaunchedOnStaleAicore {
        /// The run.
        run: RunId,
        /// The publication that made the stream stale.
        publication: PublicationId,
    },
    /// A pending effect names a run that is done.
    #[error("lane invariant broken: a pending {effect} names {run}, which is done")]
    EffectForDoneRun {
        /// The effect's name.
        effect: &'static str,
        /// The run.
        run: RunId,
    },
    /// A run is live while the device is being recovered or is lost.
    #[error("lane invariant broken: a run is live while the device is being recovered or lost")]
    LiveRunWhileRecovering,
    /// Suspect, recovering or lost without the poison or fault notice that caused it.
    #[error("lane invariant broken: suspect, recovering or lost without a poison or notice record")]
    RecoveringWithoutPoison,
    /// A prepare or launch was queued while the device is suspect (L-19).
    #[error(
        "lane invariant broken: {effect} queued while the device is suspect after a fault notice"
    )]
    StartWhileSuspect {
        /// The effect's name.
        effect: &'static str,
    },
    /// Closed (or releasing streams) with items pending.
    #[error("lane invariant broken: closed with items pending")]
    ClosedWithItems,
    /// Closed, and the streams the close report names as left are not the pair's live ones
    /// (a stream leaked silently, or a destroyed one is reported).
    #[error(
        "lane invariant broken: closed with the {role} stream {}, but the close report says {}",
        if *live { "live" } else { "gone" },
        if *live { "it was destroyed" } else { "it is left" }
    )]
    StreamsLeftMisreported {
        /// The stream.
        role: stream_pair::Role,
        /// Whether it is live.
        live: bool,
    },
    /// The pair refused to withdraw a run whose launch failed before reaching a stream.
    #[error("lane invariant broken: the pair refused to withdraw {run}: {error}")]
    WithdrawRefused {
        /// The run.
        run: RunId,
        /// The pair's refusal.
        error: stream_pair::WithdrawError,
    },
    /// An event reached the half of the event handling that is not its own (a run's event
    /// among the lane's, or the other way round): `Event::run_lease` and the two halves
    /// disagree. The event changed nothing.
    #[error("lane invariant broken: {event} was routed to the wrong half of the event handling")]
    EventMisrouted {
        /// The event's name.
        event: &'static str,
    },
    /// The pair refused a submission after answering `Ready`.
    #[error("lane invariant broken: the pair answered Ready but refused {run}: {error}")]
    SubmitRefused {
        /// The run.
        run: RunId,
        /// The pair's refusal.
        error: stream_pair::SubmitError,
    },
    /// The pair took a run's submission but does not hold both streams live.
    #[error("lane invariant broken: {run} launched, but the pair holds no live stream pair")]
    LaunchWithoutStreams {
        /// The run.
        run: RunId,
    },
    /// The pair refused a teardown round the lane found it ready for.
    #[error("lane invariant broken: the pair refused a teardown round: {rejection}")]
    DestroyRoundRefused {
        /// The pair's refusal.
        rejection: stream_pair::Rejection,
    },
    /// The completed run was not the front submission on the pair.
    #[error("lane invariant broken: {run} completed but its retirement was {retired:?}, not Kept")]
    RetiredOutOfOrder {
        /// The run.
        run: RunId,
        /// What the pair did.
        retired: stream_pair::Retired,
    },
    /// Runner work was handed out on a slot that already had work out (L-18: nothing
    /// overlaps on one slot).
    #[error("lane invariant broken: runner work for {run} handed out on a slot with work out")]
    RunnerWorkOverlap {
        /// The run the second piece of work is for.
        run: RunId,
    },
    /// Runner work is out for a run that is not in the phase that asked for it (a prepare
    /// out of `Preparing`, a finalise out of `Finalising`), or on a slot it does not hold, or
    /// for an abandoned run outside a recovery's `Quiesce` (L-18).
    #[error("lane invariant broken: runner work for {run} is out of its run's phase or slot")]
    RunnerWorkOutOfPhase {
        /// The run.
        run: RunId,
    },
    /// A run is preparing or prepared with as many runs submitted before it preparing or
    /// prepared ahead of it as the profile's prepare window (L-18; runs an earlier key placed
    /// ahead of it do not count, L-2).
    #[error(
        "lane invariant broken: {run} prepares with {runs} earlier runs preparing or prepared ahead, window {window}"
    )]
    PrepareWindowExceeded {
        /// The run.
        run: RunId,
        /// Runs submitted before it, preparing or prepared ahead of it.
        runs: usize,
        /// The profile's prepare window.
        window: u8,
    },
    /// A run submitted held and not activated reached the pair.
    #[error("lane invariant broken: {run} launched while held")]
    LaunchedWhileHeld {
        /// The run.
        run: RunId,
    },
    /// A run whose launch was declined launched again behind another run on the pair.
    #[error("lane invariant broken: {run}'s launch was declined, yet it is queued behind a run")]
    DeclinedLaunchQueued {
        /// The run.
        run: RunId,
    },
    /// With `FinaliseOrder::BeforeNextLaunch`, a run reached the pair before every run ahead
    /// of it had its verdict.
    #[error("lane invariant broken: {run} launched before every run ahead of it was finalised")]
    LaunchedBeforeFinalise {
        /// The run.
        run: RunId,
    },
    /// A publication uploads while runner work is out (L-18).
    #[error("lane invariant broken: an upload runs while runner work is out")]
    UploadWithRunnerWorkOut,
    /// A recovery step (drain, reset, probe) runs while runner work is out (L-18).
    #[error("lane invariant broken: a recovery step runs while runner work is out")]
    RecoveryWithRunnerWorkOut,
    /// Recovery waits in `Quiesce` with no runner work out: nothing would ever leave it.
    #[error("lane invariant broken: recovery quiesces with no runner work out")]
    QuiescingWithNothingOut,
    /// The run phase machine refused an input the lane itself decided.
    #[error("lane invariant broken: {run} in phase {phase:?} refused the lane's own {input:?}")]
    StepRefused {
        /// The run.
        run: RunId,
        /// Its phase.
        phase: RunPhase,
        /// The input the lane decided.
        input: RunInput,
    },
}
