//! A lane's real-time Perfetto trace: `run_lane_trace_start` and `run_lane_trace_stop`.

use core::ffi::c_char;

use crate::error::{Error, guard, non_null};
use crate::registry::RunLane;
use crate::types::RunLaneStatus;

use super::LANES;

/// Starts the lane's real-time trace (ABI 12 addition): from now on every submit, runner
/// callback (prepare, the two launches, finalise) and outcome taken is recorded on the host's
/// monotonic clock, with one slice per run from its submit to its outcome (whose end carries
/// the verdict, the proof of overlap and the device start and end). `run_lane_trace_stop`
/// writes it to `path` as Chrome trace-event JSON, which Perfetto opens; destroying the lane
/// writes it too. Works on every backend (the simulator's own virtual-time trace is
/// `lane-sim --trace`). The file is created now: a path that cannot be written is
/// `REFUSED`, as is a second start before a stop. A trace keeps at most 1,000,000 events; it
/// then ends with one "trace truncated" instant counting the events dropped.
///
/// # Safety
///
/// `path` is NULL (an error) or a readable NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_trace_start(
    lane: *mut RunLane,
    path: *const c_char,
) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        non_null(path, "path")?;
        // SAFETY: non-NULL, NUL-terminated and readable (the caller's contract).
        let path = unsafe { core::ffi::CStr::from_ptr(path) };
        let path = path
            .to_str()
            .map_err(|_| Error::new(RunLaneStatus::Refused, "the trace path is not UTF-8"))?;
        crate::trace::start(lane.serial, std::path::PathBuf::from(path))
            .map_err(|e| Error::new(RunLaneStatus::Refused, e))?;
        Ok(RunLaneStatus::Ok)
    })
}

/// Stops the lane's real-time trace and writes it to the path `run_lane_trace_start` named.
/// `REFUSED` when the lane does not trace or the file cannot be written.
///
/// # Safety
///
/// None beyond passing a handle value (any value is checked).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_trace_stop(lane: *mut RunLane) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        crate::trace::stop(lane.serial).map_err(|e| Error::new(RunLaneStatus::Refused, e))?;
        Ok(RunLaneStatus::Ok)
    })
}
