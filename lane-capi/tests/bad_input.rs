//! Bad input to every C entry point: each case gets its status and a one-line
//! `run_lane_last_error()` that says what to do, and nothing crashes; the lane used for the
//! cases still gives every accepted item its outcome. On the simulator, and on the fake
//! libascendcl for what only the ACL backend refuses (a bad device id, a missing library),
//! where nothing is left alive after a refused create.

mod common;

use std::ffi::CStr;

use common::last_error;
use core::ffi::c_void;
use run_lane::*;

unsafe extern "C" fn launch(_: *mut c_void, _: *mut c_void, _: *const RunLaneRunArgs) -> i32 {
    0
}

/// [`common::sim_config`] as `change` leaves it.
fn sim_with(change: impl FnOnce(&mut RunLaneConfig)) -> RunLaneConfig {
    let mut config = common::sim_config();
    change(&mut config);
    config
}

fn acl(path: &CStr) -> RunLaneConfig {
    let mut config = common::default_config();
    config.runner.launch_aicore = Some(launch);
    config.runner.launch_aicpu = Some(launch);
    config.acl_library_path = path.as_ptr();
    config
}

/// Checks one refused call: its status, and a one-line message naming `what_to_do`.
fn refused(case: &str, got: RunLaneStatus, want: RunLaneStatus, what_to_do: &str) {
    let message = last_error();
    assert_eq!(got, want, "{case}: {message}");
    assert!(!message.contains('\n'), "{case}: one line: {message:?}");
    assert!(
        message.contains(what_to_do),
        "{case}: the message says what to do ({what_to_do:?}): {message}"
    );
}

fn create(config: &RunLaneConfig) -> (RunLaneStatus, *mut RunLane) {
    let mut lane = std::ptr::null_mut();
    // SAFETY: a readable config (any library path is NUL-terminated) and a writable handle.
    let status = unsafe { run_lane_create(config, &raw mut lane) };
    (status, lane)
}

#[test]
fn every_bad_config_is_refused_with_what_to_pass_instead() {
    let (mismatch, invalid) = (RunLaneStatus::AbiMismatch, RunLaneStatus::InvalidConfig);
    #[rustfmt::skip]
    let cases: [(&str, RunLaneConfig, RunLaneStatus, &str); 11] = [
        ("another ABI version", sim_with(|c| c.abi_version = RUN_LANE_ABI_VERSION + 1), mismatch,
            "rebuild against this library's run_lane.h"),
        ("an unknown profile", sim_with(|c| c.profile = 9), invalid, "A2A3 = 0, A5 = 1, PROBE = 2"),
        ("an unknown backend", sim_with(|c| c.backend = 9), invalid, "ACL = 0, SIM = 1"),
        ("five slots", sim_with(|c| c.slots = 5), invalid, "use 2"),
        ("a prepare window above the slots", sim_with(|c| c.prepare_window = 3), invalid,
            "lower the window or add slots"),
        ("too many workers", sim_with(|c| c.workers = RUN_LANE_MAX_WORKERS + 1), invalid,
            "pass 0 to 8"),
        ("a device timeout above the host's",
            sim_with(|c| (c.completion_timeout_ms, c.device_op_timeout_ms) = (1_000, 2_000)),
            invalid, "lower the op timeout"),
        ("a timeout past u64 nanoseconds", sim_with(|c| c.completion_timeout_ms = u64::MAX),
            invalid, "pass at most"),
        ("an unknown recovery", sim_with(|c| c.recovery = 7), invalid, "RUNTIME = 1"),
        ("ACL without launch callbacks", common::default_config(), invalid,
            "set both, or use RUN_LANE_BACKEND_SIM"),
        ("an empty library path", acl(c""), invalid, "pass NULL to search"),
    ];
    for (case, config, want, what_to_do) in cases {
        let (status, lane) = create(&config);
        refused(case, status, want, what_to_do);
        assert!(lane.is_null(), "{case}: no handle");
    }
    let null = |case: &str, got| refused(case, got, RunLaneStatus::NullArgument, "pass a pointer");
    let (mut lane, config) = (std::ptr::null_mut(), common::sim_config());
    // SAFETY: NULL arguments are checked.
    unsafe {
        null("a NULL config", run_lane_create(std::ptr::null(), &raw mut lane));
        null("a NULL lane_out", run_lane_create(&raw const config, std::ptr::null_mut()));
        null("a NULL config to fill", run_lane_config_default(std::ptr::null_mut()));
    }
}

/// Holds every prepare while set: keeps the first run live (its tag taken) for as long as
/// the test needs, however fast the simulator runs it.
static HOLD_PREPARE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

unsafe extern "C" fn held_prepare(_: *mut c_void, _: *const RunLaneRunInfo) -> i32 {
    while HOLD_PREPARE.load(std::sync::atomic::Ordering::Acquire) {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    0
}

#[test]
fn every_call_on_a_lane_refuses_bad_input_with_what_to_do_and_loses_no_outcome() {
    let mut config = common::sim_config();
    config.runner.prepare = Some(held_prepare);
    let (status, lane) = create(&config);
    assert_eq!(status, RunLaneStatus::Ok, "{}", last_error());
    let foreign: *mut RunLane = std::ptr::without_provenance_mut(0x5a5a_0000);
    let request = RunLaneSubmit { has_tag: true, tag: 1, ..RunLaneSubmit::default() };
    let mut id = 0;
    let mut outcome = run_lane::sized::init::<RunLaneOutcome>();
    let mut report = run_lane::sized::init::<RunLaneCloseReport>();
    let null = |case: &str, got| refused(case, got, RunLaneStatus::NullArgument, "pass a pointer");
    let unknown =
        |case: &str, got, to_do: &str| refused(case, got, RunLaneStatus::UnknownItem, to_do);
    let invalid_handle = |case: &str, got| {
        let case = format!("{case} on a bad handle");
        refused(&case, got, RunLaneStatus::InvalidHandle, "handle run_lane_create wrote");
    };
    // SAFETY: every call below passes a NULL, foreign or live handle (all checked) and
    // pointers that are NULL or valid for their access.
    unsafe {
        for handle in [std::ptr::null_mut(), foreign] {
            invalid_handle("submit", run_lane_submit(handle, &raw const request, &raw mut id));
            invalid_handle("publish", run_lane_publish(handle, 1, &raw mut id));
            invalid_handle("poll", run_lane_poll(handle, outcome.as_mut_ptr()));
            invalid_handle("wait", run_lane_wait(handle, 1, 0, outcome.as_mut_ptr()));
            invalid_handle("close", run_lane_close(handle, report.as_mut_ptr()));
            invalid_handle("destroy", run_lane_destroy(handle));
            let with_report = run_lane_destroy_with_report(handle, report.as_mut_ptr());
            invalid_handle("destroy with a report", with_report);
        }
        let no_request = run_lane_submit(lane, std::ptr::null(), &raw mut id);
        null("submit with a NULL request", no_request);
        assert!(last_error().contains("pass a pointer to a valid request"));
        let no_run_out = run_lane_submit(lane, &raw const request, std::ptr::null_mut());
        null("submit with a NULL run_out", no_run_out);
        assert!(last_error().contains("pass a pointer to a valid run_out"));
        null(
            "publish with a NULL publication_out",
            run_lane_publish(lane, 1, std::ptr::null_mut()),
        );
        null("poll with a NULL outcome_out", run_lane_poll(lane, std::ptr::null_mut()));
        null("wait with a NULL outcome_out", run_lane_wait(lane, 1, 0, std::ptr::null_mut()));
        let to_do = "wait for an id that submit or publish returned";
        unknown("wait for item 0", run_lane_wait(lane, 0, 0, outcome.as_mut_ptr()), to_do);
        // Two accepted runs fill both slots; a third, and a duplicate tag, are refused.
        let ok = RunLaneStatus::Ok;
        assert_eq!(run_lane_submit(lane, &raw const request, &raw mut id), ok);
        let first = id;
        let again = run_lane_submit(lane, &raw const request, &raw mut id);
        refused("a live run's tag again", again, RunLaneStatus::Refused, "use another tag");
        HOLD_PREPARE.store(false, std::sync::atomic::Ordering::Release);
        let untagged = RunLaneSubmit::default();
        assert_eq!(run_lane_submit(lane, &raw const untagged, &raw mut id), ok);
        let second = id;
        let full = run_lane_submit(lane, &raw const untagged, &raw mut id);
        if full != RunLaneStatus::Ok {
            refused("a full lane", full, RunLaneStatus::Full, "run_lane_wait for the oldest");
        }
        let third = (full == RunLaneStatus::Ok).then_some(id);
        let early = run_lane_wait(lane, second + 10, 0, outcome.as_mut_ptr());
        unknown("wait for an item not accepted yet", early, "wait for an id");
        for item in [Some(first), Some(second), third].into_iter().flatten() {
            let waited = run_lane_wait(lane, item, 30_000, outcome.as_mut_ptr());
            assert_eq!(waited, ok, "item {item}: {}", last_error());
        }
        let twice = run_lane_wait(lane, first, 0, outcome.as_mut_ptr());
        let to_do = "each outcome is taken once";
        refused("an outcome taken twice", twice, RunLaneStatus::AlreadyTaken, to_do);
        assert_eq!(run_lane_close(lane, std::ptr::null_mut()), ok);
        let closed =
            |case: &str, got| refused(case, got, RunLaneStatus::Closed, "create a new lane");
        closed("submit after close", run_lane_submit(lane, &raw const untagged, &raw mut id));
        closed("publish after close", run_lane_publish(lane, 1, &raw mut id));
        assert_eq!(run_lane_destroy(lane), ok);
        let to_do = "pass a handle run_lane_create wrote and not destroyed yet";
        refused("a second destroy", run_lane_destroy(lane), RunLaneStatus::InvalidHandle, to_do);
        let after = run_lane_submit(lane, &raw const untagged, &raw mut id);
        refused("submit after destroy", after, RunLaneStatus::InvalidHandle, to_do);
    }
}

#[test]
fn the_acl_backend_refuses_a_bad_device_id_and_a_missing_library_and_leaves_nothing_alive() {
    let (_fake, control, path) = (common::fresh(), common::control(), common::fake_path());
    let cases = [
        (RunLaneProfile::A2a3, 16, "16 devices visible (ids 0 to 15)"),
        (RunLaneProfile::Probe, -1, "pass an id from 0 to 15"),
    ];
    for (profile, device_id, what_to_do) in cases {
        let config = RunLaneConfig { profile: profile as u32, device_id, ..acl(path) };
        let (status, lane) = create(&config);
        let case = format!("device id {device_id} ({profile:?})");
        refused(&case, status, RunLaneStatus::BackendUnavailable, what_to_do);
        assert!(lane.is_null());
    }
    control.set_device_count(1).expect("one device");
    let (status, _) = create(&RunLaneConfig { device_id: 1, ..acl(path) });
    let to_do = "1 device visible (id 0)";
    refused("device id 1 of one", status, RunLaneStatus::BackendUnavailable, to_do);
    let (status, lane) = create(&acl(c"/nonexistent/libascendcl.so"));
    let unavailable = RunLaneStatus::BackendUnavailable;
    refused("a missing library", status, unavailable, "hint: ");
    let message = last_error();
    assert!(message.contains("/nonexistent/libascendcl.so"), "the loader's reason: {message}");
    assert!(lane.is_null());
    assert!(
        control.total_counters().expect("counters").balanced(),
        "a refused create leaves nothing alive"
    );
}
