//! The prepare window and runner work out (L-18): several runs prepare at once, answers
//! arrive in any order, and a poison waits for the runner work it cannot stop.

use lane_core::status_latch::AclCode;
use lane_core::testkit::Succeed;
use lane_core::{
    Effect, Event, Lane, LaneState, Outcome, Profile, ProfileSpec, RecoveryStep, RunId, RunRequest,
    Timestamp, Verdict,
};

const T: Timestamp = Timestamp(0);

/// a2a3 with `slots` slots and a prepare window of `window`.
fn profile(slots: u8, window: u8) -> Profile {
    Profile::custom(ProfileSpec { slots, prepare_window: window, ..Profile::a2a3().spec() })
        .unwrap()
}

/// Takes every effect the lane has, checking the invariants after each poll; the runner's
/// recovery hooks, which nothing answers, are left out.
fn take(lane: &mut Lane) -> Vec<Effect> {
    let mut effects = Vec::new();
    while let Some(effect) = lane.poll_effect() {
        lane.check_invariants().unwrap();
        if !matches!(effect, Effect::Hook(_)) {
            effects.push(effect);
        }
    }
    effects
}

fn prepares(effects: &[Effect]) -> Vec<Effect> {
    effects.iter().copied().filter(|e| matches!(e, Effect::PrepareRun { .. })).collect()
}

fn feed(lane: &mut Lane, event: impl Into<Option<Event>>) {
    // A hook asks nothing back: there is nothing to feed.
    if let Some(event) = event.into() {
        lane.handle(T, event).unwrap();
    }
    lane.check_invariants().unwrap();
}

/// Answers effects newest first (as host workers finishing in any order would), until the
/// lane asks for nothing more; returns every effect, in the order the lane asked for them.
fn drive_newest_first(lane: &mut Lane) -> Vec<Effect> {
    drive_newest_first_from(lane, Vec::new())
}

/// [`drive_newest_first`], with `taken` already taken from the lane and not answered.
fn drive_newest_first_from(lane: &mut Lane, taken: Vec<Effect>) -> Vec<Effect> {
    let mut backend = Succeed::new();
    let (mut asked, mut pending) = (taken.clone(), taken);
    for _ in 0..10_000 {
        let polled = take(lane);
        asked.extend_from_slice(&polled);
        pending.extend(polled);
        let Some(effect) = pending.pop() else {
            return asked;
        };
        feed(lane, backend.answer(effect));
    }
    panic!("livelock");
}

fn run_outcomes(lane: &mut Lane) -> Vec<(RunId, Verdict)> {
    let mut out = Vec::new();
    while let Some(outcome) = lane.poll_outcome() {
        if let Outcome::Run(r) = outcome {
            out.push((r.run, r.verdict));
        }
    }
    out
}

#[test]
fn window_two_prepares_two_runs_at_once_on_two_slots() {
    let mut lane = Lane::new(profile(2, 2));
    lane.submit(T, RunRequest::new()).unwrap();
    lane.submit(T, RunRequest::new()).unwrap();
    let asked = prepares(&take(&mut lane));
    assert_eq!(asked.len(), 2, "{asked:?}");
    let slots: Vec<_> = asked
        .iter()
        .map(|e| match e {
            Effect::PrepareRun { lease, .. } => lease.slot,
            _ => unreachable!(),
        })
        .collect();
    assert_ne!(slots[0], slots[1]);
    assert_eq!(lane.runner_work_count(), 2);
}

#[test]
fn prepares_start_in_submission_order_behind_a_window_of_two() {
    // Four runs queued behind a window of two: each launch frees a window place, and the
    // runs prepare in submission order whatever order the answers come in.
    let mut lane = Lane::new(profile(4, 2));
    let runs: Vec<RunId> = (0..4).map(|_| lane.submit(T, RunRequest::new()).unwrap()).collect();
    let first = take(&mut lane);
    assert_eq!(prepares(&first).len(), 2, "{first:?}");
    let asked = drive_newest_first_from(&mut lane, first);
    let order: Vec<RunId> = prepares(&asked).iter().filter_map(Effect::run).collect();
    assert_eq!(order, runs);
}

#[test]
fn answers_out_of_order_keep_launch_order_and_outcome_order() {
    let mut lane = Lane::new(profile(4, 2));
    let runs: Vec<RunId> = (0..4).map(|_| lane.submit(T, RunRequest::new()).unwrap()).collect();
    let asked = drive_newest_first(&mut lane);
    let launches: Vec<RunId> = asked
        .iter()
        .filter(|e| matches!(e, Effect::LaunchRun { .. }))
        .filter_map(Effect::run)
        .collect();
    assert_eq!(launches, runs);
    let outcomes = run_outcomes(&mut lane);
    assert_eq!(outcomes, runs.iter().map(|&r| (r, Verdict::Ok)).collect::<Vec<_>>());
    assert!(lane.is_idle());
    assert_eq!(lane.runner_work_count(), 0);
}

#[test]
fn a_later_run_prepared_first_does_not_launch_before_its_predecessor() {
    let mut lane = Lane::new(profile(2, 2));
    lane.submit(T, RunRequest::new()).unwrap();
    lane.submit(T, RunRequest::new()).unwrap();
    let asked = prepares(&take(&mut lane));
    let mut backend = Succeed::new();
    feed(&mut lane, backend.answer(asked[1]));
    assert!(take(&mut lane).is_empty(), "run 2 prepared must wait for run 1");
    feed(&mut lane, backend.answer(asked[0]));
    let next = take(&mut lane);
    assert!(matches!(next.first(), Some(Effect::CreateStream { .. })), "{next:?}");
}

#[test]
fn window_one_prepares_a_run_only_after_every_earlier_run_launched() {
    let mut lane = Lane::new(Profile::a2a3());
    assert_eq!(lane.profile().prepare_window(), 1);
    lane.submit(T, RunRequest::new()).unwrap();
    lane.submit(T, RunRequest::new()).unwrap();
    let asked = drive_newest_first(&mut lane);
    let at = |pred: &dyn Fn(&Effect) -> bool| asked.iter().position(pred).unwrap();
    let launch_1 = at(&|e| matches!(e, Effect::LaunchRun { run, .. } if *run == RunId(1)));
    let prepare_2 = at(&|e| matches!(e, Effect::PrepareRun { run, .. } if *run == RunId(2)));
    assert!(launch_1 < prepare_2, "{asked:?}");
}

/// Run 1 awaited on the pair and run 2's prepare taken by the driver but not answered.
fn prepare_out_while_run_one_is_awaited() -> (Lane, Effect, Effect) {
    let mut lane = Lane::new(Profile::a2a3());
    let mut backend = Succeed::new();
    lane.submit(T, RunRequest::new()).unwrap();
    let mut await_1 = None;
    while let Some(effect) = lane.poll_effect() {
        match effect {
            Effect::AwaitCompletion { .. } => await_1 = Some(effect),
            other => feed(&mut lane, backend.answer(other)),
        }
    }
    lane.submit(T, RunRequest::new()).unwrap();
    let prepare_2 = take(&mut lane);
    assert!(matches!(prepare_2[..], [Effect::PrepareRun { .. }]), "{prepare_2:?}");
    (lane, await_1.unwrap(), prepare_2[0])
}

fn fail_completion(lane: &mut Lane, awaited: Effect) {
    let Effect::AwaitCompletion { run, lease, .. } = awaited else {
        panic!("{awaited:?}");
    };
    let code = AclCode::from_raw(507_047).unwrap();
    feed(lane, Event::CompletionFailed { run, lease, code });
}

#[test]
fn poison_with_runner_work_out_waits_for_its_answer_before_draining() {
    let (mut lane, await_1, prepare_2) = prepare_out_while_run_one_is_awaited();
    fail_completion(&mut lane, await_1);
    assert!(matches!(lane.state(), LaneState::Recovering { step: RecoveryStep::Quiesce, .. }));
    assert!(take(&mut lane).is_empty(), "no drain while the prepare is out");
    // Run 1's verdict is delivered at once; run 2's waits for its prepare to answer (L-26:
    // the outcome tells the runtime it may free the run's state).
    let outcomes = run_outcomes(&mut lane);
    assert_eq!(outcomes.iter().map(|(run, _)| *run).collect::<Vec<_>>(), [RunId(1)]);
    feed(&mut lane, Succeed::new().answer(prepare_2));
    let outcomes = run_outcomes(&mut lane);
    assert!(
        matches!(outcomes[..], [(RunId(2), Verdict::Poisoned { origin: RunId(1), .. })]),
        "{outcomes:?}"
    );
    let next = take(&mut lane);
    assert!(matches!(next[..], [Effect::DrainDevice { attempt: 1, .. }]), "{next:?}");
}

#[test]
fn an_answer_for_abandoned_runner_work_is_accepted_once_and_a_repeat_is_rejected() {
    let (mut lane, await_1, prepare_2) = prepare_out_while_run_one_is_awaited();
    fail_completion(&mut lane, await_1);
    let Effect::PrepareRun { run, lease, .. } = prepare_2 else { unreachable!() };
    let rejected = lane.rejected_events();
    let before = lane.fingerprint();
    // Any answer to the prepare is accepted: a failure changes nothing either.
    let code = AclCode::from_raw(507_899).unwrap();
    feed(&mut lane, Event::PrepareFailed { run, lease, code: code.into() });
    assert_ne!(lane.fingerprint(), before, "the work is no longer out");
    assert_eq!(lane.poison().unwrap().origin, RunId(1), "the poison is unchanged");
    assert!(lane.handle(T, Event::Prepared { run, lease }).is_err());
    assert_eq!(lane.rejected_events(), rejected + 1);
}

#[test]
fn work_not_yet_taken_at_a_poison_is_dropped_and_does_not_hold_recovery() {
    let mut lane = Lane::new(Profile::a2a3());
    let mut backend = Succeed::new();
    lane.submit(T, RunRequest::new()).unwrap();
    let awaited = loop {
        let effect = lane.poll_effect().unwrap();
        if matches!(effect, Effect::AwaitCompletion { .. }) {
            break effect;
        }
        feed(&mut lane, backend.answer(effect));
    };
    // Run 2's prepare is emitted but never taken.
    lane.submit(T, RunRequest::new()).unwrap();
    fail_completion(&mut lane, awaited);
    let next = take(&mut lane);
    assert!(matches!(next[..], [Effect::DrainDevice { attempt: 1, .. }]), "{next:?}");
}

#[test]
fn a_finalise_out_at_a_poison_holds_the_drain_too() {
    // Window two, depth two: run 1 completes and its finalise is taken; run 2's completion
    // then fails while that finalise is still out.
    let mut lane = Lane::new(profile(2, 2));
    let mut backend = Succeed::new();
    lane.submit(T, RunRequest::new()).unwrap();
    lane.submit(T, RunRequest::new()).unwrap();
    let mut pending = take(&mut lane);
    let (mut finalise_1, mut await_2) = (None, None);
    while let Some(effect) = pending.pop() {
        match effect {
            Effect::FinaliseRun { run: RunId(1), .. } => finalise_1 = Some(effect),
            Effect::AwaitCompletion { run: RunId(2), .. } => await_2 = Some(effect),
            other => {
                feed(&mut lane, backend.answer(other));
                pending.extend(take(&mut lane));
            }
        }
    }
    let (finalise_1, await_2) = (finalise_1.unwrap(), await_2.unwrap());
    fail_completion(&mut lane, await_2);
    assert!(take(&mut lane).is_empty());
    feed(&mut lane, backend.answer(finalise_1));
    assert!(matches!(take(&mut lane)[..], [Effect::DrainDevice { .. }]));
}

#[test]
fn several_prepares_start_in_one_pass_when_the_window_opens() {
    // A diagnostics run holds both successors back (SPEC §5.4); its finalise lets both
    // prepare in the same call.
    let mut lane = Lane::new(profile(3, 2));
    let mut backend = Succeed::new();
    lane.submit(T, RunRequest::new().with_diagnostics()).unwrap();
    lane.submit(T, RunRequest::new()).unwrap();
    lane.submit(T, RunRequest::new()).unwrap();
    loop {
        let effect = lane.poll_effect().expect("run 1 finalises");
        assert!(!matches!(effect, Effect::PrepareRun { run, .. } if run != RunId(1)));
        let finalise = matches!(effect, Effect::FinaliseRun { .. });
        feed(&mut lane, backend.answer(effect));
        if finalise {
            break;
        }
    }
    let next: Vec<RunId> = prepares(&take(&mut lane)).iter().filter_map(Effect::run).collect();
    assert_eq!(next, [RunId(2), RunId(3)]);
}

#[test]
fn a_successor_whose_prepare_fails_first_is_finalised_and_its_outcome_waits_its_turn() {
    let mut lane = Lane::new(profile(2, 2));
    lane.submit(T, RunRequest::new()).unwrap();
    lane.submit(T, RunRequest::new()).unwrap();
    let asked = prepares(&take(&mut lane));
    let Effect::PrepareRun { run, lease, .. } = asked[1] else { unreachable!() };
    // A plain ACL code at the prepare stage fails that run only.
    let code = AclCode::from_raw(100_000).unwrap();
    feed(&mut lane, Event::PrepareFailed { run, lease, code: code.into() });
    let finalise = take(&mut lane);
    assert!(
        matches!(finalise[..], [Effect::FinaliseRun { run: r, copy_back: false, .. }] if r == run),
        "{finalise:?}"
    );
    feed(&mut lane, Succeed::new().answer(finalise[0]));
    assert!(run_outcomes(&mut lane).is_empty(), "run 2's outcome waits for run 1's");
    let asked = drive_newest_first_from(&mut lane, vec![asked[0]]);
    assert!(asked.iter().any(|e| matches!(e, Effect::LaunchRun { .. })));
    let outcomes = run_outcomes(&mut lane);
    assert_eq!(outcomes[0], (RunId(1), Verdict::Ok));
    assert_eq!(outcomes[1].0, RunId(2));
    assert!(matches!(outcomes[1].1, Verdict::Failed { .. }));
}
