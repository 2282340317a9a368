//! The service's errors: a command's refusal, a lost lane, a wait that ended without its
//! outcome.

use lane_core::{ControlError, DeviceResetError, PublishError, SubmitError};
use std::sync::Arc;
use thiserror::Error;

/// Why the lane thread is gone: the text of the panic or driver error that ended it. Shared
/// by every caller that sees it (cheap to clone).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct LostCause(pub Arc<str>);

impl LostCause {
    /// A cause with this text.
    #[must_use]
    pub fn new(text: impl Into<Arc<str>>) -> Self {
        Self(text.into())
    }
}

/// Why a command ([`LaneHandle::submit`](crate::LaneHandle::submit),
/// [`publish`](crate::LaneHandle::publish), [`close`](crate::LaneHandle::close)) or
/// [`spawn`](crate::spawn) failed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ServiceError {
    /// The lane refused the run (nothing was accepted).
    #[error(transparent)]
    Submit(#[from] SubmitError),
    /// The lane refused the publication (nothing was accepted).
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// The lane refused a run control ([`LaneHandle::activate`](crate::LaneHandle::activate),
    /// [`LaneHandle::cancel`](crate::LaneHandle::cancel)); nothing changed.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// The lane refused the runtime's report of a reset
    /// ([`LaneHandle::device_reset`](crate::LaneHandle::device_reset)): it awaits none.
    #[error(transparent)]
    DeviceReset(#[from] DeviceResetError),
    /// The `make` closure given to [`spawn`](crate::spawn) failed on the lane thread; no
    /// lane was created.
    #[error("the lane's device and runner could not be made: {0}")]
    Make(String),
    /// Host worker `index`'s `make_worker` (given to
    /// [`spawn_with_workers`](crate::spawn_with_workers)) failed or panicked on its thread; no
    /// lane was created.
    #[error("host worker {index} could not be made: {text}")]
    Worker {
        /// The worker's index.
        index: usize,
        /// The factory's error text.
        text: String,
    },
    /// The device gives no completion waiter (`Device::completion_waiter`), which a lane
    /// service needs so that its lane thread never blocks in a device wait; no lane was
    /// created.
    #[error(
        "the device gives no completion waiter ({0}): implement Device::completion_waiter, or run the lane on the single-thread lane_driver::Driver"
    )]
    Waiter(String),
    /// The lane thread (or a thread it needs) could not be started.
    #[error("the lane thread could not be started: {0}")]
    Thread(String),
    /// The lane thread is gone (a panic in the device, the runner or the lane, or a driver
    /// error); the lane accepts nothing more.
    #[error("the lane is lost: {0}")]
    Lost(LostCause),
    /// [`LaneHandle::shut_down`](crate::LaneHandle::shut_down) was called on one of the
    /// lane's own threads (from the outcome callback, or a host worker's runner call), where it
    /// would join itself; the shutdown is asked for all the same, and the last handle's drop
    /// joins the threads.
    #[error(
        "shut_down was called on the lane's own thread (the outcome callback or a host worker), which it would join; the shutdown goes on, call shut_down from another thread to wait for it"
    )]
    OwnThread,
}

/// Why [`LaneHandle::wait`](crate::LaneHandle::wait) returned without the item's outcome.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum WaitError {
    /// The timeout passed first; the outcome can still be waited for or polled.
    #[error("timed out waiting for item {item}; it is still pending: wait for it again, or poll")]
    TimedOut {
        /// The item's sequence number.
        item: u64,
    },
    /// The lane thread is gone before the item's outcome was delivered.
    #[error(
        "the lane is lost before item {item} got its outcome: {cause}; it takes nothing more: drop it and make a new lane"
    )]
    Lost {
        /// The item's sequence number.
        item: u64,
        /// Why the lane thread ended.
        cause: LostCause,
    },
    /// The lane never accepted an item with this id.
    #[error(
        "item {item} was never accepted by this lane; wait for an id that submit or publish returned"
    )]
    Unknown {
        /// The item's sequence number.
        item: u64,
    },
    /// The item's outcome was already taken (by a poll or another wait).
    #[error(
        "the outcome of item {item} was already taken (by a poll or another wait); each outcome is taken once"
    )]
    AlreadyTaken {
        /// The item's sequence number.
        item: u64,
    },
}
