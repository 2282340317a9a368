//! Typed errors: refused commands and rejected events. Each message says what to do.

use thiserror::Error;

use crate::ids::{Lease, PublicationId, RunId, Tag};
use crate::outcome::Cause;
use crate::run::{Refusal, RunPhase};
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
    #[error(
        "the lane is recovering the device after {origin} poisoned it; publish again once recovery is confirmed (the reset wiped published code)"
    )]
    Poisoned {
        /// The run whose failure poisoned the device.
        origin: RunId,
    },
    /// The lane is lost.
    #[error(
        "the lane is lost after {origin} poisoned the device; reset the device outside the lane and create a new lane"
    )]
    Lost {
        /// The run whose failure poisoned the device.
        origin: RunId,
    },
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
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("lane invariant broken: {0}")]
pub struct InvariantViolation(pub String);
