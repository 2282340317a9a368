//! Who recovers (SPEC L-24) through the C ABI, on the fake libascendcl. With
//! `RUN_LANE_RECOVERY_RUNTIME` an AICore exception gives every run its outcome, calls
//! `on_poison` once (no thread of the lane inside a device call), and the lane then makes no
//! device call: submits are `UNUSABLE` until the runtime resets the device itself and calls
//! `run_lane_device_reset`, after which the lane reopens. In place, the lane's one reset is
//! bracketed by `before_reset` and `after_reset`. L-20: between force reset attempts the lane
//! thread binds the device again (a second force reset with no `aclrtSetDevice` since the
//! last is refused with 507007, as on real ACL). Each runs through the ACL backend and through
//! a runtime's device table over the fake (`on_each_backend!`).
//!
//! Its own test binary: the fake's state is process-wide; the tests take `common::serial()`.

mod common;

use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use common::*;
use core::ffi::c_void;
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICORE, ENGINE_AICPU, FakeCounters, Outcome};

/// Run 1's AICore kernel raises an AICore exception (507015): a poison.
static POISONED: Kernels =
    Kernels::faulty(Duration::from_millis(2), &[(1, ENGINE_AICORE, Outcome::Exception)]);

/// What a hook saw when it was called.
#[derive(Clone, Debug)]
struct Called {
    hook: &'static str,
    origin: Option<u64>,
    code: Option<i32>,
    line: String,
    /// The device's counters at the call.
    counters: FakeCounters,
}

/// Every hook call of the test running now, in order.
static CALLS: Mutex<Vec<Called>> = Mutex::new(Vec::new());
/// The device the test running now uses.
static DEVICE: Mutex<i32> = Mutex::new(0);

fn counters() -> FakeCounters {
    let device = *DEVICE.lock().unwrap();
    control().device(device).counters().expect("counters")
}

fn note(hook: &'static str, info: Option<&RunLaneRecoveryInfo>) {
    let counters = counters();
    CALLS.lock().unwrap().push(Called {
        hook,
        origin: info.and_then(|i| i.has_origin.then_some(i.origin)),
        code: info.and_then(|i| i.has_code.then_some(i.code)),
        line: info.map(|i| text(&i.failure_line)).unwrap_or_default(),
        counters,
    });
}

unsafe extern "C" fn on_poison(_: *mut c_void, info: *const RunLaneRecoveryInfo) {
    // SAFETY: the library passes a valid info for the call.
    note("on_poison", Some(unsafe { &*info }));
}

unsafe extern "C" fn before_reset(_: *mut c_void, info: *const RunLaneRecoveryInfo) {
    // SAFETY: the library passes a valid info for the call.
    note("before_reset", Some(unsafe { &*info }));
}

unsafe extern "C" fn after_reset(_: *mut c_void, recovered: bool) {
    let (yes, no) = ("after_reset(recovered)", "after_reset(lost)");
    note(if recovered { yes } else { no }, None);
}

/// A lane on `device`, reached `via` a backend, whose run 1 poisons, with every recovery hook
/// set.
fn lane(via: Via, device: i32, recovery: RunLaneRecovery, kernels: &Kernels) -> *mut RunLane {
    *DEVICE.lock().unwrap() = device;
    CALLS.lock().unwrap().clear();
    let mut config = fake_config(via, device, kernels, 5_000);
    config.recovery = recovery as u32;
    config.runner.on_poison = Some(on_poison);
    config.runner.before_reset = Some(before_reset);
    config.runner.after_reset = Some(after_reset);
    create(&config)
}

fn hook_calls() -> Vec<Called> {
    CALLS.lock().unwrap().clone()
}

/// Waits until `hooks` hooks were called, within [`BOUND`].
fn wait_for_calls(hooks: usize) -> Vec<Called> {
    wait_until(&format!("{hooks} hook calls"), || hook_calls().len() >= hooks);
    hook_calls()
}

/// The runtime's own force reset of `device` (through its own calls, not the lane's), on a
/// thread it binds first, as ACL wants.
fn runtime_resets(device: i32) {
    type ById = unsafe extern "C" fn(i32) -> i32;
    let by_id = |name: &core::ffi::CStr| {
        // SAFETY: both symbols are ACL's `aclError f(int32_t deviceId)`.
        unsafe { std::mem::transmute::<*mut c_void, ById>(fake_symbol(name)) }
    };
    // SAFETY: plain values.
    let (bind, reset) =
        unsafe { (by_id(c"aclrtSetDevice")(device), by_id(c"aclrtResetDeviceForce")(device)) };
    assert_eq!((bind, reset), (0, 0), "the runtime's bind and reset");
}

fn the_runtimes_recovery_calls_on_poison_once_and_touches_the_device_only_after_its_reset(
    via: Via,
) {
    let _serial = serial();
    let device = 8;
    let lane = lane(via, device, RunLaneRecovery::Runtime, &POISONED);
    let resets = force_resets(device);
    let (r1, r2) = (submit(lane).expect("run 1"), submit(lane).expect("run 2"));
    let one = wait(lane, r1);
    assert_eq!(one.failure_class, RunLaneClass::Poison, "{}", line(&one));
    let two = wait(lane, r2);
    assert_eq!(two.verdict, RunLaneVerdict::Poisoned);
    assert_eq!(two.origin, r1);
    let calls = wait_for_calls(1);
    let [poisoned] = &calls[..] else { panic!("one hook call: {calls:?}") };
    let got = (poisoned.hook, poisoned.origin, poisoned.code);
    assert_eq!(got, ("on_poison", Some(r1), Some(507_015)));
    assert!(poisoned.line.starts_with("run 1 failed"), "{}", poisoned.line);
    let blocked = poisoned.counters.blocked_event_syncs;
    assert_eq!(blocked, 0, "no thread of the lane inside a wait at the hand-over");
    // Nothing more from the lane: no drain, reset, destroy or free, however long it sits.
    assert_eq!(submit(lane), Err(RunLaneStatus::Unusable));
    let message = last_error();
    assert!(message.contains("run_lane_device_reset"), "names the C call: {message}");
    thread::sleep(Duration::from_millis(100));
    let (then, now) = (&poisoned.counters, counters());
    assert_eq!(force_resets(device), resets, "the lane reset nothing");
    let what = "stream destroys, event destroys, frees, stream syncs, launches after on_poison";
    let of = |c: &FakeCounters| {
        let destroys = (c.streams_destroyed, c.events_destroyed);
        (destroys, c.frees, c.stream_syncs, c.launches)
    };
    assert_eq!(of(then), of(&now), "{what}");
    assert_eq!(hook_calls().len(), 1, "on_poison once");

    runtime_resets(device);
    assert_eq!(run_lane_device_reset(lane), RunLaneStatus::Ok, "{}", last_error());
    let again = run_lane_device_reset(lane);
    assert_eq!(again, RunLaneStatus::Unusable, "a second report: no reset is awaited");
    let r3 = submit(lane).expect("open again");
    assert_eq!(wait(lane, r3).verdict, RunLaneVerdict::Ok);
    assert_eq!(force_resets(device), resets + 1, "the runtime's one reset");
    assert_eq!(counters().resets_under_wait, 0);
    let calls = hook_calls().len();
    assert_eq!(calls, 1, "no in-place hook with the runtime's recovery");
    destroy(lane);
}

fn in_place_recovery_brackets_its_one_reset_with_before_reset_and_after_reset(via: Via) {
    let _serial = serial();
    let device = 9;
    let lane = lane(via, device, RunLaneRecovery::InPlace, &POISONED);
    let resets = force_resets(device);
    let r1 = submit(lane).expect("run 1");
    assert_eq!(wait(lane, r1).failure_class, RunLaneClass::Poison);
    let r2 = submit_when_open(lane);
    assert_eq!(wait(lane, r2).verdict, RunLaneVerdict::Ok);
    let calls = wait_for_calls(2);
    let hooks: Vec<&str> = calls.iter().map(|c| c.hook).collect();
    assert_eq!(hooks, ["before_reset", "after_reset(recovered)"]);
    assert_eq!((calls[0].origin, calls[0].code), (Some(r1), Some(507_015)));
    let resets_at = (calls[0].counters.force_resets, calls[1].counters.force_resets);
    let why = "before_reset comes before the reset, after_reset after the one reset";
    assert_eq!(resets_at, (resets, resets + 1), "{why}");
    assert_eq!(run_lane_device_reset(lane), RunLaneStatus::Unusable);
    assert!(last_error().contains("awaits no reset"), "{}", last_error());
    destroy(lane);
}

/// Healthy runs, long enough for a notice to come while one executes.
static HEALTHY: Kernels = Kernels::healthy(Duration::from_millis(20));

fn with_the_runtimes_recovery_a_matched_notice_refuses_admission_tells_the_runtime_and_resets_nothing(
    via: Via,
) {
    let _serial = serial();
    let device = 10;
    let lane = lane(via, device, RunLaneRecovery::Runtime, &HEALTHY);
    let resets = force_resets(device);
    let r1 = submit(lane).expect("run 1");
    let ids = || control().live_stream_ids(device).expect("stream ids");
    wait_until(&format!("no pair on device {device}"), || ids().len() >= 2);
    let stream = u32::try_from(ids()[0]).expect("a small id");
    let device_id = u32::try_from(device).expect("a small id");
    let noticed = run_lane_report_device_fault(device_id, stream, 507_015);
    assert_eq!(noticed, RunLaneStatus::Ok);
    // A notice decides no run: the launched one gets its own verdict.
    assert_eq!(wait(lane, r1).verdict, RunLaneVerdict::Ok);
    let calls = wait_for_calls(1);
    assert_eq!(calls[0].hook, "on_poison");
    assert_eq!(calls[0].origin, None, "no run caused it: the notice did");
    assert_eq!(calls[0].code, Some(507_015));
    assert!(calls[0].line.contains("fault notice"), "{}", calls[0].line);
    assert_eq!(submit(lane), Err(RunLaneStatus::Unusable));
    thread::sleep(Duration::from_millis(50));
    assert_eq!(force_resets(device), resets, "the notice reset nothing");
    runtime_resets(device);
    assert_eq!(run_lane_device_reset(lane), RunLaneStatus::Ok);
    let r2 = submit(lane).expect("open again");
    assert_eq!(wait(lane, r2).verdict, RunLaneVerdict::Ok);
    destroy(lane);
}

static RUN_1_FAULTS: Kernels =
    Kernels::faulty(Duration::from_micros(500), &[(1, ENGINE_AICPU, Outcome::Exception)]);

/// L-20: between force reset attempts the lane binds the device again.
fn a_recovery_whose_first_probe_cannot_bind_binds_again_before_its_second_reset(via: Via) {
    let _serial = serial();
    let control = control();
    let fake = control.session().expect("reset the fake");
    // The binds of device 0: the lane thread's open, the waiter's before its first wait,
    // then attempt 1's probe after its reset: that one fails, so attempt 1 fails and the
    // lane thread is unbound when attempt 2 resets.
    control.fail_call("aclrtSetDevice", 507_899, 2, 1).expect("a rule");
    let lane = create(&fake_config(via, 0, &RUN_1_FAULTS, 200));
    let outcomes = documented_loop(lane, |submitted, _| submitted < 3);
    destroy(lane);
    let counters = control.counters().expect("counters");
    assert_class(&outcomes[0], RunLaneClass::Poison);
    // Run 2 may have been queued behind run 1 (poisoned with it); run 3 runs after the
    // recovery's second attempt.
    let two = matches!(outcomes[1].verdict, RunLaneVerdict::Ok | RunLaneVerdict::Poisoned);
    assert!(two, "{}", line(&outcomes[1]));
    assert_ok("after the second attempt", &outcomes[2]);
    let resets = counters.force_resets;
    assert_eq!(resets, 2, "attempt 1's reset and attempt 2's: {counters:#?}");
    drop(fake);
}

on_each_backend!(
    the_runtimes_recovery_calls_on_poison_once_and_touches_the_device_only_after_its_reset,
    in_place_recovery_brackets_its_one_reset_with_before_reset_and_after_reset,
    with_the_runtimes_recovery_a_matched_notice_refuses_admission_tells_the_runtime_and_resets_nothing,
    a_recovery_whose_first_probe_cannot_bind_binds_again_before_its_second_reset,
);
