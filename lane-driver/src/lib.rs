//! The one driver loop that executes lane-core effects through ACL-shaped traits.
//!
//! **Owns:** the [`Device`] trait (the lane's calls: one method per ACL call of ascend-cl.md
//! §5), the [`Runner`] trait (the embedding runtime's work for a run: prepare, the two kernel
//! launches, finalise, upload), the [`Observer`] that traces and checks see every lane step
//! through, and the [`Driver`] that turns lane effects into those calls: per-slot completion
//! events and device buffers (created once per slot, re-recorded per run, tracked because a
//! never-recorded event waits as success), the launch order of L-5, the status-header read of L-8, the bounded completion wait of L-6, and the
//! recovery sequence of §5.3.
//!
//! **Invariant:** the driver makes no decision. Every choice (what to launch, when, what a
//! failure means) is the lane's; the driver executes effects in order and reports each
//! answer as the event that names it. The only clock read is [`Device::now`]; every wait is
//! bounded by `Lane::poll_deadline`, the lane's one record of the awaited run's deadline.
//!
//! **API boundary:** [`Device`], [`Runner`], [`Observer`], [`Driver`], [`Observation`],
//! [`Report`] (an outcome with the device's text about the failed call behind it, taken with
//! [`Device::recent_error_message`] after each failure event; allocated only on failure). A
//! stream destroy is `Device::destroy_stream` or `Device::destroy_stream_force` as the pair's
//! `DestroyMode` says.
//! backend-sim implements `Device` and `Runner`; backend-acl implements `Device` alone (the
//! embedding runtime supplies the `Runner`). They never depend on each other.
//!
//! **Threads (L-16):** the driver owns its lane; a blocking wait happens in
//! [`Driver::turn`] with no lane borrowed. A multi-threaded runner puts the driver behind
//! its own lock and polls outcomes from its queue.

#![forbid(unsafe_code)]

mod device;
mod driver;
mod observer;
mod runner;

pub use device::{Device, DevicePtr, EventHandle};
pub use driver::{
    Driver, DriverError, HANDSHAKE_BYTES, HANDSHAKE_OFFSET, HEADER_OFFSET, Report, SLOT_BYTES,
    TIMING_BYTES, TIMING_OFFSET, Turn, event_role,
};
pub use observer::{Command, NoObserver, Observation, Observer, Release};
pub use runner::{PrepareError, RunArgs, Runner};
