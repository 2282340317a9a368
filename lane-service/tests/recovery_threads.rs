//! Where recovery runs and what it waits for (issue 44, item 5): a drain the waiter takes late
//! is bounded from the start of its call (L-20 loses no lane to a waiter that honours its
//! bounds); a lane lost to a stuck waiter shuts down without joining it; no force reset is
//! made on a bound submitter's thread; the outcome callback never runs beside a force reset.

mod common;

use common::{Noting, assert_ok, lane_on, stalled};
use lane_core::{Outcome, Profile, RunId, RunRequest};
use lane_driver::testkit::{Call, Fail, Stall, TestDevice, Then};
use lane_service::{LaneHandle, ServiceConfig, ServiceError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const GENEROUS: Duration = Duration::from_secs(60);

/// A profile whose run 1 is answered at its bound soon (its 200 ms deadline, the 200 ms
/// device verdict's bound after it, and the waiter's 6 s grace), with a drain of `drain_ms`.
fn short_profile(drain_ms: u64) -> Profile {
    common::timeouts(200, 100, drain_ms)
}

/// A lane on lane-driver's `TestDevice` whose waiter's first event wait is stuck `stuck` (ignoring its
/// timeout), and whose drain takes its whole timeout when `slow_drain`.
fn stuck_lane(profile: Profile, stuck: Duration, slow_drain: bool) -> LaneHandle {
    let (device, _) = stalled(stuck, Then::Answer);
    if slow_drain {
        let drain = Stall::new(Call::SynchronizeDevice, Duration::from_secs(3_600), Then::TimeOut);
        device.script().stalls.push(drain);
    }
    lane_on(ServiceConfig::new(profile), device, Noting::default())
}

/// Submits until the lane accepts (it refuses while it recovers).
fn submit_when_open(handle: &LaneHandle) -> RunId {
    let start = Instant::now();
    loop {
        match handle.submit(RunRequest::new()) {
            Ok(run) => return run,
            Err(ServiceError::Submit(
                lane_core::SubmitError::Poisoned { .. } | lane_core::SubmitError::Full { .. },
            )) if start.elapsed() < GENEROUS => thread::sleep(Duration::from_millis(5)),
            Err(other) => panic!("refused: {other}"),
        }
    }
}

/// Submits run 1 and asserts it ended with a host wait timeout.
fn first_run_times_out(handle: &LaneHandle) {
    let first = handle.submit(RunRequest::new()).expect("accepted");
    let first = handle.wait_report(first, GENEROUS).expect("run 1's outcome");
    assert!(first.to_string().contains("rule=host-wait-timeout"), "{first}");
}

/// Issue 44 item 5a. Run 1's wait is stuck until 13.4 s: at its bound (about 6.4 s) the lane
/// answers it itself (a host wait timeout), poisons, and hands out the drain (2 s), whose
/// bound counted from that hand-out is about 14.4 s; the waiter takes the drain at 13.4 s,
/// and it takes its whole 2 s. Counted from the hand-out, the drain's bound passed at 14.4 s
/// with the waiter inside it, the force reset was held for it with that same passed bound,
/// and the lane was lost (the old code). Counted from the waiter's start (21.4 s), the drain
/// answers at 15.4 s, the reset and probe follow, and the lane runs on.
#[test]
fn a_drain_the_waiter_takes_late_is_bounded_from_its_start_so_a_full_drain_loses_no_lane() {
    let handle = stuck_lane(short_profile(2_000), Duration::from_millis(13_400), true);
    first_run_times_out(&handle);
    let second = submit_when_open(&handle);
    let second = handle.wait(second, GENEROUS).expect("run 2's outcome");
    assert_ok(&second);
    assert!(handle.lost().is_none(), "{:?}", handle.lost());
}

/// Issue 44 item 5b. The waiter is stuck for a minute: run 1 is answered at its bound, the
/// drain (100 ms) at its own, and the force reset finds the waiter still inside its call past
/// that call's bound: the lane is lost (L-20: no reset under a wait). The shutdown then waits
/// about a second for the waiter and leaves it, naming it, instead of joining it for the
/// rest of its minute (the old code).
#[test]
fn after_a_stuck_waiter_loses_the_lane_shut_down_returns_within_seconds_naming_the_waiter_left() {
    let handle = stuck_lane(short_profile(100), Duration::from_secs(60), false);
    first_run_times_out(&handle);
    let start = Instant::now();
    let cause = loop {
        if let Some(cause) = handle.lost() {
            break cause;
        }
        assert!(start.elapsed() < GENEROUS, "the lane was never lost");
        thread::sleep(Duration::from_millis(10));
    };
    assert!(cause.to_string().contains("past its bound"), "{cause}");
    let start = Instant::now();
    let shutdown = handle.shut_down().expect("from the test thread");
    let took = start.elapsed();
    assert!(took < Duration::from_secs(5), "the shutdown took {took:?}");
    let left = shutdown.left.expect("the stuck waiter was left behind");
    assert_eq!(left.thread, "lane-waiter");
    assert!(left.to_string().contains("lane-waiter"), "{left}");
    // The last handle's drop returns at once too: the threads are already handled.
    let start = Instant::now();
    drop(handle);
    assert!(start.elapsed() < Duration::from_secs(5));
}

/// The name of the thread that submits in [`no_force_reset_is_made_on_a_bound_submitting_thread`].
const SUBMITTER: &str = "submitter";

/// Issue 44 item 5c. With `submitters_bound`, a submitting thread runs the lane's steps, and
/// takes whatever answer lands meanwhile: a drain's answer among them. Every other run's
/// wait of 80 fails with an AICore exception (a poison, then a drain, a force reset and a
/// probe),
/// while one thread submits all along with callbacks that keep it in the steps: no force
/// reset is ever made on it (the old code made some there); they are the lane's own
/// threads'.
#[test]
fn no_force_reset_is_made_on_a_bound_submitting_thread() {
    let poisoned: Vec<u64> = (2..=80).step_by(2).collect();
    let device = TestDevice::real();
    let watch = device.watch();
    let fault = Fail::runs(Call::SynchronizeEvent, &poisoned, 507_015);
    device.script().fail.push(fault);
    let mut config = ServiceConfig::new(Profile::a2a3());
    config.submitters_bound = true;
    let runner = Noting { slow_on: Some(SUBMITTER), ..Noting::default() };
    let handle = lane_on(config, device, runner);
    let submitter = {
        let handle = handle.clone();
        thread::Builder::new()
            .name(SUBMITTER.into())
            .spawn(move || {
                let mut accepted = Vec::new();
                let start = Instant::now();
                while accepted.len() < 80 && start.elapsed() < GENEROUS {
                    match handle.submit(RunRequest::new()) {
                        Ok(run) => accepted.push(run),
                        // Full, or recovering: the steps ran here all the same.
                        Err(ServiceError::Submit(_)) => thread::sleep(Duration::from_millis(1)),
                        Err(other) => panic!("{other}"),
                    }
                }
                accepted
            })
            .expect("the submitter starts")
    };
    let accepted = submitter.join().expect("the submitter");
    for run in &accepted {
        handle.wait(*run, GENEROUS).expect("every outcome");
    }
    assert!(handle.lost().is_none(), "{:?}", handle.lost());
    let resets = watch.script().resets.clone();
    assert!(resets.len() >= 2, "the faults reset the device: {resets:?}");
    for name in &resets {
        assert!(
            matches!(name.as_deref(), Some("lane" | "lane-waiter")),
            "a force reset on {name:?}: {resets:?}"
        );
    }
}

/// Issue 44 item 5d. Runs go in pairs: the first ends `Ok`, the second, queued behind it,
/// poisons (its wait fails with an AICore exception) right after, and the force reset
/// follows; the callback takes 100 ms for each outcome, the reset 100 ms. The callback ran on
/// the lane thread, woken for the first run's outcome while the completion waiter went on to
/// the second's poison, the drain and the reset, so the two overlapped (the old code); shown
/// by the thread holding the lane's steps before it lets go, it never runs beside one.
#[test]
fn the_outcome_callback_never_runs_beside_a_force_reset() {
    let device = TestDevice::real();
    let watch = device.watch();
    let mut reset = Stall::new(Call::ResetDeviceForce, Duration::from_millis(100), Then::Answer);
    reset.every = true;
    let mut script = device.script();
    script.fail.push(Fail::runs(Call::SynchronizeEvent, &[2, 4], 507_015));
    script.stalls.push(reset);
    drop(script);
    let overlaps = Arc::new(Mutex::new(Vec::new()));
    let mut config = ServiceConfig::new(Profile::a2a3());
    {
        let (resetting, overlaps) = (device.watch(), Arc::clone(&overlaps));
        let resetting = move || resetting.script().stalled == Some(Call::ResetDeviceForce);
        config.on_outcome = Some(Box::new(move |outcome: &Outcome| {
            let before = resetting();
            thread::sleep(Duration::from_millis(100));
            if before || resetting() {
                overlaps.lock().unwrap().push(outcome.seq());
            }
        }));
    }
    let handle = lane_on(config, device, Noting::default());
    for _ in 0..2 {
        let first = submit_when_open(&handle);
        let second = submit_when_open(&handle);
        handle.wait(first, GENEROUS).expect("its outcome");
        handle.wait(second, GENEROUS).expect("its outcome");
    }
    let last = submit_when_open(&handle);
    handle.wait(last, GENEROUS).expect("its outcome");
    drop(handle);
    assert!(watch.script().resets.len() >= 2, "the faults reset the device");
    assert_eq!(*overlaps.lock().unwrap(), Vec::<u64>::new(), "outcomes shown beside a force reset");
}
