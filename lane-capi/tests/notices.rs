//! L-19 through the C ABI on the fake libascendcl: a device fault notice that names one of a
//! lane's stream ids (taken with `aclrtStreamGetId` at creation) makes the device suspect:
//! submits are refused with `SUSPECT`, launched runs reach their own verdicts, then the
//! device is recovered and the lane reopens on fresh streams; the close report names the
//! notice. A notice for another stream or device, or for a stream the last confirmed reset
//! killed (even where the device gave its number to a new stream), changes nothing. Notices come forwarded by the embedding
//! (`run_lane_report_device_fault`) or, with `fault_notice_monitor`, through the library's
//! own handler, raised late on the fake's driver thread as the driver does.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::time::Duration;

use common::{Kernels, Via, control};
use core::ffi::c_void;
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICPU, Outcome};

const OP_TIMEOUT_MS: u64 = 200;
/// Long enough that runs are still executing when the test sends a notice.
static HEALTHY: Kernels = Kernels::healthy(Duration::from_millis(20));
static RUN_1_FAULTS: Kernels =
    Kernels::faulty(Duration::from_millis(3), &[(1, ENGINE_AICPU, Outcome::Exception)]);
const AICORE_EXCEPTION: i32 = 507_015;

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
    common::wait_until(&format!("no pair on device {device}"), || stream_ids(device).len() >= 2);
    stream_ids(device)
}

fn launches(device: i32) -> u64 {
    control().device(device).counters().expect("counters").launches
}

/// Waits until `device` has launched `kernels` kernels (two a run).
fn wait_for_kernels(device: i32, kernels: u64) {
    let what = format!("device {device} never launched {kernels} kernels");
    common::wait_until(&what, || launches(device) >= kernels);
}

/// Forwards a notice of `AICORE_EXCEPTION` for `stream` of `device`, as an embedding does.
fn forward_notice(device: u32, stream: u32) {
    let status = run_lane_report_device_fault(device, stream, AICORE_EXCEPTION);
    assert_eq!(status, RunLaneStatus::Ok);
}

/// The driver's late notice of `AICORE_EXCEPTION` for `stream` of device 0, raised on the
/// fake's driver thread.
fn raise_notice(stream: u32) {
    let stream = i32::try_from(stream).expect("a small id");
    let raised = control().raise_notice(0, stream, AICORE_EXCEPTION, Duration::from_millis(5));
    raised.expect("raised");
}

/// A run submitted once the lane reopens is `Ok`.
fn ok_once_open(lane: *mut RunLane) {
    common::assert_ok("once open", &common::wait(lane, common::submit_when_open(lane)));
}

/// Submits until the lane refuses `SUSPECT` (it took the notice): the runs accepted before.
fn submit_until_suspect(lane: *mut RunLane) -> Vec<u64> {
    let mut accepted = Vec::new();
    common::wait_until("never suspect", || match common::submit(lane) {
        Ok(run) => {
            accepted.push(run);
            false
        }
        Err(RunLaneStatus::Suspect) => true,
        Err(RunLaneStatus::Full) => false,
        Err(status) => panic!("submit: {status:?}: {}", common::last_error()),
    });
    accepted
}

/// The run failed at stage `FAULT_NOTICE` with the notice's code, its line naming the notice
/// for `stream` of device 0.
fn assert_failed_by_notice(outcome: &RunLaneOutcome, stream: u32) {
    let (run, line) = (outcome.id, common::line(outcome));
    assert_eq!(outcome.verdict, RunLaneVerdict::Failed, "run {run}: {line}");
    assert_eq!(outcome.stage, RunLaneStage::FaultNotice, "run {run}: {line}");
    let code = outcome.has_code && outcome.code == AICORE_EXCEPTION;
    assert!(code, "run {run}: {line}");
    let names = line.contains(&format!("device fault notice on device 0 stream {stream}"));
    assert!(names, "run {run}: the outcome names the notice: {line}");
}

/// Runs `n` runs through the documented loop; every one must end OK.
fn all_ok(lane: *mut RunLane, device: i32, n: u64) {
    let outcomes = common::documented_loop(lane, |submitted, _| submitted < n);
    common::assert_ok_in_order(device, &outcomes);
}

/// Waits until the fake made `resets` force resets of `device` (a lane's recovery).
fn wait_for_resets(device: i32, resets: u64) {
    let what = format!("device {device} never reached {resets} force resets");
    common::wait_until(&what, || common::force_resets(device) >= resets);
}

/// `run_lane_notice_monitor` of a live lane.
fn monitor_report(lane: *mut RunLane) -> RunLaneNoticeMonitorReport {
    let mut report = run_lane::sized::init::<RunLaneNoticeMonitorReport>();
    // SAFETY: a live handle and a writable report.
    let status = unsafe { run_lane_notice_monitor(lane, report.as_mut_ptr()) };
    assert_eq!(status, RunLaneStatus::Ok, "{}", common::last_error());
    // SAFETY: filled by the OK call.
    unsafe { report.assume_init() }
}

/// Sends a matched notice for the lane's AICPU stream while two runs execute, on a lane with
/// the library's monitor installed or not (`monitor`), and checks what L-19 asks: the
/// launched runs end OK, a submit is refused `SUSPECT` until the device is recovered, the
/// lane then runs again on fresh streams, and the close report names the notice.
fn a_matched_notice_recovers_the_lane(via: Via, monitor: bool, send: impl FnOnce(u32)) {
    let lane = common::create(&{
        let mut config = common::fake_config(via, 0, &HEALTHY, OP_TIMEOUT_MS);
        config.fault_notice_monitor = monitor;
        config
    });
    let installed = monitor_report(lane).state;
    let (yes, no) = (RunLaneNoticeMonitor::Installed, RunLaneNoticeMonitor::NotAsked);
    assert_eq!(installed, if monitor { yes } else { no });
    let r1 = common::submit(lane).expect("run 1");
    let r2 = common::submit(lane).expect("run 2, queued behind run 1");
    let before = pair_ids(0);
    assert_eq!(before.len(), 2, "the lane's pair");
    // Both runs launched (two kernels each): the notice comes while they execute.
    wait_for_kernels(0, 4);
    send(before[0]);
    // Runs accepted before the lane thread saw the notice, then `SUSPECT`.
    let accepted = submit_until_suspect(lane);
    let refusal = common::last_error();
    assert!(
        refusal.contains(&format!("stream {}", before[0])) && refusal.contains("again"),
        "names the notice and when to retry: {refusal}"
    );
    // A notice decides no run: the launched runs get their own verdicts.
    for run in [r1, r2] {
        common::assert_ok("launched before the notice", &common::wait(lane, run));
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
    ok_once_open(lane);
    assert_eq!(common::force_resets(0), 1, "one recovery");
    let fresh = stream_ids(0);
    assert!(
        fresh.iter().all(|id| !before.contains(id)),
        "fresh streams after the reset: {before:?} then {fresh:?}"
    );
    let report = close_naming(common::close(lane), (0, before[0], AICORE_EXCEPTION));
    assert!(!report.poisoned, "a notice is not a run's poison");
    common::destroy(lane);
}

/// Asserts that the close report `report` names the notice `(device, stream id, code)` as
/// the cause of a recovery (L-19), and returns it.
fn close_naming(report: RunLaneCloseReport, notice: (u32, u32, i32)) -> RunLaneCloseReport {
    assert!(report.noticed, "the close report names the recovery's notice");
    let named = (report.notice_device, report.notice_stream_id, report.notice_code);
    assert_eq!(named, notice);
    report
}

fn a_forwarded_notice_on_a_lane_stream_during_queued_runs_recovers_the_device_after_their_verdicts(
    via: Via,
) {
    let _fake = common::fresh();
    // Forwarded by the embedding: the lane's own monitor is not installed.
    a_matched_notice_recovers_the_lane(via, false, |stream| {
        forward_notice(0, stream);
    });
}

#[test]
fn a_late_notice_through_the_installed_monitor_recovers_the_device() {
    let _fake = common::fresh();
    a_matched_notice_recovers_the_lane(Via::Acl, true, raise_notice);
    let counts = control().notice_counts().expect("counts");
    assert_eq!(counts, (1, 0), "delivered to the library's handler");
}

fn a_notice_for_another_stream_or_another_device_changes_nothing(via: Via) {
    let _fake = common::fresh();
    let lane = common::fake_lane(via, 0, &HEALTHY, OP_TIMEOUT_MS);
    let r1 = common::submit(lane).expect("run 1");
    let ids = pair_ids(0);
    let nobodys = ids.iter().max().copied().unwrap_or(0) + 100;
    forward_notice(0, nobodys);
    forward_notice(1, ids[0]);
    assert_eq!(common::wait(lane, r1).verdict, RunLaneVerdict::Ok);
    all_ok(lane, 0, 6);
    assert_eq!(common::force_resets(0), 0, "no recovery");
    assert!(!common::close(lane).noticed);
    common::destroy(lane);
}

/// A lane on `device` (on ACL with the library's monitor): run 1 faults and poisons it, and
/// the recovery is confirmed by an OK run on new streams. Then the driver's late notice for
/// the faulted stream arrives (through the monitor on ACL; forwarded by the runtime through a
/// device table, which has no monitor), and the embedding forwards one for the pair's other
/// stream: both name streams the reset killed, and neither makes a second recovery (L-19,
/// decision 0025). Returns the pair's ids before the reset and after it.
fn late_notices_for_the_killed_pair_make_no_second_recovery(
    via: Via,
    device: i32,
) -> (Vec<u32>, Vec<u32>) {
    let control = control();
    let mut config = common::fake_config(via, device, &RUN_1_FAULTS, OP_TIMEOUT_MS);
    config.fault_notice_monitor = via == Via::Acl;
    let lane = common::create(&config);
    let r1 = common::submit(lane).expect("run 1");
    let old = pair_ids(device);
    let one = common::wait(lane, r1);
    common::assert_class(&one, RunLaneClass::Poison);
    // Confirmed: a run after the recovery is OK.
    ok_once_open(lane);
    assert_eq!(common::force_resets(device), 1);
    let new = stream_ids(device);
    // The driver's late notice for the faulted stream of the old generation.
    let forwarded = u32::try_from(device).expect("a device id");
    if via == Via::Acl {
        let stale = i32::try_from(old[0]).expect("a small id");
        control.raise_notice(device, stale, 507_018, Duration::from_millis(2)).expect("raised");
        common::wait_until("never delivered", || control.notice_counts().expect("counts").0 > 0);
    } else {
        let status = run_lane_report_device_fault(forwarded, old[0], 507_018);
        assert_eq!(status, RunLaneStatus::Ok);
    }
    // Forwarded too: the same generation's other stream.
    let status = run_lane_report_device_fault(forwarded, old[1], 507_018);
    assert_eq!(status, RunLaneStatus::Ok);
    all_ok(lane, device, 6);
    assert_eq!(common::force_resets(device), 1, "no second recovery");
    assert!(!common::close(lane).noticed);
    common::destroy(lane);
    (old, new)
}

fn a_notice_naming_a_stream_from_before_the_last_confirmed_reset_changes_nothing(via: Via) {
    let _fake = common::fresh();
    let (old, new) = late_notices_for_the_killed_pair_make_no_second_recovery(via, 0);
    assert!(
        new.iter().all(|id| !old.contains(id)),
        "the fake's default numbering never reuses an id: {old:?} then {new:?}"
    );
}

/// Whether the device reuses stream ids is not known (device-truth §4): with the fake's
/// numbering restarted at every force reset, the pair after the recovery takes a number of
/// the pair the reset killed, and a late notice naming it still makes no second recovery.
fn with_stream_numbering_restarted_at_the_reset_a_late_notice_naming_a_reused_id_changes_nothing(
    via: Via,
) {
    let _fake = common::fresh();
    let control = control();
    let device = 3;
    control
        .device(device)
        .set_semantics(run_lane_fake_ascendcl::Semantics::ResetRestartsStreamNumbering(true))
        .expect("the switch");
    let (old, new) = late_notices_for_the_killed_pair_make_no_second_recovery(via, device);
    assert!(
        old.iter().any(|id| new.contains(id)),
        "a notice names a live stream's number too: {old:?} then {new:?}"
    );
}

fn with_two_lanes_on_two_devices_a_notice_recovers_only_the_lane_whose_stream_it_names(via: Via) {
    let _fake = common::fresh();
    let zero = common::fake_lane(via, 0, &HEALTHY, OP_TIMEOUT_MS);
    let one = common::fake_lane(via, 1, &HEALTHY, OP_TIMEOUT_MS);
    let z1 = common::submit(zero).expect("lane 0 run");
    let o1 = common::submit(one).expect("lane 1 run");
    let ones = pair_ids(1);
    forward_notice(1, ones[0]);
    assert_eq!(common::wait(zero, z1).verdict, RunLaneVerdict::Ok);
    assert_eq!(common::wait(one, o1).verdict, RunLaneVerdict::Ok);
    ok_once_open(one);
    all_ok(zero, 0, 4);
    assert_eq!((common::force_resets(0), common::force_resets(1)), (0, 1));
    assert!(!common::close(zero).noticed);
    close_naming(common::close(one), (1, ones[0], AICORE_EXCEPTION));
    common::destroy(zero);
    common::destroy(one);
}

fn a_run_that_had_not_launched_fails_with_an_outcome_naming_the_notice(via: Via) {
    let _fake = common::fresh();
    let mut config = common::fake_config(via, 0, &HEALTHY, OP_TIMEOUT_MS);
    // Depth one: run 2 is prepared but launches only after run 1 retired.
    config.launch_depth = 1;
    let lane = common::create(&config);
    let r1 = common::submit(lane).expect("run 1");
    let r2 = common::submit(lane).expect("run 2, prepared behind run 1");
    let ids = pair_ids(0);
    wait_for_kernels(0, 2);
    // The lane thread takes the notice at its next step, before run 1's completion.
    forward_notice(0, ids[0]);
    common::assert_ok("run 1", &common::wait(lane, r1));
    assert_failed_by_notice(&common::wait(lane, r2), ids[0]);
    assert_eq!(launches(0), 2);
    ok_once_open(lane);
    common::destroy(lane);
}

/// The fake's `aclrtGet*FromExceptionInfo` getters an embedding's handler reads a notice
/// with, looked up before the handler is registered (a handler takes no lock and allocates
/// nothing).
struct Getters {
    device: unsafe extern "C" fn(*const c_void) -> u32,
    stream: unsafe extern "C" fn(*const c_void) -> u32,
    code: unsafe extern "C" fn(*const c_void) -> u32,
}

static GETTERS: std::sync::OnceLock<Getters> = std::sync::OnceLock::new();
/// Notices the embedding's handler forwarded.
static FORWARDED: AtomicU64 = AtomicU64::new(0);

/// The embedding's own exception-info callback, on the fake's driver thread: reads the
/// notice with the getters and forwards it with `run_lane_report_device_fault`.
unsafe extern "C" fn embedding_forwards(info: *mut c_void) {
    let Some(get) = GETTERS.get() else {
        return;
    };
    let info = info.cast_const();
    // SAFETY: `info` is the notice's, alive during the callback; the getters only read it.
    let (device, stream, code) =
        unsafe { ((get.device)(info), (get.stream)(info), (get.code)(info)) };
    let _ = run_lane_report_device_fault(device, stream, i32::from_ne_bytes(code.to_ne_bytes()));
    FORWARDED.fetch_add(1, SeqCst);
}

/// Issue 24 §3: "a notice with the monitor not installed (forwarded by the embedding)", as an
/// embedding that keeps the callback slot does it: its own handler, registered with the
/// library's `aclrtSetExceptionInfoCallback`, gets the driver's late notice on the driver's
/// thread and forwards it. The lane refuses new submits `SUSPECT`, recovers, and its outcome
/// and close report name the notice.
fn with_the_monitor_not_installed_the_embeddings_handler_forwards_a_late_notice_and_the_lane_recovers(
    via: Via,
) {
    let _fake = common::fresh();
    let control = control();
    GETTERS.get_or_init(|| Getters {
        device: common::exception_info_getter(c"aclrtGetDeviceIdFromExceptionInfo"),
        stream: common::exception_info_getter(c"aclrtGetStreamIdFromExceptionInfo"),
        code: common::exception_info_getter(c"aclrtGetErrorCodeFromExceptionInfo"),
    });
    FORWARDED.store(0, SeqCst);
    common::register_exception_callback(embedding_forwards);
    a_matched_notice_recovers_the_lane(via, false, raise_notice);
    let forwarded = FORWARDED.load(SeqCst);
    assert_eq!(forwarded, 1, "the embedding's handler got it and forwarded it");
    assert_eq!(control.notice_counts().expect("counts"), (1, 0));
}

/// Issue 24 §3 gap: a monitor that was asked for and could not be installed never fails the
/// create, and `run_lane_notice_monitor` says why and how notices can still reach the lane.
/// The refusal here is the registration's (the fake fails `aclrtSetExceptionInfoCallback`);
/// a library lacking the symbols is backend-acl's test (`NoticeMonitor::Unavailable`), whose
/// message reaches this report the same way.
#[test]
fn a_monitor_that_could_not_be_installed_leaves_the_create_ok_and_run_lane_notice_monitor_says_why()
{
    let _fake = common::fresh();
    let control = control();
    control.device(0).fail_call("aclrtSetExceptionInfoCallback", 500_000, 0, 1).expect("the rule");
    let mut config = common::fake_config(Via::Acl, 0, &HEALTHY, OP_TIMEOUT_MS);
    config.fault_notice_monitor = true;
    let lane = common::create(&config);
    assert_eq!(common::last_error(), "", "the create succeeded");
    let report = monitor_report(lane);
    let line = common::text(&report.line);
    let refused = (RunLaneNoticeMonitor::Refused, 500_000);
    assert_eq!((report.state, report.code), refused, "{line}");
    let says = ["not installed", "returned 500000", "run_lane_report_device_fault"];
    let why = says.iter().all(|s| line.contains(s));
    assert!(why, "why, and how notices can still reach the lane: {line}");
    let message = common::last_error();
    assert_eq!(message, "", "an OK report clears the last error");
    // The lane runs as any other, and a forwarded notice still reaches it.
    all_ok(lane, 0, 3);
    let ids = pair_ids(0);
    forward_notice(0, ids[0]);
    wait_for_resets(0, 1);
    ok_once_open(lane);
    let resets = common::force_resets(0);
    assert_eq!(resets, 1, "the forwarded notice's recovery");
    // Not asked: NOT_ASKED. The simulator: NOT_ASKED, saying it has none. Bad arguments.
    // On another device id: the first lane still holds device 0 (L-25).
    let plain = common::fake_lane(Via::Acl, 1, &HEALTHY, OP_TIMEOUT_MS);
    assert_eq!(monitor_report(plain).state, RunLaneNoticeMonitor::NotAsked);
    let mut sim = common::sim_config();
    sim.fault_notice_monitor = true;
    let sim = common::create(&sim);
    let sim_report = monitor_report(sim);
    assert_eq!(sim_report.state, RunLaneNoticeMonitor::NotAsked);
    assert!(common::text(&sim_report.line).contains("simulator"));
    // SAFETY: a NULL report is refused, not written.
    let null = unsafe { run_lane_notice_monitor(sim, std::ptr::null_mut()) };
    assert_eq!(null, RunLaneStatus::NullArgument);
    let message = common::last_error();
    assert!(message.contains("report_out"), "{message}");
    for handle in [plain, sim, lane] {
        common::destroy(handle);
    }
    let mut gone = run_lane::sized::init::<RunLaneNoticeMonitorReport>();
    // SAFETY: a destroyed handle is checked, never dereferenced.
    let stale = unsafe { run_lane_notice_monitor(lane, gone.as_mut_ptr()) };
    assert_eq!(stale, RunLaneStatus::InvalidHandle);
}

/// Issue 24 §3 ("registered again after a force reset"): with the fake's force reset taking
/// the registration down (one of the two behaviours device-truth §4 cannot tell apart), a
/// lane whose monitor is installed recovers from a poison (a force reset), and a notice
/// raised after that recovery still reaches it through the library's handler and recovers it
/// again. Without the registration after the reset the notice would be dropped.
#[test]
fn when_a_reset_drops_the_registration_a_notice_after_the_recovery_still_reaches_the_monitored_lane()
 {
    let _fake = common::fresh();
    let control = control();
    control
        .device(0)
        .set_semantics(run_lane_fake_ascendcl::Semantics::ResetDropsExceptionCallback(true))
        .expect("the switch");
    let mut config = common::fake_config(Via::Acl, 0, &RUN_1_FAULTS, OP_TIMEOUT_MS);
    config.fault_notice_monitor = true;
    let lane = common::create(&config);
    assert_eq!(monitor_report(lane).state, RunLaneNoticeMonitor::Installed);
    common::poison_with_run_1_and_recover(lane, 0);
    let fresh = pair_ids(0);
    let stream = i32::try_from(fresh[0]).expect("a small id");
    control.raise_notice(0, stream, AICORE_EXCEPTION, Duration::from_millis(2)).expect("raised");
    let counts = || control.notice_counts().expect("counts");
    common::wait_until("never delivered nor dropped", || counts() != (0, 0));
    let delivered = "delivered: the library registered its handler again after the reset";
    assert_eq!(counts(), (1, 0), "{delivered}");
    // The idle lane takes it at its notice poll and recovers.
    wait_for_resets(0, 2);
    let r3 = common::submit_when_open(lane);
    assert_eq!(common::wait(lane, r3).verdict, RunLaneVerdict::Ok);
    close_naming(common::close(lane), (0, fresh[0], AICORE_EXCEPTION));
    common::destroy(lane);
}

/// L-19's "the outcome stream and the close report say which notice caused a recovery",
/// when the recovery took down no run: a notice for an idle lane's stream recovers it (at its
/// notice poll, with no command) and puts nothing in the outcome stream, since there is no
/// item to carry it; the close report is where it shows, naming the notice.
fn a_notice_on_an_idle_lane_recovers_it_without_an_outcome_and_the_close_report_names_it(via: Via) {
    let _fake = common::fresh();
    let lane = common::fake_lane(via, 0, &HEALTHY, OP_TIMEOUT_MS);
    all_ok(lane, 0, 2);
    let ids = pair_ids(0);
    forward_notice(0, ids[1]);
    // At its notice poll: no command was sent.
    wait_for_resets(0, 1);
    let polled = common::poll(lane).err();
    assert_eq!(polled, Some(RunLaneStatus::Empty), "no item was taken down");
    ok_once_open(lane);
    let report = close_naming(common::close(lane), (0, ids[1], AICORE_EXCEPTION));
    assert!(!report.poisoned);
    common::destroy(lane);
}

/// Holds every prepare while set.
static HOLD_PREPARE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Prepares entered while held.
static HELD_PREPARES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

unsafe extern "C" fn held_prepare(_: *mut core::ffi::c_void, _: *const RunLaneRunInfo) -> i32 {
    use std::sync::atomic::Ordering;
    if HOLD_PREPARE.load(Ordering::Acquire) {
        HELD_PREPARES.fetch_add(1, Ordering::AcqRel);
        while HOLD_PREPARE.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    0
}

/// The same L-19 claim when the recovery took down only runs that had not launched (one held
/// in its prepare on a host worker, the rest queued behind it): each fails at stage
/// `FAULT_NOTICE` with the notice's code and a line naming it, and the close report names it.
fn a_notice_with_only_unlaunched_runs_fails_each_naming_the_notice_and_the_close_report_names_it(
    via: Via,
) {
    use std::sync::atomic::Ordering;
    let _fake = common::fresh();
    HOLD_PREPARE.store(false, Ordering::Release);
    HELD_PREPARES.store(0, Ordering::Release);
    let mut config = common::fake_config(via, 0, &HEALTHY, OP_TIMEOUT_MS);
    config.workers = 1;
    config.runner.concurrency.off_lane_thread = true;
    config.runner.prepare = Some(held_prepare);
    let lane = common::create(&config);
    all_ok(lane, 0, 1);
    let ids = pair_ids(0);
    HOLD_PREPARE.store(true, Ordering::Release);
    let held = common::submit(lane).expect("the held run");
    common::wait_until("the prepare never started", || HELD_PREPARES.load(Ordering::Acquire) > 0);
    let mut unlaunched = vec![held, common::submit(lane).expect("a run queued behind it")];
    forward_notice(0, ids[0]);
    // Accepted until the lane takes the notice, then SUSPECT.
    unlaunched.extend(submit_until_suspect(lane));
    HOLD_PREPARE.store(false, Ordering::Release);
    for run in unlaunched {
        assert_failed_by_notice(&common::wait(lane, run), ids[0]);
    }
    assert_eq!(launches(0), 2, "only the first run launched");
    ok_once_open(lane);
    assert_eq!(common::force_resets(0), 1);
    close_naming(common::close(lane), (0, ids[0], AICORE_EXCEPTION));
    common::destroy(lane);
}

common::on_each_backend!(
    a_forwarded_notice_on_a_lane_stream_during_queued_runs_recovers_the_device_after_their_verdicts,
    a_notice_for_another_stream_or_another_device_changes_nothing,
    a_notice_naming_a_stream_from_before_the_last_confirmed_reset_changes_nothing,
    with_stream_numbering_restarted_at_the_reset_a_late_notice_naming_a_reused_id_changes_nothing,
    with_two_lanes_on_two_devices_a_notice_recovers_only_the_lane_whose_stream_it_names,
    a_run_that_had_not_launched_fails_with_an_outcome_naming_the_notice,
    with_the_monitor_not_installed_the_embeddings_handler_forwards_a_late_notice_and_the_lane_recovers,
    a_notice_on_an_idle_lane_recovers_it_without_an_outcome_and_the_close_report_names_it,
    a_notice_with_only_unlaunched_runs_fails_each_naming_the_notice_and_the_close_report_names_it,
);
