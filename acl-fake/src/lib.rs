//! A fake `libascendcl` for tests: `librun_lane_fake_ascendcl.so`, loaded through
//! ascend-cl-sys's ordinary loader by explicit path, so `cargo test` runs every FFI line of the
//! hardware path with no NPU and no CANN install.
//!
//! **Owns:** the ACL symbols of `ascend_cl_sys::for_each_acl_function!`, exported with the
//! same C signatures (generated from that one table, so the binding and the fake cannot
//! drift) and the real codes (ascend-cl.md §3); the real time, threads and host memory around
//! the device model (device-model's `Device`, one per fake device, holds what each call
//! returns and changes): every call moves its device's model to the device clock first; each
//! stream has a worker thread that sleeps until the model says its next task starts or ends;
//! waits are timed condvar waits, never sleep-polling; and a test-only control surface,
//! `runlanefake_*` C functions, reached through [`Control`]. Its fault rules are the model's,
//! the one vocabulary of `lane-sim --fault` (`runlanefake_install_fault` takes a rule as text;
//! `fail_call`, `fault_kernel` and `fault_copy` make the same rules).
//!
//! **Devices:** [`DEFAULT_DEVICE_COUNT`] by default, up to [`MAX_DEVICES`]. Each is isolated,
//! with its own lock, model, stream workers (each woken only by its own stream, as no host
//! thread of a real device is woken by another's work), pinned host allocations and counters.
//! The init flag, the device count, the SoC name (`aclrtGetSocName` takes no device,
//! ascend-cl.md §2.1), the op timeout and the exception callback slot are the process's.
//!
//! **Invariant:** ACL semantics where a lane can observe them: `aclrtSetDevice(id)` makes
//! `id`'s context the calling thread's one current context; every stream, event, memory and
//! launch call acts on it, 107002 when the thread never bound or bound before that device's
//! last force reset; a handle is unique across devices and never reused, and one of another
//! device is refused (a live stream of another device 107003, an unknown stream or event
//! 107017, an address not allocated here 107000 \[I\]); a NULL handle or `actualTimeout` is
//! 100000. Completion is not the verdict (device-truth §1): an event recorded after a failed
//! kernel completes once the kernel exited. A failed task's code is sticky on its stream until
//! the stream is destroyed or its device force-reset, and the stream runs the next task
//! (continue-on-failure); only `aclrtSynchronizeStreamWithTimeout` reports it, and it becomes
//! the thread's last error (`aclrtPeekAtLastError`). A run's two kernels publish its 280-byte
//! record when both ended cleanly (device-truth §2, §3). A force reset (device-truth §5, SPEC
//! L-20) kills that device's streams, events and allocations and unbinds only its threads;
//! without an `aclrtSetDevice(id)` since `id`'s last reset it is 507007. A waiter on a reset
//! device is woken with [`RESET_UNDER_WAIT`] and counted. No address is handed out twice, so a
//! stale one fails with an ACL code. One op timeout per process (SPEC L-21, default 1091 s).
//! Fault notices (device-truth §4, SPEC L-19) come only from [`Control::raise_notice`], late,
//! on a thread of the fake's own. No panic crosses the C boundary (a caught panic is 500000).
//!
//! **API boundary:** the exported C functions (process-wide state, as a real driver's: tests
//! serialise themselves and call [`Control::reset`] first); [`Control`], [`DeviceControl`],
//! [`cdylib_path`], [`FakeCounters`] and the constants. Never loaded unless pointed at: the
//! file name cannot be mistaken for `libascendcl.so`.
//!
//! Differences from real ACL, on purpose: `aclInit` is not required; one context per device
//! generation, no explicit contexts, no default stream; the device synchronize drains the
//! calling thread's device and returns the first faulted stream's code; only the stream
//! synchronize sets a last error \[I\]; no stream query; where the hardware is not known,
//! each plausible behaviour is a switch ([`Semantics`]), the old unreal fault propagation
//! only as `LEGACY_EVENT_FAULTS`; a reset under a wait wakes the waiter (real ACL leaves it
//! to read freed memory); `aclrtSetOpExecuteTimeOutV2` needs no bound thread \[I\]; the
//! 507007 rule is per thread \[I: real ACL may count any thread's set device\]; device
//! addresses are the fake's own; a stream id is never reused unless
//! [`SWITCH_RESET_RESTARTS_STREAM_NUMBERING`] \[I\]; notices never come from a faulted
//! kernel and their thread id is 0 \[I\]; no peer access; one host monotonic clock. A
//! kernel works exactly its duration from its start (the later of its enqueue and its
//! predecessor's end); an async copy moves a KiB in 100 ns. The workers ask for no timer
//! slack ([`WORKER_TIMER_SLACK_NS`]), so a wake-up is not deferred up to Linux's 50 us.

use core::ffi::{c_char, c_void};
use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};

use ascend_cl_sys::types::*;

/// The `Ok` value of `$result`, or a return of its error (an ACL code) from the enclosing
/// function.
macro_rules! or_return {
    ($result:expr) => {
        match $result {
            Ok(value) => value,
            Err(code) => return code,
        }
    };
}

mod device;
mod imp;
mod notice;

use device::{Device, SocName};
use device_model::faults::{FaultKind, FaultRule, When};
use device_model::{Engine, KernelSpec, RunKey};

/// The fake's file name (never `libascendcl.so`).
pub const CDYLIB_FILE_NAME: &str = "librun_lane_fake_ascendcl.so";

/// The devices the fake serves after a reset (`aclrtGetDeviceCount`; ids `0..16` bind).
pub const DEFAULT_DEVICE_COUNT: u32 = 16;
/// The most devices the fake can serve (`runlanefake_set_device_count` refuses more), and
/// the range of ids the per-device control functions accept.
pub const MAX_DEVICES: u32 = 64;

/// What an event, stream or device synchronize returns when its device was force-reset (or
/// the whole fake reset) while the thread was inside it. No ACL code: on real ACL that waiter
/// reads the deleted device after its slice, a use-after-free (device-truth §5, SPEC L-20).
/// The fake wakes it so tests end, and counts it ([`FakeCounters::resets_under_wait`]). A lane
/// must never see it.
pub const RESET_UNDER_WAIT: AclError = 599_999;

/// A kernel on the AICore engine (faults: 507015, timeout 507014).
pub const ENGINE_AICORE: u32 = 0;
/// A kernel on the AICPU engine (faults: 507018, timeout 507017).
pub const ENGINE_AICPU: u32 = 1;
/// In a kernel fault rule: any engine.
pub const ENGINE_ANY: u32 = u32::MAX;

/// How a fake kernel ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Outcome {
    /// Runs its duration, writes its status header bytes, succeeds.
    Ok = 0,
    /// Runs its duration, then a device exception (507015 AICore, 507018 AICPU).
    Exception = 1,
    /// Hangs until the op timeout, then 507014 (AICore) or 507017 (AICPU).
    Hang = 2,
    /// Runs its duration and writes the rule's bytes (a latched runtime code) as its status
    /// header; on AICPU it then returns a fatal status: 507018 sticky on its stream
    /// ([`SWITCH_LATCH_FAULTS_STREAM`]), its events still complete.
    Latch = 3,
    /// Runs its duration, writes its timing and status header like [`Outcome::Ok`], exits
    /// cleanly (no sticky code) but publishes no result record: a run that did not complete
    /// its normal path while its streams stay clean.
    Silent = 4,
    /// Never ends, and the op timeout never fires (a device that stopped reporting): only a
    /// destroy of its stream or a force reset ends it.
    Stuck = 5,
}

impl Outcome {
    fn from_raw(raw: u32) -> Option<Self> {
        [Self::Ok, Self::Exception, Self::Hang, Self::Latch, Self::Silent, Self::Stuck]
            .into_iter()
            .find(|o| *o as u32 == raw)
    }

    /// The device model's outcome.
    const fn model(self) -> device_model::Outcome {
        match self {
            Self::Ok => device_model::Outcome::Ok,
            Self::Exception => device_model::Outcome::Exception(None),
            Self::Hang => device_model::Outcome::Hang,
            Self::Latch => device_model::Outcome::Latch,
            Self::Silent => device_model::Outcome::Silent,
            Self::Stuck => device_model::Outcome::Stuck,
        }
    }

    /// The fault kind that ends a kernel so.
    const fn kind(self) -> FaultKind {
        match self {
            Self::Ok => FaultKind::KernelOk,
            Self::Exception => FaultKind::KernelException,
            Self::Hang => FaultKind::KernelHang,
            Self::Latch => FaultKind::KernelLatch,
            Self::Silent => FaultKind::KernelSilent,
            Self::Stuck => FaultKind::KernelStuck,
        }
    }
}

/// `runlanefake_set_semantics` switch:
/// [`refuse_enqueue_after_fault`](device_model::Semantics::refuse_enqueue_after_fault).
/// Values [`ENQUEUE_AFTER_FAULT_ACCEPTED`] (default) and [`ENQUEUE_AFTER_FAULT_REFUSED`].
pub const SWITCH_ENQUEUE_AFTER_FAULT: u32 = 0;
/// The enqueue is accepted and the task runs (default).
pub const ENQUEUE_AFTER_FAULT_ACCEPTED: u32 = 0;
/// The enqueue is refused with 507899 (a later enqueue on the runner has failed early,
/// device-truth §1).
pub const ENQUEUE_AFTER_FAULT_REFUSED: u32 = 1;

/// `runlanefake_set_semantics` switch: where a kernel killed by the op timeout leaves its
/// code ([`device_model::OpTimeoutCodeOn`]; the partner is the other kernel of the same
/// `runlanefake_launch_run`, same handshake and epoch). Values
/// [`OP_TIMEOUT_CODE_ON_OWN_STREAM`] (default), [`OP_TIMEOUT_CODE_ON_PARTNER_STREAM`],
/// [`OP_TIMEOUT_CODE_ON_BOTH_STREAMS`].
pub const SWITCH_OP_TIMEOUT_CODE_ON: u32 = 1;
/// The killed kernel's own stream only (default).
pub const OP_TIMEOUT_CODE_ON_OWN_STREAM: u32 = 0;
/// The partner stream only: the killed kernel's own stream stays clean.
pub const OP_TIMEOUT_CODE_ON_PARTNER_STREAM: u32 = 1;
/// Both streams.
pub const OP_TIMEOUT_CODE_ON_BOTH_STREAMS: u32 = 2;

/// `runlanefake_set_semantics` switch: 1 restores the fake's OLD, unreal behaviour, never
/// the default ([`legacy_event_faults`](device_model::Semantics::legacy_event_faults); a
/// pageable async copy behind a fault also returns the sticky code unrun). Set it before
/// creating streams. Values 0 (off, default), 1.
pub const SWITCH_LEGACY_EVENT_FAULTS: u32 = 2;

/// `runlanefake_set_semantics` switch:
/// [`latch_faults_stream`](device_model::Semantics::latch_faults_stream) for a kernel that
/// ends [`Outcome::Latch`]: 1 (default), or 0. Its header and record are written either way.
pub const SWITCH_LATCH_FAULTS_STREAM: u32 = 3;

/// `runlanefake_set_semantics` switch: [`reset_drops_exception_callback`]: 0 (default) keeps
/// the callback at a force reset, 1 drops it. The slot is the process's: the switch of the
/// device being reset decides. A failed reset (507007, an injected code) drops nothing.
///
/// [`reset_drops_exception_callback`]: device_model::Semantics::reset_drops_exception_callback
pub const SWITCH_RESET_DROPS_EXCEPTION_CALLBACK: u32 = 4;

/// `runlanefake_set_semantics` switch: [`reset_restarts_stream_numbering`]: 0 (default)
/// keeps counting; 1 starts again at 1 after every good reset, so a late notice for a
/// stream the reset killed can name a live one. A failed reset restarts nothing.
///
/// [`reset_restarts_stream_numbering`]: device_model::Semantics::reset_restarts_stream_numbering
pub const SWITCH_RESET_RESTARTS_STREAM_NUMBERING: u32 = 5;

/// `runlanefake_set_semantics` switch: [`handshake`](device_model::Semantics::handshake)
/// between a run's two kernels (same handshake address and epoch). 0 (default): each runs
/// alone.
pub const SWITCH_HANDSHAKE: u32 = 6;

/// `runlanefake_set_semantics` switch: the sticky fallout of a device fault,
/// [`device_fault_fails_calls`](device_model::Semantics::device_fault_fails_calls). 0
/// (default): only the faulted stream keeps the code.
pub const SWITCH_FAULT_FAILS_CHECKED_CALLS: u32 = 7;

/// `runlanefake_set_semantics` switch: how many milliseconds every event wait
/// (`aclrtSynchronizeEventWithTimeout`) stays inside the call before it looks at its event,
/// whatever its timeout: a hung driver call that ignores its bound (a real wait returns up to
/// a slice, 5 s, past its timeout, device-truth §5; a stall longer than the lane's grace is
/// the case it loses itself to rather than reset under, L-20). A force reset of the device
/// meanwhile counts as a reset under a wait. Any value; 0 (default) stalls nothing. The
/// host's call, not the device: the fake keeps it, not the device model.
pub const SWITCH_EVENT_WAIT_STALL_MS: u32 = 8;

/// The fake's semantic switches (`runlanefake_set_semantics`), where the hardware's
/// behaviour is not known: each value is one plausible behaviour. `runlanefake_reset`
/// restores every default; a force reset keeps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Semantics {
    /// [`SWITCH_ENQUEUE_AFTER_FAULT`].
    EnqueueAfterFault(EnqueueAfterFault),
    /// [`SWITCH_OP_TIMEOUT_CODE_ON`].
    OpTimeoutCodeOn(OpTimeoutCodeOn),
    /// [`SWITCH_LEGACY_EVENT_FAULTS`]: `true` is the old, unreal behaviour.
    LegacyEventFaults(bool),
    /// [`SWITCH_LATCH_FAULTS_STREAM`]: `true` (default) leaves 507018 on the stream.
    LatchFaultsStream(bool),
    /// [`SWITCH_RESET_DROPS_EXCEPTION_CALLBACK`]: `true` drops the callback at a force reset.
    ResetDropsExceptionCallback(bool),
    /// [`SWITCH_RESET_RESTARTS_STREAM_NUMBERING`]: `true` restarts it at a force reset.
    ResetRestartsStreamNumbering(bool),
    /// [`SWITCH_HANDSHAKE`]: `true` couples a run's two kernels.
    Handshake(bool),
    /// [`SWITCH_FAULT_FAILS_CHECKED_CALLS`]: `true` fails every checked call after a fault.
    FaultFailsCheckedCalls(bool),
    /// [`SWITCH_EVENT_WAIT_STALL_MS`]: how long every event wait stalls before it looks.
    EventWaitStallMs(u32),
}

impl Semantics {
    /// The (switch, value) pair `runlanefake_set_semantics` takes.
    #[must_use]
    pub const fn raw(self) -> (u32, u32) {
        match self {
            Self::EnqueueAfterFault(v) => (SWITCH_ENQUEUE_AFTER_FAULT, v as u32),
            Self::OpTimeoutCodeOn(v) => (SWITCH_OP_TIMEOUT_CODE_ON, v as u32),
            Self::LegacyEventFaults(v) => (SWITCH_LEGACY_EVENT_FAULTS, v as u32),
            Self::LatchFaultsStream(v) => (SWITCH_LATCH_FAULTS_STREAM, v as u32),
            Self::ResetDropsExceptionCallback(v) => {
                (SWITCH_RESET_DROPS_EXCEPTION_CALLBACK, v as u32)
            }
            Self::ResetRestartsStreamNumbering(v) => {
                (SWITCH_RESET_RESTARTS_STREAM_NUMBERING, v as u32)
            }
            Self::Handshake(v) => (SWITCH_HANDSHAKE, v as u32),
            Self::FaultFailsCheckedCalls(v) => (SWITCH_FAULT_FAILS_CHECKED_CALLS, v as u32),
            Self::EventWaitStallMs(ms) => (SWITCH_EVENT_WAIT_STALL_MS, ms),
        }
    }
}

/// [`SWITCH_ENQUEUE_AFTER_FAULT`]'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u32)]
pub enum EnqueueAfterFault {
    /// [`ENQUEUE_AFTER_FAULT_ACCEPTED`] (default).
    #[default]
    Accepted = ENQUEUE_AFTER_FAULT_ACCEPTED,
    /// [`ENQUEUE_AFTER_FAULT_REFUSED`]: 507899.
    Refused = ENQUEUE_AFTER_FAULT_REFUSED,
}

/// [`SWITCH_OP_TIMEOUT_CODE_ON`]'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u32)]
pub enum OpTimeoutCodeOn {
    /// [`OP_TIMEOUT_CODE_ON_OWN_STREAM`] (default).
    #[default]
    OwnStream = OP_TIMEOUT_CODE_ON_OWN_STREAM,
    /// [`OP_TIMEOUT_CODE_ON_PARTNER_STREAM`].
    PartnerStream = OP_TIMEOUT_CODE_ON_PARTNER_STREAM,
    /// [`OP_TIMEOUT_CODE_ON_BOTH_STREAMS`].
    BothStreams = OP_TIMEOUT_CODE_ON_BOTH_STREAMS,
}

/// The counters' fields are one list: the struct, [`FakeCounters::ZERO`] and
/// [`FakeCounters::plus`] are made from it.
macro_rules! counters {
    ($(#[$attr:meta])* { $( $(#[doc = $doc:literal])* pub $name:ident: u64, )* }) => {
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #[repr(C)]
        pub struct FakeCounters {
            $( $(#[doc = $doc])* pub $name: u64, )*
        }

        impl FakeCounters {
            /// All zero.
            pub const ZERO: Self = Self { $( $name: 0, )* };

            /// Field-wise sum (several devices' counters as one).
            #[must_use]
            pub const fn plus(self, other: Self) -> Self {
                Self { $( $name: self.$name + other.$name, )* }
            }
        }
    };
}

counters! {
    /// One device's counters (or their sum over devices, [`Control::total_counters`]): what
    /// was created against what was destroyed, freed or reclaimed by a force reset, so a test
    /// can prove no path leaks.
    {
        /// `aclrtCreateStreamWithConfig` successes.
        pub streams_created: u64,
        /// `aclrtDestroyStream` and `aclrtDestroyStreamForce` successes.
        pub streams_destroyed: u64,
        /// Streams killed by a force reset.
        pub streams_reclaimed: u64,
        /// `aclrtCreateEventExWithFlag` successes.
        pub events_created: u64,
        /// `aclrtDestroyEvent` successes.
        pub events_destroyed: u64,
        /// Events killed by a force reset.
        pub events_reclaimed: u64,
        /// `aclrtMalloc` successes.
        pub mallocs: u64,
        /// `aclrtFree` successes.
        pub frees: u64,
        /// Device allocations killed by a force reset.
        pub allocations_reclaimed: u64,
        /// `aclrtMallocHost` successes.
        pub host_mallocs: u64,
        /// `aclrtFreeHost` successes.
        pub host_frees: u64,
        /// Pinned host allocations killed by a force reset.
        pub host_allocations_reclaimed: u64,
        /// `aclrtMemcpyAsync` enqueues (successful calls; a copy rule may still fail the task).
        pub async_copies: u64,
        /// `aclrtStreamWaitEvent` enqueues.
        pub stream_waits: u64,
        /// Kernels queued by `runlanefake_launch` and `runlanefake_launch_run`.
        pub launches: u64,
        /// AICPU kernels queued onto a stream whose previous kernel had not finished: runs
        /// launched while their predecessor was still on the device (a queued launch).
        pub queued_launches: u64,
        /// `aclrtResetDeviceForce` successes.
        pub force_resets: u64,
        /// Streams alive now.
        pub live_streams: u64,
        /// Events alive now.
        pub live_events: u64,
        /// Device allocations alive now.
        pub live_allocations: u64,
        /// Host allocations alive now.
        pub live_host_allocations: u64,
        /// Threads blocked now in `aclrtSynchronizeEventWithTimeout` on this device (waiting for
        /// work to finish), so a test knows a waiter is inside its wait before it acts.
        pub blocked_event_syncs: u64,
        /// `aclrtResetDeviceForce` successes made while a thread was inside an event, stream or
        /// device synchronize on this device: each one a use-after-free on real ACL
        /// (device-truth §5); the waiter got [`RESET_UNDER_WAIT`]. Must stay 0 (SPEC L-20).
        pub resets_under_wait: u64,
        /// `aclrtSynchronizeStreamWithTimeout` calls on a live stream of this device: the device
        /// verdict's synchronizes (L-8), which a successful run on the record channel never makes.
        pub stream_syncs: u64,
    }
}

impl FakeCounters {
    /// Every stream, event and allocation created was destroyed, freed or reclaimed, and
    /// nothing is alive. (A reset under a wait is a hazard, not a leak: check
    /// [`FakeCounters::resets_under_wait`] apart.)
    #[must_use]
    pub fn balanced(&self) -> bool {
        self.streams_created == self.streams_destroyed + self.streams_reclaimed
            && self.events_created == self.events_destroyed + self.events_reclaimed
            && self.mallocs == self.frees + self.allocations_reclaimed
            && self.host_mallocs == self.host_frees + self.host_allocations_reclaimed
            && self.live_streams
                + self.live_events
                + self.live_allocations
                + self.live_host_allocations
                == 0
    }
}

/// Bumped by `runlanefake_reset`: a thread's last error from before it reads as 0.
static LAST_ERROR_RESETS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The calling thread's last error (`aclrtPeekAtLastError`) and the reset count when it
    /// was set.
    static LAST_ERROR: Cell<(AclError, u64)> = const { Cell::new((ACL_SUCCESS, 0)) };
}

/// Makes `code` the calling thread's last error (a stream synchronize that returned it).
pub(crate) fn set_last_error(code: AclError) {
    LAST_ERROR.set((code, LAST_ERROR_RESETS.load(Ordering::Acquire)));
}

/// The calling thread's last error, cleared when `clear`.
fn last_error(clear: bool) -> AclError {
    let (code, resets) =
        if clear { LAST_ERROR.replace((ACL_SUCCESS, 0)) } else { LAST_ERROR.get() };
    if resets == LAST_ERROR_RESETS.load(Ordering::Acquire) { code } else { ACL_SUCCESS }
}

/// `aclrtPeekAtLastError` / `aclrtGetLastError`: 107000 for a level other than
/// `ACL_RT_THREAD_LEVEL` \[I\]; no panic crosses (500000).
fn last_error_call(level: i32, clear: bool) -> AclError {
    if level != ACL_RT_THREAD_LEVEL {
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    catch_unwind(|| last_error(clear)).unwrap_or(ACL_ERROR_INTERNAL_ERROR)
}

/// `aclrtPeekAtLastError(level)`: the calling thread's last error, not cleared. 0 for a
/// device fault until a stream synchronize (`aclrtSynchronizeStreamWithTimeout`)
/// materialized it on this thread (device-truth §1); only that call sets it here \[I\].
///
/// Exported by the fake beside the table (the lane does not bind it, so a CANN without it
/// still loads).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtPeekAtLastError(level: i32) -> AclError {
    last_error_call(level, false)
}

/// `aclrtGetLastError(level)`: as [`aclrtPeekAtLastError`], and clears it.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetLastError(level: i32) -> AclError {
    last_error_call(level, true)
}

thread_local! {
    /// The calling thread's error text not yet read, and the one last handed out (kept alive
    /// until the next read, as ACL's is).
    static ERROR_TEXT: RefCell<(Option<CString>, Option<CString>)> = const { RefCell::new((None, None)) };
}

fn set_error_message(call: &str, code: AclError) {
    let text =
        CString::new(format!("fake libascendcl: {call} returned {code}")).unwrap_or_default();
    ERROR_TEXT.with_borrow_mut(|(pending, _)| *pending = Some(text));
}

/// `aclGetRecentErrMsg`: hands out and clears the pending text.
fn take_error_message() -> *const c_char {
    ERROR_TEXT.with_borrow_mut(|(pending, returned)| match pending.take() {
        Some(text) => returned.insert(text).as_ptr(),
        None => std::ptr::null(),
    })
}

/// A C return value: the failure value for an injected code or a caught panic.
trait FfiReturn: Copy {
    fn failure(code: AclError) -> Self;
    fn failed(self) -> Option<AclError>;
}

impl FfiReturn for AclError {
    fn failure(code: AclError) -> Self {
        code
    }
    fn failed(self) -> Option<AclError> {
        (self != ACL_SUCCESS).then_some(self)
    }
}

impl FfiReturn for u32 {
    fn failure(_: AclError) -> Self {
        EXCEPTION_INFO_INVALID
    }
    fn failed(self) -> Option<AclError> {
        None
    }
}

impl FfiReturn for *const c_char {
    fn failure(_: AclError) -> Self {
        std::ptr::null()
    }
    fn failed(self) -> Option<AclError> {
        None
    }
}

/// The device whose call-fault rules a call of `call` draws: the calling thread's current
/// device (device 0 for a thread that never bound one), device 0 for the process-wide calls,
/// none for the two calls that name a device (they draw that device's rules themselves) and
/// for `aclGetRecentErrMsg` (never failed).
fn rules_for(call: &str) -> Option<&'static Device> {
    match call {
        "aclGetRecentErrMsg" | "aclrtSetDevice" | "aclrtResetDeviceForce" => None,
        // Called from inside the callback, on the driver's thread: never failed, and no
        // device lock taken.
        "aclrtGetDeviceIdFromExceptionInfo"
        | "aclrtGetStreamIdFromExceptionInfo"
        | "aclrtGetTaskIdFromExceptionInfo"
        | "aclrtGetThreadIdFromExceptionInfo"
        | "aclrtGetErrorCodeFromExceptionInfo" => None,
        "aclInit" | "aclFinalize" | "aclrtGetDeviceCount" | "aclrtGetSocName" => device::device(0),
        _ => Some(device::thread_device()),
    }
}

/// Every exported function's boundary: injected failures, the thread's error text, and no
/// panic across FFI.
fn guard<R: FfiReturn>(call: &str, body: impl FnOnce() -> R) -> R {
    if let Some(device) = rules_for(call) {
        if let Some(code) = device.lock().model.decide_call(call) {
            set_error_message(call, code);
            return R::failure(code);
        }
    }
    let result = catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|_| R::failure(ACL_ERROR_INTERNAL_ERROR));
    if let Some(code) = result.failed() {
        set_error_message(call, code);
    }
    result
}

/// Exports each function of a table (`$callback!` input) as a guarded call of its body in
/// `$module`, with `$note` added to its doc.
macro_rules! export {
    ($module:ident, $note:literal, $safety:literal; $( $(#[doc = $doc:literal])* fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty; )*) => {
        $(
            $(#[doc = $doc])*
            ///
            #[doc = $note]
            ///
            /// # Safety
            ///
            #[doc = $safety]
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                // SAFETY: forwarded unchanged; the caller upholds the call's C contract.
                guard(stringify!($name), move || unsafe { $module::$name($($arg),*) })
            }
        )*
    };
}

macro_rules! export_acl {
    ($($items:tt)*) => {
        export! { imp, "Exported by the fake (generated from `ascend_cl_sys::for_each_acl_function!`).", "The call's C contract, as for the real library."; $($items)* }
    };
}

ascend_cl_sys::for_each_acl_function!(export_acl);
ascend_cl_sys::for_each_optional_acl_function!(export_acl);

/// Calls `$callback! { ... }` with the fake's test-only control functions: declared once,
/// expanded into the exports and into [`Control`]'s table.
macro_rules! for_each_control_function {
    ($callback:ident) => {
        $callback! {
            /// Back to a fresh process: on every device, every stream, event and allocation
            /// dropped (workers joined), faults cleared, counters zeroed, the process's op
            /// timeout 1091 s, every semantic switch at its default; defaults restored (16
            /// devices, "Ascend910B1", not initialised); every thread's last error reads 0;
            /// the exception callback unregistered and every notice still waiting out its
            /// delay CANCELLED (one already being delivered finishes before this returns, so no
            /// callback runs after it); retired pinned host memory released. Every thread must
            /// bind again. The process's resets-under-wait total is kept.
            fn runlanefake_reset() -> AclError;
            /// Queue a kernel on `stream`, a stream of the calling thread's current device
            /// (107002 unbound, 107003 a stream of another device): `engine`
            /// ([`ENGINE_AICORE`], [`ENGINE_AICPU`]), `duration_ns`, `outcome` ([`Outcome`] as
            /// u32). It writes its device start and end (two LE u64 ns) to `timing` (a 16-byte
            /// range of that device's memory, or NULL) and, on success, `header_len` bytes from
            /// `header_bytes` to `header` (a device range, or NULL). Device ranges are checked
            /// now (107000); that device's kernel fault rules may change the outcome.
            fn runlanefake_launch(stream: AclrtStream, engine: u32, duration_ns: u64, outcome: u32, timing: *mut c_void, header: *mut c_void, header_bytes: *const u8, header_len: usize) -> AclError;
            /// `runlanefake_launch` for a kernel of a run (device-truth §2, §3): the run's two
            /// kernels (one AICore, one AICPU; a second of the same engine is 107000) share the
            /// non-NULL `handshake` address and `epoch`. When both have ended, the last to end
            /// publishes the run's result record at `record` (280 bytes of device memory, given
            /// with the AICPU kernel; checked now, 107000), before its task completes, so an
            /// event recorded after it sees the record: published only when the AICore kernel
            /// ended [`Outcome::Ok`] and the AICPU kernel [`Outcome::Ok`] (an ok record) or
            /// [`Outcome::Latch`] (the header decoded by the layout whose size is its length:
            /// an error record with the latched code, source header; a clean header: ok; any
            /// other length: nothing). An exception, an op-timeout kill, [`Outcome::Silent`], or
            /// a run whose stream was destroyed publishes nothing. A NULL `handshake`: the
            /// kernel is a run alone, publishing by its own ending. A NULL `record` publishes
            /// nothing; a non-NULL one with epoch 0 is 107000 (no run has epoch 0). The record
            /// is stamped with `epoch`.
            fn runlanefake_launch_run(stream: AclrtStream, engine: u32, duration_ns: u64, outcome: u32, timing: *mut c_void, header: *mut c_void, header_bytes: *const u8, header_len: usize, handshake: *mut c_void, record: *mut c_void, epoch: u64) -> AclError;
            /// `runlanefake_launch_run` for run `run` of the lane (its `RunId`; 0: none): the
            /// fault rules that select runs (`@run:N`) see it, and an AICPU kernel with a run
            /// decides its run's fate (the `run` fault site) for both of its kernels.
            fn runlanefake_launch_run_id(stream: AclrtStream, engine: u32, duration_ns: u64, outcome: u32, timing: *mut c_void, header: *mut c_void, header_bytes: *const u8, header_len: usize, handshake: *mut c_void, record: *mut c_void, epoch: u64, run: u64) -> AclError;
            /// Install a fault rule on device `device_id`, written in the one fault vocabulary's
            /// text form (`spec`: NUL-terminated, as `lane-sim --fault` takes it, e.g.
            /// `latch=SCOPE_DEADLOCK@run:2`, `stream-create=207008@call:1`,
            /// `call:aclrtMalloc=207001@call:2-3`). Its `calls` count the consultations of its
            /// site from now. 107000 for a spec that does not parse; 107001 for a bad device id.
            fn runlanefake_install_fault(device_id: i32, spec: *const c_char) -> AclError;
            /// Set semantic switch `switch` ([`SWITCH_ENQUEUE_AFTER_FAULT`],
            /// [`SWITCH_OP_TIMEOUT_CODE_ON`], [`SWITCH_LEGACY_EVENT_FAULTS`],
            /// [`SWITCH_LATCH_FAULTS_STREAM`], [`SWITCH_RESET_DROPS_EXCEPTION_CALLBACK`],
            /// [`SWITCH_RESET_RESTARTS_STREAM_NUMBERING`]) to
            /// `value` on every device (served or not); an unknown switch or value is 107000.
            fn runlanefake_set_semantics(switch: u32, value: u32) -> AclError;
            /// `runlanefake_set_semantics` on device `device_id` only (107001 out of range).
            fn runlanefake_set_semantics_on(device_id: i32, switch: u32, value: u32) -> AclError;
            /// Fail calls of the exported function `name` (an ACL symbol or
            /// `runlanefake_launch`) made on device `device_id` (0 to [`MAX_DEVICES`] - 1,
            /// else 107001): after `skip` calls, the next `count` return `code`. A call is made
            /// on the calling thread's current device (device 0 for a thread that never bound);
            /// `aclrtSetDevice` and `aclrtResetDeviceForce` on the device they name;
            /// `aclInit`, `aclFinalize`, `aclrtGetDeviceCount` and `aclrtGetSocName` on device 0.
            fn runlanefake_fail_call_on(device_id: i32, name: *const c_char, code: AclError, skip: u32, count: u32) -> AclError;
            /// End launches on device `device_id` and `engine` ([`ENGINE_ANY`] for all) with
            /// `outcome` (any [`Outcome`], [`Outcome::Silent`] included): after `skip`
            /// launches, the next `count`. A [`Outcome::Latch`] writes `header_bytes` (the
            /// caller encodes a status header with a latched code) as the status header.
            fn runlanefake_fault_kernel_on(device_id: i32, outcome: u32, engine: u32, skip: u32, count: u32, header_bytes: *const u8, header_len: usize) -> AclError;
            /// Fail async copies (`aclrtMemcpyAsync`) on device `device_id`'s streams: after
            /// `skip` copies, the next `count` are enqueued as usual but end with `code` when
            /// the stream reaches them (no byte lands, `code` is sticky on the stream and its
            /// synchronize reports it; an event recorded after them completes). A failed
            /// enqueue is `runlanefake_fail_call_on`'s.
            fn runlanefake_fault_copy_on(device_id: i32, code: AclError, skip: u32, count: u32) -> AclError;
            /// Remove every fault rule of device `device_id`.
            fn runlanefake_clear_faults_on(device_id: i32) -> AclError;
            /// The SoC name the probe reports, one for every device (NULL: `aclrtGetSocName`
            /// returns NULL). The previous custom name's pointer dies here.
            fn runlanefake_set_soc_name(name: *const c_char) -> AclError;
            /// The device count the probe reports (also the range of ids `aclrtSetDevice`
            /// accepts); above [`MAX_DEVICES`] is 107000.
            fn runlanefake_set_device_count(count: u32) -> AclError;
            /// Copy device `device_id`'s counters into `out`.
            fn runlanefake_counters_on(device_id: i32, out: *mut FakeCounters) -> AclError;
            /// Raise a device fault notice (device-truth §4) as the driver does, late and on a
            /// thread of its own: after at least `delay_ns`, the callback registered with
            /// `aclrtSetExceptionInfoCallback` at that moment is called with an info naming
            /// logical device `device_id`, stream id `stream_id` (as `aclrtStreamGetId` gives
            /// it; any value, a stream of nobody's too), error code `code`, task id 0 and thread
            /// id 0. With no callback registered then, the notice is dropped (counted). Needs
            /// no binding; `device_id` outside 0 to [`MAX_DEVICES`] - 1 is 107001.
            fn runlanefake_raise_notice(device_id: i32, stream_id: i32, code: AclError, delay_ns: u64) -> AclError;
            /// Copy the notices delivered to a callback and the notices dropped (no callback
            /// registered) since the last `runlanefake_reset` into `delivered` and `dropped`
            /// (either may be NULL).
            fn runlanefake_notice_counts(delivered: *mut u64, dropped: *mut u64) -> AclError;
            /// Copy into `out` (room for `capacity` ids; NULL with 0) the ids
            /// (`aclrtStreamGetId`) of device `device_id`'s live streams, oldest first, and
            /// their count into `count` (it may exceed `capacity`: only that many are copied).
            fn runlanefake_live_stream_ids(device_id: i32, out: *mut i32, capacity: u32, count: *mut u32) -> AclError;
            /// Copy into `out` the force resets made under a wait (see [`RESET_UNDER_WAIT`])
            /// on every device since the process loaded the fake: `runlanefake_reset` does not
            /// clear it, so one check can cover every test of a process.
            fn runlanefake_resets_under_wait(out: *mut u64) -> AclError;
            /// Copy into `out` the fake's device clock now: the nanoseconds every kernel's
            /// timing buffer is written in (one monotonic clock for every device, from the
            /// fake's first use). A bench reads it beside its own monotonic clock to place the
            /// device's starts and ends on the host's timeline.
            fn runlanefake_device_clock_ns(out: *mut u64) -> AclError;
        }
    };
}

macro_rules! export_control {
    ($($items:tt)*) => {
        export! { control, "Test-only control of the fake (no such function exists in ACL).", "Pointer arguments are NULL or valid for the access described."; $($items)* }
    };
}

for_each_control_function!(export_control);

mod control;

mod client;

pub use client::{Control, ControlError, DeviceControl, RunKernel, Session, cdylib_path};
pub use device::WORKER_TIMER_SLACK_NS;
