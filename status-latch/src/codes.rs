//! The code tables: runtime latch codes (SPEC §5.2) and the ACL/RT return codes that matter.
//!
//! Each table is one `match` from code to its row, so a code's value, name, meaning and hint
//! are edited together. Unknown values are values of their own, never rejected.

use core::fmt;

/// One row of a code table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CodeInfo {
    /// The raw value.
    pub value: i32,
    /// The runtime's or CANN's name.
    pub name: &'static str,
    /// One line: what happened.
    pub meaning: &'static str,
    /// One line: what to change, and whether to run again.
    pub hint: &'static str,
}

const fn row(
    value: i32,
    name: &'static str,
    meaning: &'static str,
    hint: &'static str,
) -> CodeInfo {
    CodeInfo { value, name, meaning, hint }
}

/// The known code with this value, `unknown(value)` for any other, `None` for 0: both
/// tables read 0 as "no error", not as a code.
fn lookup<T: Copy>(
    value: i32,
    known: &[T],
    value_of: fn(T) -> i32,
    unknown: fn(i32) -> T,
) -> Option<T> {
    if value == 0 {
        return None;
    }
    let found = known.iter().copied().find(|&c| value_of(c) == value);
    Some(found.unwrap_or_else(|| unknown(value)))
}

/// A code latched in the status header (`orch_error_code` or `sched_error_code`).
///
/// 0 is not a code: it is the clear latch, which [`RuntimeCode::from_value`] returns as
/// `None` and a [`Status`](crate::Status) holds as `None`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum RuntimeCode {
    /// 1: a scope reached the task-window cap.
    ScopeDeadlock,
    /// 2: heap ring bytes ran out.
    HeapRingDeadlock,
    /// 3: no task-window slot became free.
    FlowControlDeadlock,
    /// 4: a task's fan-in exceeded the dependency pool.
    DepPoolOverflow,
    /// 5: orchestration API misuse.
    InvalidArgs,
    /// 6: dependency overflow; retired in tensormap_and_ringbuffer (reported there as 4),
    /// still defined by host_build_graph.
    DependencyOverflow,
    /// 7: a sync-start task asked for more blocks than there are cores.
    RequireSyncStartInvalid,
    /// 8: a tensor wait expired.
    TensorWaitTimeout,
    /// 9: the orchestration called `rt_report_fatal()`.
    ExplicitOrchFatal,
    /// 10: runtime-internal scope task-list overflow.
    ScopeTasksOverflow,
    /// 11: tensormap entries exhausted.
    TensormapOverflow,
    /// 100: the scheduler saw no progress before its timeout.
    SchedulerTimeout,
    /// 101: a malformed async completion.
    AsyncCompletionInvalid,
    /// 102: too many async completions in flight.
    AsyncWaitOverflow,
    /// 103: runtime-internal async registration failure.
    AsyncRegistrationFailed,
    /// 104: the ready queue overflowed (host_build_graph).
    ReadyQueueOverflow,
    /// A value this build does not know (a newer runtime, or a corrupt header). Kept as
    /// read; [`RuntimeCode::from_value`] never makes one for 0 or a known value.
    Unknown(i32),
}

impl RuntimeCode {
    /// Every known code, in value order.
    pub const ALL: [RuntimeCode; 16] = [
        Self::ScopeDeadlock,
        Self::HeapRingDeadlock,
        Self::FlowControlDeadlock,
        Self::DepPoolOverflow,
        Self::InvalidArgs,
        Self::DependencyOverflow,
        Self::RequireSyncStartInvalid,
        Self::TensorWaitTimeout,
        Self::ExplicitOrchFatal,
        Self::ScopeTasksOverflow,
        Self::TensormapOverflow,
        Self::SchedulerTimeout,
        Self::AsyncCompletionInvalid,
        Self::AsyncWaitOverflow,
        Self::AsyncRegistrationFailed,
        Self::ReadyQueueOverflow,
    ];

    /// The code table (simpler's `error_names.h`, SPEC §5.2). `Unknown` has a row too, with
    /// its own value.
    pub const fn info(self) -> CodeInfo {
        match self {
            Self::ScopeDeadlock => row(
                1,
                "SCOPE_DEADLOCK",
                "a scope reached the task-window cap",
                "raise runtime_env.ring_task_window or split the scope into smaller ones, then run again",
            ),
            Self::HeapRingDeadlock => row(
                2,
                "HEAP_RING_DEADLOCK",
                "heap ring bytes ran out for the scope's tensors",
                "raise runtime_env.ring_heap or shrink the tensors allocated in the scope, then run again",
            ),
            Self::FlowControlDeadlock => row(
                3,
                "FLOW_CONTROL_DEADLOCK",
                "no task-window slot became free",
                "raise runtime_env.ring_task_window, or find the consumer that never releases its slot, then run again",
            ),
            Self::DepPoolOverflow => row(
                4,
                "DEP_POOL_OVERFLOW",
                "a task's fan-in exceeded the dependency pool",
                "cut the task's fan-in or raise the dependency pool, then run again",
            ),
            Self::InvalidArgs => row(
                5,
                "INVALID_ARGS",
                "orchestration API misuse",
                "an orchestration bug, not a capacity problem: resizing the rings will not help; \
                 recheck the arguments of the orchestration API calls, fix them, then run again",
            ),
            Self::DependencyOverflow => row(
                6,
                "DEPENDENCY_OVERFLOW",
                "a task's dependencies overflowed; retired in tensormap_and_ringbuffer, which reports 4 instead, \
                 still defined by host_build_graph",
                "cut the task's fan-in or raise the dependency capacity, then run again",
            ),
            Self::RequireSyncStartInvalid => row(
                7,
                "REQUIRE_SYNC_START_INVALID",
                "a sync-start task asked for more blocks than there are physical cores",
                "lower the task's block_num to at most the physical core count, then run again",
            ),
            Self::TensorWaitTimeout => row(
                8,
                "TENSOR_WAIT_TIMEOUT",
                "a tensor wait expired: its producer never completed or a consumer never released it",
                "work may still be live, so the device is recovered; find the producer that never completed \
                 (or the consumer that never released), fix it, then run again",
            ),
            Self::ExplicitOrchFatal => row(
                9,
                "EXPLICIT_ORCH_FATAL",
                "the orchestration called rt_report_fatal, so its later API calls became no-ops",
                "self-inflicted: follow the message passed to the rt_report_fatal() call site, fix that condition, \
                 then run again",
            ),
            Self::ScopeTasksOverflow => row(
                10,
                "SCOPE_TASKS_OVERFLOW",
                "runtime-internal: a scope's task list overflowed",
                "a runtime bug, not a user error: the device is recovered; report it with this line and the \
                 device log, then run again",
            ),
            Self::TensormapOverflow => row(
                11,
                "TENSORMAP_OVERFLOW",
                "tensormap entries exhausted",
                "raise the tensormap capacity or keep fewer tensors live at once, then run again",
            ),
            Self::SchedulerTimeout => row(
                100,
                "SCHEDULER_TIMEOUT",
                "the scheduler saw no progress before its timeout",
                "work may still be live, so the device is recovered; read the stall detail (running-stalled, \
                 ready-idle, dep-deadlock, orch-starvation) and its task and core to find the stuck task, fix it, \
                 then run again",
            ),
            Self::AsyncCompletionInvalid => row(
                101,
                "ASYNC_COMPLETION_INVALID",
                "a kernel reported a malformed async completion",
                "fix the async completion the kernel reports (its id and payload), then run again",
            ),
            Self::AsyncWaitOverflow => row(
                102,
                "ASYNC_WAIT_OVERFLOW",
                "too many async completions in flight",
                "keep fewer async completions outstanding or raise the async wait capacity, then run again",
            ),
            Self::AsyncRegistrationFailed => row(
                103,
                "ASYNC_REGISTRATION_FAILED",
                "runtime-internal: registering an async completion failed",
                "a runtime bug, not a user error: the device is recovered; report it with this line and the \
                 device log, then run again",
            ),
            Self::ReadyQueueOverflow => row(
                104,
                "READY_QUEUE_OVERFLOW",
                "the scheduler's ready queue overflowed; host_build_graph only",
                "raise the ready-queue capacity or make fewer tasks ready at once, then run again",
            ),
            Self::Unknown(value) => row(
                value,
                "UNKNOWN",
                "not a code this build knows: a newer runtime, or a corrupt header",
                "nothing is known about the failure, so the device is recovered; check that the runtime and \
                 this lane agree on the header layout and code table, then run again",
            ),
        }
    }

    /// Reads a latch value: `None` for 0 (clear), a known code, or `Unknown(value)`.
    pub fn from_value(value: i32) -> Option<Self> {
        lookup(value, &Self::ALL, Self::value, Self::Unknown)
    }

    /// The raw value in the header.
    pub const fn value(self) -> i32 {
        self.info().value
    }

    /// The runtime's name (`UNKNOWN` for an unknown value).
    pub const fn name(self) -> &'static str {
        self.info().name
    }

    /// One line: what happened.
    pub const fn meaning(self) -> &'static str {
        self.info().meaning
    }

    /// One line: what to change and run again.
    pub const fn hint(self) -> &'static str {
        self.info().hint
    }
}

impl fmt::Display for RuntimeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.value(), self.name())
    }
}

/// An ACL/RT return code (CANN `acl_base_rt.h` / `rt_error_codes.h`).
///
/// 0 (`ACL_SUCCESS`) is not a code: [`AclCode::from_raw`] returns `None` for it, and
/// [`AclCode::check`] turns a return value into a `Result`.
///
/// 507004 (stream not complete) is a query result, not an error. If it ever arrives as a
/// failure it is not a device fault: at an event wait it still means "not proven
/// complete" (poison), and elsewhere the stage's own rule applies.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum AclCode {
    /// 100000 `ACL_ERROR_INVALID_PARAM`.
    InvalidParam,
    /// 100001 `ACL_ERROR_UNINITIALIZE`.
    Uninitialize,
    /// 107000 `ACL_ERROR_RT_PARAM_INVALID`.
    RtParamInvalid,
    /// 107001 `ACL_ERROR_RT_INVALID_DEVICEID`.
    RtInvalidDeviceId,
    /// 107002 `ACL_ERROR_RT_CONTEXT_NULL`.
    RtContextNull,
    /// 107003 `ACL_ERROR_RT_STREAM_CONTEXT`.
    RtStreamContext,
    /// 107017 `ACL_ERROR_RT_INVALID_HANDLE`.
    RtInvalidHandle,
    /// 107022 `ACL_ERROR_RT_DEVICE_TASK_ABORT`.
    RtDeviceTaskAbort,
    /// 207000 `ACL_ERROR_RT_FEATURE_NOT_SUPPORT`.
    RtFeatureNotSupport,
    /// 207001 `ACL_ERROR_RT_MEMORY_ALLOCATION`.
    RtMemoryAllocation,
    /// 207004 `ACL_ERROR_RT_NO_DEVICE`.
    RtNoDevice,
    /// 207018 `ACL_ERROR_RT_DEVICE_OOM`.
    RtDeviceOom,
    /// 507000 `ACL_ERROR_RT_INTERNAL_ERROR`.
    RtInternalError,
    /// 507004 `ACL_ERROR_RT_STREAM_NOT_COMPLETE`.
    RtStreamNotComplete,
    /// 507010 `ACL_ERROR_RT_LOST_HEARTBEAT`.
    RtLostHeartbeat,
    /// 507014 `ACL_ERROR_RT_AICORE_TIMEOUT`.
    RtAicoreTimeout,
    /// 507015 `ACL_ERROR_RT_AICORE_EXCEPTION`.
    RtAicoreException,
    /// 507016 `ACL_ERROR_RT_AICORE_TRAP_EXCEPTION`.
    RtAicoreTrapException,
    /// 507017 `ACL_ERROR_RT_AICPU_TIMEOUT`.
    RtAicpuTimeout,
    /// 507018 `ACL_ERROR_RT_AICPU_EXCEPTION`.
    RtAicpuException,
    /// 507046 `ACL_ERROR_RT_STREAM_SYNC_TIMEOUT`.
    RtStreamSyncTimeout,
    /// 507047 `ACL_ERROR_RT_EVENT_SYNC_TIMEOUT`.
    RtEventSyncTimeout,
    /// 507053 `ACL_ERROR_RT_DEVICE_MEM_ERROR`.
    RtDeviceMemError,
    /// 507054 `ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR`.
    RtHbmMultiBitEccError,
    /// 507899 `ACL_ERROR_RT_DRV_INTERNAL_ERROR`.
    RtDrvInternalError,
    /// 507901 `ACL_ERROR_RT_SOCKET_CLOSE`.
    RtSocketClose,
    /// A value this build does not name; kept as read. [`AclCode::from_raw`] never makes
    /// one for 0 or a known value.
    Unknown(i32),
}

const GENERIC_HOST_SIDE: &str = "a generic code: do not read it as a deadlock or OOM; read the run's status latch \
                                 and the device log for the device-classified reason";
const CALLER_BUG: &str = "a caller bug in the lane or backend: fix the argument (value, handle, device, context), \
                          then run again";
const FALLOUT: &str =
    "fallout of an earlier failure: find the first failure in the log and act on that";
const HARDWARE: &str =
    "a hardware fault: the device is recovered; if it repeats, take the card out of service";
const SHRINK_MEMORY: &str = "shrink the device memory footprint (look for leaked kernel registrations or buffers); \
                             the device is recovered first";

impl AclCode {
    /// Every named code, in value order.
    pub const ALL: [AclCode; 26] = [
        Self::InvalidParam,
        Self::Uninitialize,
        Self::RtParamInvalid,
        Self::RtInvalidDeviceId,
        Self::RtContextNull,
        Self::RtStreamContext,
        Self::RtInvalidHandle,
        Self::RtDeviceTaskAbort,
        Self::RtFeatureNotSupport,
        Self::RtMemoryAllocation,
        Self::RtNoDevice,
        Self::RtDeviceOom,
        Self::RtInternalError,
        Self::RtStreamNotComplete,
        Self::RtLostHeartbeat,
        Self::RtAicoreTimeout,
        Self::RtAicoreException,
        Self::RtAicoreTrapException,
        Self::RtAicpuTimeout,
        Self::RtAicpuException,
        Self::RtStreamSyncTimeout,
        Self::RtEventSyncTimeout,
        Self::RtDeviceMemError,
        Self::RtHbmMultiBitEccError,
        Self::RtDrvInternalError,
        Self::RtSocketClose,
    ];

    /// The code table (reference/ascend-cl.md §3, simpler's `acl_error_names.h`).
    pub const fn info(self) -> CodeInfo {
        match self {
            Self::InvalidParam => row(
                100000,
                "ACL_ERROR_INVALID_PARAM",
                "an ACL call got an invalid argument, such as a null pointer",
                CALLER_BUG,
            ),
            Self::Uninitialize => row(
                100001,
                "ACL_ERROR_UNINITIALIZE",
                "aclInit was not called",
                "initialise ACL (the backend's open) before the first run, then run again",
            ),
            Self::RtParamInvalid => row(
                107000,
                "ACL_ERROR_RT_PARAM_INVALID",
                "a runtime call got a bad value, a sync timeout of 0 or below -1 included",
                CALLER_BUG,
            ),
            Self::RtInvalidDeviceId => row(
                107001,
                "ACL_ERROR_RT_INVALID_DEVICEID",
                "the device id is not valid",
                CALLER_BUG,
            ),
            Self::RtContextNull => row(
                107002,
                "ACL_ERROR_RT_CONTEXT_NULL",
                "the calling thread never set a device or context",
                CALLER_BUG,
            ),
            Self::RtStreamContext => row(
                107003,
                "ACL_ERROR_RT_STREAM_CONTEXT",
                "the stream belongs to another context",
                CALLER_BUG,
            ),
            Self::RtInvalidHandle => {
                row(107017, "ACL_ERROR_RT_INVALID_HANDLE", "a stale or invalid handle", CALLER_BUG)
            }
            Self::RtDeviceTaskAbort => row(
                107022,
                "ACL_ERROR_RT_DEVICE_TASK_ABORT",
                "a device task abort is in progress; usually collateral of another fault",
                FALLOUT,
            ),
            Self::RtFeatureNotSupport => row(
                207000,
                "ACL_ERROR_RT_FEATURE_NOT_SUPPORT",
                "this device, driver or backend lacks the call, an optional one such as aclrtMemcpyAsync",
                "use the profile's synchronous copies (CopyPath::Sync), then run again",
            ),
            Self::RtMemoryAllocation => row(
                207001,
                "ACL_ERROR_RT_MEMORY_ALLOCATION",
                "device memory allocation failed; seen at kernel launch when kernel registrations leak",
                SHRINK_MEMORY,
            ),
            Self::RtNoDevice => row(
                207004,
                "ACL_ERROR_RT_NO_DEVICE",
                "no device is available",
                "check the device id and that the card is visible and healthy; the device is recovered first",
            ),
            Self::RtDeviceOom => {
                row(207018, "ACL_ERROR_RT_DEVICE_OOM", "the device is out of memory", SHRINK_MEMORY)
            }
            Self::RtInternalError => row(
                507000,
                "ACL_ERROR_RT_INTERNAL_ERROR",
                "runtime internal error; an abnormal stream at sync, or an AICPU op timeout on a5",
                GENERIC_HOST_SIDE,
            ),
            Self::RtStreamNotComplete => row(
                507004,
                "ACL_ERROR_RT_STREAM_NOT_COMPLETE",
                "a stream query found work still pending; a query result, not an error",
                "a backend bug: a query result was reported as a failure; poll again instead",
            ),
            Self::RtLostHeartbeat => row(
                507010,
                "ACL_ERROR_RT_LOST_HEARTBEAT",
                "the task scheduler's heartbeat was lost",
                HARDWARE,
            ),
            Self::RtAicoreTimeout => row(
                507014,
                "ACL_ERROR_RT_AICORE_TIMEOUT",
                "device op timeout on AICore",
                GENERIC_HOST_SIDE,
            ),
            Self::RtAicoreException => row(
                507015,
                "ACL_ERROR_RT_AICORE_EXCEPTION",
                "an AICore kernel faulted, e.g. on a bad address",
                "a kernel-side fault: the device is recovered; fix the kernel, then run again",
            ),
            Self::RtAicoreTrapException => row(
                507016,
                "ACL_ERROR_RT_AICORE_TRAP_EXCEPTION",
                "an AICore kernel trapped",
                "a kernel-side fault: the device is recovered; fix the kernel, then run again",
            ),
            Self::RtAicpuTimeout => row(
                507017,
                "ACL_ERROR_RT_AICPU_TIMEOUT",
                "device op timeout on AICPU",
                GENERIC_HOST_SIDE,
            ),
            Self::RtAicpuException => row(
                507018,
                "ACL_ERROR_RT_AICPU_EXCEPTION",
                "an AICPU exception; the generic code that several device failures surface as, a latched status included",
                GENERIC_HOST_SIDE,
            ),
            Self::RtStreamSyncTimeout => row(
                507046,
                "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT",
                "a host-side stream or device sync expired; the device was not cancelled",
                "the device may still be running, so it is recovered; find the stuck run (its latch, the device log) \
                 before raising any timeout",
            ),
            Self::RtEventSyncTimeout => row(
                507047,
                "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT",
                "a host-side event wait expired; the device may still be running",
                "the device may still be running, so it is recovered; find the stuck run (its latch, the device log) \
                 before raising any timeout",
            ),
            Self::RtDeviceMemError => row(
                507053,
                "ACL_ERROR_RT_DEVICE_MEM_ERROR",
                "an uncorrectable device memory error",
                HARDWARE,
            ),
            Self::RtHbmMultiBitEccError => row(
                507054,
                "ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR",
                "a multi-bit ECC error in HBM",
                HARDWARE,
            ),
            Self::RtDrvInternalError => row(
                507899,
                "ACL_ERROR_RT_DRV_INTERNAL_ERROR",
                "driver internal error; the sticky code of an already poisoned context",
                FALLOUT,
            ),
            Self::RtSocketClose => row(
                507901,
                "ACL_ERROR_RT_SOCKET_CLOSE",
                "HDC disconnect; also seen when a stream is destroyed with tasks pending",
                FALLOUT,
            ),
            Self::Unknown(value) => row(
                value,
                "UNKNOWN",
                "not a code this lane names",
                "look the value up in CANN's rt_error_codes.h and the device log",
            ),
        }
    }

    /// Reads a return value: `None` for 0 (success), a named code, or `Unknown(raw)`.
    pub fn from_raw(raw: i32) -> Option<Self> {
        lookup(raw, &Self::ALL, Self::raw, Self::Unknown)
    }

    /// `Ok(())` for success, the code otherwise: how a backend turns a return value into a
    /// failure.
    pub fn check(raw: i32) -> Result<(), Self> {
        match Self::from_raw(raw) {
            None => Ok(()),
            Some(code) => Err(code),
        }
    }

    /// The raw return value.
    pub const fn raw(self) -> i32 {
        self.info().value
    }

    /// CANN's name (`UNKNOWN` for an unnamed value).
    pub const fn name(self) -> &'static str {
        self.info().name
    }

    /// One line: what happened.
    pub const fn meaning(self) -> &'static str {
        self.info().meaning
    }

    /// One line: what to do about it.
    pub const fn hint(self) -> &'static str {
        self.info().hint
    }

    /// Whether the code names a device fault, making a failure poison at every stage
    /// (SPEC §5.4): every 507xxx except 507004 (a query result), which includes the host
    /// wait timeouts 507046/507047 (the device may still be running) and the sticky
    /// fallout 507899; the memory codes 207001 and 207018; 207004 (no device); and 107022
    /// (a device task abort in progress, fallout like 507899, not a parameter error).
    /// Unnamed values follow the same range rule.
    pub const fn is_device_fault(self) -> bool {
        match self {
            Self::RtMemoryAllocation
            | Self::RtNoDevice
            | Self::RtDeviceOom
            | Self::RtDeviceTaskAbort => true,
            Self::RtStreamNotComplete => false,
            other => {
                let raw = other.raw();
                507_000 <= raw && raw <= 507_999
            }
        }
    }
}

impl fmt::Display for AclCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.raw(), self.name())
    }
}

/// The runtime's latch codes as its calls return them: negated, `runtime_status = -code`
/// (SPEC §5.1), from -1 to -999. A call of the runtime's that returns a value in this band
/// reports that latched failure; no ACL/RT code lies in it (they are positive), so the band
/// is the runtime's alone, and an embedding's own sentinels must lie outside it.
pub const RUNTIME_STATUS_BAND: core::ops::RangeInclusive<i32> = -999..=-1;

/// What a call of the runtime's returned (a runner callback: prepare, a kernel launch,
/// finalise, an upload), read by the one table: a runtime latch code returned negated
/// ([`RUNTIME_STATUS_BAND`]) is that latched failure; any other non-zero value is an ACL/RT
/// code, named or not.
///
/// 0 is success, not a code: [`ReturnCode::from_raw`] returns `None` for it. A value in the
/// band the table does not know is `Runtime(RuntimeCode::Unknown(v))`, an unknown runtime
/// code (never an ACL code).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum ReturnCode {
    /// An ACL/RT code.
    Acl(AclCode),
    /// One of the runtime's latch codes, returned negated: the latched failure it names.
    Runtime(RuntimeCode),
}

impl ReturnCode {
    /// Reads a return value: `None` for 0 (success), a runtime code for a value in
    /// [`RUNTIME_STATUS_BAND`] (negated back), an ACL code otherwise.
    pub fn from_raw(raw: i32) -> Option<Self> {
        if RUNTIME_STATUS_BAND.contains(&raw) {
            // -raw is 1..=999: never 0, so always a code.
            return RuntimeCode::from_value(-raw).map(Self::Runtime);
        }
        AclCode::from_raw(raw).map(Self::Acl)
    }

    /// `Ok(())` for success, the code otherwise: how a runner turns a callback's return value
    /// into a failure.
    pub fn check(raw: i32) -> Result<(), Self> {
        match Self::from_raw(raw) {
            None => Ok(()),
            Some(code) => Err(code),
        }
    }

    /// The raw value as returned: the ACL code, or the runtime code negated.
    pub const fn raw(self) -> i32 {
        match self {
            Self::Acl(code) => code.raw(),
            Self::Runtime(code) => code.value().wrapping_neg(),
        }
    }

    /// The code's name (`FLOW_CONTROL_DEADLOCK`, `ACL_ERROR_RT_PARAM_INVALID`, `UNKNOWN`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Acl(code) => code.name(),
            Self::Runtime(code) => code.name(),
        }
    }

    /// The ACL code, or the runtime code as the unnamed ACL value it was returned as. Only for
    /// a device call's answer (a fence record, an arm), which no runtime code can be: the
    /// lane's own device calls return ACL codes.
    pub const fn as_acl(self) -> AclCode {
        match self {
            Self::Acl(code) => code,
            Self::Runtime(code) => AclCode::Unknown(code.value().wrapping_neg()),
        }
    }
}

impl From<AclCode> for ReturnCode {
    fn from(code: AclCode) -> Self {
        Self::Acl(code)
    }
}

impl fmt::Display for ReturnCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Acl(code) => write!(f, "ACL {code}"),
            Self::Runtime(code) => write!(f, "runtime_status={} {}", self.raw(), code.name()),
        }
    }
}
