//! Kernels: what a launch asks for ([`KernelSpec`]), how a kernel ends ([`Ending`]), the two
//! kernels of a run ([`RunKey`]) and the result record the run publishes (device-truth §2).

use status_latch::{AclCode, HeaderLayout, RecordSource, RecordWrite};

use crate::config::{Engine, Ns};
use crate::faults::{Injected, Latched};

/// How a kernel is asked to end (a fault rule may change it before it works).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Runs its duration, writes its status header, succeeds.
    Ok,
    /// Runs its duration, then a device exception: the code given, or its engine's (507015
    /// AICore, 507018 AICPU).
    Exception(Option<AclCode>),
    /// Hangs until the op timeout kills it (507014 AICore, 507017 AICPU); never ends with no
    /// op timeout.
    Hang,
    /// Never ends, and the op timeout never fires (a device that stopped reporting): only a
    /// destroy of its stream or a force reset ends it.
    Stuck,
    /// Runs its duration and writes its header (a latched code); on AICPU it then returns a
    /// fatal status (507018 sticky on its stream, [`Semantics::latch_faults_stream`]).
    ///
    /// [`Semantics::latch_faults_stream`]: crate::Semantics::latch_faults_stream
    Latch,
    /// Runs its duration, writes its header like [`Outcome::Ok`], exits clean, but publishes
    /// no result record.
    Silent,
}

/// The two kernels of one run share their slot's handshake address and the run's epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunKey {
    /// The slot's handshake region.
    pub handshake: u64,
    /// The run's epoch (device-truth §2).
    pub epoch: u64,
}

/// One kernel to launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSpec {
    /// Its engine.
    pub engine: Engine,
    /// Its work's duration once it works.
    pub duration: Ns,
    /// How it ends.
    pub outcome: Outcome,
    /// 16 bytes of device memory for its work's start and end (two LE u64), if any.
    pub timing: Option<u64>,
    /// Device memory for its status header, if any.
    pub header: Option<u64>,
    /// The header it writes when it exits clean (the latched one for [`Outcome::Latch`]).
    pub header_bytes: Vec<u8>,
    /// The run it belongs to (`None`: a kernel alone).
    pub run: Option<RunKey>,
    /// 280 bytes of device memory for the run's result record (given with the AICPU kernel),
    /// if any.
    pub record: Option<u64>,
    /// The epoch stamped into the record (non-zero with a record).
    pub epoch: u64,
    /// The lane's id of the run, when the launcher knows it: fault rules that select runs
    /// (`@run:N`) need it.
    pub run_id: Option<u64>,
    /// The backend's label for this kernel, echoed in [`Note`](crate::Note)s.
    pub tag: u64,
}

impl KernelSpec {
    /// An [`Outcome::Ok`] kernel of `duration` on `engine`: no buffers, no run.
    #[must_use]
    pub const fn new(engine: Engine, duration: Ns) -> Self {
        Self {
            engine,
            duration,
            outcome: Outcome::Ok,
            timing: None,
            header: None,
            header_bytes: Vec::new(),
            run: None,
            record: None,
            epoch: 0,
            run_id: None,
            tag: 0,
        }
    }
}

/// How a kernel ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Exited clean (ok, silent, or a latch that returns no fatal status).
    Clean,
    /// Exited with a fatal status (an AICPU latch): its events complete, the code is sticky.
    Fatal(AclCode),
    /// A device exception (or a header freed under it).
    Fault(AclCode),
    /// Killed by the op timeout: running past it, hung, or spinning for a partner that never
    /// started.
    Killed(AclCode),
}

impl Ending {
    /// Whether it exited through its own code (clean or with a fatal status).
    #[must_use]
    pub const fn exited(self) -> bool {
        matches!(self, Self::Clean | Self::Fatal(_))
    }
}

/// What one kernel's ending lets its run publish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Contribution {
    /// Nothing: a fault, a kill, a silent exit, an undecodable latch.
    Blocks,
    /// An ok record.
    Ok,
    /// An error record with the latched runtime code and the header's error tail.
    Error { code: i32, payload: Vec<u8> },
}

impl Contribution {
    /// What a kernel that ended `ending` contributes: nothing unless it exited; by the AICPU
    /// rule, an ok record for ok and the latched code for a latch; by the AICore rule, ok only
    /// for ok.
    pub(crate) fn of(outcome: Outcome, header: &[u8], ending: Ending, aicpu_rule: bool) -> Self {
        match (ending.exited(), outcome) {
            (true, Outcome::Ok) => Self::Ok,
            (true, Outcome::Latch) if aicpu_rule => latch_contribution(header),
            _ => Self::Blocks,
        }
    }

    /// The record bytes this contribution publishes, stamped `epoch`.
    pub(crate) fn record(&self, epoch: u64) -> Option<[u8; status_latch::RECORD_BYTES]> {
        let write = match self {
            Self::Blocks => return None,
            Self::Ok => RecordWrite::Ok,
            Self::Error { code, payload } => {
                RecordWrite::Error { code: *code, source: RecordSource::Header, payload }
            }
        };
        Some(status_latch::encode_record(epoch, &write))
    }
}

/// The status header's error tail, the payload of a tensormap_and_ringbuffer record
/// (device-truth §2: bytes 784..848 of the 896-byte header \[I\]).
const ERROR_TAIL: core::ops::Range<usize> = 784..848;

/// A latch's record: the header decoded by the layout whose size is its length. A latched code
/// gives an error record (source: the header; payload: tensormap_and_ringbuffer's error tail,
/// host_build_graph none); a clean header an ok record; any other length nothing.
fn latch_contribution(header: &[u8]) -> Contribution {
    let Some(layout) = layout_of(header) else {
        return Contribution::Blocks;
    };
    let Ok(status) = status_latch::decode(layout, header) else {
        return Contribution::Blocks;
    };
    match status.latched() {
        None => Contribution::Ok,
        Some(latch) => {
            let payload = match layout {
                HeaderLayout::TensormapAndRingbuffer => header.get(ERROR_TAIL).unwrap_or(&[]),
                HeaderLayout::HostBuildGraph => &[],
            };
            Contribution::Error { code: latch.code.value(), payload: payload.to_vec() }
        }
    }
}

/// The header layout whose size is `header`'s length.
fn layout_of(header: &[u8]) -> Option<HeaderLayout> {
    HeaderLayout::ALL.into_iter().find(|layout| layout.size() == header.len())
}

/// A run's fate, decided once for both of its kernels (at its AICPU launch, the `run` site):
/// each kernel's outcome, and the latched header for the scheduler.
pub(crate) fn fate(
    injected: &Injected,
    engine: Engine,
    header: &[u8],
) -> Option<(Outcome, Option<Vec<u8>>)> {
    let outcome = match (injected, engine) {
        (Injected::Hang, Engine::Aicore) | (Injected::HangAicpu, _) => Outcome::Hang,
        (Injected::Stuck, _) => Outcome::Stuck,
        (&Injected::Exception(code), _) => {
            let on = match code {
                AclCode::RtAicoreException | AclCode::RtAicoreTimeout => Some(Engine::Aicore),
                AclCode::RtAicpuException | AclCode::RtAicpuTimeout => Some(Engine::Aicpu),
                _ => None,
            };
            if on.is_some_and(|e| e != engine) {
                return None;
            }
            Outcome::Exception(Some(code))
        }
        (&Injected::Latch(latched), Engine::Aicpu) => {
            return Some((Outcome::Latch, Some(latched_header(latched, header))));
        }
        (Injected::Silent, Engine::Aicpu) => Outcome::Silent,
        _ => return None,
    };
    Some((outcome, None))
}

/// The header a latch writes, in the layout of the kernel's clean header (its bytes unchanged
/// when their length is no layout's).
pub(crate) fn latched_header(latched: Latched, clean: &[u8]) -> Vec<u8> {
    match layout_of(clean) {
        Some(layout) => status_latch::encode(layout, &Latched::status(Some(latched), layout)),
        None => clean.to_vec(),
    }
}

/// When and how a kernel that starts working at `start` ends (`None`: never): its outcome,
/// against the op timeout.
pub(crate) fn planned_end(
    outcome: Outcome,
    engine: Engine,
    duration: Ns,
    start: Ns,
    op_timeout: Option<Ns>,
) -> (Option<Ns>, Ending) {
    let killed = Ending::Killed(engine.timeout_code());
    let at = |ns: Ns| Some(start.saturating_add(ns));
    match outcome {
        Outcome::Hang => (op_timeout.and_then(at), killed),
        Outcome::Stuck => (None, killed),
        _ if op_timeout.is_some_and(|limit| duration > limit) => (op_timeout.and_then(at), killed),
        Outcome::Exception(code) => {
            (at(duration), Ending::Fault(code.unwrap_or(engine.exception_code())))
        }
        Outcome::Ok | Outcome::Latch | Outcome::Silent => (at(duration), Ending::Clean),
    }
}
