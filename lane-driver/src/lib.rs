//! The one driver loop that executes lane-core effects through an ACL-shaped backend trait.
//!
//! **Owns:** the [`Backend`] trait (one method per ACL call of ascend-cl.md §5, plus the
//! runner's prepare, finalise and upload) and the [`Driver`] that turns lane effects into
//! those calls: per-slot completion events and device buffers (created once per slot,
//! re-recorded per run, tracked because a never-recorded event waits as success), the launch
//! order of L-5, the status-header read of L-8, the bounded completion wait of L-6, and the
//! recovery sequence of §5.3.
//!
//! **Invariant:** the driver makes no decision. Every choice (what to launch, when, what a
//! failure means) is the lane's; the driver executes effects in order and reports each
//! answer as the event that names it. The only clock read is [`Backend::now`].
//!
//! **API boundary:** [`Backend`], [`Driver`], [`Observation`]. backend-sim and backend-acl
//! implement `Backend` and never depend on each other.
//!
//! **Threads (L-16):** the driver owns its lane; a blocking wait happens in
//! [`Driver::turn`] with no lane borrowed. A multi-threaded runner puts the driver behind
//! its own lock and polls outcomes from its queue.

#![forbid(unsafe_code)]

mod backend;
mod driver;

pub use backend::{Backend, DevicePtr, EventHandle, EventStatus, PrepareError, RunArgs};
pub use driver::{
    Driver, DriverError, HANDSHAKE_BYTES, HANDSHAKE_OFFSET, HEADER_OFFSET, Observation, SLOT_BYTES,
    TIMING_BYTES, TIMING_OFFSET, Turn, event_role,
};
