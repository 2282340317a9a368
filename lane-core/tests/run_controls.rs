//! Issue 45's run controls and launch control in the core: a held submit and `activate`,
//! `cancel` of an unlaunched item, a run's state, an ordering key (L-2 as amended), a
//! declined queued launch, the runtime's epoch at submit, finalise told the verdict, and
//! `FinaliseOrder::BeforeNextLaunch`.

mod common;

use common::{Fault, Harness, has};
use lane_core::publication::PublicationPhase;
use lane_core::{
    ControlError, EpochRefusal, FinaliseOrder, OrderKey, Profile, ProfileSpec, PublicationResult,
    RunId, RunRequest, RunState, SubmitError, Verdict,
};

/// a2a3 with three slots: two runs on the pair and one staged beside them.
fn three_slots() -> Harness {
    Harness::new(
        Profile::custom(ProfileSpec { slots: 3, ..Profile::a2a3().spec() })
            .expect("three slots at depth two"),
    )
}

/// a2a3 with four slots: two runs on the pair, one staged and one queued.
fn four_slots() -> Harness {
    Harness::new(
        Profile::custom(ProfileSpec { slots: 4, ..Profile::a2a3().spec() })
            .expect("four slots at depth two"),
    )
}

fn launches(log: &[String]) -> Vec<String> {
    log.iter()
        .filter(|line| line.starts_with("LaunchRun"))
        .map(|line| line.split(" (").next().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_held_run_is_prepared_while_the_first_runs_and_launched_only_after_activate() {
    let mut h = Harness::a2a3();
    let first = h.run();
    let held = h.submit(RunRequest::new().held());
    let log = h.take();
    assert!(has(&log, "PrepareRun run 2"), "{log:?}");
    assert!(!has(&log, "LaunchRun run 2"), "a held run never launches: {log:?}");
    let status = h.lane.run_status(held).expect("pending");
    assert_eq!((status.state, status.held), (RunState::Prepared, true));

    h.lane.activate(h.now, held).expect("held");
    h.pump();
    // Queued behind the first run on the pair, as any successor (L-18).
    assert_eq!(launches(&h.take()), ["LaunchRun run 2"], "activated while the first runs");
    assert!(h.lane.run_status(held).is_some_and(|s| !s.held));
    assert_eq!(
        h.lane.activate(h.now, held),
        Err(ControlError::NotHeld { run: held }),
        "activated twice"
    );
    h.complete(first);
    h.complete(held);
    assert_eq!(h.verdict(held), Some(Verdict::Ok));
}

#[test]
fn runs_behind_a_held_run_wait_for_its_activation() {
    let mut h = three_slots();
    let held = h.submit(RunRequest::new().held());
    let behind = h.run();
    assert!(!has(&h.take(), "LaunchRun"), "nothing launches ahead of the held run (L-2)");
    h.lane.activate(h.now, held).expect("held");
    h.pump();
    assert_eq!(launches(&h.take()), ["LaunchRun run 1", "LaunchRun run 2"]);
    h.complete_all();
    assert_eq!(h.outcome_order(), [held.0, behind.0]);
}

#[test]
fn an_earlier_key_submitted_later_runs_before_a_staged_unlaunched_successor() {
    let mut h = three_slots();
    let first = h.submit(RunRequest::new().keyed(10));
    // Staged: prepared, held, not launched; it fills the prepare window of one.
    let staged = h.submit(RunRequest::new().keyed(30).held());
    let earlier = h.submit(RunRequest::new().keyed(20));
    let log = h.take();
    // The earlier key prepares in the staged run's place and launches behind the first run.
    assert!(has(&log, "PrepareRun run 3"), "{log:?}");
    assert_eq!(launches(&log), ["LaunchRun run 1", "LaunchRun run 3"], "{log:?}");
    h.lane.activate(h.now, staged).expect("held");
    h.pump();
    h.complete_all();
    h.complete_all();
    assert_eq!(
        h.outcome_order(),
        [first.0, earlier.0, staged.0],
        "outcomes come in key order (L-2 by key)"
    );
    let outcome = h.run_outcome(earlier).expect("delivered");
    assert_eq!(outcome.key, Some(OrderKey(20)));
    assert!(
        h.outcomes.iter().all(|o| matches!(
            o,
            lane_core::Outcome::Run(r) if r.verdict == Verdict::Ok
        )),
        "{:?}",
        h.outcomes
    );
}

#[test]
fn a_keyed_run_never_passes_a_launched_run_a_keyless_run_or_a_publication() {
    let mut h = Harness::new(
        Profile::custom(ProfileSpec { slots: 4, ..Profile::depth_one().spec() })
            .expect("four slots at depth one"),
    );
    let launched = h.submit(RunRequest::new().keyed(50));
    let keyless = h.submit(RunRequest::new().held());
    let publication = h.publish(7);
    let late = h.submit(RunRequest::new().keyed(1));
    h.lane.activate(h.now, keyless).expect("held");
    h.pump();
    for _ in 0..4 {
        h.complete_all();
    }
    assert_eq!(
        h.outcome_order(),
        [launched.0, keyless.0, publication.0, late.0],
        "the earliest key stays behind what it may not pass"
    );
}

#[test]
fn cancel_of_a_queued_run_makes_it_cancelled_with_no_runner_call() {
    // The held run fills the prepare window: the fourth waits, queued.
    let mut h4 = four_slots();
    let first = h4.run();
    let second = h4.run();
    let staged = h4.submit(RunRequest::new().held());
    let queued = h4.run();
    assert_eq!(h4.lane.run_status(queued).map(|s| s.state), Some(RunState::Queued));
    h4.take();
    h4.lane.cancel(h4.now, queued).expect("queued");
    h4.pump();
    let log = h4.take();
    assert!(!has(&log, "PrepareRun run 4"), "{log:?}");
    assert!(!has(&log, "FinaliseRun run 4"), "nothing to finalise: {log:?}");
    h4.lane.activate(h4.now, staged).expect("held");
    h4.pump();
    for _ in 0..3 {
        h4.complete_all();
    }
    assert_eq!(h4.verdict(queued), Some(Verdict::Cancelled));
    assert_eq!(h4.outcome_order(), [first.0, second.0, staged.0, queued.0]);
}

#[test]
fn cancel_of_a_prepared_run_finalises_it_without_copy_back_and_it_gets_cancelled() {
    let mut h = Harness::a2a3();
    let first = h.run();
    let prepared = h.submit(RunRequest::new().held());
    h.take();
    h.lane.cancel(h.now, prepared).expect("prepared, unlaunched");
    h.pump();
    let log = h.take();
    assert_eq!(log, ["FinaliseRun run 2"], "L-7: its events released");
    assert_eq!(h.lane.cancel(h.now, prepared), Ok(()), "a second cancel changes nothing");
    h.complete(first);
    assert_eq!(h.verdict(prepared), Some(Verdict::Cancelled));
    assert_eq!(h.outcome_order(), [first.0, prepared.0]);
}

#[test]
fn cancel_of_a_launched_run_is_refused_and_it_gets_its_own_verdict() {
    let mut h = Harness::a2a3();
    let launched = h.run();
    assert_eq!(h.lane.cancel(h.now, launched), Err(ControlError::Launched { run: launched }));
    h.complete(launched);
    assert_eq!(h.verdict(launched), Some(Verdict::Ok));
    assert_eq!(
        h.lane.cancel(h.now, launched),
        Err(ControlError::Unknown { item: launched.0 }),
        "delivered"
    );
    assert_eq!(h.lane.activate(h.now, RunId(99)), Err(ControlError::Unknown { item: 99 }));
}

#[test]
fn cancel_while_the_prepare_is_out_cancels_the_run_when_it_answers() {
    let mut h = Harness::a2a3();
    h.lane.submit(h.now, RunRequest::new()).expect("open");
    let Some(lane_core::Effect::PrepareRun { run, lease, .. }) = h.lane.poll_effect() else {
        panic!("a prepare");
    };
    h.lane.cancel(h.now, run).expect("preparing");
    assert_eq!(h.lane.run_status(run).map(|s| s.state), Some(RunState::Preparing));
    h.feed(lane_core::Event::Prepared { run, lease }).expect("the prepare's answer");
    assert_eq!(h.take(), ["FinaliseRun run 1"]);
    assert_eq!(h.verdict(run), Some(Verdict::Cancelled));
}

#[test]
fn cancel_of_a_waiting_publication_uploads_nothing() {
    let mut h = Harness::a2a3();
    let run = h.run();
    let publication = h.publish(3);
    h.lane.cancel_publication(h.now, publication).expect("waiting");
    h.complete(run);
    assert!(!has(&h.take(), "UploadCode"));
    assert_eq!(h.publication(publication), Some(PublicationResult::Cancelled));
}

#[test]
fn a_declined_queued_launch_launches_once_its_predecessor_retired_and_the_outcome_counts_it() {
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchDeclined(2, 1));
    let first = h.run();
    let declined = h.run();
    let log = h.take();
    // Asked once behind the first run and declined: not a failure, nothing stale.
    assert_eq!(launches(&log), ["LaunchRun run 1", "LaunchRun run 2"], "{log:?}");
    assert_eq!(
        h.lane.run_status(declined).map(|s| (s.state, s.declines)),
        Some((RunState::Prepared, 1))
    );
    assert_eq!(h.lane.pair().submissions().len(), 1, "withdrawn from the pair");
    h.complete(first);
    let log = h.take();
    // Launched again once the first retired, onto an empty pair: no wait on a boundary.
    let relaunch = log
        .iter()
        .find(|line| line.starts_with("LaunchRun run 2"))
        .unwrap_or_else(|| panic!("relaunched: {log:?}"));
    assert!(!relaunch.contains("after"), "{relaunch}");
    h.complete(declined);
    let outcome = h.run_outcome(declined).expect("delivered");
    assert_eq!((outcome.verdict, outcome.declines), (Verdict::Ok, 1));
    assert_eq!(h.lane.pair().created_count(), 1, "no stream replaced");
}

#[test]
fn a_declined_launch_with_nothing_ahead_fails_its_run_not_started_and_run_only() {
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchDeclined(1, 1));
    let alone = h.run();
    let log = h.take();
    assert!(has(&log, "FinaliseRun run 1"), "{log:?}");
    let outcome = h.run_outcome(alone).expect("delivered");
    assert_eq!(outcome.verdict, Verdict::Failed { cause: lane_core::run::declined_alone() });
    assert_eq!(outcome.declines, 1);
    // The lane goes on.
    let next = h.run();
    h.complete(next);
    assert_eq!(h.verdict(next), Some(Verdict::Ok));
}

#[test]
fn finalise_is_told_the_verdict_it_makes_final() {
    let mut lane = lane_core::Lane::new(Profile::a2a3());
    let now = lane_core::Timestamp(0);
    let run = lane.submit(now, RunRequest::new()).expect("open");
    let mut backend = lane_core::testkit::Succeed::new();
    let mut told = Vec::new();
    while let Some(effect) = lane.poll_effect() {
        if let lane_core::Effect::FinaliseRun { verdict, copy_back, .. } = effect {
            told.push((verdict, copy_back));
        }
        // Its AICore launch fails with a bad argument: run-only, not started.
        let event = match effect {
            lane_core::Effect::LaunchRun { run, lease, .. } => lane_core::Event::LaunchFailed {
                run,
                lease,
                step: lane_core::LaunchStep::Aicore,
                code: common::returned(107_000),
            },
            other => match backend.answer(other) {
                Some(event) => event,
                None => continue,
            },
        };
        lane.handle(now, event).expect("answers");
    }
    let [(Verdict::Failed { cause }, false)] = told[..] else {
        panic!("finalise told {told:?}");
    };
    assert_eq!(cause.code(), Some(107_000));
    assert_eq!(cause.class(), lane_core::status_latch::Class::RunOnly);
    let Some(lane_core::Outcome::Run(outcome)) = lane.poll_outcome() else {
        panic!("an outcome");
    };
    assert_eq!((outcome.run, outcome.verdict), (run, Verdict::Failed { cause }));
}

#[test]
fn with_finalise_before_the_next_launch_a_run_launches_only_after_its_predecessor_finalised() {
    let profile = Profile::custom(ProfileSpec {
        finalise: FinaliseOrder::BeforeNextLaunch,
        ..Profile::depth_one().spec()
    })
    .expect("depth one");
    let mut h = Harness::new(profile);
    let first = h.run();
    let second = h.run();
    h.complete(first);
    h.complete(second);
    let log = h.take();
    let at = |prefix: &str| {
        log.iter()
            .position(|line| line.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {log:?}"))
    };
    assert!(at("PrepareRun run 2") < at("ReadStatus run 1"), "prepare overlaps");
    assert!(
        at("FinaliseRun run 1") < at("LaunchRun run 2"),
        "finalise(N) before launch(N+1): {log:?}"
    );
    // Overlapped (the default) launches the second as soon as the first retired, before its
    // finalise.
    let mut h = Harness::depth_one();
    let first = h.run();
    let second = h.run();
    h.complete(first);
    h.complete(second);
    let log = h.take();
    let at = |prefix: &str| log.iter().position(|line| line.starts_with(prefix));
    assert!(at("LaunchRun run 2") < at("FinaliseRun run 1"), "{log:?}");
}

#[test]
fn a_runtime_epoch_reaches_the_launch_and_zero_a_repeat_or_a_mix_is_refused() {
    let mut h = Harness::a2a3();
    let refused = |refusal| SubmitError::Epoch { epoch: 0, refusal };
    assert_eq!(
        h.lane.submit(h.now, RunRequest::new().with_epoch(0)),
        Err(refused(EpochRefusal::Zero))
    );
    let run = h.submit(RunRequest::new().with_epoch(41));
    assert!(
        h.take()
            .iter()
            .any(|line| line.starts_with("LaunchRun run 1") && line.ends_with("epoch 41")),
    );
    assert_eq!(
        h.lane.submit(h.now, RunRequest::new().with_epoch(41)),
        Err(SubmitError::Epoch { epoch: 41, refusal: EpochRefusal::NotAbove { last: 41 } }),
        "a repeat"
    );
    assert_eq!(
        h.lane.submit(h.now, RunRequest::new()),
        Err(refused(EpochRefusal::Mixed)),
        "a lane's runs carry epochs or none"
    );
    h.complete(run);
    assert_eq!(h.verdict(run), Some(Verdict::Ok));
}

#[test]
fn a_runs_state_goes_from_queued_to_done() {
    let mut h = four_slots();
    let a = h.run();
    let b = h.run();
    let c = h.submit(RunRequest::new().held());
    let d = h.run();
    let state = |h: &Harness, run| h.lane.run_status(run).map(|s| s.state);
    assert_eq!(state(&h, a), Some(RunState::Launched));
    assert_eq!(state(&h, b), Some(RunState::Launched));
    assert_eq!(state(&h, c), Some(RunState::Prepared));
    assert_eq!(state(&h, d), Some(RunState::Queued), "the window is full");
    h.complete(a);
    assert_eq!(state(&h, a), None, "delivered");
    h.lane.cancel(h.now, c).expect("unlaunched");
    h.pump();
    assert_eq!(state(&h, c), Some(RunState::Done), "cancelled, behind b");
    assert_eq!(state(&h, d), Some(RunState::Launched));
    h.complete(b);
    h.complete(d);
    assert_eq!(state(&h, c), None);
    assert_eq!(h.verdict(c), Some(Verdict::Cancelled));
    assert_eq!(h.outcome_order(), [a.0, b.0, c.0, d.0]);
}

#[test]
fn a_launch_declined_after_close_is_cancelled_as_close_cancels_what_had_not_launched() {
    let mut lane = lane_core::Lane::new(Profile::a2a3());
    let now = lane_core::Timestamp(0);
    let mut backend = lane_core::testkit::Succeed::new();
    let mut held_launch = None;
    lane.submit(now, RunRequest::new()).expect("open");
    let second = lane.submit(now, RunRequest::new()).expect("room");
    while let Some(effect) = lane.poll_effect() {
        match effect {
            lane_core::Effect::AwaitCompletion { .. } => {}
            lane_core::Effect::LaunchRun { run, lease, .. } if run == second => {
                held_launch = Some((run, lease));
            }
            other => {
                if let Some(event) = backend.answer(other) {
                    lane.handle(now, event).expect("answers");
                }
            }
        }
    }
    let (run, lease) = held_launch.expect("the second launch is out");
    lane.close(now);
    lane.handle(now, lane_core::Event::LaunchDeclined { run, lease }).expect("the launch's answer");
    assert!(
        matches!(
            lane.poll_effect(),
            Some(lane_core::Effect::FinaliseRun { verdict: Verdict::Cancelled, .. })
        ),
        "finalised as cancelled"
    );
    lane.check_invariants().expect("invariants");
}

/// Answers the lane's effects with `backend`'s success, except those `withhold` picks,
/// which it returns unanswered.
fn drive_withholding(
    lane: &mut lane_core::Lane,
    backend: &mut lane_core::testkit::Succeed,
    withhold: impl Fn(&lane_core::Effect) -> bool,
) -> Vec<lane_core::Effect> {
    let mut withheld = Vec::new();
    while let Some(effect) = lane.poll_effect() {
        if withhold(&effect) {
            withheld.push(effect);
        } else if let Some(event) = backend.answer(effect) {
            lane.handle(lane_core::Timestamp(0), event).expect("answers");
        }
    }
    withheld
}

#[test]
fn a_completed_run_waiting_for_its_finalise_is_launched_and_refuses_cancel() {
    let mut lane = lane_core::Lane::new(Profile::a2a3());
    let mut backend = lane_core::testkit::Succeed::new();
    let run = lane.submit(lane_core::Timestamp(0), RunRequest::new()).expect("open");
    let withheld = drive_withholding(&mut lane, &mut backend, |e| {
        matches!(e, lane_core::Effect::FinaliseRun { .. })
    });
    assert_eq!(withheld.len(), 1, "{withheld:?}");
    assert_eq!(lane.phase_of(run), Some(lane_core::RunPhase::Finalising { verdict: Verdict::Ok }));
    assert_eq!(
        lane.run_status(run).map(|s| s.state),
        Some(RunState::Launched),
        "it reached the pair: finalising after its launch is not prepared"
    );
    assert_eq!(
        lane.cancel(lane_core::Timestamp(0), run),
        Err(ControlError::Launched { run }),
        "it has a verdict but is not done: a launched run finishes"
    );
    let event = backend.answer(withheld[0]).expect("the finalise's answer");
    lane.handle(lane_core::Timestamp(0), event).expect("answers");
    let Some(lane_core::Outcome::Run(outcome)) = lane.poll_outcome() else {
        panic!("an outcome");
    };
    assert_eq!((outcome.run, outcome.verdict), (run, Verdict::Ok));
}

#[test]
fn a_cancelled_prepared_run_waiting_for_its_finalise_is_still_prepared() {
    let mut h = Harness::a2a3();
    let first = h.run();
    let prepared = h.submit(RunRequest::new().held());
    h.take();
    h.lane.cancel(h.now, prepared).expect("unlaunched");
    // Its `FinaliseRun` is not answered yet.
    assert_eq!(
        h.lane.phase_of(prepared),
        Some(lane_core::RunPhase::Finalising { verdict: Verdict::Cancelled })
    );
    assert_eq!(
        h.lane.run_status(prepared).map(|s| s.state),
        Some(RunState::Prepared),
        "finalising without a launch: still prepared"
    );
    h.pump();
    assert_eq!(h.lane.run_status(prepared).map(|s| s.state), Some(RunState::Done));
    h.complete(first);
    assert_eq!(h.verdict(prepared), Some(Verdict::Cancelled));
}

#[test]
fn cancel_of_a_run_whose_launch_failed_is_refused_as_finished_with_its_verdict() {
    let mut h = Harness::a2a3();
    h.fault(Fault::LaunchFails(2, lane_core::LaunchStep::Aicore, 107_000));
    let first = h.run();
    let failed = h.run();
    // Done, held behind the first run, which still runs.
    assert_eq!(h.lane.run_status(failed).map(|s| s.state), Some(RunState::Done));
    assert_eq!(
        h.lane.cancel(h.now, failed),
        Err(ControlError::Finished { item: failed.0, outcome: "Failed" }),
        "its launch was asked for, but it is done with its own verdict"
    );
    h.complete(first);
    assert!(matches!(h.verdict(failed), Some(Verdict::Failed { .. })));
}

#[test]
fn cancel_twice_while_the_prepare_is_out_changes_nothing_the_second_time() {
    let mut h = Harness::a2a3();
    let run = h.lane.submit(h.now, RunRequest::new()).expect("open");
    let Some(lane_core::Effect::PrepareRun { lease, .. }) = h.lane.poll_effect() else {
        panic!("a prepare");
    };
    h.lane.cancel(h.now, run).expect("preparing");
    let fingerprint = h.lane.fingerprint();
    h.tick(1_000);
    assert_eq!(h.lane.cancel(h.now, run), Ok(()), "already cancelled");
    assert_eq!(h.lane.fingerprint(), fingerprint, "nothing changed");
    assert!(h.lane.poll_effect().is_none(), "nothing asked");
    h.feed(lane_core::Event::Prepared { run, lease }).expect("the prepare's answer");
    assert_eq!(h.take(), ["FinaliseRun run 1"]);
    assert_eq!(h.verdict(run), Some(Verdict::Cancelled));
}

#[test]
fn a_publication_a_fault_notice_failed_behind_a_run_refuses_cancel_as_finished() {
    let mut h = Harness::a2a3();
    let launched = h.run();
    // The second run's prepare is out (taken, not answered): its outcome, and so the
    // publication's behind it, waits for that answer (L-26).
    let preparing = h.lane.submit(h.now, RunRequest::new()).expect("room");
    let Some(lane_core::Effect::PrepareRun { .. }) = h.lane.poll_effect() else {
        panic!("a prepare");
    };
    let publication = h.lane.publish(h.now, lane_core::CodeRef(3)).expect("room");
    assert!(h.notice(lane_core::FaultNotice {
        device: 0,
        stream_id: 3,
        code: common::code(507_015),
    }));
    h.complete(launched);
    assert_eq!(h.verdict(launched), Some(Verdict::Ok));
    let Some(PublicationPhase::Done { result: PublicationResult::Failed { cause } }) =
        h.lane.publication_phase(publication)
    else {
        panic!("failed by the notice: {:?}", h.lane.publication_phase(publication));
    };
    assert_eq!(cause.stage(), Some(lane_core::status_latch::Stage::FaultNotice));
    assert_eq!(
        h.lane.cancel_publication(h.now, publication),
        Err(ControlError::Finished { item: publication.0, outcome: "Failed" }),
        "it never uploaded: finished, not uploading"
    );
    assert_eq!(
        h.lane.cancel(h.now, preparing),
        Err(ControlError::Finished { item: preparing.0, outcome: "Failed" }),
        "the unlaunched run failed with the notice"
    );
}

#[test]
fn readying_pair_names_the_run_whose_launch_waits_for_the_stream_creates_and_only_it() {
    let mut lane = lane_core::Lane::new(Profile::a2a3());
    let mut backend = lane_core::testkit::Succeed::new();
    assert_eq!(lane.readying_pair(), None);
    let run = lane.submit(lane_core::Timestamp(0), RunRequest::new()).expect("open");
    let creates = drive_withholding(&mut lane, &mut backend, |e| {
        matches!(e, lane_core::Effect::CreateStream { .. })
    });
    assert!(!creates.is_empty(), "the first launch creates the pair");
    assert_eq!(lane.readying_pair(), Some(run));
    for effect in creates {
        let event = backend.answer(effect).expect("a create's answer");
        lane.handle(lane_core::Timestamp(0), event).expect("answers");
    }
    let awaits = drive_withholding(&mut lane, &mut backend, |e| {
        matches!(e, lane_core::Effect::AwaitCompletion { .. })
    });
    assert_eq!(awaits.len(), 1, "{awaits:?}");
    assert!(lane.run_status(run).is_some_and(|s| s.state == RunState::Launched));
    assert_eq!(lane.readying_pair(), None, "a launched run does not ready the pair");
}

#[test]
fn equal_ordering_keys_keep_submission_order() {
    let item = |seq, key: Option<u64>| lane_core::ItemOrder { seq, key: key.map(OrderKey) };
    assert!(item(1, Some(5)).may_precede(item(2, Some(5))));
    assert!(
        !item(2, Some(5)).may_precede(item(1, Some(5))),
        "an equal key does not place a later run ahead"
    );
    assert!(item(2, Some(4)).may_precede(item(1, Some(5))), "a smaller key does");
    assert!(!item(2, Some(6)).may_precede(item(1, Some(5))));
    assert!(!item(2, None).may_precede(item(1, Some(5))));
    // A strict order: no item stands ahead of itself.
    for key in [None, Some(5)] {
        assert!(!item(3, key).may_precede(item(3, key)), "{key:?}");
    }
}

#[test]
fn an_epoch_refusal_says_why_and_what_to_do() {
    let reasons = [
        (EpochRefusal::Zero, "0 is what a zeroed record reads as; give a non-zero epoch"),
        (
            EpochRefusal::NotAbove { last: 41 },
            "not above the last epoch accepted (41), so an earlier run's record could match it; give a larger epoch",
        ),
        (
            EpochRefusal::Mixed,
            "the lane's runs mix their own epochs with the lane's; give every run of a lane an epoch, or none",
        ),
    ];
    for (refusal, reason) in reasons {
        assert_eq!(refusal.reason(), reason);
    }
    let mut h = Harness::a2a3();
    let refused = h.lane.submit(h.now, RunRequest::new().with_epoch(0)).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "epoch 0 refused: 0 is what a zeroed record reads as; give a non-zero epoch"
    );
}

#[test]
fn holds_a_run_only_while_a_held_run_waits_for_activation_without_a_verdict() {
    let mut h = Harness::a2a3();
    assert!(!h.lane.holds_a_run(), "an empty lane holds nothing");
    let first = h.run();
    assert!(!h.lane.holds_a_run(), "a run not submitted held is not held");
    let held = h.submit(RunRequest::new().held());
    assert!(h.lane.holds_a_run(), "the held run waits for activate");
    h.lane.activate(h.now, held).expect("held");
    h.pump();
    assert!(!h.lane.holds_a_run(), "activated and launched: nothing is held");
    h.complete(first);
    h.complete(held);
    assert_eq!(h.outcome_order(), [first.0, held.0]);
    assert!(!h.lane.holds_a_run());
}

#[test]
fn a_cancelled_held_run_is_no_longer_held_while_a_run_ahead_still_runs() {
    let mut h = Harness::a2a3();
    let first = h.run();
    let held = h.submit(RunRequest::new().held());
    assert!(h.lane.holds_a_run());
    h.lane.cancel(h.now, held).expect("prepared, unlaunched");
    h.pump();
    assert_eq!(
        h.lane.phase_of(held).and_then(|p| p.verdict()),
        Some(Verdict::Cancelled),
        "still in the FIFO behind the first run, with its verdict"
    );
    assert!(!h.lane.holds_a_run(), "a held run with a verdict waits for nobody");
    h.complete(first);
    assert_eq!(h.outcome_order(), [first.0, held.0]);
}

#[test]
fn an_equal_key_submitted_later_stays_behind_a_staged_unlaunched_run() {
    let mut h = three_slots();
    let first = h.submit(RunRequest::new().keyed(10));
    let staged = h.submit(RunRequest::new().keyed(30).held());
    let same = h.submit(RunRequest::new().keyed(30));
    let log = h.take();
    assert_eq!(
        launches(&log),
        ["LaunchRun run 1"],
        "the equal key waits behind the held run: {log:?}"
    );
    h.lane.activate(h.now, staged).expect("held");
    h.pump();
    for _ in 0..3 {
        h.complete_all();
    }
    assert_eq!(
        h.outcome_order(),
        [first.0, staged.0, same.0],
        "an equal key keeps submission order"
    );
}

#[test]
fn a_smaller_key_never_passes_a_launched_run_with_a_greater_key() {
    let mut h = Harness::new(
        Profile::custom(ProfileSpec { slots: 4, ..Profile::depth_one().spec() })
            .expect("four slots at depth one"),
    );
    let launched = h.submit(RunRequest::new().keyed(50));
    assert_eq!(h.lane.run_status(launched).map(|s| s.state), Some(RunState::Launched));
    let late = h.submit(RunRequest::new().keyed(1));
    for _ in 0..3 {
        h.complete_all();
    }
    assert_eq!(h.outcome_order(), [launched.0, late.0], "the launched run keeps its place");
}

#[test]
fn a_keyed_run_never_passes_an_unlaunched_keyless_run() {
    let mut h = three_slots();
    let first = h.submit(RunRequest::new().keyed(10));
    let keyless = h.submit(RunRequest::new().held());
    let late = h.submit(RunRequest::new().keyed(1));
    assert_eq!(
        launches(&h.take()),
        ["LaunchRun run 1"],
        "the keyed run waits behind the held keyless run"
    );
    h.lane.activate(h.now, keyless).expect("held");
    h.pump();
    for _ in 0..3 {
        h.complete_all();
    }
    assert_eq!(h.outcome_order(), [first.0, keyless.0, late.0]);
}
