//! What the backend reports back ([`Lane::handle`](crate::Lane::handle)).

use status_latch::{AclCode, CoveredRead, Evidence, ReturnCode, RuntimeCode, Status};
use stream_pair::{Role, StreamHandle};

use crate::ids::{DeviceTiming, Lease, Peers, PublicationId, RunId};

/// The launch step that failed, in launch order (L-5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LaunchStep {
    /// Arming the slot (clearing its handshake, timing buffer and status header) or queueing
    /// the AICore stream's wait on the predecessor's boundary: nothing of the run reached a
    /// kernel (`NotStarted`).
    Arm,
    /// The AICore kernel launch: nothing reached a stream (`NotStarted`).
    Aicore,
    /// The AICPU kernel launch after the AICore kernel was enqueued: a spinning AICore is
    /// orphaned (`Partial`, poison).
    Aicpu,
    /// Recording the AICore kernel's own event (`core_done`) after that kernel was accepted
    /// and before the AICPU kernel was launched: the AICore kernel spins with no AICPU
    /// scheduler to release it, as after a failed AICPU launch (`Partial`, poison at once with
    /// the record's own code, L-5).
    CoreDone,
    /// Waiting for `core_done` on the AICPU stream, or recording the boundary, after the AICPU
    /// kernel was accepted: the run is unfenced and nothing of its own can prove it finished
    /// (L-5, poison through the device verdict).
    RecordEvent,
}

/// Why finalisation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinaliseFailure {
    /// Host-side validation of the copied-back outputs failed (run-only).
    Validation,
    /// The copy-back or a free returned an ACL code (poison when it names a device fault).
    Acl(AclCode),
    /// The runtime's finalise returned one of its latch codes, negated (-1..-999): that
    /// latched failure, classified as the same code latched (SPEC §5.3), never a validation
    /// failure.
    Runtime(RuntimeCode),
}

impl From<ReturnCode> for FinaliseFailure {
    /// A finalise's code: an ACL code, or a runtime latch code.
    fn from(code: ReturnCode) -> Self {
        match code {
            ReturnCode::Acl(code) => Self::Acl(code),
            ReturnCode::Runtime(code) => Self::Runtime(code),
        }
    }
}

/// One backend report. Each answers exactly one [`Effect`](crate::Effect) and names what it
/// answers; the lane rejects (and ignores) an event that answers nothing it asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The run is prepared into its slot.
    Prepared {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
    },
    /// The run cannot be prepared while its predecessor runs (the C++ runtime's -3, a shared
    /// arena probe miss). Nothing was touched; the lane prepares it again once the
    /// predecessor has its outcome, keeping its place and lease.
    PrepareIncompatible {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
    },
    /// Preparation failed.
    PrepareFailed {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// The code prepare returned: an ACL code, or one of the runtime's latch codes
        /// negated (its latched failure).
        code: ReturnCode,
    },
    /// A stream of the pair was created.
    StreamCreated {
        /// Which stream.
        role: Role,
        /// Its new handle.
        handle: StreamHandle,
    },
    /// Creating a stream failed.
    StreamCreateFailed {
        /// Which stream.
        role: Role,
        /// The code.
        code: AclCode,
    },
    /// A stream was destroyed.
    StreamDestroyed {
        /// Which stream.
        role: Role,
        /// The destroyed handle.
        handle: StreamHandle,
    },
    /// Destroying a stream failed; the handle is kept, stale, and destroyed again later.
    StreamDestroyFailed {
        /// Which stream.
        role: Role,
        /// The handle that survived.
        handle: StreamHandle,
        /// The code.
        code: AclCode,
    },
    /// Both kernels were enqueued and both completion events recorded.
    Launched {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
    },
    /// A launch step failed; every later step was skipped.
    LaunchFailed {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// The step that failed.
        step: LaunchStep,
        /// The code: a launch callback's (an ACL code, or one of the runtime's latch codes
        /// negated) at `Aicore` and `Aicpu`, the device call's at the other steps.
        code: ReturnCode,
    },
    /// The runner declined the launch (its AICore launch callback said "not now") before
    /// anything of the run reached a kernel. Queued behind a run on the pair, the run waits
    /// and launches again once the pair is empty; with nothing ahead of it, the decline fails
    /// the run (`NotStarted`, run-only).
    LaunchDeclined {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
    },
    /// The run's boundary completed (both kernels exited), with what the completion waiter
    /// learned right after it: the result record's read and, when the record does not decide
    /// the run, the device verdict (L-8). Completion is evidence, not the verdict: the lane
    /// judges it with [`status_latch::judge`].
    Completed {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// The record and the device verdict.
        evidence: Evidence,
    },
    /// The completion wait ended without proving completion (a host error, an event wait
    /// timeout, a device fault code): poison, the work may still be running.
    CompletionFailed {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// The code.
        code: AclCode,
    },
    /// The result records of the runs behind the awaited one were read (answers
    /// `ReadRecords`): what the lane charges its device verdict's code by (L-8a).
    RecordsRead {
        /// The awaited run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// Each covered run's record, in the order `ReadRecords` named them.
        records: Peers<CoveredRead>,
    },
    /// The run's status header and timing buffer were read and decoded.
    StatusRead {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// The decoded header.
        status: Status,
        /// Device start and end from the slot's timing buffer.
        timing: DeviceTiming,
    },
    /// Reading (or decoding) the status header failed: poison.
    StatusReadFailed {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// The code.
        code: AclCode,
    },
    /// The run is finalised and its slot's events are released.
    Finalised {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
    },
    /// Finalisation failed; the per-run resources and the slot's events are released anyway.
    FinaliseFailed {
        /// The run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// What failed.
        failure: FinaliseFailure,
    },
    /// The published code is on the device.
    Uploaded {
        /// The publication.
        publication: PublicationId,
    },
    /// The upload failed.
    UploadFailed {
        /// The publication.
        publication: PublicationId,
        /// The code the runtime's upload returned.
        code: ReturnCode,
    },
    /// The bounded device drain returned (with whatever code; it proves nothing).
    DeviceDrained {
        /// Recovery attempt.
        attempt: u8,
    },
    /// The force reset returned success.
    ResetDone {
        /// Recovery attempt.
        attempt: u8,
    },
    /// The force reset failed.
    ResetFailed {
        /// Recovery attempt.
        attempt: u8,
        /// The code.
        code: AclCode,
    },
    /// The probe proved the device usable.
    ProbePassed {
        /// Recovery attempt.
        attempt: u8,
    },
    /// The probe failed.
    ProbeFailed {
        /// Recovery attempt.
        attempt: u8,
        /// The code.
        code: AclCode,
    },
}

impl Event {
    /// The run this event is about, if any.
    #[must_use]
    pub const fn run(&self) -> Option<RunId> {
        match *self {
            Self::Prepared { run, .. }
            | Self::PrepareIncompatible { run, .. }
            | Self::PrepareFailed { run, .. }
            | Self::Launched { run, .. }
            | Self::LaunchFailed { run, .. }
            | Self::LaunchDeclined { run, .. }
            | Self::Completed { run, .. }
            | Self::CompletionFailed { run, .. }
            | Self::RecordsRead { run, .. }
            | Self::StatusRead { run, .. }
            | Self::StatusReadFailed { run, .. }
            | Self::Finalised { run, .. }
            | Self::FinaliseFailed { run, .. } => Some(run),
            _ => None,
        }
    }

    /// The run this event is about and the lease it names, if any.
    pub(crate) const fn run_lease(&self) -> Option<(RunId, Lease)> {
        match *self {
            Self::Prepared { run, lease }
            | Self::PrepareIncompatible { run, lease }
            | Self::PrepareFailed { run, lease, .. }
            | Self::Launched { run, lease }
            | Self::LaunchFailed { run, lease, .. }
            | Self::LaunchDeclined { run, lease }
            | Self::Completed { run, lease, .. }
            | Self::CompletionFailed { run, lease, .. }
            | Self::RecordsRead { run, lease, .. }
            | Self::StatusRead { run, lease, .. }
            | Self::StatusReadFailed { run, lease, .. }
            | Self::Finalised { run, lease }
            | Self::FinaliseFailed { run, lease, .. } => Some((run, lease)),
            _ => None,
        }
    }

    /// A short name for traces, errors and tables.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Prepared { .. } => "Prepared",
            Self::PrepareIncompatible { .. } => "PrepareIncompatible",
            Self::PrepareFailed { .. } => "PrepareFailed",
            Self::StreamCreated { .. } => "StreamCreated",
            Self::StreamCreateFailed { .. } => "StreamCreateFailed",
            Self::StreamDestroyed { .. } => "StreamDestroyed",
            Self::StreamDestroyFailed { .. } => "StreamDestroyFailed",
            Self::Launched { .. } => "Launched",
            Self::LaunchFailed { .. } => "LaunchFailed",
            Self::LaunchDeclined { .. } => "LaunchDeclined",
            Self::Completed { .. } => "Completed",
            Self::CompletionFailed { .. } => "CompletionFailed",
            Self::RecordsRead { .. } => "RecordsRead",
            Self::StatusRead { .. } => "StatusRead",
            Self::StatusReadFailed { .. } => "StatusReadFailed",
            Self::Finalised { .. } => "Finalised",
            Self::FinaliseFailed { .. } => "FinaliseFailed",
            Self::Uploaded { .. } => "Uploaded",
            Self::UploadFailed { .. } => "UploadFailed",
            Self::DeviceDrained { .. } => "DeviceDrained",
            Self::ResetDone { .. } => "ResetDone",
            Self::ResetFailed { .. } => "ResetFailed",
            Self::ProbePassed { .. } => "ProbePassed",
            Self::ProbeFailed { .. } => "ProbeFailed",
        }
    }
}
