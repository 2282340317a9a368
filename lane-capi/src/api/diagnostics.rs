//! Process-wide calls (ABI version, last error, fault notices) and a lane's device diagnostics.

use core::ffi::c_char;

use crate::error::{Error, guard, last_error_ptr, non_null};
use crate::outcome::monitor_to_c;
use crate::registry::RunLane;
use crate::types::{RUN_LANE_ABI_VERSION, RunLaneNoticeMonitorReport, RunLaneStatus};

use super::{LANES, write_out};

/// The ABI version of this library ([`RUN_LANE_ABI_VERSION`] when the header matches).
#[unsafe(no_mangle)]
pub extern "C" fn run_lane_abi_version() -> u32 {
    RUN_LANE_ABI_VERSION
}

/// The calling thread's last error message: a NUL-terminated string owned by the library,
/// valid until the next `run_lane_*` call on this thread (copy it to keep it). It belongs to
/// the thread's latest call that returned a status: every such call that fails sets it, and
/// every one that returns `OK` (or `EMPTY` from `run_lane_poll`) clears it to "". So it is ""
/// after a success and before the thread's first call; it is never an older failure's text.
/// This function and `run_lane_abi_version` leave it as it is.
#[unsafe(no_mangle)]
pub extern "C" fn run_lane_last_error() -> *const c_char {
    last_error_ptr()
}

/// Forwards a device fault notice from the embedding's own exception handler (ABI 5, L-19):
/// the device id, stream id and code its `aclrtGet*FromExceptionInfo` getters returned. Takes
/// no lock and allocates nothing, so the handler may call it on the driver's callback thread.
/// Each lane on `device_id` whose streams include `stream_id` (taken with `aclrtStreamGetId`:
/// a live stream's, or one destroyed less than 32 s ago; never, for 32 s after a device
/// reset, a number a stream had when the reset killed it) becomes suspect at its next step:
/// it admits nothing new (`SUSPECT`), lets its launched runs reach their own verdicts, then
/// recovers the device.
/// Every other lane ignores it. Use it when the embedding keeps the process's one callback
/// slot (the default); with `RunLaneConfig::fault_notice_monitor` the library's own handler
/// does this. Always `OK`.
#[unsafe(no_mangle)]
pub extern "C" fn run_lane_report_device_fault(
    device_id: u32,
    stream_id: u32,
    code: i32,
) -> RunLaneStatus {
    guard(|| {
        lane_driver::report_device_fault(device_id, stream_id, code);
        Ok(RunLaneStatus::Ok)
    })
}

/// Writes to `*report_out` how installing the library's device fault notice monitor went
/// when this lane was created (`RunLaneConfig::fault_notice_monitor`, L-19): `NOT_ASKED`,
/// `INSTALLED`, or, when it was asked for and could not be installed, `UNAVAILABLE` (the
/// libascendcl lacks the callback or a getter: an older or trimmed CANN) or `REFUSED` (the
/// registration's code), with a line saying why and what still brings notices to the lane.
/// `run_lane_create` succeeds without the monitor, so this report is where that shows: check
/// it after a create that asked for one, and forward notices with
/// `run_lane_report_device_fault` when it is not `INSTALLED`. Returns at once (allowed from
/// callbacks). New in ABI 6 without a bump: no existing type or function changed.
///
/// # Safety
///
/// `report_out` is NULL (an error) or writable; any handle value is checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_notice_monitor(
    lane: *mut RunLane,
    report_out: *mut RunLaneNoticeMonitorReport,
) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        let report = monitor_to_c(lane.notice_monitor.as_ref());
        // SAFETY: NULL or writable (the caller's contract); NULL is refused.
        unsafe { write_out(report_out, report, "report_out") }?;
        Ok(RunLaneStatus::Ok)
    })
}

/// Writes the path of the libascendcl the lane runs on (ABI 13), NUL-terminated, into
/// `path_out` (`capacity` bytes): the file the dynamic loader mapped, so with
/// `RunLaneConfig::acl_prefer_loaded` the copy the process already loaded, when there was
/// one. `REFUSED` when the lane is not on the ACL backend (nothing written) or when the path
/// and its NUL need more than `capacity` bytes (the message says how many; nothing written).
/// Returns at once (allowed from callbacks).
///
/// # Safety
///
/// `path_out` is NULL (an error) or writable for `capacity` bytes; any handle value is
/// checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_acl_library(
    lane: *mut RunLane,
    path_out: *mut c_char,
    capacity: usize,
) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        non_null(path_out, "path_out")?;
        let path = lane.acl_library.as_ref().ok_or_else(|| {
            Error::new(
                RunLaneStatus::Refused,
                "the lane is not on the ACL backend: it loaded no libascendcl",
            )
        })?;
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        if bytes.len() >= capacity {
            return Err(Error::new(
                RunLaneStatus::Refused,
                format!(
                    "the libascendcl path needs {} bytes with its NUL, capacity is {capacity}: \
                     pass a larger buffer (PATH_MAX, 4096, always fits)",
                    bytes.len() + 1
                ),
            ));
        }
        // SAFETY: `path_out` is writable for `capacity` bytes (the caller's contract), more
        // than the path and its NUL; the path is ours, so the two do not overlap.
        unsafe {
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), path_out.cast::<u8>(), bytes.len());
            path_out.add(bytes.len()).write(0);
        }
        Ok(RunLaneStatus::Ok)
    })
}
