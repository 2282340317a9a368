//! Fault rules installed on a device, decided by one seed: the one fault vocabulary of
//! backend-sim (`--fault`, scenario files) and acl-fake (its control calls).
//!
//! A [`FaultRule`] names a [`FaultKind`] (which call or run it hits and what it does), an
//! optional code, and [`When`] it fires. The device consults the installed rules at every
//! [`Site`] in install order; the first rule that fires wins (turmoil's `Rule`/`Verdict`).
//! Rates draw from a [`ChaCha8Rng`] seeded from the run's seed, so the same seed and the
//! same rules inject the same faults, on every platform and rand version.
//!
//! [`swarm`] derives a whole fault mix (which kinds are on, their rates and codes) from a
//! seed (TigerBeetle's swarm testing); [`FaultRule`]'s `Display` prints each rule in the
//! `--fault` syntax so the mix can be printed and replayed.

use core::fmt;

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use status_latch::{AclCode, RuntimeCode};
use thiserror::Error;

use crate::config::Engine;
use crate::kernel::Outcome;

/// Parts per million: rates are integers so they print and compare exactly.
const PPM: u64 = 1_000_000;

/// Where the device consults its rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Site {
    /// `create_stream` (also the probe's create).
    StreamCreate,
    /// `destroy_stream`.
    StreamDestroy,
    /// `launch_aicore`.
    AicoreLaunch,
    /// `launch_aicpu`.
    AicpuLaunch,
    /// `record_event`.
    EventRecord,
    /// `synchronize_event` / `query_event`.
    EventWait,
    /// The status header's device-to-host read.
    StatusRead,
    /// `malloc`.
    Malloc,
    /// The runner's `prepare_run`.
    Prepare,
    /// The runner's `finalise_run`.
    Finalise,
    /// The runner's `upload_code`.
    Upload,
    /// `reset_device_force`.
    Reset,
    /// `set_device`, the first call of the probe after a reset.
    Probe,
    /// A run's kernels, decided when both are enqueued.
    Run,
    /// The slot's arm: a host-to-device copy, synchronous or its async enqueue.
    Arm,
    /// The result record's device-to-host read (the completion waiter's, right after the
    /// run's boundary).
    RecordRead,
    /// One kernel's launch on this engine, a run's or alone (the kernel rules).
    Kernel(Engine),
    /// An async copy's task, when its stream reaches it.
    Copy,
    /// A call of a named function (the `call` rules, [`Faults::decide_call`]).
    Call,
}

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
enum CodeKind {
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
    /// names none; swarm picks among them), and a one-line description.
    const fn row(self) -> (&'static str, Site, CodeKind, &'static [i32], &'static str) {
        use CodeKind::{Acl, None, OptionalAcl, OptionalRuntime, Raw, Runtime};
        match self {
            Self::StreamCreate => (
                "stream-create",
                Site::StreamCreate,
                Acl,
                // 207008 NO_STREAM_RESOURCE is run-only at launch; 507899 poisons.
                &[207_008, 507_899],
                "stream creation fails",
            ),
            Self::StreamDestroy => (
                "stream-destroy",
                Site::StreamDestroy,
                Acl,
                &[107_017, 507_901],
                "stream destruction fails; the stream survives",
            ),
            Self::AicoreLaunch => (
                "aicore-launch",
                Site::AicoreLaunch,
                Acl,
                &[107_000, 207_001],
                "the AICore launch is refused (not started)",
            ),
            Self::AicpuLaunch => (
                "aicpu-launch",
                Site::AicpuLaunch,
                Acl,
                &[507_018, 107_000],
                "the AICPU launch is refused after AICore was enqueued (partial)",
            ),
            Self::EventRecord => (
                "event-record",
                Site::EventRecord,
                Acl,
                &[507_899, 107_000],
                "recording a completion event fails",
            ),
            Self::EventWait => (
                "event-wait",
                Site::EventWait,
                Acl,
                &[507_000, 507_018],
                "an event wait returns a code",
            ),
            Self::StatusRead => (
                "status-read",
                Site::StatusRead,
                Acl,
                &[507_899, 107_000],
                "the status header read fails",
            ),
            Self::Malloc => (
                "malloc",
                Site::Malloc,
                Acl,
                &[200_000, 207_018],
                "a device allocation fails",
            ),
            Self::Prepare => (
                "prepare",
                Site::Prepare,
                Acl,
                &[107_000, 507_018],
                "the runner's prepare fails",
            ),
            Self::PrepareIncompatible => (
                "prepare-incompatible",
                Site::Prepare,
                None,
                &[],
                "prepare cannot overlap the predecessor (-3); retried later",
            ),
            Self::CopyBack => (
                "copy-back",
                Site::Finalise,
                Acl,
                &[107_000, 507_018],
                "copy-back fails",
            ),
            Self::Validation => (
                "validation",
                Site::Finalise,
                None,
                &[],
                "host validation of the output fails",
            ),
            Self::Upload => (
                "upload",
                Site::Upload,
                Acl,
                &[107_000, 507_899],
                "a code upload fails",
            ),
            Self::Reset => (
                "reset",
                Site::Reset,
                Acl,
                &[507_899, 507_000],
                "the force reset fails",
            ),
            Self::Probe => (
                "probe",
                Site::Probe,
                Acl,
                &[507_899, 107_002],
                "the probe after a reset fails",
            ),
            Self::Exception => (
                "exception",
                Site::Run,
                Acl,
                &[507_015, 507_018, 507_014, 507_017],
                "a device exception: the kernels end with the code; sticky stream and device fault",
            ),
            Self::Hang => (
                "hang",
                Site::Run,
                None,
                &[],
                "the AICore kernel hangs until the op timeout kills it (507014 on the AICore stream, sticky); nothing published",
            ),
            Self::HangAicpu => (
                "hang-aicpu",
                Site::Run,
                None,
                &[],
                "the AICPU scheduler hangs until the op timeout kills both kernels (507017 AICPU, 507014 AICore; sticky)",
            ),
            Self::Silent => (
                "silent",
                Site::Run,
                None,
                &[],
                "the kernels exit with clean streams but publish no result record",
            ),
            Self::RecordRead => (
                "record-read",
                Site::RecordRead,
                Acl,
                &[507_899, 107_000],
                "the result record's read after the boundary fails",
            ),
            Self::Stuck => (
                "stuck",
                Site::Run,
                None,
                &[],
                "the run's kernels never end and the op timeout never fires; host waits time out",
            ),
            Self::Arm => (
                "arm",
                Site::Arm,
                Acl,
                &[107_000, 507_899],
                "the slot's arm copy fails (the synchronous copy or the async enqueue)",
            ),
            Self::Latch => (
                "latch",
                Site::Run,
                Runtime,
                &[1, 2, 3, 4, 5, 7, 9, 11, 101, 102, 104, 8, 100, 10, 103],
                "the kernels exit with a runtime code latched and published in an error record; 507018 stays on the AICPU stream",
            ),
            Self::Call => (
                "call",
                Site::Call,
                Raw,
                &[507_899],
                "a call of the named function returns the code instead of running (call:SYMBOL=CODE)",
            ),
            Self::KernelException => (
                "kernel-exception",
                Site::Kernel(Engine::Aicore),
                OptionalAcl,
                &[],
                "one kernel ends in a device exception (its engine's code unless one is given)",
            ),
            Self::KernelHang => (
                "kernel-hang",
                Site::Kernel(Engine::Aicore),
                None,
                &[],
                "one kernel hangs until the op timeout kills it",
            ),
            Self::KernelStuck => (
                "kernel-stuck",
                Site::Kernel(Engine::Aicore),
                None,
                &[],
                "one kernel never ends and the op timeout never fires",
            ),
            Self::KernelLatch => (
                "kernel-latch",
                Site::Kernel(Engine::Aicore),
                OptionalRuntime,
                &[],
                "one kernel exits with a latched header (the code, or /header: bytes); an AICPU one returns a fatal status",
            ),
            Self::KernelSilent => (
                "kernel-silent",
                Site::Kernel(Engine::Aicore),
                None,
                &[],
                "one kernel exits clean but its run publishes no record",
            ),
            Self::KernelOk => (
                "kernel-ok",
                Site::Kernel(Engine::Aicore),
                None,
                &[],
                "one kernel ends ok, whatever its launch asked",
            ),
            Self::Copy => (
                "copy",
                Site::Copy,
                Acl,
                &[507_899],
                "an async copy fails on its stream when the stream reaches it",
            ),
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
            .ok_or_else(|| FaultError::UnknownKind {
                got: name.to_owned(),
            })
    }

    /// Every kind's name, comma-separated (for errors and `--help`).
    pub fn names() -> String {
        let names: Vec<&str> = Self::ALL
            .iter()
            .chain(&Self::MORE)
            .map(|k| k.name())
            .collect();
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

/// The code a rule injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultCode {
    /// The kind takes no code.
    None,
    /// An ACL/RT return code.
    Acl(AclCode),
    /// A runtime latch code.
    Runtime(RuntimeCode),
    /// A raw return value (a `call` rule's, 0 included).
    Raw(i32),
}

/// When a rule fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum When {
    /// Every time its site is consulted.
    Always,
    /// The n-th consultations of its site, counting from 1 over the whole simulation.
    Calls(Vec<u64>),
    /// Consultations about these runs (by run id).
    Runs(Vec<u64>),
    /// Each consultation with this probability, in parts per million, drawn from the seed.
    Rate(u32),
    /// The consultations `first..=last` (`None`: every one from `first`), counting from 1.
    CallSpan {
        /// The first selected.
        first: u64,
        /// The last selected, if any.
        last: Option<u64>,
    },
}

/// What the device does when a rule fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Injected {
    /// The call returns this code.
    Fail(AclCode),
    /// The prepare reports incompatible.
    Incompatible,
    /// Validation fails.
    Validation,
    /// The run ends with a device exception.
    Exception(AclCode),
    /// The run's AICore kernel hangs until the device op timeout.
    Hang,
    /// The run's AICPU scheduler hangs until the device op timeout.
    HangAicpu,
    /// The run exits with clean streams and publishes no record.
    Silent,
    /// The run never ends.
    Stuck,
    /// The run latches this code.
    Latch(Latched),
    /// One kernel ends so: its outcome, and for a latch the latch to write (in the layout of
    /// its own header) or the header bytes themselves.
    Kernel(Outcome, KernelHeader),
    /// A named call returns this raw value.
    Call(i32),
}

/// The header a `kernel-latch` rule writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelHeader {
    /// The kernel's own.
    Own,
    /// Its own layout, with this latch.
    Latched(Latched),
    /// These bytes.
    Bytes(Vec<u8>),
}

/// What a latch fault writes: the code, and for a scheduler code (100 and above) which
/// scheduler threads reported it. Every reporting thread sets its bit in the bitmap; the
/// first writer's code and thread are the ones kept (SPEC §5.1, first-writer-wins).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latched {
    /// The first writer's code.
    pub code: RuntimeCode,
    /// The first writer's thread.
    pub first_thread: u8,
    /// Every thread that reported, one bit each.
    pub bitmap: u32,
}

impl Latched {
    /// The status header this latch writes: a scheduler code (100 and above) on the
    /// scheduler side with its first thread and bitmap, any other code on the orchestrator.
    /// `None` is a clean header. Every backend's runner writes headers through this one
    /// function, so they latch alike.
    pub fn status(
        latched: Option<Self>,
        layout: status_latch::HeaderLayout,
    ) -> status_latch::Status {
        let mut status = status_latch::Status::clean(layout);
        match latched {
            Some(latched) if is_scheduler_code(latched.code) => {
                status.sched = Some(latched.code);
                status.sched_thread = i32::from(latched.first_thread);
                status.sched_bitmap = latched.bitmap;
            }
            Some(latched) => status.orch = Some(latched.code),
            None => {}
        }
        status
    }
}

/// Scheduler threads a header's bitmap can name (one bit each of a u32).
pub const SCHED_THREADS: u8 = 32;

/// One installed rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRule {
    /// What it injects.
    pub kind: FaultKind,
    /// With which code.
    pub code: FaultCode,
    /// When.
    pub when: When,
    /// For a latch of a scheduler code: the scheduler threads that latched it, the first
    /// writer first. Empty: thread 0 alone.
    pub threads: Vec<u8>,
    /// A `call` rule's function name.
    pub call: Option<String>,
    /// A `kernel-*` rule's engine (`None`: either).
    pub engine: Option<Engine>,
    /// A `kernel-latch` rule's header bytes, written as they are.
    pub header: Option<Vec<u8>>,
}

/// Why a fault rule was refused. Each message names the problem and the fix.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FaultError {
    /// The kind is not one the simulator knows.
    #[error("unknown fault kind '{got}'; use one of: {}", FaultKind::names())]
    UnknownKind {
        /// What was given.
        got: String,
    },
    /// A code was given to a kind that takes none.
    #[error("fault '{kind}' takes no code; drop '={code}'")]
    UnexpectedCode {
        /// The kind.
        kind: &'static str,
        /// The code given.
        code: String,
    },
    /// The code is not a valid code for the kind.
    #[error(
        "fault '{kind}': '{code}' is not a {what}; give a non-zero number or a name such as {example}"
    )]
    BadCode {
        /// The kind.
        kind: &'static str,
        /// The code given.
        code: String,
        /// "runtime latch code" or "ACL return code".
        what: &'static str,
        /// An example name.
        example: &'static str,
    },
    /// Runs were named for a kind that is not about a run.
    #[error(
        "fault '{kind}' does not happen to a run, so 'runs' cannot select it; use calls (e.g. @call:1) or a rate"
    )]
    NotRunBound {
        /// The kind.
        kind: &'static str,
    },
    /// The selector is malformed.
    #[error(
        "bad selector '{got}' in fault '{spec}': use @always, @run:1,3, @call:2 or @rate:0.05 (also 5%)"
    )]
    BadSelector {
        /// The whole spec.
        spec: String,
        /// The selector part.
        got: String,
    },
    /// A rate outside 0..=1.
    #[error("fault rate {got} is outside 0..=1; give a probability such as 0.05 or 5%")]
    BadRate {
        /// What was given.
        got: String,
    },
    /// An empty or zero list of calls or runs.
    #[error(
        "fault '{kind}' selects no {what}; list numbers from 1, e.g. {what} = [2] or @{short}:2"
    )]
    EmptySelection {
        /// The kind.
        kind: &'static str,
        /// "runs" or "calls".
        what: &'static str,
        /// "run" or "call".
        short: &'static str,
    },
    /// Threads were named for a fault that is not a latch of a scheduler code.
    #[error(
        "fault '{kind}': only a latch of a scheduler code (100 and above, e.g. SCHEDULER_TIMEOUT) \
         names scheduler threads; drop the threads or latch a scheduler code"
    )]
    ThreadsWithoutSchedulerLatch {
        /// The kind.
        kind: &'static str,
    },
    /// The thread list is empty, repeats a thread or names one the bitmap cannot hold.
    #[error(
        "fault threads {got:?}: list distinct scheduler threads from 0 to {}, the first writer first",
        SCHED_THREADS - 1
    )]
    BadThreads {
        /// What was given.
        got: Vec<u8>,
    },
    /// More than one selector in a scenario rule.
    #[error(
        "fault '{kind}' has more than one of runs, calls, rate, always; keep one (one rule per selector)"
    )]
    TwoSelectors {
        /// The kind.
        kind: &'static str,
    },
}

impl FaultRule {
    /// A validated rule. `code` is the code's number or name (`None` takes the kind's
    /// default code).
    pub fn new(kind: FaultKind, code: Option<&str>, when: When) -> Result<Self, FaultError> {
        let (name, _, code_kind, defaults, _) = kind.row();
        let default = || defaults.first().copied().unwrap_or(0).to_string();
        let code = match (code_kind, code) {
            (CodeKind::None, None) | (CodeKind::OptionalAcl | CodeKind::OptionalRuntime, None) => {
                FaultCode::None
            }
            (CodeKind::None, Some(code)) => {
                return Err(FaultError::UnexpectedCode {
                    kind: name,
                    code: code.to_owned(),
                });
            }
            (CodeKind::Acl | CodeKind::OptionalAcl, given) => {
                let value = given.map_or_else(default, str::to_owned);
                FaultCode::Acl(parse_acl(name, &value)?)
            }
            (CodeKind::Runtime | CodeKind::OptionalRuntime, given) => {
                let value = given.map_or_else(default, str::to_owned);
                FaultCode::Runtime(parse_runtime(name, &value)?)
            }
            (CodeKind::Raw, given) => {
                let value = given.map_or_else(default, str::to_owned);
                let raw = value
                    .parse::<i32>()
                    .ok()
                    .or_else(|| parse_acl(name, &value).ok().map(AclCode::raw))
                    .ok_or_else(|| FaultError::BadCode {
                        kind: name,
                        code: value.clone(),
                        what: "return value",
                        example: "507899, 0 or ACL_ERROR_RT_DRV_INTERNAL_ERROR",
                    })?;
                FaultCode::Raw(raw)
            }
        };
        match &when {
            When::Runs(runs) if !kind.is_run_bound() && !runs.is_empty() => {
                return Err(FaultError::NotRunBound { kind: name });
            }
            When::Runs(list) | When::Calls(list) if list.is_empty() || list.contains(&0) => {
                let (what, short) = if matches!(when, When::Runs(_)) {
                    ("runs", "run")
                } else {
                    ("calls", "call")
                };
                return Err(FaultError::EmptySelection {
                    kind: name,
                    what,
                    short,
                });
            }
            When::CallSpan { first, last }
                if *first == 0 || last.is_some_and(|last| last < *first) =>
            {
                return Err(FaultError::EmptySelection {
                    kind: name,
                    what: "calls",
                    short: "call",
                });
            }
            _ => {}
        }
        Ok(Self {
            kind,
            code,
            when,
            threads: Vec::new(),
            call: None,
            engine: None,
            header: None,
        })
    }

    /// A `call` rule: calls of `symbol` selected by `when` return `code` (any value, 0
    /// included) instead of running.
    #[must_use]
    pub fn call(symbol: &str, code: i32, when: When) -> Self {
        Self {
            kind: FaultKind::Call,
            code: FaultCode::Raw(code),
            when,
            threads: Vec::new(),
            call: Some(symbol.to_owned()),
            engine: None,
            header: None,
        }
    }

    /// The same rule for one engine's kernels only (a `kernel-*` rule).
    #[must_use]
    pub const fn on_engine(mut self, engine: Option<Engine>) -> Self {
        self.engine = engine;
        self
    }

    /// The same `kernel-latch` rule writing these header bytes as they are.
    #[must_use]
    pub fn with_header(mut self, header: Vec<u8>) -> Self {
        self.header = Some(header);
        self
    }

    /// The same rule, latched by these scheduler threads (the first writer first). Only a
    /// latch of a scheduler code names threads.
    pub fn with_threads(mut self, threads: Vec<u8>) -> Result<Self, FaultError> {
        let scheduler_latch = matches!(
            (self.kind, self.code),
            (FaultKind::Latch | FaultKind::KernelLatch, FaultCode::Runtime(code)) if is_scheduler_code(code)
        );
        if !scheduler_latch {
            return Err(FaultError::ThreadsWithoutSchedulerLatch {
                kind: self.kind.name(),
            });
        }
        let distinct = threads
            .iter()
            .enumerate()
            .all(|(i, t)| !threads.get(..i).is_some_and(|before| before.contains(t)));
        if threads.is_empty() || !distinct || threads.iter().any(|t| *t >= SCHED_THREADS) {
            return Err(FaultError::BadThreads { got: threads });
        }
        self.threads = threads;
        Ok(self)
    }

    /// Parses the `--fault` syntax: `KIND[=CODE][@SELECTOR][/QUALIFIER...]`, where the
    /// selector is `always` (the default), `run:1,3`, `call:2` (or a span, `call:2-4`,
    /// `call:2-`) or `rate:0.05` (also `rate:5%`), and a qualifier is `threads:T,..` (a latch
    /// of a scheduler code: the scheduler threads that latched it, the first writer first),
    /// `engine:aicore|aicpu` (a `kernel-*` rule) or `header:HEX` (a `kernel-latch` rule's
    /// header bytes). A `call` rule names its function in its kind: `call:aclrtMalloc=207001`.
    pub fn parse(spec: &str) -> Result<Self, FaultError> {
        let mut parts = spec.split('/');
        let rule = parts.next().unwrap_or_default();
        let mut parsed = Self::parse_rule(rule)?;
        let bad = |got: &str| FaultError::BadSelector {
            spec: spec.to_owned(),
            got: got.to_owned(),
        };
        for qualifier in parts {
            let (what, value) = qualifier.split_once(':').ok_or_else(|| bad(qualifier))?;
            match what {
                "threads" => {
                    let threads = value
                        .split(',')
                        .map(|t| t.trim().parse::<u8>())
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|_| bad(qualifier))?;
                    parsed = parsed.with_threads(threads)?;
                }
                "engine" if parsed.kind.is_kernel() => {
                    parsed.engine = Some(match value {
                        "aicore" => Engine::Aicore,
                        "aicpu" => Engine::Aicpu,
                        _ => return Err(bad(qualifier)),
                    });
                }
                "header" if parsed.kind == FaultKind::KernelLatch => {
                    parsed.header = Some(parse_hex(value).ok_or_else(|| bad(qualifier))?);
                }
                _ => return Err(bad(qualifier)),
            }
        }
        Ok(parsed)
    }

    /// `KIND[=CODE][@SELECTOR]`.
    fn parse_rule(spec: &str) -> Result<Self, FaultError> {
        let (head, selector) = match spec.split_once('@') {
            Some((head, sel)) => (head, Some(sel)),
            None => (spec, None),
        };
        let (kind, code) = match head.split_once('=') {
            Some((kind, code)) => (kind, Some(code)),
            None => (head, None),
        };
        let (kind, call) = match kind.trim().split_once(':') {
            Some(("call", symbol)) if !symbol.is_empty() => (FaultKind::Call, Some(symbol)),
            _ => (FaultKind::from_name(kind.trim())?, None),
        };
        let bad = || FaultError::BadSelector {
            spec: spec.to_owned(),
            got: selector.unwrap_or_default().to_owned(),
        };
        let when = match selector.map(str::trim) {
            None | Some("always") => When::Always,
            Some(sel) => {
                let (what, list) = sel.split_once(':').ok_or_else(bad)?;
                match what {
                    "run" | "runs" => When::Runs(parse_list(list).ok_or_else(bad)?),
                    "call" | "calls" => match list.split_once('-') {
                        Some((first, last)) => When::CallSpan {
                            first: first.trim().parse().map_err(|_| bad())?,
                            last: match last.trim() {
                                "" => None,
                                last => Some(last.parse().map_err(|_| bad())?),
                            },
                        },
                        None => When::Calls(parse_list(list).ok_or_else(bad)?),
                    },
                    "rate" => When::Rate(parse_rate(list)?),
                    _ => return Err(bad()),
                }
            }
        };
        let mut rule = Self::new(kind, code.map(str::trim), when)?;
        rule.call = call.map(str::to_owned);
        Ok(rule)
    }

    /// What the device does when this rule fires.
    pub fn injected(&self) -> Injected {
        let latched = |code| Latched {
            code,
            first_thread: self.threads.first().copied().unwrap_or(0),
            bitmap: if self.threads.is_empty() {
                1
            } else {
                self.threads.iter().fold(0, |bits, t| {
                    bits | 1_u32.checked_shl(u32::from(*t)).unwrap_or(0)
                })
            },
        };
        match (self.kind, self.code) {
            (FaultKind::PrepareIncompatible, _) => Injected::Incompatible,
            (FaultKind::Validation, _) => Injected::Validation,
            (FaultKind::Hang, _) => Injected::Hang,
            (FaultKind::HangAicpu, _) => Injected::HangAicpu,
            (FaultKind::Silent, _) => Injected::Silent,
            (FaultKind::Stuck, _) => Injected::Stuck,
            (FaultKind::Latch, FaultCode::Runtime(code)) => Injected::Latch(latched(code)),
            (FaultKind::Exception, FaultCode::Acl(code)) => Injected::Exception(code),
            (FaultKind::Call, FaultCode::Raw(code)) => Injected::Call(code),
            (FaultKind::KernelException, code) => Injected::Kernel(
                Outcome::Exception(match code {
                    FaultCode::Acl(code) => Some(code),
                    _ => None,
                }),
                KernelHeader::Own,
            ),
            (FaultKind::KernelHang, _) => Injected::Kernel(Outcome::Hang, KernelHeader::Own),
            (FaultKind::KernelStuck, _) => Injected::Kernel(Outcome::Stuck, KernelHeader::Own),
            (FaultKind::KernelSilent, _) => Injected::Kernel(Outcome::Silent, KernelHeader::Own),
            (FaultKind::KernelOk, _) => Injected::Kernel(Outcome::Ok, KernelHeader::Own),
            (FaultKind::KernelLatch, code) => Injected::Kernel(
                Outcome::Latch,
                match (&self.header, code) {
                    (Some(bytes), _) => KernelHeader::Bytes(bytes.clone()),
                    (None, FaultCode::Runtime(code)) => KernelHeader::Latched(latched(code)),
                    (None, _) => KernelHeader::Own,
                },
            ),
            (_, FaultCode::Acl(code)) => Injected::Fail(code),
            // `new` gives every other kind an ACL code; a hand-built odd rule still fails.
            (_, _) => Injected::Fail(AclCode::RtInternalError),
        }
    }

    /// Whether a consultation at `site` is one this rule counts.
    fn counts_at(&self, site: Site) -> bool {
        match site {
            Site::Kernel(engine) => {
                self.kind.is_kernel() && self.engine.is_none_or(|e| e == engine)
            }
            site => !self.kind.is_kernel() && self.kind.site() == site,
        }
    }
}

impl fmt::Display for FaultRule {
    /// The rule in `--fault` syntax (parses back to the same rule).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if let Some(call) = &self.call {
            write!(f, ":{call}")?;
        }
        match self.code {
            FaultCode::None => {}
            FaultCode::Acl(code) => write!(f, "={}", code.raw())?,
            FaultCode::Runtime(code) => write!(f, "={}", code.value())?,
            FaultCode::Raw(code) => write!(f, "={code}")?,
        }
        let list = |l: &[u64]| l.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        match &self.when {
            When::Always => Ok(()),
            When::Calls(l) => write!(f, "@call:{}", list(l)),
            When::Runs(l) => write!(f, "@run:{}", list(l)),
            When::Rate(ppm) => write!(f, "@rate:{}", fmt_rate(*ppm)),
            When::CallSpan { first, last } => match last {
                Some(last) => write!(f, "@call:{first}-{last}"),
                None => write!(f, "@call:{first}-"),
            },
        }?;
        if !self.threads.is_empty() {
            let threads: Vec<String> = self.threads.iter().map(u8::to_string).collect();
            write!(f, "/threads:{}", threads.join(","))?;
        }
        match self.engine {
            Some(Engine::Aicore) => f.write_str("/engine:aicore")?,
            Some(Engine::Aicpu) => f.write_str("/engine:aicpu")?,
            None => {}
        }
        if let Some(header) = &self.header {
            f.write_str("/header:")?;
            for byte in header {
                write!(f, "{byte:02x}")?;
            }
        }
        Ok(())
    }
}

/// Bytes from hex digits (`ee0102`).
fn parse_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Whether a runtime code is latched by the schedulers (100 and above, SPEC §5.2) rather
/// than the orchestrator.
pub const fn is_scheduler_code(code: RuntimeCode) -> bool {
    code.value() >= 100
}

/// A rate in ppm as a short decimal probability (`0.05`, `0.0025`).
fn fmt_rate(ppm: u32) -> String {
    let s = format!("{}.{:06}", u64::from(ppm) / PPM, u64::from(ppm) % PPM);
    let s = s.trim_end_matches('0');
    s.strip_suffix('.')
        .map_or_else(|| s.to_owned(), str::to_owned)
}

fn parse_list(list: &str) -> Option<Vec<u64>> {
    list.split(',')
        .map(|n| n.trim().parse::<u64>().ok())
        .collect()
}

/// Parses a probability (`0.05` or `5%`) into parts per million.
pub fn parse_rate(text: &str) -> Result<u32, FaultError> {
    let bad = || FaultError::BadRate {
        got: text.to_owned(),
    };
    let trimmed = text.trim();
    let value: f64 = match trimmed.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => trimmed.parse::<f64>().map_err(|_| bad())?,
    };
    rate_to_ppm(value).ok_or_else(bad)
}

/// A probability in 0..=1 as parts per million.
pub fn rate_to_ppm(value: f64) -> Option<u32> {
    if !value.is_finite() || !(0.0..=1.0).contains(&value) {
        return None;
    }
    // In range, so the cast neither truncates nor wraps.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ppm = (value * 1_000_000.0).round() as u32;
    Some(ppm)
}

fn parse_acl(kind: &'static str, text: &str) -> Result<AclCode, FaultError> {
    let bad = || FaultError::BadCode {
        kind,
        code: text.to_owned(),
        what: "ACL return code",
        example: "507015 or ACL_ERROR_RT_AICORE_EXCEPTION",
    };
    if let Ok(value) = text.parse::<i32>() {
        return AclCode::from_raw(value).ok_or_else(bad);
    }
    AclCode::ALL
        .into_iter()
        .find(|c| c.name() == text)
        .ok_or_else(bad)
}

fn parse_runtime(kind: &'static str, text: &str) -> Result<RuntimeCode, FaultError> {
    let bad = || FaultError::BadCode {
        kind,
        code: text.to_owned(),
        what: "runtime latch code",
        example: "1 or SCOPE_DEADLOCK",
    };
    if let Ok(value) = text.parse::<i32>() {
        return RuntimeCode::from_value(value).ok_or_else(bad);
    }
    RuntimeCode::ALL
        .into_iter()
        .find(|c| c.name() == text)
        .ok_or_else(bad)
}

/// splitmix64: derives independent child seeds from one seed (a fixed, version-stable
/// function, so derivations never change under us).
pub const fn mix_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed
        .wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Child-seed streams, one per component that draws from the seed.
pub mod streams {
    /// Fault rate draws.
    pub const FAULTS: u64 = 1;
    /// The swarm mix.
    pub const SWARM: u64 = 2;
    /// Per-run device time jitter.
    pub const JITTER: u64 = 3;
}

/// A ChaCha8 generator for one component of the simulation.
pub fn rng_for(seed: u64, stream: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(mix_seed(seed, stream))
}

/// Derives a whole fault mix from `seed`: each kind is on with probability 1/3, at a rate
/// between 0.5% and 10% (recovery faults between 10% and 60%, so some mixes exhaust the
/// recovery attempts and end lost), with one of its codes. Print it with [`describe`].
pub fn swarm(seed: u64) -> Vec<FaultRule> {
    const RATES_PPM: [u32; 5] = [5_000, 10_000, 20_000, 50_000, 100_000];
    const RECOVERY_RATES_PPM: [u32; 5] = [100_000, 200_000, 300_000, 450_000, 600_000];
    let mut rng = rng_for(seed, streams::SWARM);
    let mut pick = |n: usize| -> usize {
        let n = u64::try_from(n).unwrap_or(1).max(1);
        usize::try_from(rng.next_u64() % n).unwrap_or(0)
    };
    let mut rules = Vec::new();
    // The arm kind came after the swarm's mixes were fixed: drawing it would change them.
    for kind in FaultKind::ALL.into_iter().filter(|k| *k != FaultKind::Arm) {
        if pick(3) != 0 {
            continue;
        }
        let rates = if matches!(kind, FaultKind::Reset | FaultKind::Probe) {
            &RECOVERY_RATES_PPM
        } else {
            &RATES_PPM
        };
        let rate = rates.get(pick(rates.len())).copied().unwrap_or(10_000);
        let codes = kind.default_codes();
        let code = if codes.is_empty() {
            FaultCode::None
        } else {
            let raw = codes.get(pick(codes.len())).copied().unwrap_or(0);
            match kind.row().2 {
                CodeKind::Runtime => {
                    RuntimeCode::from_value(raw).map_or(FaultCode::None, FaultCode::Runtime)
                }
                _ => AclCode::from_raw(raw).map_or(FaultCode::None, FaultCode::Acl),
            }
        };
        rules.push(FaultRule {
            kind,
            code,
            when: When::Rate(rate),
            threads: Vec::new(),
            call: None,
            engine: None,
            header: None,
        });
    }
    rules
}

/// The rules, one per line, in `--fault` syntax.
pub fn describe(rules: &[FaultRule]) -> String {
    if rules.is_empty() {
        return "  (no faults)".to_owned();
    }
    rules
        .iter()
        .map(|r| format!("  --fault {r}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The installed rules, what each has counted, and the generator their rates draw from.
#[derive(Clone, Debug)]
pub struct Faults {
    rules: Vec<FaultRule>,
    /// Per rule: the consultations it has counted since it was installed.
    seen: Vec<u64>,
    rng: ChaCha8Rng,
    injected: u64,
}

impl Faults {
    /// No rules; rates (once rules are installed) draw from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rules: Vec::new(),
            seen: Vec::new(),
            rng: rng_for(seed, streams::FAULTS),
            injected: 0,
        }
    }

    /// Installs a rule after the existing ones (earlier rules win). Its `calls` count the
    /// consultations of its site from now.
    pub fn install(&mut self, rule: FaultRule) {
        self.rules.push(rule);
        self.seen.push(0);
    }

    /// Removes every rule (the liveness phase: faults healed).
    pub fn heal(&mut self) {
        self.rules.clear();
        self.seen.clear();
    }

    /// The installed rules.
    pub fn rules(&self) -> &[FaultRule] {
        &self.rules
    }

    /// How many faults fired so far.
    pub const fn injected(&self) -> u64 {
        self.injected
    }

    /// Consults the rules for one call at `site` (about `run`, when it is about one). Every
    /// rule of the site counts the consultation; the first that fires wins; rates draw only
    /// when their rule is reached.
    pub fn decide(&mut self, site: Site, run: Option<u64>) -> Option<Injected> {
        self.first_firing(|rule| rule.counts_at(site), run)
    }

    /// Consults the `call` rules for a call of `symbol`: the value it returns, if one fires.
    pub fn decide_call(&mut self, symbol: &str) -> Option<i32> {
        let injected = self.first_firing(
            |rule| rule.kind == FaultKind::Call && rule.call.as_deref() == Some(symbol),
            None,
        );
        match injected {
            Some(Injected::Call(raw)) => Some(raw),
            _ => None,
        }
    }

    fn first_firing(
        &mut self,
        counts: impl Fn(&FaultRule) -> bool,
        run: Option<u64>,
    ) -> Option<Injected> {
        let mut fired = None;
        for (rule, seen) in self.rules.iter().zip(self.seen.iter_mut()) {
            if !counts(rule) {
                continue;
            }
            *seen += 1;
            let nth = *seen;
            if fired.is_some() {
                continue;
            }
            let fires = match &rule.when {
                When::Always => true,
                When::Calls(calls) => calls.contains(&nth),
                When::CallSpan { first, last } => {
                    nth >= *first && last.is_none_or(|last| nth <= last)
                }
                When::Runs(runs) => run.is_some_and(|r| runs.contains(&r)),
                When::Rate(ppm) => self.rng.next_u64() % PPM < u64::from(*ppm),
            };
            if fires {
                fired = Some(rule.injected());
            }
        }
        if fired.is_some() {
            self.injected += 1;
        }
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_prints_back_to_itself() {
        for spec in [
            "latch=1@run:3",
            "exception=507015@rate:0.01",
            "hang@run:2,5",
            "stream-create=207008@call:1",
            "reset=507899",
            "prepare-incompatible@rate:0.0025",
            "call:aclrtMalloc=207001@call:2-3",
            "call:aclrtSetDevice=0@call:1-",
            "kernel-exception=507014/engine:aicore",
            "kernel-latch@call:1-2/engine:aicpu/header:ee01",
            "kernel-latch=100@run:2/threads:3,1",
            "copy=507899@call:1",
        ] {
            let rule = FaultRule::parse(spec).unwrap();
            assert_eq!(rule.to_string(), spec);
            assert_eq!(FaultRule::parse(&rule.to_string()).unwrap(), rule);
        }
    }

    #[test]
    fn codes_parse_by_name_and_default_when_omitted() {
        let rule = FaultRule::parse("latch=SCOPE_DEADLOCK@run:1").unwrap();
        assert_eq!(rule.code, FaultCode::Runtime(RuntimeCode::ScopeDeadlock));
        let rule = FaultRule::parse("exception").unwrap();
        assert_eq!(rule.code, FaultCode::Acl(AclCode::RtAicoreException));
        assert_eq!(
            FaultRule::parse("rate=5%").unwrap_err(),
            FaultError::UnknownKind {
                got: "rate".to_owned()
            }
        );
    }

    #[test]
    fn bad_specs_name_the_problem_and_the_fix() {
        let msg = |s: &str| FaultRule::parse(s).unwrap_err().to_string();
        assert!(msg("melt").contains("unknown fault kind 'melt'; use one of: stream-create"));
        assert!(msg("hang=5").contains("takes no code"));
        assert!(msg("latch=0").contains("not a runtime latch code"));
        assert!(msg("reset@run:1").contains("does not happen to a run"));
        assert!(msg("hang@rate:2").contains("outside 0..=1"));
        assert!(msg("hang@when:2").contains("bad selector"));
        assert!(msg("hang@call:0").contains("selects no calls"));
    }

    #[test]
    fn a_scheduler_latch_names_its_threads_and_round_trips_through_the_text_form() {
        let rule = FaultRule::parse("latch=SCHEDULER_TIMEOUT@run:2/threads:3,1").unwrap();
        assert_eq!(rule.threads, [3, 1]);
        assert_eq!(
            rule.injected(),
            Injected::Latch(Latched {
                code: RuntimeCode::SchedulerTimeout,
                first_thread: 3,
                bitmap: 0b1010
            })
        );
        assert_eq!(rule.to_string(), "latch=100@run:2/threads:3,1");
        assert_eq!(FaultRule::parse(&rule.to_string()).unwrap(), rule);
    }

    #[test]
    fn threads_are_refused_unless_a_scheduler_code_is_latched_by_distinct_threads() {
        let msg = |spec: &str| FaultRule::parse(spec).unwrap_err().to_string();
        assert!(msg("latch=SCOPE_DEADLOCK/threads:1").contains("scheduler code"));
        assert!(msg("hang/threads:1").contains("scheduler code"));
        assert!(msg("latch=100/threads:1,1").contains("distinct"));
        assert!(msg("latch=100/threads:32").contains("distinct"));
        assert!(msg("latch=100/threads:x").contains("bad selector"));
    }

    #[test]
    fn the_first_installed_rule_that_fires_wins() {
        let mut faults = Faults::new(7);
        faults.install(FaultRule::parse("latch=1@run:2").unwrap());
        faults.install(FaultRule::parse("hang").unwrap());
        assert_eq!(faults.decide(Site::Run, Some(1)), Some(Injected::Hang));
        assert_eq!(
            faults.decide(Site::Run, Some(2)),
            Some(Injected::Latch(Latched {
                code: RuntimeCode::ScopeDeadlock,
                first_thread: 0,
                bitmap: 1
            }))
        );
        assert_eq!(faults.decide(Site::Prepare, Some(2)), None);
        faults.heal();
        assert_eq!(faults.decide(Site::Run, Some(2)), None);
    }

    #[test]
    fn calls_count_per_site_from_one() {
        let mut faults = Faults::new(7);
        faults.install(FaultRule::parse("stream-create@call:2").unwrap());
        assert_eq!(faults.decide(Site::StreamCreate, None), None);
        assert_eq!(faults.decide(Site::Reset, None), None);
        assert!(faults.decide(Site::StreamCreate, None).is_some());
        assert_eq!(faults.decide(Site::StreamCreate, None), None);
    }

    #[test]
    fn rates_are_reproducible_per_seed_and_differ_across_seeds() {
        let draws = |seed| {
            let mut faults = Faults::new(seed);
            faults.install(FaultRule::parse("hang@rate:0.5").unwrap());
            (0..64)
                .map(|_| faults.decide(Site::Run, Some(1)).is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(draws(1), draws(1));
        assert_ne!(draws(1), draws(2));
        let fired = draws(1).into_iter().filter(|f| *f).count();
        assert!(
            (16..=48).contains(&fired),
            "about half of 64 fire, got {fired}"
        );
    }

    #[test]
    fn swarm_derives_the_same_mix_from_the_same_seed() {
        assert_eq!(swarm(42), swarm(42));
        let mixes: Vec<_> = (0..16).map(swarm).collect();
        assert!(mixes.windows(2).any(|w| w[0] != w[1]));
        for rule in mixes.iter().flatten() {
            assert_eq!(FaultRule::parse(&rule.to_string()).as_ref(), Ok(rule));
        }
    }
}
