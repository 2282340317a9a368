//! A runtime's device table (`RunLaneDeviceOps`, L-22) that forwards every entry to the fake
//! libascendcl, as a runtime's own rt layer would make the calls: the fake-backed tests run
//! through it as well as through the ACL backend, so the table is proven by the same bodies.
//!
//! One [`Forward`] per fake device is the table's `user`: it binds to that device, counts each
//! entry's calls, and, when a test asks, notes the threads each entry ran on, returns a code
//! instead of calling the fake ([`Forward::fail`]), or hands out a stream the runtime owns
//! ([`Forward::own_stream`]).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use ascend_cl_sys::types::{
    ACL_EVENT_RECORDED_STATUS_COMPLETE, ACL_EVENT_SYNC, ACL_EVENT_TIME_LINE,
    ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE,
};
use ascend_cl_sys::{Acl, AclrtStream};
use core::ffi::{c_char, c_void};
use run_lane::RunLaneDeviceOps;
/// Every device the fake can serve.
const DEVICES: usize = run_lane_fake_ascendcl::MAX_DEVICES as usize;

/// The fake, loaded as a runtime's rt layer would load libascendcl.
fn acl() -> &'static Acl {
    static ACL: OnceLock<Acl> = OnceLock::new();
    ACL.get_or_init(|| {
        let path = run_lane_fake_ascendcl::cdylib_path().unwrap_or_else(|e| panic!("{e}"));
        Acl::open(path).unwrap_or_else(|e| panic!("{e}"))
    })
}

/// The table's entries, for counting and naming.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Entry {
    Bind,
    CreateStream,
    DestroyStream,
    DestroyStreamForce,
    StreamId,
    CreateEvent,
    DestroyEvent,
    RecordEvent,
    StreamWaitEvent,
    QueryEvent,
    SynchronizeEvent,
    SynchronizeStream,
    Malloc,
    Free,
    MemcpyToDevice,
    MemcpyFromDevice,
    SynchronizeDevice,
    ResetDeviceForce,
    Probe,
    MallocHost,
    FreeHost,
    MemcpyAsync,
    EventTimestamp,
}

const ENTRIES: usize = Entry::EventTimestamp as usize + 1;

/// A code an entry returns instead of calling the fake: after `skip` calls, `count` times.
#[derive(Clone, Copy, Debug)]
struct Fault {
    entry: Entry,
    code: i32,
    skip: u32,
    count: u32,
}

/// One fake device behind the table: the table's `user`.
#[derive(Debug)]
pub(crate) struct Forward {
    /// The fake device it binds to (set when it is first looked up).
    device_id: AtomicI32,
    calls: [AtomicU64; ENTRIES],
    /// Whether to note the thread of each call (allocates: off unless a test asks).
    noting: AtomicBool,
    threads: Mutex<Vec<(Entry, String)>>,
    faults: Mutex<Vec<Fault>>,
    /// A stream the runtime owns, handed out by the next `create_stream`.
    owned: Mutex<Option<usize>>,
    /// Owned streams the lane gave back to a destroy entry (not destroyed: the runtime's).
    returned: Mutex<Vec<usize>>,
}

impl Forward {
    const fn new() -> Self {
        Self {
            device_id: AtomicI32::new(0),
            calls: [const { AtomicU64::new(0) }; ENTRIES],
            noting: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
            faults: Mutex::new(Vec::new()),
            owned: Mutex::new(None),
            returned: Mutex::new(Vec::new()),
        }
    }

    /// Back to counting from zero, with no fault, no owned stream, no noting.
    pub(crate) fn clear(&self) {
        for calls in &self.calls {
            calls.store(0, Ordering::SeqCst);
        }
        self.noting.store(false, Ordering::SeqCst);
        lock(&self.threads).clear();
        lock(&self.faults).clear();
        *lock(&self.owned) = None;
        lock(&self.returned).clear();
    }

    /// Calls of `entry` so far.
    pub(crate) fn calls(&self, entry: Entry) -> u64 {
        self.calls[entry as usize].load(Ordering::SeqCst)
    }

    /// From now on, note the thread name of every call.
    pub(crate) fn note_threads(&self) {
        self.noting.store(true, Ordering::SeqCst);
    }

    /// The names of the threads `entry` ran on, as noted.
    pub(crate) fn threads_of(&self, entry: Entry) -> Vec<String> {
        lock(&self.threads)
            .iter()
            .filter(|(e, _)| *e == entry)
            .map(|(_, name)| name.clone())
            .collect()
    }

    /// `entry` returns `code` without calling the fake, after `skip` calls, `count` times.
    pub(crate) fn fail(&self, entry: Entry, code: i32, skip: u32, count: u32) {
        lock(&self.faults).push(Fault { entry, code, skip, count });
    }

    /// The next `create_stream` returns `stream`, a stream the runtime made and keeps: its
    /// destroy entries give it back to the runtime instead of destroying it.
    pub(crate) fn own_stream(&self, stream: AclrtStream) {
        *lock(&self.owned) = Some(stream.addr());
    }

    /// The owned streams the lane handed to a destroy entry.
    pub(crate) fn returned(&self) -> Vec<usize> {
        lock(&self.returned).clone()
    }

    /// Counts a call of `entry` (and notes its thread when asked); the code a fault gives it
    /// instead of the fake's, if one is due.
    fn enter(&self, entry: Entry) -> Option<i32> {
        self.calls[entry as usize].fetch_add(1, Ordering::SeqCst);
        if self.noting.load(Ordering::SeqCst) {
            let name = std::thread::current().name().unwrap_or("unnamed").to_owned();
            lock(&self.threads).push((entry, name));
        }
        let mut faults = lock(&self.faults);
        let fault = faults.iter_mut().find(|f| f.entry == entry && f.count > 0)?;
        if fault.skip > 0 {
            fault.skip -= 1;
            return None;
        }
        fault.count -= 1;
        Some(fault.code)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The [`Forward`] of fake device `device_id`.
pub(crate) fn forward(device_id: i32) -> &'static Forward {
    static FORWARDS: [Forward; DEVICES] = [const { Forward::new() }; DEVICES];
    let forward = &FORWARDS[usize::try_from(device_id).expect("a fake device id")];
    forward.device_id.store(device_id, Ordering::SeqCst);
    forward
}

fn state<'a>(user: *mut c_void) -> &'a Forward {
    // SAFETY: every table of these tests passes one of the static `Forward`s.
    unsafe { &*user.cast::<Forward>() }
}

/// Runs `call` unless a fault for `entry` is due, whose code it returns instead.
fn forwarded(user: *mut c_void, entry: Entry, call: impl FnOnce(&Forward) -> i32) -> i32 {
    let forward = state(user);
    match forward.enter(entry) {
        Some(code) => code,
        None => call(forward),
    }
}

unsafe extern "C" fn bind(user: *mut c_void) -> i32 {
    // SAFETY: a plain device id.
    forwarded(user, Entry::Bind, |f| unsafe {
        acl().aclrtSetDevice(f.device_id.load(Ordering::SeqCst))
    })
}

unsafe extern "C" fn create_stream(user: *mut c_void, out: *mut *mut c_void) -> i32 {
    forwarded(user, Entry::CreateStream, |f| {
        if let Some(owned) = lock(&f.owned).take() {
            // SAFETY: the lane passes a writable slot.
            unsafe { out.write(std::ptr::with_exposed_provenance_mut(owned)) };
            return 0;
        }
        // SAFETY: the lane passes a writable slot; an ordinary stream.
        unsafe { acl().aclrtCreateStreamWithConfig(out, 0, 0) }
    })
}

/// Gives a stream the runtime owns back to it (noted, not destroyed); destroys any other.
fn destroy(f: &Forward, stream: *mut c_void, destroy: impl FnOnce() -> i32) -> i32 {
    if is_owned(stream) {
        lock(&f.returned).push(stream.addr());
        return 0;
    }
    destroy()
}

/// Streams the runtime made for tests that hand one to the lane (process-wide).
static RUNTIME_STREAMS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn is_owned(stream: *mut c_void) -> bool {
    lock(&RUNTIME_STREAMS).contains(&stream.addr())
}

/// Marks `stream` as the runtime's own: a destroy entry gives it back instead of destroying it.
pub(crate) fn mark_runtime_stream(stream: AclrtStream) {
    lock(&RUNTIME_STREAMS).push(stream.addr());
}

unsafe extern "C" fn destroy_stream(user: *mut c_void, stream: *mut c_void) -> i32 {
    forwarded(user, Entry::DestroyStream, |f| {
        // SAFETY: a stream the fake made (the lane checked it is live).
        destroy(f, stream, || unsafe { acl().aclrtDestroyStream(stream) })
    })
}

unsafe extern "C" fn destroy_stream_force(user: *mut c_void, stream: *mut c_void) -> i32 {
    forwarded(user, Entry::DestroyStreamForce, |f| {
        // SAFETY: as above.
        destroy(f, stream, || unsafe { acl().aclrtDestroyStreamForce(stream) })
    })
}

unsafe extern "C" fn stream_id(user: *mut c_void, stream: *mut c_void, id: *mut i32) -> i32 {
    forwarded(user, Entry::StreamId, |_| {
        // SAFETY: a live stream and a writable id; the fake has the optional symbol.
        unsafe { acl().aclrtStreamGetId(stream, id) }.unwrap_or(207_000)
    })
}

unsafe extern "C" fn create_event(user: *mut c_void, out: *mut *mut c_void) -> i32 {
    forwarded(user, Entry::CreateEvent, |_| {
        // SAFETY: a writable slot; a reusable event that streams may wait on and that records
        // timestamps (the table has `event_timestamp`).
        unsafe { acl().aclrtCreateEventExWithFlag(out, ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE) }
    })
}

unsafe extern "C" fn destroy_event(user: *mut c_void, event: *mut c_void) -> i32 {
    forwarded(user, Entry::DestroyEvent, |_| {
        // SAFETY: a live event (checked by the lane).
        unsafe { acl().aclrtDestroyEvent(event) }
    })
}

unsafe extern "C" fn record_event(
    user: *mut c_void,
    event: *mut c_void,
    stream: *mut c_void,
) -> i32 {
    forwarded(user, Entry::RecordEvent, |_| {
        // SAFETY: a live event and stream.
        unsafe { acl().aclrtRecordEvent(event, stream) }
    })
}

unsafe extern "C" fn stream_wait_event(
    user: *mut c_void,
    stream: *mut c_void,
    event: *mut c_void,
) -> i32 {
    forwarded(user, Entry::StreamWaitEvent, |_| {
        // SAFETY: a live stream and event.
        unsafe { acl().aclrtStreamWaitEvent(stream, event) }
    })
}

unsafe extern "C" fn query_event(
    user: *mut c_void,
    event: *mut c_void,
    complete: *mut bool,
) -> i32 {
    forwarded(user, Entry::QueryEvent, |_| {
        let mut status = 0;
        // SAFETY: a live event and a writable status.
        let code = unsafe { acl().aclrtQueryEventStatus(event, &raw mut status) };
        // SAFETY: the lane passes a writable bool.
        unsafe { complete.write(status == ACL_EVENT_RECORDED_STATUS_COMPLETE) };
        code
    })
}

unsafe extern "C" fn event_timestamp(user: *mut c_void, event: *mut c_void, ns: *mut u64) -> i32 {
    forwarded(user, Entry::EventTimestamp, |_| {
        let mut us = 0_u64;
        // SAFETY: a live event and a writable u64.
        let code = match unsafe { acl().aclrtEventGetTimestamp(event, &raw mut us) } {
            Ok(code) => code,
            // The fake exports it; never unwind across the C boundary.
            Err(_) => return 207_000,
        };
        // SAFETY: the lane passes a writable u64. ACL gives µs; the entry answers ns.
        unsafe { ns.write(us * 1_000) };
        code
    })
}

unsafe extern "C" fn synchronize_event(
    user: *mut c_void,
    event: *mut c_void,
    timeout_ms: i32,
) -> i32 {
    forwarded(user, Entry::SynchronizeEvent, |_| {
        // SAFETY: a live event.
        unsafe { acl().aclrtSynchronizeEventWithTimeout(event, timeout_ms) }
    })
}

unsafe extern "C" fn synchronize_stream(
    user: *mut c_void,
    stream: *mut c_void,
    timeout_ms: i32,
) -> i32 {
    forwarded(user, Entry::SynchronizeStream, |_| {
        // SAFETY: a live stream.
        unsafe { acl().aclrtSynchronizeStreamWithTimeout(stream, timeout_ms) }
    })
}

unsafe extern "C" fn malloc(user: *mut c_void, size: usize, out: *mut *mut c_void) -> i32 {
    forwarded(user, Entry::Malloc, |_| {
        // SAFETY: a writable slot.
        unsafe { acl().aclrtMalloc(out, size, ACL_MEM_MALLOC_HUGE_FIRST) }
    })
}

unsafe extern "C" fn free(user: *mut c_void, ptr: *mut c_void) -> i32 {
    forwarded(user, Entry::Free, |_| {
        // SAFETY: an allocation the fake made.
        unsafe { acl().aclrtFree(ptr) }
    })
}

unsafe extern "C" fn memcpy_to_device(
    user: *mut c_void,
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
) -> i32 {
    forwarded(user, Entry::MemcpyToDevice, |_| {
        // SAFETY: the lane passes a device range inside an allocation and readable host bytes.
        unsafe { acl().aclrtMemcpy(dst, len, src, len, ACL_MEMCPY_HOST_TO_DEVICE) }
    })
}

unsafe extern "C" fn memcpy_from_device(
    user: *mut c_void,
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
) -> i32 {
    forwarded(user, Entry::MemcpyFromDevice, |_| {
        // SAFETY: the lane passes writable host bytes and a device range inside an allocation.
        unsafe { acl().aclrtMemcpy(dst, len, src, len, ACL_MEMCPY_DEVICE_TO_HOST) }
    })
}

unsafe extern "C" fn synchronize_device(user: *mut c_void, timeout_ms: i32) -> i32 {
    forwarded(user, Entry::SynchronizeDevice, |_| {
        // SAFETY: a plain value.
        unsafe { acl().aclrtSynchronizeDeviceWithTimeout(timeout_ms) }
    })
}

unsafe extern "C" fn reset_device_force(user: *mut c_void) -> i32 {
    // SAFETY: a plain device id.
    forwarded(user, Entry::ResetDeviceForce, |f| unsafe {
        acl().aclrtResetDeviceForce(f.device_id.load(Ordering::SeqCst))
    })
}

unsafe extern "C" fn probe(user: *mut c_void) -> i32 {
    forwarded(user, Entry::Probe, |_| 0)
}

unsafe extern "C" fn malloc_host(user: *mut c_void, size: usize, out: *mut *mut c_void) -> i32 {
    forwarded(user, Entry::MallocHost, |_| {
        // SAFETY: a writable slot.
        unsafe { acl().aclrtMallocHost(out, size) }
    })
}

unsafe extern "C" fn free_host(user: *mut c_void, ptr: *mut c_void) -> i32 {
    forwarded(user, Entry::FreeHost, |_| {
        // SAFETY: pinned memory the fake made.
        unsafe { acl().aclrtFreeHost(ptr) }
    })
}

/// `aclrtMemcpyAsync` of `kind` on `stream`.
fn copy_async(
    user: *mut c_void,
    (dst, src, len): (*mut c_void, *const c_void, usize),
    kind: i32,
    stream: *mut c_void,
) -> i32 {
    forwarded(user, Entry::MemcpyAsync, |_| {
        // SAFETY: the lane passes ranges inside live allocations and a live stream.
        unsafe { acl().aclrtMemcpyAsync(dst, len, src, len, kind, stream) }
    })
}

unsafe extern "C" fn memcpy_to_device_async(
    user: *mut c_void,
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
    stream: *mut c_void,
) -> i32 {
    copy_async(user, (dst, src, len), ACL_MEMCPY_HOST_TO_DEVICE, stream)
}

unsafe extern "C" fn memcpy_from_device_async(
    user: *mut c_void,
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
    stream: *mut c_void,
) -> i32 {
    copy_async(user, (dst, src, len), ACL_MEMCPY_DEVICE_TO_HOST, stream)
}

unsafe extern "C" fn recent_error_message(_user: *mut c_void) -> *const c_char {
    // SAFETY: no arguments; NULL or a string valid until this thread's next call.
    unsafe { acl().aclGetRecentErrMsg() }
}

/// The forwarding table of fake device `device_id`, every entry set but the pinned copies
/// (the C ABI's profiles copy synchronously).
pub(crate) fn table(device_id: i32) -> RunLaneDeviceOps {
    RunLaneDeviceOps {
        size: size_of::<RunLaneDeviceOps>() as u32,
        user: std::ptr::from_ref(forward(device_id)).cast_mut().cast(),
        bind: Some(bind),
        create_stream: Some(create_stream),
        destroy_stream: Some(destroy_stream),
        destroy_stream_force: Some(destroy_stream_force),
        stream_id: Some(stream_id),
        create_event: Some(create_event),
        destroy_event: Some(destroy_event),
        record_event: Some(record_event),
        stream_wait_event: Some(stream_wait_event),
        query_event: Some(query_event),
        synchronize_event: Some(synchronize_event),
        synchronize_stream: Some(synchronize_stream),
        malloc: Some(malloc),
        free: Some(free),
        memcpy_to_device: Some(memcpy_to_device),
        memcpy_from_device: Some(memcpy_from_device),
        malloc_host: None,
        free_host: None,
        memcpy_to_device_async: None,
        memcpy_from_device_async: None,
        synchronize_device: Some(synchronize_device),
        reset_device_force: Some(reset_device_force),
        probe: Some(probe),
        recent_error_message: Some(recent_error_message),
        event_timestamp: Some(event_timestamp),
    }
}

/// [`table`] with the four pinned-copy entries too (the copies on the streams).
pub(crate) fn table_with_pinned(device_id: i32) -> RunLaneDeviceOps {
    RunLaneDeviceOps {
        malloc_host: Some(malloc_host),
        free_host: Some(free_host),
        memcpy_to_device_async: Some(memcpy_to_device_async),
        memcpy_from_device_async: Some(memcpy_from_device_async),
        ..table(device_id)
    }
}

/// [`table`] of fake device `device_id`, kept for the whole test binary (a config points at
/// it; the lane copies it at create).
pub(crate) fn static_table(device_id: i32) -> &'static RunLaneDeviceOps {
    struct Tables([OnceLock<RunLaneDeviceOps>; DEVICES]);
    // SAFETY: the tables hold only function pointers and pointers to the static `Forward`s,
    // which are `Sync`.
    unsafe impl Sync for Tables {}
    static TABLES: Tables = Tables([const { OnceLock::new() }; DEVICES]);
    let id = usize::try_from(device_id).expect("a fake device id");
    TABLES.0[id].get_or_init(|| table(device_id))
}

/// Sets the fake's device op timeout, as a runtime does when it attaches its device: the
/// lane programs none through a table.
pub(crate) fn set_op_timeout(op_timeout_ms: u64) {
    let mut actual = 0;
    // SAFETY: a plain value and a writable u64.
    let code = unsafe {
        acl().aclrtSetOpExecuteTimeOutV2(op_timeout_ms.saturating_mul(1_000), &raw mut actual)
    };
    assert_eq!(code, 0, "the fake's op timeout");
}

/// A stream the runtime makes and keeps, on the calling thread's device `device_id`, for a
/// test that hands it to the lane through `create_stream`.
pub(crate) fn runtime_stream(device_id: i32) -> AclrtStream {
    let mut stream = std::ptr::null_mut();
    // SAFETY: a plain device id; a writable slot and an ordinary stream.
    unsafe {
        assert_eq!(acl().aclrtSetDevice(device_id), 0);
        assert_eq!(acl().aclrtCreateStreamWithConfig(&raw mut stream, 0, 0), 0);
    }
    mark_runtime_stream(stream);
    stream
}

/// Destroys a stream [`runtime_stream`] made, once the lane gave it back.
pub(crate) fn destroy_runtime_stream(device_id: i32, stream: AclrtStream) -> i32 {
    lock(&RUNTIME_STREAMS).retain(|s| *s != stream.addr());
    // SAFETY: a plain device id, and a stream the runtime made and still holds.
    unsafe {
        assert_eq!(acl().aclrtSetDevice(device_id), 0);
        acl().aclrtDestroyStream(stream)
    }
}

/// A force reset of fake device `device_id` made by the runtime itself (it owns recovery),
/// on the calling thread: its code.
pub(crate) fn runtime_reset(device_id: i32) -> i32 {
    // SAFETY: plain device ids; the lane makes no device call until the reset is reported.
    unsafe {
        assert_eq!(acl().aclrtSetDevice(device_id), 0);
        acl().aclrtResetDeviceForce(device_id)
    }
}
