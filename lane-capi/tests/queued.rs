//! L-18 through the C ABI, on the fake libascendcl: a run submitted 10 ms into its 50 ms
//! predecessor is launched onto the pair before the predecessor completes (the fake counts
//! the AICPU launch behind an unfinished kernel as a queued launch). The lane thread acts on
//! the submit at once, because the completion waiter, not it, sits in the predecessor's wait.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{Kernels, control, wait};
use run_lane::*;

/// Each run: a pair of 50 ms fake kernels.
static KERNELS: Kernels = Kernels::healthy(Duration::from_millis(50));
const INTO_PREDECESSOR: Duration = Duration::from_millis(10);

#[test]
fn a_run_submitted_10_ms_into_its_50_ms_predecessor_is_launched_before_it_completes() {
    let control = control();
    let _fake = control.session().expect("reset the fake");
    let config = common::fake_config(0, &KERNELS, 5_000);
    let mut lane = std::ptr::null_mut();
    // SAFETY: a valid config (its path outlives the lane) and a writable handle.
    let created = unsafe { run_lane_create(&raw const config, &raw mut lane) };
    assert_eq!(created, RunLaneStatus::Ok);

    let launches = || control.counters().expect("the fake's counters").launches;
    let first = common::submit(lane).expect("run 1 accepted");
    let start = Instant::now();
    while launches() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "run 1 never launched"
        );
        thread::yield_now();
    }
    // Run 1's kernels are on the device: 10 ms into them, submit its successor.
    thread::sleep(INTO_PREDECESSOR);
    let second = common::submit(lane).expect("run 2 accepted");
    let first = wait(lane, first);
    let queued = control.counters().expect("counters").queued_launches;
    let second = wait(lane, second);
    for outcome in [first, second] {
        assert_eq!(outcome.verdict, RunLaneVerdict::Ok, "run {}", outcome.id);
        assert!(outcome.has_timing);
    }
    assert_eq!(queued, 1, "run 2 was launched while run 1 executed");
    assert!(
        second.device_start_ns >= first.device_end_ns,
        "queued behind it on the pair, not beside it"
    );
    // SAFETY: a live handle, destroyed once.
    assert_eq!(unsafe { run_lane_destroy(lane) }, RunLaneStatus::Ok);
}
