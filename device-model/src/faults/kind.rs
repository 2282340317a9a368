//! [`FaultKind`]: every kind of fault, its table row (name, site, code kind, default codes,
//! description) and the `--fault help` table rendered from it. Apart from the rules so the
//! vocabulary's table reads in one place.

use super::{FaultError, Site};
use crate::config::Engine;

/// What kind of fault a rule injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// Stream creation fails with a code.
    StreamCreate,
    /// Stream destruction fails with a code (the stream survives).
    StreamDestroy,
    /// The AICore kernel launch is refused; nothing is enqueued.
    AicoreLaunch,
    /// The AICPU kernel launch is refused after the AICore kernel was enqueued (which then
    /// spins forever: a partial launch).
    AicpuLaunch,
    /// Recording a completion event fails.
    EventRecord,
    /// An event wait returns a code instead of waiting.
    EventWait,
    /// The status header read fails with a code.
    StatusRead,
    /// A device allocation fails.
    Malloc,
    /// The runner's prepare fails with a code.
    Prepare,
    /// The runner's prepare reports "incompatible while the predecessor runs" (-3).
    PrepareIncompatible,
    /// Copy-back fails with a code.
    CopyBack,
    /// Host validation of the copied-back output fails.
    Validation,
    /// A code upload fails with a code.
    Upload,
    /// The force reset fails.
    Reset,
    /// The probe's first call fails.
    Probe,
    /// A device exception: the run's kernels end (at their normal end) with the code, both streams are
    /// sticky-faulted and the device is bad until a force reset.
    Exception,
    /// The run's AICore kernel hangs until the device op timeout (SPEC L-6) kills it: the
    /// AICore stream faults with 507014 and the device is bad until a force reset; the AICPU
    /// scheduler, its workers gone, exits without publishing a record and its stream stays
    /// clean. The boundary completes before the host deadline (the event wait returns 0) and
    /// the device verdict's AICore synchronize returns 507014.
    Hang,
    /// The kernels exit with this runtime code latched in the status header; the AICPU
    /// scheduler publishes an error record with it (source: the status header) and returns a
    /// fatal status, leaving 507018 sticky on the AICPU stream (device-truth §1; the device
    /// stays good).
    Latch,
    /// The run's kernels never end and the device op timeout never fires (a device that
    /// stopped reporting): only the host's bounded wait ends it, with 507047.
    Stuck,
    /// The slot's arm copy fails: the synchronous `aclrtMemcpy`, or the enqueue of its
    /// `aclrtMemcpyAsync` with copies on the streams (selected by `calls`: the n-th arm).
    Arm,
    /// The run's AICPU scheduler hangs until the device op timeout kills it (507017 on the
    /// AICPU stream); its AICore workers, never released, are killed by the same timeout
    /// (507014 on the AICore stream). Nothing is published; the device verdict's AICPU
    /// synchronize returns 507017.
    HangAicpu,
    /// The run's kernels exit and its streams stay clean, but the runtime publishes no result
    /// record (it did not complete its audited normal path): the device verdict is clean and
    /// the run fails run-only, "no result record".
    Silent,
    /// The result record's read after the boundary fails with a code.
    RecordRead,
    /// A call of the named function (an ACL symbol, or a control function of the fake) returns
    /// the code instead of running (`call:aclrtMalloc=207001`).
    Call,
    /// One kernel (`/engine:` one engine, else any) ends in a device exception: the code, or
    /// its engine's (507015 AICore, 507018 AICPU).
    KernelException,
    /// One kernel hangs until the op timeout kills it.
    KernelHang,
    /// One kernel never ends and the op timeout never fires.
    KernelStuck,
    /// One kernel exits with a latched header (the code, in the layout of its own header, or
    /// the `/header:` bytes); on AICPU it returns a fatal status.
    KernelLatch,
    /// One kernel exits clean but its run publishes no record.
    KernelSilent,
    /// One kernel ends ok, whatever its launch asked.
    KernelOk,
    /// An async copy fails on its stream when the stream reaches it: no byte lands, the code
    /// is sticky on the stream.
    Copy,
}

/// What code a kind takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CodeKind {
    None,
    Acl,
    Runtime,
    /// An ACL code, or none (the kind's own default).
    OptionalAcl,
    /// A runtime latch code, or none.
    OptionalRuntime,
    /// Any raw value, 0 included (a call rule "fails" with it).
    Raw,
}

impl FaultKind {
    /// Every kind, in table order.
    pub const ALL: [FaultKind; 23] = [
        Self::StreamCreate,
        Self::StreamDestroy,
        Self::AicoreLaunch,
        Self::AicpuLaunch,
        Self::EventRecord,
        Self::EventWait,
        Self::StatusRead,
        Self::Malloc,
        Self::Prepare,
        Self::PrepareIncompatible,
        Self::CopyBack,
        Self::Validation,
        Self::Upload,
        Self::Reset,
        Self::Probe,
        Self::Exception,
        Self::Hang,
        Self::Latch,
        // Last, so the swarm mixes drawn for the kinds above stay what they were.
        Self::Stuck,
        // Not drawn by the swarm (see `swarm`), so every seed's mix stays what it was.
        Self::Arm,
        // After the arm: drawn by the swarm after every kind above, so the draws for those
        // stay what they were.
        Self::HangAicpu,
        Self::Silent,
        Self::RecordRead,
    ];

    /// The kinds the fake's control calls make beside [`FaultKind::ALL`]: a named call, one
    /// kernel's outcome, an async copy. Not drawn by the swarm.
    pub const MORE: [FaultKind; 8] = [
        Self::Call,
        Self::KernelException,
        Self::KernelHang,
        Self::KernelStuck,
        Self::KernelLatch,
        Self::KernelSilent,
        Self::KernelOk,
        Self::Copy,
    ];

    /// The kind table: name, site, code kind, default codes (the first is used when a rule
    /// names none; swarm picks among them), and a one-line description. One row a kind.
    #[rustfmt::skip]
    pub(super) const fn row(self) -> (&'static str, Site, CodeKind, &'static [i32], &'static str) {
        use CodeKind::{Acl, None, OptionalAcl, OptionalRuntime, Raw, Runtime};
        const KERNEL: Site = Site::Kernel(Engine::Aicore);
        match self {
            // 207008 NO_STREAM_RESOURCE is run-only at launch; 507899 poisons.
            Self::StreamCreate => ("stream-create", Site::StreamCreate, Acl, &[207_008, 507_899],
                "stream creation fails"),
            Self::StreamDestroy => ("stream-destroy", Site::StreamDestroy, Acl, &[107_017, 507_901],
                "stream destruction fails; the stream survives"),
            Self::AicoreLaunch => ("aicore-launch", Site::AicoreLaunch, Acl, &[107_000, 207_001],
                "the AICore launch is refused (not started)"),
            Self::AicpuLaunch => ("aicpu-launch", Site::AicpuLaunch, Acl, &[507_018, 107_000],
                "the AICPU launch is refused after AICore was enqueued (partial)"),
            Self::EventRecord => ("event-record", Site::EventRecord, Acl, &[507_899, 107_000],
                "recording a completion event fails"),
            Self::EventWait => ("event-wait", Site::EventWait, Acl, &[507_000, 507_018],
                "an event wait returns a code"),
            Self::StatusRead => ("status-read", Site::StatusRead, Acl, &[507_899, 107_000],
                "the status header read fails"),
            Self::Malloc => ("malloc", Site::Malloc, Acl, &[200_000, 207_018],
                "a device allocation fails"),
            Self::Prepare => ("prepare", Site::Prepare, Acl, &[107_000, 507_018],
                "the runner's prepare fails"),
            Self::PrepareIncompatible => ("prepare-incompatible", Site::Prepare, None, &[],
                "prepare cannot overlap the predecessor (-3); retried later"),
            Self::CopyBack => ("copy-back", Site::Finalise, Acl, &[107_000, 507_018],
                "copy-back fails"),
            Self::Validation => ("validation", Site::Finalise, None, &[],
                "host validation of the output fails"),
            Self::Upload => ("upload", Site::Upload, Acl, &[107_000, 507_899],
                "a code upload fails"),
            Self::Reset => ("reset", Site::Reset, Acl, &[507_899, 507_000],
                "the force reset fails"),
            Self::Probe => ("probe", Site::Probe, Acl, &[507_899, 107_002],
                "the probe after a reset fails"),
            Self::Exception => ("exception", Site::Run, Acl, &[507_015, 507_018, 507_014, 507_017],
                "a device exception: the kernels end with the code; sticky stream and device fault"),
            Self::Hang => ("hang", Site::Run, None, &[],
                "the AICore kernel hangs until the op timeout kills it (507014 on the AICore stream, sticky); nothing published"),
            Self::HangAicpu => ("hang-aicpu", Site::Run, None, &[],
                "the AICPU scheduler hangs until the op timeout kills both kernels (507017 AICPU, 507014 AICore; sticky)"),
            Self::Silent => ("silent", Site::Run, None, &[],
                "the kernels exit with clean streams but publish no result record"),
            Self::RecordRead => ("record-read", Site::RecordRead, Acl, &[507_899, 107_000],
                "the result record's read after the boundary fails"),
            Self::Stuck => ("stuck", Site::Run, None, &[],
                "the run's kernels never end and the op timeout never fires; host waits time out"),
            Self::Arm => ("arm", Site::Arm, Acl, &[107_000, 507_899],
                "the slot's arm copy fails (the synchronous copy or the async enqueue)"),
            Self::Latch => ("latch", Site::Run, Runtime,
                &[1, 2, 3, 4, 5, 7, 9, 11, 101, 102, 104, 8, 100, 10, 103],
                "the kernels exit with a runtime code latched and published in an error record; 507018 stays on the AICPU stream"),
            Self::Call => ("call", Site::Call, Raw, &[507_899],
                "a call of the named function returns the code instead of running (call:SYMBOL=CODE)"),
            Self::KernelException => ("kernel-exception", KERNEL, OptionalAcl, &[],
                "one kernel ends in a device exception (its engine's code unless one is given)"),
            Self::KernelHang => ("kernel-hang", KERNEL, None, &[],
                "one kernel hangs until the op timeout kills it"),
            Self::KernelStuck => ("kernel-stuck", KERNEL, None, &[],
                "one kernel never ends and the op timeout never fires"),
            Self::KernelLatch => ("kernel-latch", KERNEL, OptionalRuntime, &[],
                "one kernel exits with a latched header (the code, or /header: bytes); an AICPU one returns a fatal status"),
            Self::KernelSilent => ("kernel-silent", KERNEL, None, &[],
                "one kernel exits clean but its run publishes no record"),
            Self::KernelOk => ("kernel-ok", KERNEL, None, &[],
                "one kernel ends ok, whatever its launch asked"),
            Self::Copy => ("copy", Site::Copy, Acl, &[507_899],
                "an async copy fails on its stream when the stream reaches it"),
        }
    }

    /// Whether this kind names one kernel (the `kernel-*` kinds, consulted at every launch).
    pub const fn is_kernel(self) -> bool {
        matches!(
            self,
            Self::KernelException
                | Self::KernelHang
                | Self::KernelStuck
                | Self::KernelLatch
                | Self::KernelSilent
                | Self::KernelOk
        )
    }

    /// The kind's name in `--fault` and scenario files.
    pub const fn name(self) -> &'static str {
        self.row().0
    }

    /// Where the device consults rules of this kind.
    pub const fn site(self) -> Site {
        self.row().1
    }

    /// One line: what the fault does.
    pub const fn description(self) -> &'static str {
        self.row().4
    }

    /// The codes swarm mode picks among (empty for kinds without a code).
    pub const fn default_codes(self) -> &'static [i32] {
        self.row().3
    }

    /// Whether a rule of this kind can name runs (`runs = [...]`, `@run:N`).
    pub const fn is_run_bound(self) -> bool {
        matches!(
            self.site(),
            Site::AicoreLaunch
                | Site::AicpuLaunch
                | Site::EventRecord
                | Site::EventWait
                | Site::StatusRead
                | Site::Prepare
                | Site::Finalise
                | Site::Run
                | Site::RecordRead
                | Site::Kernel(_)
        )
    }

    /// The kind with this name.
    pub fn from_name(name: &str) -> Result<Self, FaultError> {
        Self::ALL
            .into_iter()
            .chain(Self::MORE)
            .find(|k| k.name() == name)
            .ok_or_else(|| FaultError::UnknownKind { got: name.to_owned() })
    }

    /// Every kind's name, comma-separated (for errors and `--help`).
    pub fn names() -> String {
        let names: Vec<&str> = Self::ALL.iter().chain(&Self::MORE).map(|k| k.name()).collect();
        names.join(", ")
    }

    /// The kind list with descriptions, one per line (for `--help`).
    pub fn help_table() -> String {
        Self::ALL
            .iter()
            .chain(&Self::MORE)
            .map(|k| format!("  {:<21} {}", k.name(), k.description()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
