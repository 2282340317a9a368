//! The scenarios of simpler-lane.md §11 that apply to this design, one test each, with the
//! scenario named in a comment. (Scenarios about host threads, ELF registration, SDMA and
//! stream syncs belong to the backends: the lane has no threads and never syncs a stream.)

mod common;

use common::{Fault, Harness};
use lane_core::status_latch::{Class, Failure, RuntimeCode, Stage};
use lane_core::stream_pair::Role;
use lane_core::{
    FinaliseFailure, LaneState, LaunchStep, Profile, RunPhase, RunRequest, SubmitError, Verdict,
};

#[test]
fn s1_a_prepared_successor_that_fails_after_preparation_cannot_retire_the_live_stream() {
    // §11.6 (#1852 S1): pred P launched → successor S prepared → S fails after preparation
    // (here: the lane closes and cancels it) → P's stream is untouched.
    let mut h = Harness::depth_one();
    let p = h.run();
    let s = h.run();
    assert!(matches!(h.lane.phase_of(s), Some(RunPhase::Prepared { .. })));
    h.take();
    h.close();
    assert_eq!(h.take(), ["FinaliseRun run 2"]);
    assert_eq!(h.lane.pair().submissions(), [lane_core::stream_pair::Owner(p.0)]);
    assert!(!h.lane.pair().is_replacement_pending());
    h.complete(p);
    assert_eq!(h.verdict(p), Some(Verdict::Ok));
}

#[test]
fn s1_a_successor_whose_launch_reaches_no_stream_leaves_the_predecessors_stream_alone() {
    // §11.6 variant on a2a3: the successor's AICore launch is refused (NotStarted) while its
    // predecessor runs on the pair; only its own submission leaves, nothing is replaced.
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchFails(2, LaunchStep::Aicore, 107_000));
    let p = h.run();
    h.run();
    assert_eq!(h.lane.pair().submissions(), [lane_core::stream_pair::Owner(p.0)]);
    assert!(!h.lane.pair().is_replacement_pending());
    h.complete(p);
    assert_eq!(h.lane.pair().created_count(), 1);
}

#[test]
fn s2_publication_while_a_run_is_in_flight_creates_no_stream_at_prepare_and_replaces_at_the_next_launch()
 {
    // §11.7 (#1852 S2): P launched → publication → S. S's prepare creates no stream; the
    // replacement happens at S's launch, after P retired.
    let mut h = Harness::a2a3();
    let p = h.run();
    h.publish(1);
    let s = h.run();
    h.take();
    h.complete(p);
    let log = h.take();
    let prepare = log.iter().position(|l| l.starts_with("PrepareRun run 3")).unwrap();
    let destroy = log.iter().position(|l| l.starts_with("DestroyStream Aicore")).unwrap();
    assert!(prepare < destroy, "{log:?}");
    assert!(
        !log[..prepare].iter().any(|l| l.contains("Stream")),
        "no stream effect before or by the prepare: {log:?}"
    );
    h.complete(s);
    assert_eq!(h.verdict(s), Some(Verdict::Ok));
}

#[test]
fn s3_a_failed_replacement_destroy_keeps_the_stale_handle_and_the_next_launch_destroys_it_again() {
    // §11.8 (#1852 S3) and finding A: a stream that failed to be destroyed is never reused.
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.complete(r1);
    h.publish(1);
    // A non-device code (a device-fault code here would poison, as the policy says).
    h.fault(Fault::DestroyFails(Role::Aicore, 107_000, 1));
    h.take();
    let r3 = h.run();
    let cause = match h.verdict(r3) {
        Some(Verdict::Failed { cause }) => cause,
        other => panic!("{other:?}"),
    };
    assert!(matches!(cause.failure, Failure::Acl { stage: Stage::StreamDestroy, .. }));
    assert!(h.lane.pair().is_replacement_pending(), "the survivor stays stale: {}", h.lane.pair());
    h.take();
    let r4 = h.run();
    let log = h.take();
    assert!(log.contains(&"DestroyStream Aicore h102".to_owned()), "{log:?}");
    h.complete(r4);
    assert_eq!(h.verdict(r4), Some(Verdict::Ok));
}

#[test]
fn a_successful_drain_on_a_poisoned_card_never_skips_the_force_reset() {
    // §11.4 (#1005/#1124): a bounded drain succeeding on a poisoned card left the force reset
    // untriggered. The lane always resets and probes after a poison.
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.take();
    h.fail_completion(r1, 507_046);
    assert_eq!(
        h.take(),
        [
            "Hook BeforeReset origin run 1 (ACL_ERROR_RT_STREAM_SYNC_TIMEOUT)",
            "DrainDevice attempt 1 (timeout 10000 ms)",
            "ForceReset attempt 1",
            "Probe attempt 1",
            "Hook AfterReset recovered"
        ]
    );
}

#[test]
fn two_diagnostics_runs_in_a_row_each_release_their_slot() {
    // §11.10 (#1714): prepare with diagnostics then finalize, twice; a leaked collector made
    // the second prepare fail. Each diagnostics run is finalised and the lane stays usable.
    let mut h = Harness::a2a3();
    for _ in 0..2 {
        let run = h.submit(RunRequest::new().with_diagnostics());
        h.complete(run);
        assert_eq!(h.verdict(run), Some(Verdict::Ok));
    }
    assert!(h.lane.is_idle());
}

#[test]
fn the_depth_one_and_diagnostics_arms_never_overlap_launches() {
    // §11.16 (#1857): the negative controls. With depth one, or with diagnostics, a successor
    // is never launched while its predecessor is on the pair.
    for (profile, diagnostics) in [(Profile::depth_one(), false), (Profile::a2a3(), true)] {
        let mut h = Harness::new(profile);
        let request =
            if diagnostics { RunRequest::new().with_diagnostics() } else { RunRequest::new() };
        for _ in 0..10 {
            while h.lane.pending_items() < 2 {
                h.submit(request);
            }
            assert!(
                h.lane.pair().submissions().len() <= 1,
                "{} diag={diagnostics}",
                profile.name()
            );
            h.complete_all();
        }
    }
}

#[test]
fn poison_is_attributed_to_the_run_that_caused_it() {
    // §11.17 (PR #1918): R1's prepare fails (-5 class, run-only) → R2's finalize fails with a
    // device code → R1 reports its own failure, R2 is the poison origin.
    let mut h = Harness::a2a3();
    h.fault(Fault::PrepareFails(1, 107_000));
    h.fault(Fault::FinaliseFails(2, FinaliseFailure::Acl(common::code(507_899))));
    let r1 = h.run();
    let r2 = h.run();
    h.complete(r2);
    match h.verdict(r1) {
        Some(Verdict::Failed { cause }) => {
            assert_eq!(cause.class(), Class::RunOnly);
            assert!(matches!(cause.failure, Failure::Acl { stage: Stage::Prepare, .. }));
        }
        other => panic!("{other:?}"),
    }
    match h.verdict(r2) {
        Some(Verdict::Failed { cause }) => assert_eq!(cause.class(), Class::Poison),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.lane.poison().map(|p| p.origin), Some(r2));
}

#[test]
fn a_not_started_launch_failure_never_poisons_the_lane() {
    // Finding B: a NotStarted launch failure whose context became Complete was reaped as a
    // failed run and poisoned the lane.
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchFails(1, LaunchStep::Aicore, 107_000));
    h.run();
    assert_eq!(h.state(), LaneState::Open);
    assert!(h.lane.poison().is_none());
}

#[test]
fn a_failed_completion_wait_never_leaves_the_pair_owned() {
    // Finding C: a failed attach in wait set the phase Complete without draining and left a
    // dangling owner, so every later launch failed. Here the pair is abandoned at poison and
    // the next run launches on fresh streams.
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.fail_completion(r1, 107_002);
    assert!(h.lane.pair().submissions().is_empty());
    let r2 = h.run();
    h.complete(r2);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
}

#[test]
fn close_gives_unlaunched_runs_a_cancelled_verdict_not_a_silent_drop() {
    // Finding E: drain/close terminated queued runs without an error.
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    h.complete(r1);
    let r3 = h.run();
    let _ = r2;
    h.close();
    h.complete_all();
    assert_eq!(h.verdict(r3).map(|v| v.name()), Some("Ok"));
    let mut h = Harness::depth_one();
    let r1 = h.run();
    let r2 = h.run();
    h.close();
    h.complete(r1);
    assert_eq!(h.verdict(r2), Some(Verdict::Cancelled));
}

#[test]
fn a5_also_replaces_its_aicore_stream_after_a_publication() {
    // Finding G: the C++ a5 path never invalidated its AICore stream on publication.
    let mut h = Harness::depth_one();
    let r1 = h.run();
    h.complete(r1);
    h.publish(1);
    h.take();
    let r3 = h.run();
    assert!(common::has(&h.take(), "DestroyStream Aicore"));
    h.complete(r3);
    assert_eq!(h.lane.pair().created_count(), 2);
}

#[test]
fn an_orchestration_error_does_not_take_down_the_queued_successor() {
    // PR #2028 review, question 2: an orchestration/capacity latch fails only its run.
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(1, RuntimeCode::ExplicitOrchFatal));
    let r1 = h.run();
    let r2 = h.run();
    h.complete_all();
    h.complete_all();
    assert!(matches!(h.verdict(r1), Some(Verdict::Failed { .. })));
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
}

#[test]
fn reuse_after_a_run_only_failure_keeps_the_warm_pair() {
    // §11.5 (#1807): resident alternation does not recreate streams; only publication does.
    let mut h = Harness::a2a3();
    for i in 0..6 {
        if i % 2 == 0 {
            h.fault(Fault::Latch(h.lane.pending_items() as u64 + 1 + i, RuntimeCode::InvalidArgs));
        }
        let run = h.run();
        h.complete(run);
    }
    assert_eq!(h.lane.pair().created_count(), 1);
    assert!(matches!(
        h.lane.submit(h.now, RunRequest::new()),
        Ok(_) | Err(SubmitError::Full { .. })
    ));
}
