//! L-8 through the C ABI, on the fake libascendcl with a real device's semantics (event waits
//! report completion for faulted, killed and fatal-status runs; only a stream synchronize
//! materializes the code): twelve runs at depth two, the fault on run 5. A faulted or hung run
//! is never `OK`; it poisons with the device's code from the device verdict, before the host
//! deadline, and the run queued behind it is poisoned with run 5 as origin. A latch or a run
//! that publishes nothing fails only run 5: every other run gets its own `OK`, so no later run
//! of a slot inherits run 5's status. Each shape runs under each unknown of the hardware the
//! fake offers as a switch. So do two failed calls of the lane's own on run 5 (`fail_call`): a
//! record read that fails, and a boundary record that fails after the kernels (the run is
//! unfenced); with the streams clean, each poisons run 5 with that call's code, and run 6
//! behind it with run 5 as origin, while every other run gets its own `OK`.

mod common;

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::{Duration, Instant};

use common::{Kernels, Via, control};
use core::ffi::c_void;
use run_lane::*;
use run_lane_fake_ascendcl::{
    ENGINE_AICORE, ENGINE_AICPU, EnqueueAfterFault, OpTimeoutCodeOn, Outcome, Semantics,
};

/// Long enough that the documented loop submits run 6 while run 5 executes, on a loaded
/// machine: the loop submits run 6 once run 4's outcome is back, as run 5 starts. At 3 ms,
/// with two CPU hogs on a 2-CPU machine, the submitting thread sometimes waited longer, run 6
/// came after run 5's recovery and got its own `OK` (1 process in 8 to 12).
const KERNEL: Duration = Duration::from_millis(10);
/// The device op timeout: a hung kernel is killed here, far below the host wait.
const OP_TIMEOUT_MS: u64 = 200;

static AICPU_EXCEPTION: Kernels = Kernels::faulty(KERNEL, &[(5, ENGINE_AICPU, Outcome::Exception)]);
static AICORE_EXCEPTION: Kernels =
    Kernels::faulty(KERNEL, &[(5, ENGINE_AICORE, Outcome::Exception)]);
static AICORE_HANG: Kernels = Kernels::faulty(KERNEL, &[(5, ENGINE_AICORE, Outcome::Hang)]);
static AICPU_HANG: Kernels = Kernels::faulty(KERNEL, &[(5, ENGINE_AICPU, Outcome::Hang)]);
static LATCH: Kernels = Kernels::faulty(KERNEL, &[(5, ENGINE_AICPU, Outcome::Latch)]);
static SILENT: Kernels = Kernels::faulty(KERNEL, &[(5, ENGINE_AICPU, Outcome::Silent)]);

/// How run 5 must end.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Poisoned with one of these device codes (which one may depend on the switch).
    Poisoned(&'static [i32]),
    /// Failed run-only, its line containing this.
    RunOnly(&'static str),
}

#[rustfmt::skip]
const CASES: [(&str, &Kernels, Expect); 6] = [
    ("AICPU exception", &AICPU_EXCEPTION, Expect::Poisoned(&[507_018])),
    ("AICore exception", &AICORE_EXCEPTION, Expect::Poisoned(&[507_015])),
    ("AICore hang", &AICORE_HANG, Expect::Poisoned(&[507_014])),
    ("AICPU hang", &AICPU_HANG, Expect::Poisoned(&[507_017])),
    ("SCOPE_DEADLOCK latched", &LATCH, Expect::RunOnly("SCOPE_DEADLOCK")),
    ("nothing published", &SILENT, Expect::RunOnly("no result record")),
];

/// The hardware's unknowns, each as the fake offers it.
fn switches() -> [(&'static str, Option<Semantics>); 4] {
    [
        ("defaults", None),
        (
            "a later enqueue on a faulted stream fails",
            Some(Semantics::EnqueueAfterFault(EnqueueAfterFault::Refused)),
        ),
        (
            "an op-timeout kill leaves its code on the partner stream",
            Some(Semantics::OpTimeoutCodeOn(OpTimeoutCodeOn::PartnerStream)),
        ),
        (
            "an op-timeout kill leaves its code on both streams",
            Some(Semantics::OpTimeoutCodeOn(OpTimeoutCodeOn::BothStreams)),
        ),
    ]
}

/// Twelve runs through the documented loop on a fresh lane (with the [`hooked`] launches if
/// `hooked`); the outcomes in order.
fn twelve(via: Via, kernels: &'static Kernels, hooked: bool) -> Vec<RunLaneOutcome> {
    let mut config = common::fake_config(via, 0, kernels, OP_TIMEOUT_MS);
    config.completion_timeout_ms = 5_000;
    if hooked {
        config.runner.launch_aicore = Some(hooked_aicore);
        config.runner.launch_aicpu = Some(hooked_aicpu);
    }
    let lane = common::create(&config);
    let mut outcomes = common::documented_loop(lane, |submitted, _| submitted < 12);
    common::destroy(lane);
    outcomes.sort_by_key(|o| o.id);
    outcomes
}

fn on_a_devices_semantics_faulted_and_hung_runs_poison_and_a_latch_fails_only_its_run(via: Via) {
    let _serial = common::serial();
    for (switch, semantics) in switches() {
        for (case, kernels, expect) in CASES {
            let _fake = common::session_with(semantics);
            let what = format!("{case}, {switch}");
            let started = Instant::now();
            let outcomes = twelve(via, kernels, false);
            assert_eq!(outcomes.len(), 12, "{what}: one outcome per run");
            let five = &outcomes[4];
            let line = common::line(five);
            // A fatal status leaves 507018 on the AICPU stream (device-truth §1); where the
            // device then refuses later enqueues on it, a launch that reaches the stream after
            // run 5's kernel ended fails and poisons (the lane recovers): those runs get a
            // device verdict, never a borrowed OK.
            let refuses =
                semantics == Some(Semantics::EnqueueAfterFault(EnqueueAfterFault::Refused));
            let sticky_refuses = kernels.faults[0].2 == Outcome::Latch && refuses;
            // Whether run 6's launch reaches a stream before or after run 5's kernel faults or
            // latches it is a race of the host against the device. Where the device refuses
            // an enqueue on a faulted stream and the launch comes after, the lane learns of a
            // poison (run 6's refused launch) while run 5 is still in flight, and L-10 takes
            // run 5 down with it: nothing of run 5 is read on a poisoned device.
            let taken_down_by_six =
                refuses && five.verdict == RunLaneVerdict::Poisoned && five.origin == five.id + 1;
            if taken_down_by_six {
                let six = &outcomes[5];
                let six_line = common::line(six);
                let got = (six.verdict, six.failure_class);
                let poison = (RunLaneVerdict::Failed, RunLaneClass::Poison);
                assert_eq!(got, poison, "{what}: {six_line}");
                assert!(
                    six.has_code && six.code == 507_899,
                    "{what}: the refused enqueue's code: {six_line}"
                );
                assert!(line.contains("run 6"), "{what}: names its origin: {line}");
            }
            match expect {
                _ if taken_down_by_six => {}
                Expect::Poisoned(codes) => {
                    // The device's code; run 6 was launched behind it: taken down, naming it.
                    assert_run_5_and_6_poisoned(&what, &outcomes, RunLaneStage::StreamSync, |c| {
                        codes.contains(&c)
                    });
                }
                Expect::RunOnly(says) => {
                    let got = (five.verdict, five.failure_class);
                    let run_only = (RunLaneVerdict::Failed, RunLaneClass::RunOnly);
                    assert_eq!(got, run_only, "{what}: {line}");
                    assert!(line.contains(says), "{what}: {line}");
                }
            }
            if sticky_refuses {
                for outcome in &outcomes[5..11] {
                    assert!(
                        outcome.verdict == RunLaneVerdict::Ok
                            || outcome.failure_class == RunLaneClass::Poison,
                        "{what}: run {}: {}",
                        outcome.id,
                        common::line(outcome)
                    );
                }
                common::assert_ok(&format!("{what}: recovered"), &outcomes[11]);
                continue;
            }
            // Every run before it, and every run after the one it took down, has its own OK.
            for outcome in outcomes.iter().filter(|o| {
                o.id < five.id || o.id > five.id + u64::from(matches!(expect, Expect::Poisoned(_)))
            }) {
                common::assert_ok(&what, outcome);
            }
            // A hang ends at the device's op timeout, far before the 5 s host deadline.
            assert!(started.elapsed() < Duration::from_secs(4), "{what}");
        }
    }
}

fn a_run_that_publishes_nothing_on_the_stream_sync_channel_is_judged_by_its_synchronize(via: Via) {
    // A runtime without records: every run's streams are synchronized, clean ones are OK.
    let _fake = common::fresh();
    static NO_RECORDS: Kernels = Kernels::faulty(
        KERNEL,
        &[
            (1, ENGINE_AICPU, Outcome::Silent),
            (2, ENGINE_AICPU, Outcome::Silent),
            (3, ENGINE_AICPU, Outcome::Silent),
            (4, ENGINE_AICPU, Outcome::Silent),
        ],
    );
    let mut config = common::fake_config(via, 0, &NO_RECORDS, OP_TIMEOUT_MS);
    config.verdict_channel = RunLaneVerdictChannel::StreamSync as u32;
    let lane = common::create(&config);
    let outcomes = common::documented_loop(lane, |submitted, _| submitted < 4);
    common::destroy(lane);
    common::assert_all_ok("stream sync", &outcomes);
    let queued = control().counters().expect("counters").queued_launches;
    assert_eq!(queued, 0, "depth one");
}

/// Run 5's kernels in the two tests below: long enough that, however loaded the machine, run
/// 6 is submitted and launched behind it (depth two) before run 5 ends, far below the op
/// timeout.
const LONG_RUN_5: Duration = Duration::from_millis(150);
static HEALTHY: Kernels = Kernels::healthy(KERNEL);
static LONG: Kernels = Kernels::healthy(LONG_RUN_5);

/// The code the failed record read returns.
const READ_FAILED: i32 = 507_899;
/// The code the failed boundary record returns: no device returns it, so a verdict with it
/// can only be the call's.
const RECORD_FAILED: i32 = 107_000;

/// Whether run 6's AICore launch arms a failure of the next `aclrtMemcpy` on the fake.
static FAIL_NEXT_COPY_AT_RUN_6: AtomicBool = AtomicBool::new(false);

/// `common`'s launch with run 5 on [`LONG`] kernels, and (when armed) the fake's next
/// `aclrtMemcpy` failing from run 6's AICore launch on: the lane has armed run 6's slot by
/// then, and run 5 is still running, so that copy is run 5's record read, whatever the
/// threads' timing.
fn hooked(user: *mut c_void, stream: *mut c_void, engine: u32, args: &RunLaneRunArgs) -> i32 {
    let run = args.info.run;
    if run == 6 && engine == ENGINE_AICORE && FAIL_NEXT_COPY_AT_RUN_6.swap(false, SeqCst) {
        let rule = control().fail_call("aclrtMemcpy", READ_FAILED, 0, 1);
        rule.expect("a fail-call rule");
    }
    let long = std::ptr::from_ref(&LONG).cast_mut().cast();
    common::launch(if run == 5 { long } else { user }, stream, engine, args)
}

common::launch_callbacks!(hooked_aicore, hooked_aicpu, hooked);

/// Run 5 failed, poison, at `stage` with a code `code_ok` accepts; run 6, behind it,
/// poisoned by it (its outcome names run 5).
fn assert_run_5_and_6_poisoned(
    what: &str,
    outcomes: &[RunLaneOutcome],
    stage: RunLaneStage,
    code_ok: impl Fn(i32) -> bool,
) {
    let (five, six) = (&outcomes[4], &outcomes[5]);
    let line = common::line(five);
    assert_eq!(five.verdict, RunLaneVerdict::Failed, "{what}: {line}");
    assert_eq!(five.failure_class, RunLaneClass::Poison, "{what}: {line}");
    assert_eq!(five.stage, stage, "{what}: {line}");
    assert!(five.has_code && code_ok(five.code), "{what}: its code: {line}");
    let six_line = common::line(six);
    assert_eq!(six.verdict, RunLaneVerdict::Poisoned, "{what}: {six_line}");
    assert_eq!(six.origin, five.id, "{what}");
}

/// Run 5 failed, poison, with the failed call's `code` at `stage`; run 6, launched or prepared
/// behind it, poisoned by it; runs 1 to 4 (ahead of it) and 7 to 12 (after the recovery; 7, 9
/// and 11 on run 5's slot) each with its own `OK`: none inherits run 5's status.
fn assert_run_5_poisoned_alone(
    what: &str,
    outcomes: &[RunLaneOutcome],
    stage: RunLaneStage,
    code: i32,
) {
    assert_eq!(outcomes.len(), 12, "{what}: one outcome per run");
    assert_run_5_and_6_poisoned(what, outcomes, stage, |c| c == code);
    for outcome in outcomes.iter().take(4).chain(outcomes.iter().skip(6)) {
        common::assert_ok(what, outcome);
    }
}

fn a_failed_record_read_poisons_its_run_with_the_reads_code_and_no_other_run_inherits_it(via: Via) {
    let _serial = common::serial();
    for (switch, semantics) in switches() {
        let _fake = common::session_with(semantics);
        FAIL_NEXT_COPY_AT_RUN_6.store(true, SeqCst);
        let outcomes = twelve(via, &HEALTHY, true);
        let armed = !FAIL_NEXT_COPY_AT_RUN_6.load(SeqCst);
        assert!(armed, "{switch}: run 6 armed the failure");
        // Run 5's kernels published an ok record, but its read failed: nothing says OK, the
        // device verdict is clean, and the record-read-failed row poisons with the read's code.
        assert_run_5_poisoned_alone(switch, &outcomes, RunLaneStage::RecordRead, READ_FAILED);
        assert_eq!(common::force_resets(0), 1, "{switch}: one recovery");
    }
}

fn a_boundary_record_failing_after_the_kernels_poisons_its_run_with_the_calls_code_on_clean_streams(
    via: Via,
) {
    let _serial = common::serial();
    let control = control();
    for (switch, semantics) in switches() {
        let _fake = common::session_with(semantics);
        // Three records per launch, in launch order: the start event (both paths give event
        // timestamps) and core_done on the AICore stream, the boundary on the AICPU stream
        // behind both kernels. Run 5's boundary is the fifteenth.
        control
            .fail_call("aclrtRecordEvent", RECORD_FAILED, 4 * 3 + 2, 1)
            .expect("a fail-call rule");
        let outcomes = twelve(via, &HEALTHY, true);
        // Unfenced: its own events cannot decide it. The device verdict finds both streams
        // clean (its kernels even published an ok record), so it poisons with the record
        // call's code; nothing launched behind it, and run 6 is poisoned by it.
        assert_run_5_poisoned_alone(switch, &outcomes, RunLaneStage::EventRecord, RECORD_FAILED);
        assert_eq!(common::force_resets(0), 1, "{switch}: one recovery");
    }
}

common::on_each_backend!(
    on_a_devices_semantics_faulted_and_hung_runs_poison_and_a_latch_fails_only_its_run,
    a_run_that_publishes_nothing_on_the_stream_sync_channel_is_judged_by_its_synchronize,
    a_failed_record_read_poisons_its_run_with_the_reads_code_and_no_other_run_inherits_it,
    a_boundary_record_failing_after_the_kernels_poisons_its_run_with_the_calls_code_on_clean_streams,
);
