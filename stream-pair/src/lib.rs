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

mod table;

pub use table::transition_table;

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
pub struct LaunchDepth(u8);

impl LaunchDepth {
    /// Depth one: a run launches only once its predecessor retired.
    pub const ONE: Self = Self(1);

    /// A launch depth, refused outside `1..=MAX_DEPTH`.
    pub const fn new(depth: u8) -> Result<Self, DepthError> {
        if depth >= 1 && depth <= MAX_DEPTH {
            Ok(Self(depth))
        } else {
            Err(DepthError { depth })
        }
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
            Effect::Destroy {
                role,
                handle,
                mode: DestroyMode::Healthy,
            } => write!(f, "Destroy {role} {handle}"),
            Effect::Destroy {
                role,
                handle,
                mode: DestroyMode::Force,
            } => write!(f, "Destroy {role} {handle} (force)"),
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

/// What [`StreamPair::ready`] answers.
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

/// What [`StreamPair::retire`] did.
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
    /// marked with it ([`StreamPair::sticky`]) and is replaced once the FIFO is empty.
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

/// What [`StreamPair::apply`] answers for an accepted input.
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

/// `submit` refused the submission; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum SubmitError {
    /// A stream is missing, being created or destroyed, or the pair is closing.
    #[error(
        "the stream pair is not ready: call ready() and run its effects until it reports Ready, then submit"
    )]
    NotReady,
    /// A stream is waiting to be replaced: the AICore stream after a publication or an
    /// `Unproven` retirement, the AICPU stream after a `Sticky` one (S-6).
    #[error(
        "a stream of the pair is waiting to be replaced: retire the queued submissions, call ready() until it reports Ready, then submit"
    )]
    ReplacementPending,
    /// The FIFO holds `depth` submissions.
    #[error(
        "the submission queue is full ({depth} submissions, the launch depth): retire the front submission, then submit"
    )]
    Full {
        /// The launch depth.
        depth: u8,
    },
    /// The owner already has a submission on the pair.
    #[error(
        "{owner} already has a submission on the pair: retire or withdraw it before submitting it again"
    )]
    DuplicateOwner {
        /// The owner.
        owner: Owner,
    },
}

/// `withdraw` found nothing to withdraw; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum WithdrawError {
    /// The owner has no submission on the pair.
    #[error(
        "{owner} has no submission on the pair: withdraw only a submitted run whose launch reached no stream, once"
    )]
    NotSubmitted {
        /// The owner.
        owner: Owner,
    },
}

/// An input the machine refused; the state is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Rejection {
    /// `Submit` was refused.
    #[error(transparent)]
    Submit(#[from] SubmitError),
    /// `Withdraw` was refused.
    #[error(transparent)]
    Withdraw(#[from] WithdrawError),
    /// `Created`/`CreateFailed` with no create of that role outstanding.
    #[error(
        "no {role} stream creation is outstanding: feed Created/CreateFailed only once, in answer to a Create effect"
    )]
    NoCreateInFlight {
        /// The role the result named.
        role: Role,
    },
    /// `Destroyed`/`DestroyFailed` naming a handle that is not being destroyed.
    #[error(
        "{handle} is not the {role} stream being destroyed: feed Destroyed/DestroyFailed only once, in answer to a Destroy effect, with its handle"
    )]
    NotBeingDestroyed {
        /// The role the result named.
        role: Role,
        /// The handle the result named.
        handle: StreamHandle,
    },
    /// `Created` with a handle the other stream of the pair holds.
    #[error(
        "{handle} already belongs to the other stream of the pair: the backend must give the {role} stream a distinct handle"
    )]
    HandleInUse {
        /// The role the result named.
        role: Role,
        /// The duplicated handle.
        handle: StreamHandle,
    },
    /// [`StreamPair::handle`] was given an input that is not a result.
    #[error(
        "{input} is not the result of an effect: pass it to apply() or its own method, and only Created/CreateFailed/Destroyed/DestroyFailed to handle()"
    )]
    NotAResult {
        /// The input.
        input: Input,
    },
    /// `DestroyAll` while submissions are queued.
    #[error(
        "{queued} submissions are still queued on the pair: retire or withdraw them before destroying the streams"
    )]
    SubmissionsQueued {
        /// How many.
        queued: usize,
    },
    /// `DestroyAll` while a create or replacement destroy result is outstanding.
    #[error(
        "a {role} stream create or destroy is still outstanding: feed its result, then call destroy_all again"
    )]
    ResultsOutstanding {
        /// The first role with a result outstanding.
        role: Role,
    },
    /// `DestroyAll` while a teardown is already waiting for its results.
    #[error(
        "the pair is already being torn down: feed the outstanding Destroyed/DestroyFailed results"
    )]
    TeardownInProgress,
}

/// The lifecycle of one stream, as [`StreamPair::stream`] reports it.
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

/// A broken invariant: a bug in this crate (report the input sequence that led here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum InvariantViolation {
    /// The launch depth is outside `1..=MAX_DEPTH`.
    #[error("launch depth {depth} is outside 1..={MAX_DEPTH}")]
    DepthOutOfRange {
        /// The depth.
        depth: u8,
    },
    /// More submissions than the launch depth.
    #[error("{len} submissions queued, above the launch depth {depth}")]
    QueueOverDepth {
        /// Queued submissions.
        len: usize,
        /// The launch depth.
        depth: u8,
    },
    /// The FIFO left its inline storage.
    #[error("the submission queue spilled to the heap")]
    QueueSpilled,
    /// An owner appears twice in the FIFO.
    #[error("{owner} has two submissions queued")]
    DuplicateOwner {
        /// The owner.
        owner: Owner,
    },
    /// A submission is queued while a stream is missing or being created.
    #[error("submissions are queued but the {role} stream is not live")]
    QueuedWithoutStream {
        /// The missing stream.
        role: Role,
    },
    /// A destroy is in flight for a stream with queued submissions.
    #[error("the {role} stream is being destroyed while submissions are queued on it")]
    DestroyWhileQueued {
        /// The stream.
        role: Role,
    },
    /// The AICPU stream is stale while submissions are queued, and holds no sticky code
    /// (only a `Sticky` retirement marks it stale with submissions behind; a teardown needs
    /// an empty FIFO).
    #[error("the AICPU stream is stale while submissions are queued on it, with no sticky code")]
    StaleAicpuInUse,
    /// The AICPU stream is marked with a sticky code but is not stale (so it would not be
    /// replaced).
    #[error("the AICPU stream holds {owner}'s sticky code but is not stale")]
    StickyWithoutStale {
        /// The owner whose code it holds.
        owner: Owner,
    },
    /// A submission was accepted after a stream became stale.
    #[error("a submission was accepted after the {role} stream became stale")]
    SubmittedWhileStale {
        /// The stale stream.
        role: Role,
    },
    /// A missing stream is marked stale.
    #[error("the {role} stream is absent but marked stale")]
    StaleWithoutStream {
        /// The stream.
        role: Role,
    },
    /// A destroy is in flight for a stream that is not stale.
    #[error("the {role} stream is being destroyed without being stale")]
    DestroyingFreshStream {
        /// The stream.
        role: Role,
    },
    /// Both streams hold the same handle.
    #[error("both streams hold {handle}")]
    SharedHandle {
        /// The handle.
        handle: StreamHandle,
    },
    /// A teardown is in progress with submissions queued.
    #[error("a teardown is in progress with submissions queued")]
    TeardownWithQueue,
    /// A teardown is in progress while a create is outstanding.
    #[error("a teardown is in progress while a {role} stream create is outstanding")]
    TeardownWhileCreating {
        /// The stream being created.
        role: Role,
    },
    /// A teardown is open although no destroy result is outstanding.
    #[error("a teardown is open although no destroy result is outstanding")]
    TeardownNeverFinishes,
    /// A stream is marked unproven (to be force-destroyed) without being stale.
    #[error("the {role} stream is marked unproven without being stale")]
    UnprovenWithoutStale {
        /// The stream.
        role: Role,
    },
}

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
    const ABSENT: Stream = Stream {
        state: StreamState::Absent,
        stale_since: None,
        unproven: false,
    };

    /// How this stream is destroyed.
    fn destroy_mode(self) -> DestroyMode {
        if self.unproven {
            DestroyMode::Force
        } else {
            DestroyMode::Healthy
        }
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
        matches!(
            self.state,
            StreamState::Creating | StreamState::Destroying(_)
        )
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
            return Some(Rejection::SubmissionsQueued {
                queued: self.submissions.len(),
            });
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
        StreamStatus {
            state: stream.state,
            stale: stream.stale_since.is_some(),
        }
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
            return Err(InvariantViolation::QueueOverDepth {
                len: queued.len(),
                depth,
            });
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
            return Err(SubmitError::Full {
                depth: self.depth.get(),
            });
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
        Ok(self
            .finish_teardown()
            .unwrap_or(StreamResult::Destroyed { role }))
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
            teardown
                .first_error
                .get_or_insert(StreamFailure { role, code });
        }
        Ok(self
            .finish_teardown()
            .unwrap_or(StreamResult::DestroyFailed { role, handle, code }))
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
            .map(|teardown| StreamResult::TeardownFinished {
                first_error: teardown.first_error,
            })
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
