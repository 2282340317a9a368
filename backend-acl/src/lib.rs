//! The lane's device calls over ACL: [`AclDevice`] implements `lane_driver::Device` with
//! ascend-cl-sys, so the same `lane_driver::Driver` loop that runs the simulator runs an NPU.
//!
//! **Owns:** opening a device ([`AclDevice::open`] with an [`AclConfig`]): loading the library
//! through ascend-cl-sys's search (a stub under `devlib/` is refused there), `aclInit` only
//! when asked, the probe (device count > 0, a device id in range, `aclrtGetSocName` picking
//! the profile: a2a3 for `Ascend910B*`/`Ascend910_93*`, a5 for `Ascend950*`, see
//! [`profile_for_soc`]), and the device op timeout (`aclrtSetOpExecuteTimeOutV2` from
//! `Profile::device_op_timeout_ns`, checked below the host completion wait, SPEC L-6, so a
//! hung kernel ends with its device code, 507014 or 507017, before the host gives up). Then
//! one `Device` method per ACL call; `aclGetRecentErrMsg` read after every failure and taken
//! by the driver through `Device::recent_error_message` (the waiter through its own), which
//! answers with it, so it reaches the outcome of the run or publication whose call failed.
//! Thread binding: the calling thread is bound (`aclrtSetDevice`) before its first call and
//! again after every force reset of its device id (by any lane of the process), tracked by a
//! thread-local binding (the device id and its reset count), so the device may move between
//! the lane's threads and keeps nothing per thread; a host worker thread (runner work off
//! the lane thread) binds itself through a [`WorkerBinding`], and so does the completion
//! waiter lane-service makes every blocking wait on
//! (`Device::completion_waiter`: `aclrtSynchronizeEventWithTimeout` and the recovery drain on
//! a thread of its own, bound again after every force reset). The copies on
//! the streams: pinned host memory (`aclrtMallocHost`) tracked as address -> size, so
//! `write_host`, `read_host` and the async copies touch only ranges inside one (100000
//! otherwise, nothing touched), and `aclrtStreamWaitEvent`.
//!
//! Handles: every stream, event and device allocation a device creates is recorded in one
//! process-wide table (issued.rs) with its device id, until it is destroyed, freed or killed
//! by a force reset of that device. Every call that hands one to ACL looks it up first: a
//! forged or stale one is refused with ACL's own code for it (107017, 107003 or 107000) and
//! a message, before any call, so safe code cannot turn a lane handle into undefined
//! behaviour. The pointer value stays the handle (`StreamHandle.0` is the `aclrtStream`), so
//! a runner still launches on it.
//!
//! Fault notices (L-19): each stream's id is taken with `aclrtStreamGetId` when it is
//! created, and `Device::notice_concerns` matches a notice against the live streams' ids
//! and those of the streams destroyed less than [`LATE_NOTICE_BOUND_NS`] ago; for that bound
//! after a force reset the ids of the streams it killed match nothing, even where a new
//! stream took the number (decision 0025). The library's own notice handler is installed
//! only when [`AclConfig::notice_monitor`] asks (see [`NoticeMonitor`]), and registered again
//! after every force reset. A library without a symbol the monitor needs opens all the same:
//! [`AclDevice::notice_monitor`] says why there is none (its `Display` is the message for the
//! embedding). [`Library::PathHiding`] opens a library as if it lacked chosen symbols, so
//! those paths are proven on the fake.
//!
//! **Invariant:** mechanism only: every call returns the raw code it got; lane-core decides
//! what it means. Recovery is exactly the driver's effects: bounded drain
//! (`aclrtSynchronizeDeviceWithTimeout`), `aclrtResetDeviceForce`, `aclrtSetDevice`, probe.
//! A plain `aclrtResetDevice` is never called (it is not even in the symbol table), so it
//! can never follow a force reset. Every handle dies with a reset: the driver forgets them,
//! never destroys them, and the device forgets its pinned allocations and refuses every
//! handle of that device the same way. `aclrtDestroyStream` is the healthy teardown (it waits for queued
//! work), `aclrtDestroyStreamForce` the replacement of a stuck or errored stream. The one
//! clock is the device's (a monotonic clock from its open): `Device::now`, which the notice
//! matching reads too. Never depends on backend-sim.
//!
//! **API boundary:** [`AclDevice`] (with [`AclDevice::acl`] and [`AclDevice::device_id`], so
//! the embedding runtime's `Runner` launches on the lane's streams: `StreamHandle.0` is the
//! `aclrtStream` pointer value, `EventHandle.0` the `aclrtEvent`, `DevicePtr.0` the device
//! address, `HostPtr.0` the pinned host address), [`AclDevice::worker_binding`] and
//! [`WorkerBinding`], [`AclConfig`], [`Library`], [`AclError`], [`profile_for_soc`],
//! [`StreamIds`] (the late-notice rule, pure, for any device that takes stream ids), and [`check`]
//! (`cargo xtask device-check`: the probe and the device-side calls that need no kernel, as
//! a report; docs/hardware.md). The runner is the embedding runtime's; this crate has none
//! (its tests use a private one over the fake's test-only kernels).
//!
//! Which destroy a stream gets is decided by the stream pair, not here: `Effect::DestroyStream`
//! carries a `DestroyMode`, and the driver calls [`Device::destroy_stream`] for a healthy one
//! and [`Device::destroy_stream_force`] for an AICore stream replaced after an `Unproven`
//! retirement.
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
