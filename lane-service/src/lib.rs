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
//! - **Whoever has the event runs the steps** (issue 25, `docs/decisions/0021`). The lane's
//!   steps are lane-driver's dispatch machine ([`Dispatch`](lane_driver::dispatch::Dispatch),
//!   in its waiter or workers setting) over the [`LaneSteps`](lane_driver::LaneSteps) and the
//!   [`Executor`](lane_driver::Executor). The thread that brings an event runs them, when no
//!   other thread does: the completion waiter once it has a run's completion (it launches
//!   the next run itself), a host worker once it answered, the lane thread for a timer, a
//!   notice poll or a wake-up, and with [`ServiceConfig::submitters_bound`] the submitting
//!   thread (never for a recovery call: a force reset, a probe or a recovery hook the machine
//!   keeps for the lane's own threads). A command posted while another thread runs the steps
//!   is taken by that thread before it lets go (a claim in the mailbox). So every
//!   [`Device`](lane_driver::Device) and [`Runner`](lane_driver::Runner) call is made on one
//!   of the lane's threads (or a bound submitter), one thread at a time; the device and the
//!   runner must be `Send`, and the executor is made, kept and dropped on the lane thread.
//! - **Where the caller drives** ([`Drive::Caller`], L-23) no thread starts: [`spawn`] makes
//!   the device and the runner on the calling thread, every handle call runs the steps on its
//!   caller (the same claim), [`wait`](LaneHandle::wait) takes the offered device wait and
//!   makes it itself, capped at its timeout (an expired wait leaves the run live), and
//!   [`poll_outcome`](LaneHandle::poll_outcome) looks at the awaited run without waiting. No
//!   lock and no claim is held across that wait, so a command from another thread runs the
//!   steps meanwhile (L-16, L-18); a caller that finds another inside the wait sleeps until
//!   an outcome, the wait's end or its timeout. A deadline that passes while no call is made is
//!   acted on at the next call.
//! - With host workers ([`spawn_with_workers`], when the runner's
//!   [`concurrency`](lane_driver::Runner::concurrency) allows it) every prepare and finalise
//!   runs on a worker's own [`HostWorker`](lane_driver::HostWorker), made on that worker's
//!   thread (so it binds the device there); the queues are allocated once. A panicking
//!   worker loses the lane like a panic on the lane thread; the last drop joins the workers.
//! - The lane sits behind one mutex, taken for a lane step (a command, polling an effect,
//!   feeding an event) or a queue operation, and never held across a device or runner call.
//!   So [`publish`](LaneHandle::publish), [`close`](LaneHandle::close) and
//!   [`poll_outcome`](LaneHandle::poll_outcome) return without waiting for the device, from
//!   any thread, and so does [`submit`](LaneHandle::submit) unless the submitter is bound
//!   (then it may prepare and launch its run before it returns, never waiting on a device
//!   wait); only [`wait`](LaneHandle::wait) blocks, and only its caller.
//! - **No thread runs the steps across a blocking device wait** (L-16, L-18). Every blocking
//!   wait of the lane (each launched run's completion, bounded by its deadline, and the
//!   recovery drain) is made by the completion waiter, on the device's
//!   [`CompletionWaiter`](lane_driver::CompletionWaiter) (on ACL a thread bound to the lane's
//!   device like a host worker, bound again after a force reset), outside the claim. The
//!   machine's timer table bounds the wait out (the run's deadline plus
//!   [`WAITER_GRACE_NS`](lane_driver::WAITER_GRACE_NS), past which the lane answers the wait
//!   itself: a host wait timeout) and the notice poll. So a run submitted while its
//!   predecessor executes is prepared and launched at once, queued behind it on the pair;
//!   an idle lane uses no CPU but its notice poll.
//! - Commands are given to the lane at the latest reading of the device clock by the thread
//!   that ran the steps last.
//! - Each outcome is taken exactly once: by [`poll_outcome`](LaneHandle::poll_outcome), in
//!   sequence order, or by [`wait`](LaneHandle::wait) for that item. The optional
//!   [`ServiceConfig::on_outcome`] callback is called with every outcome, in order, by the
//!   thread that delivered it, before that thread lets go of the claim and with no lock held:
//!   never beside a device or runner call of the lane (a force reset included); it sees
//!   outcomes, it does not take them.
//! - Dropping the last handle closes the lane, lets launched runs finish (bounded by their
//!   deadlines), releases the slots' resources and joins the lane thread, the host workers
//!   and the completion waiter (where the caller drives, runs the steps to their end on the
//!   dropping thread). A completion waiter the lane was lost to, stuck in a device call past
//!   its bound (L-20), is waited for about a second and then left behind
//!   ([`Shutdown::left`]).
//! - A panic on the lane thread (in the device, the runner, the lane or the callback), on a
//!   host worker or on the completion waiter, or a driver error, ends the lane: every waiter
//!   and every later command gets [`ServiceError::Lost`] / [`WaitError::Lost`] with the
//!   cause, never a hang. The last drop joins every thread; the waiter's last device call is
//!   bounded by the run's deadline.
//!
//! **Why loom:** the protocol is small (one mutex, four condition variables, a handful of
//! flags and slots), so loom's exhaustive exploration of its interleavings (bounded preemptions) is
//! cheap and a lost wake-up is found deterministically on every run, not by chance as with
//! a randomised scheduler (shuttle). The model test compiles `mailbox.rs` itself against
//! loom's primitives (see `tests/model.rs`), so what is checked is what ships.
//!
//! **Why a crate of its own:** lane-driver stays free of threads (its `Driver` is the
//! deterministic path of the simulator, the scenarios and the fuzz targets), and the
//! service's tests can use backend-sim, which itself depends on lane-driver.
//!
//! **API boundary:** [`spawn`], [`spawn_with_workers`], [`ServiceConfig`], [`Drive`],
//! [`LaneHandle`], [`Shutdown`], [`ThreadLeft`], [`ItemId`], [`ServiceError`], [`WaitError`],
//! [`LostCause`], and [`Report`] (an outcome with the device's text about the failed call
//! behind it). lane-capi builds the C ABI on it.

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
