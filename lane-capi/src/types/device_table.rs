//! `RunLaneDeviceOps`: the runtime's device layer as a table of operations (ABI 9, L-22).

use core::ffi::{c_char, c_void};

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
    /// built against an older header passes a smaller `size`, and the library reads this
    /// entry as NULL without reading past that size.
    pub event_timestamp: Option<
        unsafe extern "C" fn(user: *mut c_void, event: *mut c_void, ns_out: *mut u64) -> i32,
    >,
}
