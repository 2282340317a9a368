//! Why the pair refuses an input ([`Rejection`], [`SubmitError`], [`WithdrawError`]) and how
//! a broken invariant is named ([`InvariantViolation`]).

use crate::{Input, MAX_DEPTH, Owner, Role, StreamHandle};

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
    /// [`StreamPair::handle`](crate::StreamPair::handle) was given an input that is not a result.
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
