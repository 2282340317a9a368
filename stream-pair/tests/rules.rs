//! The stream pair's rules (SPEC §4, S-1..S-8), one test per behaviour, through the
//! public API only. Every step the `Rig` takes is followed by `check_invariants()`.

use stream_pair::{
    DestroyMode, Effect, Effects, Input, LaunchDepth, MAX_DEPTH, Owner, Readiness, Rejection,
    Retired, Retirement, Role, Step, StreamFailure, StreamHandle, StreamPair, StreamResult,
    StreamState, SubmitError, WithdrawError,
};

const CREATE_CODE: i32 = 507_899;
const DESTROY_CODE: i32 = 507_901;

/// A pair plus a backend that hands out fresh handles; each scenario is a few lines.
struct Rig {
    pair: StreamPair,
    next_handle: u64,
}

impl Rig {
    fn new(depth: u8) -> Self {
        let depth = LaunchDepth::new(depth).expect("depth in range");
        Self { pair: StreamPair::new(depth), next_handle: 100 }
    }

    /// A pair already readied (both streams created once).
    fn ready_pair(depth: u8) -> (Self, StreamHandle, StreamHandle) {
        let mut rig = Self::new(depth);
        let (aicpu, aicore) = rig.ready();
        (rig, aicpu, aicore)
    }

    fn check(&self) {
        if let Err(violation) = self.pair.check_invariants() {
            panic!("invariant broken: {violation}; state: {}", self.pair);
        }
    }

    /// `apply` with the invariants checked and "a rejection changes nothing" enforced.
    fn apply(&mut self, input: Input) -> Result<Step, Rejection> {
        let before = self.pair.clone();
        let outcome = self.pair.apply(input);
        if outcome.is_err() {
            assert_eq!(self.pair, before, "a rejected {input} changed the state");
        }
        self.check();
        outcome
    }

    fn event(&mut self, event: Input) -> Result<StreamResult, Rejection> {
        let before = self.pair.clone();
        let outcome = self.pair.handle(event);
        if outcome.is_err() {
            assert_eq!(self.pair, before, "a rejected {event} changed the state");
        }
        self.check();
        outcome
    }

    /// One `ready()`, expecting `Pending`; returns its effects.
    fn pending(&mut self) -> Effects {
        let readiness = self.pair.ready();
        self.check();
        match readiness {
            Readiness::Pending(effects) => effects,
            other => panic!("expected Pending, got {other:?}; state: {}", self.pair),
        }
    }

    /// The backend answering one effect with success, where the test reads no report: the
    /// pair must still report a success of that effect's role.
    fn succeed(&mut self, effect: Effect) {
        let report = self.answer(effect);
        let role = match effect {
            Effect::Create { role } | Effect::Destroy { role, .. } => role,
        };
        match report {
            StreamResult::Created { role: got, .. } | StreamResult::Destroyed { role: got } => {
                assert_eq!(got, role, "{effect} answered for another role");
            }
            StreamResult::TeardownFinished { first_error: None } => {}
            other => panic!("{effect} succeeded but the pair reported {other:?}"),
        }
    }

    /// The backend answering one effect with success; the pair's report.
    fn answer(&mut self, effect: Effect) -> StreamResult {
        let event = match effect {
            Effect::Create { role } => {
                self.next_handle += 1;
                Input::Created { role, handle: StreamHandle(self.next_handle) }
            }
            Effect::Destroy { role, handle, .. } => Input::Destroyed { role, handle },
        };
        self.event(event).expect("the pair accepts the answer")
    }

    /// The launch path: `ready()` until Ready, every effect succeeding.
    fn ready(&mut self) -> (StreamHandle, StreamHandle) {
        for _ in 0..8 {
            let readiness = self.pair.ready();
            self.check();
            match readiness {
                Readiness::Ready { aicpu, aicore } => return (aicpu, aicore),
                Readiness::Pending(effects) if effects.is_empty() => self.finish_outstanding(),
                Readiness::Pending(effects) => {
                    for effect in effects {
                        self.succeed(effect);
                    }
                }
                other => panic!("expected the pair to become ready, got {other:?}"),
            }
        }
        panic!("the pair never became ready: {}", self.pair);
    }

    /// The backend finishing, with success, the effects a test looked at but did not answer.
    fn finish_outstanding(&mut self) {
        let mut answered = false;
        for role in Role::ALL {
            match self.pair.stream(role).state {
                StreamState::Creating => {
                    self.succeed(Effect::Create { role });
                    answered = true;
                }
                StreamState::Destroying(handle) => {
                    self.succeed(destroy(role, handle));
                    answered = true;
                }
                StreamState::Absent | StreamState::Live(_) => {}
            }
        }
        assert!(answered, "Pending with nothing outstanding: {}", self.pair);
    }

    /// The backend answering a destroy with a failure.
    /// The pair must report the failure, alone or as the teardown's end.
    fn fail_destroy(&mut self, role: Role, handle: StreamHandle) {
        let report = self
            .event(Input::DestroyFailed { role, handle, code: DESTROY_CODE })
            .expect("the pair accepts the answer");
        match report {
            StreamResult::DestroyFailed {
                role: got_role,
                handle: got_handle,
                code: DESTROY_CODE,
            } => assert_eq!((got_role, got_handle), (role, handle)),
            StreamResult::TeardownFinished { first_error: Some(_) } => {}
            other => panic!("a failed destroy of {handle} was reported as {other:?}"),
        }
    }

    fn readiness(&mut self) -> Readiness {
        let readiness = self.pair.ready();
        self.check();
        readiness
    }

    fn submit(&mut self, run: u64) -> Result<(), SubmitError> {
        let outcome = self.pair.submit(Owner(run));
        self.check();
        outcome
    }

    fn retire(&mut self, run: u64, how: Retirement) -> Retired {
        let retired = self.pair.retire(Owner(run), how);
        self.check();
        retired
    }

    fn withdraw(&mut self, run: u64) -> Result<(), WithdrawError> {
        let outcome = self.pair.withdraw(Owner(run));
        self.check();
        outcome
    }

    fn mark_stale(&mut self) {
        self.pair.mark_stale();
        self.check();
    }

    fn queue(&self) -> Vec<u64> {
        self.pair.submissions().iter().map(|owner| owner.0).collect()
    }

    fn aicore_state(&self) -> StreamState {
        self.pair.stream(Role::Aicore).state
    }
}

/// A healthy destroy (every submission on the stream retired `Complete`).
fn destroy(role: Role, handle: StreamHandle) -> Effect {
    Effect::Destroy { role, handle, mode: DestroyMode::Healthy }
}

/// A forced destroy (a submission on the stream retired `Unproven`).
fn force_destroy(role: Role, handle: StreamHandle) -> Effect {
    Effect::Destroy { role, handle, mode: DestroyMode::Force }
}

// --- Depth and the FIFO (S-2) ---

#[test]
fn launch_depth_outside_one_to_max_is_refused() {
    assert_eq!(LaunchDepth::new(0).map_err(|e| e.depth), Err(0));
    assert_eq!(LaunchDepth::new(MAX_DEPTH + 1).map_err(|e| e.depth), Err(5));
    for depth in 1..=MAX_DEPTH {
        assert_eq!(LaunchDepth::new(depth).map(LaunchDepth::get), Ok(depth));
    }
}

#[test]
fn first_ready_creates_both_streams_aicpu_first_then_reports_ready() {
    let mut rig = Rig::new(2);
    let effects = rig.pending();
    assert_eq!(
        effects.as_slice(),
        [Effect::Create { role: Role::Aicpu }, Effect::Create { role: Role::Aicore }]
    );
    // Results outstanding: ready() asks for nothing more.
    assert_eq!(rig.readiness(), Readiness::Pending(Effects::new()));
    rig.succeed(effects[0]);
    rig.succeed(effects[1]);
    let (aicpu, aicore) = rig.pair.handles().expect("both live");
    assert_ne!(aicpu, aicore);
    assert_eq!(rig.readiness(), Readiness::Ready { aicpu, aicore });
}

#[test]
fn submissions_form_a_fifo_front_first_up_to_the_launch_depth() {
    let (mut rig, _, _) = Rig::ready_pair(MAX_DEPTH);
    for run in 1..=u64::from(MAX_DEPTH) {
        rig.submit(run).expect("room in the FIFO");
    }
    assert_eq!(rig.queue(), [1, 2, 3, 4]);
    assert_eq!(rig.submit(9), Err(SubmitError::Full { depth: MAX_DEPTH }));
    assert_eq!(rig.retire(1, Retirement::Complete), Retired::Kept);
    assert_eq!(rig.queue(), [2, 3, 4]);
    rig.submit(9).expect("room again after a retirement");
    assert_eq!(rig.queue(), [2, 3, 4, 9]);
}

#[test]
fn depth_one_refuses_a_second_submission_until_the_first_retires() {
    let (mut rig, _, _) = Rig::ready_pair(1);
    rig.submit(1).expect("first submission");
    assert_eq!(rig.submit(2), Err(SubmitError::Full { depth: 1 }));
    assert_eq!(rig.retire(1, Retirement::Complete), Retired::Kept);
    rig.submit(2).expect("the FIFO has room");
}

#[test]
fn submit_before_the_pair_is_ready_is_refused() {
    let mut rig = Rig::new(2);
    assert_eq!(rig.submit(1), Err(SubmitError::NotReady));
    let effects = rig.pending();
    assert_eq!(rig.submit(1), Err(SubmitError::NotReady));
    rig.succeed(effects[0]);
    assert_eq!(rig.submit(1), Err(SubmitError::NotReady), "AICore still creating");
    rig.succeed(effects[1]);
    rig.submit(1).expect("both streams live");
}

#[test]
fn submit_refuses_an_owner_already_queued() {
    let (mut rig, _, _) = Rig::ready_pair(2);
    rig.submit(1).expect("first submission");
    assert_eq!(rig.submit(1), Err(SubmitError::DuplicateOwner { owner: Owner(1) }));
    assert_eq!(rig.queue(), [1]);
}

#[test]
fn withdraw_removes_a_not_started_submission_from_any_position_without_marking_stale() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(MAX_DEPTH);
    for run in 1..=3 {
        rig.submit(run).expect("room");
    }
    rig.withdraw(2).expect("middle entry");
    assert_eq!(rig.queue(), [1, 3]);
    rig.withdraw(3).expect("back entry");
    rig.withdraw(1).expect("front entry");
    assert!(rig.queue().is_empty());
    assert!(!rig.pair.is_replacement_pending());
    assert_eq!(rig.readiness(), Readiness::Ready { aicpu, aicore });
    assert_eq!(rig.pair.created_count(), 1);
}

#[test]
fn withdraw_of_an_owner_without_a_submission_is_refused() {
    let (mut rig, _, _) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    assert_eq!(rig.withdraw(2), Err(WithdrawError::NotSubmitted { owner: Owner(2) }));
    rig.withdraw(1).expect("queued");
    assert_eq!(rig.withdraw(1), Err(WithdrawError::NotSubmitted { owner: Owner(1) }));
}

// --- Reuse and replacement (S-1, S-4, S-6) ---

#[test]
fn many_runs_without_publication_create_the_aicore_stream_once() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    for run in 1..=100 {
        assert_eq!(rig.ready(), (aicpu, aicore));
        rig.submit(run).expect("ready pair");
        assert_eq!(rig.retire(run, Retirement::Complete), Retired::Kept);
    }
    assert_eq!(rig.pair.created_count(), 1);
}

#[test]
fn publication_when_idle_replaces_only_the_aicore_stream_at_the_next_ready() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.mark_stale();
    assert!(rig.pair.is_replacement_pending());
    assert_eq!(rig.pending().as_slice(), [destroy(Role::Aicore, aicore)]);
    let (aicpu_after, aicore_after) = rig.ready();
    assert_eq!(aicpu_after, aicpu, "the AICPU stream survives a publication");
    assert_ne!(aicore_after, aicore);
    assert_eq!(rig.pair.created_count(), 2);
    assert!(!rig.pair.is_replacement_pending());
}

#[test]
fn publication_while_runs_are_queued_replaces_aicore_only_after_the_fifo_drains() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    rig.submit(2).expect("room");
    rig.mark_stale();
    assert_eq!(rig.readiness(), Readiness::Draining);
    assert_eq!(rig.retire(1, Retirement::Complete), Retired::Kept);
    assert_eq!(rig.readiness(), Readiness::Draining, "run 2 is still on it");
    assert_eq!(rig.pair.handles(), Some((aicpu, aicore)));
    assert_eq!(rig.retire(2, Retirement::Complete), Retired::Kept);
    assert_eq!(rig.pending().as_slice(), [destroy(Role::Aicore, aicore)]);
    let (aicpu_after, aicore_after) = rig.ready();
    assert_eq!(aicpu_after, aicpu);
    assert_ne!(aicore_after, aicore);
    assert_eq!(rig.pair.created_count(), 2);
}

#[test]
fn publication_while_a_run_is_in_flight_creates_no_stream_until_it_retires() {
    // C++ #1852 S2: P launched, publication, S prepared: nothing happens to the streams
    // until P retires; the replacement happens at S's launch.
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("P");
    rig.mark_stale();
    assert_eq!(rig.readiness(), Readiness::Draining);
    assert_eq!(rig.submit(2), Err(SubmitError::ReplacementPending));
    assert_eq!(rig.pair.created_count(), 1);
    assert_eq!(rig.pair.handles(), Some((aicpu, aicore)));
    assert_eq!(rig.retire(1, Retirement::Complete), Retired::Kept);
    rig.ready();
    rig.submit(2).expect("S launches on the replacement");
    assert_eq!(rig.pair.created_count(), 2);
}

#[test]
fn submit_is_refused_while_a_replacement_is_pending_until_it_completes() {
    let (mut rig, _, _) = Rig::ready_pair(2);
    rig.mark_stale();
    assert_eq!(rig.submit(1), Err(SubmitError::ReplacementPending));
    let effects = rig.pending();
    assert_eq!(rig.submit(1), Err(SubmitError::ReplacementPending));
    rig.succeed(effects[0]);
    assert_eq!(rig.submit(1), Err(SubmitError::NotReady), "AICore absent");
    rig.ready();
    rig.submit(1).expect("fresh pair");
}

#[test]
fn unproven_retirement_at_the_front_schedules_replacement_of_aicore_only() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    assert_eq!(rig.retire(1, Retirement::Unproven), Retired::ReplacementScheduled);
    assert!(rig.pair.is_replacement_pending());
    assert_eq!(rig.pending().as_slice(), [force_destroy(Role::Aicore, aicore)]);
    assert_eq!(rig.ready().0, aicpu, "the AICPU stream survives");
}

#[test]
fn unproven_retirement_of_a_successor_waits_for_the_front_before_replacing() {
    let (mut rig, _, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("P");
    rig.submit(2).expect("S");
    assert_eq!(rig.retire(2, Retirement::Unproven), Retired::ReplacementScheduled);
    assert_eq!(rig.queue(), [1]);
    assert_eq!(rig.readiness(), Readiness::Draining);
    assert_eq!(rig.retire(1, Retirement::Complete), Retired::Kept);
    assert_eq!(rig.pending().as_slice(), [force_destroy(Role::Aicore, aicore)]);
}

#[test]
fn an_unproven_retirement_after_a_publication_forces_the_replacement() {
    // Stale for a publication (healthy) and then unproven: the stream may hold stuck work.
    let (mut rig, _, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    rig.mark_stale();
    assert_eq!(rig.retire(1, Retirement::Unproven), Retired::ReplacementScheduled);
    assert_eq!(rig.pending().as_slice(), [force_destroy(Role::Aicore, aicore)]);
}

#[test]
fn the_stream_created_after_a_forced_replacement_is_destroyed_healthy() {
    let (mut rig, _, _) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    assert_eq!(rig.retire(1, Retirement::Unproven), Retired::ReplacementScheduled);
    let (_, fresh) = rig.ready();
    rig.mark_stale();
    assert_eq!(rig.pending().as_slice(), [destroy(Role::Aicore, fresh)]);
}

#[test]
fn the_teardown_forces_an_unproven_stream_and_destroys_the_others_healthy() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    assert_eq!(rig.retire(1, Retirement::Unproven), Retired::ReplacementScheduled);
    let effects = rig.pair.destroy_all().expect("idle pair");
    rig.check();
    assert_eq!(
        effects.as_slice(),
        [destroy(Role::Aicpu, aicpu), force_destroy(Role::Aicore, aicore)]
    );
}

// --- Retirement ownership (S-3, S-5) ---

// --- A sticky code on the AICPU stream (S-1, L-8a) ---

#[test]
fn a_sticky_retirement_keeps_the_queued_successor_and_replaces_only_the_aicpu_stream_once_it_retires()
 {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("P");
    rig.submit(2).expect("S");
    assert_eq!(rig.retire(1, Retirement::Sticky), Retired::StickyMarked);
    assert_eq!(rig.pair.sticky(), Some(Owner(1)));
    assert!(rig.pair.is_replacement_pending());
    assert_eq!(rig.queue(), [2], "the successor queued on it stays");
    assert_eq!(
        rig.submit(3),
        Err(SubmitError::ReplacementPending),
        "nothing new joins a stream that holds a sticky code"
    );
    assert_eq!(rig.readiness(), Readiness::Draining);
    assert_eq!(rig.retire(2, Retirement::Complete), Retired::Kept);
    assert_eq!(
        rig.pending().as_slice(),
        [destroy(Role::Aicpu, aicpu)],
        "its work finished: a healthy destroy of the AICPU stream alone"
    );
    let (fresh, kept) = rig.ready();
    assert_ne!(fresh, aicpu, "a new AICPU stream");
    assert_eq!(kept, aicore, "the AICore stream survives");
    assert_eq!(rig.pair.sticky(), None, "the new stream holds no code");
    rig.submit(3).expect("the fresh pair takes submissions");
}

#[test]
fn a_sticky_mark_learnt_before_the_retirement_holds_new_submissions_back_until_the_stream_is_replaced()
 {
    let (mut rig, aicpu, _) = Rig::ready_pair(2);
    rig.submit(1).expect("P");
    rig.submit(2).expect("S");
    rig.apply(Input::MarkSticky(Owner(2))).expect("marked");
    assert_eq!(rig.pair.sticky(), Some(Owner(2)));
    assert_eq!(rig.submit(3), Err(SubmitError::ReplacementPending));
    assert_eq!(rig.retire(1, Retirement::Complete), Retired::Kept);
    assert_eq!(rig.retire(2, Retirement::Sticky), Retired::StickyMarked);
    assert_eq!(rig.pending().as_slice(), [destroy(Role::Aicpu, aicpu)]);
}

#[test]
fn an_out_of_order_sticky_retirement_marks_both_streams() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("P");
    rig.submit(2).expect("S");
    assert_eq!(rig.retire(2, Retirement::Sticky), Retired::ConvertedToUnproven);
    assert_eq!(rig.pair.sticky(), Some(Owner(2)));
    assert_eq!(rig.retire(1, Retirement::Complete), Retired::Kept);
    assert_eq!(
        rig.pending().as_slice(),
        [destroy(Role::Aicpu, aicpu), force_destroy(Role::Aicore, aicore)]
    );
}

#[test]
fn the_first_sticky_code_names_the_stream_and_an_abandon_forgets_it() {
    let (mut rig, _, _) = Rig::ready_pair(2);
    rig.submit(1).expect("P");
    rig.submit(2).expect("S");
    assert_eq!(rig.retire(1, Retirement::Sticky), Retired::StickyMarked);
    assert_eq!(rig.retire(2, Retirement::Sticky), Retired::StickyMarked);
    assert_eq!(rig.pair.sticky(), Some(Owner(1)), "the first code is the one returned");
    rig.apply(Input::Abandon).expect("abandon");
    assert_eq!(rig.pair.sticky(), None);
    assert!(!rig.pair.is_replacement_pending());
}

#[test]
fn non_submitting_owner_unproven_retire_leaves_the_live_stream_alone() {
    // C++ #1852 S1: P launched, successor S prepared but never submitted, S fails and its
    // cleanup retires Unproven: P's stream must be untouched.
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("P");
    assert_eq!(rig.retire(2, Retirement::Unproven), Retired::NotOwner);
    assert!(!rig.pair.is_replacement_pending());
    assert_eq!(rig.queue(), [1]);
    assert_eq!(rig.retire(1, Retirement::Complete), Retired::Kept);
    assert_eq!(rig.readiness(), Readiness::Ready { aicpu, aicore });
}

#[test]
fn complete_retirement_at_the_front_keeps_the_stream() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    rig.submit(2).expect("room");
    assert_eq!(rig.retire(1, Retirement::Complete), Retired::Kept);
    assert_eq!(rig.retire(2, Retirement::Complete), Retired::Kept);
    assert!(!rig.pair.is_replacement_pending());
    assert_eq!(rig.readiness(), Readiness::Ready { aicpu, aicore });
}

#[test]
fn out_of_order_complete_does_not_leak_its_entry_and_the_pair_is_reusable_after_draining() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("P");
    rig.submit(2).expect("S");
    assert_eq!(rig.retire(2, Retirement::Complete), Retired::ConvertedToUnproven);
    assert_eq!(rig.queue(), [1], "the out-of-order entry left the FIFO");
    assert!(rig.pair.is_replacement_pending());
    assert_eq!(rig.retire(1, Retirement::Complete), Retired::Kept);
    assert_eq!(rig.pending().as_slice(), [force_destroy(Role::Aicore, aicore)]);
    let (aicpu_after, _) = rig.ready();
    assert_eq!(aicpu_after, aicpu);
    // Full depth is available again: nothing leaked.
    rig.submit(3).expect("room");
    rig.submit(4).expect("room");
}

#[test]
fn second_retire_of_the_same_owner_is_a_no_op() {
    let (mut rig, _, _) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    rig.submit(2).expect("room");
    assert_eq!(rig.retire(1, Retirement::Complete), Retired::Kept);
    let before = rig.pair.clone();
    assert_eq!(rig.retire(1, Retirement::Unproven), Retired::NotOwner);
    assert_eq!(rig.pair, before);
}

#[test]
fn retire_of_a_withdrawn_submission_is_a_no_op() {
    let (mut rig, _, _) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    rig.withdraw(1).expect("queued");
    assert_eq!(rig.retire(1, Retirement::Unproven), Retired::NotOwner);
    assert!(!rig.pair.is_replacement_pending());
}

// --- Effects only on the launch path (L-4) ---

#[test]
fn a_result_emits_nothing_the_replacement_create_waits_for_the_next_ready() {
    let (mut rig, _, aicore) = Rig::ready_pair(2);
    rig.mark_stale();
    rig.pending();
    assert_eq!(
        rig.event(Input::Destroyed { role: Role::Aicore, handle: aicore }),
        Ok(StreamResult::Destroyed { role: Role::Aicore })
    );
    assert_eq!(rig.aicore_state(), StreamState::Absent);
    assert_eq!(rig.pending().as_slice(), [Effect::Create { role: Role::Aicore }]);
}

#[test]
fn retirement_and_publication_emit_no_effects_even_when_the_fifo_empties() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    rig.mark_stale();
    assert_eq!(
        rig.apply(Input::Retire(Owner(1), Retirement::Unproven)),
        Ok(Step::Retired(Retired::ReplacementScheduled))
    );
    // Nothing was destroyed yet: the destroy waits for the launch path.
    assert_eq!(rig.pair.handles(), Some((aicpu, aicore)));
    assert_eq!(rig.aicore_state(), StreamState::Live(aicore));
}

// --- Failures (S-7) ---

#[test]
fn failed_stale_destroy_is_reported_keeps_the_handle_and_is_retried() {
    // C++ #1852 S3 and finding A: a surviving handle must be replaced, never reused.
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.mark_stale();
    assert_eq!(rig.pending().as_slice(), [destroy(Role::Aicore, aicore)]);
    assert_eq!(
        rig.event(Input::DestroyFailed { role: Role::Aicore, handle: aicore, code: DESTROY_CODE }),
        Ok(StreamResult::DestroyFailed { role: Role::Aicore, handle: aicore, code: DESTROY_CODE })
    );
    assert_eq!(rig.pair.handles(), Some((aicpu, aicore)), "handle kept");
    assert!(rig.pair.is_replacement_pending(), "still stale");
    assert_eq!(rig.submit(1), Err(SubmitError::ReplacementPending));
    assert_eq!(rig.pending().as_slice(), [destroy(Role::Aicore, aicore)], "retried");
    rig.succeed(destroy(Role::Aicore, aicore));
    let (_, aicore_after) = rig.ready();
    assert_ne!(aicore_after, aicore);
}

#[test]
fn failed_destroy_after_an_unproven_retirement_never_makes_the_stream_reusable() {
    // Finding A: ensure, submit, retire(Unproven) with a failing destroy, then ensure
    // reused the same handle.
    let (mut rig, _, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    assert_eq!(rig.retire(1, Retirement::Unproven), Retired::ReplacementScheduled);
    rig.pending();
    rig.fail_destroy(Role::Aicore, aicore);
    for _ in 0..3 {
        match rig.readiness() {
            Readiness::Pending(effects) => {
                assert_eq!(effects.as_slice(), [force_destroy(Role::Aicore, aicore)]);
                rig.fail_destroy(Role::Aicore, aicore);
            }
            other => panic!("the unproven stream was offered for reuse: {other:?}"),
        }
    }
}

#[test]
fn failed_create_leaves_the_pair_not_ready_and_reports_role_and_code() {
    let mut rig = Rig::new(2);
    let effects = rig.pending();
    rig.succeed(effects[0]);
    assert_eq!(
        rig.event(Input::CreateFailed { role: Role::Aicore, code: CREATE_CODE }),
        Ok(StreamResult::CreateFailed(stream_pair::StreamFailure {
            role: Role::Aicore,
            code: CREATE_CODE
        }))
    );
    assert_eq!(rig.pair.handles(), None);
    assert_eq!(rig.submit(1), Err(SubmitError::NotReady));
    assert_eq!(rig.pair.created_count(), 0);
}

#[test]
fn failed_create_is_asked_again_by_the_next_ready_and_the_aicpu_stream_is_kept() {
    let mut rig = Rig::new(2);
    let effects = rig.pending();
    rig.succeed(effects[0]);
    let aicpu = match rig.pair.stream(Role::Aicpu).state {
        StreamState::Live(handle) => handle,
        other => panic!("AICPU not live: {other:?}"),
    };
    assert_eq!(
        rig.event(Input::CreateFailed { role: Role::Aicore, code: CREATE_CODE }),
        Ok(StreamResult::CreateFailed(StreamFailure { role: Role::Aicore, code: CREATE_CODE }))
    );
    assert_eq!(rig.pending().as_slice(), [Effect::Create { role: Role::Aicore }]);
    rig.succeed(Effect::Create { role: Role::Aicore });
    assert_eq!(rig.ready().0, aicpu);
}

// --- Teardown and abandon (S-7, S-8) ---

#[test]
fn destroy_all_destroys_both_and_finishes_when_both_results_are_in() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    let effects = rig.pair.destroy_all().expect("idle pair");
    rig.check();
    assert_eq!(effects.as_slice(), [destroy(Role::Aicpu, aicpu), destroy(Role::Aicore, aicore)]);
    assert!(!rig.pair.teardown_complete());
    assert_eq!(rig.readiness(), Readiness::Closing);
    assert_eq!(rig.submit(1), Err(SubmitError::NotReady));
    assert_eq!(rig.answer(effects[0]), StreamResult::Destroyed { role: Role::Aicpu });
    assert_eq!(rig.answer(effects[1]), StreamResult::TeardownFinished { first_error: None });
    assert!(rig.pair.teardown_complete());
    assert_eq!(rig.pair.stream(Role::Aicpu).state, StreamState::Absent);
    assert_eq!(rig.aicore_state(), StreamState::Absent);
}

#[test]
fn destroy_all_with_one_failure_reports_it_once_all_results_are_in_and_keeps_the_survivor_stale() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.pair.destroy_all().expect("idle pair");
    assert_eq!(
        rig.event(Input::DestroyFailed { role: Role::Aicpu, handle: aicpu, code: DESTROY_CODE }),
        Ok(StreamResult::DestroyFailed { role: Role::Aicpu, handle: aicpu, code: DESTROY_CODE })
    );
    assert!(!rig.pair.teardown_complete(), "the AICore result is outstanding");
    assert_eq!(
        rig.answer(destroy(Role::Aicore, aicore)),
        StreamResult::TeardownFinished {
            first_error: Some(stream_pair::StreamFailure { role: Role::Aicpu, code: DESTROY_CODE })
        }
    );
    let survivor = rig.pair.stream(Role::Aicpu);
    assert_eq!(survivor.state, StreamState::Live(aicpu));
    assert!(survivor.stale);
}

#[test]
fn teardown_survivor_is_destroyed_before_the_pair_is_reused() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.pair.destroy_all().expect("idle pair");
    assert_eq!(
        rig.event(Input::Destroyed { role: Role::Aicpu, handle: aicpu }),
        Ok(StreamResult::Destroyed { role: Role::Aicpu })
    );
    rig.fail_destroy(Role::Aicore, aicore);
    assert!(rig.pair.is_replacement_pending());
    assert_eq!(
        rig.pending().as_slice(),
        [Effect::Create { role: Role::Aicpu }, destroy(Role::Aicore, aicore)]
    );
    rig.succeed(Effect::Create { role: Role::Aicpu });
    rig.succeed(destroy(Role::Aicore, aicore));
    let (_, aicore_after) = rig.ready();
    assert_ne!(aicore_after, aicore);
}

#[test]
fn destroy_all_is_refused_while_submissions_are_queued() {
    let (mut rig, _, _) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    let before = rig.pair.clone();
    assert_eq!(rig.pair.destroy_all(), Err(Rejection::SubmissionsQueued { queued: 1 }));
    assert_eq!(rig.pair, before);
}

#[test]
fn destroy_all_is_refused_while_results_are_outstanding() {
    let mut rig = Rig::new(2);
    rig.pending();
    assert_eq!(
        rig.apply(Input::DestroyAll),
        Err(Rejection::ResultsOutstanding { role: Role::Aicpu })
    );
    let (mut rig, _, _) = Rig::ready_pair(2);
    rig.pair.destroy_all().expect("idle");
    assert_eq!(rig.apply(Input::DestroyAll), Err(Rejection::TeardownInProgress));
}

#[test]
fn destroy_all_of_a_pair_without_streams_emits_nothing_and_leaves_it_cold() {
    let mut rig = Rig::new(2);
    assert_eq!(rig.pair.destroy_all(), Ok(Effects::new()));
    assert!(rig.pair.teardown_complete());
    assert_eq!(rig.pending().len(), 2);
}

#[test]
fn abandon_emits_no_destroy_forgets_everything_and_the_next_ready_creates_both_afresh() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    rig.submit(1).expect("room");
    rig.mark_stale();
    assert_eq!(rig.apply(Input::Abandon), Ok(Step::Abandoned));
    assert!(rig.queue().is_empty());
    assert_eq!(rig.pair.handles(), None);
    assert!(!rig.pair.is_replacement_pending());
    assert_eq!(
        rig.pending().as_slice(),
        [Effect::Create { role: Role::Aicpu }, Effect::Create { role: Role::Aicore }]
    );
    let (aicpu_after, aicore_after) = rig.ready();
    assert!(aicpu_after != aicpu && aicore_after != aicore);
    assert_eq!(rig.pair.created_count(), 2);
}

#[test]
fn results_of_effects_emitted_before_an_abandon_are_rejected() {
    let (mut rig, _, aicore) = Rig::ready_pair(2);
    rig.mark_stale();
    rig.pending();
    rig.pair.abandon();
    assert_eq!(
        rig.event(Input::Destroyed { role: Role::Aicore, handle: aicore }),
        Err(Rejection::NotBeingDestroyed { role: Role::Aicore, handle: aicore })
    );
}

// --- Results that answer nothing ---

#[test]
fn results_that_answer_nothing_are_rejected_without_change() {
    let (mut rig, aicpu, aicore) = Rig::ready_pair(2);
    let wrong = StreamHandle(9_999);
    let cases = [
        (
            Input::Created { role: Role::Aicore, handle: wrong },
            Rejection::NoCreateInFlight { role: Role::Aicore },
        ),
        (
            Input::CreateFailed { role: Role::Aicpu, code: CREATE_CODE },
            Rejection::NoCreateInFlight { role: Role::Aicpu },
        ),
        (
            Input::Destroyed { role: Role::Aicore, handle: aicore },
            Rejection::NotBeingDestroyed { role: Role::Aicore, handle: aicore },
        ),
        (
            Input::DestroyFailed { role: Role::Aicpu, handle: aicpu, code: DESTROY_CODE },
            Rejection::NotBeingDestroyed { role: Role::Aicpu, handle: aicpu },
        ),
    ];
    for (event, rejection) in cases {
        assert_eq!(rig.event(event), Err(rejection), "{event}");
    }
    // A destroy in flight: only its own handle answers it.
    rig.mark_stale();
    rig.pending();
    assert_eq!(
        rig.event(Input::Destroyed { role: Role::Aicore, handle: wrong }),
        Err(Rejection::NotBeingDestroyed { role: Role::Aicore, handle: wrong })
    );
    assert_eq!(
        rig.event(Input::Destroyed { role: Role::Aicpu, handle: aicore }),
        Err(Rejection::NotBeingDestroyed { role: Role::Aicpu, handle: aicore })
    );
    assert_eq!(rig.aicore_state(), StreamState::Destroying(aicore));
}

#[test]
fn handle_refuses_an_input_that_is_not_a_result_without_change() {
    let (mut rig, _, _) = Rig::ready_pair(2);
    for input in
        [Input::Ready, Input::Submit(Owner(1)), Input::MarkStale, Input::DestroyAll, Input::Abandon]
    {
        assert_eq!(rig.event(input), Err(Rejection::NotAResult { input }));
    }
    assert!(rig.queue().is_empty());
}

#[test]
fn created_with_the_other_streams_handle_is_rejected() {
    let mut rig = Rig::new(2);
    rig.pending();
    let shared = StreamHandle(7);
    assert_eq!(
        rig.event(Input::Created { role: Role::Aicpu, handle: shared }),
        Ok(StreamResult::Created { role: Role::Aicpu, handle: shared })
    );
    assert_eq!(
        rig.event(Input::Created { role: Role::Aicore, handle: shared }),
        Err(Rejection::HandleInUse { role: Role::Aicore, handle: shared })
    );
    assert_eq!(rig.aicore_state(), StreamState::Creating);
}

// --- Counting and staleness details ---

#[test]
fn created_count_counts_only_aicore_creations() {
    let mut rig = Rig::new(2);
    let effects = rig.pending();
    rig.succeed(effects[0]);
    assert_eq!(rig.pair.created_count(), 0, "an AICPU creation does not count");
    rig.succeed(effects[1]);
    assert_eq!(rig.pair.created_count(), 1);
    rig.mark_stale();
    rig.ready();
    assert_eq!(rig.pair.created_count(), 2);
}

#[test]
fn publication_during_a_create_makes_the_new_stream_stale() {
    let mut rig = Rig::new(2);
    let effects = rig.pending();
    rig.mark_stale();
    rig.succeed(effects[0]);
    let aicore = match rig.answer(effects[1]) {
        StreamResult::Created { handle, .. } => handle,
        other => panic!("expected Created, got {other:?}"),
    };
    assert!(rig.pair.is_replacement_pending());
    assert_eq!(rig.pending().as_slice(), [destroy(Role::Aicore, aicore)]);
}

#[test]
fn publication_with_no_aicore_stream_marks_nothing() {
    let mut rig = Rig::new(2);
    let before = rig.pair.clone();
    rig.mark_stale();
    assert_eq!(rig.pair, before);
    assert!(!rig.pair.is_replacement_pending());
}

// --- Arbitrary sequences ---

/// A tiny deterministic PRNG (Knuth's MMIX LCG), so the test needs no dependency.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// An input that is often the right answer to what is outstanding (so deep states are
/// reached) and otherwise anything at all.
fn arbitrary_input(rng: &mut Lcg, pair: &StreamPair, fresh: &mut u64) -> Input {
    let role = if rng.below(2) == 0 { Role::Aicpu } else { Role::Aicore };
    let owner = Owner(rng.below(6));
    let how = match rng.below(6) {
        0 | 1 => Retirement::Unproven,
        2 => Retirement::Sticky,
        _ => Retirement::Complete,
    };
    let code = 507_000 + i32::try_from(rng.below(1_000)).unwrap_or(0);
    let handle = match rng.below(3) {
        0 => StreamHandle(rng.below(4)),
        _ => match pair.stream(role).state {
            StreamState::Live(handle) | StreamState::Destroying(handle) => handle,
            StreamState::Absent | StreamState::Creating => StreamHandle(rng.below(4)),
        },
    };
    let fails = rng.below(4) == 0;
    match rng.below(20) {
        0..=4 => match pair.stream(role).state {
            StreamState::Creating if fails => Input::CreateFailed { role, code },
            StreamState::Creating => {
                *fresh += 1;
                Input::Created { role, handle: StreamHandle(*fresh) }
            }
            StreamState::Destroying(handle) if fails => Input::DestroyFailed { role, handle, code },
            StreamState::Destroying(handle) => Input::Destroyed { role, handle },
            StreamState::Absent | StreamState::Live(_) => Input::Ready,
        },
        5..=6 => Input::Ready,
        7..=8 => Input::Submit(owner),
        9 => Input::Withdraw(owner),
        10..=11 => Input::Retire(owner, how),
        12 if rng.below(2) == 0 => Input::MarkSticky(owner),
        12 => Input::MarkStale,
        13 => Input::Created { role, handle },
        14 => Input::CreateFailed { role, code },
        15 => Input::Destroyed { role, handle },
        16 => Input::DestroyFailed { role, handle, code },
        17 => Input::DestroyAll,
        18 if rng.below(4) == 0 => Input::Abandon,
        _ => Input::Ready,
    }
}

#[test]
fn arbitrary_input_sequences_keep_every_invariant() {
    let mut reached_ready_full = false;
    let mut reached_teardown_finish = false;
    for depth in 1..=MAX_DEPTH {
        for seed in 0..8u64 {
            let mut rng = Lcg(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(depth));
            let mut rig = Rig::new(depth);
            let mut fresh = 1_000;
            for step in 0..5_000 {
                let input = arbitrary_input(&mut rng, &rig.pair, &mut fresh);
                let queued = rig.pair.submissions().len();
                // `Rig::apply` checks the invariants and that a rejection changed nothing.
                let outcome = rig.apply(input);
                match &outcome {
                    Ok(Step::Readiness(Readiness::Ready { aicpu, aicore })) => {
                        assert_eq!(rig.pair.handles(), Some((*aicpu, *aicore)));
                        assert!(!rig.pair.is_replacement_pending());
                    }
                    Ok(Step::Readiness(Readiness::Pending(effects))) => {
                        for effect in effects {
                            if let Effect::Destroy { .. } = effect {
                                assert_eq!(
                                    queued, 0,
                                    "seed {seed} step {step}: destroy under a queued submission"
                                );
                            }
                        }
                    }
                    Ok(Step::Submitted) => {
                        reached_ready_full |= rig.pair.submissions().len() == usize::from(depth);
                    }
                    Ok(Step::Result(StreamResult::TeardownFinished { .. })) => {
                        reached_teardown_finish = true;
                    }
                    _ => {}
                }
            }
        }
    }
    assert!(reached_ready_full, "the generator never filled the FIFO");
    assert!(reached_teardown_finish, "the generator never finished a teardown");
}

#[test]
fn typed_wrappers_agree_with_apply() {
    let mut rng = Lcg(0x5eed);
    let depth = LaunchDepth::new(2).expect("in range");
    let mut by_apply = StreamPair::new(depth);
    let mut by_wrappers = StreamPair::new(depth);
    let mut fresh = 1_000;
    for step in 0..20_000 {
        let input = arbitrary_input(&mut rng, &by_apply, &mut fresh);
        let want = by_apply.apply(input);
        match input {
            Input::Ready => {
                let got = by_wrappers.ready();
                assert_eq!(want, Ok(Step::Readiness(got)), "step {step}");
            }
            Input::Submit(owner) => {
                let got = by_wrappers.submit(owner).map_err(Rejection::from);
                assert_eq!(want.map(|_| ()), got, "step {step}");
            }
            Input::Withdraw(owner) => {
                let got = by_wrappers.withdraw(owner).map_err(Rejection::from);
                assert_eq!(want.map(|_| ()), got, "step {step}");
            }
            Input::Retire(owner, how) => {
                let got = by_wrappers.retire(owner, how);
                assert_eq!(want, Ok(Step::Retired(got)), "step {step}");
            }
            Input::MarkStale => {
                by_wrappers.mark_stale();
                assert_eq!(want, Ok(Step::MarkedStale), "step {step}");
            }
            Input::MarkSticky(owner) => {
                by_wrappers.mark_sticky(owner);
                assert_eq!(want, Ok(Step::MarkedSticky), "step {step}");
            }
            Input::Created { .. }
            | Input::CreateFailed { .. }
            | Input::Destroyed { .. }
            | Input::DestroyFailed { .. } => {
                let got = by_wrappers.handle(input);
                assert_eq!(want, got.map(Step::Result), "step {step}");
            }
            Input::DestroyAll => {
                let got = by_wrappers.destroy_all();
                assert_eq!(want, got.map(Step::Teardown), "step {step}");
            }
            Input::Abandon => {
                by_wrappers.abandon();
                assert_eq!(want, Ok(Step::Abandoned), "step {step}");
            }
        }
        assert_eq!(by_apply, by_wrappers, "step {step}: {input}");
    }
}

#[test]
fn exactly_the_four_backend_answers_are_results() {
    let (role, handle) = (Role::Aicore, StreamHandle(7));
    let results = [
        Input::Created { role, handle },
        Input::CreateFailed { role, code: -1 },
        Input::Destroyed { role, handle },
        Input::DestroyFailed { role, handle, code: -1 },
    ];
    let others = [
        Input::Ready,
        Input::Submit(Owner(1)),
        Input::Withdraw(Owner(1)),
        Input::Retire(Owner(1), Retirement::Complete),
        Input::MarkStale,
        Input::DestroyAll,
        Input::Abandon,
    ];
    for input in results {
        assert!(input.is_result(), "{input}");
    }
    for input in others {
        assert!(!input.is_result(), "{input}");
    }
}

#[test]
fn destroy_modes_read_as_the_table_names_them() {
    // The rendered transition table and the lane's lines name a destroy by these words.
    assert_eq!(DestroyMode::Healthy.to_string(), "healthy");
    assert_eq!(DestroyMode::Force.to_string(), "force");
}
