//! Interleavings that mutation testing found unpinned (docs/testing.md, lane-core): each test
//! drives a lane by hand, answering each effect at the moment the scenario names.

use lane_core::status_latch::{AclCode, Class, Failure, Stage};
use lane_core::stream_pair::{Role, StreamHandle};
use lane_core::{
    Effect, Event, Lane, LaunchStep, Outcome, Profile, RunId, RunPhase, RunRequest, Timestamp,
    Verdict,
};

const T: Timestamp = Timestamp(0);

/// A lane, the effects it asked for and not yet answered, and the outcomes delivered.
struct Driven {
    lane: Lane,
    outstanding: Vec<Effect>,
    /// The runner's recovery hooks and adopted resets, which nothing answers.
    told: Vec<Effect>,
    outcomes: Vec<Outcome>,
}

impl Driven {
    fn new(profile: Profile) -> Self {
        Self {
            lane: Lane::new(profile),
            outstanding: Vec::new(),
            told: Vec::new(),
            outcomes: Vec::new(),
        }
    }

    fn poll(&mut self) {
        while let Some(effect) = self.lane.poll_effect() {
            if matches!(effect, Effect::Hook(_) | Effect::AdoptReset) {
                self.told.push(effect);
            } else {
                self.outstanding.push(effect);
            }
        }
        while let Some(outcome) = self.lane.poll_outcome() {
            self.outcomes.push(outcome);
        }
        self.lane.check_invariants().expect("invariants");
    }

    fn submit(&mut self) -> RunId {
        let run = self.lane.submit(T, RunRequest::new()).expect("accepted");
        self.poll();
        run
    }

    /// Takes the outstanding effect `pick` matches (it must be there).
    fn take(&mut self, what: &str, pick: impl Fn(&Effect) -> bool) -> Effect {
        let at = self
            .outstanding
            .iter()
            .position(pick)
            .unwrap_or_else(|| panic!("no outstanding {what}: {:?}", self.outstanding));
        self.outstanding.remove(at)
    }

    /// Answers the outstanding effect `pick` matches with `answer(effect)`.
    fn answer(
        &mut self,
        what: &str,
        pick: impl Fn(&Effect) -> bool,
        answer: impl FnOnce(Effect) -> Event,
    ) {
        let effect = self.take(what, pick);
        self.lane.handle(T, answer(effect)).expect("accepted");
        self.poll();
    }

    fn verdict(&self, run: RunId) -> Option<Verdict> {
        self.outcomes.iter().find_map(|o| match o {
            Outcome::Run(r) if r.run == run => Some(r.verdict),
            _ => None,
        })
    }
}

fn prepare_of(run: RunId) -> impl Fn(&Effect) -> bool {
    move |e| matches!(e, Effect::PrepareRun { run: r, .. } if *r == run)
}

fn finalise_of(run: RunId) -> impl Fn(&Effect) -> bool {
    move |e| matches!(e, Effect::FinaliseRun { run: r, .. } if *r == run)
}

fn launch_of(run: RunId) -> impl Fn(&Effect) -> bool {
    move |e| matches!(e, Effect::LaunchRun { run: r, .. } if *r == run)
}

fn prepared(e: Effect) -> Event {
    match e {
        Effect::PrepareRun { run, lease, .. } => Event::Prepared { run, lease },
        other => panic!("{other:?}"),
    }
}

fn finalised(e: Effect) -> Event {
    match e {
        Effect::FinaliseRun { run, lease, .. } => Event::Finalised { run, lease },
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_create_that_fails_after_the_predecessor_finalised_fails_the_run_waiting_on_it() {
    // N's prepare fails (run-only), so N+1 prepares and launches first: it waits on the
    // stream creates. N finalises meanwhile; then a create fails. The failure belongs to
    // N+1, the run waiting on the create, though another run settled in between.
    let mut d = Driven::new(Profile::depth_one());
    let n = d.submit();
    let n1 = d.submit();
    d.answer("prepare of N", prepare_of(n), |e| match e {
        Effect::PrepareRun { run, lease, .. } => {
            Event::PrepareFailed { run, lease, code: AclCode::InvalidParam.into() }
        }
        other => panic!("{other:?}"),
    });
    d.answer("prepare of N+1", prepare_of(n1), prepared);
    assert!(
        d.outstanding.iter().any(|e| matches!(e, Effect::CreateStream { .. })),
        "N+1 waits on the stream creates: {:?}",
        d.outstanding
    );
    d.answer("finalise of N", finalise_of(n), finalised);
    assert!(matches!(d.verdict(n), Some(Verdict::Failed { .. })));
    d.answer(
        "create",
        |e| matches!(e, Effect::CreateStream { role: Role::Aicpu }),
        |_| Event::StreamCreateFailed { role: Role::Aicpu, code: AclCode::InvalidParam },
    );
    assert!(
        matches!(d.lane.phase_of(n1), Some(RunPhase::Finalising { .. })),
        "N+1 fails with the create, it does not wait for another one"
    );
    d.answer("finalise of N+1", finalise_of(n1), finalised);
    match d.verdict(n1) {
        Some(Verdict::Failed { cause }) => {
            assert!(
                matches!(cause.failure, Failure::Acl { stage: Stage::StreamCreate, .. }),
                "{cause:?}"
            );
        }
        other => panic!("N+1 ended {other:?}"),
    }
}

#[test]
fn a_poison_leaves_a_finished_run_held_behind_its_predecessor_with_its_own_verdict() {
    // On a2a3, N+1 fails to launch (run-only) while N is awaited: N+1 is finalised and done,
    // but held behind N. N's completion then fails (poison): N+1 keeps its own failure, it
    // is not rewritten to Poisoned, and nothing is stepped from `Done` again.
    let mut d = Driven::new(Profile::a2a3());
    let n = d.submit();
    let n1 = d.submit();
    d.answer("prepare of N", prepare_of(n), prepared);
    create_pair(&mut d);
    d.answer("launch of N", launch_of(n), launched);
    d.answer("prepare of N+1", prepare_of(n1), prepared);
    d.answer("launch of N+1", launch_of(n1), |e| match e {
        Effect::LaunchRun { run, lease, .. } => Event::LaunchFailed {
            run,
            lease,
            step: LaunchStep::Arm,
            code: AclCode::InvalidParam.into(),
        },
        other => panic!("{other:?}"),
    });
    d.answer("finalise of N+1", finalise_of(n1), finalised);
    assert!(matches!(d.lane.phase_of(n1), Some(RunPhase::Done { .. })), "held behind N");
    assert_eq!(d.verdict(n1), None, "its outcome waits for N's");
    d.answer(
        "await of N",
        |e| matches!(e, Effect::AwaitCompletion { .. }),
        |e| match e {
            Effect::AwaitCompletion { run, lease, .. } => {
                Event::CompletionFailed { run, lease, code: AclCode::RtDeviceTaskAbort }
            }
            other => panic!("{other:?}"),
        },
    );
    assert_eq!(d.lane.poison().map(|p| p.origin), Some(n));
    match d.verdict(n1) {
        Some(Verdict::Failed { cause }) => assert_eq!(cause.class(), Class::RunOnly),
        other => panic!("N+1 ended {other:?}, not with its own run-only failure"),
    }
}

/// Three slots at launch depth two (a2a3 with a spare slot), N launched and awaited, and
/// N+1 failed at launch (run-only), finalised and done, held behind N (still holding its
/// place in the capacity count, hence the third slot).
fn held_behind_awaited() -> (Driven, RunId, RunId) {
    let spec = lane_core::ProfileSpec { slots: 3, ..Profile::a2a3().spec() };
    let mut d = Driven::new(Profile::custom(spec).expect("valid"));
    let n = d.submit();
    let n1 = d.submit();
    d.answer("prepare of N", prepare_of(n), prepared);
    create_pair(&mut d);
    d.answer("launch of N", launch_of(n), launched);
    d.answer("prepare of N+1", prepare_of(n1), prepared);
    d.answer("launch of N+1", launch_of(n1), |e| match e {
        Effect::LaunchRun { run, lease, .. } => Event::LaunchFailed {
            run,
            lease,
            step: LaunchStep::Arm,
            code: AclCode::InvalidParam.into(),
        },
        other => panic!("{other:?}"),
    });
    d.answer("finalise of N+1", finalise_of(n1), finalised);
    assert!(matches!(d.lane.phase_of(n1), Some(RunPhase::Done { .. })));
    (d, n, n1)
}

/// Answers the two stream creates of a pair: AICPU stream 1, AICore stream 2.
fn create_pair(d: &mut Driven) {
    for (role, handle) in [(Role::Aicpu, 1), (Role::Aicore, 2)] {
        d.answer(
            "create",
            move |e| matches!(e, Effect::CreateStream { role: r } if *r == role),
            move |_| Event::StreamCreated { role, handle: StreamHandle(handle) },
        );
    }
}

fn launched(e: Effect) -> Event {
    match e {
        Effect::LaunchRun { run, lease, .. } => Event::Launched { run, lease },
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_run_launches_past_a_finished_run_held_behind_the_awaited_one() {
    // N+2 takes N+1's place on the pair: the finished run ahead of it holds nothing back,
    // and the lane's invariants (checked after every step) agree.
    let (mut d, n, _) = held_behind_awaited();
    let n2 = d.submit();
    d.answer("prepare of N+2", prepare_of(n2), prepared);
    d.answer("launch of N+2", launch_of(n2), launched);
    assert!(matches!(d.lane.phase_of(n2), Some(RunPhase::Launched { .. })));
    assert!(matches!(d.lane.phase_of(n), Some(RunPhase::Awaiting { .. })));
}

#[test]
fn a_failure_report_for_a_step_the_run_is_past_is_rejected_and_changes_nothing() {
    let (mut d, n, n1) = held_behind_awaited();
    let lease = match d.outstanding.iter().find(|e| matches!(e, Effect::AwaitCompletion { .. })) {
        Some(Effect::AwaitCompletion { lease, .. }) => *lease,
        other => panic!("{other:?}"),
    };
    let before = d.lane.fingerprint();
    // N launched long ago: a run-only launch failure for it now answers nothing, and must
    // not take its submission off the pair on the way to being rejected.
    let late_launch_failure = Event::LaunchFailed {
        run: n,
        lease,
        step: LaunchStep::Arm,
        code: AclCode::InvalidParam.into(),
    };
    assert!(d.lane.handle(T, late_launch_failure).is_err());
    // N is awaited, not reading its status: a latched header for it answers nothing either.
    let early_latch = Event::StatusRead {
        run: n,
        lease,
        status: {
            let mut status = lane_core::status_latch::Status::clean(Profile::a2a3().header());
            status.orch = Some(lane_core::status_latch::RuntimeCode::ScopeDeadlock);
            status
        },
        timing: lane_core::DeviceTiming { start_ns: 1, end_ns: 2, ..Default::default() },
    };
    assert!(d.lane.handle(T, early_latch).is_err());
    assert_eq!(d.lane.fingerprint(), before, "a rejected event changed the lane");
    d.lane.check_invariants().expect("invariants");
    assert!(matches!(d.lane.phase_of(n1), Some(RunPhase::Done { .. })));
}

/// An a2a3 lane poisoned by a completion failure of its only run, with `DrainDevice`
/// attempt 1 outstanding.
fn recovering() -> Driven {
    let mut d = Driven::new(Profile::a2a3());
    poison_a_run(&mut d);
    d
}

/// Submits a run and fails its completion wait (poison): `DrainDevice` attempt 1 is then
/// the one outstanding effect.
fn poison_a_run(d: &mut Driven) {
    let n = d.submit();
    d.answer("prepare", prepare_of(n), prepared);
    create_pair(d);
    d.answer("launch", launch_of(n), launched);
    d.answer(
        "await",
        |e| matches!(e, Effect::AwaitCompletion { .. }),
        |e| match e {
            Effect::AwaitCompletion { run, lease, .. } => {
                Event::CompletionFailed { run, lease, code: AclCode::RtDeviceTaskAbort }
            }
            other => panic!("{other:?}"),
        },
    );
    assert!(matches!(d.outstanding[..], [Effect::DrainDevice { attempt: 1, .. }]));
}

#[test]
fn a_reservation_does_not_survive_a_device_reset() {
    let mut d = Driven::new(Profile::a2a3());
    let lease = d.lane.reserve(T).expect("reserved");
    poison_a_run(&mut d);
    d.answer(
        "drain",
        |e| matches!(e, Effect::DrainDevice { .. }),
        |_| Event::DeviceDrained { attempt: 1 },
    );
    d.answer(
        "reset",
        |e| matches!(e, Effect::ForceReset { .. }),
        |_| Event::ResetDone { attempt: 1 },
    );
    d.answer("probe", |e| matches!(e, Effect::Probe { .. }), |_| Event::ProbePassed { attempt: 1 });
    assert_eq!(
        d.lane.submit(T, RunRequest::new().on_lease(lease)),
        Err(lane_core::SubmitError::StaleLease { lease })
    );
    // Both slots are free again.
    d.submit();
    d.submit();
}

#[test]
fn a_recovery_report_for_another_step_or_attempt_is_rejected() {
    let mut d = recovering();
    let before = d.lane.fingerprint();
    for wrong in [
        Event::ResetDone { attempt: 1 },
        Event::ProbePassed { attempt: 1 },
        Event::DeviceDrained { attempt: 2 },
    ] {
        assert!(d.lane.handle(T, wrong).is_err(), "{wrong:?} accepted");
    }
    assert_eq!(d.lane.fingerprint(), before);
    d.answer(
        "drain",
        |e| matches!(e, Effect::DrainDevice { .. }),
        |_| Event::DeviceDrained { attempt: 1 },
    );
    assert!(d.lane.handle(T, Event::ResetDone { attempt: 2 }).is_err());
    assert!(d.lane.handle(T, Event::DeviceDrained { attempt: 1 }).is_err(), "twice");
}

#[test]
fn the_device_is_lost_only_when_the_last_attempt_fails() {
    let mut d = recovering();
    let attempts = Profile::a2a3().recovery_attempts();
    for attempt in 1..=attempts {
        d.answer(
            "drain",
            |e| matches!(e, Effect::DrainDevice { .. }),
            move |_| Event::DeviceDrained { attempt },
        );
        d.answer(
            "reset",
            |e| matches!(e, Effect::ForceReset { .. }),
            move |_| Event::ResetFailed { attempt, code: AclCode::RtNoDevice },
        );
        assert_eq!(
            d.lane.device_lost(),
            attempt == attempts,
            "after attempt {attempt} of {attempts} failed"
        );
    }
    assert_eq!(d.lane.state(), lane_core::LaneState::Lost);
}

#[test]
fn a_passed_probe_reopens_without_losing_the_device() {
    let mut d = recovering();
    d.answer(
        "drain",
        |e| matches!(e, Effect::DrainDevice { .. }),
        |_| Event::DeviceDrained { attempt: 1 },
    );
    d.answer(
        "reset",
        |e| matches!(e, Effect::ForceReset { .. }),
        |_| Event::ResetDone { attempt: 1 },
    );
    d.answer("probe", |e| matches!(e, Effect::Probe { .. }), |_| Event::ProbePassed { attempt: 1 });
    assert_eq!(d.lane.state(), lane_core::LaneState::Open);
    assert!(!d.lane.device_lost());
}

#[test]
fn a_successor_is_not_prepared_while_its_predecessor_is_still_preparing() {
    // Concurrent prepare (a2a3) lets N+1 prepare while N runs, not before N is prepared and
    // launched: preparation follows launch order.
    let mut d = Driven::new(Profile::a2a3());
    let n = d.submit();
    let n1 = d.submit();
    assert!(d.outstanding.iter().any(prepare_of(n)));
    assert!(
        !d.outstanding.iter().any(prepare_of(n1)),
        "N+1 asked to prepare while N is preparing: {:?}",
        d.outstanding
    );
}

#[test]
fn a_reservation_counts_against_capacity_next_to_a_finished_run_held_behind() {
    // Three slots: N in flight, N+1 done but held behind N, and one reservation: full,
    // though a slot is physically free (N+1's).
    let (mut d, _, _) = held_behind_awaited();
    let _lease = d.lane.reserve(T).expect("one slot left");
    assert!(matches!(
        d.lane.submit(T, RunRequest::new()),
        Err(lane_core::SubmitError::Full { slots: 3 })
    ));
}

#[test]
fn close_drops_the_reservations() {
    let mut d = Driven::new(Profile::a2a3());
    let lease = d.lane.reserve(T).expect("reserved");
    let _ = d.lane.close(T);
    assert!(d.lane.release(lease).is_err(), "the reservation outlived close");
}
