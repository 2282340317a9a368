//! The driver-level observer: traces and checks see every lane step the driver performs
//! here, never through the device (a real device sees only the calls made on it).

use lane_core::status_latch::AclCode;
use lane_core::{Effect, Event, EventError, Outcome, Timestamp};

/// A command given to the lane through the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// [`Driver::submit`](crate::Driver::submit).
    Submit,
    /// [`Driver::publish`](crate::Driver::publish).
    Publish,
    /// [`Driver::close`](crate::Driver::close).
    Close,
    /// [`LaneSteps::retry_teardown`](crate::LaneSteps::retry_teardown).
    RetryTeardown,
    /// [`LaneSteps::fault_notice`](crate::LaneSteps::fault_notice): a device fault notice
    /// that concerns the lane's device (L-19).
    FaultNotice,
    /// [`LaneSteps::device_reset`](crate::LaneSteps::device_reset): the runtime reset the
    /// device (L-24).
    DeviceReset,
    /// [`LaneSteps::activate`](crate::LaneSteps::activate): a held run may launch.
    Activate,
    /// [`LaneSteps::cancel`](crate::LaneSteps::cancel): an unlaunched item is cancelled.
    Cancel,
}

impl Command {
    /// `submit`, `publish`, `close`, `retry-teardown`, `fault-notice`, `device-reset`,
    /// `activate` or `cancel`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Submit => "submit",
            Self::Publish => "publish",
            Self::Close => "close",
            Self::RetryTeardown => "retry-teardown",
            Self::FaultNotice => "fault-notice",
            Self::DeviceReset => "device-reset",
            Self::Activate => "activate",
            Self::Cancel => "cancel",
        }
    }
}

/// A device call that gives a slot resource back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// `aclrtDestroyEvent` of a slot's completion event.
    DestroyEvent,
    /// `aclrtFree` of a slot's buffer.
    Free,
    /// `aclrtFreeHost` of a slot's pinned host buffer (copies on the streams).
    FreeHost,
}

/// One thing the driver did, reported to its [`Observer`] for traces and checks.
#[derive(Clone, Copy, Debug)]
pub enum Observation<'a> {
    /// A command was given to the lane.
    Command {
        /// When.
        now: Timestamp,
        /// Which.
        command: Command,
        /// The id it returned, or `None` if refused (or the command returns none: close).
        accepted: Option<u64>,
    },
    /// The lane asked for an effect; the driver is about to execute it.
    Effect {
        /// When.
        now: Timestamp,
        /// The effect.
        effect: &'a Effect,
    },
    /// The driver fed an event to the lane.
    Event {
        /// When.
        now: Timestamp,
        /// The event.
        event: &'a Event,
        /// Whether the lane accepted it.
        result: &'a Result<(), EventError>,
    },
    /// The awaited run's deadline passed before its completion.
    Timeout {
        /// When.
        now: Timestamp,
    },
    /// The lane delivered an outcome.
    Outcome {
        /// When.
        now: Timestamp,
        /// The outcome.
        outcome: &'a Outcome,
    },
    /// Giving a slot resource back failed. Nothing depends on it (the lane is closed, or
    /// the resource was never handed out), so the driver only reports it.
    ReleaseFailed {
        /// When.
        now: Timestamp,
        /// The call.
        release: Release,
        /// What it returned.
        code: AclCode,
    },
}

/// Sees every lane step the driver performs (traces, checks). Set with
/// [`Driver::with_observer`](crate::Driver::with_observer).
pub trait Observer {
    /// Called after each step, in the order the driver performed them.
    fn observe(&mut self, step: &Observation<'_>);
}

/// The observer that ignores every step (a driver's default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoObserver;

impl Observer for NoObserver {
    fn observe(&mut self, _step: &Observation<'_>) {}
}
