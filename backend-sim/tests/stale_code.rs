//! The risk a latch's sticky code exposes, through whole lanes on the simulator: an AICPU
//! kernel whose runtime latched a fatal status leaves 507018 on the AICPU stream until the
//! stream is destroyed or the device force-reset (device-truth §1), and the code carries no
//! run identity. The lane never synchronizes a run whose own record decides it, so a later run
//! with an ok record stays `Ok` and never reads the stale code; a later run that publishes no
//! record needs the device verdict, which reads the stale 507018: that run is poisoned (the
//! conservative answer), never `Ok`.

use backend_sim::trace::Record;
use backend_sim::{FaultRule, Report, SimConfig, Workload, run};
use lane_core::status_latch::{Class, Stage};
use lane_core::{Outcome, RunId, Verdict};

fn simulate(runs: u32, faults: &[&str]) -> Report {
    let config = SimConfig {
        seed: 1,
        workload: Workload {
            runs,
            ..Workload::default()
        },
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
            Record::Call {
                name: "synchronize_stream",
                error,
                ..
            } => Some(error.clone()),
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

#[test]
fn after_a_latch_a_later_run_that_publishes_no_record_is_poisoned_by_the_stale_507018_never_ok() {
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
    // Run 4's streams are clean of its own doing, but the device verdict cannot tell run 2's
    // code from run 4's: poison, with the device's 507018, at the device verdict.
    let Verdict::Failed { cause } = verdicts[3] else {
        panic!("run 4: {}", report.outcomes[3])
    };
    assert_eq!(cause.class(), Class::Poison, "{}", report.outcomes[3]);
    assert_eq!(cause.code(), Some(507_018), "{}", report.outcomes[3]);
    assert_eq!(
        cause.stage(),
        Some(Stage::StreamSync),
        "{}",
        report.outcomes[3]
    );
    assert!(
        matches!(
            verdicts[4],
            Verdict::Poisoned {
                origin: RunId(4),
                ..
            }
        ),
        "{}",
        report.outcomes[4]
    );
    assert!(
        verdicts[5].is_ok(),
        "after the reset: {}",
        report.outcomes[5]
    );
    assert_eq!(report.resets, 1);
    // The only synchronize made was run 4's device verdict, and its AICPU stream answered
    // with the stale code first.
    let syncs = stream_syncs(&report);
    assert!(
        syncs
            .first()
            .and_then(Option::as_deref)
            .is_some_and(|e| e.contains("507018")),
        "{syncs:?}"
    );
}
