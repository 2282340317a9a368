//! lane-service on the fake libascendcl, the path the C ABI runs, with the completion
//! waiter making every device wait. L-18: a run submitted while its predecessor's kernels
//! execute is launched onto the pair before the predecessor completes, because the lane
//! thread never sits in the predecessor's wait; the fake records it (an AICPU launch behind
//! an unfinished kernel is a queued launch, `FakeCounters::queued_launches`). And nothing else
//! weakens: a hung kernel still ends at the device op timeout with its device code, and a
//! poison still recovers the device, with the waiter bound again after the force reset.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use backend_sim::{FaultRule, RunTimes};
use lane_conformance::{FakeRunner, FakeSession, FakeTimeouts};
use lane_core::{Outcome, Profile, RunRequest, SubmitError, Verdict};
use lane_service::{LaneHandle, ServiceConfig, ServiceError, spawn};

const KERNEL: Duration = Duration::from_millis(50);
const INTO_PREDECESSOR: Duration = Duration::from_millis(10);
const GENEROUS: Duration = Duration::from_secs(30);

#[test]
fn a_run_submitted_10_ms_into_its_50_ms_predecessor_is_launched_before_the_predecessor_completes() {
    let profile = FakeTimeouts::default().scale(Profile::a2a3()).expect("the fake's timeouts");
    let session = FakeSession::start().expect("the fake");
    let control = Arc::clone(session.control());
    let device = session.open(profile).expect("the fake device");
    let runner = FakeRunner::new(
        Arc::clone(&control),
        profile.header(),
        1,
        RunTimes { device_ns: u64::try_from(KERNEL.as_nanos()).expect("ns"), jitter_ppm: 0 },
    );
    let lane = spawn(ServiceConfig::new(profile), move || Ok::<_, String>((device, runner)))
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
        assert!(matches!(outcome, Outcome::Run(r) if r.verdict == Verdict::Ok), "{outcome:?}");
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

/// A lane on the fake through the service, faulted by `rules` (the simulator's `--fault`
/// syntax), with runs of `device_ns`.
fn lane_on_fake(session: &FakeSession, rules: &[&str], device_ns: u64) -> LaneHandle {
    lane_on_fake_with(session, rules, device_ns, FakeTimeouts::default())
}

/// As [`lane_on_fake`], with these timeouts.
fn lane_on_fake_with(
    session: &FakeSession,
    rules: &[&str],
    device_ns: u64,
    timeouts: FakeTimeouts,
) -> LaneHandle {
    let rules: Vec<FaultRule> =
        rules.iter().map(|r| FaultRule::parse(r).expect("a fault rule")).collect();
    let profile = timeouts.scale(Profile::a2a3()).expect("the fake's timeouts");
    let device = session.open(profile).expect("the fake device");
    let runner = FakeRunner::new(
        Arc::clone(session.control()),
        profile.header(),
        1,
        RunTimes { device_ns, jitter_ppm: 0 },
    )
    .with_faults(&rules)
    .expect("the fake takes the rules");
    spawn(ServiceConfig::new(profile), move || Ok::<_, String>((device, runner)))
        .expect("the lane starts")
}

/// Submits `runs` runs one after another, each once the previous has its outcome (again, a
/// moment later, while the lane recovers after a poison), and takes their outcome lines.
fn run_in_turn(lane: &LaneHandle, runs: u64) -> Vec<String> {
    let mut lines = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let run = loop {
            match lane.submit(RunRequest::new()) {
                Ok(run) => break run,
                Err(ServiceError::Submit(SubmitError::Poisoned { .. }))
                    if start.elapsed() < GENEROUS =>
                {
                    thread::sleep(Duration::from_millis(1));
                }
                Err(other) => panic!("refused: {other}"),
            }
        };
        lines.push(lane.wait(run, GENEROUS).expect("its outcome").to_string());
    }
    lines
}

#[test]
fn a_hung_kernel_through_the_service_ends_at_the_device_op_timeout_with_its_code_not_the_host_deadline()
 {
    let session = FakeSession::start().expect("the fake");
    let lane = lane_on_fake(&session, &["hang@run:1"], 100_000);
    let started = Instant::now();
    let lines = run_in_turn(&lane, 2);
    // The op timeout (1 s on the fake) fires well before the 10 s host deadline.
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    assert!(
        lines[0].contains("ACL_ERROR_RT_AICORE_TIMEOUT") && !lines[0].contains("HOST_WAIT"),
        "{lines:?}"
    );
    assert!(lines[1].ends_with(": ok"), "the device recovered: {lines:?}");
    let counters = session.control().counters().expect("counters");
    assert_eq!(counters.force_resets, 1, "{counters:?}");
}

#[test]
fn a_poison_through_the_service_recovers_and_the_waiter_binds_again_after_the_force_reset() {
    let session = FakeSession::start().expect("the fake");
    let lane = lane_on_fake(&session, &["exception=507015@run:2"], 100_000);
    let lines = run_in_turn(&lane, 5);
    assert!(lines[0].ends_with(": ok"), "{lines:?}");
    assert!(lines[1].contains("ACL_ERROR_RT_AICORE_EXCEPTION"), "{lines:?}");
    // A waiter still bound to the context before the reset would fail every later wait with
    // 107002 (context null) and poison again.
    for line in &lines[2..] {
        assert!(line.ends_with(": ok"), "{lines:?}");
    }
    let counters = session.control().counters().expect("counters");
    assert_eq!(counters.force_resets, 1, "one recovery: {counters:?}");
    drop(lane);
    let counters = session.control().counters().expect("counters");
    assert!(counters.balanced(), "nothing leaked: {counters:?}");
}

#[test]
fn no_force_reset_is_made_while_the_waiter_is_inside_a_wait_that_outlives_the_drain() {
    // L-20. Run 1's AICore kernel hangs to the 2 s op timeout, the waiter inside its wait;
    // run 2's AICPU launch is refused meanwhile, which poisons. The drain (50 ms) queues
    // behind the waiter's wait and the lane thread answers it itself at its bound, long
    // before the wait returns: the force reset waits for the waiter to leave its call. The
    // session's drop fails this test if the fake counted a reset under a wait.
    let session = FakeSession::start().expect("the fake");
    let rules = ["hang@run:1", "aicpu-launch=107000@run:2"];
    let timeouts = FakeTimeouts {
        completion_ns: 10_000_000_000,
        device_op_ns: 2_000_000_000,
        drain_ns: 50_000_000,
    };
    let lane = lane_on_fake_with(&session, &rules, 1_000_000, timeouts);
    let first = lane.submit(RunRequest::new()).expect("run 1 accepted");
    thread::sleep(Duration::from_millis(20));
    let second = lane.submit(RunRequest::new()).expect("run 2 accepted");
    for run in [first, second] {
        let outcome = lane.wait(run, GENEROUS).expect("an outcome");
        assert!(matches!(outcome, Outcome::Run(r) if r.verdict != Verdict::Ok), "{outcome:?}");
    }
    let lines = run_in_turn(&lane, 1);
    assert!(lines[0].ends_with(": ok"), "the device recovered: {lines:?}");
    assert_eq!(session.control().counters().expect("counters").force_resets, 1);
    drop(lane);
    drop(session);
}
