//! The rendered transition tables are committed once, as docs/state-machines/*.md, written
//! by `cargo xtask codegen`: a behaviour change shows up as a table diff in review. The first
//! test checks the committed tables are the rendering (as xtask's `generated_docs_are_current`
//! does for the workspace); src/table.rs's tests check that each table renders every (state,
//! input) pair exactly once. The rest check the machines' rules that no single row shows,
//! over every row.

use lane_core::Recovery;
use lane_core::Verdict;
use lane_core::publication::{PublicationInput, PublicationPhase, publication_table};
use lane_core::run::{RunAction, RunInput, RunPhase, run_phase_table, step};
use lane_core::state::{
    LaneAction, LaneInput, LaneRefusal, LaneState, lane_state_table, lane_step,
};

/// Fails unless the generated doc at `path` (from the workspace root) holds `rendered` below
/// its header.
fn assert_committed(path: &str, rendered: &str) {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let doc = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let body = doc.split_once("-->\n\n").map_or("", |(_, body)| body);
    let want = format!("{}\n", rendered.trim_end());
    if body != want {
        let at = body
            .lines()
            .zip(want.lines())
            .position(|(have, want)| have != want)
            .unwrap_or_else(|| body.lines().count().min(want.lines().count()));
        panic!(
            "{path} is not the rendering from its body's line {}: run `cargo xtask codegen` \
             and review the diff",
            at + 1
        );
    }
}

#[test]
fn the_committed_tables_are_the_rendering() {
    assert_committed("docs/state-machines/run-phase.md", &run_phase_table());
    assert_committed("docs/state-machines/publication.md", &publication_table());
    assert_committed("docs/state-machines/lane.md", &lane_state_table());
}

#[test]
fn every_publication_phase_is_reachable_and_every_live_one_can_be_abandoned() {
    use lane_core::publication::{PublicationAction, step};
    use lane_core::{Cause, PublicationResult};
    let abandoned = PublicationResult::Failed { cause: lane_core::run::representative::poison() };
    let done = |result| PublicationPhase::Done { result };
    for phase in [PublicationPhase::Waiting, PublicationPhase::Uploading] {
        assert_eq!(
            step(phase, PublicationInput::Abandon(abandoned)),
            Ok((done(abandoned), PublicationAction::None)),
            "{phase:?}"
        );
    }
    assert_eq!(
        step(PublicationPhase::Waiting, PublicationInput::Upload),
        Ok((PublicationPhase::Uploading, PublicationAction::Upload))
    );
    // Uploaded or not, the answer leaves the AICore stream stale (L-12), with its result.
    let cause: Cause = lane_core::run::representative::run_only();
    assert_eq!(
        step(PublicationPhase::Uploading, PublicationInput::Uploaded),
        Ok((done(PublicationResult::Uploaded), PublicationAction::MarkStale))
    );
    assert_eq!(
        step(PublicationPhase::Uploading, PublicationInput::UploadFailed(cause)),
        Ok((done(PublicationResult::Failed { cause }), PublicationAction::MarkStale))
    );
    assert_eq!(
        step(PublicationPhase::Waiting, PublicationInput::Cancel),
        Ok((done(PublicationResult::Cancelled), PublicationAction::None))
    );
    // An upload in flight finishes: close does not cancel it.
    assert!(step(PublicationPhase::Uploading, PublicationInput::Cancel).is_err());
    for input in PublicationInput::all() {
        assert!(step(done(PublicationResult::Uploaded), input).is_err(), "{input:?}");
    }
    // No self-loop: every accepted input moves a publication on (the rendered table relies
    // on it and prints no "unchanged" row).
    for phase in PublicationPhase::ALL {
        for input in PublicationInput::all() {
            if let Ok((next, _)) = step(phase, input) {
                assert_ne!(next.label(), phase.label(), "{phase:?} x {input:?}");
            }
        }
    }
}

#[test]
fn every_phase_is_reachable_from_queued_and_reaches_done() {
    // The table is a connected machine: no dead phase, no phase that cannot finish. Phases
    // are compared by their table label (their shape: the values they hold are data).
    let queued = RunPhase::Queued { incompatible: false };
    let mut reached = vec![queued];
    let mut frontier = vec![queued];
    while let Some(phase) = frontier.pop() {
        for input in RunInput::all() {
            if let Ok((next, _)) = step(phase, input) {
                if !reached.iter().any(|p| p.label() == next.label()) {
                    reached.push(next);
                    frontier.push(next);
                }
            }
        }
    }
    let abandoned = lane_core::run::representative::poisoned();
    for phase in RunPhase::all() {
        assert!(
            reached.iter().any(|p| p.label() == phase.label()),
            "{} unreachable",
            phase.label()
        );
        assert!(
            phase.is_done()
                || step(phase, RunInput::Abandon(abandoned))
                    == Ok((RunPhase::Done { verdict: abandoned }, RunAction::Settle)),
            "{} cannot be abandoned",
            phase.label()
        );
    }
}

#[test]
fn done_refuses_every_input_whatever_its_verdict() {
    let cause = lane_core::run::representative::run_only();
    for verdict in [
        Verdict::Ok,
        Verdict::Cancelled,
        Verdict::Failed { cause },
        lane_core::run::representative::poisoned(),
    ] {
        for input in RunInput::all() {
            assert!(step(RunPhase::Done { verdict }, input).is_err(), "{input:?}");
        }
    }
}

#[test]
fn a_failed_finalise_fails_an_ok_run_but_an_earlier_failure_or_a_cancel_stands() {
    let (run_only, poison) =
        (lane_core::run::representative::run_only(), lane_core::run::representative::poison());
    let earlier = lane_core::Cause::of(lane_core::status_latch::Failure::NoRecord);
    let finalising = |verdict| RunPhase::Finalising { verdict };
    let done = |verdict| RunPhase::Done { verdict };
    for (pending, want) in [
        (Verdict::Ok, Verdict::Failed { cause: run_only }),
        (Verdict::Failed { cause: earlier }, Verdict::Failed { cause: earlier }),
        (Verdict::Cancelled, Verdict::Cancelled),
    ] {
        assert_eq!(
            step(finalising(pending), RunInput::FinaliseFailed(run_only)),
            Ok((done(want), RunAction::Settle))
        );
        // A finalise that poisons fails the run with its own cause, whatever was pending.
        assert_eq!(
            step(finalising(pending), RunInput::FinaliseFailed(poison)),
            Ok((done(Verdict::Failed { cause: poison }), RunAction::Poison))
        );
        assert_eq!(
            step(finalising(pending), RunInput::Finalised),
            Ok((done(pending), RunAction::Settle))
        );
    }
}

#[test]
fn only_the_run_readying_the_pair_fails_with_a_stream_failure() {
    let cause = lane_core::run::representative::run_only();
    let waiting = step(RunPhase::Prepared { readying_pair: false }, RunInput::ReadyPair).unwrap().0;
    assert_eq!(waiting, RunPhase::Prepared { readying_pair: true });
    assert_eq!(
        step(waiting, RunInput::StreamsFailed(cause)),
        Ok((RunPhase::Finalising { verdict: Verdict::Failed { cause } }, RunAction::Finalise))
    );
    assert!(
        step(RunPhase::Prepared { readying_pair: false }, RunInput::StreamsFailed(cause)).is_err()
    );
}

#[test]
fn the_teardown_records_each_failed_destroy_in_its_state_and_closes_with_the_survivors() {
    use lane_core::StreamsLeft;
    use lane_core::status_latch::AclCode;
    use lane_core::stream_pair::Role;
    let attempts = 3;
    let step = |state, input| lane_step(state, input, attempts, Recovery::InPlace).unwrap();
    let (state, action) = step(LaneState::Closing, LaneInput::Idle);
    assert_eq!(action, LaneAction::TearDown);
    let (state, action) = step(state, LaneInput::DestroyRound);
    assert_eq!(action, LaneAction::DestroyRound);
    let code = AclCode::RtParamInvalid;
    let (state, action) = step(state, LaneInput::DestroyFailed { role: Role::Aicpu, code });
    assert_eq!(action, LaneAction::None);
    let left = StreamsLeft { aicpu: Some(code), aicore: None };
    assert_eq!(
        state,
        LaneState::ReleasingStreams { round: 1, rounds: lane_core::TEARDOWN_ATTEMPTS, left }
    );
    let (closed, _) = step(state, LaneInput::StreamsLeft(left));
    assert_eq!(closed, LaneState::Closed { device_lost: false, left });
    // A retry destroys the survivors once more; with nothing left there is nothing to retry.
    assert_eq!(
        step(closed, LaneInput::RetryTeardown),
        (LaneState::ReleasingStreams { round: 0, rounds: 1, left }, LaneAction::TearDown)
    );
    let released = LaneState::Closed { device_lost: false, left: StreamsLeft::NONE };
    assert!(lane_step(released, LaneInput::RetryTeardown, attempts, Recovery::InPlace).is_err());
    // An empty survivor list is not a teardown that left streams.
    assert!(
        lane_step(state, LaneInput::StreamsLeft(StreamsLeft::NONE), attempts, Recovery::InPlace,)
            .is_err()
    );
}

#[test]
fn with_the_runtimes_recovery_a_quiesced_poison_hands_the_device_over_and_only_its_reset_reopens() {
    use lane_core::AfterRecovery;
    use lane_core::RecoveryStep as R;
    let attempts = 3;
    let step = |state, input| lane_step(state, input, attempts, Recovery::Runtime);
    let quiescing = |then| LaneState::Recovering { step: R::Quiesce, attempt: 1, then };
    // No drain, reset or probe: the runner is told once, and the lane waits.
    assert_eq!(
        step(quiescing(AfterRecovery::Reopen), LaneInput::Quiesced),
        Ok((LaneState::Unusable, LaneAction::HandOver))
    );
    // A close asked during the recovery ends the lane at once, the runtime still told.
    assert_eq!(
        step(quiescing(AfterRecovery::Close), LaneInput::Quiesced),
        Ok((
            LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE },
            LaneAction::HandOver
        ))
    );
    assert_eq!(
        step(LaneState::Unusable, LaneInput::DeviceReset),
        Ok((LaneState::Open, LaneAction::AdoptReset))
    );
    for input in [LaneInput::Submit, LaneInput::Publish] {
        assert_eq!(step(LaneState::Unusable, input), Err(LaneRefusal::Unusable));
    }
    // Nothing but the runtime's report leaves `Unusable` (a close ends the lane).
    for input in LaneInput::ALL {
        if let Ok((next, _)) = step(LaneState::Unusable, input) {
            assert!(
                matches!(
                    (input, next),
                    (LaneInput::DeviceReset, LaneState::Open)
                        | (LaneInput::Close, LaneState::Closed { .. })
                        | (_, LaneState::Unusable)
                ),
                "{input:?} -> {next:?}"
            );
        }
    }
    // The report is refused wherever no reset is awaited, in either setting.
    for recovery in [Recovery::InPlace, Recovery::Runtime] {
        for state in [LaneState::Open, LaneState::Closing, quiescing(AfterRecovery::Reopen)] {
            assert!(lane_step(state, LaneInput::DeviceReset, attempts, recovery).is_err());
        }
    }
}

#[test]
fn recovery_always_ends_open_lost_or_closing_within_the_attempt_budget() {
    for attempts in 1..=5u8 {
        for failures in 0..=attempts {
            let mut state =
                lane_step(LaneState::Open, LaneInput::Poison, attempts, Recovery::InPlace)
                    .unwrap()
                    .0;
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
                state = lane_step(state, input, attempts, Recovery::InPlace).unwrap().0;
            }
            let want = if failures >= attempts { LaneState::Lost } else { LaneState::Open };
            assert_eq!(state, want, "attempts {attempts} failures {failures}");
        }
    }
}

#[test]
fn entering_each_recovery_step_emits_that_steps_effect_and_nothing_else_does() {
    use lane_core::RecoveryStep as R;
    let attempts = 3;
    for state in [LaneState::Open, LaneState::Closing] {
        for input in LaneInput::ALL {
            let Ok((next, action)) = lane_step(state, input, attempts, Recovery::InPlace) else {
                continue;
            };
            let want = match next {
                LaneState::Recovering { step: R::Quiesce, .. } => LaneAction::Quiesce,
                _ if state == LaneState::Open && next == LaneState::Closing => {
                    LaneAction::CancelUnlaunched
                }
                LaneState::ReleasingStreams { .. } => LaneAction::TearDown,
                _ => LaneAction::None,
            };
            assert_eq!(action, want, "{state:?} x {input:?}");
        }
    }
    let recovering = |step, attempt| LaneState::Recovering {
        step,
        attempt,
        then: lane_core::AfterRecovery::Reopen,
    };
    for (state, input, want) in [
        (recovering(R::Quiesce, 1), LaneInput::Quiesced, LaneAction::BeginReset),
        (recovering(R::Drain, 1), LaneInput::Drained, LaneAction::Reset),
        (recovering(R::Reset, 1), LaneInput::ResetDone, LaneAction::Probe),
        (recovering(R::Reset, 1), LaneInput::ResetFailed, LaneAction::Drain),
        (recovering(R::Probe, 1), LaneInput::ProbeFailed, LaneAction::Drain),
        (
            recovering(R::Probe, 3),
            LaneInput::ProbeFailed,
            LaneAction::AfterReset { recovered: false },
        ),
        (
            recovering(R::Probe, 1),
            LaneInput::ProbePassed,
            LaneAction::AfterReset { recovered: true },
        ),
    ] {
        assert_eq!(lane_step(state, input, attempts, Recovery::InPlace).unwrap().1, want);
    }
}

/// The phases (by table label) the run table says a run is in right after the lane emits
/// `effect` for it: the transitions whose action's description names it.
fn phases_after(effect: &str) -> Vec<String> {
    let mut phases = Vec::new();
    for phase in RunPhase::all() {
        for input in RunInput::all() {
            if let Ok((next, action)) = step(phase, input) {
                if next != phase && action.describe(next).contains(&format!("`{effect}`")) {
                    phases.push(next.label());
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
                phases_after(effect.name()).contains(&phase.label()),
                "{effect} left {run} in {}, which the table does not list for it",
                phase.label()
            );
            if !checked.contains(&effect.name()) {
                checked.push(effect.name());
            }
        }
        if let Some(event) = backend.answer(effect) {
            lane.handle(now, event).unwrap();
        }
    }
    checked.sort_unstable();
    assert_eq!(
        checked,
        ["AwaitCompletion", "FinaliseRun", "LaunchRun", "PrepareRun", "ReadStatus"]
    );
}
