//! The control functions' behaviour: the `runlanefake_*` entry points' bodies.

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

/// The device a per-device control function names: any id below [`MAX_DEVICES`], served
/// or not; 107001 otherwise.
fn named(device_id: i32) -> Result<&'static Device, AclError> {
    u32::try_from(device_id).ok().and_then(device::device).ok_or(ACL_ERROR_RT_INVALID_DEVICEID)
}

fn code(result: Result<(), AclError>) -> AclError {
    result.err().unwrap_or(ACL_SUCCESS)
}

pub(super) unsafe fn runlanefake_reset() -> AclError {
    crate::notice::reset();
    LAST_ERROR_RESETS.fetch_add(1, Ordering::AcqRel);
    for worker in device::reset_all() {
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
    // SAFETY: the caller's contract, forwarded; no run, no record.
    unsafe {
        runlanefake_launch_run(
            stream,
            engine,
            duration_ns,
            outcome,
            timing,
            header,
            header_bytes,
            header_len,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn runlanefake_launch_run(
    stream: AclrtStream,
    engine: u32,
    duration_ns: u64,
    outcome: u32,
    timing: *mut c_void,
    header: *mut c_void,
    header_bytes: *const u8,
    header_len: usize,
    handshake: *mut c_void,
    record: *mut c_void,
    epoch: u64,
) -> AclError {
    // SAFETY: the caller's contract, forwarded; no run id.
    unsafe {
        runlanefake_launch_run_id(
            stream,
            engine,
            duration_ns,
            outcome,
            timing,
            header,
            header_bytes,
            header_len,
            handshake,
            record,
            epoch,
            0,
        )
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn runlanefake_launch_run_id(
    stream: AclrtStream,
    engine: u32,
    duration_ns: u64,
    outcome: u32,
    timing: *mut c_void,
    header: *mut c_void,
    header_bytes: *const u8,
    header_len: usize,
    handshake: *mut c_void,
    record: *mut c_void,
    epoch: u64,
    run: u64,
) -> AclError {
    // SAFETY: the caller's contract for `header_bytes`.
    let header_bytes = or_return!(unsafe { bytes_from(header_bytes, header_len) });
    let (device, mut state) = or_return!(device::current());
    if stream.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    let Some(outcome) = Outcome::from_raw(outcome) else {
        return ACL_ERROR_RT_PARAM_INVALID;
    };
    let engine = match engine {
        ENGINE_AICORE => Engine::Aicore,
        ENGINE_AICPU => Engine::Aicpu,
        _ => return ACL_ERROR_RT_PARAM_INVALID,
    };
    let address = |pointer: *mut c_void| (!pointer.is_null()).then_some(pointer as u64);
    let spec = KernelSpec {
        outcome: outcome.model(),
        timing: address(timing),
        header: address(header),
        header_bytes,
        run: address(handshake).map(|handshake| RunKey { handshake, epoch }),
        record: address(record),
        epoch,
        run_id: (run != 0).then_some(run),
        ..KernelSpec::new(engine, duration_ns)
    };
    let id = stream as u64;
    let launched = match state.model.launch(id, spec, device::device_now_ns()) {
        Ok(launched) => launched,
        Err(device_model::CallError::Dead(_)) => {
            drop(state);
            return device::missing_stream(device, id);
        }
        Err(device_model::CallError::Code(code)) => return code.raw(),
    };
    state.refresh();
    state.counters.launches += 1;
    if engine == Engine::Aicpu && launched.queued {
        state.counters.queued_launches += 1;
    }
    drop(state);
    device.notify();
    ACL_SUCCESS
}

/// A switch and value as the device model keeps them: 107000 when unknown.
fn apply_semantics(
    semantics: &mut device_model::Semantics,
    switch: u32,
    value: u32,
) -> Result<(), AclError> {
    match (switch, value) {
        (
            SWITCH_ENQUEUE_AFTER_FAULT,
            ENQUEUE_AFTER_FAULT_ACCEPTED | ENQUEUE_AFTER_FAULT_REFUSED,
        ) => {
            semantics.refuse_enqueue_after_fault = value == ENQUEUE_AFTER_FAULT_REFUSED;
        }
        (SWITCH_OP_TIMEOUT_CODE_ON, OP_TIMEOUT_CODE_ON_OWN_STREAM) => {
            semantics.op_timeout_code_on = device_model::OpTimeoutCodeOn::OwnStream;
        }
        (SWITCH_OP_TIMEOUT_CODE_ON, OP_TIMEOUT_CODE_ON_PARTNER_STREAM) => {
            semantics.op_timeout_code_on = device_model::OpTimeoutCodeOn::PartnerStream;
        }
        (SWITCH_OP_TIMEOUT_CODE_ON, OP_TIMEOUT_CODE_ON_BOTH_STREAMS) => {
            semantics.op_timeout_code_on = device_model::OpTimeoutCodeOn::BothStreams;
        }
        (SWITCH_LEGACY_EVENT_FAULTS, 0 | 1) => semantics.legacy_event_faults = value == 1,
        (SWITCH_LATCH_FAULTS_STREAM, 0 | 1) => semantics.latch_faults_stream = value == 1,
        (SWITCH_RESET_DROPS_EXCEPTION_CALLBACK, 0 | 1) => {
            semantics.reset_drops_exception_callback = value == 1;
        }
        (SWITCH_RESET_RESTARTS_STREAM_NUMBERING, 0 | 1) => {
            semantics.reset_restarts_stream_numbering = value == 1;
        }
        (SWITCH_HANDSHAKE, 0 | 1) => semantics.handshake = value == 1,
        (SWITCH_FAULT_FAILS_CHECKED_CALLS, 0 | 1) => {
            semantics.device_fault_fails_calls = value == 1;
        }
        _ => return Err(ACL_ERROR_RT_PARAM_INVALID),
    }
    Ok(())
}

/// Sets one switch on `device`'s model (or, for the event wait's stall, on the fake's
/// own state).
fn set_switch(device: &Device, switch: u32, value: u32) -> Result<(), AclError> {
    let mut state = device.lock();
    if switch == SWITCH_EVENT_WAIT_STALL_MS {
        state.event_wait_stall_ms = value;
        return Ok(());
    }
    let mut semantics = state.model.semantics();
    let result = apply_semantics(&mut semantics, switch, value);
    state.model.set_semantics(semantics);
    state.wake_workers();
    drop(state);
    device.notify();
    result
}

pub(super) unsafe fn runlanefake_set_semantics(switch: u32, value: u32) -> AclError {
    // Checked once, so a bad switch changes no device.
    let mut probe = device_model::Semantics::DEVICE;
    if switch != SWITCH_EVENT_WAIT_STALL_MS {
        or_return!(apply_semantics(&mut probe, switch, value));
    }
    for id in 0..MAX_DEVICES {
        if let Some(device) = device::device(id) {
            let _ = set_switch(device, switch, value);
        }
    }
    ACL_SUCCESS
}

pub(super) unsafe fn runlanefake_set_semantics_on(
    device_id: i32,
    switch: u32,
    value: u32,
) -> AclError {
    code(set_switch(or_return!(named(device_id)), switch, value))
}

/// The calls a rule's `skip` and `count` select: the next `count` after `skip`.
fn window(skip: u32, count: u32) -> When {
    let first = u64::from(skip) + 1;
    When::CallSpan { first, last: Some(first + u64::from(count) - 1) }
}

/// Installs `rule` on device `device_id`'s model.
fn install(device_id: i32, rule: FaultRule) -> AclError {
    or_return!(named(device_id)).lock().model.install(rule);
    ACL_SUCCESS
}

pub(super) unsafe fn runlanefake_fail_call_on(
    device_id: i32,
    name: *const c_char,
    code: AclError,
    skip: u32,
    count: u32,
) -> AclError {
    or_return!(named(device_id));
    if name.is_null() || count == 0 {
        return ACL_ERROR_INVALID_PARAM;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let name = unsafe { core::ffi::CStr::from_ptr(name) }.to_string_lossy();
    install(device_id, FaultRule::call(&name, code, window(skip, count)))
}

pub(super) unsafe fn runlanefake_fault_kernel_on(
    device_id: i32,
    outcome: u32,
    engine: u32,
    skip: u32,
    count: u32,
    header_bytes: *const u8,
    header_len: usize,
) -> AclError {
    or_return!(named(device_id));
    let Some(outcome) = Outcome::from_raw(outcome) else {
        return ACL_ERROR_RT_PARAM_INVALID;
    };
    let engine = match engine {
        ENGINE_ANY => None,
        ENGINE_AICORE => Some(Engine::Aicore),
        ENGINE_AICPU => Some(Engine::Aicpu),
        _ => return ACL_ERROR_RT_PARAM_INVALID,
    };
    if count == 0 {
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    // SAFETY: the caller's contract for `header_bytes`.
    let header_bytes = or_return!(unsafe { bytes_from(header_bytes, header_len) });
    let Ok(rule) = FaultRule::new(outcome.kind(), None, window(skip, count)) else {
        return ACL_ERROR_RT_PARAM_INVALID;
    };
    let mut rule = rule.on_engine(engine);
    if outcome == Outcome::Latch {
        rule = rule.with_header(header_bytes);
    }
    install(device_id, rule)
}

pub(super) unsafe fn runlanefake_fault_copy_on(
    device_id: i32,
    code: AclError,
    skip: u32,
    count: u32,
) -> AclError {
    or_return!(named(device_id));
    if code == ACL_SUCCESS || count == 0 {
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    let Ok(rule) = FaultRule::new(FaultKind::Copy, Some(&code.to_string()), window(skip, count))
    else {
        return ACL_ERROR_RT_PARAM_INVALID;
    };
    install(device_id, rule)
}

pub(super) unsafe fn runlanefake_install_fault(device_id: i32, spec: *const c_char) -> AclError {
    or_return!(named(device_id));
    if spec.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let spec = unsafe { core::ffi::CStr::from_ptr(spec) }.to_string_lossy();
    match FaultRule::parse(&spec) {
        Ok(rule) => install(device_id, rule),
        Err(_) => ACL_ERROR_RT_PARAM_INVALID,
    }
}

pub(super) unsafe fn runlanefake_clear_faults_on(device_id: i32) -> AclError {
    let device = or_return!(named(device_id));
    device.lock().model.heal();
    ACL_SUCCESS
}

pub(super) unsafe fn runlanefake_set_soc_name(name: *const c_char) -> AclError {
    let soc = if name.is_null() {
        SocName::Null
    } else {
        // SAFETY: non-NULL and NUL-terminated by the caller's contract.
        SocName::Custom(unsafe { core::ffi::CStr::from_ptr(name) }.to_owned())
    };
    device::process().soc_name = soc;
    ACL_SUCCESS
}

pub(super) unsafe fn runlanefake_set_device_count(count: u32) -> AclError {
    code(device::set_device_count(count))
}

pub(super) unsafe fn runlanefake_counters_on(device_id: i32, out: *mut FakeCounters) -> AclError {
    let device = or_return!(named(device_id));
    if out.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    let counters = {
        let mut state = device.lock();
        state.refresh_live_counts();
        state.counters
    };
    // SAFETY: non-NULL and writable by the caller's contract.
    unsafe { out.write(counters) };
    ACL_SUCCESS
}

pub(super) unsafe fn runlanefake_raise_notice(
    device_id: i32,
    stream_id: i32,
    code: AclError,
    delay_ns: u64,
) -> AclError {
    let device = u32::try_from(device_id).ok().filter(|&id| id < MAX_DEVICES);
    let device = or_return!(device.ok_or(ACL_ERROR_RT_INVALID_DEVICEID));
    let info = crate::notice::Info {
        device_id: device,
        // The C getters hand the ids and the code back as uint32_t.
        stream_id: stream_id as u32,
        task_id: 0,
        thread_id: 0,
        error_code: code as u32,
    };
    self::code(crate::notice::raise(info, std::time::Duration::from_nanos(delay_ns)))
}

pub(super) unsafe fn runlanefake_live_stream_ids(
    device_id: i32,
    out: *mut i32,
    capacity: u32,
    count: *mut u32,
) -> AclError {
    let device = or_return!(named(device_id));
    if count.is_null() || (out.is_null() && capacity > 0) {
        return ACL_ERROR_INVALID_PARAM;
    }
    // Handles grow with creation: their order is the creation order.
    let ids: Vec<i32> = device.lock().model.stream_numbers().map(|(_, number)| number).collect();
    let room = usize::try_from(capacity).unwrap_or(usize::MAX);
    for (at, id) in ids.iter().take(room).enumerate() {
        // SAFETY: `out` has room for `capacity` ids by the caller's contract.
        unsafe { out.add(at).write(*id) };
    }
    // SAFETY: non-NULL and writable by the caller's contract.
    unsafe { count.write(u32::try_from(ids.len()).unwrap_or(u32::MAX)) };
    ACL_SUCCESS
}

pub(super) unsafe fn runlanefake_notice_counts(delivered: *mut u64, dropped: *mut u64) -> AclError {
    let (d, x) = crate::notice::counts();
    if !delivered.is_null() {
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe { delivered.write(d) };
    }
    if !dropped.is_null() {
        // SAFETY: as above.
        unsafe { dropped.write(x) };
    }
    ACL_SUCCESS
}

pub(super) unsafe fn runlanefake_device_clock_ns(out: *mut u64) -> AclError {
    if out.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    // SAFETY: non-NULL and writable by the caller's contract.
    unsafe { out.write(device::device_now_ns()) };
    ACL_SUCCESS
}

pub(super) unsafe fn runlanefake_resets_under_wait(out: *mut u64) -> AclError {
    if out.is_null() {
        return ACL_ERROR_INVALID_PARAM;
    }
    // SAFETY: non-NULL and writable by the caller's contract.
    unsafe { out.write(device::resets_under_wait_total()) };
    ACL_SUCCESS
}
