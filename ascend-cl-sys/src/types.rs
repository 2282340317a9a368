//! The C types and constants of the ACL ABI (ascend-cl.md §2, §3), as plain Rust values.

use core::ffi::c_void;

/// `aclError`: `int`, 0 on success.
pub type AclError = i32;
/// `aclrtStream`: an opaque handle.
pub type AclrtStream = *mut c_void;
/// `aclrtEvent`: an opaque handle.
pub type AclrtEvent = *mut c_void;

/// `aclrtExceptionInfo`: the driver's opaque record of one device fault notice, valid only
/// for the duration of the callback it is passed to (device-truth §4). Read it with the
/// `aclrtGet*FromExceptionInfo` getters; never construct or copy one.
#[repr(C)]
pub struct AclrtExceptionInfo {
    _opaque: [u8; 0],
    // Neither Send, Sync nor Unpin: it is the driver's, behind a pointer.
    _marker: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// `aclrtExceptionInfoCallback`: `void (*)(aclrtExceptionInfo *)`, `None` for NULL (which
/// unregisters). The driver calls it on a thread of its own, up to 16 s after the fault; the
/// process has one slot and the last registration wins silently (device-truth §4).
pub type AclrtExceptionInfoCallback = Option<unsafe extern "C" fn(info: *mut AclrtExceptionInfo)>;

/// What each `aclrtGet*FromExceptionInfo` getter returns for a NULL info.
pub const EXCEPTION_INFO_INVALID: u32 = 0xFFFF_FFFF;

/// `ACL_SUCCESS`.
pub const ACL_SUCCESS: AclError = 0;
/// `ACL_ERROR_INVALID_PARAM`: a NULL pointer argument (ACL layer).
pub const ACL_ERROR_INVALID_PARAM: AclError = 100_000;
/// `ACL_ERROR_UNINITIALIZE`: `aclInit` was not called.
pub const ACL_ERROR_UNINITIALIZE: AclError = 100_001;
/// `ACL_ERROR_REPEAT_INITIALIZE`: a repeated `aclInit`, harmless.
pub const ACL_ERROR_REPEAT_INITIALIZE: AclError = 100_002;
/// `ACL_ERROR_REPEAT_FINALIZE`.
pub const ACL_ERROR_REPEAT_FINALIZE: AclError = 100_037;
/// `ACL_ERROR_INTERNAL_ERROR`.
pub const ACL_ERROR_INTERNAL_ERROR: AclError = 500_000;
/// `ACL_ERROR_RT_PARAM_INVALID`: a bad value (RT layer), including a timeout of 0 or < -1.
pub const ACL_ERROR_RT_PARAM_INVALID: AclError = 107_000;
/// `ACL_ERROR_RT_INVALID_DEVICEID`.
pub const ACL_ERROR_RT_INVALID_DEVICEID: AclError = 107_001;
/// `ACL_ERROR_RT_CONTEXT_NULL`: the thread never called `aclrtSetDevice` (or the device
/// was reset since).
pub const ACL_ERROR_RT_CONTEXT_NULL: AclError = 107_002;
/// `ACL_ERROR_RT_STREAM_CONTEXT`: the stream is not in the calling thread's current
/// context (a stream of another device).
pub const ACL_ERROR_RT_STREAM_CONTEXT: AclError = 107_003;
/// `ACL_ERROR_RT_INVALID_HANDLE`.
pub const ACL_ERROR_RT_INVALID_HANDLE: AclError = 107_017;
/// `ACL_ERROR_RT_STREAM_ABORT`: the stream was torn down under the caller.
pub const ACL_ERROR_RT_STREAM_ABORT: AclError = 107_023;
/// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT`: the call or mode is not supported here (an
/// `aclrtMemcpyAsync` host to host in EP mode).
pub const ACL_ERROR_RT_FEATURE_NOT_SUPPORT: AclError = 207_000;
/// `ACL_ERROR_RT_MEMORY_ALLOCATION`.
pub const ACL_ERROR_RT_MEMORY_ALLOCATION: AclError = 207_001;
/// `ACL_ERROR_RT_NO_STREAM_RESOURCE`.
pub const ACL_ERROR_RT_NO_STREAM_RESOURCE: AclError = 207_008;
/// `ACL_ERROR_RT_NO_EVENT_RESOURCE`.
pub const ACL_ERROR_RT_NO_EVENT_RESOURCE: AclError = 207_007;
/// `ACL_ERROR_RT_INTERNAL_ERROR`.
pub const ACL_ERROR_RT_INTERNAL_ERROR: AclError = 507_000;
/// `ACL_ERROR_RT_CONTEXT_RELEASE_ERROR`: a reset of a device whose context is already gone
/// (a second `aclrtResetDeviceForce` with no `aclrtSetDevice` in between, or a plain
/// `aclrtResetDevice` after a force reset; device-truth §5).
pub const ACL_ERROR_RT_CONTEXT_RELEASE_ERROR: AclError = 507_007;
/// `ACL_ERROR_RT_AICORE_TIMEOUT`: the device op timeout fired on AICore.
pub const ACL_ERROR_RT_AICORE_TIMEOUT: AclError = 507_014;
/// `ACL_ERROR_RT_AICORE_EXCEPTION`: an AICore kernel fault.
pub const ACL_ERROR_RT_AICORE_EXCEPTION: AclError = 507_015;
/// `ACL_ERROR_RT_AICPU_TIMEOUT`: the device op timeout fired on AICPU.
pub const ACL_ERROR_RT_AICPU_TIMEOUT: AclError = 507_017;
/// `ACL_ERROR_RT_AICPU_EXCEPTION`: an AICPU kernel fault.
pub const ACL_ERROR_RT_AICPU_EXCEPTION: AclError = 507_018;
/// `ACL_ERROR_RT_STREAM_SYNC_TIMEOUT`: a stream or device wait expired on the host.
pub const ACL_ERROR_RT_STREAM_SYNC_TIMEOUT: AclError = 507_046;
/// `ACL_ERROR_RT_EVENT_SYNC_TIMEOUT`: an event wait expired on the host.
pub const ACL_ERROR_RT_EVENT_SYNC_TIMEOUT: AclError = 507_047;
/// `ACL_ERROR_RT_DRV_INTERNAL_ERROR`: the sticky code of a poisoned context.
pub const ACL_ERROR_RT_DRV_INTERNAL_ERROR: AclError = 507_899;

/// `ACL_EVENT_SYNC`: the event may be waited on from another stream.
pub const ACL_EVENT_SYNC: u32 = 0x1;
/// `ACL_EVENT_TIME_LINE`: the event records timestamps.
pub const ACL_EVENT_TIME_LINE: u32 = 0x8;

/// `ACL_EVENT_RECORDED_STATUS_NOT_READY` (`aclrtQueryEventStatus`).
pub const ACL_EVENT_RECORDED_STATUS_NOT_READY: i32 = 0;
/// `ACL_EVENT_RECORDED_STATUS_COMPLETE` (also before the first record).
pub const ACL_EVENT_RECORDED_STATUS_COMPLETE: i32 = 1;

/// `ACL_RT_THREAD_LEVEL`: the `level` of `aclrtPeekAtLastError` / `aclrtGetLastError`
/// (the calling thread's last error).
pub const ACL_RT_THREAD_LEVEL: i32 = 0;

/// `ACL_MEM_MALLOC_HUGE_FIRST`.
pub const ACL_MEM_MALLOC_HUGE_FIRST: i32 = 0;

/// `ACL_MEMCPY_HOST_TO_HOST`.
pub const ACL_MEMCPY_HOST_TO_HOST: i32 = 0;
/// `ACL_MEMCPY_HOST_TO_DEVICE`.
pub const ACL_MEMCPY_HOST_TO_DEVICE: i32 = 1;
/// `ACL_MEMCPY_DEVICE_TO_HOST`.
pub const ACL_MEMCPY_DEVICE_TO_HOST: i32 = 2;
/// `ACL_MEMCPY_DEVICE_TO_DEVICE`.
pub const ACL_MEMCPY_DEVICE_TO_DEVICE: i32 = 3;
