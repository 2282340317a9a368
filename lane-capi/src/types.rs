//! The C types of the ABI: everything `include/run_lane.h` declares, `#[repr(C)]`.
//!
//! Inputs written by C (the config, the submit request) carry their enums as `uint32_t` and
//! are validated here, because an out-of-range value in a Rust enum would be undefined
//! behaviour; outputs (status codes, outcomes) use the enums directly.

use core::ffi::{c_char, c_void};

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

/// The runtime's device layer as a table of operations (ABI 9, SPEC L-22): the lane's
/// `RUN_LANE_BACKEND_DEVICE_OPS` backend makes every device call through it, so the runtime's
/// own rt layer, its simulated platform or a test stub executes the lane's effects. The lane
/// keeps every decision (when to create, record, wait, synchronize, reset; what a code means).
///
/// **Entries.** Each mirrors one ACL call (named on it) and takes `user` first, passed back
/// unchanged. Each returns 0 on success or the runtime's code: an ACL/RT code (107000,
/// 507015, ...), which the lane classifies with the one table it uses for its own calls (a
/// device fault poisons and recovers the device; a parameter error fails one run). Handles are
/// the runtime's `void *` values: streams, events, device addresses, pinned host addresses. The
/// lane never dereferences a stream, event or device address; it reads and writes pinned host
/// memory itself (within what `malloc_host` returned). Required entries are refused at
/// `run_lane_create` when NULL (`INVALID_CONFIG`, the message naming the entry).
///
/// **Handles.** The lane hands an entry only a handle this table returned and that is still
/// live: not destroyed or freed, and not from before a `reset_device_force` (every handle dies
/// with a reset; the lane forgets them, never destroys them). A forged or stale value is
/// refused with a code (107017 for a stream or event, 107000 for a device range) before any
/// entry is called. `create_stream` may return a stream the runtime already owns (its own
/// run stream): the lane uses it as one of its pair and, when done with it, hands it to
/// `destroy_stream` or `destroy_stream_force`, which decide what destroying it means. Two
/// live handles of a kind must differ (a create that returns one the lane holds is refused
/// as an internal error, 500000, and so is a NULL handle with success). `RunLaneConfig::
/// device_id` names the device: one lane per device id, whichever backend (L-25), so a
/// second lane on an id a live lane holds is refused at create.
///
/// **Threads.** Entries are called on the lane's threads, never on the caller's
/// (`run_lane_*` calls return without them), except with `RunLaneConfig::submitters_bound`,
/// where a submitting thread may run the lane's steps, and with `RUN_LANE_DRIVE_CALLER`
/// (ABI 10), where the lane has no thread: every entry is called by the thread of the
/// `run_lane_*` call that runs the steps, the waits by the caller inside `run_lane_wait` (or a
/// `run_lane_poll`'s `query_event`), still at most one wait and one steps' entry at a time:
///
/// - *the steps:* every entry but the waits below is called by whichever thread runs the
///   lane's steps (the lane thread, the completion waiter once it has a verdict, a host worker
///   once it answered, a bound submitting thread): one at a time for one lane;
/// - *the completion waiter*, a thread of its own: `bind`, `synchronize_event`, `query_event`,
///   `synchronize_stream`, `memcpy_from_device` (the result record, right after the run's
///   boundary), `synchronize_device` (recovery's drain) and `recent_error_message`. These run
///   **at the same time** as the steps' entries on another thread: a wait on run N's event or
///   stream while run N+1 is recorded and launched on the same streams. So the table must take
///   two calls of one lane at once, one of them a wait; `user` state they share needs a lock;
/// - *host workers* (`RunLaneConfig::workers`): `bind` only, before the runner's callbacks.
///
/// Never at the same time: `reset_device_force` and any other entry of the lane (no reset
/// under a wait, L-20); a destroy or free and a wait on that handle (the lane keeps what a
/// wait uses live until it returns). Lanes do not coordinate with one another: lanes sharing
/// a table call it concurrently.
///
/// **Thread binding.** Before a thread's first entry, and again after every
/// `reset_device_force`, the lane calls `bind` on it (ACL's `aclrtSetDevice`), so an entry
/// always runs on a thread bound since the last reset; `bind` may be NULL when the runtime's
/// calls need no per-thread binding. The runner's launch callbacks get the table's stream
/// pointer as their `stream`.
///
/// **The clock and the op timeout** are not the table's: the lane reads its own monotonic
/// clock, and programs no device op timeout: the runtime keeps its own below
/// `RunLaneConfig::completion_timeout_ms` (`device_op_timeout_ms` says the value the lane
/// expects). Fault notices: forward them with `run_lane_report_device_fault`; they match
/// the ids `stream_id` gives.
///
/// The table is copied at `run_lane_create`; `user` and the functions must stay valid until
/// `run_lane_destroy` returns. An entry must not throw (no C++ exception into the library).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RunLaneDeviceOps {
    /// `sizeof(RunLaneDeviceOps)` as the caller's header declares it (ABI 13; `RUN_LANE_INIT` sets it): the library reads only that many bytes. See "Sizes" in docs/embedding.md.
    pub size: u32,
    /// Passed to every entry; the library never reads it. With `RunLaneConfig::device_id` it
    /// names the device (see Handles).
    pub user: *mut c_void,
    /// Optional (`aclrtSetDevice`): bind the calling thread to the device. Called on each of
    /// the lane's threads before its first entry and after every `reset_device_force`, and
    /// between reset attempts (L-20). NULL: no binding needed.
    pub bind: Option<unsafe extern "C" fn(user: *mut c_void) -> i32>,
    /// Required (`aclrtCreateStreamWithConfig`): a stream for the lane's pair (or the probe). It
    /// may be one the runtime already owns (it is given back to a destroy entry).
    pub create_stream:
        Option<unsafe extern "C" fn(user: *mut c_void, stream_out: *mut *mut c_void) -> i32>,
    /// Required (`aclrtDestroyStream`): a healthy teardown (no queued work expected). A
    /// failure keeps the stream and the lane tries again (S-7).
    pub destroy_stream: Option<unsafe extern "C" fn(user: *mut c_void, stream: *mut c_void) -> i32>,
    /// Required (`aclrtDestroyStreamForce`): replaces a stream that may hold queued work or a
    /// sticky error (dropped).
    pub destroy_stream_force:
        Option<unsafe extern "C" fn(user: *mut c_void, stream: *mut c_void) -> i32>,
    /// Optional (`aclrtStreamGetId`): the stream's id as fault notices name it, called once
    /// right after `create_stream`. NULL: no notice names the lane's streams.
    pub stream_id: Option<
        unsafe extern "C" fn(user: *mut c_void, stream: *mut c_void, id_out: *mut i32) -> i32,
    >,
    /// Required (`aclrtCreateEventExWithFlag(ACL_EVENT_SYNC)`): a reusable event (re-recorded
    /// for every run of a slot).
    pub create_event:
        Option<unsafe extern "C" fn(user: *mut c_void, event_out: *mut *mut c_void) -> i32>,
    /// Required (`aclrtDestroyEvent`).
    pub destroy_event: Option<unsafe extern "C" fn(user: *mut c_void, event: *mut c_void) -> i32>,
    /// Required (`aclrtRecordEvent(event, stream)`): `record_event(user, event, stream)`
    /// captures every task already on the stream.
    pub record_event: Option<
        unsafe extern "C" fn(user: *mut c_void, event: *mut c_void, stream: *mut c_void) -> i32,
    >,
    /// Required (`aclrtStreamWaitEvent(stream, event)`): `stream_wait_event(user, stream,
    /// event)`: tasks enqueued later on the stream start once the event's tasks finished.
    pub stream_wait_event: Option<
        unsafe extern "C" fn(user: *mut c_void, stream: *mut c_void, event: *mut c_void) -> i32,
    >,
    /// Optional (`aclrtQueryEventStatus`): whether the event's captured tasks finished, without
    /// waiting (`true` for a never-recorded event). NULL: answered as 207000 (not supported).
    pub query_event: Option<
        unsafe extern "C" fn(user: *mut c_void, event: *mut c_void, complete_out: *mut bool) -> i32,
    >,
    /// Required (`aclrtSynchronizeEventWithTimeout`): blocks until the event's captured tasks
    /// finish, at most `timeout_ms`; 507047 on timeout. Called by the completion waiter.
    pub synchronize_event:
        Option<unsafe extern "C" fn(user: *mut c_void, event: *mut c_void, timeout_ms: i32) -> i32>,
    /// Required (`aclrtSynchronizeStreamWithTimeout`): waits for every task on the stream, at
    /// most `timeout_ms`, and returns the stream's sticky code (507046 on timeout): the device
    /// verdict (L-8), made only for a run its result record does not decide.
    pub synchronize_stream: Option<
        unsafe extern "C" fn(user: *mut c_void, stream: *mut c_void, timeout_ms: i32) -> i32,
    >,
    /// Required (`aclrtMalloc`): `size` bytes of device memory (each slot's buffers).
    pub malloc: Option<
        unsafe extern "C" fn(user: *mut c_void, size: usize, ptr_out: *mut *mut c_void) -> i32,
    >,
    /// Required (`aclrtFree`): an address `malloc` returned.
    pub free: Option<unsafe extern "C" fn(user: *mut c_void, ptr: *mut c_void) -> i32>,
    /// Required (`aclrtMemcpy`, host to device, synchronous): `dst` is inside an allocation.
    pub memcpy_to_device: Option<
        unsafe extern "C" fn(
            user: *mut c_void,
            dst_device: *mut c_void,
            src_host: *const c_void,
            len: usize,
        ) -> i32,
    >,
    /// Required (`aclrtMemcpy`, device to host, synchronous, no implicit stream sync): `src`
    /// is inside an allocation. Also called by the completion waiter (the record's read).
    pub memcpy_from_device: Option<
        unsafe extern "C" fn(
            user: *mut c_void,
            dst_host: *mut c_void,
            src_device: *const c_void,
            len: usize,
        ) -> i32,
    >,
    /// Optional, with the three below (`aclrtMallocHost`): pinned host memory the lane reads
    /// and writes itself, for copies on the streams. All four or none.
    pub malloc_host: Option<
        unsafe extern "C" fn(user: *mut c_void, size: usize, ptr_out: *mut *mut c_void) -> i32,
    >,
    /// Optional, with `malloc_host` (`aclrtFreeHost`).
    pub free_host: Option<unsafe extern "C" fn(user: *mut c_void, ptr: *mut c_void) -> i32>,
    /// Optional, with `malloc_host` (`aclrtMemcpyAsync`, host to device): from pinned memory,
    /// enqueued behind the tasks on `stream`.
    pub memcpy_to_device_async: Option<
        unsafe extern "C" fn(
            user: *mut c_void,
            dst_device: *mut c_void,
            src_host: *const c_void,
            len: usize,
            stream: *mut c_void,
        ) -> i32,
    >,
    /// Optional, with `malloc_host` (`aclrtMemcpyAsync`, device to host): into pinned memory,
    /// enqueued behind the tasks on `stream`.
    pub memcpy_from_device_async: Option<
        unsafe extern "C" fn(
            user: *mut c_void,
            dst_host: *mut c_void,
            src_device: *const c_void,
            len: usize,
            stream: *mut c_void,
        ) -> i32,
    >,
    /// Optional (`aclrtSynchronizeDeviceWithTimeout`): recovery's bounded drain before a force
    /// reset, on the completion waiter; its code proves nothing. NULL: no drain.
    pub synchronize_device: Option<unsafe extern "C" fn(user: *mut c_void, timeout_ms: i32) -> i32>,
    /// Required unless `RunLaneConfig::recovery` is `RUN_LANE_RECOVERY_RUNTIME`
    /// (`aclrtResetDeviceForce`): recovery's force reset after a poison. Every stream, event
    /// and allocation is dead afterwards, whatever it returned. A runtime that owns recovery
    /// resets the device itself and reports it with `run_lane_device_reset`, so the lane never
    /// calls it there and it may be NULL.
    pub reset_device_force: Option<unsafe extern "C" fn(user: *mut c_void) -> i32>,
    /// Optional: the runtime's own check that a reset device is usable, after the lane's probe
    /// (bind, a stream create and destroy, a small alloc and free). A non-zero code fails the
    /// recovery attempt. NULL: the lane's probe alone.
    pub probe: Option<unsafe extern "C" fn(user: *mut c_void) -> i32>,
    /// Optional (`aclGetRecentErrMsg`): the runtime's text about the last failed entry on the
    /// calling thread, read right after it on that thread (and after a failed runner callback);
    /// NULL or "" for none. Copied at once; it must stay valid until the thread's next entry.
    /// It ends the failure line (`; device: ...`).
    pub recent_error_message: Option<unsafe extern "C" fn(user: *mut c_void) -> *const c_char>,
    /// Optional (`aclrtEventGetTimestamp`): when the event's captured tasks finished, in
    /// NANOSECONDS of the device clock (ACL gives microseconds: multiply by 1000). Set, each
    /// slot gets one more event, recorded on the AICore stream right before each run's AICore
    /// launch, and `create_event` must make events that record timestamps
    /// (`ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE`): a run's device start and end then come from
    /// its start event and its boundary (`RUN_LANE_TIMING_EVENT_TIMESTAMPS`). Called only
    /// after the event completed; a failure leaves the timing buffer as the run's timing.
    /// NULL: no timestamps (the timing buffer). Added at the end of the table: a runtime
    /// built against an older header must zero-initialise the table it passes.
    pub event_timestamp: Option<
        unsafe extern "C" fn(user: *mut c_void, event: *mut c_void, ns_out: *mut u64) -> i32,
    >,
}

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

/// A run as a callback sees it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLaneRunInfo {
    /// The run id `run_lane_submit` returned. A callback may come before the submitting
    /// thread sees that id; match on `tag` instead.
    pub run: u64,
    /// The run's pipeline slot (its device buffers are the slot's).
    pub slot: u8,
    /// Whether the request carried a tag.
    pub has_tag: bool,
    /// The request's tag (the runtime's dispatch id).
    pub tag: u64,
    /// Whether the run collects diagnostics (it runs alone, at depth one).
    pub diagnostics: bool,
    /// The submit's `user` (ABI 11): the runtime's per-run state, passed back unchanged.
    pub user: *mut c_void,
}

/// What the two launch callbacks receive: the run and its slot's device buffers. On ACL the
/// pointers are device addresses; on the simulator they are simulator addresses that must
/// not be dereferenced.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLaneRunArgs {
    /// The run.
    pub info: RunLaneRunInfo,
    /// The slot's status header: the runtime latches its codes here.
    pub status_header: *mut c_void,
    /// The slot's timing buffer: device start and end, two little-endian u64 nanoseconds.
    pub timing: *mut c_void,
    /// The slot's handshake region: AICore workers report here; the AICPU kernel waits on it.
    pub handshake: *mut c_void,
    /// The slot's result record region, 280 bytes (ABI 4): the runtime's device side
    /// publishes the run's terminal record here, stamped with `epoch`, writing the
    /// `published` word last (docs/embedding.md). A run is success only on its own published
    /// ok record.
    pub record: *mut c_void,
    /// The run's epoch (ABI 4): process-unique, never 0. The record counts only when its
    /// `published` word equals it. The submit's own `epoch` when it set `has_epoch` (ABI 11).
    pub epoch: u64,
    /// The launch is queued behind a run still on the pair (ABI 11): only such a launch may
    /// be declined (`RUN_LANE_LAUNCH_DECLINED`).
    pub queued: bool,
}

/// One run to submit. `RUN_LANE_INIT(submit)` (zeroed, `size` set) is a plain run; a zeroed
/// struct without its size is refused (ABI 13).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLaneSubmit {
    /// `sizeof(RunLaneSubmit)` as the caller's header declares it (ABI 13; `RUN_LANE_INIT` sets it): the library reads only that many bytes. See "Sizes" in docs/embedding.md.
    pub size: u32,
    /// Whether `tag` is set.
    pub has_tag: bool,
    /// The runtime's dispatch id; two live runs may not share one. Callbacks receive it.
    pub tag: u64,
    /// Collect diagnostics: the run runs alone, at depth one.
    pub diagnostics: bool,
    /// Copy the outputs back when the run succeeds (passed to `finalise`).
    pub copy_back: bool,
    /// Whether `key` is set (ABI 11).
    pub has_key: bool,
    /// The run's ordering key (ABI 11; the runtime's dispatch order): the run goes ahead of
    /// the unlaunched keyed runs with a greater key already in the lane, so it is prepared,
    /// launched and delivered before them. It never passes a launched run, a run without a
    /// key or a publication; equal keys keep submission order.
    pub key: u64,
    /// Submit held (ABI 11): the run is prepared as usual and launched only after
    /// `run_lane_activate`; the runs behind it wait behind it.
    pub held: bool,
    /// Whether `epoch` is set (ABI 11).
    pub has_epoch: bool,
    /// The runtime's own epoch for the run's result record (ABI 11), passed to the launch
    /// callbacks as `RunLaneRunArgs::epoch`. Refused (`REFUSED`) when 0, when not above the
    /// last epoch the lane accepted (a repeat included), and when a lane's runs mix their own
    /// epochs with the lane's: set it for every run of a lane or for none.
    pub epoch: u64,
    /// The runtime's per-run state (ABI 11): given back in every callback's
    /// `RunLaneRunInfo::user` and in the run's outcome (`RunLaneOutcome::run_user`).
    pub user: *mut c_void,
}

impl Default for RunLaneSubmit {
    /// A plain run, `size` set.
    fn default() -> Self {
        Self {
            size: size_of::<Self>() as u32,
            has_tag: false,
            tag: 0,
            diagnostics: false,
            copy_back: false,
            has_key: false,
            key: 0,
            held: false,
            has_epoch: false,
            epoch: 0,
            user: core::ptr::null_mut(),
        }
    }
}

/// Where a run stands (`RunLaneRunStatus::state`, ABI 11).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneRunState {
    /// Waiting for its turn to prepare.
    Queued = 0,
    /// Its `prepare` was called and has not returned an answer the lane took.
    Preparing = 1,
    /// Prepared, not launched: waiting for its turn, its activation (held), or an empty pair
    /// (its launch declined); also while an unlaunched run is finalised (cancelled, failed).
    Prepared = 2,
    /// Its launch was made: it finishes and gets its own verdict (a cancel is `STARTED`).
    Launched = 3,
    /// Its outcome is decided: waiting for its turn, or ready to take.
    Done = 4,
}

/// What `run_lane_run_state` reports (ABI 11).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLaneRunStatus {
    /// `sizeof(RunLaneRunStatus)` as the caller's header declares it (ABI 13; `RUN_LANE_INIT` sets it): the library writes only that many bytes. See "Sizes" in docs/embedding.md.
    pub size: u32,
    /// Where the run stands.
    pub state: RunLaneRunState,
    /// Submitted held and not activated yet.
    pub held: bool,
    /// How many times `launch_aicore` declined its launch.
    pub declines: u32,
    /// Whether `key` is set.
    pub has_key: bool,
    /// Its ordering key.
    pub key: u64,
}

/// Which kind of item an outcome is for.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneItem {
    /// A run (`run_lane_submit`).
    Run = 0,
    /// A publication (`run_lane_publish`).
    Publication = 1,
}

/// An item's one final outcome.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneVerdict {
    /// No verdict (ABI 13): a zeroed outcome, and what `run_lane_poll` writes with `EMPTY`.
    /// Never an item's verdict; so zero never reads as success.
    None = 0,
    /// The run completed with a clean latch and was finalised; the code was uploaded (ABI 13:
    /// 1, it was 0).
    Ok = 1,
    /// The item failed; `failure_class`, `code`, `stage`, `hint` and `failure_line` say how.
    Failed = 2,
    /// Taken down by a device failure another run caused (`origin`).
    Poisoned = 3,
    /// Never launched (or uploaded): the lane was closed first, or `run_lane_cancel` cancelled
    /// it.
    Cancelled = 4,
}

/// How far a failure reaches.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneClass {
    /// No failure.
    None = 0,
    /// This run failed; the lane and later runs continue.
    RunOnly = 1,
    /// The device was poisoned: every live item got its verdict, the lane recovers it.
    Poison = 2,
}

/// Where a failure happened (status-latch's `Stage`, plus `NONE` for a latched code, a host
/// wait timeout or a validation failure).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneStage {
    /// No stage: no failure, a latched runtime code, a host wait timeout, a validation failure.
    None = 0,
    /// Creating a stream of the pair.
    StreamCreate = 1,
    /// Destroying a stale or unproven stream.
    StreamDestroy = 2,
    /// The `launch_aicore` callback.
    AicoreLaunch = 3,
    /// The `launch_aicpu` callback.
    AicpuLaunch = 4,
    /// Recording a completion event.
    EventRecord = 5,
    /// Waiting for a completion event.
    EventWait = 6,
    /// Reading the status header.
    StatusRead = 7,
    /// The `finalise` callback's copy-back.
    CopyBack = 8,
    /// The `prepare` callback.
    Prepare = 9,
    /// The bounded device drain of recovery.
    DeviceDrain = 10,
    /// The force reset of recovery.
    Reset = 11,
    /// The probe that confirms a reset.
    Probe = 12,
    /// The `upload_code` callback.
    Upload = 13,
    /// Reading the run's result record after its boundary (ABI 4).
    RecordRead = 14,
    /// The device verdict: the bounded synchronize of the pair (ABI 4).
    StreamSync = 15,
    /// A device fault notice named one of the lane's streams: the device was recovered
    /// before this item ran (ABI 5; `code` is the notice's).
    FaultNotice = 16,
}

/// One item's outcome, copied into the caller's struct: it owns no memory and stays valid
/// as long as the caller keeps it. Strings are NUL-terminated, cut at a character boundary
/// when longer than their buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RunLaneOutcome {
    /// `sizeof(RunLaneOutcome)` as the caller's header declares it (ABI 13; `RUN_LANE_INIT` sets it): the library writes only that many bytes. See "Sizes" in docs/embedding.md.
    pub size: u32,
    /// Run or publication.
    pub item: RunLaneItem,
    /// The run or publication id (one sequence for both).
    pub id: u64,
    /// Whether the run's request carried a tag.
    pub has_tag: bool,
    /// The run's tag.
    pub tag: u64,
    /// The verdict.
    pub verdict: RunLaneVerdict,
    /// `NONE` unless `FAILED` or `POISONED`.
    pub failure_class: RunLaneClass,
    /// Whether `code` is set (a failure with a latched runtime code or an ACL code).
    pub has_code: bool,
    /// The latched runtime code or the ACL return code, as reported. A latch code a callback
    /// returned negated is given as the latch code (3 for a `prepare` that returned -3), with
    /// the callback's `stage`.
    pub code: i32,
    /// Where it failed.
    pub stage: RunLaneStage,
    /// `POISONED`: the run whose failure poisoned the device (else 0).
    pub origin: u64,
    /// Whether the device start/end are known (the run's status was read).
    pub has_timing: bool,
    /// Device start of the run, nanoseconds on the device clock.
    pub device_start_ns: u64,
    /// Device end of the run.
    pub device_end_ns: u64,
    /// The code's name (`ACL_ERROR_RT_AICORE_EXCEPTION`, `HOST_WAIT_TIMEOUT`, ...), or "".
    pub code_name: [c_char; RUN_LANE_NAME_BYTES],
    /// The stage's name ("AICore launch", ...), or "".
    pub stage_name: [c_char; RUN_LANE_STAGE_BYTES],
    /// What to change and run again, or "".
    pub hint: [c_char; RUN_LANE_HINT_BYTES],
    /// The one stable log line (`run N failed: ...`; for a poisoned item it names the
    /// origin), or "" for `OK` and `CANCELLED`.
    pub failure_line: [c_char; RUN_LANE_LINE_BYTES],
    /// The submit's `user` (ABI 11); NULL for a publication.
    pub run_user: *mut c_void,
    /// How many times `launch_aicore` declined the run's launch (ABI 11).
    pub declines: u32,
    /// Whether the run's request carried an ordering key (ABI 11).
    pub has_key: bool,
    /// Its ordering key: outcomes come in the lane's order, which is submission order but
    /// for a run a smaller key placed ahead.
    pub key: u64,
    /// The run's proof of overlap: whether its predecessor's boundary was still unfired when
    /// its launch returned (an event query made right after both kernels were accepted).
    /// `UNKNOWN` for a publication and for a run whose status was not read.
    pub overlap: RunLaneOverlap,
    /// Where `device_start_ns` and `device_end_ns` come from (meaningful with `has_timing`).
    pub timing_source: RunLaneTimingSource,
}

/// A run's proof of overlap (`RunLaneOutcome::overlap`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneOverlap {
    /// Not known: the event query failed (it counts neither way), the device has no query,
    /// or the run's status was not read.
    Unknown = 0,
    /// Not queued: no predecessor's boundary was in flight at the run's launch (depth one, or
    /// nothing ahead of it on the pair).
    NotQueued = 1,
    /// The predecessor's boundary was still unfired when the run's launch returned: the run
    /// was on the stream pair while its predecessor executed.
    Proven = 2,
    /// The predecessor's boundary had already fired when the run's launch returned.
    NotProven = 3,
}

/// Where a run's device start and end come from (`RunLaneOutcome::timing_source`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneTimingSource {
    /// The slot's timing buffer, which the runtime's kernels write.
    TimingBuffer = 0,
    /// The device's event timestamps (`aclrtEventGetTimestamp`): start from an event
    /// recorded right before the AICore kernel, end from the run's boundary.
    EventTimestamps = 1,
}

// SAFETY: an outcome is plain data copied out of the lane; `run_user` is the caller's value,
// handed back as it was given and never dereferenced by the library, so moving or sharing an
// outcome between threads is the caller's business, as with any integer it holds.
unsafe impl Send for RunLaneOutcome {}
// SAFETY: as for `Send`: nothing in an outcome is read through a pointer.
unsafe impl Sync for RunLaneOutcome {}

/// The lane's state after `run_lane_close`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneState {
    /// Accepting runs.
    Open = 0,
    /// Recovering the device after a poison.
    Recovering = 1,
    /// Recovery failed every attempt.
    Lost = 2,
    /// Closing: launched runs finish, the rest are cancelled.
    Closing = 3,
    /// Every item has its outcome; the stream pair is being destroyed (a failed destroy is
    /// retried once at once).
    ReleasingStreams = 4,
    /// Every item has its outcome and the teardown ended: the streams are destroyed, except
    /// those the report names in `streams_left`.
    Closed = 5,
    /// A device fault notice named one of the lane's streams (ABI 5): launched runs finish,
    /// then the device is recovered.
    Suspect = 6,
    /// The runtime owns recovery and the device is poisoned (ABI 8): the lane makes no device
    /// call until `run_lane_device_reset`.
    Unusable = 7,
}

/// What `run_lane_close` and `run_lane_destroy_with_report` report (copied into the caller's
/// struct).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RunLaneCloseReport {
    /// `sizeof(RunLaneCloseReport)` as the caller's header declares it (ABI 13; `RUN_LANE_INIT` sets it): the library writes only that many bytes. See "Sizes" in docs/embedding.md.
    pub size: u32,
    /// The state right after the call (`CLOSING` while launched runs finish).
    pub state: RunLaneState,
    /// Whether recovery failed every attempt (reset the device outside the lane).
    pub device_lost: bool,
    /// Whether the lane was ever poisoned (then `poison_origin` and `poison_line` are set).
    pub poisoned: bool,
    /// The run whose failure poisoned the device most recently.
    pub poison_origin: u64,
    /// Its failure line.
    pub poison_line: [c_char; RUN_LANE_LINE_BYTES],
    /// How many streams of the pair the teardown could not destroy (0, 1 or 2; ABI 3): each
    /// failed destroy is retried at once, and once more by `run_lane_destroy`. Set once
    /// `state` is `CLOSED` (0 before); final from `run_lane_destroy_with_report`.
    pub streams_left: u8,
    /// The last destroy code of the AICPU stream if it is left, else 0 (ABI 3).
    pub aicpu_stream_code: i32,
    /// The last destroy code of the AICore stream if it is left, else 0 (ABI 3).
    pub aicore_stream_code: i32,
    /// One line naming each stream left with its code, its CANN name and what to do
    /// (`close left the AICPU stream: ...`), or "" (ABI 3).
    pub teardown_line: [c_char; RUN_LANE_LINE_BYTES],
    /// Whether a device fault notice ever made the device suspect and caused a recovery (ABI
    /// 5); then the three fields below name the most recent one.
    pub noticed: bool,
    /// The notice's logical device id.
    pub notice_device: u32,
    /// The notice's stream id (`aclrtStreamGetId`'s number for one of the lane's streams).
    pub notice_stream_id: u32,
    /// The notice's code.
    pub notice_code: i32,
    /// How many of the lane's threads `run_lane_destroy` left behind instead of joining (0 or
    /// 1; ABI 10): the completion waiter, when the lane was lost to it stuck inside a device
    /// call past every bound it was given (L-20). It ends when that call returns and touches
    /// nothing of the lane's then; force-reset the device before reusing it. Only
    /// `run_lane_destroy_with_report` sets it.
    pub threads_left: u8,
    /// How many delivered outcomes were never taken (ABI 13): neither polled nor waited for
    /// before the destroy dropped them. Only `run_lane_destroy_with_report` sets it (0 from
    /// `run_lane_close`, whose outcomes may still be taken).
    pub untaken: u32,
    /// The ids of the first `RUN_LANE_UNTAKEN_IDS` of them, in the lane's order; 0 past
    /// `untaken` (ABI 13).
    pub untaken_ids: [u64; RUN_LANE_UNTAKEN_IDS],
}

/// How installing the lane's device fault notice monitor went
/// (`RunLaneNoticeMonitorReport::state`, from `run_lane_notice_monitor`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneNoticeMonitor {
    /// `RunLaneConfig::fault_notice_monitor` was false (or the lane runs on the simulator or
    /// a runtime's device table): the library left the callback slot alone; forward notices
    /// with `run_lane_report_device_fault`.
    NotAsked = 0,
    /// The library's handler was registered with `aclrtSetExceptionInfoCallback` (it holds
    /// the slot until someone registers after it).
    Installed = 1,
    /// Asked for, but the libascendcl lacks `aclrtSetExceptionInfoCallback` or a getter the
    /// handler needs (an older or trimmed CANN; `line` names it). The lane runs; no notice
    /// reaches it unless the embedding forwards it.
    Unavailable = 2,
    /// Asked for, but `aclrtSetExceptionInfoCallback` returned `code`. The lane runs; no
    /// notice reaches it unless the embedding forwards it.
    Refused = 3,
}

/// What `run_lane_notice_monitor` reports (copied into the caller's struct).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RunLaneNoticeMonitorReport {
    /// `sizeof(RunLaneNoticeMonitorReport)` as the caller's header declares it (ABI 13; `RUN_LANE_INIT` sets it): the library writes only that many bytes. See "Sizes" in docs/embedding.md.
    pub size: u32,
    /// How installing the monitor went at `run_lane_create`.
    pub state: RunLaneNoticeMonitor,
    /// `REFUSED`: the code `aclrtSetExceptionInfoCallback` returned; else 0.
    pub code: i32,
    /// One line saying how it went and, unless `INSTALLED`, what still brings notices to the
    /// lane (`the fault notice monitor is not installed: the library lacks ...`).
    pub line: [c_char; RUN_LANE_LINE_BYTES],
}
