//! The one declaration of every ACL function this crate binds.

/// Calls `$callback! { ... }` with every ACL function this crate binds, one
/// `fn name(arg: Type, ...) -> Ret;` item each, with its doc comment.
///
/// This is the single place a signature is written. ascend-cl-sys expands it into the
/// symbol table [`Acl`](crate::Acl) resolves and the methods that call it; the test fake
/// (`acl-fake`) expands it into the `#[unsafe(no_mangle)]` functions it exports, so the
/// binding and the fake cannot drift. Types are spelled with `$crate::` paths so that the
/// expansion compiles in any crate.
#[macro_export]
macro_rules! for_each_acl_function {
    ($callback:ident) => {
        $callback! {
            /// `aclInit(configPath)`: initialise ACL for the process; `configPath` may be NULL.
            /// A repeat returns 100002.
            fn aclInit(config_path: *const ::core::ffi::c_char) -> $crate::AclError;
            /// `aclFinalize()`: only if this process did the init.
            fn aclFinalize() -> $crate::AclError;
            /// `aclGetRecentErrMsg()`: the calling thread's latest error text, cleared by the
            /// read; NULL when there is none. Valid until the next call.
            fn aclGetRecentErrMsg() -> *const ::core::ffi::c_char;
            /// `aclrtSetDevice(deviceId)`: bind the calling thread to the device's default
            /// context (in every thread, and again after every reset).
            fn aclrtSetDevice(device_id: i32) -> $crate::AclError;
            /// `aclrtResetDeviceForce(deviceId)`: tear the device's context down; every stream,
            /// event and allocation is dead afterwards. Never followed by a plain reset.
            fn aclrtResetDeviceForce(device_id: i32) -> $crate::AclError;
            /// `aclrtGetDeviceCount(&count)`.
            fn aclrtGetDeviceCount(count: *mut u32) -> $crate::AclError;
            /// `aclrtGetSocName()`: device 0's SoC name, NULL on failure.
            fn aclrtGetSocName() -> *const ::core::ffi::c_char;
            /// `aclrtSynchronizeDeviceWithTimeout(ms)`: bounded drain of the calling thread's
            /// current device; 507046 on timeout. The lane's completion waiter makes it.
            fn aclrtSynchronizeDeviceWithTimeout(timeout_ms: i32) -> $crate::AclError;
            /// `aclrtSetOpExecuteTimeOutV2(µs, &actual)`: the device op timeout.
            fn aclrtSetOpExecuteTimeOutV2(timeout_us: u64, actual_timeout_us: *mut u64) -> $crate::AclError;
            /// `aclrtCreateStreamWithConfig(&stream, priority, flag)`.
            fn aclrtCreateStreamWithConfig(stream: *mut $crate::AclrtStream, priority: u32, flag: u32) -> $crate::AclError;
            /// `aclrtDestroyStream(stream)`: healthy teardown, waits for queued tasks.
            fn aclrtDestroyStream(stream: $crate::AclrtStream) -> $crate::AclError;
            /// `aclrtDestroyStreamForce(stream)`: tear down without waiting (stuck or errored).
            fn aclrtDestroyStreamForce(stream: $crate::AclrtStream) -> $crate::AclError;
            /// `aclrtCreateEventExWithFlag(&event, flag)`: `flag` is never 0.
            fn aclrtCreateEventExWithFlag(event: *mut $crate::AclrtEvent, flag: u32) -> $crate::AclError;
            /// `aclrtRecordEvent(event, stream)`: capture the tasks submitted to `stream` so far.
            fn aclrtRecordEvent(event: $crate::AclrtEvent, stream: $crate::AclrtStream) -> $crate::AclError;
            /// `aclrtQueryEventStatus(event, &status)`: 1 complete (also never recorded), 0 not ready.
            fn aclrtQueryEventStatus(event: $crate::AclrtEvent, status: *mut i32) -> $crate::AclError;
            /// `aclrtSynchronizeEventWithTimeout(event, ms)`: `ms` is -1 or > 0; 507047 on timeout;
            /// a never-recorded event returns 0 at once. Any thread bound to the event's device
            /// may wait on it (the lane's completion waiter does, while the lane thread records
            /// other events), after the record in a known order (ascend-cl.md §2.4), and never
            /// while the event is destroyed; a force reset ends the wait with an error. Completion
            /// is not the verdict: an event recorded after a faulted, killed or fatal-status
            /// kernel completes with 0 once the kernel exited (device-truth.md §1).
            fn aclrtSynchronizeEventWithTimeout(event: $crate::AclrtEvent, timeout_ms: i32) -> $crate::AclError;
            /// `aclrtSynchronizeStreamWithTimeout(stream, ms)`: waits for every task submitted
            /// to `stream` so far, then returns the stream's sticky code (0 if none): the only
            /// call that materializes a device fault (device-truth.md §1). `ms == 0` is refused
            /// with 107000; -1 waits forever; 507046 on timeout. Afterwards
            /// `aclrtPeekAtLastError` / `aclrtGetLastError` report the code on the calling
            /// thread. Any thread bound to the stream's device may call it.
            fn aclrtSynchronizeStreamWithTimeout(stream: $crate::AclrtStream, timeout_ms: i32) -> $crate::AclError;
            /// `aclrtDestroyEvent(event)`: non-blocking.
            fn aclrtDestroyEvent(event: $crate::AclrtEvent) -> $crate::AclError;
            /// `aclrtStreamWaitEvent(stream, event)`: async; tasks submitted to `stream` after it
            /// start only once the tasks `event` captured (when the wait was submitted) have
            /// finished. The event needs `ACL_EVENT_SYNC`.
            fn aclrtStreamWaitEvent(stream: $crate::AclrtStream, event: $crate::AclrtEvent) -> $crate::AclError;
            /// `aclrtMalloc(&devPtr, size, policy)`.
            fn aclrtMalloc(dev_ptr: *mut *mut ::core::ffi::c_void, size: usize, policy: i32) -> $crate::AclError;
            /// `aclrtFree(devPtr)`.
            fn aclrtFree(dev_ptr: *mut ::core::ffi::c_void) -> $crate::AclError;
            /// `aclrtMallocHost(&hostPtr, size)`: pinned host memory.
            fn aclrtMallocHost(host_ptr: *mut *mut ::core::ffi::c_void, size: usize) -> $crate::AclError;
            /// `aclrtFreeHost(hostPtr)`.
            fn aclrtFreeHost(host_ptr: *mut ::core::ffi::c_void) -> $crate::AclError;
            /// `aclrtMemcpy(dst, destMax, src, count, kind)`: synchronous, no implicit stream sync.
            fn aclrtMemcpy(dst: *mut ::core::ffi::c_void, dest_max: usize, src: *const ::core::ffi::c_void, count: usize, kind: i32) -> $crate::AclError;
            /// `aclrtMemcpyAsync(dst, destMax, src, count, kind, stream)`: ordered on `stream`;
            /// truly asynchronous only with pinned host memory (`aclrtMallocHost`), with pageable
            /// host memory it returns after the copy.
            fn aclrtMemcpyAsync(dst: *mut ::core::ffi::c_void, dest_max: usize, src: *const ::core::ffi::c_void, count: usize, kind: i32, stream: $crate::AclrtStream) -> $crate::AclError;
        }
    };
}

/// Calls `$callback! { ... }` with every OPTIONAL ACL function this crate binds, in the
/// same item syntax as [`for_each_acl_function!`].
///
/// An optional symbol may be absent from the library (an older CANN, a trimmed build):
/// opening still succeeds, [`Acl::missing_optional`](crate::Acl::missing_optional) names it,
/// and its method returns [`Unavailable`](crate::Unavailable) instead of calling. The loader
/// looks each one up like a required symbol (the primary library, then `libacl_rt.so`). The
/// test fake exports these too.
#[macro_export]
macro_rules! for_each_optional_acl_function {
    ($callback:ident) => {
        $callback! {
            /// `aclrtSetExceptionInfoCallback(callback)`: install the process's one device
            /// fault notice handler (NULL unregisters). One slot per process: the last
            /// registration wins silently, and HCCL or the embedding runtime may own it
            /// (device-truth §4). Install it only when the embedding asks (SPEC L-19).
            fn aclrtSetExceptionInfoCallback(callback: $crate::AclrtExceptionInfoCallback) -> $crate::AclError;
            /// `aclrtGetDeviceIdFromExceptionInfo(info)`: the logical device id the notice
            /// names; 0xFFFFFFFF for NULL.
            fn aclrtGetDeviceIdFromExceptionInfo(info: *const $crate::AclrtExceptionInfo) -> u32;
            /// `aclrtGetStreamIdFromExceptionInfo(info)`: the stream id (as `aclrtStreamGetId`
            /// gives it); 0xFFFFFFFF for NULL.
            fn aclrtGetStreamIdFromExceptionInfo(info: *const $crate::AclrtExceptionInfo) -> u32;
            /// `aclrtGetTaskIdFromExceptionInfo(info)`: 0 for every error class on a2a3
            /// (device-truth §4); 0xFFFFFFFF for NULL.
            fn aclrtGetTaskIdFromExceptionInfo(info: *const $crate::AclrtExceptionInfo) -> u32;
            /// `aclrtGetThreadIdFromExceptionInfo(info)`: 0xFFFFFFFF for NULL.
            fn aclrtGetThreadIdFromExceptionInfo(info: *const $crate::AclrtExceptionInfo) -> u32;
            /// `aclrtGetErrorCodeFromExceptionInfo(info)`: the fault's code (e.g. 507018);
            /// 0xFFFFFFFF for NULL.
            fn aclrtGetErrorCodeFromExceptionInfo(info: *const $crate::AclrtExceptionInfo) -> u32;
            /// `aclrtStreamGetId(stream, &id)`: the stream's number, the one a fault notice
            /// names. Take it while the handle is live: the number survives the reset that
            /// kills the handle (device-truth §4).
            fn aclrtStreamGetId(stream: $crate::AclrtStream, stream_id: *mut i32) -> $crate::AclError;
            /// `aclrtEventGetTimestamp(event, &timestamp)`: when the tasks `event` captured
            /// finished, in MICROSECONDS of the device clock (device uptime on a2a3,
            /// ascend-cl.md §2.4). The event must be created with `ACL_EVENT_TIME_LINE` and
            /// have completed; the lane asks only then.
            fn aclrtEventGetTimestamp(event: $crate::AclrtEvent, timestamp: *mut u64) -> $crate::AclError;
        }
    };
}
