//! `RunLaneOutcome`: an item's outcome, with its verdict, class, stage and timing.

use core::ffi::{c_char, c_void};

use super::{RUN_LANE_HINT_BYTES, RUN_LANE_LINE_BYTES, RUN_LANE_NAME_BYTES, RUN_LANE_STAGE_BYTES};

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
