//! `RUN_LANE_DRIVE_CALLER` through the C ABI, on the fake libascendcl (L-23): the lane starts
//! no thread; every callback runs on the thread that makes the call (a thread-local the
//! test's driving thread sets is seen in each); runs queue (L-18: a run submitted while its
//! predecessor executes is launched before the predecessor ends); an expired `run_lane_wait`
//! leaves the run live and a later wait gets its outcome; `run_lane_wait` from a callback is
//! still `WRONG_THREAD`; close finishes the launched run and refuses new submits.

mod common;

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use common::{Kernels, Via, control, last_error, wait};
use core::ffi::c_void;
use run_lane::*;

/// 50 ms kernels.
static KERNELS: Kernels = Kernels::healthy(Duration::from_millis(50));
/// 300 ms kernels: a wait of 50 ms expires before the run ends.
static LONG: Kernels = Kernels::healthy(Duration::from_millis(300));

thread_local! {
    /// Set on the test's driving thread: every callback must see it.
    static DRIVING: Cell<bool> = const { Cell::new(false) };
}

/// Callbacks made, and those made on a thread other than the driving one.
static CALLS: AtomicU32 = AtomicU32::new(0);
static ELSEWHERE: AtomicU32 = AtomicU32::new(0);
/// Which callbacks ran (a bit each: prepare, launch_aicore, launch_aicpu, finalise,
/// on_outcome).
static SEEN: AtomicU32 = AtomicU32::new(0);
/// The lane `on_outcome` calls `run_lane_wait` on (0: none), and what it returned.
static WAIT_FROM_CALLBACK_LANE: AtomicU64 = AtomicU64::new(0);
static WAIT_FROM_CALLBACK: AtomicU32 = AtomicU32::new(u32::MAX);

fn note(bit: u32) {
    CALLS.fetch_add(1, Ordering::SeqCst);
    SEEN.fetch_or(1 << bit, Ordering::SeqCst);
    if !DRIVING.with(Cell::get) {
        ELSEWHERE.fetch_add(1, Ordering::SeqCst);
    }
}

unsafe extern "C" fn prepare(_user: *mut c_void, _run: *const RunLaneRunInfo) -> i32 {
    note(0);
    0
}

fn noted_launch(user: *mut c_void, stream: *mut c_void, engine: u32, args: &RunLaneRunArgs) -> i32 {
    note(1 + engine);
    common::launch(user, stream, engine, args)
}

common::launch_callbacks!(launch_aicore, launch_aicpu, noted_launch);

unsafe extern "C" fn finalise(_user: *mut c_void, _run: *const RunLaneRunInfo, _: bool) -> i32 {
    note(3);
    0
}

unsafe extern "C" fn on_outcome(_user: *mut c_void, outcome: *const RunLaneOutcome) {
    note(4);
    let lane = WAIT_FROM_CALLBACK_LANE.load(Ordering::SeqCst);
    if lane != 0 {
        let mut taken = run_lane::sized::init::<RunLaneOutcome>();
        // SAFETY: any handle value is checked; a valid outcome for the call; writable out.
        let status = unsafe {
            run_lane_wait(
                std::ptr::without_provenance_mut(lane as usize),
                (*outcome).id,
                10,
                taken.as_mut_ptr(),
            )
        };
        WAIT_FROM_CALLBACK.store(status as u32, Ordering::SeqCst);
    }
}

/// A caller-driven lane on the fake's device 0 running `kernels`, reached `via` a backend,
/// every callback noting its thread.
fn caller_lane(via: Via, kernels: &'static Kernels) -> *mut RunLane {
    for counter in [&CALLS, &ELSEWHERE, &SEEN] {
        counter.store(0, Ordering::SeqCst);
    }
    WAIT_FROM_CALLBACK_LANE.store(0, Ordering::SeqCst);
    WAIT_FROM_CALLBACK.store(u32::MAX, Ordering::SeqCst);
    let mut config = common::fake_config(via, 0, kernels, 5_000);
    config.drive = RunLaneDrive::Caller as u32;
    config.runner.prepare = Some(prepare);
    config.runner.launch_aicore = Some(launch_aicore);
    config.runner.launch_aicpu = Some(launch_aicpu);
    config.runner.finalise = Some(finalise);
    config.runner.on_outcome = Some(on_outcome);
    common::create(&config)
}

fn in_caller_mode_a_run_submitted_while_its_predecessor_executes_is_launched_before_it_ends(
    via: Via,
) {
    let _fake = common::fresh();
    let control = control();
    DRIVING.with(|d| d.set(true));
    let lane = caller_lane(via, &KERNELS);
    let first = common::submit(lane).expect("run 1 accepted");
    // Launched inside its submit (no thread of the lane's own could have).
    assert_eq!(control.counters().expect("counters").launches, 2);
    thread::sleep(Duration::from_millis(10));
    let second = common::submit(lane).expect("run 2 accepted");
    let queued = control.counters().expect("counters").queued_launches;
    assert_eq!(queued, 1, "run 2 was launched while run 1 executed");
    let (first, second) = (wait(lane, first), wait(lane, second));
    common::assert_ok("run 1", &first);
    common::assert_ok("run 2", &second);
    let behind = second.device_start_ns >= first.device_end_ns;
    assert!(behind, "queued behind it on the pair");
    common::destroy(lane);
    DRIVING.with(|d| d.set(false));
}

fn in_caller_mode_the_lane_starts_no_thread_and_every_callback_runs_on_the_calling_thread(
    via: Via,
) {
    let _fake = common::fresh();
    DRIVING.with(|d| d.set(true));
    let lane = caller_lane(via, &KERNELS);
    // The documented loop: submit until FULL, wait for the oldest, and again.
    let outcomes = common::documented_loop(lane, |submitted, _| submitted < 8);
    assert_eq!(outcomes.len(), 8);
    common::assert_all_ok("caller-driven", &outcomes);
    assert_eq!(common::usage().lane_threads, 0, "no thread of the lane's");
    // A poll and a close run the steps here too.
    assert_eq!(common::poll(lane).err(), Some(RunLaneStatus::Empty));
    common::close(lane);
    common::destroy(lane);
    DRIVING.with(|d| d.set(false));
    assert_eq!(SEEN.load(Ordering::SeqCst), 0b1_1111, "every callback ran");
    assert!(CALLS.load(Ordering::SeqCst) >= 8 * 5);
    let elsewhere = ELSEWHERE.load(Ordering::SeqCst);
    assert_eq!(elsewhere, 0, "callbacks on a thread other than the caller's");
}

fn in_caller_mode_an_expired_wait_leaves_the_run_live_and_a_later_wait_gets_its_outcome(via: Via) {
    let _fake = common::fresh();
    DRIVING.with(|d| d.set(true));
    let lane = caller_lane(via, &LONG);
    let run = common::submit(lane).expect("accepted");
    let start = Instant::now();
    let status = common::try_wait(lane, run, 50).err();
    assert_eq!(status, Some(RunLaneStatus::TimedOut), "{}", last_error());
    let waited = start.elapsed();
    assert!(waited < Duration::from_millis(250), "{waited:?}");
    let polled = common::poll(lane).err();
    assert_eq!(polled, Some(RunLaneStatus::Empty), "still running");
    common::assert_ok("the later wait", &wait(lane, run));
    common::destroy(lane);
    DRIVING.with(|d| d.set(false));
}

fn in_caller_mode_close_finishes_the_launched_run_and_refuses_new_submits(via: Via) {
    let _fake = common::fresh();
    let lane = caller_lane(via, &KERNELS);
    let run = common::submit(lane).expect("accepted");
    let report = common::close(lane);
    assert_eq!(report.state, RunLaneState::Closing);
    assert_eq!(common::submit(lane), Err(RunLaneStatus::Closed));
    common::assert_ok("the launched run", &wait(lane, run));
    let report = common::destroy_with_report(lane);
    assert_eq!(report.state, RunLaneState::Closed);
    assert_eq!((report.streams_left, report.threads_left), (0, 0));
}

fn in_caller_mode_run_lane_wait_from_a_callback_is_still_wrong_thread(via: Via) {
    let _fake = common::fresh();
    let lane = caller_lane(via, &KERNELS);
    WAIT_FROM_CALLBACK_LANE.store(lane.addr() as u64, Ordering::SeqCst);
    let run = common::submit(lane).expect("accepted");
    assert_eq!(wait(lane, run).verdict, RunLaneVerdict::Ok);
    let status = WAIT_FROM_CALLBACK.load(Ordering::SeqCst);
    assert_eq!(status, RunLaneStatus::WrongThread as u32);
    WAIT_FROM_CALLBACK_LANE.store(0, Ordering::SeqCst);
    common::destroy(lane);
}

common::on_each_backend!(
    in_caller_mode_a_run_submitted_while_its_predecessor_executes_is_launched_before_it_ends,
    in_caller_mode_the_lane_starts_no_thread_and_every_callback_runs_on_the_calling_thread,
    in_caller_mode_an_expired_wait_leaves_the_run_live_and_a_later_wait_gets_its_outcome,
    in_caller_mode_close_finishes_the_launched_run_and_refuses_new_submits,
    in_caller_mode_run_lane_wait_from_a_callback_is_still_wrong_thread,
);
