//! L-8a through the C ABI, on the fake libascendcl with a device's semantics: a stream
//! synchronize returns the first code its stream holds, whichever run left it, and waits for
//! every run queued behind. Each case runs under the fake's default semantics and under each
//! switch that could change it (a fatal status that leaves no sticky code; a device that
//! refuses a later enqueue on a faulted stream):
//!
//! - run 5 latches and run 8 publishes nothing: run 8 fails run-only with no record, every
//!   other run is `OK`, no reset, and the AICPU stream run 5 marked is replaced once drained;
//! - run 5 publishes nothing and run 6, queued behind it, latches: run 5 fails run-only with
//!   no record (naming run 6 where the latch left its code), run 6 fails run-only with its
//!   SCOPE_DEADLOCK, no reset;
//! - run 5 publishes nothing and run 6, queued behind it, raises an AICore exception: one
//!   poison with run 5 as origin, its line saying a run queued behind may share the cause, run
//!   6 poisoned by it, one recovery;
//! - a run that publishes nothing and lasts 1.7 s of a 2 s completion timeout, with a 1 s run
//!   queued behind it: the first fails run-only with no record, the second is `OK` (the
//!   synchronize's bound counts from the boundary, not from what is left of the deadline).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{Kernels, Via, control};
use core::ffi::c_void;
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICORE, ENGINE_AICPU, EnqueueAfterFault, Outcome, Semantics};

/// Kernels long enough that the documented loop launches the next run while one executes.
const KERNEL: Duration = Duration::from_millis(10);
/// Run 5's kernels where a run must be queued behind it before its verdict: long enough that,
/// however loaded the machine, run 6 is launched behind it first.
const LONG: Duration = Duration::from_millis(150);
/// The device op timeout: far above every kernel here, below every completion timeout.
const OP_TIMEOUT_MS: u64 = 1_900;

/// The hardware's unknowns that could change these cases, each as the fake offers it.
fn switches() -> [(&'static str, Option<Semantics>); 3] {
    [
        ("defaults", None),
        ("a fatal status leaves no sticky code", Some(Semantics::LatchFaultsStream(false))),
        (
            "a later enqueue on a faulted stream fails",
            Some(Semantics::EnqueueAfterFault(EnqueueAfterFault::Refused)),
        ),
    ]
}

/// The length each run's kernels get: `(run, length)`, the others [`KERNEL`].
static LENGTHS: std::sync::Mutex<Vec<(u64, Duration)>> = std::sync::Mutex::new(Vec::new());

fn lasting(user: *mut c_void, stream: *mut c_void, engine: u32, args: &RunLaneRunArgs) -> i32 {
    let length = LENGTHS
        .lock()
        .unwrap()
        .iter()
        .find(|(run, _)| *run == args.info.run)
        .map_or(KERNEL, |(_, length)| *length);
    common::launch_lasting(user, stream, engine, args, length)
}

common::launch_callbacks!(lasting_aicore, lasting_aicpu, lasting);

/// `runs` runs through the documented loop on a fresh lane on device 0, with `kernels` and
/// the given lengths; the outcomes in order.
fn run_all(
    via: Via,
    kernels: &'static Kernels,
    lengths: &[(u64, Duration)],
    runs: u64,
    completion_timeout_ms: u64,
) -> Vec<RunLaneOutcome> {
    *LENGTHS.lock().unwrap() = lengths.to_vec();
    let mut config = common::fake_config(via, 0, kernels, OP_TIMEOUT_MS);
    config.completion_timeout_ms = completion_timeout_ms;
    config.runner.launch_aicore = Some(lasting_aicore);
    config.runner.launch_aicpu = Some(lasting_aicpu);
    let lane = common::create(&config);
    let mut outcomes = common::documented_loop(lane, |submitted, _| submitted < runs);
    common::destroy(lane);
    outcomes.sort_by_key(|o| o.id);
    assert_eq!(outcomes.len() as u64, runs, "one outcome per run");
    outcomes
}

fn assert_run_only_no_record(what: &str, outcome: &RunLaneOutcome) -> String {
    let line = common::line(outcome);
    let (verdict, class) = (outcome.verdict, outcome.failure_class);
    assert_eq!((verdict, class), (RunLaneVerdict::Failed, RunLaneClass::RunOnly), "{what}: {line}");
    assert!(line.contains("no result record"), "{what}: {line}");
    line
}

fn assert_ok_but(what: &str, outcomes: &[RunLaneOutcome], but: &[u64]) {
    for outcome in outcomes.iter().filter(|o| !but.contains(&o.id)) {
        common::assert_ok(what, outcome);
    }
}

fn a_latch_then_a_run_that_publishes_nothing_fails_that_run_only_and_the_marked_stream_is_replaced(
    via: Via,
) {
    let _serial = common::serial();
    let control = control();
    static KERNELS: Kernels = Kernels::faulty(
        KERNEL,
        &[(5, ENGINE_AICPU, Outcome::Latch), (8, ENGINE_AICPU, Outcome::Silent)],
    );
    for (switch, semantics) in switches() {
        let _fake = common::session_with(semantics);
        let outcomes = run_all(via, &KERNELS, &[], 12, 5_000);
        let five = &outcomes[4];
        assert_eq!(five.failure_class, RunLaneClass::RunOnly, "{switch}");
        assert!(common::line(five).contains("SCOPE_DEADLOCK"), "{switch}");
        assert_run_only_no_record(switch, &outcomes[7]);
        assert_ok_but(switch, &outcomes, &[5, 8]);
        assert_eq!(common::force_resets(0), 0, "{switch}: no reset");
        // The pair once, then one AICPU stream in place of the one run 5's status marked.
        let created = control.counters().expect("counters").streams_created;
        assert_eq!(created, 3, "{switch}: the AICPU stream is replaced once");
    }
}

fn a_run_that_publishes_nothing_ahead_of_a_latch_fails_only_itself_and_the_latch_only_itself(
    via: Via,
) {
    let _serial = common::serial();
    static KERNELS: Kernels = Kernels::faulty(
        KERNEL,
        &[(5, ENGINE_AICPU, Outcome::Silent), (6, ENGINE_AICPU, Outcome::Latch)],
    );
    for (switch, semantics) in switches() {
        let _fake = common::session_with(semantics);
        let outcomes = run_all(via, &KERNELS, &[(5, LONG)], 10, 5_000);
        let line = assert_run_only_no_record(switch, &outcomes[4]);
        if semantics != Some(Semantics::LatchFaultsStream(false)) {
            // Run 5's synchronize waited for run 6 and returned its sticky 507018.
            assert!(line.contains("run 6's"), "{switch}: {line}");
        }
        let six = &outcomes[5];
        assert_eq!(six.failure_class, RunLaneClass::RunOnly, "{switch}");
        assert!(common::line(six).contains("SCOPE_DEADLOCK"), "{switch}");
        assert_ok_but(switch, &outcomes, &[5, 6]);
        assert_eq!(common::force_resets(0), 0, "{switch}: no reset");
    }
}

fn a_run_that_publishes_nothing_ahead_of_an_aicore_exception_is_the_poisons_origin_and_says_so(
    via: Via,
) {
    let _serial = common::serial();
    static KERNELS: Kernels = Kernels::faulty(
        KERNEL,
        &[(5, ENGINE_AICPU, Outcome::Silent), (6, ENGINE_AICORE, Outcome::Exception)],
    );
    for (switch, semantics) in switches() {
        let _fake = common::session_with(semantics);
        let outcomes = run_all(via, &KERNELS, &[(5, LONG)], 10, 5_000);
        let (five, six) = (&outcomes[4], &outcomes[5]);
        let line = common::line(five);
        assert_eq!(five.verdict, RunLaneVerdict::Failed, "{switch}: {line}");
        assert_eq!(five.failure_class, RunLaneClass::Poison, "{switch}: {line}");
        assert_eq!(five.code, 507_015, "{switch}: {line}");
        assert_eq!(five.stage, RunLaneStage::StreamSync, "{switch}: {line}");
        let says = line.contains("queued behind this one, which may share the cause");
        assert!(says, "{switch}: {line}");
        assert_eq!(six.verdict, RunLaneVerdict::Poisoned, "{switch}");
        assert_eq!(six.origin, 5, "{switch}");
        assert_ok_but(switch, &outcomes, &[5, 6]);
        assert_eq!(common::force_resets(0), 1, "{switch}: one recovery");
    }
}

fn a_long_successor_does_not_time_out_the_verdict_of_the_run_ahead_of_it(via: Via) {
    // Run 1 publishes nothing and lasts 1.7 s of a 2 s completion timeout; run 2, queued
    // behind it, lasts 1 s. Run 1's synchronize waits for run 2 too: bounded from run 1's
    // boundary (2 s from 1.7 s), not by the 0.3 s left of its deadline.
    static KERNELS: Kernels = Kernels::faulty(KERNEL, &[(1, ENGINE_AICPU, Outcome::Silent)]);
    let _fake = common::fresh();
    let started = Instant::now();
    let outcomes = run_all(
        via,
        &KERNELS,
        &[(1, Duration::from_millis(1_700)), (2, Duration::from_millis(1_000))],
        2,
        2_000,
    );
    assert_run_only_no_record("a long successor", &outcomes[0]);
    common::assert_ok("the long successor", &outcomes[1]);
    assert_eq!(common::force_resets(0), 0, "no reset");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Whether run 5's AICore launch arms a failure of the fake's next `aclrtRecordEvent`.
static FAIL_CORE_DONE_OF_RUN_5: AtomicBool = AtomicBool::new(false);

/// The code run 5's `core_done` record fails with: no device returns it, so a verdict with it
/// can only be the call's.
const CORE_DONE_FAILED: i32 = 107_000;

/// [`lasting`], arming the failure at run 5's AICore launch.
fn arming(user: *mut c_void, stream: *mut c_void, engine: u32, args: &RunLaneRunArgs) -> i32 {
    let code = lasting(user, stream, engine, args);
    let armed = engine == ENGINE_AICORE && args.info.run == 5;
    if armed && FAIL_CORE_DONE_OF_RUN_5.swap(false, Ordering::SeqCst) {
        // The launch's next record is its AICore kernel's own event.
        let rule = control().fail_call("aclrtRecordEvent", CORE_DONE_FAILED, 0, 1);
        rule.expect("a fail-call rule");
    }
    code
}

common::launch_callbacks!(arming_aicore, arming_aicpu, arming);

/// L-5: a failure between the AICore kernel and the AICPU kernel (the AICore event's record
/// included) orphans the AICore kernel: the run is poisoned at once with the failed call's own
/// code, not at its completion deadline with 507046.
fn a_failed_core_done_record_poisons_its_run_at_once_with_the_records_own_code(via: Via) {
    static KERNELS: Kernels = Kernels::healthy(KERNEL);
    let _fake = common::fresh();
    LENGTHS.lock().unwrap().clear();
    let mut config = common::fake_config(via, 0, &KERNELS, OP_TIMEOUT_MS);
    // The default completion timeout: a run left to it would take 50 s.
    config.completion_timeout_ms = 50_000;
    config.runner.launch_aicore = Some(arming_aicore);
    config.runner.launch_aicpu = Some(arming_aicpu);
    FAIL_CORE_DONE_OF_RUN_5.store(true, Ordering::SeqCst);
    let started = Instant::now();
    let lane = common::create(&config);
    let mut outcomes = common::documented_loop(lane, |submitted, _| submitted < 8);
    common::destroy(lane);
    outcomes.sort_by_key(|o| o.id);
    let armed = !FAIL_CORE_DONE_OF_RUN_5.load(Ordering::SeqCst);
    assert!(armed, "run 5 armed the failure");
    let five = &outcomes[4];
    let line = common::line(five);
    assert_eq!(five.verdict, RunLaneVerdict::Failed, "{line}");
    assert_eq!(five.failure_class, RunLaneClass::Poison, "{line}");
    let code = five.code;
    assert_eq!(code, CORE_DONE_FAILED, "its own code, not 507046: {line}");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(20), "known at once, not at the 50 s deadline: {took:?}");
    assert_eq!(common::force_resets(0), 1, "one recovery");
    // Runs still in flight or prepared when it failed go down with it (L-10); the rest are
    // Ok, those after the recovery on fresh streams.
    for outcome in &outcomes {
        let taken_down = outcome.verdict == RunLaneVerdict::Poisoned && outcome.origin == five.id;
        assert!(
            outcome.id == five.id
                || outcome.verdict == RunLaneVerdict::Ok
                || (taken_down && (outcome.id == 4 || outcome.id == 6)),
            "run {}: {}",
            outcome.id,
            common::line(outcome)
        );
    }
    assert_eq!(outcomes[7].verdict, RunLaneVerdict::Ok, "recovered");
}

common::on_each_backend!(
    a_latch_then_a_run_that_publishes_nothing_fails_that_run_only_and_the_marked_stream_is_replaced,
    a_run_that_publishes_nothing_ahead_of_a_latch_fails_only_itself_and_the_latch_only_itself,
    a_run_that_publishes_nothing_ahead_of_an_aicore_exception_is_the_poisons_origin_and_says_so,
    a_long_successor_does_not_time_out_the_verdict_of_the_run_ahead_of_it,
    a_failed_core_done_record_poisons_its_run_at_once_with_the_records_own_code,
);
