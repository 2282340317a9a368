//! Run controls (ABI 11, issue 45): activate a held run, cancel one, read a run's state.

use lane_core::{PublicationId, RunId};
use lane_service::ItemId;

use crate::error::{Error, guard, non_null};
use crate::outcome::run_status_to_c;
use crate::registry::RunLane;
use crate::sized;
use crate::types::{RunLaneRunStatus, RunLaneStatus};

use super::{LANES, service_error};

/// Activates run `run`, submitted held (ABI 11, `RunLaneSubmit::held`): it launches once its
/// turn comes (it may be prepared already). Returns at once. `REFUSED` for a run not held
/// (never, or activated already) or with its outcome decided; `UNKNOWN_ITEM` for an id the
/// lane holds no run by (never accepted, or its outcome taken).
#[unsafe(no_mangle)]
pub extern "C" fn run_lane_activate(lane: *mut RunLane, run: u64) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        lane.handle.activate(RunId(run)).map_err(|e| service_error(&e))?;
        Ok(RunLaneStatus::Ok)
    })
}

/// Cancels item `id` before it starts (ABI 11): a run before its launch (queued, preparing,
/// prepared, held, or its launch declined) or a publication before its upload. Returns at
/// once; the item gets a `CANCELLED` outcome in its turn, a prepared run after its `finalise`
/// (no copy-back). Cancelling a cancelled item again is `OK`. `STARTED` for a launched run
/// (it finishes with its own verdict) or an upload that started; `REFUSED` for an item with
/// another outcome decided; `UNKNOWN_ITEM` for an id the lane holds nothing by.
#[unsafe(no_mangle)]
pub extern "C" fn run_lane_cancel(lane: *mut RunLane, id: u64) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        let item = if lane.is_run(id) {
            ItemId::Run(RunId(id))
        } else {
            ItemId::Publication(PublicationId(id))
        };
        lane.handle.cancel(item).map_err(|e| service_error(&e))?;
        Ok(RunLaneStatus::Ok)
    })
}

/// Where run `run` stands (ABI 11): `QUEUED`, `PREPARING`, `PREPARED`, `LAUNCHED` or `DONE`
/// (its outcome decided, not taken yet), whether it is held, how many launches it declined,
/// its key. Never blocks. `UNKNOWN_ITEM` once its outcome was taken, or for an id the lane
/// never gave a run.
///
/// # Safety
///
/// `status_out` is NULL (an error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn run_lane_run_state(
    lane: *mut RunLane,
    run: u64,
    status_out: *mut RunLaneRunStatus,
) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        non_null(status_out, "status_out")?;
        // SAFETY: checked non-NULL; readable (the caller's contract).
        unsafe { sized::check_out(status_out) }?;
        let status = lane.handle.run_status(RunId(run)).ok_or_else(|| {
            Error::new(
                RunLaneStatus::UnknownItem,
                format!("the lane holds no run {run}: never accepted, or its outcome was taken"),
            )
        })?;
        // SAFETY: checked non-NULL; writable for its `size` (the caller's contract).
        unsafe { sized::write_out(status_out, run_status_to_c(&status)) }?;
        Ok(RunLaneStatus::Ok)
    })
}
