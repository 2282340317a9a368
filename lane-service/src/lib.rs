//! A thread-safe lane service: one lane with its device and runner, driven from any thread
//! through a [`LaneHandle`] (SPEC L-16), either by threads of its own (a lane thread, a
//! completion waiter, host workers) or by its callers alone ([`Drive::Caller`], SPEC L-23).
//!
//! **Owns:** [`spawn`], the [`LaneHandle`] (`Send + Sync + Clone`), the lock and wake-up
//! protocol between the threads that use it (the private `mailbox` module), and the
//! service's errors. The lane's steps and the device work are lane-driver's
//! [`LaneSteps`](lane_driver::LaneSteps) and [`Executor`](lane_driver::Executor), the same
//! two parts the single-thread [`Driver`](lane_driver::Driver) runs.
//!
//! **Threading contract:**
//! - **Whoever has the event runs the steps** (issue 25, `docs/decisions/0021`): lane-driver's
//!   dispatch machine ([`Dispatch`](lane_driver::dispatch::Dispatch)) runs on the thread that
//!   brings an event, when no other thread does: the completion waiter once it has a run's
//!   completion, a host worker once it answered, the lane thread for a timer, a notice poll
//!   or a wake-up, and a bound submitter ([`ServiceConfig::submitters_bound`]; never for a
//!   recovery call). A command posted meanwhile is taken by the running thread before it
//!   lets go. So every [`Device`](lane_driver::Device) and [`Runner`](lane_driver::Runner)
//!   call is made one thread at a time; both must be `Send`, and the executor lives on the
//!   lane thread.
//! - **Where the caller drives** ([`Drive::Caller`], L-23) no thread starts; no lock and no
//!   claim is held across the caller's device wait, so other threads' commands run meanwhile.
//! - With host workers ([`spawn_with_workers`]) every prepare and finalise runs on a worker's
//!   own [`HostWorker`](lane_driver::HostWorker), made on its thread; a panicking worker
//!   loses the lane; the last drop joins the workers.
//! - The lane sits behind one mutex, never held across a device or runner call, so
//!   [`publish`](LaneHandle::publish), [`close`](LaneHandle::close),
//!   [`poll_outcome`](LaneHandle::poll_outcome) and (unless the submitter is bound)
//!   [`submit`](LaneHandle::submit) return without waiting for the device; only
//!   [`wait`](LaneHandle::wait) blocks, and only its caller.
//! - **No thread runs the steps across a blocking device wait** (L-16, L-18): the completion
//!   waiter makes every one on the device's
//!   [`CompletionWaiter`](lane_driver::CompletionWaiter), bounded by the run's deadline plus
//!   [`WAITER_GRACE_NS`](lane_driver::WAITER_GRACE_NS). So a run submitted while its
//!   predecessor executes is launched at once, queued behind it; an idle lane uses no CPU
//!   but its notice poll.
//! - Commands are given to the lane at the latest device clock reading.
//! - Each outcome is taken exactly once, by [`poll_outcome`](LaneHandle::poll_outcome) or
//!   [`wait`](LaneHandle::wait); [`ServiceConfig::on_outcome`] only sees it.
//! - Dropping the last handle closes the lane, lets launched runs finish, releases the slots'
//!   resources and joins the lane's threads; a completion waiter stuck past its bound
//!   (L-20) is left behind after about a second ([`Shutdown::left`]).
//! - A panic on any of the lane's threads, or a driver error, ends the lane: every waiter and
//!   later command gets [`ServiceError::Lost`] / [`WaitError::Lost`] with the cause, never a
//!   hang.
//!
//! **Why loom:** the protocol is small (one mutex, four condition variables), so loom's
//! exhaustive exploration finds a lost wake-up deterministically. The model test compiles
//! `mailbox.rs` itself against loom's primitives (`tests/model.rs`): what is checked ships.
//!
//! **Why a crate of its own:** lane-driver stays free of threads (its `Driver` is the
//! deterministic path of the simulator, the scenarios and the fuzz targets), and the
//! service's tests can use backend-sim, which itself depends on lane-driver.
//!
//! **API boundary:** the items below; lane-capi builds the C ABI on it.

#![forbid(unsafe_code)]

mod error;
mod mailbox;
#[cfg(test)]
mod mailbox_tests;
mod service;
mod sync;

pub use error::{LostCause, ServiceError, WaitError};
pub use lane_driver::Report;
pub use service::{
    DEFAULT_WORKERS, Drive, ItemId, LaneHandle, NOTICE_POLL_NS, OutcomeCallback, ServiceConfig,
    Shutdown, ThreadLeft, spawn, spawn_with_workers,
};
