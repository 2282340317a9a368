//! L-18 on the fake libascendcl through lane-service, the path the C ABI runs: a run
//! submitted while its predecessor's kernels execute is launched onto the pair before the
//! predecessor completes, because the lane thread never sits in the predecessor's wait (the
//! completion waiter does). The fake records it: an AICPU launch behind an unfinished kernel
//! is a queued launch (`FakeCounters::queued_launches`).

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use backend_sim::RunTimes;
use lane_conformance::{FakeRunner, FakeSession, FakeTimeouts};
use lane_core::{Outcome, Profile, RunRequest, Verdict};
use lane_service::{ServiceConfig, spawn};

const KERNEL: Duration = Duration::from_millis(50);
const INTO_PREDECESSOR: Duration = Duration::from_millis(10);
const GENEROUS: Duration = Duration::from_secs(30);

#[test]
fn a_run_submitted_10_ms_into_its_50_ms_predecessor_is_launched_before_the_predecessor_completes() {
    let profile = FakeTimeouts::default()
        .scale(Profile::a2a3())
        .expect("the fake's timeouts");
    let session = FakeSession::start().expect("the fake");
    let control = Arc::clone(session.control());
    let device = session.open(profile).expect("the fake device");
    let runner = FakeRunner::new(
        Arc::clone(&control),
        profile.header(),
        1,
        RunTimes {
            device_ns: u64::try_from(KERNEL.as_nanos()).expect("ns"),
            jitter_ppm: 0,
        },
    );
    let lane = spawn(ServiceConfig::new(profile), move || {
        Ok::<_, String>((device, runner))
    })
    .expect("the lane starts");
    let launches = || control.counters().expect("the fake's counters").launches;
    let first = lane.submit(RunRequest::new()).expect("run 1 accepted");
    // Run 1's two kernels are on the device from here.
    let start = Instant::now();
    while launches() < 2 {
        assert!(start.elapsed() < GENEROUS, "run 1 was never launched");
        thread::yield_now();
    }
    let launched_at = Instant::now();
    thread::sleep(INTO_PREDECESSOR);
    let second = lane.submit(RunRequest::new()).expect("run 2 accepted");
    let first = lane.wait(first, GENEROUS).expect("run 1's outcome");
    // Read at run 1's outcome, after its completion: run 2's AICPU launch was behind run 1's
    // unfinished kernel, unless run 1 outlived its 50 ms by nothing at all.
    let queued = control.counters().expect("counters").queued_launches;
    let second = lane.wait(second, GENEROUS).expect("run 2's outcome");
    for outcome in [first, second] {
        assert!(
            matches!(outcome, Outcome::Run(r) if r.verdict == Verdict::Ok),
            "{outcome:?}"
        );
    }
    assert_eq!(
        queued, 1,
        "run 2, submitted {:?} into run 1, was launched before run 1 completed",
        INTO_PREDECESSOR
    );
    assert!(launched_at.elapsed() >= KERNEL, "run 1 ran its 50 ms");
    drop(lane);
    drop(session);
}
