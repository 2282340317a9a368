//! A C runner's host worker on the fake libascendcl: after a force reset it binds again in
//! `HostWorker::bind`, whose failure is the bind's code (the service then hands the job to the
//! lane thread), and its prepare and finalise never answer a bind failure themselves: they
//! always call the runner's callbacks.

mod common;

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

use backend_acl::{AclConfig, AclDevice, Library};
use lane_core::status_latch::AclCode;
use lane_core::{RunId, SlotId};
use lane_driver::{Device, HostWorker};
use run_lane::runner::{Binding, CWorker, Requests, Vtable};
use run_lane::{RunLaneConcurrency, RunLaneRunInfo, RunLaneRunner};
use run_lane_fake_ascendcl::cdylib_path;

/// The callbacks' calls.
static CALLS: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn counted(_user: *mut c_void, _run: *const RunLaneRunInfo) -> i32 {
    CALLS.fetch_add(1, Ordering::SeqCst);
    0
}

unsafe extern "C" fn counted_finalise(
    _user: *mut c_void,
    _run: *const RunLaneRunInfo,
    _copy_back: bool,
) -> i32 {
    CALLS.fetch_add(1, Ordering::SeqCst);
    0
}

#[test]
fn after_a_force_reset_a_failed_bind_is_binds_error_and_prepare_and_finalise_still_call_back() {
    let path = cdylib_path().unwrap_or_else(|e| panic!("{e}"));
    let (_fake, control) = (common::fresh(), common::control());
    let (mut device, _) =
        AclDevice::open(AclConfig { library: Library::Path(path), ..AclConfig::default() })
            .unwrap_or_else(|e| panic!("{e}"));
    let vtable = Vtable::new(RunLaneRunner {
        prepare: Some(counted),
        finalise: Some(counted_finalise),
        concurrency: RunLaneConcurrency { off_lane_thread: true, prepares_at_once: 1 },
        ..common::default_config().runner
    });
    let requests = Requests::default();
    let binding = Binding::Acl(device.worker_binding());
    let mut worker =
        CWorker::new(vtable, requests, None, Some(binding)).expect("the worker binds at creation");
    assert_eq!(worker.bind(), Ok(()), "bound already: nothing to do");
    device.reset_device_force().expect("force reset");
    // Every `aclrtSetDevice` from now fails (three: more than this test's calls make).
    let rule = control.fail_call("aclrtSetDevice", 107_001, 0, 3);
    rule.expect("arm the fault");
    assert_eq!(worker.bind(), Err(AclCode::RtInvalidDeviceId));
    // Called anyway (as the service never does after a failed bind), the runner's callbacks
    // run: the worker no longer fails them for the bind.
    assert_eq!(worker.prepare_run(RunId(1), SlotId(0), false), Ok(()));
    assert_eq!(worker.finalise_run(RunId(1), SlotId(0), false), Ok(()));
    assert_eq!(CALLS.load(Ordering::SeqCst), 2);
    // Once the device binds again, so does the worker.
    control.clear_faults().expect("clear the fault");
    assert_eq!(worker.bind(), Ok(()));
}
