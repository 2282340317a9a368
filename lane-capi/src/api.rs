//! The exported functions. Each runs inside [`guard`]: it returns a [`RunLaneStatus`],
//! leaves a message for `run_lane_last_error` when it fails, and never lets a panic out.

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, PoisonError};
use std::time::Duration;

use backend_acl::{AclConfig, AclDevice, Library, NoticeMonitor};
use backend_sim::costs::Costs;
use backend_sim::{RunTimes, SharedSim, SimDevice, SimRunner};
use core::ffi::c_char;
use lane_core::{
    CodeRef, ControlError, Profile, PublicationId, PublishError, RunId, RunRequest, SubmitError,
};
use lane_driver::HostWorker;
use lane_service::{Drive, ItemId, LaneHandle, Report, ServiceConfig, ServiceError, WaitError};

use crate::claims::{self, DeviceClaim};
use crate::config::{self, BackendChoice, ProfileChoice, Settings};
use crate::device_ops::TableDevice;
use crate::error::{Error, guard, last_error_ptr};
use crate::outcome::{close_to_c, empty_outcome, monitor_to_c, report_to_c, run_status_to_c};
use crate::registry::{Registry, RunLane};
use crate::runner::{
    Binding, CRunner, CWorker, Deferred, NoModel, Requested, Requests, Vtable, deferred, run_user,
};
use crate::sized::{self, Sized13};
use crate::types::{
    RUN_LANE_ABI_VERSION, RunLaneCloseReport, RunLaneConfig, RunLaneNoticeMonitorReport,
    RunLaneOutcome, RunLaneRunStatus, RunLaneStatus, RunLaneSubmit,
};

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
        Self {
            previous: CALLBACK_LANE.with(|lane| lane.replace(serial)),
        }
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
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .is_some()
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

/// What the service's config takes from the C config beside the profile and the vtable.
#[derive(Clone, Copy, Debug)]
struct Knobs {
    workers: usize,
    submitters_bound: bool,
    check_invariants: bool,
    drive: Drive,
    /// The lane's serial: its callbacks' mark.
    serial: u64,
}

/// The service's config: `profile`, the vtable's outcome callback, the host workers, the
/// submitting threads' binding, the invariant checks and who drives the lane.
fn service_config(
    profile: Profile,
    vtable: Vtable,
    knobs: Knobs,
    requests: &Requests,
) -> ServiceConfig {
    let mut config = ServiceConfig::new(profile);
    config.on_outcome = vtable.outcome_callback(knobs.serial, Arc::clone(requests));
    config.workers = knobs.workers;
    config.submitters_bound = knobs.submitters_bound;
    config.check_invariants = knobs.check_invariants;
    config.drive = knobs.drive;
    config
}

/// Marks the thread `make` runs on as the lane's callback thread: the lane thread. Where the
/// caller drives the lane `make` runs on the creating thread, which is the caller's own and
/// stays unmarked (its callbacks mark it for their duration).
fn mark_lane_thread(drive: Drive, serial: u64) {
    if drive == Drive::LaneThreads {
        mark_callback_thread(serial);
    }
}

/// Spawns the service for `settings` on its backend: with host workers for `prepare` and
/// `finalise` when the config asks for them (the service starts them only if the vtable
/// declares `concurrency.off_lane_thread`).
fn spawn(settings: Settings) -> Result<Lane, Error> {
    let requests = Requests::default();
    let runner_requests = Arc::clone(&requests);
    let serial = LANES_MADE.fetch_add(1, Ordering::Relaxed) + 1;
    let workers = settings.workers;
    let drive = settings.drive;
    let knobs = Knobs {
        workers,
        submitters_bound: settings.submitters_bound,
        check_invariants: settings.check_invariants,
        drive,
        serial,
    };
    let vtable = settings.vtable;
    let off_lane = workers > 0 && vtable.concurrency().off_lane_thread;
    // What the backend's open said about its own failure, when it knows better than "the
    // backend is unavailable" (the service hands back only the open's text).
    let open_status: Arc<OnceLock<RunLaneStatus>> = Arc::new(OnceLock::new());
    let lane_open_status = Arc::clone(&open_status);
    // How the device's open installed the notice monitor: set by the lane thread's `make`,
    // which the spawn waits for.
    let monitor: Arc<OnceLock<NoticeMonitor>> = Arc::new(OnceLock::new());
    let lane_monitor = Arc::clone(&monitor);
    // The libascendcl the device's open loaded (ACL only), set by the same `make`.
    let library: Arc<OnceLock<std::path::PathBuf>> = Arc::new(OnceLock::new());
    let lane_library = Arc::clone(&library);
    let mut claim = None;
    let handle = match settings.backend {
        BackendChoice::Sim { seed, run_ns } => {
            // The simulator models an a2a3-shaped device; a probe reports a2a3.
            let profile = match settings.profile {
                ProfileChoice::Fixed(profile) => profile,
                ProfileChoice::Probe(overrides) => overrides.apply(Profile::a2a3())?,
            };
            let layout = profile.header();
            // The simulator's runner keeps its bookkeeping in the simulated device: the
            // workers leave its share for the lane thread. Nothing to bind.
            let deferred = if off_lane { deferred() } else { None };
            let runner_deferred = deferred.clone();
            with_workers(
                service_config(profile, vtable, knobs, &requests),
                move || {
                    mark_lane_thread(drive, serial);
                    // Shared with the service's completion waiter, which makes its waits.
                    let device = SharedSim::new(SimDevice::new(
                        Costs::default(),
                        layout,
                        seed,
                        RunTimes {
                            device_ns: run_ns,
                            jitter_ppm: 0,
                        },
                    ));
                    let runner = CRunner::new(vtable, runner_requests, SimRunner, runner_deferred, serial);
                    Ok::<_, String>((device, runner))
                },
                worker_factory(vtable, (&requests, serial), deferred, None),
            )
        }
        BackendChoice::Acl {
            device_id,
            library,
            notice_monitor,
            prefer_loaded,
        } => {
            // L-25: one lane per device id, refused before anything is opened.
            let held = claims::claim(device_id, serial)
                .map_err(|claimed| Error::new(RunLaneStatus::BackendUnavailable, claimed.to_string()))?;
            claim = Some(held);
            let library = library.map_or(Library::Search, Library::Path);
            let open_config = |profile| AclConfig {
                library: library.clone(),
                device_id,
                profile,
                init: false,
                notice_monitor,
                prefer_loaded,
            };
            let profile = match settings.profile {
                ProfileChoice::Fixed(profile) => profile,
                // The profile must be known before the lane thread starts: a first open on
                // this thread probes the SoC (and binds this thread, as the runtime's own
                // would be), then the lane thread opens the device with the final profile.
                ProfileChoice::Probe(overrides) => {
                    let probed = AclDevice::probe_profile(&open_config(None)).map_err(|e| {
                        Error::new(RunLaneStatus::BackendUnavailable, e.to_string())
                    })?;
                    overrides.apply(probed)?
                }
            };
            // L-21: the device op timeout is process-wide; a lane asking for another value
            // than the one in force is a bad config, not a missing backend.
            let asked_us = profile.device_op_timeout_ns().div_ceil(1_000).max(1);
            if let Some(in_force_us) = backend_acl::op_timeout_in_force_us() {
                if in_force_us != asked_us {
                    return Err(Error::new(
                        RunLaneStatus::InvalidConfig,
                        format!(
                            "device_op_timeout_ms asks for {asked_us} us, but {in_force_us} us is in force in this \
                             process (aclrtSetOpExecuteTimeOutV2 is process-wide): give every lane of the process \
                             the same device op timeout, or destroy the lanes using {in_force_us} us first"
                        ),
                    ));
                }
            }
            let config = open_config(Some(profile));
            // The lane thread opens the device and leaves the workers its binding; the
            // service makes the workers only after the lane thread's `make` returned.
            let binding: Arc<OnceLock<Binding>> = Arc::new(OnceLock::new());
            let lane_binding = Arc::clone(&binding);
            with_workers(
                service_config(profile, vtable, knobs, &requests),
                move || {
                    mark_lane_thread(drive, serial);
                    let (device, _) = AclDevice::open(config).map_err(|e| {
                        if let Some(status) = open_failure_status(&e) {
                            let _ = lane_open_status.set(status);
                        }
                        e.to_string()
                    })?;
                    let _ = lane_binding.set(Binding::Acl(device.worker_binding()));
                    let _ = lane_monitor.set(device.notice_monitor().clone());
                    let _ = lane_library.set(device.library_path().to_path_buf());
                    let runner = CRunner::new(vtable, runner_requests, NoModel, None, serial)
                        .reading_text_from(Binding::Acl(device.worker_binding()));
                    Ok::<_, String>((device, runner))
                },
                worker_factory(vtable, (&requests, serial), None, Some(binding)),
            )
        }
        BackendChoice::DeviceOps { device_id, ops } => {
            // Nothing to probe a SoC through: the config refuses PROBE on this backend.
            let ProfileChoice::Fixed(profile) = settings.profile else {
                return Err(Error::new(
                    RunLaneStatus::InvalidConfig,
                    config::PROBE_WITH_DEVICE_OPS,
                ));
            };
            // L-25 as on ACL: the device id is the device's (notices name it), and the table's
            // reset destroys everything on it, so one lane per device id, whichever backend.
            let held = claims::claim(device_id, serial).map_err(|claimed| {
                Error::new(RunLaneStatus::BackendUnavailable, claimed.to_string())
            })?;
            claim = Some(held);
            // As on ACL: the lane thread opens (binds) the device and leaves the workers their
            // binding before the service makes them.
            let binding: Arc<OnceLock<Binding>> = Arc::new(OnceLock::new());
            let lane_binding = Arc::clone(&binding);
            with_workers(
                service_config(profile, vtable, knobs, &requests),
                move || {
                    mark_lane_thread(drive, serial);
                    let device = TableDevice::open(ops, device_id).map_err(|(code, text)| {
                        format!(
                            "the runtime's device table's bind failed on the lane thread with \
                             {code}{}; check the table's bind entry and its device",
                            text.map(|t| format!(" ({t})")).unwrap_or_default()
                        )
                    })?;
                    let _ = lane_binding.set(Binding::Table(device.binding()));
                    let runner = CRunner::new(vtable, runner_requests, NoModel, None, serial)
                        .reading_text_from(Binding::Table(device.binding()));
                    Ok::<_, String>((device, runner))
                },
                worker_factory(vtable, (&requests, serial), None, Some(binding)),
            )
        }
    }
    .map_err(|e| {
        let mut error = service_error(&e);
        if let (ServiceError::Make(_), Some(status)) = (&e, open_status.get()) {
            error.status = *status;
        }
        error
    })?;
    Ok(Lane {
        handle,
        requests,
        shows: vtable.get().on_outcome.is_some(),
        serial,
        notice_monitor: monitor.get().cloned(),
        acl_library: library.get().cloned(),
        _claim: claim,
    })
}

/// The status of a failed [`AclDevice::open`] when it is not `BACKEND_UNAVAILABLE`: another
/// lane's device op timeout in force (L-21) is the config's fault, `INVALID_CONFIG`, whether
/// `spawn`'s pre-check saw it or a lane created concurrently set it after that check.
fn open_failure_status(error: &backend_acl::AclError) -> Option<RunLaneStatus> {
    match error {
        backend_acl::AclError::OpTimeoutInForce { .. } => Some(RunLaneStatus::InvalidConfig),
        _ => None,
    }
}

/// The factory of the host workers: each binds the device on its own thread (`binding`, ACL's
/// or the runtime's table's, set by the lane thread's `make`, which the service runs first;
/// `None` on the simulator),
/// then calls the vtable's prepare and finalise.
fn worker_factory(
    vtable: Vtable,
    (requests, serial): (&Requests, u64),
    deferred: Deferred,
    binding: Option<Arc<OnceLock<Binding>>>,
) -> impl Fn(usize) -> Result<Box<dyn HostWorker>, String> + Send + Sync + 'static {
    let requests = Arc::clone(requests);
    move |_index| {
        mark_callback_thread(serial);
        let binding = match &binding {
            Some(cell) => Some(
                cell.get()
                    .cloned()
                    .ok_or_else(|| "the device was not opened before the workers".to_owned())?,
            ),
            None => None,
        };
        let worker = CWorker::new(vtable, Arc::clone(&requests), deferred.clone(), binding)
            .map_err(|code| format!("binding the worker to the device failed: {code}"))?;
        Ok(Box::new(worker))
    }
}

/// `lane_service::spawn_with_workers` (the service starts the workers only when the config
/// asks for some and the runner declares `off_lane_thread`).
fn with_workers<D, R, F, W>(
    config: ServiceConfig,
    make: F,
    make_worker: W,
) -> Result<LaneHandle, ServiceError>
where
    D: lane_driver::Device + Send + 'static,
    R: lane_driver::Runner<D> + Send + 'static,
    F: FnOnce() -> Result<(D, R), String> + Send + 'static,
    W: Fn(usize) -> Result<Box<dyn HostWorker>, String> + Send + Sync + 'static,
{
    lane_service::spawn_with_workers(config, make, make_worker)
}

/// Writes a value through a C out pointer by the `size` the caller set in it.
///
/// # Safety
///
/// `out` is NULL or valid for a write of the `size` bytes its first field states.
unsafe fn write_out<T: Sized13>(out: *mut T, value: T, what: &str) -> Result<(), Error> {
    if out.is_null() {
        return Err(Error::null(what));
    }
    // SAFETY: non-NULL and writable for its `size` (this function's contract).
    unsafe { sized::write_out(out, value) }
}

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
        if path_out.is_null() {
            return Err(Error::null("path_out"));
        }
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
        if lane_out.is_null() {
            return Err(Error::null("lane_out"));
        }
        if config.is_null() {
            return Err(Error::null("config"));
        }
        // SAFETY: non-NULL; readable for its `size` (the caller's contract).
        let config = unsafe { sized::read_in(config) }?;
        refuse_in_callback("run_lane_create", None)?;
        // SAFETY: the library path is NULL or a NUL-terminated string (the caller's contract).
        let settings = unsafe { config::read(&config) }?;
        let lane = spawn(settings)?;
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
    // A trace still recording is written now (its lane is gone after this).
    crate::trace::stop_quietly(lane.serial);
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
        if request.is_null() {
            return Err(Error::null("request"));
        }
        // SAFETY: non-NULL; readable for its `size` (the caller's contract).
        let request = unsafe { sized::read_in(request) }?;
        if run_out.is_null() {
            return Err(Error::null("run_out"));
        }
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
        if publication_out.is_null() {
            return Err(Error::null("publication_out"));
        }
        let publication = lane
            .handle
            .publish(CodeRef(code))
            .map_err(|e| service_error(&e))?;
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
        if outcome_out.is_null() {
            return Err(Error::null("outcome_out"));
        }
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
                return Err(Error::new(
                    RunLaneStatus::Lost,
                    format!("the lane is lost: {cause}"),
                ));
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
        if outcome_out.is_null() {
            return Err(Error::null("outcome_out"));
        }
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

/// Activates run `run`, submitted held (ABI 11, `RunLaneSubmit::held`): it launches once its
/// turn comes (it may be prepared already). Returns at once. `REFUSED` for a run not held
/// (never, or activated already) or with its outcome decided; `UNKNOWN_ITEM` for an id the
/// lane holds no run by (never accepted, or its outcome taken).
#[unsafe(no_mangle)]
pub extern "C" fn run_lane_activate(lane: *mut RunLane, run: u64) -> RunLaneStatus {
    guard(|| {
        let lane = LANES.get(lane)?;
        lane.handle
            .activate(RunId(run))
            .map_err(|e| service_error(&e))?;
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
        if status_out.is_null() {
            return Err(Error::null("status_out"));
        }
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

/// Starts the lane's real-time trace (ABI 12 addition): from now on every submit, runner
/// callback (prepare, the two launches, finalise) and outcome taken is recorded on the host's
/// monotonic clock, with one slice per run from its submit to its outcome (whose end carries
/// the verdict, the proof of overlap and the device start and end). `run_lane_trace_stop`
/// writes it to `path` as Chrome trace-event JSON, which Perfetto opens; destroying the lane
/// writes it too. Works on every backend (the simulator's own virtual-time trace is
/// `lane-sim --trace`). The file is created now: a path that cannot be written is
/// `REFUSED`, as is a second start before a stop.
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
        if path.is_null() {
            return Err(Error::null("path"));
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use lane_core::status_latch::Failure;
    use lane_core::{Cause, RunId};
    use lane_service::LostCause;

    #[test]
    fn the_service_gets_the_configs_workers_binding_and_invariant_checks() {
        for check_invariants in [false, true] {
            let knobs = Knobs {
                workers: 3,
                submitters_bound: !check_invariants,
                check_invariants,
                drive: Drive::Caller,
                serial: 1,
            };
            let runner = crate::config::default_config().runner;
            let config = service_config(
                Profile::a2a3(),
                Vtable::new(runner),
                knobs,
                &Requests::default(),
            );
            assert_eq!(config.check_invariants, check_invariants);
            assert_eq!(config.submitters_bound, !check_invariants);
            assert_eq!(config.workers, 3);
            assert_eq!(config.drive, Drive::Caller);
        }
    }

    #[test]
    fn an_open_refused_for_another_op_timeout_in_force_is_invalid_config() {
        let raced = backend_acl::AclError::OpTimeoutInForce {
            asked_us: 300_000,
            in_force_us: 200_000,
        };
        assert_eq!(
            open_failure_status(&raced),
            Some(RunLaneStatus::InvalidConfig)
        );
        let text = raced.to_string();
        assert!(text.contains("300000") && text.contains("200000"), "{text}");
        assert_eq!(
            open_failure_status(&backend_acl::AclError::BadDeviceId {
                device_id: 3,
                count: 1
            }),
            None
        );
    }

    #[test]
    fn refusals_and_a_lost_lane_map_to_their_statuses_with_the_message() {
        let cause = Cause::of(Failure::HostWaitTimeout);
        let lost = ServiceError::Lost(LostCause::new("the device panicked"));
        for (error, status) in [
            (
                ServiceError::Submit(SubmitError::Full { slots: 2 }),
                RunLaneStatus::Full,
            ),
            (
                ServiceError::Submit(SubmitError::Closed),
                RunLaneStatus::Closed,
            ),
            (
                ServiceError::Publish(PublishError::Full),
                RunLaneStatus::Full,
            ),
            (
                ServiceError::Submit(SubmitError::Poisoned {
                    origin: RunId(1),
                    cause,
                }),
                RunLaneStatus::Recovering,
            ),
            (
                ServiceError::Submit(SubmitError::Lost {
                    origin: RunId(1),
                    cause,
                }),
                RunLaneStatus::Lost,
            ),
            (lost.clone(), RunLaneStatus::Lost),
            (
                ServiceError::Make("no device".into()),
                RunLaneStatus::BackendUnavailable,
            ),
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
            (
                WaitError::AlreadyTaken { item: 1 },
                RunLaneStatus::AlreadyTaken,
            ),
        ] {
            assert_eq!(wait_error(&error).status, status, "{error}");
        }
    }
}
