//! L-2, L-3, L-4, L-6: order, depth by profile, preparation never touching a stream, and
//! per-run completion with deadlines that start when the predecessor completes.

mod common;

use common::{Fault, Harness};
use lane_core::{Profile, ProfileSpec, RunPhase, RunRequest, Verdict};

#[test]
fn a2a3_launches_the_successor_while_the_predecessor_runs_on_the_same_pair() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    assert_eq!(
        h.take(),
        [
            "PrepareRun run 1 (slot 0 gen 1)",
            "CreateStream Aicpu",
            "CreateStream Aicore",
            "LaunchRun run 1 (slot 0 gen 1) aicpu h101 aicore h102",
            "AwaitCompletion run 1 (deadline 50000000.000 us)"
        ]
    );
    let r2 = h.run();
    // Same pair, no stream created or destroyed: run 2 is queued behind run 1 on the device,
    // its AICore kernel behind run 1's boundary.
    assert_eq!(
        h.take(),
        [
            "PrepareRun run 2 (slot 1 gen 2)",
            "LaunchRun run 2 (slot 1 gen 2) aicpu h101 aicore h102 after (slot 0 gen 1)"
        ]
    );
    assert!(matches!(h.lane.phase_of(r1), Some(RunPhase::Awaiting { .. })));
    assert!(matches!(h.lane.phase_of(r2), Some(RunPhase::Launched { .. })));
    assert_eq!(h.lane.pair().created_count(), 1);

    h.complete(r1);
    assert_eq!(
        h.take(),
        [
            "ReadStatus run 1",
            "AwaitCompletion run 2 (deadline 50000000.000 us)",
            "FinaliseRun run 1 copy-back"
        ]
    );
    h.complete(r2);
    assert_eq!(h.take(), ["ReadStatus run 2", "FinaliseRun run 2 copy-back"]);
    assert_eq!(h.verdict(r1), Some(Verdict::Ok));
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
    assert_eq!(h.lane.pair().created_count(), 1);
}

#[test]
fn a5_prepares_the_successor_but_launches_it_only_after_the_predecessor_retired() {
    let mut h = Harness::depth_one();
    let r1 = h.run();
    h.take();
    let r2 = h.run();
    assert_eq!(
        h.take(),
        ["PrepareRun run 2 (slot 1 gen 2)"],
        "prepared while run 1 executes, not launched"
    );
    assert!(matches!(h.lane.phase_of(r2), Some(RunPhase::Prepared { .. })));
    h.complete(r1);
    // Run 1 retired at completion: run 2 launches on the same pair while run 1's status is read.
    assert_eq!(
        h.take(),
        [
            "ReadStatus run 1",
            "LaunchRun run 2 (slot 1 gen 2) aicpu h101 aicore h102",
            "FinaliseRun run 1 copy-back",
            "AwaitCompletion run 2 (deadline 50000000.000 us)"
        ]
    );
    h.complete(r2);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
}

#[test]
fn a_launch_names_every_run_still_on_the_pair_newest_first_and_none_once_every_completion_came_back()
 {
    // Depth three, so two runs can be in flight ahead of a launch.
    let profile =
        Profile::custom(ProfileSpec { slots: 4, launch_depth: 3, ..Profile::default_spec() })
            .unwrap();
    let mut h = Harness::new(profile);
    let r1 = h.run();
    let r2 = h.run();
    let r3 = h.run();
    let log = h.take();
    assert!(
        log.iter().any(|l| l.starts_with("LaunchRun run 3 (slot 2 gen 3)")
            && l.ends_with("after (slot 1 gen 2, slot 0 gen 1)")),
        "{log:?}"
    );
    // Run 1 completes while runs 2 and 3 execute: run 4 queues behind run 3, the latest run
    // still on the pair, then run 2 (the executor waits on the newest whose boundary it
    // recorded, L-5).
    h.complete(r1);
    let r4 = h.run();
    let log = h.take();
    assert!(
        log.iter().any(|l| l.starts_with("LaunchRun run 4 ")
            && l.ends_with("after (slot 2 gen 3, slot 1 gen 2)")),
        "{log:?}"
    );
    for run in [r2, r3, r4] {
        h.complete(run);
    }
    h.take();
    // Nothing on the pair: the next launch waits on no boundary.
    let r5 = h.run();
    let log = h.take();
    let launch = log.iter().find(|l| l.starts_with("LaunchRun run 5"));
    assert!(launch.is_some_and(|l| !l.contains("after")), "{log:?}");
    h.complete(r5);
    for run in [r1, r2, r3, r4, r5] {
        assert_eq!(h.verdict(run), Some(Verdict::Ok));
    }
}

#[test]
fn a_run_with_diagnostics_is_prepared_and_launched_alone_and_holds_back_its_successor() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.take();
    let diag = h.submit(RunRequest::new().with_diagnostics());
    assert!(h.take().is_empty(), "a diagnostics run is not even prepared while run 1 is in flight");
    h.complete(r1);
    let log = h.take();
    assert!(log.contains(&"PrepareRun run 2 (slot 1 gen 2) diagnostics".to_owned()), "{log:?}");
    assert!(
        log.contains(&"LaunchRun run 2 (slot 1 gen 2) aicpu h101 aicore h102".to_owned()),
        "{log:?}"
    );
    let r3 = h.run();
    assert!(h.take().is_empty(), "nothing after a diagnostics run starts before its outcome");
    h.complete(diag);
    assert!(common::has(&h.take(), "PrepareRun run 3"));
    h.complete(r3);
    assert_eq!(h.verdict(r3), Some(Verdict::Ok));
}

#[test]
fn without_concurrent_prepare_the_successor_is_prepared_only_after_the_predecessor_finished() {
    let profile = Profile::custom(ProfileSpec {
        concurrent_prepare: false,
        launch_depth: 1,
        ..Profile::default_spec()
    })
    .unwrap();
    let mut h = Harness::new(profile);
    let r1 = h.run();
    h.take();
    h.run();
    assert!(h.take().is_empty());
    h.complete(r1);
    assert!(common::has(&h.take(), "PrepareRun run 2"));
}

#[test]
fn any_depth_up_to_the_slot_count_works_from_the_profile_alone() {
    for (slots, depth) in [(1, 1), (3, 2), (3, 3), (4, 4), (4, 1)] {
        let profile =
            Profile::custom(ProfileSpec { slots, launch_depth: depth, ..Profile::default_spec() })
                .unwrap();
        let mut h = Harness::new(profile);
        let runs: Vec<_> = (0..slots).map(|_| h.run()).collect();
        let launched =
            runs.iter().filter(|r| h.lane.phase_of(**r).is_some_and(RunPhase::on_pair)).count();
        assert_eq!(launched, usize::from(depth), "slots {slots} depth {depth}");
        for _ in 0..3 * slots {
            h.complete_all();
        }
        for run in runs {
            assert_eq!(h.verdict(run), Some(Verdict::Ok), "slots {slots} depth {depth}");
        }
    }
}

#[test]
fn preparation_never_touches_a_stream() {
    // L-4: stream effects come only from the launch path, never from a prepare.
    let mut h = Harness::depth_one();
    let r1 = h.run();
    h.publish(7);
    h.take();
    h.complete(r1);
    let _r3 = h.run();
    let log = h.take();
    let prepare = log.iter().position(|l| l.starts_with("PrepareRun run 3")).expect("prepared");
    let destroy = log.iter().position(|l| l.starts_with("DestroyStream")).expect("replaced");
    let launch = log.iter().position(|l| l.starts_with("LaunchRun run 3")).expect("launched");
    assert!(prepare < destroy && destroy < launch, "{log:?}");
}

#[test]
fn the_successors_deadline_starts_when_its_predecessor_completes() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    let timeout = h.lane.profile().completion_timeout_ns();
    assert_eq!(h.lane.poll_deadline().map(|d| d.0), Some(timeout));
    // A long predecessor: run 1 takes 40 s, close to the 50 s bound.
    h.tick(40_000_000_000);
    h.complete(r1);
    assert_eq!(h.lane.poll_deadline().map(|d| d.0), Some(40_000_000_000 + timeout));
    h.tick(20_000_000_000);
    h.lane.handle_timeout(h.now);
    assert_eq!(h.verdict(r2), None, "run 2 did not time out 60 s after its own launch");
    h.complete(r2);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
}

#[test]
fn runs_are_prepared_launched_and_delivered_in_submission_order() {
    let mut h = Harness::a2a3();
    let mut runs = Vec::new();
    for _ in 0..20 {
        while h.lane.pending_items() < 2 {
            runs.push(h.run());
        }
        h.complete_all();
    }
    h.complete_all();
    let order = h.outcome_order();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(order, sorted);
    assert_eq!(order.len(), runs.len());
}

#[test]
fn a_prepared_successor_reported_incompatible_is_prepared_again_after_the_predecessor_and_keeps_its_place()
 {
    // simpler-lane.md §11.14 (#1588): miss → -3 → prepare1 again after finalize0, same lease
    // and place.
    let mut h = Harness::depth_one();
    h.fault(Fault::PrepareIncompatible(2, 1));
    let r1 = h.run();
    let r2 = h.run();
    assert_eq!(h.take()[5..], ["PrepareRun run 2 (slot 1 gen 2)"]);
    assert_eq!(h.lane.phase_of(r2), Some(RunPhase::Queued { incompatible: true }));
    h.complete(r1);
    let log = h.take();
    let finalise1 = log.iter().position(|l| l == "FinaliseRun run 1 copy-back").unwrap();
    let prepare2 = log.iter().position(|l| l == "PrepareRun run 2 (slot 1 gen 2)").unwrap();
    assert!(finalise1 < prepare2, "{log:?}");
    assert!(common::has(&log, "LaunchRun run 2"));
    h.complete(r2);
    assert_eq!(h.outcome_order(), [1, 2]);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
}

#[test]
fn a_runs_outcome_reports_the_overlap_its_status_read_carried() {
    use lane_core::testkit::Succeed;
    use lane_core::{DeviceTiming, Effect, Event, Lane, Outcome, Overlap, Timestamp};

    let mut lane = Lane::new(Profile::a2a3());
    let mut backend = Succeed::new();
    let run = lane.submit(Timestamp(0), RunRequest::new()).expect("open");
    while let Some(effect) = lane.poll_effect() {
        let is_read = matches!(effect, Effect::ReadStatus { .. });
        let Some(mut event) = backend.answer(effect) else {
            continue;
        };
        if let Event::StatusRead { ref mut timing, .. } = event {
            *timing = DeviceTiming {
                start_ns: 1_000,
                end_ns: 2_000,
                overlap: Overlap::Proven,
                ..Default::default()
            };
        } else {
            assert!(!is_read, "a status read answers StatusRead");
        }
        lane.handle(Timestamp(0), event).expect("answers");
    }
    let Some(Outcome::Run(outcome)) = lane.poll_outcome() else {
        panic!("an outcome");
    };
    assert_eq!((outcome.run, outcome.verdict), (run, Verdict::Ok));
    assert_eq!(outcome.timing.map(|t| t.overlap), Some(Overlap::Proven));
    assert_eq!(outcome.overlap(), Overlap::Proven, "read from its timing");
}
