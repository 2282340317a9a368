//! Shared by the fake's test files: the fake loaded once per test binary through
//! ascend-cl-sys's public loader, the session every test holds (the fake is process-wide
//! state, so the tests of one binary serialise on a lock and reset it first, through the
//! workspace's shared L-20 check, [`Control::session`]), and one helper per ACL call the
//! tests make.

#![allow(dead_code, unreachable_pub)]

use core::ffi::c_void;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use ascend_cl_sys::Acl;
use ascend_cl_sys::types::*;
use run_lane_fake_ascendcl::{Control, ENGINE_AICORE, Outcome, Session, cdylib_path};

/// Generous for a loaded 2-core machine: a wait that should succeed gets this long.
pub const LONG_MS: i32 = 30_000;

/// The loaded fake.
pub struct Fake {
    /// Its ACL symbols.
    pub acl: Acl,
    /// Its control surface.
    pub control: Control,
    /// Its file.
    pub path: PathBuf,
}

/// The fake, loaded once per test binary.
pub fn fake() -> &'static Fake {
    static FAKE: OnceLock<Fake> = OnceLock::new();
    FAKE.get_or_init(|| {
        let path = cdylib_path().unwrap_or_else(|e| panic!("{e}"));
        let acl = Acl::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let control = Control::open(&path).unwrap_or_else(|e| panic!("{e}"));
        Fake { acl, control, path }
    })
}

/// What a test holds for its whole length: the fake's [`Session`] (dropped first: it fails
/// the test if a force reset was made under a device wait, L-20), then this binary's lock.
pub struct Held {
    session: Session<'static>,
    _serial: MutexGuard<'static, ()>,
}

impl Held {
    /// The test makes a force reset under a wait on purpose: the drop check is skipped.
    pub fn expect_resets_under_wait(&self) {
        self.session.expect_resets_under_wait();
    }
}

/// The fake, reset through [`Control::session`] (whose drop asserts no force reset was made
/// under a device wait), with the calling thread bound to device 0; held for the whole test.
pub fn session() -> (Held, &'static Acl, &'static Control) {
    static SERIAL: Mutex<()> = Mutex::new(());
    let serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let fake = fake();
    let session = fake.control.session().expect("reset");
    bind(&fake.acl, 0);
    (Held { session, _serial: serial }, &fake.acl, &fake.control)
}

/// [`session`] for a test that makes a force reset under a device wait on purpose (to check
/// the fake models the hazard): its drop does not assert the count is 0.
pub fn session_expecting_resets_under_wait() -> (Held, &'static Acl, &'static Control) {
    let (held, acl, control) = session();
    held.expect_resets_under_wait();
    (held, acl, control)
}

pub fn create_stream(acl: &Acl) -> AclrtStream {
    let mut stream: AclrtStream = std::ptr::null_mut();
    assert_eq!(
        // SAFETY: `stream` is a writable handle slot.
        unsafe { acl.aclrtCreateStreamWithConfig(&mut stream, 0, 0) },
        ACL_SUCCESS
    );
    assert!(!stream.is_null());
    stream
}

pub fn create_event(acl: &Acl) -> AclrtEvent {
    try_create_event(acl, ACL_EVENT_SYNC).expect("event")
}

pub fn malloc(acl: &Acl, size: usize) -> *mut c_void {
    let mut ptr = std::ptr::null_mut();
    assert_eq!(
        // SAFETY: `ptr` is a writable pointer slot.
        unsafe { acl.aclrtMalloc(&mut ptr, size, ACL_MEM_MALLOC_HUGE_FIRST) },
        ACL_SUCCESS
    );
    ptr
}

pub fn to_device(acl: &Acl, dst: *mut c_void, bytes: &[u8]) -> AclError {
    // SAFETY: `bytes` is readable for its length; the fake checks the device side.
    unsafe {
        acl.aclrtMemcpy(
            dst,
            bytes.len(),
            bytes.as_ptr().cast(),
            bytes.len(),
            ACL_MEMCPY_HOST_TO_DEVICE,
        )
    }
}

pub fn from_device(acl: &Acl, src: *const c_void, len: usize) -> Result<Vec<u8>, AclError> {
    let mut out = vec![0_u8; len];
    // SAFETY: `out` is writable for `len` bytes; the fake checks the device side.
    let code = unsafe {
        acl.aclrtMemcpy(out.as_mut_ptr().cast(), len, src, len, ACL_MEMCPY_DEVICE_TO_HOST)
    };
    if code == ACL_SUCCESS { Ok(out) } else { Err(code) }
}

pub fn record(acl: &Acl, event: AclrtEvent, stream: AclrtStream) {
    assert_eq!(try_record(acl, event, stream), ACL_SUCCESS);
}

/// `aclrtRecordEvent(event, stream)`'s code.
pub fn try_record(acl: &Acl, event: AclrtEvent, stream: AclrtStream) -> AclError {
    // SAFETY: handles from the fake (or stale ones, which the fake rejects).
    unsafe { acl.aclrtRecordEvent(event, stream) }
}

pub fn sync(acl: &Acl, event: AclrtEvent, timeout_ms: i32) -> AclError {
    // SAFETY: a handle from the fake (or a stale one, which the fake rejects).
    unsafe { acl.aclrtSynchronizeEventWithTimeout(event, timeout_ms) }
}

pub fn query(acl: &Acl, event: AclrtEvent) -> Result<i32, AclError> {
    let mut status = -1;
    // SAFETY: `status` is writable.
    let code = unsafe { acl.aclrtQueryEventStatus(event, &mut status) };
    if code == ACL_SUCCESS { Ok(status) } else { Err(code) }
}

pub fn destroy_stream(acl: &Acl, stream: AclrtStream) -> AclError {
    // SAFETY: a handle from the fake.
    unsafe { acl.aclrtDestroyStream(stream) }
}

pub fn destroy_stream_force(acl: &Acl, stream: AclrtStream) -> AclError {
    // SAFETY: a handle from the fake.
    unsafe { acl.aclrtDestroyStreamForce(stream) }
}

pub fn destroy_event(acl: &Acl, event: AclrtEvent) -> AclError {
    // SAFETY: a handle from the fake.
    unsafe { acl.aclrtDestroyEvent(event) }
}

pub fn free(acl: &Acl, ptr: *mut c_void) -> AclError {
    // SAFETY: a device pointer from the fake (or a stale one, which the fake rejects).
    unsafe { acl.aclrtFree(ptr) }
}

/// A kernel that never finishes on its own (the op timeout is 1091 s by default).
pub fn launch_hang(control: &Control, stream: AclrtStream) {
    control
        .launch(
            stream,
            ENGINE_AICORE,
            Duration::ZERO,
            Outcome::Hang,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &[],
        )
        .expect("launch");
}

pub fn launch(
    control: &Control,
    stream: AclrtStream,
    engine: u32,
    ms: u64,
) -> Result<(), run_lane_fake_ascendcl::ControlError> {
    launch_writing(control, stream, engine, ms, [std::ptr::null_mut(); 2], &[])
}

/// [`launch`] of a kernel writing its `[timing, header]` buffers (NULL: none), the header
/// with `bytes`.
pub fn launch_writing(
    control: &Control,
    stream: AclrtStream,
    engine: u32,
    ms: u64,
    [timing, header]: [*mut c_void; 2],
    bytes: &[u8],
) -> Result<(), run_lane_fake_ascendcl::ControlError> {
    let duration = Duration::from_millis(ms);
    control.launch(stream, engine, duration, Outcome::Ok, timing, header, bytes)
}

/// A kernel alone (no run) on `stream` ending `outcome`, through `runlanefake_launch_run`.
pub fn launch_ending(
    control: &Control,
    stream: AclrtStream,
    engine: u32,
    outcome: Outcome,
) -> Result<(), run_lane_fake_ascendcl::ControlError> {
    let kernel = run_lane_fake_ascendcl::RunKernel::new(stream, engine);
    control.launch_run(&run_lane_fake_ascendcl::RunKernel { outcome, ..kernel })
}

/// A launch's ACL code (0 on success).
pub fn launch_code(result: Result<(), run_lane_fake_ascendcl::ControlError>) -> AclError {
    match result {
        Ok(()) => ACL_SUCCESS,
        Err(run_lane_fake_ascendcl::ControlError::Call { code, .. }) => code,
        Err(other) => panic!("{other}"),
    }
}

/// A kernel's timing buffer: (start, end) in device-clock ns.
pub fn timing_of(acl: &Acl, timing: *const c_void) -> (u64, u64) {
    let bytes = from_device(acl, timing, 16).expect("timing");
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    (word(&bytes[..8]), word(&bytes[8..]))
}

/// `aclrtSetDevice(device_id)`'s code.
pub fn set_device(acl: &Acl, device_id: i32) -> AclError {
    // SAFETY: plain value.
    unsafe { acl.aclrtSetDevice(device_id) }
}

/// `aclrtCreateStreamWithConfig`'s code, the stream made (if any) dropped.
pub fn try_create_stream(acl: &Acl) -> AclError {
    let mut stream: AclrtStream = std::ptr::null_mut();
    // SAFETY: `stream` is a writable handle slot.
    unsafe { acl.aclrtCreateStreamWithConfig(&mut stream, 0, 0) }
}

/// `aclrtCreateEventExWithFlag(flag)`: the event, or the code.
pub fn try_create_event(acl: &Acl, flag: u32) -> Result<AclrtEvent, AclError> {
    let mut event: AclrtEvent = std::ptr::null_mut();
    // SAFETY: `event` is a writable handle slot.
    match unsafe { acl.aclrtCreateEventExWithFlag(&mut event, flag) } {
        ACL_SUCCESS => Ok(event),
        code => Err(code),
    }
}

/// `aclrtFreeHost(ptr)`'s code.
pub fn free_host(acl: &Acl, ptr: *mut c_void) -> AclError {
    // SAFETY: a pinned pointer from the fake (or a stale one, which the fake rejects); no
    // copy still queued writes it.
    unsafe { acl.aclrtFreeHost(ptr) }
}

/// `aclrtMemcpyAsync(dst, len, src, len, kind, stream)`'s code.
pub fn copy_async(
    acl: &Acl,
    [dst, src]: [*mut c_void; 2],
    len: usize,
    kind: i32,
    stream: AclrtStream,
) -> AclError {
    // SAFETY: the tests pass device memory, pinned memory that outlives the copy, or ranges
    // the fake refuses before any access.
    unsafe { acl.aclrtMemcpyAsync(dst, len, src, len, kind, stream) }
}

/// Force-destroys each of `streams`, destroys each of `events` and frees each of `ptrs`,
/// asserting every call succeeds.
pub fn destroy_all(
    acl: &Acl,
    streams: &[AclrtStream],
    events: &[AclrtEvent],
    ptrs: &[*mut c_void],
) {
    for &stream in streams {
        assert_eq!(destroy_stream_force(acl, stream), ACL_SUCCESS);
    }
    for &event in events {
        assert_eq!(destroy_event(acl, event), ACL_SUCCESS);
    }
    for &ptr in ptrs {
        assert_eq!(free(acl, ptr), ACL_SUCCESS);
    }
}

pub fn set_op_timeout_ms(acl: &Acl, ms: u64) {
    let mut actual = 0;
    assert_eq!(
        // SAFETY: `actual` is writable.
        unsafe { acl.aclrtSetOpExecuteTimeOutV2(ms * 1000, &mut actual) },
        ACL_SUCCESS
    );
    assert_eq!(actual, ms * 1000);
}

pub fn assert_balanced(control: &Control) {
    let counters = control.counters().expect("counters");
    assert!(counters.balanced(), "leak: {counters:?}");
}

pub fn malloc_host(acl: &Acl, size: usize) -> *mut c_void {
    let mut ptr = std::ptr::null_mut();
    // SAFETY: `ptr` is a writable pointer slot.
    assert_eq!(unsafe { acl.aclrtMallocHost(&mut ptr, size) }, ACL_SUCCESS);
    ptr
}

pub fn stream_wait(acl: &Acl, stream: AclrtStream, event: AclrtEvent) -> AclError {
    // SAFETY: handles from the fake (or stale ones, which the fake rejects).
    unsafe { acl.aclrtStreamWaitEvent(stream, event) }
}

/// A code no call returns on its own.
pub const CODE_FAULT: AclError = 507_899;

/// Binds the calling thread to `device_id` (asserting success).
pub fn bind(acl: &Acl, device_id: i32) {
    assert_eq!(set_device(acl, device_id), ACL_SUCCESS, "bind {device_id}");
}

/// `aclrtResetDeviceForce(device_id)`'s code.
pub fn force_reset(acl: &Acl, device_id: i32) -> AclError {
    // SAFETY: plain value.
    unsafe { acl.aclrtResetDeviceForce(device_id) }
}

/// Force-resets `device_id` and binds the calling thread to it again (asserting both).
pub fn reset_and_bind(acl: &Acl, device_id: i32) {
    assert_eq!(force_reset(acl, device_id), ACL_SUCCESS, "reset {device_id}");
    bind(acl, device_id);
}

/// `aclrtSynchronizeStreamWithTimeout`'s code: the stream's sticky code once its tasks ran.
pub fn sync_stream(acl: &Acl, stream: AclrtStream, timeout_ms: i32) -> AclError {
    // SAFETY: a handle from the fake (or a stale or NULL one, which the fake rejects).
    unsafe { acl.aclrtSynchronizeStreamWithTimeout(stream, timeout_ms) }
}

/// `aclrtSynchronizeDeviceWithTimeout`'s code.
pub fn sync_device(acl: &Acl, timeout_ms: i32) -> AclError {
    // SAFETY: plain value.
    unsafe { acl.aclrtSynchronizeDeviceWithTimeout(timeout_ms) }
}

/// Asserts nothing is alive or leaked on any device.
pub fn assert_all_balanced(control: &Control) {
    let counters = control.total_counters().expect("counters");
    assert!(counters.balanced(), "leak on some device: {counters:?}");
}

/// Waits until `done` holds, yielding between looks, for at most [`LONG_MS`]: for a state
/// another thread brings about that no call can wait for (a waiter inside its wait).
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_millis(LONG_MS.unsigned_abs().into());
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::yield_now();
    }
}

/// How many threads are blocked in an event sync on `device_id` now.
pub fn blocked_event_syncs(control: &Control, device_id: i32) -> u64 {
    control.device(device_id).counters().expect("counters").blocked_event_syncs
}

/// A new stream, then a new event (asserting success).
pub fn stream_and_event(acl: &Acl) -> (AclrtStream, AclrtEvent) {
    let stream = create_stream(acl);
    (stream, create_event(acl))
}

/// Records `event` on `stream` and waits for it, asserting both succeed.
pub fn record_and_wait(acl: &Acl, event: AclrtEvent, stream: AclrtStream) {
    record(acl, event, stream);
    assert_eq!(sync(acl, event, LONG_MS), ACL_SUCCESS);
}

/// Destroys `stream`, then `event`, asserting both succeed.
pub fn destroy_both(acl: &Acl, stream: AclrtStream, event: AclrtEvent) {
    assert_eq!(destroy_stream(acl, stream), ACL_SUCCESS);
    assert_eq!(destroy_event(acl, event), ACL_SUCCESS);
}
