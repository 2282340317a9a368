//! The ACL functions' behaviour. Each has the exact signature `for_each_acl_function!`
//! declares (the exported wrappers call these, so a mismatch does not compile).

#![allow(non_snake_case)]

use core::ffi::{c_char, c_void};
use std::ffi::CString;
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use ascend_cl_sys::types::*;

use crate::RESET_UNDER_WAIT;
use crate::device::{
    Allocation, AsyncCopy, Capture, DEFAULT_SOC_NAME, Device, Event, EventState,
    NEVER_OP_TIMEOUT_US, SocName, State, Stream, Task, bind_current_thread, check_copy, copy,
    counted_wait, current, device_count, host_side, missing_stream, new_device_address, new_handle,
    process, retire_host, served, set_op_timeout_us, spawn_worker, thread_has_set, wait_inside,
};

/// Writes `value` through a caller's out-pointer, 100000 for NULL.
///
/// # Safety
///
/// `out` is NULL or valid for a write of `T`.
unsafe fn write_out<T>(out: *mut T, value: T) -> Result<(), AclError> {
    if out.is_null() {
        return Err(ACL_ERROR_INVALID_PARAM);
    }
    // SAFETY: non-NULL, and valid for a write by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

fn code(result: Result<(), AclError>) -> AclError {
    result.err().unwrap_or(ACL_SUCCESS)
}

/// A stream or event handle: 100000 for NULL (device-truth §6), else its table key.
fn handle(raw: *mut c_void) -> Result<u64, AclError> {
    if raw.is_null() {
        Err(ACL_ERROR_INVALID_PARAM)
    } else {
        Ok(raw as u64)
    }
}

/// A timeout argument: -1 forever, > 0 milliseconds, anything else 107000.
fn deadline(timeout_ms: i32) -> Result<Option<Instant>, AclError> {
    match timeout_ms {
        -1 => Ok(None),
        ms if ms > 0 => Ok(Some(
            Instant::now() + Duration::from_millis(ms.unsigned_abs().into()),
        )),
        _ => Err(ACL_ERROR_RT_PARAM_INVALID),
    }
}

pub(crate) unsafe fn aclInit(_config_path: *const c_char) -> AclError {
    if std::mem::replace(&mut process().initialised, true) {
        ACL_ERROR_REPEAT_INITIALIZE
    } else {
        ACL_SUCCESS
    }
}

pub(crate) unsafe fn aclFinalize() -> AclError {
    if std::mem::replace(&mut process().initialised, false) {
        ACL_SUCCESS
    } else {
        ACL_ERROR_REPEAT_FINALIZE
    }
}

pub(crate) unsafe fn aclGetRecentErrMsg() -> *const c_char {
    crate::take_error_message()
}

/// Binds the calling thread to `device_id`'s current context (switching from any other
/// device it was bound to). The call draws the rules of the device it names.
pub(crate) unsafe fn aclrtSetDevice(device_id: i32) -> AclError {
    let Some(device) = served(device_id) else {
        return ACL_ERROR_RT_INVALID_DEVICEID;
    };
    let mut state = device.lock();
    if let Some(code) = state.injected_failure("aclrtSetDevice") {
        return code;
    }
    bind_current_thread(device, &state);
    ACL_SUCCESS
}

/// Kills `device_id`'s streams, events and allocations and starts its next context
/// generation; other devices and the threads bound to them are untouched. The calling thread
/// must have called `aclrtSetDevice(device_id)` since that device's last reset (it need not
/// be its current device): otherwise 507007 and nothing is reset, as a second force reset
/// with no set device in between is on ACL (device-truth §5).
pub(crate) unsafe fn aclrtResetDeviceForce(device_id: i32) -> AclError {
    let Some(device) = served(device_id) else {
        return ACL_ERROR_RT_INVALID_DEVICEID;
    };
    let mut state = device.lock();
    if let Some(code) = state.injected_failure("aclrtResetDeviceForce") {
        return code;
    }
    if !thread_has_set(device, &state) {
        return ACL_ERROR_RT_CONTEXT_RELEASE_ERROR;
    }
    state.force_reset();
    let drops_callback = state.semantics.reset_drops_exception_callback;
    drop(state);
    // Wakes this device's waiters (their context is gone: RESET_UNDER_WAIT) and its stream
    // workers (their streams are gone: they exit).
    device.notify();
    if drops_callback {
        // Outside the device's lock, as every use of the slot is.
        crate::notice::set_callback(None);
    }
    ACL_SUCCESS
}

pub(crate) unsafe fn aclrtGetDeviceCount(count: *mut u32) -> AclError {
    // SAFETY: the caller passes NULL or a writable u32.
    code(unsafe { write_out(count, device_count()) })
}

pub(crate) unsafe fn aclrtGetSocName() -> *const c_char {
    static DEFAULT: std::sync::OnceLock<CString> = std::sync::OnceLock::new();
    let process = process();
    match &process.soc_name {
        // The default lives forever; a custom name lives until the next set or reset, as the
        // documentation of `runlanefake_set_soc_name` says.
        SocName::Default => DEFAULT
            .get_or_init(|| CString::new(DEFAULT_SOC_NAME).unwrap_or_default())
            .as_ptr(),
        SocName::Custom(name) => name.as_ptr(),
        SocName::Null => std::ptr::null(),
    }
}

/// Waits for the calling thread's current device only.
pub(crate) unsafe fn aclrtSynchronizeDeviceWithTimeout(timeout_ms: i32) -> AclError {
    let (device, state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    let deadline = match deadline(timeout_ms) {
        Ok(deadline) => deadline,
        Err(code) => return code,
    };
    if state.all_idle() {
        return state.first_stream_error().unwrap_or(ACL_SUCCESS);
    }
    counted_wait(state, |mut state, generation| {
        loop {
            if state.all_idle() {
                let code = state.first_stream_error().unwrap_or(ACL_SUCCESS);
                return (state, code);
            }
            let expired;
            (state, expired) = match wait_inside(device, state, deadline, generation) {
                Ok(woken) => woken,
                Err(state) => return (state, RESET_UNDER_WAIT),
            };
            if expired && !state.all_idle() {
                return (state, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
            }
        }
    })
}

pub(crate) unsafe fn aclrtSetOpExecuteTimeOutV2(
    timeout_us: u64,
    actual_timeout_us: *mut u64,
) -> AclError {
    // Process-wide (device-truth §5): one value for every device's kernels. Any thread may
    // set it, bound or not [I: the CANN docs do not say it needs a device].
    // A NULL `actualTimeout` is 100000 and sets nothing (device-truth §6).
    if actual_timeout_us.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    // 0 is the maximum: never times out (device-truth §6); the fake reports it as u64::MAX [I].
    let timeout_us = if timeout_us == 0 {
        NEVER_OP_TIMEOUT_US
    } else {
        timeout_us
    };
    set_op_timeout_us(timeout_us);
    // SAFETY: non-NULL out-pointer from the caller, valid for a u64 write.
    code(unsafe { write_out(actual_timeout_us, timeout_us) })
}

pub(crate) unsafe fn aclrtCreateStreamWithConfig(
    stream: *mut AclrtStream,
    _priority: u32,
    _flag: u32,
) -> AclError {
    let (device, mut state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    if stream.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    let id = new_handle(device.id());
    let number = state.next_stream_number;
    state.next_stream_number = number.saturating_add(1);
    state.streams.insert(id, Stream::new(number));
    let worker = match spawn_worker(device, id) {
        Ok(worker) => worker,
        Err(_) => {
            state.streams.remove(&id);
            return ACL_ERROR_RT_NO_STREAM_RESOURCE;
        }
    };
    state.workers.retain(|w| !w.is_finished());
    state.workers.push(worker);
    state.counters.streams_created += 1;
    state.refresh_live_counts();
    // SAFETY: non-NULL, and a writable aclrtStream by the caller's contract.
    code(unsafe { write_out(stream, id as AclrtStream) })
}

fn destroy_stream(stream: AclrtStream, wait: bool) -> AclError {
    let (device, mut state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    let id = match handle(stream) {
        Ok(id) => id,
        Err(code) => return code,
    };
    // Healthy teardown waits for the queued work (a hang ends at the op timeout).
    while wait && state.stream_idle(id) == Some(false) {
        state = device.wait(state, None).0;
    }
    if !state.streams.contains_key(&id) {
        drop(state);
        return missing_stream(device, id);
    }
    state.remove_stream(id);
    state.counters.streams_destroyed += 1;
    state.refresh_live_counts();
    drop(state);
    device.notify();
    ACL_SUCCESS
}

pub(crate) unsafe fn aclrtDestroyStream(stream: AclrtStream) -> AclError {
    destroy_stream(stream, true)
}

pub(crate) unsafe fn aclrtDestroyStreamForce(stream: AclrtStream) -> AclError {
    destroy_stream(stream, false)
}

pub(crate) unsafe fn aclrtCreateEventExWithFlag(event: *mut AclrtEvent, flag: u32) -> AclError {
    let (device, mut state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    if event.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    if flag == 0 {
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    let id = new_handle(device.id());
    state.events.insert(
        id,
        Event {
            capture: Capture::Complete,
            sync: flag & ACL_EVENT_SYNC != 0,
        },
    );
    state.counters.events_created += 1;
    state.refresh_live_counts();
    // SAFETY: non-NULL, and a writable aclrtEvent by the caller's contract.
    code(unsafe { write_out(event, id as AclrtEvent) })
}

pub(crate) unsafe fn aclrtRecordEvent(event: AclrtEvent, stream: AclrtStream) -> AclError {
    let (device, mut state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    let (event, stream) = match handle(event).and_then(|e| Ok((e, handle(stream)?))) {
        Ok(handles) => handles,
        Err(code) => return code,
    };
    let Some(upto) = state.streams.get(&stream).map(|s| s.submitted) else {
        drop(state);
        return missing_stream(device, stream);
    };
    // An event of another device is not one of this context's handles: 107017 [I].
    if !state.events.contains_key(&event) {
        return ACL_ERROR_RT_INVALID_HANDLE;
    }
    if state.refuses_enqueue(stream) {
        return ACL_ERROR_RT_DRV_INTERNAL_ERROR;
    }
    if let Some(event) = state.events.get_mut(&event) {
        event.capture = Capture::Pending { stream, upto };
    }
    ACL_SUCCESS
}

pub(crate) unsafe fn aclrtQueryEventStatus(event: AclrtEvent, status: *mut i32) -> AclError {
    let (_, state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    let event = match handle(event) {
        Ok(event) => event,
        Err(code) => return code,
    };
    let Some(capture) = state.events.get(&event).map(|e| e.capture) else {
        return ACL_ERROR_RT_INVALID_HANDLE;
    };
    let value = match state.event_state(capture) {
        EventState::Complete => ACL_EVENT_RECORDED_STATUS_COMPLETE,
        EventState::NotReady => ACL_EVENT_RECORDED_STATUS_NOT_READY,
        EventState::Failed(code) => return code,
    };
    // SAFETY: the caller passes NULL or a writable i32.
    code(unsafe { write_out(status, value) })
}

pub(crate) unsafe fn aclrtSynchronizeEventWithTimeout(
    event: AclrtEvent,
    timeout_ms: i32,
) -> AclError {
    let (device, state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    let deadline = match deadline(timeout_ms) {
        Ok(deadline) => deadline,
        Err(code) => return code,
    };
    if event.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    let key = event as u64;
    let stall = state.semantics.event_wait_stall_ms;
    counted_wait(state, |mut state, generation| {
        // A hung driver call: inside the wait, whatever its timeout (SWITCH_EVENT_WAIT_STALL_MS).
        if stall > 0 {
            let until = Instant::now() + Duration::from_millis(stall.into());
            loop {
                match wait_inside(device, state, Some(until), generation) {
                    Ok((woken, true)) => {
                        state = woken;
                        break;
                    }
                    Ok((woken, false)) => state = woken,
                    Err(state) => return (state, RESET_UNDER_WAIT),
                }
            }
        }
        loop {
            // Gone: destroyed meanwhile (a force reset of this device ends the wait below).
            let Some(capture) = state.events.get(&key).map(|e| e.capture) else {
                return (state, ACL_ERROR_RT_INVALID_HANDLE);
            };
            match state.event_state(capture) {
                EventState::Complete => return (state, ACL_SUCCESS),
                EventState::Failed(code) => return (state, code),
                EventState::NotReady => {}
            }
            state.counters.blocked_event_syncs += 1;
            let woken = wait_inside(device, state, deadline, generation);
            let expired;
            (state, expired) = match woken {
                Ok(woken) => woken,
                Err(mut state) => {
                    // A whole-fake reset meanwhile zeroed the counters.
                    state.counters.blocked_event_syncs =
                        state.counters.blocked_event_syncs.saturating_sub(1);
                    return (state, RESET_UNDER_WAIT);
                }
            };
            state.counters.blocked_event_syncs =
                state.counters.blocked_event_syncs.saturating_sub(1);
            if expired {
                let still_pending = state
                    .events
                    .get(&key)
                    .is_some_and(|e| matches!(state.event_state(e.capture), EventState::NotReady));
                if still_pending {
                    return (state, ACL_ERROR_RT_EVENT_SYNC_TIMEOUT);
                }
            }
        }
    })
}

pub(crate) unsafe fn aclrtStreamWaitEvent(stream: AclrtStream, event: AclrtEvent) -> AclError {
    let (device, mut state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    let (stream, event) = match handle(stream).and_then(|s| Ok((s, handle(event)?))) {
        Ok(handles) => handles,
        Err(code) => return code,
    };
    let Some(event) = state.events.get(&event) else {
        return ACL_ERROR_RT_INVALID_HANDLE;
    };
    // A cross-stream wait needs ACL_EVENT_SYNC: 207000 without it (device-truth §6).
    if !event.sync {
        return ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
    }
    let capture = event.capture;
    if !state.streams.contains_key(&stream) {
        drop(state);
        return missing_stream(device, stream);
    }
    if state.refuses_enqueue(stream) {
        return ACL_ERROR_RT_DRV_INTERNAL_ERROR;
    }
    let Some(s) = state.streams.get_mut(&stream) else {
        return ACL_ERROR_RT_INVALID_HANDLE;
    };
    s.enqueue(Task::Wait(capture));
    state.counters.stream_waits += 1;
    drop(state);
    device.notify();
    ACL_SUCCESS
}

pub(crate) unsafe fn aclrtDestroyEvent(event: AclrtEvent) -> AclError {
    let (device, mut state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    if event.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    if state.events.remove(&(event as u64)).is_none() {
        return ACL_ERROR_RT_INVALID_HANDLE;
    }
    state.counters.events_destroyed += 1;
    state.refresh_live_counts();
    drop(state);
    device.notify();
    ACL_SUCCESS
}

/// ACL pads every device allocation (ascend-cl.md §2.5); the fake does too, and checks
/// bounds against the size asked for.
const PADDING: usize = 32;

pub(crate) unsafe fn aclrtMalloc(dev_ptr: *mut *mut c_void, size: usize, _policy: i32) -> AclError {
    let (_, mut state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    if dev_ptr.is_null() || size == 0 {
        return ACL_ERROR_INVALID_PARAM;
    }
    let Some(padded) = size.checked_add(PADDING) else {
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    };
    let mut data = Vec::new();
    if data.try_reserve_exact(padded).is_err() {
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    data.resize(padded, 0_u8);
    let data = data.into_boxed_slice();
    // An address of the fake's own device address space, never handed out before.
    let Some(address) = new_device_address(padded) else {
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    };
    state.allocations.insert(address, Allocation { data, size });
    state.counters.mallocs += 1;
    state.refresh_live_counts();
    // SAFETY: non-NULL, and a writable pointer slot by the caller's contract.
    code(unsafe { write_out(dev_ptr, address as *mut c_void) })
}

pub(crate) unsafe fn aclrtFree(dev_ptr: *mut c_void) -> AclError {
    let (_, mut state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    if dev_ptr.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    if state.allocations.remove(&(dev_ptr as usize)).is_none() {
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    state.counters.frees += 1;
    state.refresh_live_counts();
    ACL_SUCCESS
}

pub(crate) unsafe fn aclrtMallocHost(host_ptr: *mut *mut c_void, size: usize) -> AclError {
    let (_, mut state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    if host_ptr.is_null() || size == 0 {
        return ACL_ERROR_INVALID_PARAM;
    }
    let mut data = Vec::new();
    if data.try_reserve_exact(size).is_err() {
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    data.resize(size, 0_u8);
    let mut data = data.into_boxed_slice();
    let address = data.as_mut_ptr();
    state.host_allocations.insert(address as usize, data);
    state.counters.host_mallocs += 1;
    state.refresh_live_counts();
    // SAFETY: non-NULL, and a writable pointer slot by the caller's contract.
    code(unsafe { write_out(host_ptr, address.cast::<c_void>()) })
}

pub(crate) unsafe fn aclrtFreeHost(host_ptr: *mut c_void) -> AclError {
    let (_, mut state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    if host_ptr.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    let Some(data) = state.host_allocations.remove(&(host_ptr as usize)) else {
        return ACL_ERROR_RT_PARAM_INVALID;
    };
    // Kept until `runlanefake_reset`, so the address is not handed out again before then.
    retire_host(data);
    state.counters.host_frees += 1;
    state.refresh_live_counts();
    ACL_SUCCESS
}

pub(crate) unsafe fn aclrtMemcpy(
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
) -> AclError {
    let (_, mut state) = match checked_copy(dst, dest_max, src, count, kind) {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    code(copy(&mut state, dst as usize, src as usize, count, kind))
}

/// The calling thread's current device, locked, once the copy's arguments are valid on it
/// (`aclrtMemcpy` and `aclrtMemcpyAsync` check the same way; memory of another device is not
/// in this device's table: 107000, as an unknown address [I]).
fn checked_copy(
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
) -> Result<(&'static Device, MutexGuard<'static, State>), AclError> {
    let (device, mut state) = current()?;
    check_copy(
        &mut state,
        dst as usize,
        dest_max,
        src as usize,
        count,
        kind,
    )?;
    Ok((device, state))
}

pub(crate) unsafe fn aclrtMemcpyAsync(
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
    stream: AclrtStream,
) -> AclError {
    // ascend-cl.md §2.5: host to host is not supported in EP mode.
    if kind == ACL_MEMCPY_HOST_TO_HOST {
        return ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
    }
    let (device, mut state) = match checked_copy(dst, dest_max, src, count, kind) {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    let id = match handle(stream) {
        Ok(id) => id,
        Err(code) => return code,
    };
    if !state.streams.contains_key(&id) {
        drop(state);
        return missing_stream(device, id);
    }
    if state.refuses_enqueue(id) {
        return ACL_ERROR_RT_DRV_INTERNAL_ERROR;
    }
    let host = host_side(kind, dst as usize, src as usize);
    let pinned = host.is_some_and(|address| state.pinned(address, count));
    let pageable = host.is_some() && !pinned;
    let fail = state.apply_copy_fault();
    state.counters.async_copies += 1;
    let Some(s) = state.streams.get_mut(&id) else {
        return ACL_ERROR_RT_INVALID_HANDLE;
    };
    s.enqueue(Task::Copy(AsyncCopy {
        dst: dst as usize,
        src: src as usize,
        count,
        kind,
        pinned,
        fail,
    }));
    let index = s.submitted;
    if pageable {
        s.watched.insert(index, None);
    }
    device.notify();
    if !pageable {
        return ACL_SUCCESS;
    }
    // Pageable host memory: ordered on the stream, but the call returns only after the copy
    // ran (ascend-cl.md §2.5), so the caller's buffer is alive while the worker uses it. It
    // returns the copy's own code (the stream's earlier faults do not stop it); under the
    // legacy switch a faulted stream never reaches the copy, and the sticky code returns.
    loop {
        let legacy = state.semantics.legacy_event_faults;
        let Some(s) = state.streams.get_mut(&id) else {
            return ACL_ERROR_RT_STREAM_ABORT;
        };
        if let Some(&Some(code)) = s.watched.get(&index) {
            s.watched.remove(&index);
            return code;
        }
        if legacy {
            if let Some(code) = s.error {
                s.watched.remove(&index);
                return code;
            }
        }
        state = device.wait(state, None).0;
    }
}

/// Waits for every task submitted to `stream` so far, then returns its sticky code (0 if
/// none): the call that materializes a device fault (device-truth §1). The calling thread's
/// last error becomes any code it returns.
pub(crate) unsafe fn aclrtSynchronizeStreamWithTimeout(
    stream: AclrtStream,
    timeout_ms: i32,
) -> AclError {
    let result = synchronize_stream(stream, timeout_ms);
    if result != ACL_SUCCESS {
        crate::set_last_error(result);
    }
    result
}

fn synchronize_stream(stream: AclrtStream, timeout_ms: i32) -> AclError {
    let (device, mut state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    // A zero timeout is refused (device-truth §1): no non-blocking form.
    let deadline = match deadline(timeout_ms) {
        Ok(deadline) => deadline,
        Err(code) => return code,
    };
    let id = match handle(stream) {
        Ok(id) => id,
        Err(code) => return code,
    };
    let Some(upto) = state.streams.get(&id).map(|s| s.submitted) else {
        drop(state);
        return missing_stream(device, id);
    };
    state.counters.stream_syncs += 1;
    counted_wait(state, |mut state, generation| {
        loop {
            let legacy = state.semantics.legacy_event_faults;
            // Gone meanwhile: destroyed (a force reset of this device ends the wait below).
            let Some(s) = state.streams.get(&id) else {
                return (state, ACL_ERROR_RT_INVALID_HANDLE);
            };
            if s.completed >= upto || (legacy && s.error.is_some()) {
                let code = s.error.unwrap_or(ACL_SUCCESS);
                return (state, code);
            }
            let expired;
            (state, expired) = match wait_inside(device, state, deadline, generation) {
                Ok(woken) => woken,
                Err(state) => return (state, RESET_UNDER_WAIT),
            };
            if expired {
                let done = state
                    .streams
                    .get(&id)
                    .is_none_or(|s| s.completed >= upto || (legacy && s.error.is_some()));
                if !done {
                    return (state, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
                }
            }
        }
    })
}

/// The process's one callback slot: the last registration wins silently, NULL clears it;
/// needs no binding. A force reset keeps it, or empties it under
/// [`SWITCH_RESET_DROPS_EXCEPTION_CALLBACK`](crate::SWITCH_RESET_DROPS_EXCEPTION_CALLBACK)
/// \[I: not measured, device-truth §4\].
pub(crate) unsafe fn aclrtSetExceptionInfoCallback(
    callback: AclrtExceptionInfoCallback,
) -> AclError {
    crate::notice::set_callback(callback);
    ACL_SUCCESS
}

pub(crate) unsafe fn aclrtGetDeviceIdFromExceptionInfo(info: *const AclrtExceptionInfo) -> u32 {
    // SAFETY: the caller passes NULL or the info of a callback that is running.
    unsafe { crate::notice::read(info, |i| i.device_id) }
}

pub(crate) unsafe fn aclrtGetStreamIdFromExceptionInfo(info: *const AclrtExceptionInfo) -> u32 {
    // SAFETY: as above.
    unsafe { crate::notice::read(info, |i| i.stream_id) }
}

pub(crate) unsafe fn aclrtGetTaskIdFromExceptionInfo(info: *const AclrtExceptionInfo) -> u32 {
    // SAFETY: as above.
    unsafe { crate::notice::read(info, |i| i.task_id) }
}

pub(crate) unsafe fn aclrtGetThreadIdFromExceptionInfo(info: *const AclrtExceptionInfo) -> u32 {
    // SAFETY: as above.
    unsafe { crate::notice::read(info, |i| i.thread_id) }
}

pub(crate) unsafe fn aclrtGetErrorCodeFromExceptionInfo(info: *const AclrtExceptionInfo) -> u32 {
    // SAFETY: as above.
    unsafe { crate::notice::read(info, |i| i.error_code) }
}

/// A live stream of the calling thread's current device: its number, small, unique on the
/// device and never reused until `runlanefake_reset` (a number taken before a force reset
/// names no later stream) \[I: real ACL may reuse a destroyed stream's id\]. NULL stream or
/// out-pointer 100000; a dead stream 107017; a live stream of another device 107003.
pub(crate) unsafe fn aclrtStreamGetId(stream: AclrtStream, stream_id: *mut i32) -> AclError {
    let (device, state) = match current() {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    let id = match handle(stream) {
        Ok(id) => id,
        Err(code) => return code,
    };
    if stream_id.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    let Some(number) = state.stream_number(id) else {
        drop(state);
        return missing_stream(device, id);
    };
    // SAFETY: non-NULL, and a writable i32 by the caller's contract.
    code(unsafe { write_out(stream_id, number) })
}
