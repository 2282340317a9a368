//! What the lane asks the backend to do ([`Lane::poll_effect`](crate::Lane::poll_effect)).
//!
//! Every effect but a [`RecoveryHook`] and `AdoptReset` is answered by exactly one
//! [`Event`](crate::Event) that names what it answers (run and lease, stream role and handle,
//! publication, recovery attempt); those two tell and ask nothing back.

use status_latch::{AclCode, HeaderLayout, VerdictChannel};
use stream_pair::{DestroyMode, Role, StreamHandle};

use crate::ids::{CodeRef, Lease, Peers, PublicationId, RunId, Timestamp};
use crate::outcome::Cause;

/// One thing the backend must do. Effects come out in the order the lane decided them; the
/// backend executes them in that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Prepare `run` into its slot: host runtime buffer, arena bank, args upload. Touches no
    /// stream (L-4). Answered by `Prepared`, `PrepareIncompatible` or `PrepareFailed`.
    ///
    /// A failed prepare may leave per-run resources behind: the lane always follows it with
    /// [`Effect::FinaliseRun`], which frees them.
    PrepareRun {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// Whether the run collects diagnostics (it then runs alone, at depth one).
        diagnostics: bool,
    },
    /// Create one stream of the pair. Answered by `StreamCreated` or `StreamCreateFailed`.
    CreateStream {
        /// Which stream.
        role: Role,
    },
    /// Destroy one stream of the pair (no pre-destroy sync: syncing an error-state stream
    /// wedges later work). Answered by `StreamDestroyed` or `StreamDestroyFailed`.
    DestroyStream {
        /// Which stream.
        role: Role,
        /// Its handle.
        handle: StreamHandle,
        /// `Healthy` (after a publication, or the teardown at close: `aclrtDestroyStream`) or
        /// `Force` (the AICore stream replaced after an `Unproven` retirement, which may hold
        /// stuck or errored work: `aclrtDestroyStreamForce`). The pair decides.
        mode: DestroyMode,
    },
    /// Launch `run` on the pair, in this order (L-5, L-13): arm the slot's timing buffer,
    /// clear the slot's handshake, make the AICore stream wait for the boundary of the newest
    /// run of `after` whose boundary was recorded, enqueue the AICore kernel on `aicore` and
    /// record its `core_done`, enqueue the AICPU kernel on `aicpu`, make it wait for
    /// `core_done`, and record the run's boundary. Answered by `Launched` or `LaunchFailed`
    /// (naming the step that failed).
    LaunchRun {
        /// The run.
        run: RunId,
        /// Its lease (selects the slot's timing buffer, handshake and events).
        lease: Lease,
        /// The AICPU stream.
        aicpu: StreamHandle,
        /// The AICore stream.
        aicore: StreamHandle,
        /// The predecessors whose boundaries may still be in flight, newest first: the runs
        /// launched before this one whose completion has not come back (each still holds a
        /// submission on the pair, or its launch is still out). The AICore kernel waits for
        /// the boundary of the newest one whose boundary was recorded (L-5): which one is
        /// known only where launches execute in order, since an earlier launch may still
        /// fail before its boundary (at depth three and up). Empty when every earlier run's
        /// completion came back, so its boundary has passed: the launch then makes no stream
        /// wait, one device call fewer (about 5.5 us on a2a3, A18), as at launch depth one.
        after: Peers<Lease>,
    },
    /// Wait (bounded) for the run's boundary (L-6), read its result record right after it,
    /// and make the device verdict when the record does not decide the run (L-8: a bounded
    /// synchronize of the AICPU stream, then the AICore stream, never on the lane thread).
    /// Answered by `Completed` with that evidence, or `CompletionFailed` when the boundary
    /// wait fails; if neither arrives by `deadline`, call
    /// [`Lane::handle_timeout`](crate::Lane::handle_timeout).
    ///
    /// Only the oldest launched run is awaited; the next await is emitted when it completes,
    /// which is also when the next run's deadline starts (SPEC §5.4).
    AwaitCompletion {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// When the host gives up (the lane then poisons: work may still be running).
        deadline: Timestamp,
        /// The device verdict's bound, counted from the boundary's completion, not from what
        /// is left of `deadline`: the synchronize also waits for the runs queued behind, so
        /// a long successor must not time out this run's verdict (L-8a, the mirror of §5.4).
        /// An unfenced run has no boundary: its device verdict is bounded by `deadline`.
        sync_bound_ns: u64,
        /// The profile's verdict channel: read the record, or synchronize every run.
        channel: VerdictChannel,
        /// The code of the fence call that failed after a kernel was accepted
        /// (`LaunchFailed` at `RecordEvent`): the run's events cannot decide it, so the
        /// waiter waits on no event and makes the device verdict at once (L-5, L-8),
        /// answering `Completed` with `Boundary::Unfenced`. `None` for a fenced run.
        unfenced: Option<AclCode>,
    },
    /// Read the result records of the runs queued behind `run` that its device verdict's
    /// synchronize covered, each decoded for its own epoch (L-8a: whose code the synchronize
    /// returned). Answered by `RecordsRead`, in the order given; a read that fails is
    /// answered as `RecordRead::Failed` for that run (it explains nothing).
    ReadRecords {
        /// The awaited run whose device verdict returned a code.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// The runs on the pair behind it, in submission order, with their leases (each
        /// selects its slot's record region and epoch).
        behind: Peers<(RunId, Lease)>,
    },
    /// Read the run's status header and its timing buffer device-to-host (L-8, L-17).
    /// Answered by `StatusRead` or `StatusReadFailed`.
    ReadStatus {
        /// The run.
        run: RunId,
        /// Its lease (selects the slot's header and timing buffer).
        lease: Lease,
        /// How to decode the header.
        layout: HeaderLayout,
    },
    /// Finalise the run: copy outputs back when `copy_back` (only for a run whose verdict is
    /// so far `Ok`), free the per-run resources, and release the slot's completion events for
    /// reuse (L-7). Emitted exactly once for every run that was asked to prepare, on every
    /// terminal path except a device reset and a run answered `PrepareIncompatible` that
    /// close then cancels in the queue (nothing of it was touched). Answered by `Finalised`
    /// or `FinaliseFailed`.
    FinaliseRun {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// Whether to copy outputs back (false on every failure or cancel path).
        copy_back: bool,
    },
    /// Upload published AICore code (the lane has drained every earlier run first, L-12).
    /// Answered by `Uploaded` or `UploadFailed`; either way the AICore stream is then stale.
    UploadCode {
        /// The publication.
        publication: PublicationId,
        /// What to upload.
        code: CodeRef,
    },
    /// Recovery step 1: a bounded device drain. Its return code proves nothing (a drain can
    /// succeed on a poisoned card). Answered by `DeviceDrained`.
    DrainDevice {
        /// Recovery attempt, from 1.
        attempt: u8,
        /// The bound.
        timeout_ns: u64,
    },
    /// Recovery step 2: force-reset the device. The backend then forgets every stream and
    /// event handle and every per-run resource without destroying them (they are dead after
    /// a reset). Never a plain reset after a force reset. Answered by `ResetDone` or
    /// `ResetFailed`.
    ForceReset {
        /// Recovery attempt, from 1.
        attempt: u8,
    },
    /// Recovery step 3: prove the device usable (re-bind, create and destroy a stream, a
    /// small alloc and free). Answered by `ProbePassed` or `ProbeFailed`.
    Probe {
        /// Recovery attempt, from 1.
        attempt: u8,
    },
    /// Tell the runner where recovery stands (L-24): a runner callback, no device call, no
    /// answer.
    Hook(RecoveryHook),
    /// The runtime reset the device (L-24, [`Lane::device_reset`](crate::Lane::device_reset)):
    /// the backend forgets every handle and every thread's binding as after its own force
    /// reset, with no device call. No answer.
    AdoptReset,
}

/// What the runner is told of a recovery (L-24), in the order it happens. In place:
/// `BeforeReset` once the runner work out at the poison answered and before the drain,
/// `AfterReset` once the probe passed or the last attempt failed. With the runtime's
/// recovery: `OnPoison` alone, once no thread of the lane is inside a device call, the last
/// thing the lane does with the device until the runtime reports its reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoveryHook {
    /// The runtime's recovery: every item has its verdict and the lane will make no device
    /// call until the runtime reports its reset. The lane's handles are still alive during
    /// the call (the runtime may read its diagnostics); the lane forgets them after it.
    OnPoison {
        /// The run whose failure poisoned the device; `None` for a device fault notice.
        origin: Option<RunId>,
        /// Why.
        cause: Cause,
    },
    /// In place: the lane is about to drain and force-reset the device; the runtime quiesces
    /// its own device users (a reset under one of their calls is a use-after-free).
    BeforeReset {
        /// The run whose failure poisoned the device; `None` for a device fault notice.
        origin: Option<RunId>,
        /// Why.
        cause: Cause,
    },
    /// In place: recovery ended; the runtime rebuilds what the reset destroyed (streams,
    /// loaded kernels, buffers). `recovered: false`: every attempt failed and the lane is lost.
    AfterReset {
        /// Whether the probe proved the device usable.
        recovered: bool,
    },
}

impl Effect {
    /// The run this effect is about, if any.
    #[must_use]
    pub const fn run(&self) -> Option<RunId> {
        match *self {
            Self::PrepareRun { run, .. }
            | Self::LaunchRun { run, .. }
            | Self::AwaitCompletion { run, .. }
            | Self::ReadRecords { run, .. }
            | Self::ReadStatus { run, .. }
            | Self::FinaliseRun { run, .. } => Some(run),
            _ => None,
        }
    }

    /// A short name for traces and tables.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::PrepareRun { .. } => "PrepareRun",
            Self::CreateStream { .. } => "CreateStream",
            Self::DestroyStream { .. } => "DestroyStream",
            Self::LaunchRun { .. } => "LaunchRun",
            Self::AwaitCompletion { .. } => "AwaitCompletion",
            Self::ReadRecords { .. } => "ReadRecords",
            Self::ReadStatus { .. } => "ReadStatus",
            Self::FinaliseRun { .. } => "FinaliseRun",
            Self::UploadCode { .. } => "UploadCode",
            Self::DrainDevice { .. } => "DrainDevice",
            Self::ForceReset { .. } => "ForceReset",
            Self::Probe { .. } => "Probe",
            Self::Hook(RecoveryHook::OnPoison { .. }) => "Hook(OnPoison)",
            Self::Hook(RecoveryHook::BeforeReset { .. }) => "Hook(BeforeReset)",
            Self::Hook(RecoveryHook::AfterReset { .. }) => "Hook(AfterReset)",
            Self::AdoptReset => "AdoptReset",
        }
    }
}
