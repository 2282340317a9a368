//! A lane's life: the default config, `run_lane_create`, `run_lane_destroy(_with_report)`.

use crate::config;
use crate::error::{Error, guard, non_null};
use crate::outcome::close_to_c;
use crate::registry::RunLane;
use crate::sized;
use crate::types::{RunLaneCloseReport, RunLaneConfig, RunLaneStatus};

use super::spawn::spawn;
use super::{LANES, refuse_in_callback, service_error, write_out};

/// Fills `config` with the defaults: this ABI version, a2a3 on the ACL backend, the profile's
/// slots and timeouts, device 0, the library searched, no callbacks. Set `config->size` first
/// (ABI 13; `RUN_LANE_INIT(config)`): the call writes that many bytes and keeps the size.
///
/// # Safety
///
/// `config` is NULL (an error) or valid for a write of the `size` bytes its first field
/// states.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_config_default(config: *mut RunLaneConfig) -> RunLaneStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe { write_out(config, config::default_config(), "config") }?;
        Ok(RunLaneStatus::Ok)
    })
}

/// Creates a lane: validates `config`, starts the lane thread, opens the backend on it and
/// writes the new handle to `*lane_out`. The handle is an opaque token: pass it to the other
/// functions from any thread, and to `run_lane_destroy` once. Refused (`WRONG_THREAD`) from a
/// runner callback of any lane: it blocks while the new lane starts.
///
/// # Safety
///
/// `config` is NULL (an error) or points to a readable `RunLaneConfig` of the `size` its
/// first field states, whose
/// `acl_library_path` is NULL or a NUL-terminated string; `lane_out` is NULL (an error) or
/// valid for a write of a pointer. The runner's callbacks and `user` must stay valid until
/// `run_lane_destroy` returns.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_create(
    config: *const RunLaneConfig,
    lane_out: *mut *mut RunLane,
) -> RunLaneStatus {
    guard(|| {
        non_null(lane_out, "lane_out")?;
        non_null(config, "config")?;
        // SAFETY: non-NULL; readable for its `size` (the caller's contract).
        let config = unsafe { sized::read_in(config) }?;
        refuse_in_callback("run_lane_create", None)?;
        // SAFETY: the library path is NULL or a NUL-terminated string (the caller's contract).
        let settings = unsafe { config::read(&config) }?;
        let lane = spawn(settings)?;
        // Before the handle exists, so a trace start on it is never refused as destroyed.
        crate::trace::lane_created(lane.serial);
        let handle = LANES.insert(lane);
        // SAFETY: checked non-NULL above; valid for a write (the caller's contract).
        unsafe { lane_out.write(handle) };
        Ok(RunLaneStatus::Ok)
    })
}

/// Destroys a lane: closes it if still open, lets launched runs finish (each bounded by its
/// deadline), destroys once more any stream the teardown left, joins the lane thread, the
/// completion waiter and the host workers (where the caller drives the lane, runs the lane's
/// steps to their end on this thread instead), and invalidates the handle. Outcomes not taken
/// are dropped (`run_lane_destroy_with_report` counts them: `untaken`, ABI 13). A call on the lane in flight on another thread ends too (a `run_lane_wait`
/// returns `LOST` unless its outcome came first); after this returns no callback runs. Refused
/// (`WRONG_THREAD`) from a runner callback of any lane (it waits for the lane's threads). A
/// second destroy of the same handle returns `INVALID_HANDLE`. `run_lane_destroy_with_report`
/// does the same and says what the teardown left. When the lane was lost to a completion
/// waiter stuck in a device call past every bound (L-20), it waits about a second for that
/// thread, then leaves it and returns `LOST` (ABI 8): the handle is gone all the same, the
/// report's `threads_left` is 1 and `run_lane_last_error()` names the thread.
///
/// # Safety
///
/// None beyond passing a handle value (any value is checked).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_destroy(lane: *mut RunLane) -> RunLaneStatus {
    guard(|| destroy(lane, std::ptr::null_mut(), "run_lane_destroy"))
}

/// As `run_lane_destroy`, and writes the lane's final close report to `*report_out` (ABI 3):
/// `CLOSED` (or `LOST`), the poison if there was one, and `streams_left` with each surviving
/// stream's code after every destroy the lane tried (the teardown's, its retry, and the one
/// more this call makes), so nothing is leaked silently. `report_out` may be NULL.
///
/// # Safety
///
/// `report_out` is NULL or writable; any handle value is checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_destroy_with_report(
    lane: *mut RunLane,
    report_out: *mut RunLaneCloseReport,
) -> RunLaneStatus {
    guard(|| destroy(lane, report_out, "run_lane_destroy_with_report"))
}

/// The body of both destroys (`what` names the caller).
fn destroy(
    lane: *mut RunLane,
    report_out: *mut RunLaneCloseReport,
    what: &str,
) -> Result<RunLaneStatus, Error> {
    LANES.get(lane)?.not_in_callback(what)?;
    if !report_out.is_null() {
        // SAFETY: non-NULL; readable (the callers' contract). Checked before the handle is
        // taken, so a refused size leaves the lane as it was.
        unsafe { sized::check_out(report_out) }?;
    }
    let lane = LANES.remove(lane)?;
    // A trace still recording is written now (its lane is gone after this), and a trace
    // start that found the lane before its removal is refused from now on.
    crate::trace::lane_destroyed(lane.serial);
    // Shut down whatever other references exist (a call in flight on another thread holds
    // one): the threads are joined here, so no callback runs after this returns.
    let shutdown = lane.handle.shut_down().map_err(|e| service_error(&e))?;
    // Every item has its outcome now: what is still in the lane was never taken.
    let untaken = lane.handle.take_untaken();
    if !report_out.is_null() {
        let mut report = close_to_c(&shutdown.report);
        report.threads_left = u8::from(shutdown.left.is_some());
        report.untaken = u32::try_from(untaken.len()).unwrap_or(u32::MAX);
        for (slot, item) in report.untaken_ids.iter_mut().zip(&untaken) {
            *slot = item.outcome.seq();
        }
        // SAFETY: non-NULL; writable for its `size` (the callers' contract).
        unsafe { sized::write_out(report_out, report) }?;
    }
    match shutdown.left {
        Some(left) => Err(Error::new(
            RunLaneStatus::Lost,
            format!("{what}: the lane is destroyed, but {left}"),
        )),
        None => Ok(RunLaneStatus::Ok),
    }
}
