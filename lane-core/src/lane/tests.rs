//! `check_invariants` must catch what it names: each test corrupts one fact of a healthy
//! lane (reaching inside, which only this module can) and expects that violation.

use stream_pair::Owner;

use super::slots::SlotState;
use super::*;
use crate::error::InvariantViolation as V;
use crate::ids::SlotId;
use crate::outcome::{RunOutcome, Verdict};
use crate::testkit::Succeed;

/// A lane with run 1 awaited and run 2 launched behind it on a fresh pair.
fn two_in_flight() -> Lane {
    let mut lane = Lane::new(Profile::a2a3());
    let now = Timestamp(0);
    let mut backend = Succeed::new();
    for _ in 0..2 {
        lane.submit(now, RunRequest::new()).unwrap();
        while let Some(effect) = lane.poll_effect() {
            // Hold the await: both runs stay in flight.
            if !matches!(effect, Effect::AwaitCompletion { .. }) {
                if let Some(event) = backend.answer(effect) {
                    lane.handle(now, event).unwrap();
                }
            }
        }
    }
    lane.check_invariants().unwrap();
    lane
}

fn violation(lane: &Lane) -> V {
    lane.check_invariants().expect_err("corruption not caught")
}

#[test]
fn a_freed_slot_still_owned_by_a_live_run_is_caught() {
    let mut lane = two_in_flight();
    lane.slots.corrupt(SlotId(0), SlotState::Free);
    assert_eq!(violation(&lane), V::RunWithoutSlot { run: RunId(1) });
}

#[test]
fn a_slot_leased_to_a_run_that_does_not_hold_it_is_caught() {
    let mut lane = two_in_flight();
    let lease = lane.run(0).lease;
    lane.slots
        .corrupt(SlotId(0), SlotState::Leased { generation: lease.generation, run: RunId(2) });
    assert_eq!(violation(&lane), V::SlotHolderMismatch { slot: SlotId(0), run: RunId(2) });
}

#[test]
fn a_slot_beyond_the_profile_in_use_is_caught() {
    let mut lane = Lane::new(Profile::a2a3());
    let slot = SlotId(lane.profile.slots());
    lane.slots
        .corrupt(slot, SlotState::Reserved(crate::ids::Generation(core::num::NonZeroU64::MIN)));
    assert_eq!(violation(&lane), V::SlotBeyondProfile { slot });
}

#[test]
fn a_reservation_under_an_unminted_generation_is_caught() {
    let mut lane = Lane::new(Profile::a2a3());
    lane.slots.corrupt(
        SlotId(0),
        SlotState::Reserved(crate::ids::Generation(core::num::NonZeroU64::MIN)),
    );
    assert_eq!(violation(&lane), V::SlotGeneration { slot: SlotId(0) });
}

#[test]
fn a_run_on_the_pair_without_a_submission_is_caught() {
    let mut lane = two_in_flight();
    lane.pair.withdraw(Owner(2)).unwrap();
    assert_eq!(violation(&lane), V::RunOnPairWithoutSubmission);
}

#[test]
fn a_run_launched_before_its_predecessor_is_caught() {
    let mut lane = two_in_flight();
    lane.run_mut(0).phase = RunPhase::Prepared { readying_pair: false };
    // The pair still holds run 1's submission, which is the first thing checked.
    assert_eq!(violation(&lane), V::PairSubmissionsDiffer);
    lane.pair.withdraw(Owner(1)).unwrap();
    assert_eq!(violation(&lane), V::LaunchedBeforePredecessor { run: RunId(2) });
}

#[test]
fn two_awaited_runs_are_caught() {
    let mut lane = two_in_flight();
    lane.run_mut(1).phase = RunPhase::Awaiting { deadline: Timestamp(1), unfenced: None };
    assert_eq!(violation(&lane), V::AwaitedNotOldest { run: RunId(2) });
}

#[test]
fn a_lost_outcome_is_caught() {
    let mut lane = two_in_flight();
    lane.accepted += 1;
    assert_eq!(violation(&lane), V::OutcomeCount { accepted: 3, delivered: 0, pending: 2 });
}

#[test]
fn outcomes_out_of_order_are_caught() {
    let mut lane = two_in_flight();
    let outcome = |seq| {
        Outcome::Run(RunOutcome {
            run: RunId(seq),
            tag: None,
            verdict: Verdict::Cancelled,
            timing: None,
            key: None,
            declines: 0,
        })
    };
    lane.outcomes.push(outcome(9));
    lane.outcomes.push(outcome(8));
    lane.delivered += 2;
    lane.accepted += 2;
    assert_eq!(violation(&lane), V::OutcomesOutOfOrder);
}

#[test]
fn a_launch_on_a_stream_made_stale_by_a_publication_is_caught() {
    let mut lane = two_in_flight();
    lane.last_publication =
        Some(PublicationMark { seq: 0, aicore_creations: lane.pair.created_count() });
    assert_eq!(
        violation(&lane),
        V::LaunchedOnStaleAicore { run: RunId(1), publication: PublicationId(0) }
    );
}

#[test]
fn a_live_run_while_recovering_is_caught() {
    let mut lane = two_in_flight();
    lane.state = LaneState::Lost;
    assert_eq!(violation(&lane), V::LiveRunWhileRecovering);
}

#[test]
fn a_pending_effect_for_a_finished_run_is_caught() {
    let mut lane = two_in_flight();
    let lease = lane.run(0).lease;
    lane.effects.push(Effect::FinaliseRun {
        run: RunId(42),
        lease,
        copy_back: false,
        verdict: Verdict::Cancelled,
    });
    assert_eq!(violation(&lane), V::EffectForDoneRun { effect: "FinaliseRun", run: RunId(42) });
}

#[test]
fn a_refused_lane_decision_is_recorded_and_reported() {
    let mut lane = two_in_flight();
    // Run 2 is launched, not queued: the lane never decides `Prepare` for it.
    assert!(!lane.decide(1, RunInput::Prepare));
    assert!(matches!(lane.phase_of(RunId(2)), Some(RunPhase::Launched { .. })));
    assert_eq!(
        violation(&lane),
        V::StepRefused {
            run: RunId(2),
            phase: RunPhase::Launched { unfenced: None },
            input: RunInput::Prepare
        }
    );
}

#[test]
fn a_completion_retired_out_of_order_is_recorded_and_reported() {
    let mut lane = two_in_flight();
    // Run 1 is awaited; take its submission off the pair behind the lane's back so that its
    // completion finds nothing to retire.
    lane.pair.withdraw(Owner(1)).unwrap();
    let lease = lane.run(0).lease;
    lane.handle(
        Timestamp(0),
        Event::Completed { run: RunId(1), lease, evidence: status_latch::Evidence::PUBLISHED_OK },
    )
    .unwrap();
    assert_eq!(
        violation(&lane),
        V::RetiredOutOfOrder { run: RunId(1), retired: stream_pair::Retired::NotOwner }
    );
}

/// A run outcome with only its id set.
fn cancelled(seq: u64) -> Outcome {
    Outcome::Run(RunOutcome {
        run: RunId(seq),
        tag: None,
        verdict: Verdict::Cancelled,
        timing: None,
        key: None,
        declines: 0,
    })
}

#[test]
fn an_outcome_queued_but_never_counted_as_delivered_is_caught() {
    let mut lane = two_in_flight();
    lane.outcomes.push(cancelled(1));
    assert_eq!(violation(&lane), V::OutcomesOverDelivered);
}

#[test]
fn items_out_of_submission_order_are_caught() {
    let mut lane = two_in_flight();
    lane.items.swap(0, 1);
    assert_eq!(violation(&lane), V::ItemsOutOfOrder);
}

#[test]
fn a_finished_item_left_at_the_front_is_caught() {
    let mut lane = two_in_flight();
    lane.run_mut(0).phase = RunPhase::Done { verdict: Verdict::Ok };
    assert_eq!(violation(&lane), V::UndeliveredFront);
}

#[test]
fn two_slots_sharing_a_generation_are_caught() {
    let mut lane = two_in_flight();
    let generation = lane.run(0).lease.generation;
    lane.slots.corrupt(SlotId(1), SlotState::Leased { generation, run: RunId(2) });
    assert_eq!(violation(&lane), V::SlotGeneration { slot: SlotId(0) });
}

#[test]
fn more_runs_held_than_slots_is_caught() {
    let mut lane = two_in_flight();
    // A finished run held behind the two in flight: it needs no slot, but it counts.
    let lease = lane.run(1).lease;
    let mut done = RunRecord::queued(RunId(3), &RunRequest::new(), lease);
    done.phase = RunPhase::Done { verdict: Verdict::Ok };
    lane.items.push(Item::Run(done));
    lane.accepted += 1;
    assert_eq!(violation(&lane), V::OverCapacity);
}

#[test]
fn more_pending_publications_than_allowed_is_caught() {
    let mut lane = two_in_flight();
    for seq in 3..=u64::try_from(MAX_PENDING_PUBLICATIONS).unwrap() + 3 {
        lane.items.push(Item::Publication(PublicationRecord {
            id: PublicationId(seq),
            code: CodeRef(seq),
            phase: PublicationPhase::Waiting,
        }));
        lane.accepted += 1;
    }
    assert_eq!(violation(&lane), V::TooManyPublications);
}

#[test]
fn more_runs_on_the_pair_than_the_launch_depth_is_caught() {
    let mut lane = two_in_flight();
    // The same lane under a depth-one profile: two submissions on the pair are one too many.
    lane.profile = Profile::a2a3().with_stream_sync();
    assert_eq!(violation(&lane), V::PairOverDepth);
}

#[test]
fn a_run_launched_behind_an_unfinished_publication_is_caught() {
    let mut lane = Lane::new(Profile::a2a3());
    let now = Timestamp(0);
    let mut backend = Succeed::new();
    let drive = |lane: &mut Lane, backend: &mut Succeed| {
        while let Some(effect) = lane.poll_effect() {
            if !matches!(effect, Effect::AwaitCompletion { .. }) {
                if let Some(event) = backend.answer(effect) {
                    lane.handle(now, event).unwrap();
                }
            }
        }
    };
    lane.submit(now, RunRequest::new()).unwrap();
    drive(&mut lane, &mut backend);
    lane.publish(now, CodeRef(7)).unwrap();
    let run = lane.submit(now, RunRequest::new()).unwrap();
    drive(&mut lane, &mut backend);
    lane.check_invariants().unwrap();
    assert_eq!(
        lane.phase_of(run),
        Some(RunPhase::Queued { incompatible: false }),
        "waits behind the publication"
    );
    // Launched (its submission since retired) behind the waiting publication.
    let created = lane.pair.created_count();
    let r = lane.run_mut(2);
    r.phase = RunPhase::Finalising { verdict: Verdict::Ok };
    r.launched_on = Some(created);
    assert_eq!(violation(&lane), V::LaunchedBehindPublication { run });
}

#[test]
fn a_diagnostics_run_launched_next_to_another_is_caught() {
    let mut lane = two_in_flight();
    lane.run_mut(1).diagnostics = true;
    assert_eq!(violation(&lane), V::LaunchedWithDiagnostics { run: RunId(2) });
    // A diagnostics run ahead forbids a launch behind it just the same.
    let mut lane = two_in_flight();
    lane.run_mut(0).diagnostics = true;
    assert_eq!(violation(&lane), V::LaunchedWithDiagnostics { run: RunId(2) });
}

#[test]
fn recovering_without_a_poison_record_is_caught() {
    let mut lane = Lane::new(Profile::a2a3());
    lane.state = LaneState::Recovering {
        step: crate::state::RecoveryStep::Drain,
        attempt: 1,
        then: crate::state::AfterRecovery::Reopen,
    };
    assert_eq!(violation(&lane), V::RecoveringWithoutPoison);
}

/// A notice's recovery (L-19) needs both the notice and the flag saying it recovers: with
/// either missing, nothing explains the recovery or the suspicion.
#[test]
fn a_notice_recovery_or_suspicion_without_its_notice_is_caught() {
    let notice = crate::notice::FaultNotice {
        device: 0,
        stream_id: 3,
        code: status_latch::AclCode::from_raw(507_015).unwrap(),
    };
    let recovering = LaneState::Recovering {
        step: crate::state::RecoveryStep::Drain,
        attempt: 1,
        then: crate::state::AfterRecovery::Reopen,
    };
    let suspect = LaneState::Suspect { then: crate::state::AfterRecovery::Reopen };
    for state in [recovering, suspect] {
        for (recovers, held) in [(true, Some(notice)), (true, None), (false, Some(notice))] {
            let mut lane = Lane::new(Profile::a2a3());
            lane.state = state;
            lane.notice_recovery = recovers;
            lane.notice = held;
            let expected =
                if recovers && held.is_some() { Ok(()) } else { Err(V::RecoveringWithoutPoison) };
            assert_eq!(
                lane.check_invariants(),
                expected,
                "{state:?}, recovering for a notice: {recovers}, notice held: {}",
                held.is_some()
            );
        }
    }
}

#[test]
fn a_declined_launch_queued_behind_another_run_is_caught() {
    let mut lane = two_in_flight();
    lane.run_mut(1).declines = 1;
    assert_eq!(violation(&lane), V::DeclinedLaunchQueued { run: RunId(2) });
}

#[test]
fn a_closed_or_releasing_lane_with_pending_items_is_caught() {
    for state in [
        LaneState::Closed { device_lost: false, left: crate::StreamsLeft::NONE },
        LaneState::ReleasingStreams { round: 1, rounds: 2, left: crate::StreamsLeft::NONE },
    ] {
        let mut lane = two_in_flight();
        lane.state = state;
        assert_eq!(violation(&lane), V::ClosedWithItems, "{state:?}");
    }
}

#[test]
fn a_finished_publication_holds_back_no_launch() {
    // As in the test above, but the publication is done (cancelled, say): the run behind it
    // may be past launch.
    let mut lane = Lane::new(Profile::a2a3());
    let now = Timestamp(0);
    let mut backend = Succeed::new();
    lane.submit(now, RunRequest::new()).unwrap();
    while let Some(effect) = lane.poll_effect() {
        if !matches!(effect, Effect::AwaitCompletion { .. }) {
            if let Some(event) = backend.answer(effect) {
                lane.handle(now, event).unwrap();
            }
        }
    }
    lane.publish(now, CodeRef(7)).unwrap();
    lane.submit(now, RunRequest::new()).unwrap();
    if let Item::Publication(p) = &mut lane.items[1] {
        p.phase = PublicationPhase::Done { result: crate::PublicationResult::Cancelled };
    }
    lane.run_mut(2).phase = RunPhase::Finalising { verdict: Verdict::Ok };
    // Launched, on the streams run 1 launched on: the launch-order checks apply to it.
    lane.run_mut(2).launched_on = lane.run(0).launched_on;
    assert!(lane.run(2).launched_on.is_some());
    assert_eq!(lane.check_invariants(), Ok(()));
}

// ----- L-18 Overlap ----------------------------------------------------------------------

/// Runner work for `run` on `lease`, as if the driver had taken its effect.
fn work(run: RunId, lease: Lease, kind: super::work::WorkKind) -> super::work::RunnerWork {
    super::work::RunnerWork { run, lease, kind }
}

/// Two runs in flight, then run 1's completion fails: recovery drains, nothing out.
fn poisoned() -> Lane {
    let mut lane = two_in_flight();
    let lease = lane.run(0).lease;
    let code = status_latch::AclCode::from_raw(507_047).unwrap();
    lane.handle(Timestamp(0), Event::CompletionFailed { run: RunId(1), lease, code }).unwrap();
    lane.check_invariants().unwrap();
    lane
}

#[test]
fn runner_work_handed_out_twice_on_one_slot_is_recorded_and_reported() {
    let mut lane = Lane::new(Profile::a2a3());
    lane.submit(Timestamp(0), RunRequest::new()).unwrap();
    let prepare = lane.poll_effect().unwrap();
    super::work::hand_out(
        &mut lane.runner_work,
        &mut lane.bug,
        super::work::RunnerWork::of_effect(&prepare).unwrap(),
    );
    assert_eq!(violation(&lane), V::RunnerWorkOverlap { run: RunId(1) });
}

#[test]
fn runner_work_out_for_a_run_past_that_phase_is_caught() {
    let mut lane = two_in_flight();
    let lease = lane.run(0).lease;
    // Run 1 is awaited on the pair: a prepare out for it would overlap its launch.
    lane.runner_work[usize::from(lease.slot.0)] =
        Some(work(RunId(1), lease, super::work::WorkKind::Prepare));
    assert_eq!(violation(&lane), V::RunnerWorkOutOfPhase { run: RunId(1) });
}

#[test]
fn abandoned_runner_work_outside_a_quiesce_is_caught() {
    let mut lane = two_in_flight();
    let lease = lane.run(0).lease;
    lane.runner_work[usize::from(lease.slot.0)] =
        Some(work(RunId(99), lease, super::work::WorkKind::Finalise));
    assert_eq!(violation(&lane), V::RunnerWorkOutOfPhase { run: RunId(99) });
}

#[test]
fn more_runs_preparing_than_the_window_is_caught() {
    let mut lane = Lane::new(Profile::a2a3());
    lane.submit(Timestamp(0), RunRequest::new()).unwrap();
    lane.submit(Timestamp(0), RunRequest::new()).unwrap();
    assert_eq!(lane.run(1).phase, RunPhase::Queued { incompatible: false });
    lane.run_mut(1).phase = RunPhase::Preparing { cancel: false };
    assert_eq!(violation(&lane), V::PrepareWindowExceeded { run: RunId(2), runs: 1, window: 1 });
}

#[test]
fn an_upload_while_runner_work_is_out_is_caught() {
    let mut lane = Lane::new(Profile::a2a3());
    lane.publish(Timestamp(0), CodeRef(1)).unwrap();
    assert!(matches!(lane.poll_effect(), Some(Effect::UploadCode { .. })));
    let lease = lane.slots.reserve(0).unwrap();
    lane.runner_work[0] = Some(work(RunId(9), lease, super::work::WorkKind::Finalise));
    assert_eq!(violation(&lane), V::UploadWithRunnerWorkOut);
}

#[test]
fn a_recovery_step_while_runner_work_is_out_is_caught() {
    let mut lane = poisoned();
    assert!(matches!(
        lane.state,
        LaneState::Recovering { step: crate::state::RecoveryStep::Drain, .. }
    ));
    let lease =
        Lease { slot: SlotId(0), generation: crate::ids::Generation(core::num::NonZeroU64::MIN) };
    lane.runner_work[0] = Some(work(RunId(1), lease, super::work::WorkKind::Finalise));
    assert_eq!(violation(&lane), V::RecoveryWithRunnerWorkOut);
}

#[test]
fn quiescing_with_nothing_out_is_caught() {
    let mut lane = poisoned();
    lane.state = LaneState::Recovering {
        step: crate::state::RecoveryStep::Quiesce,
        attempt: 1,
        then: crate::state::AfterRecovery::Reopen,
    };
    assert_eq!(violation(&lane), V::QuiescingWithNothingOut);
}
