//! L-12 (publication is a drain barrier), L-14 and L-15 (one verdict per run, close).

mod common;

use common::{Fault, Harness};
use lane_core::status_latch::{AclCode, RuntimeCode};
use lane_core::stream_pair::Role;
use lane_core::{
    LaneState, PublicationResult, PublishError, RunPhase, RunRequest, StreamsLeft, SubmitError,
    TEARDOWN_ATTEMPTS, TeardownFailure, Verdict,
};

#[test]
fn a_publication_between_runs_waits_for_every_earlier_outcome_then_uploads_and_the_next_launch_replaces_the_aicore_stream()
 {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    h.take();
    let p = h.publish(9);
    assert!(h.take().is_empty(), "the upload waits for runs 1 and 2");
    h.complete(r1);
    assert!(!common::has(&h.take(), "UploadCode"), "run 2 is still in flight");
    h.complete(r2);
    assert!(common::has(&h.take(), "UploadCode publication 3"));
    assert_eq!(h.publication(p), Some(PublicationResult::Uploaded));
    assert_eq!(
        h.lane.pair().created_count(),
        1,
        "replacement happens at the next launch, not at upload"
    );
    let r4 = h.run();
    let log = h.take();
    assert_eq!(
        log,
        [
            "PrepareRun run 4 (slot 0 gen 3)",
            "DestroyStream Aicore h102",
            "CreateStream Aicore",
            "LaunchRun run 4 (slot 0 gen 3) aicpu h101 aicore h103",
            "AwaitCompletion run 4 (deadline 50000000.000 us)"
        ],
        "only the AICore stream is replaced; the AICPU stream survives"
    );
    assert_eq!(h.lane.pair().created_count(), 2);
    h.complete(r4);
    assert_eq!(h.outcome_order(), [1, 2, 3, 4]);
}

#[test]
fn runs_submitted_after_a_publication_wait_behind_it_and_are_not_prepared_until_it_has_its_outcome()
{
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.take();
    h.publish(1);
    let r3 = h.run();
    assert!(h.take().is_empty(), "run 3 is neither prepared nor launched behind the publication");
    assert_eq!(h.lane.phase_of(r3), Some(RunPhase::Queued { incompatible: false }));
    h.complete(r1);
    let log = h.take();
    let upload =
        log.iter().position(|l| l.starts_with("UploadCode publication 2 ")).expect("uploaded");
    let prepare = log.iter().position(|l| l.starts_with("PrepareRun run 3")).expect("prepared");
    assert!(upload < prepare, "{log:?}");
    h.complete(r3);
    assert_eq!(h.verdict(r3), Some(Verdict::Ok));
}

#[test]
fn a_publication_with_nothing_in_flight_proceeds_at_once() {
    let mut h = Harness::a2a3();
    let p = h.publish(1);
    assert_eq!(h.take(), ["UploadCode publication 1 code 1"]);
    assert_eq!(h.publication(p), Some(PublicationResult::Uploaded));
}

#[test]
fn a_failed_upload_reports_its_error_and_still_leaves_the_stream_stale() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.complete(r1);
    h.fault(Fault::UploadFails(2, 207_001));
    let p = h.publish(1);
    assert!(matches!(h.publication(p), Some(PublicationResult::Failed { .. })));
    assert!(h.lane.pair().is_replacement_pending());
    h.take();
    h.run();
    assert!(common::has(&h.take(), "DestroyStream Aicore"));
}

#[test]
fn publication_and_admission_are_serialised_by_the_lane() {
    // The C++ check-then-act race (simpler-lane.md §6(e)): "no runs outstanding" then
    // upload. Here a run submitted after the publication cannot be prepared before the
    // upload, and a run submitted before it is always drained first, whatever the
    // interleaving.
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let p = h.publish(1);
    let r3 = h.run();
    h.complete_all();
    h.complete_all();
    assert_eq!(h.outcome_order(), [r1.0, p.0, r3.0]);
    let launched_on = h.lane.pair().created_count();
    assert_eq!(launched_on, 2, "run 3 ran on a fresh AICore stream");
}

#[test]
fn too_many_waiting_publications_are_refused() {
    let mut h = Harness::a2a3();
    h.run();
    h.publish(1);
    h.publish(2);
    assert_eq!(h.lane.publish(h.now, lane_core::CodeRef(3)), Err(PublishError::Full));
}

#[test]
fn close_with_runs_in_flight_lets_launched_runs_finish_cancels_the_rest_and_destroys_the_streams_once_idle()
 {
    let mut h = Harness::depth_one();
    let r1 = h.run();
    let r2 = h.run();
    assert!(matches!(h.lane.phase_of(r2), Some(RunPhase::Prepared { .. })));
    h.take();
    let report = h.close();
    assert_eq!(report.state, LaneState::Closing);
    assert!(!report.state.is_closed(), "closing is not closed yet");
    assert_eq!(
        h.take(),
        ["FinaliseRun run 2"],
        "the prepared run is cancelled and its resources freed"
    );
    assert_eq!(
        h.lane.submit(h.now, RunRequest::new()),
        Err(SubmitError::Closed),
        "a submit after close is refused"
    );
    h.complete(r1);
    let log = h.take();
    assert_eq!(log[log.len() - 2..], ["DestroyStream Aicpu h101", "DestroyStream Aicore h102"]);
    assert_eq!(h.verdict(r1), Some(Verdict::Ok));
    assert_eq!(h.verdict(r2), Some(Verdict::Cancelled));
    assert_eq!(
        h.state(),
        LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE }
    );
    assert!(h.state().is_closed());
}

#[test]
fn close_cancels_queued_runs_and_waiting_publications_which_upload_nothing() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let p = h.publish(1);
    let r3 = h.run();
    h.take();
    h.close();
    h.complete(r1);
    assert!(!common::has(&h.take(), "UploadCode"));
    assert_eq!(h.publication(p), Some(PublicationResult::Cancelled));
    assert_eq!(h.verdict(r3), Some(Verdict::Cancelled));
    assert_eq!(h.outcome_order(), [1, 2, 3]);
    assert_eq!(
        h.state(),
        LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE }
    );
}

#[test]
fn close_while_a_prepare_is_out_cancels_the_run_when_the_prepare_answers() {
    let mut h = Harness::a2a3();
    let run = h.lane.submit(h.now, RunRequest::new()).unwrap();
    let effect = h.lane.poll_effect().unwrap();
    let lane_core::Effect::PrepareRun { lease, .. } = effect else { panic!("{effect:?}") };
    h.lane.close(h.now);
    h.lane.handle(h.now, lane_core::Event::Prepared { run, lease }).unwrap();
    h.pump();
    assert_eq!(h.take(), ["FinaliseRun run 1"]);
    assert_eq!(h.verdict(run), Some(Verdict::Cancelled));
    assert_eq!(
        h.state(),
        LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE },
        "no stream was ever created, so nothing to destroy"
    );
}

#[test]
fn close_reports_the_poison_if_there_was_one() {
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(1, RuntimeCode::SchedulerTimeout));
    let r1 = h.run();
    h.complete(r1);
    let report = h.close();
    assert_eq!(report.poison.map(|p| p.origin), Some(r1));
    assert_eq!(
        report.state,
        LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE }
    );
}

/// A lane with one completed run (so both streams exist), closed with `faults` installed.
fn closed_after_a_run(faults: &[Fault]) -> Harness {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.complete(r1);
    h.take();
    for fault in faults {
        h.fault(*fault);
    }
    h.close();
    h
}

fn destroys(log: &[String], role: &str) -> usize {
    log.iter().filter(|l| l.starts_with(&format!("DestroyStream {role}"))).count()
}

#[test]
fn a_teardown_destroy_that_fails_is_retried_at_once_and_nothing_is_left_when_the_retry_succeeds() {
    let mut h = closed_after_a_run(&[Fault::DestroyFails(Role::Aicpu, 507_901, 1)]);
    let log = h.take();
    assert_eq!(destroys(&log, "Aicpu"), 2, "the destroy and its retry: {log:?}");
    assert_eq!(destroys(&log, "Aicore"), 1, "{log:?}");
    assert_eq!(
        h.state(),
        LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE }
    );
    assert!(h.lane.streams_left().is_empty());
    assert_eq!(h.close().streams_left, StreamsLeft::NONE);
}

#[test]
fn a_stream_whose_destroy_and_retry_fail_is_left_and_named_in_the_close_report() {
    let mut h = closed_after_a_run(&[Fault::DestroyFails(Role::Aicpu, 507_901, 2)]);
    let log = h.take();
    assert_eq!(destroys(&log, "Aicpu"), usize::from(TEARDOWN_ATTEMPTS), "{log:?}");
    assert_eq!(closed_leaving_streams(h.state()), h.lane.streams_left());
    let report = h.close();
    assert_eq!(closed_leaving_streams(report.state), report.streams_left);
    assert_eq!(report.streams_left.aicpu.map(AclCode::raw), Some(507_901));
    assert_eq!(report.streams_left.aicore, None, "the AICore stream was destroyed");
    assert_eq!(report.streams_left.count(), 1);
    let failures: Vec<TeardownFailure> = report.streams_left.iter().collect();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].role, Role::Aicpu);
    let line = report.streams_left.to_string();
    assert!(
        line.starts_with("close left the AICPU stream: its every destroy failed, the last with ACL 507901 ACL_ERROR_RT_SOCKET_CLOSE"),
        "{line}"
    );
    assert!(line.contains("; hint: "), "{line}");
    assert_eq!(h.lane.streams_left(), report.streams_left);
}

#[test]
fn both_streams_left_are_named_aicpu_first() {
    let mut h = closed_after_a_run(&[
        Fault::DestroyFails(Role::Aicpu, 507_901, 2),
        Fault::DestroyFails(Role::Aicore, 107_000, 2),
    ]);
    let left = h.close().streams_left;
    assert_eq!(left.count(), 2);
    assert_eq!(left.aicore.map(AclCode::raw), Some(107_000));
    let line = left.to_string();
    let aicpu = line.find("the AICPU stream").expect("named");
    let aicore = line.find("; and the AICore stream").expect("named");
    assert!(aicpu < aicore, "{line}");
}

#[test]
fn the_close_report_names_no_stream_left_before_the_teardown_ends() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.complete(r1);
    let r2 = h.run();
    h.fault(Fault::DestroyFails(Role::Aicpu, 507_901, 2));
    // Run 2 is still in flight: the teardown has not started.
    let report = h.close();
    assert_eq!(report.state, LaneState::Closing);
    assert!(report.streams_left.is_empty());
    h.complete(r2);
    assert_eq!(closed_leaving_streams(h.state()), h.lane.streams_left());
    assert_eq!(h.close().streams_left.count(), 1);
}

#[test]
fn retry_teardown_destroys_a_stream_left_once_more_and_clears_it_when_that_succeeds() {
    let mut h = closed_after_a_run(&[Fault::DestroyFails(Role::Aicpu, 507_901, 2)]);
    h.take();
    let now = h.now;
    assert!(h.lane.retry_teardown(now));
    assert!(
        matches!(
            h.state(),
            LaneState::ReleasingStreams {
                round: 1,
                rounds: 1,
                left
            } if left.count() == 1
        ),
        "one destroy round, emitted at once, for the stream left"
    );
    assert!(h.lane.streams_left().is_empty(), "not final while it releases");
    h.pump();
    let log = h.take();
    assert_eq!(destroys(&log, "Aicpu"), 1, "one more destroy: {log:?}");
    assert_eq!(destroys(&log, "Aicore"), 0, "only the stream left: {log:?}");
    assert_eq!(
        h.state(),
        LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE }
    );
    assert!(h.lane.streams_left().is_empty());
    assert!(!h.lane.retry_teardown(now), "nothing left: nothing to retry");
}

#[test]
fn retry_teardown_that_fails_again_keeps_the_stream_left_with_its_new_code() {
    let mut h = closed_after_a_run(&[Fault::DestroyFails(Role::Aicpu, 507_901, 2)]);
    h.fault(Fault::DestroyFails(Role::Aicpu, 507_899, 1));
    let now = h.now;
    assert!(h.lane.retry_teardown(now));
    h.pump();
    h.take();
    assert_eq!(closed_leaving_streams(h.state()), h.lane.streams_left());
    assert_eq!(
        h.lane.streams_left().aicpu.map(AclCode::raw),
        Some(507_899),
        "the last destroy's code"
    );
}

#[test]
fn retry_teardown_changes_nothing_on_a_lane_that_is_not_closed_or_left_nothing() {
    let mut h = Harness::a2a3();
    let now = h.now;
    assert!(!h.lane.retry_teardown(now), "open");
    let r1 = h.run();
    h.complete(r1);
    h.close();
    assert_eq!(
        h.state(),
        LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE }
    );
    h.take();
    assert!(!h.lane.retry_teardown(now), "closed, nothing left");
    assert!(h.take().is_empty());
}

#[test]
fn every_accepted_run_gets_exactly_one_verdict_even_across_poison_and_close() {
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(3, RuntimeCode::SchedulerTimeout));
    let mut accepted = Vec::new();
    for _ in 0..4 {
        while h.lane.pending_items() < 2 {
            accepted.push(h.run().0);
        }
        h.complete_all();
    }
    accepted.push(h.run().0);
    accepted.push(h.publish(1).0);
    h.close();
    h.complete_all();
    assert_eq!(h.outcome_order(), accepted);
    assert_eq!(
        h.state(),
        LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE }
    );
}

/// The streams a closed lane's state says its teardown left; panics unless it is closed (the
/// device not lost) with at least one stream left.
fn closed_leaving_streams(state: LaneState) -> StreamsLeft {
    match state {
        LaneState::Closed { device_lost: false, left } if !left.is_empty() => left,
        other => panic!("expected closed with streams left, got {other:?}"),
    }
}
