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
                lane.handle(now, backend.answer(effect)).unwrap();
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
    lane.slots.corrupt(
        SlotId(0),
        SlotState::Leased {
            generation: lease.generation,
            run: RunId(2),
        },
    );
    assert_eq!(
        violation(&lane),
        V::SlotHolderMismatch {
            slot: SlotId(0),
            run: RunId(2)
        }
    );
}

#[test]
fn a_slot_beyond_the_profile_in_use_is_caught() {
    let mut lane = Lane::new(Profile::a2a3());
    let slot = SlotId(lane.profile.slots());
    lane.slots.corrupt(
        slot,
        SlotState::Reserved(crate::ids::Generation(core::num::NonZeroU64::MIN)),
    );
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
    lane.run_mut(0).phase = RunPhase::Prepared;
    // The pair still holds run 1's submission, which is the first thing checked.
    assert_eq!(violation(&lane), V::PairSubmissionsDiffer);
    lane.pair.withdraw(Owner(1)).unwrap();
    assert_eq!(
        violation(&lane),
        V::LaunchedBeforePredecessor { run: RunId(2) }
    );
}

#[test]
fn two_awaited_runs_are_caught() {
    let mut lane = two_in_flight();
    lane.run_mut(1).phase = RunPhase::Awaiting;
    assert_eq!(violation(&lane), V::AwaitedNotOldest { run: RunId(2) });
}

#[test]
fn a_lost_outcome_is_caught() {
    let mut lane = two_in_flight();
    lane.accepted += 1;
    assert_eq!(
        violation(&lane),
        V::OutcomeCount {
            accepted: 3,
            delivered: 0,
            pending: 2
        }
    );
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
    lane.last_publication = Some(PublicationMark {
        seq: 0,
        aicore_creations: lane.pair.created_count(),
    });
    assert_eq!(
        violation(&lane),
        V::LaunchedOnStaleAicore {
            run: RunId(1),
            publication: PublicationId(0)
        }
    );
}

#[test]
fn a_live_run_while_recovering_is_caught() {
    let mut lane = two_in_flight();
    lane.state = LaneState::Lost;
    assert_eq!(violation(&lane), V::LostWithoutFailedRecovery);
    lane.device_lost = true;
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
    });
    assert_eq!(
        violation(&lane),
        V::EffectForDoneRun {
            effect: "FinaliseRun",
            run: RunId(42)
        }
    );
}

#[test]
fn a_refused_lane_decision_is_recorded_and_reported() {
    let mut lane = two_in_flight();
    // Run 2 is launched, not queued: the lane never decides `Prepare` for it.
    assert!(lane.decide(1, RunInput::Prepare).is_none());
    assert_eq!(lane.phase_of(RunId(2)), Some(RunPhase::Launched));
    assert_eq!(
        violation(&lane),
        V::StepRefused {
            run: RunId(2),
            phase: RunPhase::Launched,
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
        Event::Completed {
            run: RunId(1),
            lease,
        },
    )
    .unwrap();
    assert_eq!(
        violation(&lane),
        V::RetiredOutOfOrder {
            run: RunId(1),
            retired: stream_pair::Retired::NotOwner
        }
    );
}
