//! The one failure classification policy (SPEC §5.3, §5.4): every failure maps to one
//! [`Rule`], and each rule carries its class and the reason for it.
//!
//! Both halves live here, next to each other: [`Rule::row`] (class and why) and
//! [`Rule::of`] (which rule a failure falls under). A policy change is a one-row diff.

use core::fmt;

use crate::codes::{AclCode, ReturnCode, RuntimeCode};
use crate::header::Latch;
use crate::record::{RecordDefect, RecordSource};

/// Where on a run's path (or the device's recovery) an ACL/RT call failed.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Stage {
    /// Creating a stream of the pair, on the launch path.
    StreamCreate,
    /// Destroying a stale or unproven stream, on the launch path.
    StreamDestroy,
    /// Launching the AICore kernel (first; nothing of the run is enqueued yet).
    AicoreLaunch,
    /// Launching the AICPU kernel (after the AICore kernel was enqueued).
    AicpuLaunch,
    /// Recording a completion event after the kernels.
    EventRecord,
    /// Waiting for (or querying) a completion event.
    EventWait,
    /// Reading the status header device-to-host.
    StatusRead,
    /// Reading the run's result record device-to-host, right after its boundary (L-8).
    RecordRead,
    /// The device verdict: the bounded synchronize of the pair (AICPU stream, then AICore)
    /// that materializes a stream's code when the record does not decide the run (L-8).
    StreamSync,
    /// Copying the run's output back to the host.
    CopyBack,
    /// Preparing the run (touches no stream).
    Prepare,
    /// The bounded device drain of recovery.
    DeviceDrain,
    /// The force reset of recovery.
    Reset,
    /// The probe that confirms a reset.
    Probe,
    /// Uploading a publication's AICore code (a drain barrier: no run is in flight).
    Upload,
    /// A device fault notice named one of the lane's streams (L-19): the device was
    /// recovered before this item could run.
    FaultNotice,
}

impl Stage {
    /// Every stage, in run order then recovery order.
    pub const ALL: [Stage; 16] = [
        Self::StreamCreate,
        Self::StreamDestroy,
        Self::AicoreLaunch,
        Self::AicpuLaunch,
        Self::EventRecord,
        Self::EventWait,
        Self::StatusRead,
        Self::RecordRead,
        Self::StreamSync,
        Self::CopyBack,
        Self::Prepare,
        Self::DeviceDrain,
        Self::Reset,
        Self::Probe,
        Self::Upload,
        Self::FaultNotice,
    ];

    /// The stages whose call is the runtime's (a runner callback), in run order: what they
    /// return may be one of its latch codes, negated ([`Failure::returned`]).
    pub const RETURNING: [Stage; 5] =
        [Self::Prepare, Self::AicoreLaunch, Self::AicpuLaunch, Self::CopyBack, Self::Upload];

    /// The stage's name in logs and tables.
    pub const fn name(self) -> &'static str {
        match self {
            Self::StreamCreate => "stream create",
            Self::StreamDestroy => "stream destroy",
            Self::AicoreLaunch => "AICore launch",
            Self::AicpuLaunch => "AICPU launch",
            Self::EventRecord => "event record",
            Self::EventWait => "event wait",
            Self::StatusRead => "status read",
            Self::RecordRead => "record read",
            Self::StreamSync => "device verdict",
            Self::CopyBack => "copy-back",
            Self::Prepare => "prepare",
            Self::DeviceDrain => "device drain",
            Self::Reset => "reset",
            Self::Probe => "probe",
            Self::Upload => "upload",
            Self::FaultNotice => "device fault notice",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How far a failed launch got (L-5).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum LaunchProgress {
    /// The AICore launch failed: nothing of the run reached a stream.
    NotStarted,
    /// The AICPU launch failed after the AICore kernel was enqueued.
    Partial,
}

impl LaunchProgress {
    /// Both, in launch order.
    pub const ALL: [LaunchProgress; 2] = [Self::NotStarted, Self::Partial];

    /// The name in logs and tables.
    pub const fn name(self) -> &'static str {
        match self {
            Self::NotStarted => "not started",
            Self::Partial => "partial",
        }
    }

    /// The stage whose failure this progress describes.
    pub const fn stage(self) -> Stage {
        match self {
            Self::NotStarted => Stage::AicoreLaunch,
            Self::Partial => Stage::AicpuLaunch,
        }
    }
}

/// A run's failure, as the lane records it (one per run, inline: `Copy` and small).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Failure {
    /// The status header latched a runtime code.
    Latched(Latch),
    /// An ACL/RT call returned a non-zero code at a stage. At `AicoreLaunch` and
    /// `AicpuLaunch` this classifies exactly like `Launch` with `NotStarted` and `Partial`.
    Acl {
        /// Where.
        stage: Stage,
        /// What it returned.
        code: AclCode,
    },
    /// A launch failed part way.
    Launch {
        /// How far it got.
        progress: LaunchProgress,
        /// What the failing launch returned.
        code: AclCode,
    },
    /// The lane's own completion deadline passed before the run was proven complete.
    HostWaitTimeout,
    /// Host-side validation of the copied-back output failed.
    CopyBackValidation,
    /// The run's result record says it failed, with the runtime's own code (L-8): classified
    /// as the same code latched in the header would be.
    Record {
        /// The runtime's code.
        code: RuntimeCode,
        /// Where the runtime took it from.
        source: RecordSource,
    },
    /// The run published no result record and the device verdict was clean: it did not
    /// complete its normal path (L-8). Never success.
    NoRecord,
    /// The run published no result record, and the code the device verdict returned was
    /// another run's (L-8a): a fatal status that run left sticky on the AICPU stream, while
    /// the AICore stream synchronized clean. The run did not complete its normal path; the
    /// code convicts no one. Never success.
    NoRecordBesideCode {
        /// The code the AICPU stream's synchronize returned.
        code: AclCode,
        /// The run that left it (its record reports an error).
        left_by: u64,
    },
    /// The device verdict's code, charged to this run (L-8a: no evidence explains it, and this
    /// is the earliest covered run without a published record), while the synchronize also
    /// waited for `behind` runs queued behind it, any of which may share the cause. Classified
    /// as the code at [`Stage::StreamSync`].
    Covering {
        /// The code the synchronize returned.
        code: AclCode,
        /// How many runs queued behind this one the synchronize covered (at least 1).
        behind: u8,
    },
    /// The run's record carries this run's epoch but breaks the record's rules, and the
    /// device verdict was clean.
    MalformedRecord(RecordDefect),
    /// A call of the runtime's at `stage` (its prepare, a kernel launch, its finalise, an
    /// upload) returned one of its latch codes negated ([`RUNTIME_STATUS_BAND`](crate::RUNTIME_STATUS_BAND)):
    /// that latched failure, named as the code and classified as the same code latched in the
    /// header is, except where the stage decides alone: after a failed AICPU launch the AICore
    /// kernel is orphaned whatever the code (`launch-partial`, L-5), and an upload fails only
    /// its publication (`upload-failed`). Make one with [`Failure::returned`].
    Returned {
        /// The stage whose call returned it.
        stage: Stage,
        /// The latch code (its value; the call returned it negated).
        code: RuntimeCode,
    },
}

impl Failure {
    /// The failure of a runtime call at `stage` that returned `code`: the one place a
    /// returned value is read. An ACL code is [`Failure::Acl`], and at the two launch stages
    /// [`Failure::Launch`] (`NotStarted` at the AICore launch, `Partial` at the AICPU launch);
    /// a runtime latch code returned negated is [`Failure::Returned`].
    pub const fn returned(stage: Stage, code: ReturnCode) -> Self {
        match code {
            ReturnCode::Runtime(code) => Self::Returned { stage, code },
            ReturnCode::Acl(code) => match stage {
                Stage::AicoreLaunch => Self::Launch { progress: LaunchProgress::NotStarted, code },
                Stage::AicpuLaunch => Self::Launch { progress: LaunchProgress::Partial, code },
                _ => Self::Acl { stage, code },
            },
        }
    }

    /// A launch that failed at `progress` with `code` (a launch callback's return or a
    /// device call's): [`Failure::Launch`], or [`Failure::Returned`] at the progress's stage
    /// for a runtime latch code.
    pub const fn launch(progress: LaunchProgress, code: ReturnCode) -> Self {
        match code {
            ReturnCode::Acl(code) => Self::Launch { progress, code },
            ReturnCode::Runtime(code) => Self::Returned { stage: progress.stage(), code },
        }
    }

    /// Where it failed: the stage of an ACL code or of a launch; `None` for a latched code
    /// (the runtime reports it from the device), a host wait timeout and a copy-back
    /// validation failure.
    pub const fn stage(&self) -> Option<Stage> {
        match *self {
            Self::Acl { stage, .. } => Some(stage),
            Self::Launch { progress, .. } => Some(progress.stage()),
            Self::Covering { .. } => Some(Stage::StreamSync),
            Self::Returned { stage, .. } => Some(stage),
            Self::Latched(_)
            | Self::HostWaitTimeout
            | Self::CopyBackValidation
            | Self::Record { .. }
            | Self::NoRecord
            | Self::NoRecordBesideCode { .. }
            | Self::MalformedRecord(_) => None,
        }
    }

    /// The code as reported: the latched runtime code's value (a returned one's too, not
    /// negated) or the ACL return code; `None` for the failures that carry no code.
    pub const fn code(&self) -> Option<i32> {
        match *self {
            Self::Latched(Latch { code, .. })
            | Self::Record { code, .. }
            | Self::Returned { code, .. } => Some(code.value()),
            Self::Acl { code, .. } | Self::Launch { code, .. } | Self::Covering { code, .. } => {
                Some(code.raw())
            }
            // Another run's code: this run's own failure has none.
            Self::HostWaitTimeout
            | Self::CopyBackValidation
            | Self::NoRecord
            | Self::NoRecordBesideCode { .. }
            | Self::MalformedRecord(_) => None,
        }
    }

    /// The code's name (`INVALID_ARGS`, `ACL_ERROR_RT_AICORE_EXCEPTION`, ...), or a name for
    /// the two failures without a code.
    pub const fn name(&self) -> &'static str {
        match *self {
            Self::Latched(Latch { code, .. })
            | Self::Record { code, .. }
            | Self::Returned { code, .. } => code.name(),
            Self::Acl { code, .. } | Self::Launch { code, .. } | Self::Covering { code, .. } => {
                code.name()
            }
            Self::HostWaitTimeout => "HOST_WAIT_TIMEOUT",
            Self::CopyBackValidation => "COPY_BACK_VALIDATION",
            Self::NoRecord | Self::NoRecordBesideCode { .. } => "NO_RESULT_RECORD",
            Self::MalformedRecord(_) => "MALFORMED_RESULT_RECORD",
        }
    }

    /// What to change and run again.
    pub const fn hint(&self) -> &'static str {
        match *self {
            Self::Latched(Latch { code, .. })
            | Self::Record { code, .. }
            | Self::Returned { code, .. } => code.hint(),
            Self::Acl { code, .. } | Self::Launch { code, .. } | Self::Covering { code, .. } => {
                code.hint()
            }
            Self::NoRecordBesideCode { .. } => {
                "the run published no result record; the synchronize's code is the run named in the line's: \
                 fix that run first, then check that the runtime's device code publishes a record for every \
                 run (docs/embedding.md)"
            }
            Self::NoRecord => {
                "the streams are clean but the run published no result record: check that the runtime's device \
                 code publishes one for every run (docs/embedding.md), then run again"
            }
            Self::MalformedRecord(_) => {
                "the record carries this run's epoch but breaks its rules: check that the runtime and this lane \
                 agree on the record's layout, then run again"
            }
            Self::HostWaitTimeout => {
                "the work may still be running, so the device is recovered; find the stuck run (its latch, the \
                 device log) before raising the deadline"
            }
            Self::CopyBackValidation => {
                "the device is fine: check the run's inputs and expected output, then run again"
            }
        }
    }
}

/// What a failure does to the lane.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Class {
    /// Fail this run; a queued successor and later runs continue.
    RunOnly,
    /// The device can no longer be trusted: poison the lane and recover the device.
    Poison,
}

impl Class {
    /// The name in logs and tables.
    pub const fn name(self) -> &'static str {
        match self {
            Self::RunOnly => "run-only",
            Self::Poison => "poison",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failure's class, the rule that decided it, and why.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Classification {
    /// Run-only or poison.
    pub class: Class,
    /// The rule's documented reason.
    pub reason: &'static str,
    /// The rule that decided it.
    pub rule: Rule,
}

/// One row of the policy.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Rule {
    /// Latched orchestration and capacity codes (1-7, 9, 11, 101, 102, 104), in the header,
    /// a record, or returned negated by a call of the runtime's.
    LatchedChangeAndRerun,
    /// Latched timeouts (8, 100), wherever reported.
    LatchedTimeout,
    /// Latched runtime-internal codes (10, 103), wherever reported.
    LatchedRuntimeInternal,
    /// A latch code this build does not know, wherever reported (a returned value in
    /// -1..-999 the table does not name included).
    LatchedUnknown,
    /// An ACL code that names a device fault, at any stage.
    DeviceFault,
    /// Stream create or destroy on the launch path failed.
    LaunchPathStream,
    /// The AICore launch failed with a non-device code.
    LaunchNotStarted,
    /// The AICPU launch failed after AICore was enqueued.
    LaunchPartial,
    /// Recording a completion event failed.
    EventRecordFailed,
    /// A completion wait ended without proven completion.
    EventWaitUnproven,
    /// The status header read failed.
    StatusReadFailed,
    /// Copy-back failed with a non-device code.
    CopyBackFailed,
    /// Preparation failed.
    PrepareFailed,
    /// A recovery step (drain, reset, probe) failed.
    RecoveryFailed,
    /// The lane's completion deadline passed.
    HostWaitTimeout,
    /// Host-side validation of the output failed.
    CopyBackValidation,
    /// A publication's upload failed.
    UploadFailed,
    /// The device verdict is clean but the run published no result record.
    NoResultRecord,
    /// The device verdict is clean but the run's record is malformed.
    MalformedRecord,
    /// The result record could not be read.
    RecordReadFailed,
    /// The device verdict's synchronize failed with a code that names no device fault.
    DeviceVerdictFailed,
    /// A device fault notice named one of the lane's streams with a code that names no
    /// device fault.
    FaultNotice,
}

impl Rule {
    /// Every rule, in the order [`Rule::of`] tries them.
    pub const ALL: [Rule; 22] = [
        Self::LatchedChangeAndRerun,
        Self::LatchedTimeout,
        Self::LatchedRuntimeInternal,
        Self::LatchedUnknown,
        Self::DeviceFault,
        Self::LaunchPathStream,
        Self::LaunchNotStarted,
        Self::LaunchPartial,
        Self::EventRecordFailed,
        Self::EventWaitUnproven,
        Self::StatusReadFailed,
        Self::CopyBackFailed,
        Self::PrepareFailed,
        Self::RecoveryFailed,
        Self::HostWaitTimeout,
        Self::CopyBackValidation,
        Self::UploadFailed,
        Self::NoResultRecord,
        Self::MalformedRecord,
        Self::RecordReadFailed,
        Self::DeviceVerdictFailed,
        Self::FaultNotice,
    ];

    /// The policy table: each rule's name, class and why.
    pub const fn row(self) -> (&'static str, Class, &'static str) {
        use Class::{Poison, RunOnly};
        match self {
            Self::LatchedChangeAndRerun => (
                "latched-change-and-rerun",
                RunOnly,
                "an orchestration or capacity code: the runtime stopped the run cleanly and nothing is left \
                 running; the code's hint says what to change, and a queued successor is unaffected",
            ),
            Self::LatchedTimeout => (
                "latched-timeout",
                Poison,
                "the runtime gave up waiting (SCHEDULER_TIMEOUT, TENSOR_WAIT_TIMEOUT): work may still be live \
                 on the device",
            ),
            Self::LatchedRuntimeInternal => (
                "latched-runtime-internal",
                Poison,
                "a runtime-internal failure (10, 103): the runtime's own state broke, so nothing proves the \
                 device is clean",
            ),
            Self::LatchedUnknown => (
                "latched-unknown",
                Poison,
                "a code this build does not know: nothing proves the device is clean",
            ),
            Self::DeviceFault => (
                "device-fault",
                Poison,
                "the code names a device fault or timeout: the context is likely poisoned and only recovery \
                 clears it, whatever the stage",
            ),
            Self::LaunchPathStream => (
                "launch-path-stream",
                RunOnly,
                "a stream create or destroy on the launch path failed before the run reached a stream: the run \
                 did not start, and the next launch retries the stream (S-7)",
            ),
            Self::LaunchNotStarted => (
                "launch-not-started",
                RunOnly,
                "the AICore launch was refused before anything was enqueued: the run did not start and the \
                 device is fine",
            ),
            Self::LaunchPartial => (
                "launch-partial",
                Poison,
                "AICore workers were enqueued but the AICPU scheduler was not: they spin with nothing to release \
                 them, so the stream cannot drain (L-5)",
            ),
            Self::EventRecordFailed => (
                "event-record-failed",
                Poison,
                "the kernels are enqueued but their completion event is not: nothing can prove the run finished",
            ),
            Self::EventWaitUnproven => (
                "event-wait-unproven",
                Poison,
                "the wait ended without proven completion: the work may still be running and the slot's \
                 resources may still be in use",
            ),
            Self::StatusReadFailed => (
                "status-read-failed",
                Poison,
                "the status header could not be read: the run's latch is unknown and the device failed a plain \
                 copy",
            ),
            Self::CopyBackFailed => (
                "copy-back-failed",
                RunOnly,
                "the run completed and its latch read clean; copying its output failed with a non-device code, \
                 so only this run's output is lost",
            ),
            Self::PrepareFailed => (
                "prepare-failed",
                RunOnly,
                "preparation touches no stream (L-4): nothing reached the device, so only this run fails",
            ),
            Self::RecoveryFailed => (
                "recovery-failed",
                Poison,
                "a recovery step (drain, reset, probe) failed: the device stays untrusted until a probe passes",
            ),
            Self::HostWaitTimeout => (
                "host-wait-timeout",
                Poison,
                "the lane's completion deadline passed: the work may still be running",
            ),
            Self::CopyBackValidation => (
                "copy-back-validation",
                RunOnly,
                "the run completed and the device is fine; the host rejected its output",
            ),
            Self::UploadFailed => (
                "upload-failed",
                RunOnly,
                "a publication is a drain barrier, so no run is in flight: only the publication fails (publish \
                 again), the AICore stream is replaced before the next launch anyway, and a faulted device is \
                 caught by the next run's prepare, launch or status read, which poisons with that run as origin; \
                 this rule is checked before the device-fault rule so an upload never names a poison origin",
            ),
            Self::NoResultRecord => (
                "no-result-record",
                RunOnly,
                "the run's boundary completed and the bounded synchronize of both streams returned 0, but the \
                 run published no record: it did not complete its normal path (L-8); the device is clean, so \
                 only this run fails, and it is never reported as a success",
            ),
            Self::MalformedRecord => (
                "malformed-result-record",
                RunOnly,
                "the run's record carries its epoch but breaks the record's rules, and the bounded synchronize \
                 of both streams returned 0: the device is clean, the run's result is unknown",
            ),
            Self::RecordReadFailed => (
                "record-read-failed",
                Poison,
                "the run's result record could not be read after its boundary: the device failed a plain copy \
                 of memory the run wrote",
            ),
            Self::DeviceVerdictFailed => (
                "device-verdict-failed",
                Poison,
                "the synchronize that decides an unproven run failed: nothing proves the streams are clean",
            ),
            Self::FaultNotice => (
                "fault-notice",
                Poison,
                "the driver reported a fault on one of the lane's streams (L-19): the device is suspect until \
                 a reset is confirmed, so what had not launched fails and the device is recovered",
            ),
        }
    }

    /// Which rule a failure falls under. A device-fault code wins over the stage.
    pub const fn of(failure: &Failure) -> Rule {
        use RuntimeCode as R;
        match *failure {
            Failure::Acl { stage: Stage::Upload, .. }
            | Failure::Returned { stage: Stage::Upload, .. } => Self::UploadFailed,
            // The AICore kernel spins with no scheduler to release it, whatever the code (L-5).
            Failure::Returned { stage: Stage::AicpuLaunch, .. } => Self::LaunchPartial,
            Failure::Latched(Latch { code, .. })
            | Failure::Record { code, .. }
            | Failure::Returned { code, .. } => match code {
                R::ScopeDeadlock
                | R::HeapRingDeadlock
                | R::FlowControlDeadlock
                | R::DepPoolOverflow
                | R::InvalidArgs
                | R::DependencyOverflow
                | R::RequireSyncStartInvalid
                | R::ExplicitOrchFatal
                | R::TensormapOverflow
                | R::AsyncCompletionInvalid
                | R::AsyncWaitOverflow
                | R::ReadyQueueOverflow => Self::LatchedChangeAndRerun,
                R::TensorWaitTimeout | R::SchedulerTimeout => Self::LatchedTimeout,
                R::ScopeTasksOverflow | R::AsyncRegistrationFailed => Self::LatchedRuntimeInternal,
                R::Unknown(_) => Self::LatchedUnknown,
            },
            Failure::Acl { code, .. }
            | Failure::Launch { code, .. }
            | Failure::Covering { code, .. }
                if code.is_device_fault() =>
            {
                Self::DeviceFault
            }
            Failure::Covering { .. } => Self::DeviceVerdictFailed,
            Failure::Launch { progress: LaunchProgress::NotStarted, .. } => Self::LaunchNotStarted,
            Failure::Launch { progress: LaunchProgress::Partial, .. } => Self::LaunchPartial,
            Failure::Acl { stage, .. } => match stage {
                Stage::StreamCreate | Stage::StreamDestroy => Self::LaunchPathStream,
                Stage::AicoreLaunch => Self::LaunchNotStarted,
                Stage::AicpuLaunch => Self::LaunchPartial,
                Stage::EventRecord => Self::EventRecordFailed,
                // 507004 lands here too: still not proven complete.
                Stage::EventWait => Self::EventWaitUnproven,
                Stage::StatusRead => Self::StatusReadFailed,
                Stage::RecordRead => Self::RecordReadFailed,
                Stage::StreamSync => Self::DeviceVerdictFailed,
                Stage::CopyBack => Self::CopyBackFailed,
                Stage::Prepare => Self::PrepareFailed,
                Stage::DeviceDrain | Stage::Reset | Stage::Probe => Self::RecoveryFailed,
                Stage::Upload => Self::UploadFailed,
                Stage::FaultNotice => Self::FaultNotice,
            },
            Failure::HostWaitTimeout => Self::HostWaitTimeout,
            Failure::CopyBackValidation => Self::CopyBackValidation,
            Failure::NoRecord | Failure::NoRecordBesideCode { .. } => Self::NoResultRecord,
            Failure::MalformedRecord(_) => Self::MalformedRecord,
        }
    }

    /// The rule's short name.
    pub const fn name(self) -> &'static str {
        self.row().0
    }

    /// The rule's class.
    pub const fn class(self) -> Class {
        self.row().1
    }

    /// Why the rule has that class.
    pub const fn reason(self) -> &'static str {
        self.row().2
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Classifies a failure: run-only or poison, with the rule and its reason (SPEC §5.3).
pub const fn classify(failure: &Failure) -> Classification {
    let rule = Rule::of(failure);
    Classification { class: rule.class(), reason: rule.reason(), rule }
}

/// Every failure the tables show: every known runtime code latched (and two unknown
/// values), every named ACL code (and an unnamed one) at every stage and at both launch
/// progresses, and the two failures without a code. For tables, tests and fuzz seeds.
pub fn known_failures() -> Vec<Failure> {
    use crate::header::LatchSource;
    let runtime =
        RuntimeCode::ALL.into_iter().chain([RuntimeCode::Unknown(-1), RuntimeCode::Unknown(12)]);
    let acl = || AclCode::ALL.into_iter().chain([AclCode::Unknown(999_999)]);
    let mut out: Vec<Failure> =
        runtime.map(|code| Failure::Latched(Latch { source: LatchSource::Orch, code })).collect();
    for stage in Stage::ALL {
        out.extend(acl().map(|code| Failure::Acl { stage, code }));
    }
    for progress in LaunchProgress::ALL {
        out.extend(acl().map(|code| Failure::Launch { progress, code }));
    }
    out.extend([Failure::HostWaitTimeout, Failure::CopyBackValidation]);
    out.extend(
        RecordSource::ALL
            .into_iter()
            .map(|source| Failure::Record { code: RuntimeCode::ScopeDeadlock, source }),
    );
    out.extend([
        Failure::Record { code: RuntimeCode::SchedulerTimeout, source: RecordSource::Header },
        Failure::NoRecord,
        Failure::NoRecordBesideCode { code: AclCode::RtAicpuException, left_by: 4 },
        Failure::Covering { code: AclCode::RtAicoreException, behind: 1 },
        Failure::Covering { code: AclCode::RtStreamSyncTimeout, behind: 2 },
        Failure::MalformedRecord(RecordDefect::NoVerdict),
    ]);
    // A runtime latch code returned negated by each call of the runtime's: an orchestration
    // code, a timeout, a runtime-internal code and one the table does not know.
    for stage in Stage::RETURNING {
        out.extend(
            [
                RuntimeCode::FlowControlDeadlock,
                RuntimeCode::DepPoolOverflow,
                RuntimeCode::SchedulerTimeout,
                RuntimeCode::AsyncRegistrationFailed,
                RuntimeCode::Unknown(12),
            ]
            .map(|code| Failure::Returned { stage, code }),
        );
    }
    out
}
