//! The item queue: submit, publish, close, a device reset, and taking outcomes (poll, wait).

use std::sync::PoisonError;
use std::time::Duration;

use lane_core::{CodeRef, RunId, RunRequest};

use crate::error::{Error, guard, non_null};
use crate::outcome::{close_to_c, empty_outcome};
use crate::registry::RunLane;
use crate::runner::Requested;
use crate::sized;
use crate::types::{RunLaneCloseReport, RunLaneOutcome, RunLaneStatus, RunLaneSubmit};

use super::{LANES, service_error, wait_error};

/// Submits a run; returns at once with its id in `*run_out`, or a refusal (`FULL`,
/// `CLOSED`, `RECOVERING`, `LOST`, `REFUSED`). Its callbacks may start before this returns.
///
/// # Safety
///
/// `request` is NULL (an error) or readable; `run_out` is NULL (an error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_submit(
    lane: *mut RunLane,
    request: *const RunLaneSubmit,
    run_out: *mut u64,
) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        non_null(request, "request")?;
        // SAFETY: non-NULL; readable for its `size` (the caller's contract).
        let request = unsafe { sized::read_in(request) }?;
        non_null(run_out, "run_out")?;
        let mut lane_request = RunRequest::new();
        if request.has_tag {
            lane_request = lane_request.tagged(request.tag);
        }
        if request.diagnostics {
            lane_request = lane_request.with_diagnostics();
        }
        if request.has_key {
            lane_request = lane_request.keyed(request.key);
        }
        if request.held {
            lane_request = lane_request.held();
        }
        if request.has_epoch {
            lane_request = lane_request.with_epoch(request.epoch);
        }
        // Recorded as the lane accepts the run, before its first callback (which reads its
        // request) can start: with submitters_bound that callback may run on this thread,
        // inside the submit.
        let requested = Requested {
            tag: request.has_tag.then_some(request.tag),
            diagnostics: request.diagnostics,
            copy_back: request.copy_back,
            user: request.user.expose_provenance(),
            ..Requested::default()
        };
        let run: RunId = lane
            .handle
            .submit_noting(lane_request, |run| {
                crate::trace::submitted(lane.serial, run.0);
                lane.requests
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(run.0, requested);
            })
            .map_err(|e| service_error(&e))?;
        // SAFETY: checked non-NULL; writable (the caller's contract).
        unsafe { run_out.write(run.0) };
        Ok(RunLaneStatus::Ok)
    })
}

/// Publishes AICore code (`code` is the runner's own reference, passed to `upload_code`);
/// returns at once with the publication id in `*publication_out`. A publication is a drain
/// barrier: runs submitted after it launch after the upload, on a fresh AICore stream.
///
/// # Safety
///
/// `publication_out` is NULL (an error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_publish(
    lane: *mut RunLane,
    code: u64,
    publication_out: *mut u64,
) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        non_null(publication_out, "publication_out")?;
        let publication = lane.handle.publish(CodeRef(code)).map_err(|e| service_error(&e))?;
        // SAFETY: checked non-NULL; writable (the caller's contract).
        unsafe { publication_out.write(publication.0) };
        Ok(RunLaneStatus::Ok)
    })
}

/// Closes the lane: admission stops, launched runs finish, queued runs are cancelled; every
/// accepted item still gets its outcome, then the streams are destroyed. Returns at once;
/// `report_out` may be NULL. The report is the lane's state now: called again once the lane
/// is `CLOSED` it names the streams the teardown left (`streams_left`); the final report,
/// after the last retry, comes from `run_lane_destroy_with_report`.
///
/// # Safety
///
/// `report_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_close(
    lane: *mut RunLane,
    report_out: *mut RunLaneCloseReport,
) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        if !report_out.is_null() {
            // SAFETY: non-NULL; readable (the caller's contract).
            unsafe { sized::check_out(report_out) }?;
        }
        let report = lane.handle.close().map_err(|e| service_error(&e))?;
        if !report_out.is_null() {
            // SAFETY: non-NULL; writable for its `size` (the caller's contract).
            unsafe { sized::write_out(report_out, close_to_c(&report)) }?;
        }
        Ok(RunLaneStatus::Ok)
    })
}

/// Reports that the runtime reset the device (ABI 8; `RUN_LANE_RECOVERY_RUNTIME`, SPEC
/// L-24): the lane, which has made no device call since `on_poison`, forgets its handles and
/// reopens on fresh streams; submits are accepted again. Returns at once. `UNUSABLE` when the
/// lane awaits no reset (the runtime does not own its recovery, no poison handed the device
/// over, or the reset was reported already); nothing changes then.
#[unsafe(no_mangle)]
pub extern "C" fn run_lane_device_reset(lane: *mut RunLane) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        lane.handle.device_reset().map_err(|e| service_error(&e))?;
        Ok(RunLaneStatus::Ok)
    })
}

/// Takes the next outcome in submission order, without blocking: `OK` with `*outcome_out`
/// filled, or `EMPTY` when none is ready, with `*outcome_out` an empty outcome (verdict
/// `NONE`, id 0: never read as success, ABI 13). Set `outcome_out->size` first (ABI 13); a
/// size refused takes no outcome. `LOST` once the lane
/// thread died and every delivered outcome was taken.
///
/// # Safety
///
/// `outcome_out` is NULL (an error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_poll(
    lane: *mut RunLane,
    outcome_out: *mut RunLaneOutcome,
) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        non_null(outcome_out, "outcome_out")?;
        // SAFETY: checked non-NULL; readable (the caller's contract). Before the take, so a
        // refused size loses no outcome.
        unsafe { sized::check_out(outcome_out) }?;
        let (status, outcome) = match lane.handle.poll_report() {
            Some(report) => (RunLaneStatus::Ok, lane.taken(&report)),
            None => (RunLaneStatus::Empty, empty_outcome()),
        };
        // SAFETY: checked non-NULL; writable for its `size` (the caller's contract).
        unsafe { sized::write_out(outcome_out, outcome) }?;
        if status == RunLaneStatus::Empty {
            if let Some(cause) = lane.handle.lost() {
                return Err(Error::new(RunLaneStatus::Lost, format!("the lane is lost: {cause}")));
            }
        }
        Ok(status)
    })
}

/// Blocks the calling thread until item `id`'s outcome (a run or publication id) or
/// `timeout_ms` passes, and takes it: `OK`, `TIMED_OUT` (it can be waited for again),
/// `UNKNOWN_ITEM`, `ALREADY_TAKEN`, `LOST`. Refused (`WRONG_THREAD`) from a runner callback of
/// any lane (take outcomes there with `run_lane_poll`).
///
/// # Safety
///
/// `outcome_out` is NULL (an error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_wait(
    lane: *mut RunLane,
    id: u64,
    timeout_ms: u32,
    outcome_out: *mut RunLaneOutcome,
) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        lane.not_in_callback("run_lane_wait")?;
        non_null(outcome_out, "outcome_out")?;
        // SAFETY: checked non-NULL; readable (the caller's contract). Before the wait, so a
        // refused size loses no outcome.
        unsafe { sized::check_out(outcome_out) }?;
        let report = lane
            .handle
            .wait_report(RunId(id), Duration::from_millis(u64::from(timeout_ms)))
            .map_err(|e| wait_error(&e))?;
        let outcome = lane.taken(&report);
        // SAFETY: checked non-NULL; writable for its `size` (the caller's contract).
        unsafe { sized::write_out(outcome_out, outcome) }?;
        Ok(RunLaneStatus::Ok)
    })
}
