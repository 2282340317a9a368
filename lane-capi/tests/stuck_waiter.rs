//! Issue 44 item 5b through the C ABI, on the fake libascendcl: a lane lost to a completion
//! waiter stuck in a device call (the fake's event waits stall a minute, ignoring their
//! bounds) is destroyed within seconds: `run_lane_destroy_with_report` waits about a second
//! for the waiter, leaves it, and says so (`threads_left`, `LOST`, a last-error line naming
//! the thread). Before, it joined the waiter for the rest of its minute.
//!
//! Its own test binary: the thread left behind stays inside the fake until the process ends.

mod common;

use std::time::{Duration, Instant};

use common::{Kernels, control, last_error};
use run_lane::*;
use run_lane_fake_ascendcl::Semantics;

static KERNELS: Kernels = Kernels::healthy(Duration::from_millis(20));

#[test]
fn a_lane_lost_to_a_stuck_waiter_is_destroyed_within_seconds_naming_the_waiter_it_left() {
    let _fake = common::fresh();
    let control = control();
    let stall = control.set_semantics(Semantics::EventWaitStallMs(60_000));
    stall.expect("the stall switch");
    // Run 1 is answered at its bound (its 200 ms deadline, the device verdict's 200 ms, the
    // waiter's 6 s grace): a host wait timeout; the drain queues behind the stuck wait and is
    // answered at its own bound (the default 10 s drain, plus the grace); the force reset
    // then finds the waiter still inside its call past that call's bound: the lane is lost
    // (L-20), about 23 s in.
    let mut config = common::fake_config(common::Via::Acl, 0, &KERNELS, 100);
    config.completion_timeout_ms = 200;
    let lane = common::create(&config);
    let run = common::submit(lane).expect("accepted");
    let outcome = common::wait(lane, run);
    common::assert_class(&outcome, RunLaneClass::Poison);
    common::wait_until("the lane was never lost", || match common::submit(lane) {
        Err(RunLaneStatus::Lost) => true,
        Err(RunLaneStatus::Recovering) => false,
        other => panic!("{other:?}: {}", last_error()),
    });
    let start = Instant::now();
    let mut report = run_lane::sized::init::<RunLaneCloseReport>();
    // SAFETY: a live handle, destroyed once, and a writable report.
    let status = unsafe { run_lane_destroy_with_report(lane, report.as_mut_ptr()) };
    let took = start.elapsed();
    let message = last_error();
    assert!(took < Duration::from_secs(5), "destroy took {took:?}");
    assert_eq!(status, RunLaneStatus::Lost, "{message}");
    assert!(message.contains("lane-waiter"), "{message}");
    // SAFETY: written by the destroy, zeroed before.
    let report = unsafe { report.assume_init() };
    assert_eq!(report.threads_left, 1);
    // The handle is gone all the same.
    // SAFETY: any handle value is checked.
    let again = unsafe { run_lane_destroy(lane) };
    assert_eq!(again, RunLaneStatus::InvalidHandle);
}
