//! A latch's sticky code, through whole lanes on the simulator: an AICPU kernel whose runtime
//! latched a fatal status leaves 507018 on the AICPU stream until the stream is destroyed or
//! the device force-reset (device-truth §1), and the code carries no run identity. The lane
//! never synchronizes a run whose own record decides it, so a later run with an ok record stays
//! `Ok` and never reads the stale code. The latching run's error record marks the AICPU stream
//! (L-8a): a run queued on it that publishes no record reads the stale 507018, which the mark
//! charges to the latching run, so it fails run-only; the stream is replaced once drained, so
//! later runs synchronize a clean stream.

use backend_sim::trace::Record;
use backend_sim::{FaultRule, Report, SimConfig, Workload, run};
use lane_core::status_latch::{AclCode, Class, Failure};
use lane_core::{Outcome, Verdict};

fn simulate(runs: u32, faults: &[&str]) -> Report {
    let config = SimConfig {
        seed: 1,
        workload: Workload { runs, ..Workload::default() },
        faults: faults
            .iter()
            .map(|f| FaultRule::parse(f).unwrap_or_else(|e| panic!("{f}: {e}")))
            .collect(),
        trace: true,
        ..SimConfig::default()
    };
    run(&config, &mut |_, _| {}).unwrap_or_else(|e| panic!("{e}"))
}

fn verdicts(report: &Report) -> Vec<Verdict> {
    report
        .outcomes
        .iter()
        .map(|o| match o {
            Outcome::Run(r) => r.verdict,
            Outcome::Publication(p) => panic!("no publication here: {p:?}"),
        })
        .collect()
}

/// Every `synchronize_stream` call: the code it returned, if any.
fn stream_syncs(report: &Report) -> Vec<Option<String>> {
    report
        .trace
        .records()
        .iter()
        .filter_map(|r| match r {
            Record::Call { name: "synchronize_stream", error, .. } => Some(error.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn after_a_latch_a_later_run_with_an_ok_record_stays_ok_and_no_stream_is_synchronized() {
    let report = simulate(5, &["latch=SCOPE_DEADLOCK@run:2"]);
    let verdicts = verdicts(&report);
    assert_eq!(verdicts.len(), 5);
    let cause = verdicts[1].cause().expect("run 2 failed");
    assert_eq!(cause.class(), Class::RunOnly, "{}", report.outcomes[1]);
    for (at, verdict) in verdicts.iter().enumerate().filter(|(at, _)| *at != 1) {
        assert!(verdict.is_ok(), "{}", report.outcomes[at]);
    }
    // The record decided every run: nothing read the 507018 run 2 left on the AICPU stream.
    assert_eq!(stream_syncs(&report), Vec::<Option<String>>::new());
    assert_eq!(report.resets, 0);
}

/// How many streams the lane created.
fn streams_created(report: &Report) -> usize {
    report
        .trace
        .records()
        .iter()
        .filter(|r| matches!(r, Record::Call { name: "create_stream", error: None, .. }))
        .count()
}

#[test]
fn after_a_latch_the_aicpu_stream_is_replaced_once_drained_and_a_later_unpublished_run_fails_only_itself()
 {
    let report = simulate(6, &["latch=SCOPE_DEADLOCK@run:2", "silent@run:4"]);
    let verdicts = verdicts(&report);
    assert_eq!(verdicts.len(), 6);
    assert_eq!(
        verdicts[1].cause().map(|c| c.class()),
        Some(Class::RunOnly),
        "{}",
        report.outcomes[1]
    );
    assert!(verdicts[2].is_ok(), "{}", report.outcomes[2]);
    // Run 4 runs on a fresh AICPU stream (run 2's marked one was replaced once run 3, queued
    // on it, retired): its synchronize is clean, and it fails run-only with no record.
    let Verdict::Failed { cause } = verdicts[3] else { panic!("run 4: {}", report.outcomes[3]) };
    assert_eq!(cause.failure, Failure::NoRecord, "{}", report.outcomes[3]);
    for at in [4, 5] {
        assert!(verdicts[at].is_ok(), "{}", report.outcomes[at]);
    }
    assert_eq!(report.resets, 0);
    assert_eq!(
        streams_created(&report),
        3,
        "the pair, then one AICPU stream in place of the marked one"
    );
    assert!(
        stream_syncs(&report).iter().all(Option::is_none),
        "no synchronize met the sticky code: {:?}",
        stream_syncs(&report)
    );
}

#[test]
fn a_silent_run_queued_on_the_marked_stream_fails_run_only_naming_the_run_that_left_the_code() {
    let report = simulate(5, &["latch=SCOPE_DEADLOCK@run:2", "silent@run:3"]);
    let verdicts = verdicts(&report);
    assert_eq!(verdicts.len(), 5);
    // Run 3's synchronize returned run 2's stale 507018 on the AICPU stream: the mark says
    // whose it is (L-8a).
    let Verdict::Failed { cause } = verdicts[2] else { panic!("run 3: {}", report.outcomes[2]) };
    assert_eq!(
        cause.failure,
        Failure::NoRecordBesideCode { code: AclCode::RtAicpuException, left_by: 2 },
        "{}",
        report.outcomes[2]
    );
    assert_eq!(cause.class(), Class::RunOnly);
    assert!(
        stream_syncs(&report)
            .first()
            .and_then(Option::as_deref)
            .is_some_and(|e| e.contains("507018")),
        "{:?}",
        stream_syncs(&report)
    );
    for at in [3, 4] {
        assert!(verdicts[at].is_ok(), "{}", report.outcomes[at]);
    }
    assert_eq!(report.resets, 0);
}

/// The swarm's check of every outcome (L-8a: no verdict names a run its own record does not
/// convict) catches a lane that charges a code to the wrong run: driven on a device where run
/// 1 latched (an error record) and run 2 published ok, a "no result record" that names run 2
/// as the run that left the code, or a record error for run 2, is a device invariant broken;
/// the true attribution is not.
#[test]
fn the_swarms_outcome_check_refuses_a_verdict_its_runs_own_records_do_not_convict() {
    use backend_sim::workload::{Harness, SimHarness};
    use backend_sim::{SimDevice, SimObserver, SimRunner};
    use lane_core::status_latch::{HeaderLayout, RecordSource, RuntimeCode};
    use lane_core::{Cause, Profile, RunOutcome};

    let mut device = SimDevice::new(
        backend_sim::costs::Costs::default(),
        HeaderLayout::TensormapAndRingbuffer,
        1,
        backend_sim::RunTimes { device_ns: 40_000, jitter_ppm: 0 },
    );
    device.install(FaultRule::parse("latch=SCOPE_DEADLOCK@run:1").unwrap());
    let observer = SimObserver::new(device.journal());
    let mut driver =
        lane_driver::Driver::new(Profile::a2a3(), device, SimRunner).with_observer(observer);
    for _ in 0..2 {
        driver.submit(lane_core::RunRequest::new()).unwrap().unwrap();
    }
    driver.run_until_idle().unwrap();
    let mut harness = SimHarness::new(0);
    let failed = |run: u64, failure: Failure| {
        Outcome::Run(RunOutcome {
            run: lane_core::RunId(run),
            tag: None,
            verdict: Verdict::Failed { cause: Cause::of(failure) },
            timing: None,
            key: None,
            declines: 0,
        })
    };
    let beside = |left_by| Failure::NoRecordBesideCode { code: AclCode::RtAicpuException, left_by };
    // Run 3 published nothing: it may fail for no record, naming run 1 (which latched).
    assert!(harness.outcome_failure(&mut driver, &failed(3, beside(1))).is_none());
    let wrong = harness.outcome_failure(&mut driver, &failed(3, beside(2)));
    assert!(
        wrong.is_some_and(|f| f.to_string().contains("published no error record")),
        "run 2 published ok: it left no code"
    );
    let record = Failure::Record { code: RuntimeCode::ScopeDeadlock, source: RecordSource::Header };
    assert!(
        harness.outcome_failure(&mut driver, &failed(2, record)).is_some(),
        "run 2's own record is ok"
    );
}
