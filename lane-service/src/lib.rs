//! A thread-safe lane service: one lane on a dedicated lane thread, with its device and
//! runner, driven from any thread through a [`LaneHandle`] (SPEC L-16).
//!
//! **Owns:** [`spawn`] (the lane thread), the [`LaneHandle`] (`Send + Sync + Clone`), the
//! lock and wake-up protocol between them (the private `mailbox` module), and the service's
//! errors. The lane's steps and the device work are lane-driver's
//! [`LaneSteps`](lane_driver::LaneSteps) and [`Executor`](lane_driver::Executor), the same
//! two parts the single-thread [`Driver`](lane_driver::Driver) runs.
//!
//! **Threading contract:**
//! - Every [`Device`](lane_driver::Device) and [`Runner`](lane_driver::Runner) call, from the
//!   `make` closure given to [`spawn`] to the last release, happens on the lane thread. The
//!   device and the runner need not be `Send`; only `make` is.
//! - Except with host workers ([`spawn_with_workers`], when the runner's
//!   [`concurrency`](lane_driver::Runner::concurrency) allows it): then every prepare and
//!   finalise runs on a worker's own [`HostWorker`](lane_driver::HostWorker), made on that
//!   worker's thread (so it binds the device there), and the lane thread makes only the
//!   launches, records, waits, status reads, stream calls and recovery. Answers come back
//!   through the mailbox and wake the lane thread; the queues are allocated once. A panicking
//!   worker loses the lane like a panic on the lane thread; the last drop joins the workers.
//! - The lane sits behind one mutex, taken for a lane step (a command, polling an effect,
//!   feeding an event) or a queue operation, and never held across a device or runner call.
//!   So [`submit`](LaneHandle::submit), [`publish`](LaneHandle::publish),
//!   [`close`](LaneHandle::close) and [`poll_outcome`](LaneHandle::poll_outcome) return
//!   without waiting for the device, from any thread; only [`wait`](LaneHandle::wait)
//!   blocks, and only its caller.
//! - The lane thread waits for a run's completion in slices of at most
//!   [`ServiceConfig::wait_slice`] (5 ms by default), bounded overall by the run's deadline
//!   (`Lane::poll_deadline`). Between slices it executes the effects commands left (e.g.
//!   preparing the next run), so such work starts at most one slice late. When it has
//!   nothing to do it sleeps until a command arrives.
//! - Commands are given to the lane at the lane thread's latest reading of the device clock
//!   (the clock is read on the lane thread only).
//! - Each outcome is taken exactly once: by [`poll_outcome`](LaneHandle::poll_outcome), in
//!   sequence order, or by [`wait`](LaneHandle::wait) for that item. The optional
//!   [`ServiceConfig::on_outcome`] callback is called on the lane thread with every outcome,
//!   in order, after it is queued and with no lock held; it sees outcomes, it does not take
//!   them.
//! - Dropping the last handle closes the lane, lets launched runs finish (bounded by their
//!   deadlines), releases the slots' resources and joins the lane thread.
//! - A panic on the lane thread (in the device, the runner, the lane or the callback) or a
//!   driver error ends the lane: every waiter and every later command gets
//!   [`ServiceError::Lost`] / [`WaitError::Lost`] with the cause, never a hang.
//!
//! **Why loom:** the protocol is small (one mutex, two condition variables, a handful of
//! flags), so loom's exhaustive exploration of its interleavings (bounded preemptions) is
//! cheap and a lost wake-up is found deterministically on every run, not by chance as with
//! a randomised scheduler (shuttle). The model test compiles `mailbox.rs` itself against
//! loom's primitives (see `tests/model.rs`), so what is checked is what ships.
//!
//! **Why a crate of its own:** lane-driver stays free of threads (its `Driver` is the
//! deterministic path of the simulator, the scenarios and the fuzz targets), and the
//! service's tests can use backend-sim, which itself depends on lane-driver.
//!
//! **API boundary:** [`spawn`], [`spawn_with_workers`], [`ServiceConfig`], [`LaneHandle`], [`ItemId`],
//! [`ServiceError`], [`WaitError`], [`LostCause`], and [`Report`] (an outcome with the
//! device's text about the failed call behind it). lane-capi builds the C ABI on it.

#![forbid(unsafe_code)]

mod error;
mod mailbox;
mod service;
mod sync;

pub use error::{LostCause, ServiceError, WaitError};
pub use lane_driver::Report;
pub use service::{
    DEFAULT_WAIT_SLICE, DEFAULT_WORKERS, ItemId, LaneHandle, OutcomeCallback, ServiceConfig, spawn,
    spawn_with_workers,
};
