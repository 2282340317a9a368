//! L-19 through the C ABI on the fake libascendcl: a device fault notice that names one of a
//! lane's stream ids (taken with `aclrtStreamGetId` at creation) makes the device suspect:
//! submits are refused with `SUSPECT`, launched runs reach their own verdicts, then the
//! device is recovered and the lane reopens on fresh streams; the close report names the
//! notice. A notice for another stream or device, or for a stream of a generation before the
//! last confirmed reset, changes nothing. Notices come forwarded by the embedding
//! (`run_lane_report_device_fault`) or, with `fault_notice_monitor`, through the library's
//! own handler, raised late on the fake's driver thread as the driver does.

mod common;

use std::time::{Duration, Instant};

use common::{Kernels, control};
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICPU, Outcome};

const OP_TIMEOUT_MS: u64 = 200;
/// Long enough that runs are still executing when the test sends a notice.
static HEALTHY: Kernels = Kernels::healthy(Duration::from_millis(20));
static RUN_1_FAULTS: Kernels = Kernels {
    kernel: Duration::from_millis(3),
    faults: &[(1, ENGINE_AICPU, Outcome::Exception)],
};
const AICORE_EXCEPTION: i32 = 507_015;

/// The fake is one per process: this binary's tests take it in turn.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn stream_ids(device: i32) -> Vec<u32> {
    control()
        .live_stream_ids(device)
        .expect("stream ids")
        .into_iter()
        .map(|id| u32::try_from(id).expect("a non-negative id"))
        .collect()
}

/// The ids of the lane's pair on `device` once both streams exist (the lane thread creates
/// them at the first launch, after the submit returned).
fn pair_ids(device: i32) -> Vec<u32> {
    let since = Instant::now();
    loop {
        let ids = stream_ids(device);
        if ids.len() >= 2 {
            return ids;
        }
        assert!(
            since.elapsed() < common::BOUND,
            "no pair on device {device}"
        );
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Waits until `device` has launched `kernels` kernels (two a run).
fn wait_for_kernels(device: i32, kernels: u64) {
    let since = Instant::now();
    while control()
        .device(device)
        .counters()
        .expect("counters")
        .launches
        < kernels
    {
        assert!(
            since.elapsed() < common::BOUND,
            "device {device} never launched {kernels} kernels"
        );
        std::thread::sleep(Duration::from_micros(100));
    }
}

fn close(lane: *mut RunLane) -> RunLaneCloseReport {
    let mut report = std::mem::MaybeUninit::<RunLaneCloseReport>::uninit();
    // SAFETY: a live handle and a writable report.
    let status = unsafe { run_lane_close(lane, report.as_mut_ptr()) };
    assert_eq!(status, RunLaneStatus::Ok, "{}", common::last_error());
    // SAFETY: filled by the OK close.
    unsafe { report.assume_init() }
}

/// Runs `n` runs through the documented loop; every one must end OK.
fn all_ok(lane: *mut RunLane, device: i32, n: u64) {
    let outcomes = common::documented_loop(lane, |submitted, _| submitted < n);
    common::assert_ok_in_order(device, &outcomes);
}

/// Sends a matched notice for the lane's AICPU stream while two runs execute, and checks
/// what L-19 asks: the launched runs end OK, a submit is refused `SUSPECT` until the device
/// is recovered, and the lane then runs again on fresh streams.
fn a_matched_notice_recovers_the_lane(send: impl FnOnce(u32)) {
    let lane = common::create(&{
        let mut config = common::fake_config(0, &HEALTHY, OP_TIMEOUT_MS);
        config.fault_notice_monitor = true;
        config
    });
    let r1 = common::submit(lane).expect("run 1");
    let r2 = common::submit(lane).expect("run 2, queued behind run 1");
    let before = pair_ids(0);
    assert_eq!(before.len(), 2, "the lane's pair");
    // Both runs launched (two kernels each): the notice comes while they execute.
    wait_for_kernels(0, 4);
    send(before[0]);
    // Runs accepted before the lane thread saw the notice, then `SUSPECT`.
    let since = Instant::now();
    let mut accepted = Vec::new();
    loop {
        match common::submit(lane) {
            Ok(run) => accepted.push(run),
            Err(RunLaneStatus::Suspect) => break,
            Err(RunLaneStatus::Full) => {
                assert!(since.elapsed() < common::BOUND, "never suspect");
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(status) => panic!("submit: {status:?}: {}", common::last_error()),
        }
    }
    let refusal = common::last_error();
    assert!(
        refusal.contains(&format!("stream {}", before[0])) && refusal.contains("again"),
        "names the notice and when to retry: {refusal}"
    );
    // A notice decides no run: the launched runs get their own verdicts.
    for run in [r1, r2] {
        let outcome = common::wait(lane, run);
        assert_eq!(
            outcome.verdict,
            RunLaneVerdict::Ok,
            "run {run}: {}",
            common::line(&outcome)
        );
    }
    // A run accepted before the lane saw the notice either launched (its own verdict) or
    // had not (it fails with the notice).
    for run in accepted {
        let outcome = common::wait(lane, run);
        // The outcome names the notice: its device, stream id and code.
        let by_notice = outcome.verdict == RunLaneVerdict::Failed
            && outcome.stage == RunLaneStage::FaultNotice
            && outcome.code == AICORE_EXCEPTION
            && common::line(&outcome).contains(&format!("device 0 stream {}", before[0]));
        assert!(
            outcome.verdict == RunLaneVerdict::Ok || by_notice,
            "run {run}: {}",
            common::line(&outcome)
        );
    }
    let after = common::submit_when_open(lane);
    assert_eq!(common::wait(lane, after).verdict, RunLaneVerdict::Ok);
    assert_eq!(common::force_resets(0), 1, "one recovery");
    let fresh = stream_ids(0);
    assert!(
        fresh.iter().all(|id| !before.contains(id)),
        "fresh streams after the reset: {before:?} then {fresh:?}"
    );
    let report = close(lane);
    assert!(report.noticed);
    assert_eq!(
        (
            report.notice_device,
            report.notice_stream_id,
            report.notice_code
        ),
        (0, before[0], AICORE_EXCEPTION)
    );
    assert!(!report.poisoned, "a notice is not a run's poison");
    common::destroy(lane);
}

#[test]
fn a_forwarded_notice_on_a_lane_stream_during_queued_runs_recovers_the_device_after_their_verdicts()
{
    let _serial = serial();
    let _fake = control().session().expect("reset the fake");
    a_matched_notice_recovers_the_lane(|stream| {
        assert_eq!(
            run_lane_report_device_fault(0, stream, AICORE_EXCEPTION),
            RunLaneStatus::Ok
        );
    });
}

#[test]
fn a_late_notice_through_the_installed_monitor_recovers_the_device() {
    let _serial = serial();
    let control = control();
    let _fake = control.session().expect("reset the fake");
    a_matched_notice_recovers_the_lane(|stream| {
        let stream = i32::try_from(stream).expect("a small id");
        control
            .raise_notice(0, stream, AICORE_EXCEPTION, Duration::from_millis(5))
            .expect("raised");
    });
    assert_eq!(
        control.notice_counts().expect("counts"),
        (1, 0),
        "delivered to the library's handler"
    );
}

#[test]
fn a_notice_for_another_stream_or_another_device_changes_nothing() {
    let _serial = serial();
    let _fake = control().session().expect("reset the fake");
    let lane = common::create(&common::fake_config(0, &HEALTHY, OP_TIMEOUT_MS));
    let r1 = common::submit(lane).expect("run 1");
    let ids = pair_ids(0);
    let nobodys = ids.iter().max().copied().unwrap_or(0) + 100;
    assert_eq!(
        run_lane_report_device_fault(0, nobodys, AICORE_EXCEPTION),
        RunLaneStatus::Ok
    );
    assert_eq!(
        run_lane_report_device_fault(1, ids[0], AICORE_EXCEPTION),
        RunLaneStatus::Ok
    );
    assert_eq!(common::wait(lane, r1).verdict, RunLaneVerdict::Ok);
    all_ok(lane, 0, 6);
    assert_eq!(common::force_resets(0), 0, "no recovery");
    assert!(!close(lane).noticed);
    common::destroy(lane);
}

#[test]
fn a_notice_naming_a_stream_from_before_the_last_confirmed_reset_changes_nothing() {
    let _serial = serial();
    let control = control();
    let _fake = control.session().expect("reset the fake");
    let mut config = common::fake_config(0, &RUN_1_FAULTS, OP_TIMEOUT_MS);
    config.fault_notice_monitor = true;
    let lane = common::create(&config);
    let r1 = common::submit(lane).expect("run 1");
    let old = pair_ids(0);
    let one = common::wait(lane, r1);
    assert_eq!(
        one.failure_class,
        RunLaneClass::Poison,
        "{}",
        common::line(&one)
    );
    // Confirmed: a run after the recovery is OK.
    let r2 = common::submit_when_open(lane);
    assert_eq!(common::wait(lane, r2).verdict, RunLaneVerdict::Ok);
    assert_eq!(common::force_resets(0), 1);
    // The driver's late notice for the faulted stream of the old generation.
    let stale = i32::try_from(old[0]).expect("a small id");
    control
        .raise_notice(0, stale, 507_018, Duration::from_millis(2))
        .expect("raised");
    let since = Instant::now();
    while control.notice_counts().expect("counts").0 == 0 {
        assert!(since.elapsed() < common::BOUND, "never delivered");
        std::thread::sleep(Duration::from_millis(1));
    }
    // Forwarded too: the same stale id.
    assert_eq!(
        run_lane_report_device_fault(0, old[1], 507_018),
        RunLaneStatus::Ok
    );
    all_ok(lane, 0, 6);
    assert_eq!(common::force_resets(0), 1, "no second recovery");
    assert!(!close(lane).noticed);
    common::destroy(lane);
}

#[test]
fn with_two_lanes_on_two_devices_a_notice_recovers_only_the_lane_whose_stream_it_names() {
    let _serial = serial();
    let _fake = control().session().expect("reset the fake");
    let zero = common::create(&common::fake_config(0, &HEALTHY, OP_TIMEOUT_MS));
    let one = common::create(&common::fake_config(1, &HEALTHY, OP_TIMEOUT_MS));
    let z1 = common::submit(zero).expect("lane 0 run");
    let o1 = common::submit(one).expect("lane 1 run");
    let ones = pair_ids(1);
    assert_eq!(
        run_lane_report_device_fault(1, ones[0], AICORE_EXCEPTION),
        RunLaneStatus::Ok
    );
    assert_eq!(common::wait(zero, z1).verdict, RunLaneVerdict::Ok);
    assert_eq!(common::wait(one, o1).verdict, RunLaneVerdict::Ok);
    let after = common::submit_when_open(one);
    assert_eq!(common::wait(one, after).verdict, RunLaneVerdict::Ok);
    all_ok(zero, 0, 4);
    assert_eq!((common::force_resets(0), common::force_resets(1)), (0, 1));
    assert!(!close(zero).noticed);
    let report = close(one);
    assert!(report.noticed);
    assert_eq!(
        (report.notice_device, report.notice_stream_id),
        (1, ones[0])
    );
    common::destroy(zero);
    common::destroy(one);
}

#[test]
fn a_run_that_had_not_launched_fails_with_an_outcome_naming_the_notice() {
    let _serial = serial();
    let _fake = control().session().expect("reset the fake");
    let mut config = common::fake_config(0, &HEALTHY, OP_TIMEOUT_MS);
    // Depth one: run 2 is prepared but launches only after run 1 retired.
    config.launch_depth = 1;
    let lane = common::create(&config);
    let r1 = common::submit(lane).expect("run 1");
    let r2 = common::submit(lane).expect("run 2, prepared behind run 1");
    let ids = pair_ids(0);
    wait_for_kernels(0, 2);
    // The lane thread takes the notice at its next step, before run 1's completion.
    assert_eq!(
        run_lane_report_device_fault(0, ids[0], AICORE_EXCEPTION),
        RunLaneStatus::Ok
    );
    let one = common::wait(lane, r1);
    assert_eq!(one.verdict, RunLaneVerdict::Ok, "{}", common::line(&one));
    let two = common::wait(lane, r2);
    let line = common::line(&two);
    assert_eq!(two.verdict, RunLaneVerdict::Failed, "{line}");
    assert_eq!(two.stage, RunLaneStage::FaultNotice, "{line}");
    assert!(two.has_code && two.code == AICORE_EXCEPTION, "{line}");
    assert!(
        line.contains(&format!(
            "device fault notice on device 0 stream {}",
            ids[0]
        )),
        "the outcome names the notice: {line}"
    );
    assert_eq!(
        control().device(0).counters().expect("counters").launches,
        2
    );
    let after = common::submit_when_open(lane);
    assert_eq!(common::wait(lane, after).verdict, RunLaneVerdict::Ok);
    common::destroy(lane);
}
