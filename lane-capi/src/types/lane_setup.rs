//! What `run_lane_create` takes: the runner's callbacks (`RunLaneRunner`) and the config.

use core::ffi::{c_char, c_void};

use super::device_table::RunLaneDeviceOps;
use super::run_request::{RunLaneRunArgs, RunLaneRunInfo};
use super::run_result::{RunLaneClass, RunLaneOutcome, RunLaneStage, RunLaneVerdict};
use super::{RUN_LANE_LINE_BYTES, RUN_LANE_NAME_BYTES, RUN_LANE_RUNNER_RESERVED};

/// The runner's callbacks: the embedding runtime's work for each run. Every callback is
/// called by the thread that runs the lane's steps (one of the lane's own threads, a bound
/// submitting thread, or, where the caller drives the lane, the calling thread), one at a
/// time, never concurrently with another callback of the same lane, except `prepare` and
/// `finalise` when `concurrency.off_lane_thread` and the config's `workers` move them to host
/// workers (see `RunLaneConcurrency`); `user` is passed back unchanged. A NULL callback
/// succeeds without doing anything (allowed on the simulator; on ACL the two launches are
/// required).
///
/// Each work callback returns 0 on success; one of the runtime's latch codes negated, -1 to
/// -999 (`runtime_status`, e.g. -3 for a latched `FLOW_CONTROL_DEADLOCK`): that latched
/// failure, named and classified as the same code latched in the status header; or the ACL
/// code the work failed with. The lane classifies it: a run failure, or a device poison and
/// recovery. `prepare` may also return `RUN_LANE_PREPARE_INCOMPATIBLE`; `finalise` may return
/// `RUN_LANE_FINALISE_VALIDATION_FAILED`; both lie outside -1..-999. A callback must not
/// throw (a C++ exception may not cross into the library). From any callback, on its own lane
/// or another, `submit`, `publish`, `poll` and `close` are allowed; `run_lane_wait`,
/// `run_lane_destroy` and `run_lane_create` block and return `WRONG_THREAD` (the header's top
/// comment has the table).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RunLaneRunner {
    /// Passed to every callback; the library never reads it.
    pub user: *mut c_void,
    /// Prepare the run into its slot (host runtime buffer, arena, args upload). Touches no
    /// stream. The runtime's `prepare_run`.
    pub prepare: Option<unsafe extern "C" fn(user: *mut c_void, run: *const RunLaneRunInfo) -> i32>,
    /// Launch the run's AICore workers on `stream` (`rtKernelLaunchWithHandleV2`).
    pub launch_aicore: Option<
        unsafe extern "C" fn(
            user: *mut c_void,
            stream: *mut c_void,
            args: *const RunLaneRunArgs,
        ) -> i32,
    >,
    /// Launch the run's AICPU scheduler on `stream` (`rtsLaunchCpuKernel`); it spins until
    /// the AICore workers report through the handshake.
    pub launch_aicpu: Option<
        unsafe extern "C" fn(
            user: *mut c_void,
            stream: *mut c_void,
            args: *const RunLaneRunArgs,
        ) -> i32,
    >,
    /// Copy outputs back when `copy_back` (the run succeeded and its request asked for it),
    /// validate, free per-run resources. Called exactly once for every prepared run (also
    /// after a failed prepare or launch, and for a cancelled run), except after a device
    /// reset, which frees everything with the device.
    pub finalise: Option<
        unsafe extern "C" fn(user: *mut c_void, run: *const RunLaneRunInfo, copy_back: bool) -> i32,
    >,
    /// Upload published AICore code (`code` is the value given to `run_lane_publish`). No
    /// run is in flight while it runs.
    pub upload_code: Option<unsafe extern "C" fn(user: *mut c_void, code: u64) -> i32>,
    /// Optional: told of every outcome, in submission order, as it is delivered (e.g. to
    /// wake the runner's own loop). It sees the outcome; it does not take it: `run_lane_poll`
    /// or `run_lane_wait` still returns it once. `outcome` is valid for the call only. It runs
    /// on the thread that delivered the outcome, which runs the lane's steps (ABI 10; before,
    /// always on the lane thread), before that thread lets go of them: so never beside
    /// another callback or a device call of the lane, a force reset included.
    pub on_outcome: Option<unsafe extern "C" fn(user: *mut c_void, outcome: *const RunLaneOutcome)>,
    /// How much of `prepare` and `finalise` may leave the lane thread (ABI 2). Zeroed (the
    /// default): both on the lane thread, one prepare at a time.
    pub concurrency: RunLaneConcurrency,
    /// Optional (ABI 8), with `RUN_LANE_RECOVERY_RUNTIME`: the device is poisoned and is the
    /// runtime's to reset. Called once per poison, when every item has its verdict and no
    /// thread of the lane is inside a device call; the lane makes none until
    /// `run_lane_device_reset`. The lane's streams and slot buffers are still alive during
    /// the call (read diagnostics now), and forgotten after it. `info` is valid for the call
    /// only.
    pub on_poison:
        Option<unsafe extern "C" fn(user: *mut c_void, info: *const RunLaneRecoveryInfo)>,
    /// Optional (ABI 8), with `RUN_LANE_RECOVERY_IN_PLACE`: the lane is about to drain and
    /// force-reset the device. Keep the runtime's own threads out of device calls until
    /// `after_reset` (a reset under one of their calls is a use-after-free). Once per
    /// recovery; `info` is valid for the call only.
    pub before_reset:
        Option<unsafe extern "C" fn(user: *mut c_void, info: *const RunLaneRecoveryInfo)>,
    /// Optional (ABI 8), with `RUN_LANE_RECOVERY_IN_PLACE`: recovery is over. `recovered`:
    /// the probe proved the device usable, so rebuild what the reset destroyed (the
    /// runtime's streams, loaded kernels, buffers); `false`: every attempt failed and the
    /// lane is lost. Once per recovery.
    pub after_reset: Option<unsafe extern "C" fn(user: *mut c_void, recovered: bool)>,
    /// Optional (ABI 11): the run is launched, both kernels accepted (the runtime publishes
    /// the run's acceptance here). Once per launched run, right after its launch callbacks,
    /// on the thread that called them; `run` is valid for the call only.
    pub on_launched: Option<unsafe extern "C" fn(user: *mut c_void, run: *const RunLaneRunInfo)>,
    /// Optional (ABI 11): called instead of `finalise` when set, with the run's verdict so
    /// far, its class and its code (`verdict`, valid for the call only): the one finalise of
    /// the run, on the threads `finalise` runs on, returning what `finalise` returns.
    pub finalise_verdict: Option<
        unsafe extern "C" fn(
            user: *mut c_void,
            run: *const RunLaneRunInfo,
            verdict: *const RunLaneFinaliseVerdict,
        ) -> i32,
    >,
    /// Reserved for callbacks added within ABI 13 (the runner is embedded in the config, so it
    /// cannot grow at its end): must be NULL (a non-NULL entry is refused, `INVALID_CONFIG`:
    /// the client sets a callback this library does not know).
    pub reserved: [*mut c_void; RUN_LANE_RUNNER_RESERVED],
}

/// What `finalise_verdict` is told (ABI 11): the verdict its answer makes final (a failed
/// finalise fails an `OK` run), and for a failure its class, code and stage.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLaneFinaliseVerdict {
    /// Copy the outputs back: the run succeeded and its request asked for it.
    pub copy_back: bool,
    /// `OK`, `FAILED` (run-only: a poisoned run is not finalised, the reset frees it) or
    /// `CANCELLED` (`run_lane_cancel`, or a close before its launch).
    pub verdict: RunLaneVerdict,
    /// `NONE` unless `FAILED`.
    pub failure_class: RunLaneClass,
    /// Whether `code` is set.
    pub has_code: bool,
    /// The latched runtime code or the ACL code the run failed with.
    pub code: i32,
    /// Where it failed.
    pub stage: RunLaneStage,
}

/// What took the device down, as `on_poison` and `before_reset` receive it (ABI 8).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RunLaneRecoveryInfo {
    /// Whether a run's failure poisoned the device (`false`: a device fault notice did).
    pub has_origin: bool,
    /// The run whose failure poisoned the device.
    pub origin: u64,
    /// Whether `code` is set.
    pub has_code: bool,
    /// The latched runtime code or the ACL code.
    pub code: i32,
    /// Where it failed.
    pub stage: RunLaneStage,
    /// The code's name, or "".
    pub code_name: [c_char; RUN_LANE_NAME_BYTES],
    /// The one stable log line of the failure (`run N failed: ...`, or the notice's).
    pub failure_line: [c_char; RUN_LANE_LINE_BYTES],
}

/// What a runner declares of its `prepare` and `finalise` (ABI 2).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunLaneConcurrency {
    /// `prepare` and `finalise` may be called on host worker threads (when the config asks
    /// for `workers`): at once for different runs, each on its own slot, and at the same time
    /// as the lane thread's calls. Each worker binds the device before its first call (and
    /// again after a force reset); a call whose worker cannot bind runs on the lane thread.
    pub off_lane_thread: bool,
    /// How many prepares may run at once, each on its own slot; 0 counts as 1. The lane
    /// prepares at most the smaller of this and the config's `prepare_window`.
    pub prepares_at_once: u8,
}

/// How to create a lane. Set its size (`RUN_LANE_INIT(config)`), fill it with
/// `run_lane_config_default`, then set fields.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RunLaneConfig {
    /// `sizeof(RunLaneConfig)` as the caller's header declares it (ABI 13; set it before `run_lane_config_default`, e.g. with `RUN_LANE_INIT`): the library reads (and `run_lane_config_default` writes) only that many bytes. See "Sizes" in docs/embedding.md.
    pub size: u32,
    /// Must be `RUN_LANE_ABI_VERSION` (`run_lane_config_default` sets it).
    pub abi_version: u32,
    /// A `RunLaneProfile`.
    pub profile: u32,
    /// A `RunLaneBackend`.
    pub backend: u32,
    /// Pipeline slots, 1 to 4; 0 keeps the profile's (2). The launch depth is the profile's,
    /// lowered to the slot count.
    pub slots: u8,
    /// Host wait for one run's completion, from when it became the oldest in flight; 0 keeps
    /// the default (50 s). Must stay above `device_op_timeout_ms`.
    pub completion_timeout_ms: u64,
    /// Device op-execute timeout; 0 keeps the default (45 s).
    pub device_op_timeout_ms: u64,
    /// ACL: the device id (`aclrtSetDevice`).
    pub device_id: i32,
    /// ACL: the libascendcl to open, or NULL to search (`RUN_LANE_ACL_LIB`,
    /// `ASCEND_HOME_PATH`, ...). An empty string is refused (`INVALID_CONFIG`). Copied during
    /// `run_lane_create`.
    pub acl_library_path: *const c_char,
    /// Simulator: the seed of its one random stream.
    pub sim_seed: u64,
    /// Simulator: each run's device time in (virtual) nanoseconds; 0 keeps 1 ms.
    pub sim_run_ns: u64,
    /// The runner's callbacks.
    pub runner: RunLaneRunner,
    /// Host worker threads that call `prepare` and `finalise` when the runner declares
    /// `concurrency.off_lane_thread` (ABI 2); 0 (the default) keeps every callback on the
    /// lane thread.
    pub workers: u32,
    /// How many runs may be prepared at once, 1 to `slots`; 0 keeps the profile's (1). The
    /// runner's `concurrency.prepares_at_once` lowers it further (ABI 2).
    pub prepare_window: u8,
    /// A `RunLaneVerdictChannel` (ABI 4): `RECORD` (0, the default) or `STREAM_SYNC` (1, a
    /// runtime that publishes no result record; the lane then runs at depth one).
    pub verdict_channel: u32,
    /// Runs launched on the pair at once, 1 to the slot count (ABI 12; 1 to the profile's two
    /// before); 0 keeps the profile's (two on a2a3 and a5, lowered to the slots). Each
    /// launched run holds a slot, so depth three needs `slots` of at least 3. 1 is the
    /// host-synchronised baseline: a run launches only after its predecessor retired, while
    /// its prepare still overlaps. The stream-synchronize verdict channel runs at depth one.
    pub launch_depth: u8,
    /// ACL (ABI 5): install the library's device fault notice handler
    /// (`aclrtSetExceptionInfoCallback`). The process has one callback slot and the last
    /// registration wins silently (HCCL registers one too), so the default, `false`, leaves
    /// the slot alone: the embedding forwards notices with `run_lane_report_device_fault`. A
    /// library without the callback or its getters runs without notices.
    pub fault_notice_monitor: bool,
    /// The threads that call `run_lane_submit` and `run_lane_publish` are bound to the lane's
    /// device (`aclrtSetDevice` on them) (ABI 6). Then a command that finds no thread running
    /// the lane's steps runs them on the calling thread: a submit to an idle lane prepares and
    /// launches there, and returns after those calls (never after a device wait). The runner
    /// callbacks then run on that thread too, still one at a time. `false` (the default): a
    /// command wakes one of the lane's own threads. Only the embedding knows its threads are
    /// bound, so only it can turn this on.
    pub submitters_bound: bool,
    /// Check the lane's own invariants after every lane step (ABI 7); a broken one loses the
    /// lane (`LOST`) with the violation as its cause. `false` (the default): run-lane's own
    /// tests, explorer, fuzzers and simulator run its state machines with the checks after
    /// every step, and in a runner they cost about 14% of the lane's instructions a run and
    /// about 1 us of a submit to an idle lane (cold caches). Turn it on in the runner's own
    /// tests of its integration.
    pub check_invariants: bool,
    /// A `RunLaneRecovery` (ABI 8): who recovers the device after a poison. `IN_PLACE` (0,
    /// the default): the lane; `RUNTIME` (1): the runtime, told by `on_poison`, reporting its
    /// reset with `run_lane_device_reset`.
    pub recovery: u32,
    /// `RUN_LANE_BACKEND_DEVICE_OPS` (ABI 9): the runtime's table of device operations, copied
    /// at `run_lane_create` (its `user` and functions must outlive the lane). NULL for the
    /// other backends (ignored there). `device_id` names the device, for fault notices and for
    /// the one lane a device id may have (L-25).
    pub device_ops: *const RunLaneDeviceOps,
    /// A `RunLaneDrive` (ABI 10): `LANE_THREADS` (0, the default) or `CALLER` (1, no thread
    /// of the lane's own: every call runs the lane's steps on its caller's thread, L-23).
    pub drive: u32,
    /// Each run's `finalise` returns before its successor's launch begins (ABI 11): the
    /// runtime releases runner-wide state in `finalise`. The lane then runs at launch depth
    /// one (a `launch_depth` above 1 is refused); prepares still overlap. `false` (the
    /// default): a successor may launch while its predecessor is finalised.
    pub finalise_before_launch: bool,
    /// A `RunLaneHeaderLayout` (ABI 12): the runtime's status header layout, where the lane
    /// reads each run's latched codes. `TENSORMAP_AND_RINGBUFFER` (0, the default) or
    /// `HOST_BUILD_GRAPH` (1). With the wrong one the lane reads the latch at the other
    /// runtime's offsets: a runtime without result records (`STREAM_SYNC`) would see its
    /// latched failures read as clean.
    pub header_layout: u32,
    /// ACL (ABI 13): use the libascendcl the process already loaded (the runtime's copy) when
    /// there is one, before `acl_library_path` and the search: found by its soname or as a
    /// loaded `libascendcl.so*`, reopened with `RTLD_NOLOAD`, so no second copy is mapped and
    /// the lane shares the runtime's ACL state. `false` (the default): `acl_library_path` or
    /// the search. `run_lane_acl_library` names the copy a lane uses.
    pub acl_prefer_loaded: bool,
}
