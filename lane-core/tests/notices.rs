//! L-19: a device fault notice matched to the lane makes the device suspect. The lane admits
//! nothing new, lets launched runs reach their own verdicts (a notice decides no run), fails
//! what had not launched with the notice, recovers the device and reopens.

mod common;

use common::{Fault, Harness, code};
use lane_core::status_latch::{Class, RuntimeCode, Stage};
use lane_core::{
    AfterRecovery, FaultNotice, LaneState, PublishError, RecoveryStep, RunPhase, RunRequest,
    SubmitError, Verdict,
};

fn notice() -> FaultNotice {
    FaultNotice { device: 0, stream_id: 3, code: code(507_015) }
}

const RECOVERY: [&str; 5] = [
    "Hook BeforeReset (ACL_ERROR_RT_AICORE_EXCEPTION)",
    "DrainDevice attempt 1 (timeout 10000 ms)",
    "ForceReset attempt 1",
    "Probe attempt 1",
    "Hook AfterReset recovered",
];

/// The recovery effects from the runner's `BeforeReset` hook of `log` on.
fn recovery_in(log: &[String]) -> &[String] {
    let start = log
        .iter()
        .position(|l| l.starts_with("Hook BeforeReset"))
        .unwrap_or_else(|| panic!("no recovery in {log:?}"));
    &log[start..(start + RECOVERY.len()).min(log.len())]
}

#[test]
fn a_notice_during_queued_runs_lets_them_reach_their_own_verdicts_then_recovers_and_reopens() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    assert!(matches!(h.lane.phase_of(r2), Some(RunPhase::Launched { .. })), "queued behind r1");
    h.take();
    assert!(h.notice(notice()));
    assert_eq!(h.state(), LaneState::Suspect { then: AfterRecovery::Reopen });
    assert!(h.take().is_empty(), "no recovery while launched runs are out");
    // Nothing new is admitted, and the refusal names the notice and says when to retry.
    let refused = h.lane.submit(h.now, RunRequest::new()).unwrap_err();
    assert_eq!(refused, SubmitError::Suspect { notice: notice() });
    assert!(refused.to_string().contains("stream 3"), "{refused}");
    assert!(refused.to_string().contains("submit again"), "{refused}");
    assert_eq!(
        h.lane.publish(h.now, lane_core::CodeRef(1)),
        Err(PublishError::Suspect { notice: notice() })
    );
    // A notice decides no run: each launched run gets the verdict its own evidence gives.
    h.complete(r1);
    assert_eq!(h.verdict(r1), Some(Verdict::Ok));
    assert!(h.take().iter().all(|l| !l.starts_with("DrainDevice")));
    h.complete(r2);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
    let log = h.take();
    assert_eq!(recovery_in(&log), RECOVERY, "after the last launched run's verdict");
    assert_eq!(log.last().map(String::as_str), RECOVERY.last().copied());
    assert_eq!(h.state(), LaneState::Open, "reopened");
    // Fresh streams at the next launch, and the run succeeds.
    let r3 = h.run();
    assert!(h.take().iter().any(|l| l.starts_with("CreateStream")));
    h.complete(r3);
    assert_eq!(h.verdict(r3), Some(Verdict::Ok));
    // The close report names the notice that caused the recovery.
    let report = h.close();
    assert_eq!(report.notice, Some(notice()));
    assert_eq!(report.poison, None);
    h.lane.check_invariants().unwrap();
}

#[test]
fn a_prepared_run_that_had_not_launched_fails_with_the_notice_and_is_never_launched() {
    let mut h = Harness::depth_one();
    let r1 = h.run();
    let r2 = h.run();
    assert!(matches!(h.lane.phase_of(r2), Some(RunPhase::Prepared { .. })));
    h.take();
    h.notice(notice());
    h.complete(r1);
    assert_eq!(h.verdict(r1), Some(Verdict::Ok));
    let log = h.take();
    assert!(
        !log.iter().any(|l| l.starts_with("LaunchRun")),
        "nothing launches on a suspect device: {log:?}"
    );
    let Some(Verdict::Failed { cause }) = h.verdict(r2) else {
        panic!("{:?}", h.verdict(r2));
    };
    assert_eq!(cause.stage(), Some(Stage::FaultNotice));
    assert_eq!(cause.code(), Some(507_015));
    assert_eq!(cause.class(), Class::Poison);
    assert!(cause.line(r2).contains("device fault notice"), "{}", cause.line(r2));
    assert_eq!(h.state(), LaneState::Open);
    h.lane.check_invariants().unwrap();
}

#[test]
fn a_notice_on_an_idle_lane_recovers_the_device_at_once() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.complete(r1);
    h.take();
    assert!(h.notice(notice()));
    assert_eq!(h.take(), RECOVERY);
    assert_eq!(h.state(), LaneState::Open);
    assert_eq!(h.lane.notice(), Some(notice()));
}

#[test]
fn a_notice_while_suspect_recovering_lost_or_closed_changes_nothing() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.notice(notice());
    let second = FaultNotice { stream_id: 4, ..notice() };
    assert!(!h.notice(second), "already suspect");
    assert_eq!(h.lane.notice(), Some(notice()), "the first notice is the cause");
    h.complete(r1);
    assert_eq!(h.state(), LaneState::Open);

    // Recovering after a poison: the reset is already coming.
    h.fault(Fault::Latch(2, RuntimeCode::SchedulerTimeout));
    h.fault(Fault::ResetFails(507_899, 1));
    let r2 = h.run();
    h.take();
    h.complete(r2);
    assert_eq!(h.state(), LaneState::Open);

    let closed = h.close();
    assert_eq!(
        closed.state,
        LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE }
    );
    assert!(!h.notice(second), "a closed lane is done with the device");
    assert_eq!(h.lane.close_report().notice, Some(notice()));
}

#[test]
fn a_poison_while_suspect_takes_over_as_the_recovery_cause_and_names_its_origin() {
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(1, RuntimeCode::SchedulerTimeout));
    let r1 = h.run();
    let r2 = h.run();
    h.notice(notice());
    h.complete(r1);
    let Some(Verdict::Failed { cause }) = h.verdict(r1) else {
        panic!("{:?}", h.verdict(r1));
    };
    assert_eq!(cause.class(), Class::Poison, "its own latch poisons");
    assert_eq!(
        h.verdict(r2),
        Some(Verdict::Poisoned { cause, origin: r1 }),
        "taken down by r1, not by the notice"
    );
    assert_eq!(h.state(), LaneState::Open);
    let report = h.close();
    assert_eq!(report.poison.map(|p| p.origin), Some(r1));
    assert_eq!(report.notice, Some(notice()));
}

#[test]
fn a_close_while_suspect_recovers_the_device_then_closes() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.notice(notice());
    let report = h.close();
    assert_eq!(report.state, LaneState::Suspect { then: AfterRecovery::Close });
    h.take();
    h.complete(r1);
    assert_eq!(h.verdict(r1), Some(Verdict::Ok));
    assert_eq!(recovery_in(&h.take()), RECOVERY);
    assert_eq!(
        h.state(),
        LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE }
    );
}

#[test]
fn a_recovery_after_a_notice_that_fails_every_attempt_loses_the_lane_naming_the_notice() {
    let mut h = Harness::a2a3();
    h.fault(Fault::ResetFails(507_899, 3));
    h.notice(notice());
    assert_eq!(h.state(), LaneState::Lost);
    assert_eq!(
        h.lane.submit(h.now, RunRequest::new()),
        Err(SubmitError::LostAfterNotice { notice: notice() })
    );
    assert!(h.lane.device_lost());
    h.lane.check_invariants().unwrap();
}

#[test]
fn while_recovering_after_a_notice_a_submit_is_refused_with_the_notice() {
    let mut h = Harness::a2a3();
    // Hold the drain unanswered: feed the notice without pumping.
    assert!(h.lane.fault_notice(h.now, notice()));
    assert!(matches!(h.state(), LaneState::Recovering { step: RecoveryStep::Drain, .. }));
    assert_eq!(
        h.lane.submit(h.now, RunRequest::new()),
        Err(SubmitError::Suspect { notice: notice() })
    );
    h.lane.check_invariants().unwrap();
}

#[test]
fn a_close_while_suspect_gives_its_reservations_back_at_once() {
    // Found by the lane_sequences fuzzer: the close waits for the recovery the notice asked
    // for, but no submit can use a reservation any more, so it goes back at the close, as an
    // open lane's close gives it back; releasing it afterwards is refused, as there.
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let lease = h.lane.reserve(h.now).expect("a slot is free");
    h.take();
    assert!(h.notice(notice()));
    h.close();
    assert_eq!(
        h.state(),
        LaneState::Suspect { then: AfterRecovery::Close },
        "the close waits for r1's verdict and the recovery"
    );
    assert_eq!(h.lane.release(lease), Err(lane_core::LeaseError::NotReserved { lease }));
    // The recovery and the close then run as before.
    h.complete(r1);
    assert_eq!(recovery_in(&h.take()), RECOVERY);
}
