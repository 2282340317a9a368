//! The C types of the ABI: everything `include/run_lane.h` declares, `#[repr(C)]`.
//!
//! Inputs written by C (the config, the submit request) carry their enums as `uint32_t` and
//! are validated here, because an out-of-range value in a Rust enum would be undefined
//! behaviour; outputs (status codes, outcomes) use the enums directly.

/// The ABI version this library implements. A config whose `abi_version` differs is refused
/// with `RUN_LANE_STATUS_ABI_MISMATCH`, so a stale header is caught at the first call. Up to
/// 12 it was bumped on any change to a struct's layout or a function's signature; from 13 on,
/// only on an incompatible change (a struct grows at its end without a bump: `size`). 3: `RunLaneCloseReport`
/// reports the streams the teardown left (`streams_left`, their codes, `teardown_line`), and
/// `run_lane_destroy_with_report` returns the final report. 7: `RunLaneConfig` grew
/// `check_invariants`, off by default. 8: who recovers (`RunLaneConfig::recovery`), the
/// runner's recovery hooks (`on_poison`, `before_reset`, `after_reset`),
/// `run_lane_device_reset`, `RUN_LANE_STATUS_UNUSABLE` and `RUN_LANE_STATE_UNUSABLE`. 9: a
/// device the runtime supplies (L-22): `RUN_LANE_BACKEND_DEVICE_OPS` and `RunLaneDeviceOps`,
/// and `RunLaneConfig` grew `device_ops` at its end. 10: `RunLaneConfig` grew `drive` (the
/// caller may drive the lane, with no thread of its own, L-23), `RunLaneCloseReport` grew
/// `threads_left`, and `on_outcome` runs on whichever thread runs the lane's steps. 11: run
/// controls (issue 45): `RunLaneSubmit` grew an ordering key, a hold, the runtime's epoch and
/// a per-submit `user`; `RunLaneRunInfo` grew `user`, `RunLaneRunArgs` `queued`,
/// `RunLaneOutcome` `run_user`, `declines` and the key; `RunLaneRunner` grew `on_launched` and
/// `finalise_verdict`, `RunLaneConfig` `finalise_before_launch`; `launch_aicore` may return
/// `RUN_LANE_LAUNCH_DECLINED`; `run_lane_activate`, `run_lane_cancel`, `run_lane_run_state` and
/// `RUN_LANE_STATUS_STARTED` are new.
/// 12: code spaces and layouts: the lane's sentinels left the runtime's band
/// (`RUN_LANE_PREPARE_INCOMPATIBLE` is -1002, was -3; `RUN_LANE_FINALISE_VALIDATION_FAILED` is
/// -1101, was -1), a callback's negated latch code (-1..-999) is that latched failure,
/// `RunLaneConfig` grew `header_layout` at its end (`RunLaneHeaderLayout`), and
/// `launch_depth` goes up to the slot count (it stopped at two).
/// 13: a wire that stays put: every struct the caller passes in or gets filled starts with
/// `size` (the library reads and writes only that many bytes, so a struct grows at its end
/// without a bump), `RunLaneRunner` ends with reserved entries, `RunLaneVerdict` 0 is `NONE`
/// (a zeroed outcome never reads as `OK`), and `RunLaneCloseReport` counts the outcomes never
/// taken (`untaken`, `untaken_ids`). From 13 on the major changes only on an incompatible
/// change (docs/embedding.md, "Sizes and compatibility").
pub const RUN_LANE_ABI_VERSION: u32 = 13;

/// How many ids of outcomes never taken `RunLaneCloseReport::untaken_ids` holds (ABI 13).
pub const RUN_LANE_UNTAKEN_IDS: usize = 8;

/// How many reserved entries end `RunLaneRunner` (ABI 13), for callbacks added later.
pub const RUN_LANE_RUNNER_RESERVED: usize = 4;

/// The largest `size` the library accepts in any struct (ABI 13): a bigger one is not a
/// size (an unset field holding garbage, most likely) and is refused.
pub const RUN_LANE_MAX_STRUCT_SIZE: u32 = 65_536;

/// What a `prepare` callback returns when the run cannot be prepared while its predecessor
/// runs: nothing was touched, and the lane prepares it again once the predecessor has its
/// outcome (ABI 12: -1002; it was -3). The value is the peer runtime's own sentinel
/// (`PTO_RUNTIME_ERR_BASE - 2`), so a runtime returns its own value unchanged; it lies outside
/// -1..-999, the runtime's latch codes negated, so a prepare that latched
/// `FLOW_CONTROL_DEADLOCK` and returns -3 fails its run instead of being retried forever.
pub const RUN_LANE_PREPARE_INCOMPATIBLE: i32 = -1002;

/// What a `finalise` callback returns when host-side validation of the copied-back outputs
/// failed (a run-only failure: the device is fine; ABI 12: -1101, it was -1). Outside -1..-999
/// (the runtime's latch codes negated: -1 is `SCOPE_DEADLOCK`, the runtime's generic failure)
/// and away from the peer runtime's own sentinels next to -1000, so no code of the runtime's
/// reads as a validation failure.
pub const RUN_LANE_FINALISE_VALIDATION_FAILED: i32 = -1101;

/// What `launch_aicore` returns to decline a launch queued behind a run (ABI 11;
/// `RunLaneRunArgs::queued`): nothing was enqueued, and the run launches again once the run
/// ahead retired and the pair is empty (not a failure; the outcome's `declines` counts it). A
/// launch that is not queued cannot wait for anything: declining it fails the run (AICore
/// launch, not started, 207000). Chosen outside ACL's codes (positive), the runtime's negated
/// latch codes (-1 to -104) and its own error base (-1000 to -1999).
pub const RUN_LANE_LAUNCH_DECLINED: i32 = -1_000_001;

/// The most host workers a config may ask for (`RunLaneConfig::workers`): one job per slot
/// is the most a lane has out, so more would only sleep.
pub const RUN_LANE_MAX_WORKERS: u32 = 8;

/// A simulated run's device time when `RunLaneConfig::sim_run_ns` is 0: 1 ms (virtual).
pub const RUN_LANE_SIM_DEFAULT_RUN_NS: u64 = 1_000_000;

/// Bytes of `RunLaneOutcome::code_name`, NUL included.
pub const RUN_LANE_NAME_BYTES: usize = 64;
/// Bytes of `RunLaneOutcome::stage_name`, NUL included.
pub const RUN_LANE_STAGE_BYTES: usize = 32;
/// Bytes of `RunLaneOutcome::hint`, NUL included.
pub const RUN_LANE_HINT_BYTES: usize = 512;
/// Bytes of `RunLaneOutcome::failure_line`, `RunLaneCloseReport::poison_line` and
/// `RunLaneCloseReport::teardown_line`, NUL included. A longer line is cut at a character
/// boundary.
pub const RUN_LANE_LINE_BYTES: usize = 1024;

/// What every `run_lane_*` function returns. Anything but `OK` (and `EMPTY` from
/// `run_lane_poll`) leaves a message for `run_lane_last_error` on the calling thread that says
/// what to do; `OK` and `EMPTY` clear it to "".
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneStatus {
    /// Done.
    Ok = 0,
    /// `run_lane_poll`: no outcome is ready yet (not an error).
    Empty = 1,
    /// A required pointer argument was NULL.
    NullArgument = 2,
    /// The handle is NULL, destroyed, or was never returned by `run_lane_create`.
    InvalidHandle = 3,
    /// The config was refused (the message says which field and why).
    InvalidConfig = 4,
    /// The config's `abi_version` is not this library's (`RUN_LANE_ABI_VERSION`).
    AbiMismatch = 5,
    /// The backend could not be opened (no usable libascendcl, no device, a bad device id,
    /// an unknown SoC for a probe); the message says which and what to do.
    BackendUnavailable = 6,
    /// Submit refused: every slot holds a run without an outcome yet; submit again once one
    /// has its outcome (wait for the oldest).
    Full = 7,
    /// Submit or publish refused: the lane is closing or closed.
    Closed = 8,
    /// Submit or publish refused: the lane is recovering the device after a poison; submit
    /// again once an outcome arrives or a little later.
    Recovering = 9,
    /// The lane is lost: the device could not be recovered, or the lane thread died (the
    /// message names the cause). Only `run_lane_destroy` is useful now.
    Lost = 10,
    /// Refused for another reason (the message says why), e.g. a duplicate live tag.
    Refused = 11,
    /// `run_lane_wait`: the timeout passed before the item's outcome.
    TimedOut = 12,
    /// `run_lane_wait`: no accepted item has that id.
    UnknownItem = 13,
    /// `run_lane_wait`: the item's outcome was already taken (by a poll or another wait).
    AlreadyTaken = 14,
    /// A call that blocks (`run_lane_wait`, `run_lane_destroy`, `run_lane_create`) was made
    /// from a runner callback, of this lane or another: it would stall the callback's lane (on
    /// its own lane wait for itself). Make it from another thread.
    WrongThread = 15,
    /// A panic inside the library was caught at the boundary; the message has it.
    Panic = 16,
    /// Submit or publish refused (ABI 5): a device fault notice named one of this lane's
    /// streams, so the device is suspect; the lane recovers it once its launched runs have
    /// their verdicts. Submit again once an outcome arrives or a little later.
    Suspect = 17,
    /// Submit or publish refused (ABI 8): the runtime owns recovery
    /// (`RUN_LANE_RECOVERY_RUNTIME`) and the device was poisoned; the lane told `on_poison`
    /// and makes no device call until the runtime resets the device and reports it with
    /// `run_lane_device_reset`. Also `run_lane_device_reset`'s answer when the lane awaits no
    /// reset.
    Unusable = 18,
    /// `run_lane_cancel` refused (ABI 11): the run launched (it finishes and gets its own
    /// verdict) or the publication's upload started. Wait for its outcome.
    Started = 19,
}

/// Who recovers the device after a poison or a fault notice (`RunLaneConfig::recovery`, ABI
/// 8; SPEC L-24).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneRecovery {
    /// The lane, in place (the default): it drains, force-resets, probes and reopens,
    /// calling `before_reset` before the drain and `after_reset` once it is over. A reset
    /// destroys the runtime's own streams, kernels and buffers on the device too: rebuild
    /// them in `after_reset`, and keep the runtime's threads out of device calls from
    /// `before_reset` on.
    InPlace = 0,
    /// The runtime: on a poison (or a matched fault notice) every item gets its outcome, the
    /// lane calls `on_poison` once, when none of its threads is inside a device call, and
    /// then makes no device call; submits are `UNUSABLE` until the runtime resets the device
    /// and calls `run_lane_device_reset`, after which the lane reopens on fresh streams.
    Runtime = 1,
}

/// The chip profile a lane runs with (`RunLaneConfig::profile` holds one).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneProfile {
    /// Ascend 910B/910C: launch depth two (run N+1 queued while N executes).
    A2a3 = 0,
    /// Ascend 950: launch depth two on the record verdict channel (ABI 4; it was depth one),
    /// for both runtimes (`header_layout`): host_build_graph and tensormap_and_ringbuffer
    /// queue, as the peer runtime's newest code does on a5. Not measured on a5 hardware here
    /// (docs/embedding.md).
    A5 = 1,
    /// Ask the device (the ACL backend reads the SoC); the simulator reports a2a3.
    Probe = 2,
}

/// The runtime's status header layout (`RunLaneConfig::header_layout`, ABI 12; SPEC §5.1):
/// where the lane reads the latched codes in each slot's status header. Pick the runtime's.
/// Both queue at the profile's launch depth.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneHeaderLayout {
    /// tensormap_and_ringbuffer: 896 bytes, `orch_error_code` at 784, stall fields after the
    /// latch (the default, and every lane's layout before ABI 12).
    TensormapAndRingbuffer = 0,
    /// host_build_graph: 256 bytes, `orch_error_code` at 208, no stall fields.
    HostBuildGraph = 1,
}

/// How a run gets its verdict (`RunLaneConfig::verdict_channel`, ABI 4; SPEC L-8).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneVerdictChannel {
    /// The runtime's device side publishes a result record per run (`RunLaneRunArgs::record`,
    /// stamped with `epoch`): a published ok record is success with no stream synchronize;
    /// every other shape is synchronized. The default; runs queue at the profile's depth.
    Record = 0,
    /// The runtime publishes no record: every run's streams are synchronized after its
    /// boundary (a clean synchronize and a clean status header are success). Runs at launch
    /// depth one.
    StreamSync = 1,
}

/// Who runs the lane's steps (`RunLaneConfig::drive`, ABI 10; SPEC L-23).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneDrive {
    /// The lane's own threads (the default): a lane thread, a completion waiter and
    /// `workers` host workers; whoever of them has the event runs the steps.
    LaneThreads = 0,
    /// The caller's threads: the lane starts no thread. `run_lane_create` opens the device on
    /// the calling thread; `run_lane_submit`, `run_lane_publish`, `run_lane_poll`,
    /// `run_lane_wait` and `run_lane_close` run the lane's steps on the calling thread,
    /// callbacks included; `run_lane_wait` blocks in the awaited run's device wait itself,
    /// bounded by its timeout; `run_lane_poll` looks at the run without waiting. A deadline
    /// that passes while no call is made is acted on at the next call, and so is the
    /// recovery of a poisoned device (its drain, up to the profile's drain timeout, is made
    /// by the call that finds it due). Every calling thread must be bound to the lane's device
    /// (`aclrtSetDevice`), as the runtime's own threads are.
    Caller = 1,
}

/// Which backend executes the lane (`RunLaneConfig::backend`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneBackend {
    /// A real NPU through libascendcl (opened at run time).
    Acl = 0,
    /// The deterministic simulator: for tests and a runner's own CI. Callbacks run, then the
    /// simulated device runs the kernels.
    Sim = 1,
    /// The runtime's own device layer (ABI 9, L-22): every device call the lane makes goes
    /// through the table `RunLaneConfig::device_ops` points at (its rt layer, its simulated
    /// platform, a test stub). The lane still decides everything; the table executes.
    DeviceOps = 2,
}

// This file holds the constants and the enums of the config; the structs live in these
// modules, re-exported here. cbindgen meets their items after this file's, in this order (the
// alphabetical one, which rustfmt keeps): the header declares them in the same order.
mod device_table;
mod lane_setup;
mod run_request;
mod run_result;
mod state_reports;

pub use device_table::RunLaneDeviceOps;
pub use lane_setup::{
    RunLaneConcurrency, RunLaneConfig, RunLaneFinaliseVerdict, RunLaneRecoveryInfo, RunLaneRunner,
};
pub use run_request::{
    RunLaneRunArgs, RunLaneRunInfo, RunLaneRunState, RunLaneRunStatus, RunLaneSubmit,
};
pub use run_result::{
    RunLaneClass, RunLaneItem, RunLaneOutcome, RunLaneOverlap, RunLaneStage, RunLaneTimingSource,
    RunLaneVerdict,
};
pub use state_reports::{
    RunLaneCloseReport, RunLaneNoticeMonitor, RunLaneNoticeMonitorReport, RunLaneState,
};
