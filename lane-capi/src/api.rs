//! The exported functions. Each runs inside [`guard`](crate::error::guard): it returns a
//! [`RunLaneStatus`], leaves a message for `run_lane_last_error` when it fails, and never lets a
//! panic out. This file holds what they share (the lane as held, the callback threads' marks,
//! the errors' statuses); its submodules hold the functions, by concern, in the header's order.

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::PoisonError;
use std::sync::atomic::AtomicU64;

use backend_acl::NoticeMonitor;
use lane_core::{ControlError, PublishError, SubmitError};
use lane_service::{LaneHandle, Report, ServiceError, WaitError};

use crate::claims::DeviceClaim;
use crate::error::{Error, non_null};
use crate::outcome::report_to_c;
use crate::registry::Registry;
use crate::runner::{Requests, run_user};
use crate::sized::{self, Sized13};
use crate::types::{RunLaneOutcome, RunLaneStatus};

mod diagnostics;
mod lifecycle;
mod queue;
mod run_controls;
mod spawn;
mod trace_recording;

pub use diagnostics::{
    run_lane_abi_version, run_lane_acl_library, run_lane_last_error, run_lane_notice_monitor,
    run_lane_report_device_fault,
};
pub use lifecycle::{
    run_lane_config_default, run_lane_create, run_lane_destroy, run_lane_destroy_with_report,
};
pub use queue::{
    run_lane_close, run_lane_device_reset, run_lane_poll, run_lane_publish, run_lane_submit,
    run_lane_wait,
};
pub use run_controls::{run_lane_activate, run_lane_cancel, run_lane_run_state};
pub use trace_recording::{run_lane_trace_start, run_lane_trace_stop};

/// One lane as the C API holds it.
struct Lane {
    handle: LaneHandle,
    requests: Requests,
    /// The runner has `on_outcome`: a run's request stays until it saw the outcome too.
    shows: bool,
    /// This lane's number among the process's lanes (from 1), the mark of its callback
    /// threads ([`CALLBACK_LANE`]).
    serial: u64,
    /// How installing the fault notice monitor went at the device's open (`None`: the
    /// simulator, which has none).
    notice_monitor: Option<NoticeMonitor>,
    /// The libascendcl the lane's device runs on, as the loader mapped it (`None`: not the
    /// ACL backend).
    acl_library: Option<std::path::PathBuf>,
    /// The lane's device id, held until the lane is dropped, after its threads are joined
    /// (L-25; `None`: the simulator, whose device is the lane's own).
    _claim: Option<DeviceClaim>,
}

/// Lane numbers handed out so far.
static LANES_MADE: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// On a thread that runs a lane's runner callbacks (its lane thread, its host workers),
    /// that lane's serial; 0 on every other thread. The lane thread and the workers run
    /// nothing of the caller's but its callbacks, so a call made on a marked thread comes from
    /// a callback. Every other thread that runs a lane's steps (its completion waiter, a bound
    /// submitter, a caller that drives the lane) is marked only for each callback
    /// ([`CallbackMark`]).
    static CALLBACK_LANE: Cell<u64> = const { Cell::new(0) };
}

/// The serial of the lane whose runner callback the calling thread runs (0: none), for the
/// lane's trace of its callbacks.
pub(crate) fn callback_lane() -> u64 {
    CALLBACK_LANE.with(Cell::get)
}

/// Marks the calling thread as one that runs lane `serial`'s callbacks.
fn mark_callback_thread(serial: u64) {
    CALLBACK_LANE.with(|lane| lane.set(serial));
}

/// Marks the calling thread as running one of lane `serial`'s runner callbacks until it is
/// dropped, then restores the mark it had: the completion waiter and a bound submitting
/// thread run a lane's steps (its launches among them) only at times, so they are marked
/// only for each callback.
pub(crate) struct CallbackMark {
    previous: u64,
}

impl CallbackMark {
    /// Marks the calling thread for lane `serial`.
    pub(crate) fn enter(serial: u64) -> Self {
        Self { previous: CALLBACK_LANE.with(|lane| lane.replace(serial)) }
    }
}

impl Drop for CallbackMark {
    fn drop(&mut self) {
        CALLBACK_LANE.with(|lane| lane.set(self.previous));
    }
}

/// Refuses a call that blocks (`what`) from any lane's runner callback: it would stall that
/// lane's thread; on its own lane it would wait for itself, and two lanes waiting on each
/// other would never wake. The non-blocking calls (submit, publish, poll, close) are allowed.
fn refuse_in_callback(what: &str, target: Option<u64>) -> Result<(), Error> {
    let caller = CALLBACK_LANE.with(Cell::get);
    if caller == 0 {
        return Ok(());
    }
    let message = match target {
        Some(target) if target == caller => format!(
            "{what} was called from a runner callback of this lane (on the thread running its steps), which it would wait for; call it from another thread (a callback can take outcomes with run_lane_poll)"
        ),
        Some(_) => format!(
            "{what} was called from a runner callback of another lane: a callback must not block its own lane's thread, and two lanes waiting on each other would never wake; call it from another thread (a callback can take outcomes with run_lane_poll)"
        ),
        None => format!(
            "{what} was called from a runner callback: it would block that lane's thread while the new lane starts (and a probe would bind the thread to the new lane's device); create lanes from the runtime's own threads"
        ),
    };
    Err(Error::new(RunLaneStatus::WrongThread, message))
}

impl Lane {
    /// Refuses to run `what`, a call that blocks, from a runner callback (see
    /// [`refuse_in_callback`]).
    fn not_in_callback(&self, what: &str) -> Result<(), Error> {
        refuse_in_callback(what, Some(self.serial))
    }

    /// The C outcome of a report just taken, with its run's `user`; forgets the request of
    /// the item (its outcome was taken).
    fn taken(&self, report: &Report) -> RunLaneOutcome {
        let mut c = report_to_c(report);
        c.run_user = run_user(&self.requests, &report.outcome);
        crate::trace::outcome(self.serial, &c);
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .taken(report.outcome.seq(), self.shows);
        c
    }

    /// Whether `id` names a run whose outcome is not taken yet (its request is recorded).
    fn is_run(&self, id: u64) -> bool {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).get(id).is_some()
    }
}

static LANES: Registry<Lane> = Registry::new();

/// The status and message of a refused command or a lost lane, in the C ABI's words where
/// the service's name its Rust calls.
fn service_error(error: &ServiceError) -> Error {
    let message: Cow<'static, str> = match error {
        // The documented loop meets this once a run: static text, so it allocates nothing.
        ServiceError::Submit(SubmitError::Full { .. }) => Cow::Borrowed(
            "every slot holds a run without an outcome; take an outcome (run_lane_wait for the oldest, or run_lane_poll) and submit again",
        ),
        ServiceError::Publish(PublishError::Full) => format!(
            "{} publications are already waiting; take an outcome (run_lane_wait or run_lane_poll) and publish again",
            lane_core::MAX_PENDING_PUBLICATIONS
        )
        .into(),
        // The lane's words name its Rust call; a C caller looks for the C function.
        ServiceError::Submit(SubmitError::Unusable { .. } | SubmitError::UnusableAfterNotice { .. })
        | ServiceError::Publish(
            PublishError::Unusable { .. } | PublishError::UnusableAfterNotice { .. },
        ) => error
            .to_string()
            .replace("(device_reset)", "(run_lane_device_reset)")
            .into(),
        ServiceError::Lost(_) => format!(
            "{error}; the lane takes nothing more: destroy it (run_lane_destroy) and create a new one"
        )
        .into(),
        _ => error.to_string().into(),
    };
    let status = match error {
        ServiceError::Submit(SubmitError::Full { .. })
        | ServiceError::Publish(PublishError::Full) => RunLaneStatus::Full,
        ServiceError::Submit(SubmitError::Closed) | ServiceError::Publish(PublishError::Closed) => {
            RunLaneStatus::Closed
        }
        ServiceError::Submit(SubmitError::Poisoned { .. })
        | ServiceError::Publish(PublishError::Poisoned { .. }) => RunLaneStatus::Recovering,
        ServiceError::Submit(SubmitError::Suspect { .. })
        | ServiceError::Publish(PublishError::Suspect { .. }) => RunLaneStatus::Suspect,
        ServiceError::Submit(
            SubmitError::Unusable { .. } | SubmitError::UnusableAfterNotice { .. },
        )
        | ServiceError::Publish(
            PublishError::Unusable { .. } | PublishError::UnusableAfterNotice { .. },
        )
        | ServiceError::DeviceReset(_) => RunLaneStatus::Unusable,
        ServiceError::Submit(SubmitError::Lost { .. } | SubmitError::LostAfterNotice { .. })
        | ServiceError::Publish(PublishError::Lost { .. } | PublishError::LostAfterNotice { .. })
        | ServiceError::Lost(_) => RunLaneStatus::Lost,
        ServiceError::OwnThread => RunLaneStatus::WrongThread,
        ServiceError::Control(ControlError::Unknown { .. }) => RunLaneStatus::UnknownItem,
        ServiceError::Control(ControlError::Launched { .. } | ControlError::Uploading { .. }) => {
            RunLaneStatus::Started
        }
        ServiceError::Control(ControlError::Finished { .. } | ControlError::NotHeld { .. }) => {
            RunLaneStatus::Refused
        }
        ServiceError::Make(_)
        | ServiceError::Waiter(_)
        | ServiceError::Thread(_)
        | ServiceError::Worker { .. } => RunLaneStatus::BackendUnavailable,
        ServiceError::Submit(_) => RunLaneStatus::Refused,
    };
    Error::new(status, message)
}

fn wait_error(error: &WaitError) -> Error {
    let status = match error {
        WaitError::TimedOut { .. } => RunLaneStatus::TimedOut,
        WaitError::Lost { .. } => RunLaneStatus::Lost,
        WaitError::Unknown { .. } => RunLaneStatus::UnknownItem,
        WaitError::AlreadyTaken { .. } => RunLaneStatus::AlreadyTaken,
    };
    Error::new(status, error.to_string())
}

/// Writes a value through a C out pointer by the `size` the caller set in it.
///
/// # Safety
///
/// `out` is NULL or valid for a write of the `size` bytes its first field states.
unsafe fn write_out<T: Sized13>(out: *mut T, value: T, what: &str) -> Result<(), Error> {
    non_null(out, what)?;
    // SAFETY: non-NULL and writable for its `size` (this function's contract).
    unsafe { sized::write_out(out, value) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lane_core::status_latch::Failure;
    use lane_core::{Cause, RunId};
    use lane_service::LostCause;

    #[test]
    fn refusals_and_a_lost_lane_map_to_their_statuses_with_the_message() {
        let cause = Cause::of(Failure::HostWaitTimeout);
        let lost = ServiceError::Lost(LostCause::new("the device panicked"));
        for (error, status) in [
            (ServiceError::Submit(SubmitError::Full { slots: 2 }), RunLaneStatus::Full),
            (ServiceError::Submit(SubmitError::Closed), RunLaneStatus::Closed),
            (ServiceError::Publish(PublishError::Full), RunLaneStatus::Full),
            (
                ServiceError::Submit(SubmitError::Poisoned { origin: RunId(1), cause }),
                RunLaneStatus::Recovering,
            ),
            (
                ServiceError::Submit(SubmitError::Lost { origin: RunId(1), cause }),
                RunLaneStatus::Lost,
            ),
            (lost.clone(), RunLaneStatus::Lost),
            (ServiceError::Make("no device".into()), RunLaneStatus::BackendUnavailable),
        ] {
            let mapped = service_error(&error);
            assert_eq!(mapped.status, status, "{error}");
            assert!(!mapped.message.is_empty(), "{error}");
        }
        let lost = service_error(&lost).message;
        assert!(lost.contains("the device panicked"), "{lost}");
        assert!(lost.contains("run_lane_destroy"), "{lost}");
        let full = service_error(&ServiceError::Submit(SubmitError::Full { slots: 2 })).message;
        assert!(
            full.contains("run_lane_wait") && !full.contains("poll_outcome"),
            "in the C ABI's words: {full}"
        );
        let closed = service_error(&ServiceError::Submit(SubmitError::Closed));
        assert_eq!(closed.message, SubmitError::Closed.to_string());
    }

    #[test]
    fn wait_errors_map_to_their_statuses() {
        let cause = LostCause::new("gone");
        for (error, status) in [
            (WaitError::TimedOut { item: 1 }, RunLaneStatus::TimedOut),
            (WaitError::Lost { item: 1, cause }, RunLaneStatus::Lost),
            (WaitError::Unknown { item: 1 }, RunLaneStatus::UnknownItem),
            (WaitError::AlreadyTaken { item: 1 }, RunLaneStatus::AlreadyTaken),
        ] {
            assert_eq!(wait_error(&error).status, status, "{error}");
        }
    }
}
