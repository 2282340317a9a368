//! Target `stream_pair_orderings`: any ordering of submissions, withdrawals, retirements
//! (`Complete`, `Unproven` or `Sticky`, by any owner), publications, stream results (right or wrong,
//! successes and failures), teardowns and abandons on a [`StreamPair`].
//!
//! After every operation the pair is compared with `Model`, a reference written straight
//! from SPEC §4 (a `Vec` of owners, a lifecycle and a stale flag per stream), on everything it
//! answered and everything observable (`submissions()`, `handles()`, `stream()`,
//! `is_replacement_pending()`, `sticky()`, `created_count()`, `teardown_complete()`), and
//! `check_invariants()` must hold.

use arbitrary::Arbitrary;
use stream_pair::{
    DestroyMode, Effect, Effects, LaunchDepth, MAX_DEPTH, Owner, Readiness, Rejection, Retired,
    Retirement, Role, StreamFailure, StreamHandle, StreamPair, StreamResult, StreamState,
    StreamStatus, SubmitError, WithdrawError,
};

use crate::{Finding, Reached, decode, pick};

/// The target's name.
pub const NAME: &str = "stream_pair_orderings";

behaviours! {
    /// The behaviours a `stream_pair_orderings` input can reach, in [`Reached`] bit order.
    BEHAVIOURS;
    Ready => "ready",
    PendingCreate => "pending with a create",
    PendingDestroy => "pending with a replacement destroy",
    PendingEmpty => "pending on outstanding results",
    Draining => "draining",
    Closing => "closing",
    SubmittedToDepth => "submitted up to the launch depth",
    RefusedNotReady => "submit refused: not ready",
    RefusedReplacement => "submit refused: replacement pending",
    RefusedFull => "submit refused: full",
    RefusedDuplicate => "submit refused: duplicate owner",
    Withdrawn => "withdrawn",
    Kept => "retired complete, kept",
    Scheduled => "retired unproven",
    Converted => "complete out of order, converted",
    NotOwner => "retired by a non-owner",
    Created => "stream created",
    Replaced => "AICore stream created again (replaced)",
    Destroyed => "stream destroyed",
    CreateFailed => "create failed",
    DestroyFailed => "destroy failed",
    WrongResult => "wrong result rejected",
    HandleInUse => "duplicate handle rejected",
    TeardownClean => "teardown finished clean",
    TeardownError => "teardown finished with an error",
    TeardownRefused => "teardown refused",
    AbandonedQueue => "abandoned with submissions queued",
    StickyMarked => "retired sticky at the front, AICPU stream marked",
}

/// A `stream_pair_orderings` input: a launch depth and the operations to apply.
///
/// From raw bytes: the first byte is the depth, every byte after it belongs to an operation.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The launch depth, taken as `1 + depth % MAX_DEPTH`.
    pub depth: u8,
    /// The operations, in order.
    #[arbitrary(with = crate::dense)]
    pub ops: Vec<Op>,
}

/// One operation on the pair.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `ready()`: the launch path asks for the pair.
    Ready,
    /// `submit(owner)`.
    Submit(Who),
    /// `withdraw(owner)`.
    Withdraw(Who),
    /// `retire(owner, how)`.
    Retire(Who, How),
    /// `mark_stale()`: a publication.
    Publish,
    /// `handle(Created)` for `role` with the chosen handle.
    Created {
        /// The stream named.
        role: Side,
        /// The handle given.
        handle: Pick,
    },
    /// `handle(CreateFailed)` for `role`.
    CreateFailed {
        /// The stream named.
        role: Side,
        /// The backend's code.
        code: i32,
    },
    /// `handle(Destroyed)` for `role` with the chosen handle.
    Destroyed {
        /// The stream named.
        role: Side,
        /// The handle named.
        handle: Pick,
    },
    /// `handle(DestroyFailed)` for `role` with the chosen handle.
    DestroyFailed {
        /// The stream named.
        role: Side,
        /// The handle named.
        handle: Pick,
        /// The backend's code.
        code: i32,
    },
    /// `destroy_all()`: the close teardown.
    DestroyAll,
    /// `abandon()`: a device reset.
    Abandon,
    /// A well-behaved backend for a moment: answers every outstanding create and destroy
    /// with success, then calls `ready()`, twice. Reaches deep states in few bytes.
    Settle,
    /// `mark_sticky(owner)`: a covered run's record, read early, reports an error (L-8a).
    MarkSticky(Who),
}

/// Which owner an operation names, relative to what is live.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// The queued owner at `index % queued` (a fresh one when nothing is queued).
    Queued(u8),
    /// An owner never used before.
    Fresh,
    /// An owner that was queued once and has left, at `index % left` (fresh if none).
    Former(u8),
    /// `Owner(n)`: anyone, possibly queued.
    Raw(u8),
}

/// How a retirement ends.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// `Retirement::Complete`.
    Complete,
    /// `Retirement::Unproven`.
    Unproven,
    /// `Retirement::Sticky`.
    Sticky,
}

/// Which stream a result names.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The AICPU stream.
    Aicpu,
    /// The AICore stream.
    Aicore,
}

/// Which handle a result carries.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The right one: a new handle for a create, the handle being destroyed (or held) for a
    /// destroy.
    Right,
    /// The handle the other stream holds (a new one if it holds none).
    Other,
    /// A handle handed out earlier, at `index % handed out` (a new one if none).
    Earlier(u8),
    /// `StreamHandle(n)`: anything.
    Raw(u8),
}

/// Builds an [`Input`] from raw bytes (as libFuzzer does) and runs [`run`]; bytes that
/// build no input reach nothing.
pub fn run_bytes(data: &[u8]) -> Result<Reached, Finding> {
    decode::<Input>(data).map_or(Ok(Reached::default()), |input| run(&input))
}

/// Applies every operation to a pair and to the `Model`, comparing them after each.
pub fn run(input: &Input) -> Result<Reached, Finding> {
    let mut body = Body::new(input.depth);
    for (step, op) in input.ops.iter().enumerate() {
        body.op(*op).and_then(|()| body.compare()).map_err(|message| {
            Finding::new(
                NAME,
                Some(step),
                format!("{op:?}: {message}\n  pair:  {}\n  model: {:?}", body.pair, body.model),
            )
        })?;
    }
    Ok(body.reached)
}

/// A stream's lifecycle in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Life {
    Absent,
    Creating,
    Live(u64),
    Destroying(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ModelStream {
    life: Life,
    /// Must be destroyed and created again before a submission.
    stale: bool,
    /// A submission on it retired unproven: its destroy is forced.
    unproven: bool,
}

impl ModelStream {
    const ABSENT: Self = Self { life: Life::Absent, stale: false, unproven: false };

    fn destroy(self, role: Role, h: u64) -> Effect {
        Effect::Destroy {
            role,
            handle: StreamHandle(h),
            mode: if self.unproven { DestroyMode::Force } else { DestroyMode::Healthy },
        }
    }

    fn handle(self) -> Option<u64> {
        match self.life {
            Life::Live(h) | Life::Destroying(h) => Some(h),
            Life::Absent | Life::Creating => None,
        }
    }

    fn usable(self) -> bool {
        matches!(self.life, Life::Live(_)) && !self.stale
    }

    fn outstanding(self) -> bool {
        matches!(self.life, Life::Creating | Life::Destroying(_))
    }
}

/// The reference: SPEC §4 in the plainest terms.
#[derive(Clone, Debug)]
struct Model {
    depth: usize,
    /// S-2: the submissions, front first.
    fifo: Vec<u64>,
    /// `[AICPU, AICore]`.
    streams: [ModelStream; 2],
    /// A teardown waits for its destroys: `Some(first error)`.
    teardown: Option<Option<StreamFailure>>,
    /// AICore streams created.
    created: u64,
    /// S-1, L-8a: the owner whose sticky code the AICPU stream holds.
    sticky: Option<u64>,
}

fn index(role: Role) -> usize {
    match role {
        Role::Aicpu => 0,
        Role::Aicore => 1,
    }
}

/// Either the one answer, or the reasons any of which may refuse the input.
type Expected<T, E> = Result<T, Vec<E>>;

impl Model {
    fn stream(&self, role: Role) -> ModelStream {
        self.streams[index(role)]
    }

    fn stream_mut(&mut self, role: Role) -> &mut ModelStream {
        &mut self.streams[index(role)]
    }

    fn other(&self, role: Role) -> ModelStream {
        self.streams[1 - index(role)]
    }

    fn ready(&mut self) -> Readiness {
        if self.teardown.is_some() {
            return Readiness::Closing;
        }
        let mut effects = Effects::new();
        let mut outstanding = false;
        let queued = !self.fifo.is_empty();
        for role in Role::ALL {
            let stream = self.stream_mut(role);
            match stream.life {
                Life::Absent => {
                    stream.life = Life::Creating;
                    effects.push(Effect::Create { role });
                }
                // S-6: a stale stream is replaced only once nothing is queued on it.
                Life::Live(h) if stream.stale && !queued => {
                    stream.life = Life::Destroying(h);
                    effects.push(stream.destroy(role, h));
                }
                Life::Live(_) => {}
                Life::Creating | Life::Destroying(_) => outstanding = true,
            }
        }
        let [aicpu, aicore] = self.streams;
        match (aicpu.life, aicore.life) {
            (Life::Live(c), Life::Live(a)) if aicpu.usable() && aicore.usable() => {
                Readiness::Ready { aicpu: StreamHandle(c), aicore: StreamHandle(a) }
            }
            _ if outstanding || !effects.is_empty() => Readiness::Pending(effects),
            _ => Readiness::Draining,
        }
    }

    fn submit(&mut self, owner: u64) -> Expected<(), SubmitError> {
        let mut refusals = Vec::new();
        if self.teardown.is_some() || !self.streams.iter().all(|s| s.usable()) {
            refusals.push(SubmitError::NotReady);
        }
        if self.stream(Role::Aicore).stale || self.sticky.is_some() {
            refusals.push(SubmitError::ReplacementPending);
        }
        if self.fifo.contains(&owner) {
            refusals.push(SubmitError::DuplicateOwner { owner: Owner(owner) });
        }
        if self.fifo.len() >= self.depth {
            refusals.push(SubmitError::Full { depth: u8::try_from(self.depth).unwrap_or(u8::MAX) });
        }
        if refusals.is_empty() {
            self.fifo.push(owner);
            Ok(())
        } else {
            Err(refusals)
        }
    }

    fn withdraw(&mut self, owner: u64) -> Result<(), WithdrawError> {
        match self.fifo.iter().position(|&o| o == owner) {
            Some(at) => {
                self.fifo.remove(at);
                Ok(())
            }
            None => Err(WithdrawError::NotSubmitted { owner: Owner(owner) }),
        }
    }

    fn retire(&mut self, owner: u64, how: How) -> Retired {
        // S-3: only an owner retires its own entry.
        let Some(at) = self.fifo.iter().position(|&o| o == owner) else {
            return Retired::NotOwner;
        };
        self.fifo.remove(at);
        match (at, how) {
            // S-4
            (0, How::Complete) => Retired::Kept,
            // S-1: the AICPU stream holds the code until it is replaced.
            (0, How::Sticky) => {
                self.mark_sticky(owner);
                Retired::StickyMarked
            }
            (_, How::Unproven) => {
                self.mark_unproven();
                Retired::ReplacementScheduled
            }
            // S-5: removed, never leaked, and the stream is replaced (forced).
            (_, How::Complete) => {
                self.mark_unproven();
                Retired::ConvertedToUnproven
            }
            (_, How::Sticky) => {
                self.mark_unproven();
                self.mark_sticky(owner);
                Retired::ConvertedToUnproven
            }
        }
    }

    fn mark_sticky(&mut self, owner: u64) {
        let aicpu = self.stream_mut(Role::Aicpu);
        if aicpu.life != Life::Absent {
            aicpu.stale = true;
            self.sticky.get_or_insert(owner);
        }
    }

    /// `role`'s stream is gone, and with it any sticky code it held.
    fn forget(&mut self, role: Role) {
        *self.stream_mut(role) = ModelStream::ABSENT;
        if role == Role::Aicpu {
            self.sticky = None;
        }
    }

    fn mark_stale(&mut self) {
        let aicore = self.stream_mut(Role::Aicore);
        if aicore.life != Life::Absent {
            aicore.stale = true;
        }
    }

    fn mark_unproven(&mut self) {
        let aicore = self.stream_mut(Role::Aicore);
        if aicore.life != Life::Absent {
            aicore.stale = true;
            aicore.unproven = true;
        }
    }

    fn created(&mut self, role: Role, handle: u64) -> Expected<StreamResult, Rejection> {
        let mut refusals = Vec::new();
        if self.stream(role).life != Life::Creating {
            refusals.push(Rejection::NoCreateInFlight { role });
        }
        if self.other(role).handle() == Some(handle) {
            refusals.push(Rejection::HandleInUse { role, handle: StreamHandle(handle) });
        }
        if !refusals.is_empty() {
            return Err(refusals);
        }
        self.stream_mut(role).life = Life::Live(handle);
        if role == Role::Aicore {
            self.created += 1;
        }
        Ok(StreamResult::Created { role, handle: StreamHandle(handle) })
    }

    fn create_failed(&mut self, role: Role, code: i32) -> Expected<StreamResult, Rejection> {
        if self.stream(role).life != Life::Creating {
            return Err(vec![Rejection::NoCreateInFlight { role }]);
        }
        // S-7: not ready; the next `ready()` asks again.
        self.forget(role);
        Ok(StreamResult::CreateFailed(StreamFailure { role, code }))
    }

    fn destroyed(
        &mut self,
        role: Role,
        handle: u64,
        failed: Option<i32>,
    ) -> Expected<StreamResult, Rejection> {
        if self.stream(role).life != Life::Destroying(handle) {
            return Err(vec![Rejection::NotBeingDestroyed { role, handle: StreamHandle(handle) }]);
        }
        let result = match failed {
            None => {
                self.forget(role);
                StreamResult::Destroyed { role }
            }
            Some(code) => {
                // S-7: the handle is kept, stays stale, and is destroyed again later.
                self.stream_mut(role).life = Life::Live(handle);
                if let Some(first) = &mut self.teardown {
                    first.get_or_insert(StreamFailure { role, code });
                }
                StreamResult::DestroyFailed { role, handle: StreamHandle(handle), code }
            }
        };
        let destroying = self.streams.iter().any(|s| matches!(s.life, Life::Destroying(_)));
        match self.teardown {
            Some(first_error) if !destroying => {
                self.teardown = None;
                Ok(StreamResult::TeardownFinished { first_error })
            }
            _ => Ok(result),
        }
    }

    fn destroy_all(&mut self) -> Expected<Effects, Rejection> {
        let mut refusals = Vec::new();
        if !self.fifo.is_empty() {
            refusals.push(Rejection::SubmissionsQueued { queued: self.fifo.len() });
        }
        if self.teardown.is_some() {
            refusals.push(Rejection::TeardownInProgress);
        }
        for role in Role::ALL {
            if self.stream(role).outstanding() {
                refusals.push(Rejection::ResultsOutstanding { role });
            }
        }
        if !refusals.is_empty() {
            return Err(refusals);
        }
        let mut effects = Effects::new();
        for role in Role::ALL {
            let stream = self.stream_mut(role);
            if let Life::Live(h) = stream.life {
                stream.stale = true;
                stream.life = Life::Destroying(h);
                effects.push(stream.destroy(role, h));
            }
        }
        if !effects.is_empty() {
            self.teardown = Some(None);
        }
        Ok(effects)
    }

    fn abandon(&mut self) {
        // S-8: forget everything, destroy nothing.
        self.streams = [ModelStream::ABSENT; 2];
        self.sticky = None;
        self.fifo.clear();
        self.teardown = None;
    }

    /// The model's own sanity (a broken one is a bug in this body, not in the pair).
    fn check(&self) -> Result<(), String> {
        if self.fifo.len() > self.depth {
            return Err("model: more submissions than the depth".into());
        }
        if !self.fifo.is_empty() && !self.streams.iter().all(|s| matches!(s.life, Life::Live(_))) {
            return Err("model: submissions queued on a stream that is not live".into());
        }
        Ok(())
    }
}

/// The pair, its reference model and the body's records. The explorer
/// ([`crate::explore::pair`]) clones it to branch.
#[derive(Clone)]
pub(crate) struct Body {
    pair: StreamPair,
    model: Model,
    next_owner: u64,
    /// Owners that were queued and have left.
    former: Vec<u64>,
    next_handle: u64,
    handles: Vec<u64>,
    reached: Reached,
}

impl Body {
    pub(crate) fn new(depth: u8) -> Self {
        let depth = 1 + depth % MAX_DEPTH;
        let pair = match LaunchDepth::new(depth) {
            Ok(depth) => StreamPair::new(depth),
            // 1..=MAX_DEPTH by construction.
            Err(e) => unreachable!("{e}"),
        };
        Self {
            pair,
            model: Model {
                depth: usize::from(depth),
                fifo: Vec::new(),
                streams: [ModelStream::ABSENT; 2],
                teardown: None,
                created: 0,
                sticky: None,
            },
            next_owner: 1000,
            former: Vec::new(),
            next_handle: 0x100,
            handles: Vec::new(),
            reached: Reached::default(),
        }
    }

    fn reach(&mut self, b: B) {
        self.reached.insert(b.bit());
    }

    fn owner(&mut self, who: Who) -> u64 {
        let fresh = |body: &mut Self| {
            body.next_owner += 1;
            body.next_owner
        };
        match who {
            Who::Queued(i) => pick(&self.model.fifo, i).unwrap_or_else(|| fresh(self)),
            Who::Fresh => fresh(self),
            Who::Former(i) => pick(&self.former, i).unwrap_or_else(|| fresh(self)),
            Who::Raw(n) => u64::from(n),
        }
    }

    fn fresh_handle(&mut self) -> u64 {
        self.next_handle += 1;
        self.handles.push(self.next_handle);
        self.next_handle
    }

    fn handle_for(&mut self, role: Role, pick_handle: Pick, destroy: bool) -> u64 {
        match pick_handle {
            Pick::Right if destroy => match self.model.stream(role).handle() {
                Some(h) => h,
                None => self.fresh_handle(),
            },
            Pick::Right => self.fresh_handle(),
            Pick::Other => match self.model.other(role).handle() {
                Some(h) => h,
                None => self.fresh_handle(),
            },
            Pick::Earlier(i) => match pick(&self.handles, i) {
                Some(h) => h,
                None => self.fresh_handle(),
            },
            Pick::Raw(n) => u64::from(n),
        }
    }

    pub(crate) fn op(&mut self, op: Op) -> Result<(), String> {
        match op {
            Op::Ready => self.ready(),
            Op::Submit(who) => {
                let owner = self.owner(who);
                self.submit(owner)
            }
            Op::Withdraw(who) => {
                let owner = self.owner(who);
                let got = self.pair.withdraw(Owner(owner));
                let want = self.model.withdraw(owner);
                if got != want {
                    return Err(format!("withdraw(run {owner}): got {got:?}, model {want:?}"));
                }
                if got.is_ok() {
                    self.former.push(owner);
                    self.reach(B::Withdrawn);
                }
                Ok(())
            }
            Op::Retire(who, how) => {
                let owner = self.owner(who);
                let retirement = match how {
                    How::Complete => Retirement::Complete,
                    How::Unproven => Retirement::Unproven,
                    How::Sticky => Retirement::Sticky,
                };
                let got = self.pair.retire(Owner(owner), retirement);
                let want = self.model.retire(owner, how);
                if got != want {
                    return Err(format!(
                        "retire(run {owner}, {how:?}): got {got:?}, model {want:?}"
                    ));
                }
                self.reach(match got {
                    Retired::Kept => B::Kept,
                    Retired::ReplacementScheduled => B::Scheduled,
                    Retired::StickyMarked => B::StickyMarked,
                    Retired::ConvertedToUnproven => B::Converted,
                    Retired::NotOwner => B::NotOwner,
                });
                if got != Retired::NotOwner {
                    self.former.push(owner);
                }
                Ok(())
            }
            Op::Publish => {
                self.pair.mark_stale();
                self.model.mark_stale();
                Ok(())
            }
            Op::MarkSticky(who) => {
                let owner = self.owner(who);
                self.pair.mark_sticky(Owner(owner));
                self.model.mark_sticky(owner);
                Ok(())
            }
            Op::Created { role, handle } => {
                let role = role.into();
                let handle = self.handle_for(role, handle, false);
                let got = self
                    .pair
                    .handle(stream_pair::Input::Created { role, handle: StreamHandle(handle) });
                let want = self.model.created(role, handle);
                self.result(got, want)
            }
            Op::CreateFailed { role, code } => {
                let role = role.into();
                let got = self.pair.handle(stream_pair::Input::CreateFailed { role, code });
                let want = self.model.create_failed(role, code);
                self.result(got, want)
            }
            Op::Destroyed { role, handle } => self.destroy_result(role.into(), handle, None),
            Op::DestroyFailed { role, handle, code } => {
                self.destroy_result(role.into(), handle, Some(code))
            }
            Op::DestroyAll => {
                let got = self.pair.destroy_all();
                let want = self.model.destroy_all();
                match (&got, &want) {
                    (Ok(g), Ok(w)) if g == w => {}
                    (Err(g), Err(w)) if w.contains(g) => {
                        self.reach(B::TeardownRefused);
                    }
                    _ => return Err(format!("destroy_all: got {got:?}, model {want:?}")),
                }
                Ok(())
            }
            Op::Abandon => {
                if !self.model.fifo.is_empty() {
                    self.reach(B::AbandonedQueue);
                }
                self.former.extend(self.model.fifo.iter().copied());
                self.pair.abandon();
                self.model.abandon();
                Ok(())
            }
            Op::Settle => {
                for _ in 0..2 {
                    for role in Role::ALL {
                        match self.model.stream(role).life {
                            Life::Creating => {
                                let handle = self.fresh_handle();
                                let got = self.pair.handle(stream_pair::Input::Created {
                                    role,
                                    handle: StreamHandle(handle),
                                });
                                let want = self.model.created(role, handle);
                                self.result(got, want)?;
                            }
                            Life::Destroying(h) => {
                                let got = self.pair.handle(stream_pair::Input::Destroyed {
                                    role,
                                    handle: StreamHandle(h),
                                });
                                let want = self.model.destroyed(role, h, None);
                                self.result(got, want)?;
                            }
                            Life::Absent | Life::Live(_) => {}
                        }
                    }
                    self.ready()?;
                }
                Ok(())
            }
        }
    }

    fn ready(&mut self) -> Result<(), String> {
        let got = self.pair.ready();
        let want = self.model.ready();
        if got != want {
            return Err(format!("ready(): got {got:?}, model {want:?}"));
        }
        self.reach(match &got {
            Readiness::Ready { .. } => B::Ready,
            Readiness::Pending(effects) if effects.is_empty() => B::PendingEmpty,
            Readiness::Pending(effects)
                if effects.iter().any(|e| matches!(e, Effect::Destroy { .. })) =>
            {
                B::PendingDestroy
            }
            Readiness::Pending(_) => B::PendingCreate,
            Readiness::Draining => B::Draining,
            Readiness::Closing => B::Closing,
        });
        if let Readiness::Ready { aicpu, aicore } = got {
            if aicpu == aicore {
                return Err(format!("ready() handed out one handle twice: {aicpu}"));
            }
        }
        Ok(())
    }

    fn submit(&mut self, owner: u64) -> Result<(), String> {
        let got = self.pair.submit(Owner(owner));
        let want = self.model.submit(owner);
        match (&got, &want) {
            (Ok(()), Ok(())) => {
                if self.model.fifo.len() == self.model.depth {
                    self.reach(B::SubmittedToDepth);
                }
            }
            (Err(g), Err(w)) if w.contains(g) => self.reach(match g {
                SubmitError::NotReady => B::RefusedNotReady,
                SubmitError::ReplacementPending => B::RefusedReplacement,
                SubmitError::Full { .. } => B::RefusedFull,
                SubmitError::DuplicateOwner { .. } => B::RefusedDuplicate,
            }),
            _ => return Err(format!("submit(run {owner}): got {got:?}, model {want:?}")),
        }
        Ok(())
    }

    fn destroy_result(
        &mut self,
        role: Role,
        handle: Pick,
        failed: Option<i32>,
    ) -> Result<(), String> {
        let handle = self.handle_for(role, handle, true);
        let input = match failed {
            None => stream_pair::Input::Destroyed { role, handle: StreamHandle(handle) },
            Some(code) => {
                stream_pair::Input::DestroyFailed { role, handle: StreamHandle(handle), code }
            }
        };
        let got = self.pair.handle(input);
        let want = self.model.destroyed(role, handle, failed);
        self.result(got, want)
    }

    fn result(
        &mut self,
        got: Result<StreamResult, Rejection>,
        want: Expected<StreamResult, Rejection>,
    ) -> Result<(), String> {
        match (&got, &want) {
            (Ok(g), Ok(w)) if g == w => self.reach(match g {
                StreamResult::Created { role, .. } => {
                    if *role == Role::Aicore && self.model.created > 1 {
                        B::Replaced
                    } else {
                        B::Created
                    }
                }
                StreamResult::CreateFailed(_) => B::CreateFailed,
                StreamResult::Destroyed { .. } => B::Destroyed,
                StreamResult::DestroyFailed { .. } => B::DestroyFailed,
                StreamResult::TeardownFinished { first_error: None } => B::TeardownClean,
                StreamResult::TeardownFinished { first_error: Some(_) } => B::TeardownError,
            }),
            (Err(g), Err(w)) if w.contains(g) => self.reach(match g {
                Rejection::HandleInUse { .. } => B::HandleInUse,
                _ => B::WrongResult,
            }),
            _ => return Err(format!("result: got {got:?}, model {want:?}")),
        }
        Ok(())
    }

    /// Everything observable on the pair against the model, and both sets of invariants.
    pub(crate) fn compare(&self) -> Result<(), String> {
        self.model.check()?;
        if let Err(violation) = self.pair.check_invariants() {
            return Err(format!("check_invariants: {violation}"));
        }
        let queued: Vec<u64> = self.pair.submissions().iter().map(|o| o.0).collect();
        if queued != self.model.fifo {
            return Err(format!("submissions {queued:?}, model {:?}", self.model.fifo));
        }
        for role in Role::ALL {
            let stream = self.model.stream(role);
            let want = StreamStatus {
                state: match stream.life {
                    Life::Absent => StreamState::Absent,
                    Life::Creating => StreamState::Creating,
                    Life::Live(h) => StreamState::Live(StreamHandle(h)),
                    Life::Destroying(h) => StreamState::Destroying(StreamHandle(h)),
                },
                stale: stream.stale,
            };
            let got = self.pair.stream(role);
            if got != want {
                return Err(format!("{role} stream {got:?}, model {want:?}"));
            }
        }
        let handles = match self.model.streams.map(|s| s.life) {
            [Life::Live(c), Life::Live(a)] => Some((StreamHandle(c), StreamHandle(a))),
            _ => None,
        };
        if self.pair.handles() != handles {
            return Err(format!("handles {:?}, model {handles:?}", self.pair.handles()));
        }
        let replacement = self.model.teardown.is_none()
            && (self.model.stream(Role::Aicore).stale || self.model.sticky.is_some());
        if self.pair.is_replacement_pending() != replacement {
            return Err(format!(
                "is_replacement_pending {}, model {replacement}",
                self.pair.is_replacement_pending()
            ));
        }
        if self.pair.sticky() != self.model.sticky.map(Owner) {
            return Err(format!("sticky {:?}, model {:?}", self.pair.sticky(), self.model.sticky));
        }
        if self.pair.created_count() != self.model.created {
            return Err(format!(
                "created_count {}, model {}",
                self.pair.created_count(),
                self.model.created
            ));
        }
        if self.pair.teardown_complete() != self.model.teardown.is_none() {
            return Err(format!(
                "teardown_complete {}, model teardown {:?}",
                self.pair.teardown_complete(),
                self.model.teardown
            ));
        }
        Ok(())
    }
}

impl From<Side> for Role {
    fn from(side: Side) -> Self {
        match side {
            Side::Aicpu => Role::Aicpu,
            Side::Aicore => Role::Aicore,
        }
    }
}

/// What the exhaustive explorer ([`crate::explore::pair`]) reads.
impl Body {
    /// Fresh owners handed out so far.
    pub(crate) const fn fresh_owners(&self) -> u64 {
        self.next_owner - 1000
    }

    /// Handles handed out so far.
    pub(crate) fn handles_handed_out(&self) -> usize {
        self.handles.len()
    }

    /// Submissions queued (in the model).
    pub(crate) fn queued(&self) -> usize {
        self.model.fifo.len()
    }

    /// Owners that were queued and have left.
    pub(crate) fn former_owners(&self) -> usize {
        self.former.len()
    }

    /// Whether the model's `role` stream holds a handle (a destroy naming it mints none).
    pub(crate) fn holds(&self, role: Role) -> bool {
        self.model.stream(role).handle().is_some()
    }

    /// The pair and the model, for a reader of a finding.
    pub(crate) fn describe(&self) -> String {
        format!("  pair:  {}\n  model: {:?}", self.pair, self.model)
    }

    /// The canonical text of everything that decides what happens next.
    pub(crate) fn key_text(&self) -> String {
        format!(
            "{:?}|{:?}|{}|{:?}|{}|{:?}",
            self.pair, self.model, self.next_owner, self.former, self.next_handle, self.handles
        )
    }
}
