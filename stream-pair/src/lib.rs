//! The AICPU + AICore stream pair shared by every run of a runner (SPEC §4, S-1..S-8).
//!
//! A pure, sans-IO state machine: it never calls a device, reads no clock and spawns no
//! thread. Creating and destroying a stream are [`Effect`]s it emits; their results come
//! back as result [`Input`]s. Handles are opaque values chosen by the backend.
//!
//! # What it owns
//!
//! - The two streams' lifecycles: absent, creating, live, destroying, each possibly
//!   *stale* (must be destroyed and recreated before the next submission).
//! - The FIFO of submissions (owners, capacity = launch depth, inline storage).
//! - Staleness and replacement: a publication ([`StreamPair::mark_stale`]) or an `Unproven`
//!   retirement marks the AICore stream stale; it is replaced only once the FIFO is empty,
//!   and only on the launch path ([`StreamPair::ready`]). The AICPU stream survives both;
//!   it is replaced (once the FIFO is empty) only after a `Sticky` retirement, whose fatal
//!   status stays on it (SPEC S-1, L-8a), and otherwise only a teardown
//!   ([`StreamPair::destroy_all`]) or a device reset ([`StreamPair::abandon`]) removes it.
//!
//! # Invariant
//!
//! Every submission sits on two live streams that nothing is destroying; no submission is
//! accepted while a stream is stale (a stale stream may still carry submissions accepted
//! before it became stale: the AICore stream after a publication or `Unproven`, the AICPU
//! stream after `Sticky`); the FIFO never exceeds the launch depth and never
//! holds an owner twice. [`StreamPair::check_invariants`] checks this (and the
//! representation's own consistency) and holds after every input, whatever the sequence.
//!
//! # API boundary
//!
//! Each [`Input`] has one private handler with its own typed answer. The typed methods
//! ([`ready`](StreamPair::ready), [`submit`](StreamPair::submit),
//! [`retire`](StreamPair::retire), [`handle`](StreamPair::handle), ...) call it directly,
//! and [`StreamPair::apply`], the untyped transition function (for tables, fuzzers and
//! replay), routes each input to the same handler; no answer is converted back.
//! Only [`ready`](StreamPair::ready) emits `Create` and replacement `Destroy` effects (SPEC
//! L-4: streams change only on the launch path); [`destroy_all`](StreamPair::destroy_all)
//! emits the teardown `Destroy`s. Results never emit effects: after feeding one, the caller
//! calls `ready()` again. A result that answers nothing outstanding is rejected with a
//! [`Rejection`] and changes nothing. The machine does not interpret ACL return codes; it
//! reports them back with the role they belong to.
//!
//! [`transition_table`] renders the machine as a Markdown table (generated into
//! `docs/state-machines/stream-pair.md`, and committed only there).
//!
//! # Example: the launch-path loop
//!
//! ```
//! use stream_pair::{
//!     Effect, Input, LaunchDepth, Owner, Readiness, Retired, Retirement, StreamHandle, StreamPair,
//! };
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut pair = StreamPair::new(LaunchDepth::new(2)?);
//! let mut next_handle = 0x100;
//! // The launch path readies the pair, running the effects it asks for, until it is ready.
//! let (aicpu, aicore) = loop {
//!     match pair.ready() {
//!         Readiness::Ready { aicpu, aicore } => break (aicpu, aicore),
//!         Readiness::Pending(effects) => {
//!             for effect in effects {
//!                 // A real backend calls aclrtCreateStreamWithConfig here, and aclrtDestroyStream
//!                 // or aclrtDestroyStreamForce as `mode` says.
//!                 let event = match effect {
//!                     Effect::Create { role } => {
//!                         next_handle += 1;
//!                         Input::Created { role, handle: StreamHandle(next_handle) }
//!                     }
//!                     Effect::Destroy { role, handle, .. } => Input::Destroyed { role, handle },
//!                 };
//!                 pair.handle(event)?;
//!             }
//!         }
//!         Readiness::Draining | Readiness::Closing => return Err("wait for retirements".into()),
//!     }
//! };
//! assert_ne!(aicpu, aicore);
//! pair.submit(Owner(7))?; // then launch AICore, then AICPU, on these two streams
//! assert_eq!(pair.retire(Owner(7), Retirement::Complete), Retired::Kept);
//! assert_eq!(pair.created_count(), 1);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

use core::fmt;

use smallvec::SmallVec;

mod errors;
mod table;
mod types;

pub use errors::{InvariantViolation, Rejection, SubmitError, WithdrawError};
pub use table::transition_table;
pub use types::{
    DepthError, DestroyMode, Effect, Effects, Input, LaunchDepth, MAX_DEPTH, Owner, Readiness,
    Retired, Retirement, Role, Step, StreamFailure, StreamHandle, StreamResult, StreamState,
    StreamStatus,
};

/// One stream inside the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Stream {
    state: StreamState,
    /// `Some(n)`: stale since the pair had accepted `n` submissions. Recording the count
    /// (not a bool) lets `check_invariants` prove no submission was accepted since.
    stale_since: Option<u64>,
    /// A submission on it retired `Unproven`: its work may be stuck or errored, so it is
    /// destroyed with [`DestroyMode::Force`]. Only ever set on a stale stream.
    unproven: bool,
}

impl Stream {
    const ABSENT: Stream =
        Stream { state: StreamState::Absent, stale_since: None, unproven: false };

    /// How this stream is destroyed.
    fn destroy_mode(self) -> DestroyMode {
        if self.unproven { DestroyMode::Force } else { DestroyMode::Healthy }
    }

    /// The handle, while the stream exists (live or being destroyed).
    fn handle(self) -> Option<StreamHandle> {
        match self.state {
            StreamState::Live(handle) | StreamState::Destroying(handle) => Some(handle),
            StreamState::Absent | StreamState::Creating => None,
        }
    }

    /// The handle, when the stream may take a submission.
    fn usable(self) -> Option<StreamHandle> {
        match (self.state, self.stale_since) {
            (StreamState::Live(handle), None) => Some(handle),
            _ => None,
        }
    }

    fn is_outstanding(self) -> bool {
        matches!(self.state, StreamState::Creating | StreamState::Destroying(_))
    }
}

/// A teardown waiting for its destroy results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Teardown {
    first_error: Option<StreamFailure>,
}

/// The stream pair: two streams, a FIFO of submissions, staleness and replacement.
///
/// See the crate docs for the rules; [`transition_table`] for every transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamPair {
    depth: LaunchDepth,
    aicpu: Stream,
    aicore: Stream,
    /// Front first. Capacity `MAX_DEPTH` inline, and `submit` never exceeds the depth, so
    /// a submission never allocates.
    submissions: SmallVec<[Owner; MAX_DEPTH as usize]>,
    teardown: Option<Teardown>,
    /// Submissions accepted over the pair's life (wrapping; only compared for equality).
    accepted: u64,
    /// AICore streams created over the pair's life.
    created: u64,
    /// The owner whose fatal status the live AICPU stream holds (the first `Sticky`
    /// retirement on it); `None` once that stream is gone.
    sticky: Option<Owner>,
}

impl StreamPair {
    /// A cold pair: no stream, no submission. The first `ready()` creates both streams.
    pub fn new(depth: LaunchDepth) -> Self {
        Self {
            depth,
            aicpu: Stream::ABSENT,
            aicore: Stream::ABSENT,
            submissions: SmallVec::new(),
            teardown: None,
            accepted: 0,
            created: 0,
            sticky: None,
        }
    }

    /// The transition function over untyped inputs: each input goes to its handler, the
    /// same one its typed method calls, so the two cannot disagree.
    ///
    /// A rejected input changes nothing.
    #[inline]
    pub fn apply(&mut self, input: Input) -> Result<Step, Rejection> {
        match input {
            Input::Ready => Ok(Step::Readiness(self.on_ready())),
            Input::Submit(owner) => Ok(self.on_submit(owner).map(|()| Step::Submitted)?),
            Input::Withdraw(owner) => Ok(self.on_withdraw(owner).map(|()| Step::Withdrawn)?),
            Input::Retire(owner, how) => Ok(Step::Retired(self.on_retire(owner, how))),
            Input::MarkStale => {
                self.on_mark_stale();
                Ok(Step::MarkedStale)
            }
            Input::MarkSticky(owner) => {
                self.mark_aicpu_sticky(owner);
                Ok(Step::MarkedSticky)
            }
            Input::Created { .. }
            | Input::CreateFailed { .. }
            | Input::Destroyed { .. }
            | Input::DestroyFailed { .. } => self.handle(input).map(Step::Result),
            Input::DestroyAll => self.on_destroy_all().map(Step::Teardown),
            Input::Abandon => {
                self.on_abandon();
                Ok(Step::Abandoned)
            }
        }
    }

    /// The launch path: makes the pair ready, emitting the creates and replacement
    /// destroys to run now (only this method emits them, SPEC L-4).
    #[inline]
    pub fn ready(&mut self) -> Readiness {
        self.on_ready()
    }

    /// Queues `owner`'s submission at the back of the FIFO. Requires a ready pair, no
    /// pending replacement, room in the FIFO and an owner not already queued.
    #[inline]
    pub fn submit(&mut self, owner: Owner) -> Result<(), SubmitError> {
        self.on_submit(owner)
    }

    /// Removes `owner`'s submission, from any position, without marking anything stale:
    /// for a launch that reached no stream (`NotStarted`).
    #[inline]
    pub fn withdraw(&mut self, owner: Owner) -> Result<(), WithdrawError> {
        self.on_withdraw(owner)
    }

    /// Retires `owner`'s submission (S-3..S-5); a caller without one changes nothing.
    #[inline]
    pub fn retire(&mut self, owner: Owner, how: Retirement) -> Retired {
        self.on_retire(owner, how)
    }

    /// A publication happened: the AICore stream is stale and is replaced once the FIFO
    /// is empty, on the next `ready()`.
    pub fn mark_stale(&mut self) {
        self.on_mark_stale();
    }

    /// `owner`'s fatal status is on the AICPU stream, learnt before its retirement (its
    /// record, read when a synchronize covered it): the stream is marked with it and replaced
    /// once the FIFO is empty (L-8a). The first mark names the stream's code.
    pub fn mark_sticky(&mut self, owner: Owner) {
        self.mark_aicpu_sticky(owner);
    }

    /// Feeds the backend's answer to an effect: one of the four result inputs (see
    /// [`Input::is_result`]; any other input is rejected without change). Emits nothing:
    /// call `ready()` next (or, while closing, feed the remaining teardown results).
    pub fn handle(&mut self, result: Input) -> Result<StreamResult, Rejection> {
        match result {
            Input::Created { role, handle } => self.on_created(role, handle),
            Input::CreateFailed { role, code } => self.on_create_failed(role, code),
            Input::Destroyed { role, handle } => self.on_destroyed(role, handle),
            Input::DestroyFailed { role, handle, code } => {
                self.on_destroy_failed(role, handle, code)
            }
            // Listed, not `_`: a new input must be placed on one side or the other.
            Input::Ready
            | Input::Submit(_)
            | Input::Withdraw(_)
            | Input::Retire(..)
            | Input::MarkStale
            | Input::MarkSticky(_)
            | Input::DestroyAll
            | Input::Abandon => Err(Rejection::NotAResult { input: result }),
        }
    }

    /// Starts the teardown (close): returns a `Destroy` for each live stream. Refused while
    /// submissions are queued or results are outstanding. The last destroy result answers
    /// `TeardownFinished` with the first error; survivors stay stale. Empty effects mean
    /// no stream was live: the pair is closed already.
    pub fn destroy_all(&mut self) -> Result<Effects, Rejection> {
        self.on_destroy_all()
    }

    /// Why [`destroy_all`](Self::destroy_all) would be refused now, if it would: submissions
    /// are queued, a teardown is in progress, or a stream's result is outstanding.
    pub fn destroy_all_refusal(&self) -> Option<Rejection> {
        if !self.submissions.is_empty() {
            return Some(Rejection::SubmissionsQueued { queued: self.submissions.len() });
        }
        if self.teardown.is_some() {
            return Some(Rejection::TeardownInProgress);
        }
        Role::ALL
            .into_iter()
            .find(|&role| self.stream_ref(role).is_outstanding())
            .map(|role| Rejection::ResultsOutstanding { role })
    }

    /// Forgets both streams and every submission without destroying anything (after a
    /// device reset, S-8). The next `ready()` creates both streams afresh; results of
    /// effects emitted before are rejected as answering nothing.
    pub fn abandon(&mut self) {
        self.on_abandon();
    }

    /// AICore streams created over the pair's life (reuse keeps it flat).
    pub fn created_count(&self) -> u64 {
        self.created
    }

    /// `(aicpu, aicore)` while both streams are live (stale or not).
    pub fn handles(&self) -> Option<(StreamHandle, StreamHandle)> {
        match (self.aicpu.state, self.aicore.state) {
            (StreamState::Live(aicpu), StreamState::Live(aicore)) => Some((aicpu, aicore)),
            _ => None,
        }
    }

    /// The submissions, front first.
    pub fn submissions(&self) -> &[Owner] {
        &self.submissions
    }

    /// A stream waits to be replaced: the AICore stream after a publication, an `Unproven`
    /// retirement or a failed destroy, the AICPU stream after a `Sticky` retirement. False
    /// during a teardown, which replaces nothing.
    pub fn is_replacement_pending(&self) -> bool {
        self.teardown.is_none() && (self.aicore.stale_since.is_some() || self.sticky.is_some())
    }

    /// The owner whose fatal status the live AICPU stream holds (its `Sticky` retirement,
    /// L-8a): a synchronize of that stream returns its code, whoever asks, until the stream
    /// is replaced. `None` for a stream without one.
    pub fn sticky(&self) -> Option<Owner> {
        self.sticky
    }

    /// One stream's lifecycle and staleness.
    pub fn stream(&self, role: Role) -> StreamStatus {
        let stream = self.stream_ref(role);
        StreamStatus { state: stream.state, stale: stream.stale_since.is_some() }
    }

    /// The launch depth the pair was created with.
    pub fn depth(&self) -> LaunchDepth {
        self.depth
    }

    /// No teardown is waiting for destroy results: true once every `Destroy` of the last
    /// accepted `destroy_all` has been answered (and when no teardown was started).
    pub fn teardown_complete(&self) -> bool {
        self.teardown.is_none()
    }

    /// Checks every invariant of the machine (for tests, the simulator and fuzzers).
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        let depth = self.depth.get();
        if !(1..=MAX_DEPTH).contains(&depth) {
            return Err(InvariantViolation::DepthOutOfRange { depth });
        }
        let queued = &self.submissions;
        if queued.len() > usize::from(depth) {
            return Err(InvariantViolation::QueueOverDepth { len: queued.len(), depth });
        }
        if queued.spilled() {
            return Err(InvariantViolation::QueueSpilled);
        }
        for (at, owner) in queued.iter().enumerate() {
            if queued.iter().skip(at + 1).any(|other| other == owner) {
                return Err(InvariantViolation::DuplicateOwner { owner: *owner });
            }
        }
        for role in Role::ALL {
            let stream = self.stream_ref(role);
            if !queued.is_empty() {
                match stream.state {
                    StreamState::Live(_) => {}
                    StreamState::Destroying(_) => {
                        return Err(InvariantViolation::DestroyWhileQueued { role });
                    }
                    StreamState::Absent | StreamState::Creating => {
                        return Err(InvariantViolation::QueuedWithoutStream { role });
                    }
                }
            }
            if stream.unproven && stream.stale_since.is_none() {
                return Err(InvariantViolation::UnprovenWithoutStale { role });
            }
            match (stream.state, stream.stale_since) {
                (StreamState::Absent, Some(_)) => {
                    return Err(InvariantViolation::StaleWithoutStream { role });
                }
                (StreamState::Destroying(_), None) => {
                    return Err(InvariantViolation::DestroyingFreshStream { role });
                }
                (_, Some(since)) if since != self.accepted => {
                    return Err(InvariantViolation::SubmittedWhileStale { role });
                }
                _ => {}
            }
            if self.teardown.is_some() && stream.state == StreamState::Creating {
                return Err(InvariantViolation::TeardownWhileCreating { role });
            }
        }
        if !queued.is_empty() && self.aicpu.stale_since.is_some() && self.sticky.is_none() {
            return Err(InvariantViolation::StaleAicpuInUse);
        }
        if let Some(owner) = self.sticky {
            if self.aicpu.stale_since.is_none() {
                return Err(InvariantViolation::StickyWithoutStale { owner });
            }
        }
        if let (Some(aicpu), Some(aicore)) = (self.aicpu.handle(), self.aicore.handle()) {
            if aicpu == aicore {
                return Err(InvariantViolation::SharedHandle { handle: aicpu });
            }
        }
        if self.teardown.is_some() {
            if !queued.is_empty() {
                return Err(InvariantViolation::TeardownWithQueue);
            }
            let destroying = Role::ALL
                .into_iter()
                .any(|role| matches!(self.stream_ref(role).state, StreamState::Destroying(_)));
            if !destroying {
                return Err(InvariantViolation::TeardownNeverFinishes);
            }
        }
        Ok(())
    }

    // ----- the handlers: one per input, each with its own typed answer ---------------------

    /// `Ready`. Always inlined: the warm pair's answer is the hot path of every run; the
    /// rest is out of line.
    #[inline(always)]
    fn on_ready(&mut self) -> Readiness {
        if self.teardown.is_none() {
            if let (Some(aicpu), Some(aicore)) = (self.aicpu.usable(), self.aicore.usable()) {
                return Readiness::Ready { aicpu, aicore };
            }
        }
        self.prepare()
    }

    /// `Ready` on a pair that is not ready (or closing): the creates and replacement
    /// destroys to run now.
    #[cold]
    fn prepare(&mut self) -> Readiness {
        if self.teardown.is_some() {
            return Readiness::Closing;
        }
        let queued = !self.submissions.is_empty();
        let mut effects = Effects::new();
        let mut outstanding = false;
        for role in Role::ALL {
            let stream = self.stream_mut(role);
            match (stream.state, stream.stale_since.is_some()) {
                (StreamState::Absent, _) => {
                    stream.state = StreamState::Creating;
                    effects.push(Effect::Create { role });
                }
                // Replacement: only once no submission sits on the stream (S-6).
                (StreamState::Live(handle), true) if !queued => {
                    stream.state = StreamState::Destroying(handle);
                    let mode = stream.destroy_mode();
                    effects.push(Effect::Destroy { role, handle, mode });
                }
                (StreamState::Live(_), _) => {}
                (StreamState::Creating | StreamState::Destroying(_), _) => {
                    outstanding = true;
                }
            }
        }
        // No stream became usable above (a create or destroy only starts here), so the pair
        // is not ready: either results are awaited, or the only stream left alone is a
        // stale one with submissions on it.
        if outstanding || !effects.is_empty() {
            Readiness::Pending(effects)
        } else {
            Readiness::Draining
        }
    }

    /// `Submit`.
    #[inline(always)]
    fn on_submit(&mut self, owner: Owner) -> Result<(), SubmitError> {
        if self.teardown.is_some() {
            return Err(SubmitError::NotReady);
        }
        if self.aicore.stale_since.is_some() || self.sticky.is_some() {
            return Err(SubmitError::ReplacementPending);
        }
        if self.aicpu.usable().is_none() || self.aicore.usable().is_none() {
            return Err(SubmitError::NotReady);
        }
        if self.submissions.contains(&owner) {
            return Err(SubmitError::DuplicateOwner { owner });
        }
        if self.submissions.len() >= usize::from(self.depth.get()) {
            return Err(SubmitError::Full { depth: self.depth.get() });
        }
        self.submissions.push(owner);
        self.accepted = self.accepted.wrapping_add(1);
        Ok(())
    }

    /// `Withdraw`.
    #[inline]
    fn on_withdraw(&mut self, owner: Owner) -> Result<(), WithdrawError> {
        match self.remove_submission(owner) {
            Some(_) => Ok(()),
            None => Err(WithdrawError::NotSubmitted { owner }),
        }
    }

    /// `Retire`.
    #[inline(always)]
    fn on_retire(&mut self, owner: Owner, how: Retirement) -> Retired {
        match (self.remove_submission(owner), how) {
            (None, _) => Retired::NotOwner,
            (Some(0), Retirement::Complete) => Retired::Kept,
            (Some(0), Retirement::Sticky) => {
                self.mark_aicpu_sticky(owner);
                Retired::StickyMarked
            }
            (Some(_), Retirement::Unproven) => {
                self.mark_aicore_unproven();
                Retired::ReplacementScheduled
            }
            // Out of order: nothing proves the stream finished the earlier work, so treat
            // it as Unproven; the C++ change leaked the entry here. A sticky code stays on
            // the AICPU stream whatever the order.
            (Some(_), Retirement::Complete) => {
                self.mark_aicore_unproven();
                Retired::ConvertedToUnproven
            }
            (Some(_), Retirement::Sticky) => {
                self.mark_aicore_unproven();
                self.mark_aicpu_sticky(owner);
                Retired::ConvertedToUnproven
            }
        }
    }

    /// `MarkStale`.
    fn on_mark_stale(&mut self) {
        self.mark_aicore_stale();
    }

    /// `Created`.
    fn on_created(&mut self, role: Role, handle: StreamHandle) -> Result<StreamResult, Rejection> {
        if self.stream_ref(role).state != StreamState::Creating {
            return Err(Rejection::NoCreateInFlight { role });
        }
        if self.other(role).handle() == Some(handle) {
            return Err(Rejection::HandleInUse { role, handle });
        }
        // A publication during the create keeps `stale_since`: the new stream is replaced
        // before its first submission.
        self.stream_mut(role).state = StreamState::Live(handle);
        if role == Role::Aicore {
            self.created = self.created.saturating_add(1);
        }
        Ok(StreamResult::Created { role, handle })
    }

    /// `CreateFailed`.
    fn on_create_failed(&mut self, role: Role, code: i32) -> Result<StreamResult, Rejection> {
        if self.stream_ref(role).state != StreamState::Creating {
            return Err(Rejection::NoCreateInFlight { role });
        }
        self.forget(role);
        Ok(StreamResult::CreateFailed(StreamFailure { role, code }))
    }

    /// `Destroyed`.
    fn on_destroyed(
        &mut self,
        role: Role,
        handle: StreamHandle,
    ) -> Result<StreamResult, Rejection> {
        if self.stream_ref(role).state != StreamState::Destroying(handle) {
            return Err(Rejection::NotBeingDestroyed { role, handle });
        }
        self.forget(role);
        Ok(self.finish_teardown().unwrap_or(StreamResult::Destroyed { role }))
    }

    /// `DestroyFailed`.
    fn on_destroy_failed(
        &mut self,
        role: Role,
        handle: StreamHandle,
        code: i32,
    ) -> Result<StreamResult, Rejection> {
        if self.stream_ref(role).state != StreamState::Destroying(handle) {
            return Err(Rejection::NotBeingDestroyed { role, handle });
        }
        // The handle survives and stays stale, so it is destroyed again before any reuse
        // (C++ finding A reused it).
        self.stream_mut(role).state = StreamState::Live(handle);
        if let Some(teardown) = &mut self.teardown {
            teardown.first_error.get_or_insert(StreamFailure { role, code });
        }
        Ok(self.finish_teardown().unwrap_or(StreamResult::DestroyFailed { role, handle, code }))
    }

    /// `DestroyAll`.
    fn on_destroy_all(&mut self) -> Result<Effects, Rejection> {
        if let Some(rejection) = self.destroy_all_refusal() {
            return Err(rejection);
        }
        let accepted = self.accepted;
        let mut effects = Effects::new();
        for role in Role::ALL {
            let stream = self.stream_mut(role);
            if let StreamState::Live(handle) = stream.state {
                // Stale from now on: a survivor of a failed destroy is replaced before any
                // reuse.
                stream.stale_since.get_or_insert(accepted);
                stream.state = StreamState::Destroying(handle);
                let mode = stream.destroy_mode();
                effects.push(Effect::Destroy { role, handle, mode });
            }
        }
        if !effects.is_empty() {
            self.teardown = Some(Teardown { first_error: None });
        }
        Ok(effects)
    }

    /// `Abandon`.
    fn on_abandon(&mut self) {
        self.forget(Role::Aicpu);
        self.forget(Role::Aicore);
        self.submissions.clear();
        self.teardown = None;
    }

    // ----- helpers -------------------------------------------------------------------------

    fn stream_ref(&self, role: Role) -> &Stream {
        match role {
            Role::Aicpu => &self.aicpu,
            Role::Aicore => &self.aicore,
        }
    }

    fn stream_mut(&mut self, role: Role) -> &mut Stream {
        match role {
            Role::Aicpu => &mut self.aicpu,
            Role::Aicore => &mut self.aicore,
        }
    }

    fn other(&self, role: Role) -> &Stream {
        match role {
            Role::Aicpu => &self.aicore,
            Role::Aicore => &self.aicpu,
        }
    }

    /// Removes `owner`'s entry; returns the position it had.
    fn remove_submission(&mut self, owner: Owner) -> Option<usize> {
        let at = self.submissions.iter().position(|&o| o == owner)?;
        if at + 1 == self.submissions.len() {
            // The last entry (the only one, between queued runs): nothing to shift, and
            // `remove` would still call memmove, which costs more than the rest of a retire.
            self.submissions.pop();
        } else {
            self.submissions.remove(at);
        }
        Some(at)
    }

    /// Marks the AICore stream stale (S-4, L-12). A missing stream needs nothing: the next
    /// create starts the cores clean. An already stale one keeps its mark.
    fn mark_aicore_stale(&mut self) {
        let accepted = self.accepted;
        if self.aicore.state != StreamState::Absent {
            self.aicore.stale_since.get_or_insert(accepted);
        }
    }

    /// `role`'s stream is gone (destroyed, never created, or abandoned), and with it any
    /// sticky code it held.
    fn forget(&mut self, role: Role) {
        *self.stream_mut(role) = Stream::ABSENT;
        if role == Role::Aicpu {
            self.sticky = None;
        }
    }

    /// Marks the AICPU stream stale, holding `owner`'s sticky code (L-8a): it is replaced once
    /// the FIFO is empty. The first mark names the stream's code; a missing stream needs
    /// nothing (a new one starts clean).
    fn mark_aicpu_sticky(&mut self, owner: Owner) {
        let accepted = self.accepted;
        if self.aicpu.state != StreamState::Absent {
            self.aicpu.stale_since.get_or_insert(accepted);
            self.sticky.get_or_insert(owner);
        }
    }

    /// Marks the AICore stream stale and unproven: its replacement is forced (S-4, S-5).
    fn mark_aicore_unproven(&mut self) {
        self.mark_aicore_stale();
        if self.aicore.stale_since.is_some() {
            self.aicore.unproven = true;
        }
    }

    /// Ends the teardown once no destroy result is outstanding.
    fn finish_teardown(&mut self) -> Option<StreamResult> {
        let destroying = Role::ALL
            .into_iter()
            .any(|role| matches!(self.stream_ref(role).state, StreamState::Destroying(_)));
        if destroying {
            return None;
        }
        self.teardown
            .take()
            .map(|teardown| StreamResult::TeardownFinished { first_error: teardown.first_error })
    }
}

/// One line describing the whole state, e.g.
/// `aicpu live h1; aicore live h2 (stale); queue [run 1, run 2]`.
impl fmt::Display for StreamPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for role in Role::ALL {
            let stream = self.stream_ref(role);
            let name = match role {
                Role::Aicpu => "aicpu",
                Role::Aicore => "aicore",
            };
            match stream.state {
                StreamState::Absent => write!(f, "{name} absent")?,
                StreamState::Creating => write!(f, "{name} creating")?,
                StreamState::Live(handle) => write!(f, "{name} live {handle}")?,
                StreamState::Destroying(handle) => write!(f, "{name} destroying {handle}")?,
            }
            match (stream.stale_since.is_some(), stream.unproven) {
                (true, true) => f.write_str(" (stale, unproven)")?,
                (true, false) if role == Role::Aicpu && self.sticky.is_some() => {
                    if let Some(owner) = self.sticky {
                        write!(f, " (stale, sticky code of {owner})")?;
                    }
                }
                (true, false) => f.write_str(" (stale)")?,
                (false, _) => {}
            }
            f.write_str("; ")?;
        }
        f.write_str("queue [")?;
        for (at, owner) in self.submissions.iter().enumerate() {
            if at > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{owner}")?;
        }
        f.write_str("]")?;
        if let Some(teardown) = self.teardown {
            f.write_str("; closing")?;
            if let Some(error) = teardown.first_error {
                write!(f, " (first error {error})")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
