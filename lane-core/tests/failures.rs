//! L-5, L-7, L-8, L-9, L-10: launch progress, slot release on every terminal path, the status
//! read for every run, classification, poison and recovery.

mod common;

use common::{Fault, Harness, code};
use lane_core::status_latch::{
    Boundary, Class, DeviceVerdict, Evidence, Failure, LaunchProgress, RecordRead, RuntimeCode,
    Stage, VerdictChannel,
};
use lane_core::stream_pair::Role;
use lane_core::{
    AfterRecovery, FinaliseFailure, LaneState, LaunchStep, RecoveryStep, RunPhase, RunRequest,
    SubmitError, Verdict,
};

fn failed_with(verdict: Option<Verdict>) -> lane_core::Cause {
    match verdict {
        Some(Verdict::Failed { cause }) => cause,
        other => panic!("expected Failed, got {other:?}"),
    }
}

#[test]
fn a_clean_kernel_exit_with_a_nonzero_latch_fails_that_run() {
    // L-8: the C++ code used to return success here because it read the latch only after a
    // non-zero stream result.
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(1, RuntimeCode::InvalidArgs));
    let r1 = h.run();
    h.complete(r1);
    let cause = failed_with(h.verdict(r1));
    assert_eq!(cause.class(), Class::RunOnly);
    assert!(matches!(cause.failure, Failure::Latched(l) if l.code == RuntimeCode::InvalidArgs));
    // The outcome names the code, its name and the hint (through status-latch).
    assert_eq!((cause.stage(), cause.code(), cause.name()), (None, Some(5), "INVALID_ARGS"));
    assert_eq!(cause.hint(), RuntimeCode::InvalidArgs.hint());
    assert!(cause.line(r1).starts_with("run 1 failed: runtime latch"), "{}", cause.line(r1));
    assert!(
        h.take().contains(&"FinaliseRun run 1".to_owned()),
        "failed runs are finalised without copy-back"
    );
}

#[test]
fn every_completed_run_has_its_status_header_read_before_its_verdict() {
    let mut h = Harness::a2a3();
    let runs: Vec<_> = (0..2).map(|_| h.run()).collect();
    h.complete_all();
    let log = h.take();
    for run in runs {
        let read = log.iter().position(|l| *l == format!("ReadStatus {run}")).expect("read");
        let fin = log
            .iter()
            .position(|l| l.starts_with(&format!("FinaliseRun {run}")))
            .expect("finalised");
        assert!(read < fin);
        assert!(
            h.run_outcome(run).unwrap().timing.is_some(),
            "the verdict carries device timing (L-17)"
        );
    }
}

#[test]
fn a_run_only_failure_lets_the_launched_successor_complete_and_later_submits_succeed() {
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(1, RuntimeCode::ScopeDeadlock));
    let r1 = h.run();
    let r2 = h.run();
    assert!(matches!(h.lane.phase_of(r2), Some(RunPhase::Launched { .. })));
    h.complete(r1);
    h.complete(r2);
    assert_eq!(failed_with(h.verdict(r1)).class(), Class::RunOnly);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
    let r3 = h.run();
    h.complete(r3);
    assert_eq!(h.verdict(r3), Some(Verdict::Ok));
    assert_eq!(h.lane.pair().created_count(), 1, "a run-only failure keeps the streams");
    assert_eq!(h.state(), LaneState::Open);
}

#[test]
fn a_poison_gives_the_origin_its_own_cause_and_the_successor_the_origin_then_reopens_on_fresh_streams()
 {
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(1, RuntimeCode::SchedulerTimeout));
    let r1 = h.run();
    let r2 = h.run();
    h.take();
    h.complete(r1);
    let origin_cause = failed_with(h.verdict(r1));
    assert_eq!(origin_cause.class(), Class::Poison);
    assert_eq!(h.verdict(r2), Some(Verdict::Poisoned { cause: origin_cause, origin: r1 }));
    // Recovery: bounded drain, force reset, probe, bracketed by the runner's hooks (L-24);
    // handles abandoned, never destroyed.
    let log = h.take();
    assert_eq!(
        log,
        [
            "ReadStatus run 1",
            "Hook BeforeReset origin run 1 (SCHEDULER_TIMEOUT)",
            "DrainDevice attempt 1 (timeout 10000 ms)",
            "ForceReset attempt 1",
            "Probe attempt 1",
            "Hook AfterReset recovered"
        ]
    );
    assert_eq!(h.state(), LaneState::Open);
    let created = h.lane.pair().created_count();
    let r3 = h.run();
    let log = h.take();
    assert!(
        common::has(&log, "CreateStream Aicpu") && common::has(&log, "CreateStream Aicore"),
        "{log:?}"
    );
    assert_eq!(h.lane.pair().created_count(), created + 1);
    h.complete(r3);
    assert_eq!(h.verdict(r3), Some(Verdict::Ok));
}

#[test]
fn submits_are_refused_while_recovering_with_an_error_naming_the_origin() {
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(1, RuntimeCode::TensorWaitTimeout));
    let r1 = h.run();
    // Hold the recovery at its first step by not pumping: feed the completion by hand.
    let (run, lease) = h.complete_unpumped();
    // Answer the status read with the latched header.
    let effect = h.lane.poll_effect().unwrap();
    let lane_core::Effect::ReadStatus { layout, .. } = effect else { panic!("{effect:?}") };
    let mut status = lane_core::status_latch::Status::clean(layout);
    status.orch = Some(RuntimeCode::TensorWaitTimeout);
    h.lane
        .handle(
            h.now,
            lane_core::Event::StatusRead { run, lease, status, timing: Default::default() },
        )
        .unwrap();
    assert!(matches!(
        h.state(),
        LaneState::Recovering {
            step: RecoveryStep::Drain,
            attempt: 1,
            then: AfterRecovery::Reopen
        }
    ));
    let err = h.lane.submit(h.now, RunRequest::new()).unwrap_err();
    assert!(matches!(err, SubmitError::Poisoned { origin, .. } if origin == r1));
    assert!(err.to_string().contains("recovering"), "{err}");
    h.pump();
    assert_eq!(h.state(), LaneState::Open);
}

#[test]
fn a_recovery_whose_probe_fails_every_attempt_leaves_the_lane_lost() {
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(1, RuntimeCode::SchedulerTimeout));
    h.fault(Fault::ProbeFails(507_899, 3));
    let r1 = h.run();
    h.take();
    h.complete(r1);
    assert_eq!(
        h.take(),
        [
            "ReadStatus run 1",
            "Hook BeforeReset origin run 1 (SCHEDULER_TIMEOUT)",
            "DrainDevice attempt 1 (timeout 10000 ms)",
            "ForceReset attempt 1",
            "Probe attempt 1",
            "DrainDevice attempt 2 (timeout 10000 ms)",
            "ForceReset attempt 2",
            "Probe attempt 2",
            "DrainDevice attempt 3 (timeout 10000 ms)",
            "ForceReset attempt 3",
            "Probe attempt 3",
            "Hook AfterReset not recovered"
        ]
    );
    assert_eq!(h.state(), LaneState::Lost);
    assert!(h.lane.device_lost());
    let err = h.lane.submit(h.now, RunRequest::new()).unwrap_err();
    assert!(matches!(err, SubmitError::Lost { origin, .. } if origin == r1));
    assert!(err.to_string().contains("lost"), "{err}");
    assert!(h.lane.publish(h.now, lane_core::CodeRef(1)).is_err());
    // A lost lane can still be closed.
    assert_eq!(
        h.close().state,
        LaneState::Closed { device_lost: true, left: lane_core::StreamsLeft::NONE }
    );
}

#[test]
fn a_failed_force_reset_is_retried_and_a_later_attempt_can_confirm_the_device() {
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(1, RuntimeCode::SchedulerTimeout));
    h.fault(Fault::ResetFails(507_899, 1));
    let r1 = h.run();
    h.take();
    h.complete(r1);
    let log = h.take();
    assert_eq!(
        log[1..],
        [
            "Hook BeforeReset origin run 1 (SCHEDULER_TIMEOUT)",
            "DrainDevice attempt 1 (timeout 10000 ms)",
            "ForceReset attempt 1",
            "DrainDevice attempt 2 (timeout 10000 ms)",
            "ForceReset attempt 2",
            "Probe attempt 2",
            "Hook AfterReset recovered"
        ]
    );
    assert!(
        !log.iter()
            .any(|l| l.contains("Reset") && !l.starts_with("ForceReset") && !l.starts_with("Hook")),
        "never a plain reset"
    );
    assert_eq!(h.state(), LaneState::Open);
}

#[test]
fn a_launch_that_reached_no_stream_fails_only_that_run_and_withdraws_its_submission() {
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchFails(2, LaunchStep::Aicore, 107_000));
    let r1 = h.run();
    let r2 = h.run();
    let cause = failed_with(h.verdict(r2).or_else(|| {
        h.complete(r1);
        h.verdict(r2)
    }));
    assert!(matches!(cause.failure, Failure::Launch { progress: LaunchProgress::NotStarted, .. }));
    assert_eq!(cause.class(), Class::RunOnly);
    assert_eq!(h.lane.pair().submissions().len(), 0);
    assert!(!h.lane.pair().is_replacement_pending(), "withdraw marks nothing stale");
    let r3 = h.run();
    h.complete_all();
    assert_eq!(h.verdict(r3), Some(Verdict::Ok));
    assert_eq!(h.lane.pair().created_count(), 1);
}

#[test]
fn an_arming_failure_is_not_started_not_partial() {
    // simpler-lane.md §11.10 (#1714): an arming failure was graded Partial (device poison
    // with no stream touched).
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchFails(1, LaunchStep::Arm, 107_000));
    let r1 = h.run();
    assert_eq!(failed_with(h.verdict(r1)).class(), Class::RunOnly);
    assert_eq!(h.state(), LaneState::Open);
}

#[test]
fn memory_exhaustion_at_the_aicore_launch_poisons_even_though_nothing_reached_a_stream() {
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchFails(1, LaunchStep::Aicore, 207_001));
    let r1 = h.run();
    assert_eq!(failed_with(h.verdict(r1)).class(), Class::Poison);
    assert_eq!(h.lane.poison().map(|p| p.origin), Some(r1));
}

#[test]
fn a_partial_launch_poisons() {
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchFails(2, LaunchStep::Aicpu, 107_000));
    let r1 = h.run();
    let r2 = h.run();
    let cause =
        failed_with(h.verdict(r2).or(h.lane.poison().map(|p| Verdict::Failed { cause: p.cause })));
    assert!(matches!(cause.failure, Failure::Launch { progress: LaunchProgress::Partial, .. }));
    // Run 1 was in flight on the same device: it is taken down too, naming run 2.
    assert!(matches!(h.verdict(r1), Some(Verdict::Poisoned { origin, .. }) if origin == r2));
}

/// L-5, L-8, SPEC §5.3: a fence call that fails after a kernel was accepted leaves the run
/// unfenced. It is not failed at its launch: it is awaited through the device verdict alone
/// (nothing launches behind it), and poisons with the device's code, or with the failed
/// call's code when both streams synchronize clean.
#[test]
fn an_event_record_failure_is_awaited_through_the_device_verdict_and_poisons_with_its_code() {
    for (device, stage, want) in [
        (DeviceVerdict::Clean, Stage::EventRecord, 107_000),
        (DeviceVerdict::Fault(code(507_015)), Stage::StreamSync, 507_015),
    ] {
        let mut h = Harness::a2a3();
        h.fault(Fault::LaunchFails(1, LaunchStep::RecordEvent, 107_000));
        let r1 = h.run();
        let r2 = h.run();
        assert_eq!(h.verdict(r1), None, "not failed at its launch");
        let log = h.take();
        assert!(
            log.iter()
                .any(|l| l.starts_with("AwaitCompletion run 1") && l.ends_with("unfenced (107000)")),
            "{log:?}"
        );
        assert!(
            !log.iter().any(|l| l.starts_with("LaunchRun run 2")),
            "nothing launches behind an unfenced run: {log:?}"
        );
        h.complete_with(
            r1,
            Evidence {
                channel: VerdictChannel::Record,
                boundary: Boundary::Unfenced(code(107_000)),
                record: RecordRead::NotRead,
                device: Some(device),
            },
        );
        let cause = failed_with(h.verdict(r1));
        assert_eq!((cause.stage(), cause.code()), (Some(stage), Some(want)));
        assert_eq!(cause.class(), Class::Poison);
        assert!(matches!(h.verdict(r2), Some(Verdict::Poisoned { origin, .. }) if origin == r1));
    }
}

/// A backend that answers an unfenced run's await as if its boundary had completed (its
/// record ok) proves nothing: the lane judges it unfenced all the same, never `Ok`.
#[test]
fn an_unfenced_run_is_never_ok_whatever_its_completion_says() {
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchFails(1, LaunchStep::RecordEvent, 107_000));
    let r1 = h.run();
    h.complete_with(r1, Evidence::PUBLISHED_OK);
    let cause = failed_with(h.verdict(r1));
    assert_eq!(cause.class(), Class::Poison);
}

#[test]
fn a_completion_that_does_not_arrive_before_its_deadline_poisons() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    h.expire();
    let cause = failed_with(h.verdict(r1));
    assert_eq!(cause.failure, Failure::HostWaitTimeout);
    assert!(matches!(h.verdict(r2), Some(Verdict::Poisoned { origin, .. }) if origin == r1));
    assert_eq!(h.state(), LaneState::Open, "recovered");
}

#[test]
fn a_completion_wait_error_poisons() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.fail_completion(r1, 507_047);
    let cause = failed_with(h.verdict(r1));
    assert!(matches!(cause.failure, Failure::Acl { stage: Stage::EventWait, .. }));
    assert_eq!(cause.class(), Class::Poison);
}

#[test]
fn a_failed_status_read_poisons() {
    let mut h = Harness::a2a3();
    h.fault(Fault::StatusReadFails(1, 507_015));
    let r1 = h.run();
    h.complete(r1);
    assert_eq!(failed_with(h.verdict(r1)).class(), Class::Poison);
}

#[test]
fn a_failed_prepare_fails_only_that_run_and_is_finalised() {
    let mut h = Harness::a2a3();
    h.fault(Fault::PrepareFails(1, 107_000));
    let r1 = h.run();
    let log = h.take();
    assert_eq!(log, ["PrepareRun run 1 (slot 0 gen 1)", "FinaliseRun run 1"]);
    let cause = failed_with(h.verdict(r1));
    assert!(matches!(cause.failure, Failure::Acl { stage: Stage::Prepare, .. }));
    let r2 = h.run();
    h.complete(r2);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
}

#[test]
fn a_latched_deadlock_returned_by_prepare_is_terminal_prepared_once_and_poisons_nothing() {
    // The peer's LatchedFlowControlDeadlockIsTerminalRatherThanRetried: a host_build_graph
    // prepare that latched FLOW_CONTROL_DEADLOCK returns -3.
    let mut h = Harness::a2a3();
    h.fault(Fault::PrepareFails(1, -3));
    let r1 = h.run();
    assert_eq!(
        h.take(),
        ["PrepareRun run 1 (slot 0 gen 1)", "FinaliseRun run 1"],
        "prepared once, never queued again"
    );
    let cause = failed_with(h.verdict(r1));
    assert_eq!(
        cause.failure,
        Failure::Returned { stage: Stage::Prepare, code: RuntimeCode::FlowControlDeadlock }
    );
    assert_eq!(cause.class(), Class::RunOnly);
    let r2 = h.run();
    h.complete(r2);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
    assert_eq!(h.lane.state(), LaneState::Open, "nothing poisoned");
}

#[test]
fn a_latch_code_returned_by_finalise_is_the_runtimes_failure_not_a_validation() {
    let mut h = Harness::a2a3();
    h.fault(Fault::FinaliseFails(1, FinaliseFailure::Runtime(RuntimeCode::ScopeDeadlock)));
    let r1 = h.run();
    let r2 = h.run();
    h.complete_all();
    let cause = failed_with(h.verdict(r1));
    assert_eq!(
        cause.failure,
        Failure::Returned { stage: Stage::CopyBack, code: RuntimeCode::ScopeDeadlock }
    );
    assert_ne!(cause.failure, Failure::CopyBackValidation);
    assert_eq!(cause.class(), Class::RunOnly);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
}

#[test]
fn a_latch_code_returned_by_a_launch_is_named_and_the_aicpu_launchs_still_poisons() {
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchFails(1, LaunchStep::Aicore, -4));
    let r1 = h.run();
    let cause = failed_with(h.verdict(r1));
    assert_eq!(
        cause.failure,
        Failure::Returned { stage: Stage::AicoreLaunch, code: RuntimeCode::DepPoolOverflow }
    );
    assert_eq!(cause.class(), Class::RunOnly);
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchFails(1, LaunchStep::Aicpu, -4));
    let r1 = h.run();
    let cause = failed_with(h.verdict(r1));
    assert_eq!(cause.failure.name(), "DEP_POOL_OVERFLOW");
    assert_eq!(cause.class(), Class::Poison, "the AICore kernel is orphaned");
}

#[test]
fn a_copy_back_validation_failure_fails_only_that_run() {
    let mut h = Harness::a2a3();
    h.fault(Fault::FinaliseFails(1, FinaliseFailure::Validation));
    let r1 = h.run();
    let r2 = h.run();
    h.complete_all();
    assert_eq!(failed_with(h.verdict(r1)).failure, Failure::CopyBackValidation);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
}

#[test]
fn a_copy_back_with_a_device_fault_code_poisons() {
    let mut h = Harness::a2a3();
    h.fault(Fault::FinaliseFails(1, FinaliseFailure::Acl(code(507_015))));
    let r1 = h.run();
    let r2 = h.run();
    h.complete(r1);
    assert_eq!(failed_with(h.verdict(r1)).class(), Class::Poison);
    assert!(matches!(h.verdict(r2), Some(Verdict::Poisoned { origin, .. }) if origin == r1));
}

#[test]
fn a_stream_create_failure_fails_the_run_waiting_to_launch_and_the_next_launch_retries() {
    let mut h = Harness::a2a3();
    h.fault(Fault::CreateFails(Role::Aicore, 207_008, 1));
    let r1 = h.run();
    let cause = failed_with(h.verdict(r1));
    assert!(matches!(cause.failure, Failure::Acl { stage: Stage::StreamCreate, .. }));
    assert_eq!(cause.class(), Class::RunOnly);
    h.take();
    let r2 = h.run();
    let log = h.take();
    assert!(common::has(&log, "CreateStream Aicore"), "{log:?}");
    assert!(!log.iter().any(|l| l == "CreateStream Aicpu"), "the AICPU stream survived: {log:?}");
    h.complete(r2);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
}

#[test]
fn every_terminal_path_releases_the_slot() {
    // L-7: ok, run-only failure, NotStarted, prepare failure, cancel, poison. After each, both
    // slots can be leased again (a stranded slot would make the lane Full forever).
    let paths: [&dyn Fn(&mut Harness); 6] = [
        &|_| {},
        &|h| {
            h.fault(Fault::Latch(1, RuntimeCode::InvalidArgs));
        },
        &|h| {
            h.fault(Fault::LaunchFails(1, LaunchStep::Aicore, 107_000));
        },
        &|h| {
            h.fault(Fault::PrepareFails(1, 107_000));
        },
        &|h| {
            h.fault(Fault::FinaliseFails(1, FinaliseFailure::Validation));
        },
        &|h| {
            h.fault(Fault::Latch(1, RuntimeCode::SchedulerTimeout));
        },
    ];
    for (i, install) in paths.iter().enumerate() {
        let mut h = Harness::a2a3();
        install(&mut h);
        h.run();
        h.run();
        h.complete_all();
        h.complete_all();
        assert!(h.lane.is_idle(), "path {i}");
        for round in 0..3 {
            let a = h.run();
            let b = h.run();
            h.complete_all();
            h.complete_all();
            assert_eq!(h.verdict(a), Some(Verdict::Ok), "path {i} round {round}");
            assert_eq!(h.verdict(b), Some(Verdict::Ok), "path {i} round {round}");
        }
    }
    // Cancel: close with a prepared run, then a new lane is not needed to prove the slot is
    // free: the lane is empty and closed.
    let mut h = Harness::depth_one();
    let r1 = h.run();
    let r2 = h.run();
    h.close();
    assert_eq!(h.verdict(r2), None, "held behind run 1, which finishes first");
    h.complete(r1);
    assert_eq!(h.verdict(r1), Some(Verdict::Ok));
    assert_eq!(h.verdict(r2), Some(Verdict::Cancelled));
    assert!(h.lane.is_idle());
}

#[test]
fn an_upload_failure_reports_its_error_and_never_poisons() {
    let mut h = Harness::a2a3();
    h.fault(Fault::UploadFails(1, 507_899));
    let p = h.publish(5);
    match h.publication(p) {
        Some(lane_core::PublicationResult::Failed { cause }) => {
            assert!(matches!(cause.failure, Failure::Acl { stage: Stage::Upload, .. }))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.state(), LaneState::Open);
}

#[test]
fn a_recovery_that_fails_after_close_ends_closed_and_reports_the_device_lost() {
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(1, RuntimeCode::SchedulerTimeout));
    h.fault(Fault::ProbeFails(507_899, 3));
    let r1 = h.run();
    h.complete_unpumped();
    assert!(matches!(h.lane.phase_of(r1), Some(RunPhase::ReadingStatus { .. })));
    // Close before the status read reveals the poison; recovery then fails every attempt.
    let report = h.close();
    assert!(!report.device_lost);
    assert_eq!(
        h.state(),
        LaneState::Closed { device_lost: true, left: lane_core::StreamsLeft::NONE },
        "no second close is needed"
    );
    assert!(h.lane.device_lost());
    assert!(matches!(h.verdict(r1), Some(Verdict::Failed { .. })));
}
