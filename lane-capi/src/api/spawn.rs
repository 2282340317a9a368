//! Starting a lane: the service's config, the backend opened on its thread, the host workers.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use backend_acl::{AclConfig, AclDevice, Library, NoticeMonitor};
use backend_sim::costs::Costs;
use backend_sim::{RunTimes, SharedSim, SimDevice, SimRunner};
use lane_core::Profile;
use lane_driver::HostWorker;
use lane_service::{Drive, ServiceConfig, ServiceError};

use crate::claims;
use crate::config::{self, BackendChoice, ProfileChoice, Settings};
use crate::device_ops::TableDevice;
use crate::error::Error;
use crate::runner::{Binding, CRunner, CWorker, Deferred, NoModel, Requests, Vtable, deferred};
use crate::types::RunLaneStatus;

use super::{LANES_MADE, Lane, mark_callback_thread, service_error};

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
pub(super) fn spawn(settings: Settings) -> Result<Lane, Error> {
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
    // ACL and the device table: the lane thread opens (binds) the device and leaves the
    // workers its binding; the service makes the workers only after the lane thread's `make`.
    let binding: Arc<OnceLock<Binding>> = Arc::new(OnceLock::new());
    let lane_binding = Arc::clone(&binding);
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
            lane_service::spawn_with_workers(
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
            claim = claim_device(device_id, serial)?;
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
            lane_service::spawn_with_workers(
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
            claim = claim_device(device_id, serial)?;
            lane_service::spawn_with_workers(
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

/// L-25: one lane per device id (notices name it, and a reset destroys everything on it),
/// whichever backend, claimed before anything is opened.
fn claim_device(device_id: i32, serial: u64) -> Result<Option<claims::DeviceClaim>, Error> {
    claims::claim(device_id, serial)
        .map(Some)
        .map_err(|claimed| Error::new(RunLaneStatus::BackendUnavailable, claimed.to_string()))
}

/// The status of a failed [`AclDevice::open`] when it is not `BACKEND_UNAVAILABLE`: another
/// lane's device op timeout in force (L-21) is the config's fault, `INVALID_CONFIG`, whether
/// `spawn`'s pre-check saw it or a lane created concurrently set it after that check.
fn open_failure_status(error: &backend_acl::AclError) -> Option<RunLaneStatus> {
    matches!(error, backend_acl::AclError::OpTimeoutInForce { .. })
        .then_some(RunLaneStatus::InvalidConfig)
}

/// The factory of the host workers: each binds the device on its own thread (`binding`, set
/// by the lane thread's `make`, which the service runs first; `None` on the simulator), then
/// calls the vtable's prepare and finalise.
fn worker_factory(
    vtable: Vtable,
    (requests, serial): (&Requests, u64),
    deferred: Deferred,
    binding: Option<Arc<OnceLock<Binding>>>,
) -> impl Fn(usize) -> Result<Box<dyn HostWorker>, String> + Send + Sync + 'static {
    let requests = Arc::clone(requests);
    move |_index| {
        mark_callback_thread(serial);
        let binding = binding
            .as_ref()
            .map(|cell| cell.get().cloned().ok_or("the device was not opened before the workers"))
            .transpose()?;
        let worker = CWorker::new(vtable, Arc::clone(&requests), deferred.clone(), binding)
            .map_err(|code| format!("binding the worker to the device failed: {code}"))?;
        Ok(Box::new(worker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let config =
                service_config(Profile::a2a3(), Vtable::new(runner), knobs, &Requests::default());
            assert_eq!(config.check_invariants, check_invariants);
            assert_eq!(config.submitters_bound, !check_invariants);
            assert_eq!(config.workers, 3);
            assert_eq!(config.drive, Drive::Caller);
        }
    }

    #[test]
    fn an_open_refused_for_another_op_timeout_in_force_is_invalid_config() {
        let raced =
            backend_acl::AclError::OpTimeoutInForce { asked_us: 300_000, in_force_us: 200_000 };
        assert_eq!(open_failure_status(&raced), Some(RunLaneStatus::InvalidConfig));
        let text = raced.to_string();
        assert!(text.contains("300000") && text.contains("200000"), "{text}");
        assert_eq!(
            open_failure_status(&backend_acl::AclError::BadDeviceId { device_id: 3, count: 1 }),
            None
        );
    }
}
