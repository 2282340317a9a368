//! The rendered transition tables are snapshot-tested: a behaviour change shows up as a
//! table diff in review (and `cargo xtask codegen` writes the same tables into docs/).

use lane_core::publication::{PublicationInput, PublicationPhase, publication_table};
use lane_core::run::{RunInput, RunPhase, run_phase_table, step};
use lane_core::state::{LaneInput, LaneState, lane_state_table, lane_step};

#[test]
fn run_phase_table_snapshot() {
    insta::assert_snapshot!(run_phase_table());
}

#[test]
fn lane_state_table_snapshot() {
    insta::assert_snapshot!(lane_state_table());
}

#[test]
fn publication_table_snapshot() {
    insta::assert_snapshot!(publication_table());
}

#[test]
fn every_publication_phase_is_reachable_and_every_live_one_can_be_abandoned() {
    use lane_core::publication::step;
    for phase in [PublicationPhase::Waiting, PublicationPhase::Uploading] {
        assert_eq!(
            step(phase, PublicationInput::Abandon),
            Ok(PublicationPhase::Done),
            "{phase:?}"
        );
    }
    assert_eq!(
        step(PublicationPhase::Waiting, PublicationInput::Upload),
        Ok(PublicationPhase::Uploading)
    );
    // An upload in flight finishes: close does not cancel it.
    assert!(step(PublicationPhase::Uploading, PublicationInput::Cancel).is_err());
    for input in PublicationInput::ALL {
        assert!(step(PublicationPhase::Done, input).is_err(), "{input:?}");
    }
    // No self-loop: every accepted input moves a publication on (the rendered table relies
    // on it and prints no "unchanged" row).
    for phase in PublicationPhase::ALL {
        for input in PublicationInput::ALL {
            assert_ne!(step(phase, input), Ok(phase), "{phase:?} x {input:?}");
        }
    }
}

#[test]
fn every_phase_is_reachable_from_queued_and_reaches_done() {
    // The table is a connected machine: no dead phase, no phase that cannot finish.
    let queued = RunPhase::Queued {
        incompatible: false,
    };
    let mut reached = vec![queued];
    let mut frontier = vec![queued];
    while let Some(phase) = frontier.pop() {
        for input in RunInput::ALL {
            if let Ok(next) = step(phase, input) {
                if !reached.contains(&next) {
                    reached.push(next);
                    frontier.push(next);
                }
            }
        }
    }
    for phase in RunPhase::ALL {
        assert!(reached.contains(&phase), "{phase:?} unreachable");
        assert!(
            phase == RunPhase::Done || step(phase, RunInput::Abandon) == Ok(RunPhase::Done),
            "{phase:?} cannot be abandoned"
        );
    }
}

#[test]
fn done_refuses_every_input() {
    for input in RunInput::ALL {
        assert!(step(RunPhase::Done, input).is_err(), "{input:?}");
    }
}

#[test]
fn recovery_always_ends_open_lost_or_closing_within_the_attempt_budget() {
    for attempts in 1..=5u8 {
        for failures in 0..=attempts {
            let mut state = lane_step(LaneState::Open, LaneInput::Poison, attempts).unwrap();
            let mut failed = 0;
            for _ in 0..(3 * usize::from(attempts) + 4) {
                let input = match state {
                    LaneState::Recovering { step, .. } => match step {
                        lane_core::RecoveryStep::Quiesce => LaneInput::Quiesced,
                        lane_core::RecoveryStep::Drain => LaneInput::Drained,
                        lane_core::RecoveryStep::Reset => LaneInput::ResetDone,
                        lane_core::RecoveryStep::Probe if failed < failures => {
                            failed += 1;
                            LaneInput::ProbeFailed
                        }
                        lane_core::RecoveryStep::Probe => LaneInput::ProbePassed,
                    },
                    _ => break,
                };
                state = lane_step(state, input, attempts).unwrap();
            }
            let want = if failures >= attempts {
                LaneState::Lost
            } else {
                LaneState::Open
            };
            assert_eq!(state, want, "attempts {attempts} failures {failures}");
        }
    }
}

/// The phases the run table says a run is in right after the lane emits `effect` for it.
fn phases_after(effect: &str) -> Vec<RunPhase> {
    let mut phases = Vec::new();
    for phase in RunPhase::ALL {
        for input in RunInput::ALL {
            if let Ok(next) = step(phase, input) {
                let emitted = lane_core::run::effects(input, next);
                if next != phase && emitted.contains(&format!("`{effect}`")) {
                    phases.push(next);
                }
            }
        }
    }
    phases
}

#[test]
fn the_run_tables_effects_column_matches_what_the_lane_emits() {
    use lane_core::testkit::Succeed;
    use lane_core::{Lane, Profile, RunRequest, Timestamp};

    let mut lane = Lane::new(Profile::a2a3());
    let mut backend = Succeed::new();
    let now = Timestamp(0);
    let mut checked = Vec::new();
    // Two runs queued two deep through their whole healthy cycle.
    for _ in 0..2 {
        lane.submit(now, RunRequest::new()).unwrap();
    }
    while let Some(effect) = lane.poll_effect() {
        if let Some(run) = effect.run() {
            let phase = lane.phase_of(run).expect("an effect names a live run");
            assert!(
                phases_after(effect.name()).contains(&phase),
                "{effect} left {run} in {phase:?}, which the table does not list for it"
            );
            if !checked.contains(&effect.name()) {
                checked.push(effect.name());
            }
        }
        lane.handle(now, backend.answer(effect)).unwrap();
    }
    checked.sort_unstable();
    assert_eq!(
        checked,
        [
            "AwaitCompletion",
            "FinaliseRun",
            "LaunchRun",
            "PrepareRun",
            "ReadStatus"
        ]
    );
}
