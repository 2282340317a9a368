//! L-8a through `lane_driver::Driver` on `AclDevice` over the fake libascendcl: a stream
//! synchronize returns the first code its stream holds, whichever run left it, and waits for
//! every run queued behind, so the lane charges a code by evidence. Each case runs under the
//! fake's default semantics and each switch that could change it (a fatal status that leaves
//! no sticky code; a device that refuses a later enqueue on a faulted stream). The same cases
//! run through the C ABI in lane-capi's `tests/attribution.rs`.

mod common;

use std::time::{Duration, Instant};

use lane_core::status_latch::{AclCode, Class, Failure, RuntimeCode, Stage};
use lane_driver::Report;
use run_lane_fake_ascendcl::{
    ENGINE_AICORE, ENGINE_AICPU, EnqueueAfterFault, Outcome as Kernel, Semantics,
};

use common::kernels::{
    FakeDriver, assert_poisoned_by, driver, failed, run_lane, verdict, with_spec,
};

/// Run 5's kernels where a run must be queued behind it before its verdict.
const LONG: Duration = Duration::from_millis(150);

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

/// A depth-two lane on the fake with `completion` as its host completion timeout.
fn lane(fake: &common::Fake, completion: Duration) -> FakeDriver {
    let config = with_spec(fake, fake.config(), |s| {
        s.device_op_timeout_ns = 1_900_000_000;
        s.completion_timeout_ns = u64::try_from(completion.as_nanos()).unwrap_or(u64::MAX);
    });
    driver(fake, config, Vec::new())
}

/// `runs` runs with these kernel endings and lengths, under each switch: every report, with
/// the fake held for checks after.
fn each_switch(
    faults: &[(u64, u32, Kernel)],
    lengths: &[(u64, Duration)],
    runs: usize,
    check: impl Fn(&str, Option<Semantics>, &[Report], &common::Fake),
) {
    for (switch, semantics) in switches() {
        let fake = common::fake();
        if let Some(semantics) = semantics {
            fake.control.set_semantics(semantics).expect("a known switch");
        }
        let mut d = lane(&fake, Duration::from_secs(5));
        d.runner_mut().faults = faults.to_vec();
        d.runner_mut().lengths = lengths.to_vec();
        let reports = run_lane(&mut d, runs);
        assert_eq!(reports.len(), runs, "{switch}");
        check(switch, semantics, &reports, &fake);
        fake.assert_balanced();
    }
}

fn assert_ok_but(switch: &str, reports: &[Report], but: &[u64]) {
    for (at, report) in reports.iter().enumerate() {
        if !but.contains(&(at as u64 + 1)) {
            assert!(verdict(report).is_ok(), "{switch}: {report}");
        }
    }
}

#[test]
fn a_latch_then_a_run_that_publishes_nothing_fails_that_run_only_and_the_marked_stream_is_replaced()
{
    each_switch(
        &[(5, ENGINE_AICPU, Kernel::Latch), (8, ENGINE_AICPU, Kernel::Silent)],
        &[],
        12,
        |switch, _, reports, fake| {
            assert!(
                matches!(
                    failed(&reports[4]).failure,
                    Failure::Record { code: RuntimeCode::ScopeDeadlock, .. }
                ),
                "{switch}: {}",
                reports[4]
            );
            assert!(
                matches!(
                    failed(&reports[7]).failure,
                    Failure::NoRecord | Failure::NoRecordBesideCode { .. }
                ),
                "{switch}: {}",
                reports[7]
            );
            assert_ok_but(switch, reports, &[5, 8]);
            let c = fake.counters();
            assert_eq!(c.force_resets, 0, "{switch}: no reset");
            assert_eq!(
                c.streams_created, 3,
                "{switch}: the pair, then the AICPU stream replaced once"
            );
        },
    );
}

#[test]
fn a_run_that_publishes_nothing_ahead_of_a_latch_fails_only_itself_and_the_latch_only_itself() {
    each_switch(
        &[(5, ENGINE_AICPU, Kernel::Silent), (6, ENGINE_AICPU, Kernel::Latch)],
        &[(5, LONG)],
        10,
        |switch, semantics, reports, fake| {
            let five = failed(&reports[4]).failure;
            match semantics {
                // No sticky code: run 5's synchronize is clean.
                Some(Semantics::LatchFaultsStream(false)) => {
                    assert_eq!(five, Failure::NoRecord, "{switch}: {}", reports[4]);
                }
                _ => assert_eq!(
                    five,
                    Failure::NoRecordBesideCode { code: AclCode::RtAicpuException, left_by: 6 },
                    "{switch}: {}",
                    reports[4]
                ),
            }
            assert!(
                matches!(
                    failed(&reports[5]).failure,
                    Failure::Record { code: RuntimeCode::ScopeDeadlock, .. }
                ),
                "{switch}: {}",
                reports[5]
            );
            assert_ok_but(switch, reports, &[5, 6]);
            assert_eq!(fake.counters().force_resets, 0, "{switch}: no reset");
        },
    );
}

#[test]
fn a_run_that_publishes_nothing_ahead_of_an_aicore_exception_is_the_poisons_origin_and_says_so() {
    each_switch(
        &[(5, ENGINE_AICPU, Kernel::Silent), (6, ENGINE_AICORE, Kernel::Exception)],
        &[(5, LONG)],
        10,
        |switch, _, reports, fake| {
            let cause = failed(&reports[4]);
            assert_eq!(
                cause.failure,
                Failure::Covering { code: AclCode::RtAicoreException, behind: 1 },
                "{switch}: {}",
                reports[4]
            );
            assert_eq!(cause.stage(), Some(Stage::StreamSync));
            assert_eq!(cause.class(), Class::Poison);
            assert!(
                reports[4].to_string().contains("which may share the cause"),
                "{switch}: {}",
                reports[4]
            );
            assert_poisoned_by(switch, reports, 6, 5);
            assert_ok_but(switch, reports, &[5, 6]);
            assert_eq!(fake.counters().force_resets, 1, "{switch}: one recovery");
        },
    );
}

#[test]
fn a_long_successor_does_not_time_out_the_verdict_of_the_run_ahead_of_it() {
    // Run 1 publishes nothing and lasts 1.7 s of a 2 s completion timeout; run 2, queued
    // behind it, lasts 1 s: run 1's synchronize waits for run 2 within a bound counted from
    // run 1's boundary.
    let fake = common::fake();
    let mut d = lane(&fake, Duration::from_secs(2));
    d.runner_mut().faults = vec![(1, ENGINE_AICPU, Kernel::Silent)];
    d.runner_mut().lengths =
        vec![(1, Duration::from_millis(1_700)), (2, Duration::from_millis(1_000))];
    let started = Instant::now();
    let reports = run_lane(&mut d, 2);
    assert_eq!(failed(&reports[0]).failure, Failure::NoRecord, "{}", reports[0]);
    assert!(verdict(&reports[1]).is_ok(), "{}", reports[1]);
    assert_eq!(fake.counters().force_resets, 0);
    assert!(started.elapsed() < Duration::from_secs(10));
    fake.assert_balanced();
}

#[test]
fn a_failed_core_done_record_poisons_its_run_at_once_with_the_records_own_code() {
    // L-5: the AICore kernel's own event fails to record: it has no AICPU scheduler, so the
    // run is poisoned at once with the record's code, not at its 50 s deadline with 507046.
    let fake = common::fake();
    let mut d = lane(&fake, Duration::from_secs(50));
    d.runner_mut().fail_core_done = Some((5, 107_000));
    let started = Instant::now();
    let reports = run_lane(&mut d, 8);
    let cause = failed(&reports[4]);
    assert_eq!(cause.code(), Some(107_000), "{}", reports[4]);
    assert_eq!(cause.class(), Class::Poison, "{}", reports[4]);
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    assert_eq!(fake.counters().force_resets, 1);
    assert!(verdict(&reports[7]).is_ok(), "recovered: {}", reports[7]);
    fake.assert_balanced();
}
