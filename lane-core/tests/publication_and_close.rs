//! L-12 (publication is a drain barrier), L-14 and L-15 (one verdict per run, close).

mod common;

use common::{Fault, Harness};
use lane_core::status_latch::RuntimeCode;
use lane_core::{
    LaneState, PublicationResult, PublishError, RunPhase, RunRequest, SubmitError, Verdict,
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
    assert!(
        !common::has(&h.take(), "UploadCode"),
        "run 2 is still in flight"
    );
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
    assert!(
        h.take().is_empty(),
        "run 3 is neither prepared nor launched behind the publication"
    );
    assert_eq!(h.lane.phase_of(r3), Some(RunPhase::Queued));
    h.complete(r1);
    let log = h.take();
    let upload = log
        .iter()
        .position(|l| l.starts_with("UploadCode publication 2 "))
        .expect("uploaded");
    let prepare = log
        .iter()
        .position(|l| l.starts_with("PrepareRun run 3"))
        .expect("prepared");
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
    assert!(matches!(
        h.publication(p),
        Some(PublicationResult::Failed { .. })
    ));
    assert!(h.lane.pair().is_replacement_pending());
    h.take();
    h.run();
    assert!(common::has(&h.take(), "DestroyStream Aicore"));
}

#[test]
fn publication_and_admission_are_serialised_by_the_lane() {
    // The C++ check-then-act race (§6(e)): "no runs outstanding" then upload. Here a run
    // submitted after the publication cannot be prepared before the upload, and a run
    // submitted before it is always drained first, whatever the interleaving.
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
    assert_eq!(
        h.lane.publish(h.now, lane_core::CodeRef(3)),
        Err(PublishError::Full)
    );
}

#[test]
fn close_with_runs_in_flight_lets_launched_runs_finish_cancels_the_rest_and_destroys_the_streams_once_idle()
 {
    let mut h = Harness::a5();
    let r1 = h.run();
    let r2 = h.run();
    assert_eq!(h.lane.phase_of(r2), Some(RunPhase::Prepared));
    h.take();
    let report = h.close();
    assert_eq!(report.state, LaneState::Closing);
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
    assert_eq!(
        log[log.len() - 2..],
        ["DestroyStream Aicpu h101", "DestroyStream Aicore h102"]
    );
    assert_eq!(h.verdict(r1), Some(Verdict::Ok));
    assert_eq!(h.verdict(r2), Some(Verdict::Cancelled));
    assert_eq!(h.state(), LaneState::Closed);
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
    assert_eq!(h.state(), LaneState::Closed);
}

#[test]
fn close_while_a_prepare_is_out_cancels_the_run_when_the_prepare_answers() {
    let mut h = Harness::a2a3();
    let run = h.lane.submit(h.now, RunRequest::new()).unwrap();
    let effect = h.lane.poll_effect().unwrap();
    let lane_core::Effect::PrepareRun { lease, .. } = effect else {
        panic!("{effect:?}")
    };
    h.lane.close(h.now);
    h.lane
        .handle(h.now, lane_core::Event::Prepared { run, lease })
        .unwrap();
    h.pump();
    assert_eq!(h.take(), ["FinaliseRun run 1"]);
    assert_eq!(h.verdict(run), Some(Verdict::Cancelled));
    assert_eq!(
        h.state(),
        LaneState::Closed,
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
    assert_eq!(report.state, LaneState::Closed);
}

#[test]
fn a_failed_teardown_destroy_is_reported_after_close() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.complete(r1);
    h.fault(Fault::DestroyFails(
        lane_core::stream_pair::Role::Aicpu,
        507_901,
        1,
    ));
    h.close();
    assert_eq!(h.state(), LaneState::Closed);
    let failure = h.lane.teardown_failure().expect("reported");
    assert_eq!(failure.role, lane_core::stream_pair::Role::Aicpu);
    assert_eq!(failure.code.raw(), 507_901);
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
    assert_eq!(h.state(), LaneState::Closed);
}
