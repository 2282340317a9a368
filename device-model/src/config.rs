//! What a model is made with: the device-side [`Timing`] of its tasks and the
//! [`Semantics`] switches, one per device fact device-truth.md leaves open (or that a backend
//! models one way on purpose), each offered both ways.

use status_latch::AclCode;

/// Nanoseconds on the backend's device clock (virtual in backend-sim, the fake's monotonic
/// clock in acl-fake). The model never reads a clock: every call that depends on time takes
/// one of these.
pub type Ns = u64;

/// Which engine a kernel runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Engine {
    /// The AICore workers (faults: 507015; op timeout: 507014).
    Aicore,
    /// The AICPU scheduler (faults: 507018; op timeout: 507017).
    Aicpu,
}

impl Engine {
    /// Both engines, AICore first.
    pub const BOTH: [Self; 2] = [Self::Aicore, Self::Aicpu];

    /// The code of a device exception on this engine.
    #[must_use]
    pub const fn exception_code(self) -> AclCode {
        match self {
            Self::Aicore => AclCode::RtAicoreException,
            Self::Aicpu => AclCode::RtAicpuException,
        }
    }

    /// The code of an op-timeout kill on this engine.
    #[must_use]
    pub const fn timeout_code(self) -> AclCode {
        match self {
            Self::Aicore => AclCode::RtAicoreTimeout,
            Self::Aicpu => AclCode::RtAicpuTimeout,
        }
    }

    /// The other engine of a run.
    #[must_use]
    pub const fn partner(self) -> Self {
        match self {
            Self::Aicore => Self::Aicpu,
            Self::Aicpu => Self::Aicore,
        }
    }

    pub(crate) const fn index(self) -> usize {
        match self {
            Self::Aicore => 0,
            Self::Aicpu => 1,
        }
    }
}

/// Device time each kind of task takes beyond its own work (backend-sim's calibrated costs;
/// all zero on the fake, whose tasks take what real time they take).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// Between one task's end and the next task's start on a stream (none before a wait).
    pub task_switch: Ns,
    /// From a kernel's enqueue to its earliest start.
    pub kernel_start_latency: Ns,
    /// An event record's own task.
    pub event_task: Ns,
    /// An async copy's own task.
    pub copy_task: Ns,
    /// An async copy's time per KiB it moves, beside its own task: what makes a big copy
    /// outlast a wait's timeout (the fake's 100 ns, about a host `memcpy`; none in the
    /// simulator, whose copies are small).
    pub copy_ns_per_kib: Ns,
}

/// Where a kernel killed by the op timeout leaves its code (507014 AICore, 507017 AICPU). The
/// partner is the stream of the other kernel of the same run; a kernel with no partner (alone,
/// its partner not launched yet, or its stream gone) always leaves it on its own stream.
/// device-truth §1 does not say which.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OpTimeoutCodeOn {
    /// The killed kernel's own stream only.
    #[default]
    OwnStream,
    /// The partner stream only: the killed kernel's own stream stays clean.
    PartnerStream,
    /// Both streams.
    BothStreams,
}

/// The semantic switches: each a device fact the hardware has not settled, or one a backend
/// models its own way, offered each way. [`Semantics::DEVICE`] is what a real device does as
/// far as device-truth.md knows (the fake's defaults); [`Semantics::SIMULATOR`] adds what the
/// simulator models on top (the handshake and the sticky fallout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Semantics {
    /// An enqueue (kernel launch, event record, stream wait, async copy) on a stream that holds
    /// a sticky code is refused with 507899 (device-truth §1: "a later enqueue on the same
    /// runner has failed early"). Off: accepted, and the task runs.
    pub refuse_enqueue_after_fault: bool,
    /// Where an op-timeout kill leaves its code.
    pub op_timeout_code_on: OpTimeoutCodeOn,
    /// The old, unreal fault propagation, never a default: an event wait or query on work
    /// behind a faulted task returns the fault's code, a stream runs nothing after a fault,
    /// and a latch exits clean.
    pub legacy_event_faults: bool,
    /// An AICPU kernel that latches returns a fatal status, leaving 507018 sticky on its
    /// stream (device-truth §1, measured on a2a3). Off: it exits clean.
    pub latch_faults_stream: bool,
    /// A force reset empties the process's exception callback slot (device-truth §4: not
    /// measured). The model keeps the switch; the backend owns the slot.
    pub reset_drops_exception_callback: bool,
    /// A force reset starts the device's stream numbering (`aclrtStreamGetId`) again at 1.
    /// Off: a number is never reused.
    pub reset_restarts_stream_numbering: bool,
    /// The AICore/AICPU handshake (device-truth §3: the AICore kernel may spin for the AICPU
    /// one): the two kernels of a run start their work together, once both have started, and
    /// the scheduler ends no earlier than its workers; a kernel whose partner never starts
    /// spins until the op timeout kills it. Off: each kernel runs alone.
    pub handshake: bool,
    /// A device fault (an exception or an op-timeout kill, not a latch) makes every checked
    /// call (creates, enqueues, copies, allocations) return its code until a force reset
    /// (the sticky fallout, device-truth §1: `rtMalloc` 507899 after a fault), and the device
    /// synchronize returns that code. Off: only the faulted stream keeps the code, and the
    /// device synchronize returns the first faulted stream's.
    pub device_fault_fails_calls: bool,
}

impl Semantics {
    /// What a real device does, as far as device-truth.md knows: the fake's defaults.
    pub const DEVICE: Self = Self {
        refuse_enqueue_after_fault: false,
        op_timeout_code_on: OpTimeoutCodeOn::OwnStream,
        legacy_event_faults: false,
        latch_faults_stream: true,
        reset_drops_exception_callback: false,
        reset_restarts_stream_numbering: false,
        handshake: false,
        device_fault_fails_calls: false,
    };

    /// The simulator's device: [`Semantics::DEVICE`] with the handshake and the sticky
    /// fallout.
    pub const SIMULATOR: Self =
        Self { handshake: true, device_fault_fails_calls: true, ..Self::DEVICE };
}

impl Default for Semantics {
    fn default() -> Self {
        Self::DEVICE
    }
}
