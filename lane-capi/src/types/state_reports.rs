//! The close report (`RunLaneCloseReport`) and the notice monitor's report.

use core::ffi::c_char;

use super::{RUN_LANE_LINE_BYTES, RUN_LANE_UNTAKEN_IDS};

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
