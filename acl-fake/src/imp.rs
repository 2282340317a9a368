//! The ACL functions' behaviour. Each has the exact signature `for_each_acl_function!`
//! declares (the exported wrappers call these, so a mismatch does not compile).

#![allow(non_snake_case)]

use core::ffi::{c_char, c_void};
use std::ffi::CString;
use std::sync::{Arc, Condvar, MutexGuard};
use std::time::{Duration, Instant};

use ascend_cl_sys::types::*;
use device_model::faults::{Injected, Site};
use device_model::{CallError, CopySpec, Dead, EventState, Place, RecordRun};

use crate::RESET_UNDER_WAIT;
use crate::device::{
    DEFAULT_SOC_NAME, Device, FakeHost, NEVER_OP_TIMEOUT_US, SocName, State, bind_current_thread,
    check_copy, counted_wait, current, device_count, device_now_ns, host_side, missing_stream,
    new_device_address, new_handle, process, retire_host, served, set_op_timeout_us, spawn_worker,
    thread_has_set, wait_inside,
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

/// A model call's error as ACL gives it: a dead stream 107003 when it is a live stream of
/// another device, 107017 otherwise; a dead event 107017; an address outside every
/// allocation 107000. Takes the device's lock back from the caller (a foreign stream's check
/// takes the other device's).
fn refused(device: &Device, state: MutexGuard<'_, State>, error: CallError) -> AclError {
    match error {
        CallError::Code(code) => code.raw(),
        CallError::Dead(Dead::Stream(id)) => {
            drop(state);
            missing_stream(device, id)
        }
        CallError::Dead(Dead::Event(_)) => ACL_ERROR_RT_INVALID_HANDLE,
        CallError::Dead(Dead::Memory(_)) => ACL_ERROR_RT_PARAM_INVALID,
    }
}

/// A stream or event handle: 100000 for NULL (device-truth §6), else its table key.
fn handle(raw: *mut c_void) -> Result<u64, AclError> {
    if raw.is_null() { Err(ACL_ERROR_INVALID_PARAM) } else { Ok(raw as u64) }
}

/// A timeout argument: -1 forever, > 0 milliseconds, anything else 107000.
fn deadline(timeout_ms: i32) -> Result<Option<Instant>, AclError> {
    match timeout_ms {
        -1 => Ok(None),
        ms if ms > 0 => Ok(Some(Instant::now() + Duration::from_millis(ms.unsigned_abs().into()))),
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
    if let Some(code) = state.model.decide_call("aclrtSetDevice") {
        return code;
    }
    // The `probe` fault site: every bind, as the recovery probe's first call.
    if let Some(Injected::Fail(code)) = state.model.decide(Site::Probe, None) {
        return code.raw();
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
    if let Some(code) = state.model.decide_call("aclrtResetDeviceForce") {
        return code;
    }
    if !thread_has_set(device, &state) {
        return ACL_ERROR_RT_CONTEXT_RELEASE_ERROR;
    }
    or_return!(state.force_reset());
    let drops_callback = state.model.semantics().reset_drops_exception_callback;
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
        SocName::Default => {
            DEFAULT.get_or_init(|| CString::new(DEFAULT_SOC_NAME).unwrap_or_default()).as_ptr()
        }
        SocName::Custom(name) => name.as_ptr(),
        SocName::Null => std::ptr::null(),
    }
}

/// Waits for the calling thread's current device only.
pub(crate) unsafe fn aclrtSynchronizeDeviceWithTimeout(timeout_ms: i32) -> AclError {
    let (device, state) = or_return!(current());
    let deadline = or_return!(deadline(timeout_ms));
    let drained = |state: &State| {
        state
            .model
            .device_code(device_now_ns())
            .err()
            .map_or(ACL_SUCCESS, status_latch::AclCode::raw)
    };
    if state.model.all_idle() {
        return drained(&state);
    }
    counted_wait(state, |mut state, generation| {
        loop {
            if state.model.all_idle() {
                let code = drained(&state);
                return (state, code);
            }
            let expired;
            (state, expired) = match wait_inside(device, state, deadline, generation) {
                Ok(woken) => woken,
                Err(state) => return (state, RESET_UNDER_WAIT),
            };
            if expired && !state.model.all_idle() {
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
    let timeout_us = if timeout_us == 0 { NEVER_OP_TIMEOUT_US } else { timeout_us };
    set_op_timeout_us(timeout_us);
    // SAFETY: non-NULL out-pointer from the caller, valid for a u64 write.
    code(unsafe { write_out(actual_timeout_us, timeout_us) })
}

pub(crate) unsafe fn aclrtCreateStreamWithConfig(
    stream: *mut AclrtStream,
    _priority: u32,
    _flag: u32,
) -> AclError {
    let (device, mut state) = or_return!(current());
    if stream.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    let id = new_handle(device.id());
    if let Err(code) = state.model.create_stream(id, device_now_ns()) {
        return code.raw();
    }
    let wake = Arc::new(Condvar::new());
    let worker = match spawn_worker(device, id, Arc::clone(&wake)) {
        Ok(worker) => worker,
        Err(_) => {
            let _ = state.model.destroy_stream(id, device_now_ns());
            return ACL_ERROR_RT_NO_STREAM_RESOURCE;
        }
    };
    state.add_worker(id, worker, wake);
    state.counters.streams_created += 1;
    state.refresh_live_counts();
    // SAFETY: non-NULL, and a writable aclrtStream by the caller's contract.
    code(unsafe { write_out(stream, id as AclrtStream) })
}

fn destroy_stream(stream: AclrtStream, wait: bool) -> AclError {
    let (device, mut state) = or_return!(current());
    let id = or_return!(handle(stream));
    // Healthy teardown waits for the queued work (a hang ends at the op timeout).
    while wait && state.model.stream_busy(id) == Some(true) {
        state = device.wait(state, None).0;
        if state.advance() {
            device.notify();
        }
    }
    if let Err(error) = state.model.destroy_stream(id, device_now_ns()) {
        return refused(device, state, error);
    }
    // Its worker sees the stream gone and exits.
    state.refresh();
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
    let (device, mut state) = or_return!(current());
    if event.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    if flag == 0 {
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    let id = new_handle(device.id());
    let sync = flag & ACL_EVENT_SYNC != 0;
    if let Err(code) = state.model.create_event(id, sync, device_now_ns()) {
        return code.raw();
    }
    if flag & ACL_EVENT_TIME_LINE != 0 {
        state.timeline_events.insert(id);
    }
    state.counters.events_created += 1;
    state.refresh_live_counts();
    // SAFETY: non-NULL, and a writable aclrtEvent by the caller's contract.
    code(unsafe { write_out(event, id as AclrtEvent) })
}

pub(crate) unsafe fn aclrtRecordEvent(event: AclrtEvent, stream: AclrtStream) -> AclError {
    let (device, mut state) = or_return!(current());
    let (event, stream) = or_return!(handle(event).and_then(|e| Ok((e, handle(stream)?))));
    // An event of another device is not one of this context's handles: 107017 [I]. The
    // `event-record` site names the run of the stream's last kernel.
    let recorded =
        state.model.record_event(event, stream, RecordRun::LastKernel, 0, device_now_ns());
    if let Err(error) = recorded {
        return refused(device, state, error);
    }
    state.refresh();
    ACL_SUCCESS
}

pub(crate) unsafe fn aclrtQueryEventStatus(event: AclrtEvent, status: *mut i32) -> AclError {
    let (_, state) = or_return!(current());
    let event = or_return!(handle(event));
    let value = match state.model.event_state(event) {
        None => return ACL_ERROR_RT_INVALID_HANDLE,
        Some(EventState::Complete) => ACL_EVENT_RECORDED_STATUS_COMPLETE,
        Some(EventState::NotReady) => ACL_EVENT_RECORDED_STATUS_NOT_READY,
        Some(EventState::Failed(code)) => return code.raw(),
    };
    // SAFETY: the caller passes NULL or a writable i32.
    code(unsafe { write_out(status, value) })
}

pub(crate) unsafe fn aclrtSynchronizeEventWithTimeout(
    event: AclrtEvent,
    timeout_ms: i32,
) -> AclError {
    let (device, mut state) = or_return!(current());
    let deadline = or_return!(deadline(timeout_ms));
    let key = or_return!(handle(event));
    // The `event-wait` site names the run whose launch recorded the event.
    if state.model.has_event(key) {
        let run = state.model.event_run(key);
        if let Some(Injected::Fail(code)) = state.model.decide(Site::EventWait, run) {
            return code.raw();
        }
    }
    let stall = state.event_wait_stall_ms;
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
            match state.model.event_state(key) {
                None => return (state, ACL_ERROR_RT_INVALID_HANDLE),
                Some(EventState::Complete) => return (state, ACL_SUCCESS),
                Some(EventState::Failed(code)) => return (state, code.raw()),
                Some(EventState::NotReady) => {}
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
                let still_pending = state.model.event_state(key) == Some(EventState::NotReady);
                if still_pending {
                    return (state, ACL_ERROR_RT_EVENT_SYNC_TIMEOUT);
                }
            }
        }
    })
}

pub(crate) unsafe fn aclrtStreamWaitEvent(stream: AclrtStream, event: AclrtEvent) -> AclError {
    let (device, mut state) = or_return!(current());
    let (stream, event) = or_return!(handle(stream).and_then(|s| Ok((s, handle(event)?))));
    // A cross-stream wait needs ACL_EVENT_SYNC: 207000 without it (device-truth §6).
    let waited = state.model.stream_wait_event(stream, event, 0, device_now_ns());
    if let Err(error) = waited {
        return refused(device, state, error);
    }
    state.refresh();
    state.counters.stream_waits += 1;
    drop(state);
    device.notify();
    ACL_SUCCESS
}

pub(crate) unsafe fn aclrtDestroyEvent(event: AclrtEvent) -> AclError {
    let (device, mut state) = or_return!(current());
    let event = or_return!(handle(event));
    if !state.model.destroy_event(event) {
        return ACL_ERROR_RT_INVALID_HANDLE;
    }
    state.timeline_events.remove(&event);
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
    let (_, mut state) = or_return!(current());
    if dev_ptr.is_null() || size == 0 {
        return ACL_ERROR_INVALID_PARAM;
    }
    let Some(padded) = size.checked_add(PADDING) else {
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    };
    if let Err(code) = state.model.check_malloc(size, device_now_ns()) {
        return code.raw();
    }
    // An address of the fake's own device address space, never handed out before.
    let Some(address) = new_device_address(padded) else {
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    };
    state.model.allocate(address as u64, size);
    state.counters.mallocs += 1;
    state.refresh_live_counts();
    // SAFETY: non-NULL, and a writable pointer slot by the caller's contract.
    code(unsafe { write_out(dev_ptr, address as *mut c_void) })
}

pub(crate) unsafe fn aclrtFree(dev_ptr: *mut c_void) -> AclError {
    let (_, mut state) = or_return!(current());
    if dev_ptr.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    if state.model.free(dev_ptr as u64).is_err() {
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    state.counters.frees += 1;
    state.refresh_live_counts();
    ACL_SUCCESS
}

pub(crate) unsafe fn aclrtMallocHost(host_ptr: *mut *mut c_void, size: usize) -> AclError {
    let (_, mut state) = or_return!(current());
    if host_ptr.is_null() || size == 0 {
        return ACL_ERROR_INVALID_PARAM;
    }
    if let Err(code) = state.model.check_malloc(size, device_now_ns()) {
        return code.raw();
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
    let (_, mut state) = or_return!(current());
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
    let (_, mut state) = or_return!(checked_copy(dst, dest_max, src, count, kind));
    let now = device_now_ns();
    let result = match kind {
        ACL_MEMCPY_HOST_TO_DEVICE => {
            // SAFETY: `src` is a host pointer valid for `count` bytes (the call's contract).
            let bytes = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), count) };
            state.model.write(dst as u64, bytes, now)
        }
        ACL_MEMCPY_DEVICE_TO_HOST => {
            // SAFETY: `dst` is a host pointer valid for `count` writable bytes (the call's
            // contract).
            let out = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), count) };
            state.model.read(out, src as u64, now)
        }
        ACL_MEMCPY_DEVICE_TO_DEVICE => {
            state.model.copy_within(dst as u64, src as u64, count).map_err(CallError::Code)
        }
        _ => {
            // SAFETY: both are host pointers valid for `count` bytes (the call's contract); a
            // host-to-host copy through the fake may overlap, as `memmove` allows.
            unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), count) };
            Ok(())
        }
    };
    match result {
        Ok(()) => ACL_SUCCESS,
        Err(CallError::Code(code)) => code.raw(),
        Err(CallError::Dead(_)) => ACL_ERROR_RT_PARAM_INVALID,
    }
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
    let (device, state) = current()?;
    check_copy(&state, dst as usize, dest_max, src as usize, count, kind)?;
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
    let (device, mut state) = or_return!(checked_copy(dst, dest_max, src, count, kind));
    let id = or_return!(handle(stream));
    let host = host_side(kind, dst as usize, src as usize);
    let pinned = host.is_some_and(|address| state.pinned(address, count));
    let pageable = host.is_some() && !pinned;
    let place = |address: *const c_void, on_device: bool| {
        if on_device {
            Place::Device(address as u64)
        } else {
            Place::Host { addr: address as u64, pinned }
        }
    };
    let spec = CopySpec {
        src: place(src, kind != ACL_MEMCPY_HOST_TO_DEVICE),
        dst: place(dst, kind != ACL_MEMCPY_DEVICE_TO_HOST),
        len: count,
    };
    let state_ref = &mut *state;
    let host_memory = FakeHost { pinned: &mut state_ref.host_allocations };
    let enqueued =
        state_ref.model.enqueue_copy(id, spec, &host_memory, pageable, 0, device_now_ns());
    let seq = match enqueued {
        Ok(seq) => seq,
        Err(error) => return refused(device, state, error),
    };
    state.refresh();
    state.counters.async_copies += 1;
    device.notify();
    if !pageable {
        return ACL_SUCCESS;
    }
    // Pageable host memory: ordered on the stream, but the call returns only after the copy
    // ran (ascend-cl.md §2.5), so the caller's buffer is alive while the device uses it. It
    // returns the copy's own code (the stream's earlier faults do not stop it); under the
    // legacy switch a faulted stream never reaches the copy, and the sticky code returns.
    loop {
        if !state.model.has_stream(id) {
            return ACL_ERROR_RT_STREAM_ABORT;
        }
        if let Some(result) = state.model.task_result(id, seq) {
            return result.err().map_or(ACL_SUCCESS, status_latch::AclCode::raw);
        }
        if state.model.semantics().legacy_event_faults {
            if let Ok(Some(code)) = state.model.stream_sticky(id, device_now_ns()) {
                return code.raw();
            }
        }
        state = device.wait(state, None).0;
        if state.advance() {
            device.notify();
        }
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
    let (device, mut state) = or_return!(current());
    // A zero timeout is refused (device-truth §1): no non-blocking form.
    let deadline = or_return!(deadline(timeout_ms));
    let id = or_return!(handle(stream));
    let Some(upto) = state.model.stream_submitted(id) else {
        drop(state);
        return missing_stream(device, id);
    };
    state.counters.stream_syncs += 1;
    counted_wait(state, |mut state, generation| {
        loop {
            // Gone meanwhile: destroyed (a force reset of this device ends the wait below).
            let Ok(sticky) = state.model.stream_sticky(id, device_now_ns()) else {
                return (state, ACL_ERROR_RT_INVALID_HANDLE);
            };
            if state.model.stream_reached(id, upto) {
                let code = sticky.map_or(ACL_SUCCESS, status_latch::AclCode::raw);
                return (state, code);
            }
            let expired;
            (state, expired) = match wait_inside(device, state, deadline, generation) {
                Ok(woken) => woken,
                Err(state) => return (state, RESET_UNDER_WAIT),
            };
            if expired {
                let done = state.model.stream_reached(id, upto);
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

/// The fake's device clock is real time ([`device_now_ns`]); the timestamp is when the
/// event's record task passed, in microseconds (floored), as ACL gives it. An event without
/// `ACL_EVENT_TIME_LINE`, or whose capture has not completed (never recorded, pending,
/// aborted), is 107000.
pub(crate) unsafe fn aclrtEventGetTimestamp(event: AclrtEvent, timestamp: *mut u64) -> AclError {
    let (_, state) = or_return!(current());
    let event = or_return!(handle(event));
    if timestamp.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    let passed = match state.model.event_passed(event) {
        None if !state.model.has_event(event) => return ACL_ERROR_RT_INVALID_HANDLE,
        Some(Some(at)) if state.timeline_events.contains(&event) => at,
        _ => return ACL_ERROR_RT_PARAM_INVALID,
    };
    // SAFETY: non-NULL, and a writable u64 by the caller's contract.
    code(unsafe { write_out(timestamp, passed / 1_000) })
}

/// A live stream of the calling thread's current device: its number, small, unique on the
/// device and never reused until `runlanefake_reset` (a number taken before a force reset
/// names no later stream) \[I: real ACL may reuse a destroyed stream's id\]. NULL stream or
/// out-pointer 100000; a dead stream 107017; a live stream of another device 107003.
pub(crate) unsafe fn aclrtStreamGetId(stream: AclrtStream, stream_id: *mut i32) -> AclError {
    let (device, state) = or_return!(current());
    let id = or_return!(handle(stream));
    if stream_id.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    let Some(number) = state.model.stream_number(id) else {
        drop(state);
        return missing_stream(device, id);
    };
    // SAFETY: non-NULL, and a writable i32 by the caller's contract.
    code(unsafe { write_out(stream_id, number) })
}
