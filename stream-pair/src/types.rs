//! The pair's vocabulary: handles, roles, owners, depths, the inputs it is fed, the effects
//! it asks for, the results and readiness it reports, and the streams' states.

use core::fmt;

use smallvec::SmallVec;

/// The largest launch depth a pair supports (the FIFO's inline capacity).
pub const MAX_DEPTH: u8 = 4;

/// A stream handle: an opaque value chosen by the backend (for ACL, the `aclrtStream`
/// pointer). The pair only stores, compares and returns it.
///
/// A plain value any code can make, so it proves nothing: the backend that issued it checks
/// it at every use and answers one it does not hold (never issued, destroyed, or from before
/// a force reset) with an error code, never with undefined behaviour (lane-driver's
/// `device` module doc, "Handles").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamHandle(pub u64);

impl fmt::Display for StreamHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "h{}", self.0)
    }
}

/// Which stream of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// The AICPU stream (the scheduler kernel). Survives publications and `Unproven`
    /// retirements; replaced after a `Sticky` one.
    Aicpu,
    /// The AICore stream (the worker kernels). Replaced after a publication or an
    /// `Unproven` retirement.
    Aicore,
}

impl Role {
    /// Both roles, in the order the pair emits effects for them.
    pub const ALL: [Role; 2] = [Role::Aicpu, Role::Aicore];
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Aicpu => "AICPU",
            Role::Aicore => "AICore",
        })
    }
}

/// The run that owns a submission (lane-core passes its run id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Owner(pub u64);

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "run {}", self.0)
    }
}

/// How a submission leaves the FIFO (SPEC §2 *retirement*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Retirement {
    /// Proven finished: the AICore stream is reusable.
    Complete,
    /// Not proven finished: the AICore stream must be replaced.
    Unproven,
    /// Proven finished, but its AICPU kernel returned a fatal status (its result record
    /// reports an error), which stays sticky on the AICPU stream (device-truth §1): a later
    /// synchronize of that stream returns it, whoever asks. The AICPU stream is marked with
    /// the owner and replaced once the FIFO is empty (SPEC S-1, L-8a); submissions already
    /// queued on it stay.
    Sticky,
}

/// How many submissions may be queued on the pair at once (SPEC L-3): `1..=MAX_DEPTH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LaunchDepth(pub(super) u8);

impl LaunchDepth {
    /// Depth one: a run launches only once its predecessor retired.
    pub const ONE: Self = Self(1);

    /// A launch depth, refused outside `1..=MAX_DEPTH`.
    pub const fn new(depth: u8) -> Result<Self, DepthError> {
        if depth >= 1 && depth <= MAX_DEPTH { Ok(Self(depth)) } else { Err(DepthError { depth }) }
    }

    /// The depth as a number.
    pub const fn get(self) -> u8 {
        self.0
    }
}

impl TryFrom<u8> for LaunchDepth {
    type Error = DepthError;

    fn try_from(depth: u8) -> Result<Self, DepthError> {
        Self::new(depth)
    }
}

/// A launch depth outside `1..=MAX_DEPTH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "launch depth {depth} is outside 1..={MAX_DEPTH}: take the launch depth from the chip profile (1 or 2)"
)]
pub struct DepthError {
    /// The refused depth.
    pub depth: u8,
}

/// Work for the backend. Each effect is answered by exactly one result [`Input`] naming
/// the same role (and, for `Destroy`, the same handle).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Create a stream for `role`; answer with `Created` or `CreateFailed`.
    Create {
        /// The stream to create.
        role: Role,
    },
    /// Destroy `handle`, the stream of `role` (no pre-destroy synchronise); answer with
    /// `Destroyed` or `DestroyFailed`.
    Destroy {
        /// The stream being destroyed.
        role: Role,
        /// Its handle.
        handle: StreamHandle,
        /// Healthy (the stream holds no work) or forced (it may be stuck or errored).
        mode: DestroyMode,
    },
}

/// How a stream is destroyed: the pair knows whether its work was proven finished, the
/// backend picks the call from this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DestroyMode {
    /// Every submission on the stream retired `Complete` (a replacement after a publication,
    /// or the teardown at close): `aclrtDestroyStream`, which waits for queued work.
    Healthy,
    /// A submission on the stream retired `Unproven`: its work may be stuck or errored, so
    /// `aclrtDestroyStreamForce`, which does not wait (a plain destroy would block on a hung
    /// kernel).
    Force,
}

impl fmt::Display for DestroyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DestroyMode::Healthy => "healthy",
            DestroyMode::Force => "force",
        })
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Effect::Create { role } => write!(f, "Create {role}"),
            Effect::Destroy { role, handle, mode: DestroyMode::Healthy } => {
                write!(f, "Destroy {role} {handle}")
            }
            Effect::Destroy { role, handle, mode: DestroyMode::Force } => {
                write!(f, "Destroy {role} {handle} (force)")
            }
        }
    }
}

/// The effects of one step, in the order the backend runs them. At most one per role,
/// so they never leave the inline storage.
pub type Effects = SmallVec<[Effect; 2]>;

/// Every input of the machine: the columns of the transition table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Input {
    /// The launch path asks the pair to become ready.
    Ready,
    /// A run's kernels are about to be enqueued on the pair.
    Submit(Owner),
    /// A submission whose launch reached no stream (a `NotStarted` launch) leaves the FIFO.
    Withdraw(Owner),
    /// A submission leaves the FIFO after its launch reached the streams.
    Retire(Owner, Retirement),
    /// A publication happened: the AICore stream is stale.
    MarkStale,
    /// A run's record, read before it retired (a synchronize covered it), says its AICPU
    /// kernel returned a fatal status: the AICPU stream holds its sticky code, is marked with
    /// it and is replaced once the FIFO is empty (L-8a), as its `Sticky` retirement would.
    MarkSticky(Owner),
    /// A `Create` effect succeeded.
    Created {
        /// The stream that was created.
        role: Role,
        /// Its handle.
        handle: StreamHandle,
    },
    /// A `Create` effect failed.
    CreateFailed {
        /// The stream that was not created.
        role: Role,
        /// Raw ACL return code, not interpreted here.
        code: i32,
    },
    /// A `Destroy` effect succeeded.
    Destroyed {
        /// The stream that was destroyed.
        role: Role,
        /// The handle named by the effect.
        handle: StreamHandle,
    },
    /// A `Destroy` effect failed.
    DestroyFailed {
        /// The stream that survived.
        role: Role,
        /// The handle named by the effect.
        handle: StreamHandle,
        /// Raw ACL return code, not interpreted here.
        code: i32,
    },
    /// Tear the pair down (close): destroy both streams.
    DestroyAll,
    /// Forget both streams and every submission without destroying anything (after a
    /// device reset).
    Abandon,
}

impl Input {
    /// One of the four result inputs (`Created`, `CreateFailed`, `Destroyed`,
    /// `DestroyFailed`): the backend's answer to an effect.
    pub fn is_result(self) -> bool {
        matches!(
            self,
            Input::Created { .. }
                | Input::CreateFailed { .. }
                | Input::Destroyed { .. }
                | Input::DestroyFailed { .. }
        )
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Input::Ready => f.write_str("Ready"),
            Input::Submit(owner) => write!(f, "Submit({owner})"),
            Input::Withdraw(owner) => write!(f, "Withdraw({owner})"),
            Input::Retire(owner, how) => write!(f, "Retire({owner}, {how:?})"),
            Input::MarkStale => f.write_str("MarkStale"),
            Input::MarkSticky(owner) => write!(f, "MarkSticky({owner})"),
            Input::Created { role, handle } => write!(f, "Created({role}, {handle})"),
            Input::CreateFailed { role, code } => write!(f, "CreateFailed({role}, {code})"),
            Input::Destroyed { role, handle } => write!(f, "Destroyed({role}, {handle})"),
            Input::DestroyFailed { role, handle, code } => {
                write!(f, "DestroyFailed({role}, {handle}, {code})")
            }
            Input::DestroyAll => f.write_str("DestroyAll"),
            Input::Abandon => f.write_str("Abandon"),
        }
    }
}

/// A stream that failed to be created or destroyed, with the backend's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamFailure {
    /// The stream concerned.
    pub role: Role,
    /// The raw ACL return code.
    pub code: i32,
}

impl fmt::Display for StreamFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.role, self.code)
    }
}

/// What [`StreamPair::ready`](crate::StreamPair::ready) answers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Readiness {
    /// Both streams are live and fresh: launch on them (after a successful `submit`).
    Ready {
        /// The AICPU stream.
        aicpu: StreamHandle,
        /// The AICore stream.
        aicore: StreamHandle,
    },
    /// Not ready yet. Run these effects now and feed their results back, then call
    /// `ready()` again; empty when only results of earlier effects are outstanding.
    Pending(Effects),
    /// A replacement of the AICore stream is pending but submissions are still queued on
    /// it: wait for their retirements, then call `ready()` again.
    Draining,
    /// A teardown (`destroy_all`) is waiting for its destroy results: feed them; the pair
    /// does not become ready meanwhile.
    Closing,
}

/// What [`StreamPair::retire`](crate::StreamPair::retire) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use]
pub enum Retired {
    /// The front submission retired `Complete`: the retirement leaves the AICore stream
    /// reusable (a publication may still have marked it stale).
    Kept,
    /// The submission retired `Unproven`: the AICore stream is stale and is replaced once
    /// the FIFO is empty.
    ReplacementScheduled,
    /// The front submission retired `Sticky`: the AICPU stream holds its fatal status, is
    /// marked with it ([`StreamPair::sticky`](crate::StreamPair::sticky)) and is replaced
    /// once the FIFO is empty.
    StickyMarked,
    /// A `Complete` (or `Sticky`) retirement of a submission that was not the front: it was
    /// converted into an `Unproven` cleanup, the entry removed and a replacement scheduled
    /// (S-5); a `Sticky` one marks the AICPU stream too.
    ConvertedToUnproven,
    /// The caller has no submission on the pair (a non-submitter, a withdrawn run, or a
    /// second retirement): nothing changed (S-3).
    NotOwner,
}

/// What handling a result [`Input`] did. Results never emit effects: call `ready()` (or keep
/// feeding teardown results) next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use]
pub enum StreamResult {
    /// The stream is live.
    Created {
        /// The stream that was created.
        role: Role,
        /// Its handle.
        handle: StreamHandle,
    },
    /// The create failed: the pair is not ready; the next `ready()` asks again.
    CreateFailed(StreamFailure),
    /// A replacement (or teardown) destroy succeeded; more teardown results are outstanding
    /// if the pair is closing.
    Destroyed {
        /// The stream that was destroyed.
        role: Role,
    },
    /// A destroy failed: the handle is kept and stays stale, so the next readying (or
    /// teardown) destroys it again.
    DestroyFailed {
        /// The stream that survived.
        role: Role,
        /// Its handle.
        handle: StreamHandle,
        /// The backend's code.
        code: i32,
    },
    /// The last result of a teardown came in. `first_error` is the first destroy failure
    /// of the teardown (its survivors stay stale), `None` if both destroys succeeded.
    TeardownFinished {
        /// The first destroy failure of the teardown.
        first_error: Option<StreamFailure>,
    },
}

/// What [`StreamPair::apply`](crate::StreamPair::apply) answers for an accepted input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The answer to [`Input::Ready`].
    Readiness(Readiness),
    /// The submission was queued at the back of the FIFO.
    Submitted,
    /// The submission left the FIFO; nothing was marked stale.
    Withdrawn,
    /// The answer to [`Input::Retire`].
    Retired(Retired),
    /// The AICore stream (live or being created) is stale; a missing one needs nothing.
    MarkedStale,
    /// The AICPU stream (live) holds a run's sticky code; a missing one needs nothing.
    MarkedSticky,
    /// The answer to a result input.
    Result(StreamResult),
    /// The teardown's destroy effects; empty when no stream was live (the pair is already
    /// closed and no `TeardownFinished` follows).
    Teardown(Effects),
    /// Both streams and every submission were forgotten.
    Abandoned,
}

/// The lifecycle of one stream, as [`StreamPair::stream`](crate::StreamPair::stream) reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamState {
    /// No stream (never created, destroyed, failed to create, or abandoned).
    Absent,
    /// A `Create` effect is outstanding.
    Creating,
    /// The stream exists.
    Live(StreamHandle),
    /// A `Destroy` effect is outstanding for this handle.
    Destroying(StreamHandle),
}

/// One stream of the pair: its lifecycle and whether it must be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamStatus {
    /// Where the stream is in its lifecycle.
    pub state: StreamState,
    /// The stream must be destroyed and recreated before the next submission.
    pub stale: bool,
}
