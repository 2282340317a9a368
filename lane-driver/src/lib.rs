//! The one driver loop that executes lane-core effects through ACL-shaped traits.
//!
//! **Owns:** the [`Device`] trait (the lane's calls, one per ACL call of ascend-cl.md §5), the
//! [`Runner`] trait (the embedding runtime's work for a run), the [`Observer`] that traces and
//! checks see every lane step through, and the [`Driver`] that turns lane effects into those
//! calls: per-slot completion events and device buffers (created once per slot, re-recorded
//! per run, tracked because a never-recorded event waits as success), the launch order of
//! L-5, the status-header read of L-8, the bounded completion wait of L-6, and the recovery
//! sequence of SPEC §5.3.
//!
//! **Copies (L-5, L-13):** the profile's `CopyPath` picks how a slot is armed and read back.
//! `Sync`: one synchronous copy to the device before the AICore kernel (by the run's prepare
//! once the slot has its resources, else its launch: decision 0024) and one back after
//! completion. `OnStream`: per slot also a pinned host buffer and an "armed" event; the
//! launch enqueues the arm copy on the AICore stream, records "armed", makes the AICPU stream
//! wait for it (else the AICPU kernel could read the previous run's handshake), launches,
//! and enqueues the readback copy before the completion records, so a passed event proves it
//! landed. A failed readback enqueue fails the status read, not the launch; a readback that
//! never landed is read once synchronously.
//!
//! **Invariant:** the driver makes no decision: it executes effects in order and reports each
//! answer as the event that names it. The only clock read is [`Device::now`]; every wait is
//! bounded by `Lane::poll_deadline`.
//!
//! **Two parts:** [`LaneSteps`] (the lane, its observer and outcomes; no device) and the
//! [`Executor`] (the device, the runner and the slot resources: one effect in, one [`Answer`]
//! out; no lane). [`Driver`] runs both on the caller's thread; lane-service runs them with
//! the steps behind a lock. backend-sim implements `Device` and `Runner`; backend-acl
//! implements `Device` alone. They never depend on each other.
//!
//! **Error text:** one path. Whoever makes a call reads the device's text on its own thread
//! right after it fails (the `recent_error_message` methods) and answers with an [`Answer`];
//! each [`Report`] takes the text of the item its cause names.
//!
//! **Fault notices (L-19):** one process-wide [`NoticeRing`] ([`notices`]); each executor
//! reads it from its own cursor and hands the lane only what [`Device::notice_concerns`]
//! matches.
//!
//! **Threads (L-16):** the `Driver` is single-threaded and makes its blocking waits itself. A
//! multi-threaded embedding uses lane-service, which holds its lock only for [`LaneSteps`]
//! calls.

#![forbid(unsafe_code)]

/// The atomics the notice ring is written against (the loom model test puts loom's here).
mod atomic {
    pub(crate) use std::sync::atomic::{AtomicU64, Ordering, fence};
}

mod answer;
mod device;
pub mod dispatch;
mod driver;
mod executor;
mod notice;
mod notice_ring;
mod observer;
mod runner;
mod steps;
#[cfg(feature = "testkit")]
pub mod testkit;
mod waiter;

pub use answer::Answer;
pub use device::{
    Device, DevicePtr, EventHandle, HostPtr, LaunchContext, LaunchStage, PinnedCopies,
};
pub use driver::{
    Driver, DriverError, HANDSHAKE_BYTES, HANDSHAKE_OFFSET, HEADER_OFFSET, RECORD_OFFSET, Report,
    SLOT_BYTES, TIMING_BYTES, TIMING_OFFSET, Turn,
};
pub use executor::{Executor, Wait, next_epoch};
pub use notice::{notices, notices_if_made, report_device_fault};
pub use notice_ring::{NOTICE_CAPACITY, NoticeRead, NoticeRing, RawNotice};
pub use observer::{Command, NoObserver, Observation, Observer, Release};
pub use runner::{
    AicoreLaunch, Concurrency, HostWorker, PrepareError, RunArgs, Runner, is_host_work,
    run_host_work,
};
pub use steps::LaneSteps;
pub use waiter::{
    CompletionWaiter, DeviceWait, EVENT_WAIT_SLICE_NS, OnDevice, READBACK_BYTES, Reach, Readback,
    WAITER_GRACE_NS, run_device_wait, run_device_wait_as, wait_failed,
};
