//! A fake `libascendcl` for tests: `librun_lane_fake_ascendcl.so`, loaded through
//! ascend-cl-sys's ordinary loader by explicit path, so `cargo test` runs every FFI line of the
//! hardware path with no NPU and no CANN install.
//!
//! **Owns:** the ACL symbols of `ascend_cl_sys::for_each_acl_function!`, exported with the
//! same C signatures (the exports are generated from that one table, so the binding and the
//! fake cannot drift) and the real codes (ascend-cl.md §3); a real-time device model
//! (streams are FIFO task queues run by one worker thread each; events capture the tasks
//! submitted before their record; waits are timed condvar waits, never sleep-polling; device
//! memory is host memory, bounds-checked by a table); and a test-only control surface,
//! `runlanefake_*` C functions, reached through [`Control`].
//!
//! **Invariant:** ACL semantics where a lane can observe them: a never-recorded event
//! synchronises as success; `aclrtSynchronizeEventWithTimeout` returns 507047 when its wait
//! expires; a faulted stream's error is sticky and nothing more runs on it; a force reset
//! kills every stream, event, device and pinned host allocation and unbinds every thread (each must call
//! `aclrtSetDevice` again, else 107002); a kernel that runs past the op timeout
//! (`aclrtSetOpExecuteTimeOutV2`, default 1091 s) ends with 507014 (AICore) or 507017
//! (AICPU). No panic crosses the C boundary (a caught panic returns 500000), and a bad
//! device address fails with an ACL code instead of crashing.
//!
//! **API boundary:** the exported C functions (the only state is process-wide, as a real
//! device's is: tests that use the fake serialise themselves and call
//! [`Control::reset`] first); [`Control`], [`cdylib_path`], [`FakeCounters`] and the launch
//! constants for tests. Never loaded unless pointed at explicitly: the file name cannot be
//! mistaken for `libascendcl.so`, and nothing searches for it.
//!
//! Differences from real ACL, on purpose: `aclInit` is not required before other calls (the
//! embedding runtime owns it); there is one device context per device generation, with no
//! explicit contexts; `aclrtSynchronizeDeviceWithTimeout` returns the first faulted stream's
//! code after the drain.

use core::ffi::{c_char, c_void};
use std::cell::RefCell;
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};

use ascend_cl_sys::types::*;

mod device;
mod imp;

use device::{CallFault, DEVICE, KernelFault, SocName, Task};

/// The fake's file name (never `libascendcl.so`).
pub const CDYLIB_FILE_NAME: &str = "librun_lane_fake_ascendcl.so";

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
    /// Succeeds, writing the rule's bytes (a latched runtime code) as its status header.
    Latch = 3,
}

impl Outcome {
    fn from_raw(raw: u32) -> Option<Self> {
        [Self::Ok, Self::Exception, Self::Hang, Self::Latch]
            .into_iter()
            .find(|o| *o as u32 == raw)
    }
}

/// The fake's counters: what was created against what was destroyed, freed or reclaimed by a
/// force reset, so a test can prove no path leaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct FakeCounters {
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
    /// Kernels queued by `runlanefake_launch`.
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
}

impl FakeCounters {
    /// All zero.
    pub const ZERO: Self = Self {
        streams_created: 0,
        streams_destroyed: 0,
        streams_reclaimed: 0,
        events_created: 0,
        events_destroyed: 0,
        events_reclaimed: 0,
        mallocs: 0,
        frees: 0,
        allocations_reclaimed: 0,
        host_mallocs: 0,
        host_frees: 0,
        host_allocations_reclaimed: 0,
        async_copies: 0,
        stream_waits: 0,
        launches: 0,
        queued_launches: 0,
        force_resets: 0,
        live_streams: 0,
        live_events: 0,
        live_allocations: 0,
        live_host_allocations: 0,
    };

    /// Every stream, event and allocation created was destroyed, freed or reclaimed, and
    /// nothing is alive.
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

impl FfiReturn for *const c_char {
    fn failure(_: AclError) -> Self {
        std::ptr::null()
    }
    fn failed(self) -> Option<AclError> {
        None
    }
}

/// Every exported function's boundary: injected failures, the thread's error text, and no
/// panic across FFI.
fn guard<R: FfiReturn>(call: &str, body: impl FnOnce() -> R) -> R {
    if call != "aclGetRecentErrMsg" {
        if let Some(code) = DEVICE.lock().injected_failure(call) {
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

macro_rules! export_acl {
    ($( $(#[doc = $doc:literal])* fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty; )*) => {
        $(
            $(#[doc = $doc])*
            ///
            /// Exported by the fake (generated from `ascend_cl_sys::for_each_acl_function!`).
            ///
            /// # Safety
            ///
            /// The call's C contract, as for the real library.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                // SAFETY: forwarded unchanged; the caller upholds the call's C contract.
                guard(stringify!($name), move || unsafe { imp::$name($($arg),*) })
            }
        )*
    };
}

ascend_cl_sys::for_each_acl_function!(export_acl);

/// Calls `$callback! { ... }` with the fake's test-only control functions: declared once,
/// expanded into the exports and into [`Control`]'s table.
macro_rules! for_each_control_function {
    ($callback:ident) => {
        $callback! {
            /// Back to a fresh process: every stream, event and allocation dropped (workers
            /// joined), faults cleared, counters zeroed, defaults restored (one device,
            /// "Ascend910B1", op timeout 1091 s, not initialised). Every thread must bind again.
            fn runlanefake_reset() -> AclError;
            /// Queue a kernel on `stream`: `engine` ([`ENGINE_AICORE`], [`ENGINE_AICPU`]),
            /// `duration_ns`, `outcome` ([`Outcome`] as u32). It writes its device start and end
            /// (two LE u64 ns) to `timing` (a 16-byte device range, or NULL) and, on success,
            /// `header_len` bytes from `header_bytes` to `header` (a device range, or NULL).
            /// Device ranges are checked now (107000); kernel fault rules may change the outcome.
            fn runlanefake_launch(stream: AclrtStream, engine: u32, duration_ns: u64, outcome: u32, timing: *mut c_void, header: *mut c_void, header_bytes: *const u8, header_len: usize) -> AclError;
            /// Fail calls of the exported function `name` (an ACL symbol or
            /// `runlanefake_launch`): after `skip` calls, the next `count` return `code`.
            fn runlanefake_fail_call(name: *const c_char, code: AclError, skip: u32, count: u32) -> AclError;
            /// End launches on `engine` ([`ENGINE_ANY`] for all) with `outcome`: after `skip`
            /// launches, the next `count`. A [`Outcome::Latch`] writes `header_bytes` (the
            /// caller encodes a status header with a latched code) as the status header.
            fn runlanefake_fault_kernel(outcome: u32, engine: u32, skip: u32, count: u32, header_bytes: *const u8, header_len: usize) -> AclError;
            /// Fail async copies (`aclrtMemcpyAsync`) on their stream: after `skip` copies,
            /// the next `count` are enqueued as usual but end with `code` when the stream
            /// reaches them (no byte lands, the stream's error is sticky, an event recorded
            /// after them reports `code`). A failed enqueue is `runlanefake_fail_call`'s.
            fn runlanefake_fault_copy(code: AclError, skip: u32, count: u32) -> AclError;
            /// Remove every fault rule.
            fn runlanefake_clear_faults() -> AclError;
            /// The SoC name the probe reports (NULL: `aclrtGetSocName` returns NULL). The
            /// previous custom name's pointer dies here.
            fn runlanefake_set_soc_name(name: *const c_char) -> AclError;
            /// The device count the probe reports (also the range of valid device ids).
            fn runlanefake_set_device_count(count: u32) -> AclError;
            /// Copy the counters into `out`.
            fn runlanefake_counters(out: *mut FakeCounters) -> AclError;
        }
    };
}

macro_rules! export_control {
    ($( $(#[doc = $doc:literal])* fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty; )*) => {
        $(
            $(#[doc = $doc])*
            ///
            /// Test-only control of the fake (no such function exists in ACL).
            ///
            /// # Safety
            ///
            /// Pointer arguments are NULL or valid for the access described.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                // SAFETY: forwarded unchanged; the caller upholds the pointer contract.
                guard(stringify!($name), move || unsafe { control::$name($($arg),*) })
            }
        )*
    };
}

for_each_control_function!(export_control);

/// The control functions' behaviour.
mod control {
    use super::*;

    /// Copies `len` bytes from `bytes` (NULL when `len` is 0).
    ///
    /// # Safety
    ///
    /// `bytes` is valid for `len` reads when `len > 0`.
    unsafe fn bytes_from(bytes: *const u8, len: usize) -> Result<Vec<u8>, AclError> {
        if len == 0 {
            return Ok(Vec::new());
        }
        if bytes.is_null() {
            return Err(ACL_ERROR_INVALID_PARAM);
        }
        // SAFETY: non-NULL and valid for `len` reads by the caller's contract.
        Ok(unsafe { std::slice::from_raw_parts(bytes, len) }.to_vec())
    }

    pub(super) unsafe fn runlanefake_reset() -> AclError {
        let workers = DEVICE.lock().reset_all();
        DEVICE.notify();
        for worker in workers {
            // A worker that panicked has nothing left to clean up.
            let _ = worker.join();
        }
        ACL_SUCCESS
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn runlanefake_launch(
        stream: AclrtStream,
        engine: u32,
        duration_ns: u64,
        outcome: u32,
        timing: *mut c_void,
        header: *mut c_void,
        header_bytes: *const u8,
        header_len: usize,
    ) -> AclError {
        // SAFETY: the caller's contract for `header_bytes`.
        let header_bytes = match unsafe { bytes_from(header_bytes, header_len) } {
            Ok(bytes) => bytes,
            Err(code) => return code,
        };
        let mut state = DEVICE.lock();
        if let Err(code) = state.require_context() {
            return code;
        }
        let Some(outcome) = Outcome::from_raw(outcome) else {
            return ACL_ERROR_RT_PARAM_INVALID;
        };
        if !device::valid_engine(engine) {
            return ACL_ERROR_RT_PARAM_INVALID;
        }
        if !timing.is_null() && state.device_bytes(timing as usize, 16).is_none() {
            return ACL_ERROR_RT_PARAM_INVALID;
        }
        if !header.is_null()
            && state
                .device_bytes(header as usize, header_bytes.len())
                .is_none()
        {
            return ACL_ERROR_RT_PARAM_INVALID;
        }
        if !state.streams.contains_key(&(stream as u64)) {
            return ACL_ERROR_RT_INVALID_HANDLE;
        }
        let mut kernel = device::Kernel {
            engine,
            duration: std::time::Duration::from_nanos(duration_ns),
            outcome,
            timing: timing as usize,
            header: header as usize,
            header_bytes,
        };
        state.apply_kernel_fault(&mut kernel);
        state.counters.launches += 1;
        let Some(s) = state.streams.get_mut(&(stream as u64)) else {
            return ACL_ERROR_RT_INVALID_HANDLE;
        };
        let queued = engine == ENGINE_AICPU && s.kernels_out > 0;
        s.kernels_out += 1;
        s.queue.push_back(Task::Kernel(kernel));
        s.submitted += 1;
        if queued {
            state.counters.queued_launches += 1;
        }
        DEVICE.notify();
        ACL_SUCCESS
    }

    pub(super) unsafe fn runlanefake_fail_call(
        name: *const c_char,
        code: AclError,
        skip: u32,
        count: u32,
    ) -> AclError {
        if name.is_null() || count == 0 {
            return ACL_ERROR_INVALID_PARAM;
        }
        // SAFETY: non-NULL and NUL-terminated by the caller's contract.
        let name = unsafe { core::ffi::CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        DEVICE.lock().call_faults.push(CallFault {
            name,
            code,
            skip,
            count,
        });
        ACL_SUCCESS
    }

    pub(super) unsafe fn runlanefake_fault_kernel(
        outcome: u32,
        engine: u32,
        skip: u32,
        count: u32,
        header_bytes: *const u8,
        header_len: usize,
    ) -> AclError {
        let Some(outcome) = Outcome::from_raw(outcome) else {
            return ACL_ERROR_RT_PARAM_INVALID;
        };
        if count == 0 || !(engine == ENGINE_ANY || device::valid_engine(engine)) {
            return ACL_ERROR_RT_PARAM_INVALID;
        }
        // SAFETY: the caller's contract for `header_bytes`.
        let header_bytes = match unsafe { bytes_from(header_bytes, header_len) } {
            Ok(bytes) => bytes,
            Err(code) => return code,
        };
        DEVICE.lock().kernel_faults.push(KernelFault {
            outcome,
            engine,
            skip,
            count,
            header_bytes,
        });
        ACL_SUCCESS
    }

    pub(super) unsafe fn runlanefake_fault_copy(code: AclError, skip: u32, count: u32) -> AclError {
        if code == ACL_SUCCESS || count == 0 {
            return ACL_ERROR_RT_PARAM_INVALID;
        }
        DEVICE
            .lock()
            .copy_faults
            .push(device::CopyFault { code, skip, count });
        ACL_SUCCESS
    }

    pub(super) unsafe fn runlanefake_clear_faults() -> AclError {
        let mut state = DEVICE.lock();
        state.call_faults.clear();
        state.kernel_faults.clear();
        state.copy_faults.clear();
        ACL_SUCCESS
    }

    pub(super) unsafe fn runlanefake_set_soc_name(name: *const c_char) -> AclError {
        let soc = if name.is_null() {
            SocName::Null
        } else {
            // SAFETY: non-NULL and NUL-terminated by the caller's contract.
            SocName::Custom(unsafe { core::ffi::CStr::from_ptr(name) }.to_owned())
        };
        DEVICE.lock().soc_name = soc;
        ACL_SUCCESS
    }

    pub(super) unsafe fn runlanefake_set_device_count(count: u32) -> AclError {
        DEVICE.lock().device_count = count;
        ACL_SUCCESS
    }

    pub(super) unsafe fn runlanefake_counters(out: *mut FakeCounters) -> AclError {
        if out.is_null() {
            return ACL_ERROR_INVALID_PARAM;
        }
        let counters = DEVICE.lock().counters;
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe { out.write(counters) };
        ACL_SUCCESS
    }
}

mod client;

pub use client::{Control, ControlError, cdylib_path};
