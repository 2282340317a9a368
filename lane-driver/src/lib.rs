//! The one driver loop that executes lane-core effects through ACL-shaped traits.
//!
//! **Owns:** the [`Device`] trait (the lane's calls: one method per ACL call of ascend-cl.md
//! §5), the [`Runner`] trait (the embedding runtime's work for a run: prepare, the two kernel
//! launches, finalise, upload), the [`Observer`] that traces and checks see every lane step
//! through, and the [`Driver`] that turns lane effects into those calls: per-slot completion
//! events and device buffers (created once per slot, re-recorded per run, tracked because a
//! never-recorded event waits as success), the launch order of L-5, the status-header read of L-8, the bounded completion wait of L-6, and the
//! recovery sequence of SPEC §5.3.
//!
//! **Copies (L-5, L-13):** the profile's `CopyPath` picks how a run's slot is armed and
//! how the status read reads it back. `Sync`: one synchronous host-to-device copy before the
//! AICore kernel (made by the run's prepare once the slot has its resources, else by its
//! launch: decision 0024), one synchronous device-to-host copy after completion. `OnStream`: per slot
//! also a pinned host buffer and an "armed" event; the launch fills the pinned readback with
//! `0xFF`, enqueues the arm copy on the AICore stream, records "armed" there, makes the AICPU
//! stream wait for it, launches AICore then AICPU, enqueues the readback copy on the AICPU
//! stream, then records the two completion events. The arm and the AICPU kernel are on
//! different streams, so without the wait the AICPU kernel could read the previous run's
//! handshake before the arm lands; the readback sits before the completion record, so a
//! passed event proves it landed. A failed readback enqueue fails the status read (its SPEC
//! §5.3 stage), not the launch; a readback that never landed (a sticky fault failed its
//! task) is read once synchronously, so the device answers with the fault as on `Sync`.
//!
//! **Invariant:** the driver makes no decision. Every choice (what to launch, when, what a
//! failure means) is the lane's; the driver executes effects in order and reports each
//! answer as the event that names it. The only clock read is [`Device::now`]; every wait is
//! bounded by `Lane::poll_deadline`, the lane's one record of the awaited run's deadline.
//!
//! **Two parts:** the loop is [`LaneSteps`] (the lane, its observer and its outcomes: one
//! lane step per call, no device) and the [`Executor`] (the device, the runner and the slot
//! resources: one effect in, one [`Answer`] out, no lane). [`Driver`] runs both on the
//! caller's thread; lane-service runs the same two on a lane thread with the steps behind a
//! lock.
//!
//! **API boundary:** [`Device`], [`Runner`], [`Observer`], [`Driver`], [`LaneSteps`],
//! [`Executor`], [`Wait`], [`Answer`], [`Observation`], [`Report`] (an outcome with the
//! device's text about the failed call behind it; allocated only on failure). A stream
//! destroy is `Device::destroy_stream` or `Device::destroy_stream_force` as the pair's
//! `DestroyMode` says.
//! backend-sim implements `Device` and `Runner`; backend-acl implements `Device` alone (the
//! embedding runtime supplies the `Runner`). They never depend on each other.
//!
//! **Error text:** one path. Whoever makes a call reads the device's text about it on its
//! own thread right after it fails ([`Device::recent_error_message`],
//! [`Runner::recent_error_message`], [`CompletionWaiter::recent_error_message`],
//! [`HostWorker::recent_error_message`]) and
//! answers with an [`Answer`]: the event and that text. [`LaneSteps::feed`] holds the text
//! for the item whose failure it reports, and each [`Report`] takes the text of the item its
//! cause names (a poison's origin, for the items it takes down).
//!
//! **Fault notices (L-19):** one process-wide [`NoticeRing`] ([`notices`]), written by
//! whoever holds the driver's callback slot (or [`report_device_fault`]); each executor reads
//! it from its own cursor and hands the lane only what [`Device::notice_concerns`] matches.
//!
//! **Threads (L-16):** the `Driver` is single-threaded: it owns its lane and makes its
//! blocking waits itself, so a `Driver` behind a mutex blocks every other caller for the
//! whole wait. A multi-threaded embedding uses lane-service, which holds its lock only for
//! [`LaneSteps`] calls and makes every [`Executor`] call with it released.

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
    SLOT_BYTES, TIMING_BYTES, TIMING_OFFSET, Turn, event_role,
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
