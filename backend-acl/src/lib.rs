//! The lane's device calls over ACL: [`AclDevice`] implements `lane_driver::Device` with
//! ascend-cl-sys, so the same `lane_driver::Driver` loop that runs the simulator runs an NPU.
//!
//! **Owns:** opening a device ([`AclDevice::open`] with an [`AclConfig`]): loading the library
//! through ascend-cl-sys's search (a stub under `devlib/` is refused), `aclInit` only when
//! asked, the probe (device count, device id, `aclrtGetSocName` picking the profile:
//! [`profile_for_soc`]), and the device op timeout (`aclrtSetOpExecuteTimeOutV2`, checked
//! below the host completion wait, SPEC L-6, so a hung kernel ends with its device code
//! before the host gives up). Then one `Device` method per ACL call, with
//! `aclGetRecentErrMsg` read after every failure so it reaches the failed item's outcome.
//! Thread binding: a thread is bound (`aclrtSetDevice`) before its first call and again after
//! every force reset of its device id by any lane (a thread-local device id and reset count),
//! so the device may move between the lane's threads; host workers and the completion waiter
//! bind themselves through a [`WorkerBinding`]. Pinned host memory is tracked as address ->
//! size, so `write_host`, `read_host` and the async copies touch only ranges inside one
//! (100000 otherwise).
//!
//! Handles: every stream, event and device allocation is recorded in one process-wide table
//! (issued.rs) until it is destroyed, freed or killed by a force reset. Every call that hands
//! one to ACL looks it up first: a forged or stale one is refused with ACL's own code (107017,
//! 107003 or 107000) before any call, so safe code cannot turn a lane handle into undefined
//! behaviour. The pointer value stays the handle (`StreamHandle.0` is the `aclrtStream`).
//!
//! Fault notices (L-19): each stream's id is taken with `aclrtStreamGetId` at creation, and
//! `Device::notice_concerns` matches a notice against the live streams' ids and those
//! destroyed less than [`LATE_NOTICE_BOUND_NS`] ago; the ids a force reset killed match
//! nothing (decision 0025). The notice handler is installed only when
//! [`AclConfig::notice_monitor`] asks, and registered again after every force reset; a
//! library without its symbols opens all the same ([`AclDevice::notice_monitor`] says why).
//! [`Library::PathHiding`] hides chosen symbols, so those paths are proven on the fake.
//!
//! **Invariant:** mechanism only: every call returns the raw code it got; lane-core decides
//! what it means. Recovery is exactly the driver's effects: bounded drain, force reset, bind,
//! probe. A plain `aclrtResetDevice` is never called (it is not even in the symbol table).
//! Every handle dies with a reset: the driver forgets them, never destroys them, and the
//! device refuses them. Which destroy a stream gets is the pair's `DestroyMode`
//! ([`Device::destroy_stream`] when healthy, [`Device::destroy_stream_force`] for a stuck or
//! errored one). The one clock is `Device::now`, monotonic from the open. Never depends on
//! backend-sim.
//!
//! **API boundary:** [`AclDevice`] (with [`AclDevice::acl`] and [`AclDevice::device_id`], so
//! the embedding runtime's `Runner` launches on the lane's streams), [`WorkerBinding`],
//! [`AclConfig`], [`Library`], [`AclError`], [`profile_for_soc`], [`StreamIds`] (the pure
//! late-notice rule), and [`check`] (`cargo xtask device-check`, docs/hardware.md). The runner
//! is the embedding runtime's; this crate has none.
//!
//! [`Device::destroy_stream`]: lane_driver::Device::destroy_stream
//! [`Device::destroy_stream_force`]: lane_driver::Device::destroy_stream_force

pub mod check;
mod device;
mod error;
mod issued;
mod notice;
mod soc;
mod stream_ids;
mod waiter;

pub use device::{AclConfig, AclDevice, Library, WorkerBinding, op_timeout_in_force_us};
pub use error::AclError;
pub use notice::NoticeMonitor;
pub use soc::profile_for_soc;
pub use stream_ids::{LATE_NOTICE_BOUND_NS, RECENT_STREAM_IDS, StreamIds};
