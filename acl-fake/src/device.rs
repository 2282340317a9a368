//! The fake devices: [`MAX_DEVICES`] independent device states, each a
//! [`device_model::Device`] behind its own mutex and condition variable, driven in real time
//! (see the crate doc), and the process-wide part (the `aclInit` flag, the SoC name) behind
//! another. Host threads that wait (an event, stream or device synchronize) wait on the
//! device's condition variable; a stream's worker on its own, woken only when its stream's
//! next time changed, so sixteen lanes never contend on one lock.
//!
//! A thread's binding is a thread-local (device id, context generation); a call acts on the
//! thread's current device once that device's generation still matches (107002 otherwise).
//! Handles carry their device: `seq << 12 | device << 4` with one process-wide `seq` that never
//! repeats, so a handle is unique across devices, resets and [`reset_all`], and a stale or
//! foreign handle never matches a live one.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ascend_cl_sys::types::*;
use device_model::{HostMemory, Semantics, StreamNext, Timing};
use status_latch::AclCode;

use crate::{DEFAULT_DEVICE_COUNT, FakeCounters, MAX_DEVICES};

/// The device op timeout before `aclrtSetOpExecuteTimeOutV2` (ascend-cl.md §2.6: 1091 s).
pub(crate) const DEFAULT_OP_TIMEOUT_US: u64 = 1_091_000_000;
/// The op timeout `aclrtSetOpExecuteTimeOutV2(0)` sets: the maximum, never fires
/// (device-truth §6).
pub(crate) const NEVER_OP_TIMEOUT_US: u64 = u64::MAX;
/// The SoC name the probe reports until a test chooses another.
pub(crate) const DEFAULT_SOC_NAME: &str = "Ascend910B1";

/// A handle's device id sits in bits 4..12, its sequence number above: non-NULL (the
/// sequence starts at 1), 16-byte aligned like a pointer, never dereferenced.
const HANDLE_DEVICE_SHIFT: u32 = 4;
const HANDLE_SEQ_SHIFT: u32 = 12;
const HANDLE_DEVICE_MASK: u64 = (1 << (HANDLE_SEQ_SHIFT - HANDLE_DEVICE_SHIFT)) - 1;
const _: () = assert!(MAX_DEVICES as u64 <= HANDLE_DEVICE_MASK + 1);

/// The next handle's sequence number: process-wide, never reset, never reused.
static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);
/// The first device address the fake hands out: far from any host mapping, so a device
/// address used as a host pointer faults instead of landing in host memory.
const DEVICE_ADDRESS_BASE: usize = 0x1000_0000_0000;
/// Device address space is handed out in pages, with a page left unused after each
/// allocation, so no two allocations touch.
const DEVICE_PAGE: usize = 4096;
/// The next device address: process-wide, only ever grows, so a freed or reset address is
/// never handed out again (device-truth has a use-after-free hazard; the fake makes a stale
/// address fail with an ACL code instead of reaching a new allocation).
static NEXT_DEVICE_ADDRESS: AtomicUsize = AtomicUsize::new(DEVICE_ADDRESS_BASE);
/// The process's one device op timeout (`aclrtSetOpExecuteTimeOutV2` is process-wide,
/// device-truth §5); [`NEVER_OP_TIMEOUT_US`]: never.
static OP_TIMEOUT_US: AtomicU64 = AtomicU64::new(DEFAULT_OP_TIMEOUT_US);
/// Force resets made while a thread was inside a device wait, on any device, since the
/// process loaded the fake (`runlanefake_reset` does not clear it).
static RESETS_UNDER_WAIT_TOTAL: AtomicU64 = AtomicU64::new(0);
/// Pinned host allocations freed or reclaimed since the last `runlanefake_reset`: kept (not
/// returned to the allocator) so their addresses are never handed out again until then.
static RETIRED_HOST: Mutex<Vec<Box<[u8]>>> = Mutex::new(Vec::new());
/// The device count the probe reports, and the range of ids `aclrtSetDevice` accepts.
static DEVICE_COUNT: AtomicU32 = AtomicU32::new(DEFAULT_DEVICE_COUNT);
/// What belongs to the process rather than to a device.
static PROCESS: Mutex<Process> = Mutex::new(Process::new());
/// Every device the fake can serve, by id (the first [`device_count`] are served).
static DEVICES: LazyLock<Vec<Device>> =
    LazyLock::new(|| (0..MAX_DEVICES).map(Device::new).collect());

thread_local! {
    /// The device this thread bound with `aclrtSetDevice` and that device's context
    /// generation at the time (its force reset starts a new one, so the thread must bind
    /// again). One per thread: binding another device switches it.
    static BOUND: Cell<Option<Binding>> = const { Cell::new(None) };
    /// Every device this thread called `aclrtSetDevice` on, with that device's generation
    /// at the time: a force reset needs the caller to have set the device since its last
    /// reset (507007 otherwise, device-truth §5).
    static SET: std::cell::RefCell<Vec<Binding>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A thread's current device and context.
#[derive(Clone, Copy)]
struct Binding {
    device: u32,
    generation: u64,
}

/// Nanoseconds on the fake's device clock (monotonic, from the first use; one host clock
/// shared by every device).
pub(crate) fn device_now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The process-wide state: ACL's init flag and the SoC name (`aclrtGetSocName` takes no
/// device and reports device 0's name with several devices, ascend-cl.md §2.1, so the fake
/// keeps one name for every device).
pub(crate) struct Process {
    pub(crate) initialised: bool,
    pub(crate) soc_name: SocName,
}

impl Process {
    const fn new() -> Self {
        Self { initialised: false, soc_name: SocName::Default }
    }
}

/// The process-wide state, locked.
pub(crate) fn process() -> MutexGuard<'static, Process> {
    // A panic under the lock is caught at the FFI boundary; the state stays usable.
    PROCESS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The device count the probe reports.
pub(crate) fn device_count() -> u32 {
    DEVICE_COUNT.load(Ordering::Acquire)
}

/// Sets the device count: 107000 above [`MAX_DEVICES`].
pub(crate) fn set_device_count(count: u32) -> Result<(), AclError> {
    if count > MAX_DEVICES {
        return Err(ACL_ERROR_RT_PARAM_INVALID);
    }
    DEVICE_COUNT.store(count, Ordering::Release);
    Ok(())
}

/// Device `id`, served or not (the control surface's view): `None` at or above
/// [`MAX_DEVICES`].
pub(crate) fn device(id: u32) -> Option<&'static Device> {
    DEVICES.get(usize::try_from(id).ok()?)
}

/// Device `device_id` when it is served (below the device count): what `aclrtSetDevice` and
/// `aclrtResetDeviceForce` accept.
pub(crate) fn served(device_id: i32) -> Option<&'static Device> {
    let id = u32::try_from(device_id).ok()?;
    if id >= device_count() {
        return None;
    }
    device(id)
}

/// The device the calling thread bound last (device 0 for a thread that never bound), stale
/// or not: whose call-fault rules its calls draw.
pub(crate) fn thread_device() -> &'static Device {
    let id = BOUND.get().map_or(0, |b| b.device);
    device(id).unwrap_or(&DEVICES[0])
}

/// The calling thread's current device, locked: 107002 when the thread never bound one or
/// bound it before that device's last force reset.
pub(crate) fn current() -> Result<(&'static Device, MutexGuard<'static, State>), AclError> {
    let binding = BOUND.get().ok_or(ACL_ERROR_RT_CONTEXT_NULL)?;
    let device = device(binding.device).ok_or(ACL_ERROR_RT_CONTEXT_NULL)?;
    let mut state = device.lock();
    if state.generation() != binding.generation {
        return Err(ACL_ERROR_RT_CONTEXT_NULL);
    }
    // The call sees the device as it is now.
    if state.advance() {
        device.notify();
    }
    Ok((device, state))
}

/// Makes `device`'s current context the calling thread's (`aclrtSetDevice`).
pub(crate) fn bind_current_thread(device: &Device, state: &State) {
    let binding = Binding { device: device.id, generation: state.generation() };
    BOUND.set(Some(binding));
    SET.with_borrow_mut(|set| {
        set.retain(|b| b.device != device.id);
        set.push(binding);
    });
}

/// Whether the calling thread called `aclrtSetDevice` on `device` since its last force
/// reset (or whole-fake reset): what a force reset of it needs.
pub(crate) fn thread_has_set(device: &Device, state: &State) -> bool {
    SET.with_borrow(|set| {
        set.iter().any(|b| b.device == device.id && b.generation == state.generation())
    })
}

/// A fresh device address range for `size` bytes, never handed out before.
pub(crate) fn new_device_address(size: usize) -> Option<usize> {
    let pages = size.checked_add(DEVICE_PAGE - 1)? / DEVICE_PAGE + 1;
    let span = pages.checked_mul(DEVICE_PAGE)?;
    let address = NEXT_DEVICE_ADDRESS.fetch_add(span, Ordering::Relaxed);
    address.checked_add(span).map(|_| address)
}

/// Keeps a freed pinned host allocation alive (unused) until `runlanefake_reset`, so its
/// address is never handed out again before then.
pub(crate) fn retire_host(data: Box<[u8]>) {
    RETIRED_HOST.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(data);
}

/// The process's op timeout in µs ([`NEVER_OP_TIMEOUT_US`]: never).
pub(crate) fn op_timeout_us() -> u64 {
    OP_TIMEOUT_US.load(Ordering::Acquire)
}

/// Sets the process's op timeout (every device's kernels use it from their next start).
pub(crate) fn set_op_timeout_us(timeout_us: u64) {
    OP_TIMEOUT_US.store(timeout_us, Ordering::Release);
}

/// Force resets made under a wait, on every device, since the process loaded the fake.
pub(crate) fn resets_under_wait_total() -> u64 {
    RESETS_UNDER_WAIT_TOTAL.load(Ordering::Acquire)
}

/// A new handle of device `device`.
pub(crate) fn new_handle(device: u32) -> u64 {
    let seq = NEXT_SEQ.fetch_add(1, Ordering::Relaxed);
    (seq << HANDLE_SEQ_SHIFT) | (u64::from(device) << HANDLE_DEVICE_SHIFT)
}

/// The device a handle was made for, if it has a handle's shape.
fn handle_device(handle: u64) -> Option<u32> {
    let shaped = handle >> HANDLE_SEQ_SHIFT != 0 && handle & ((1 << HANDLE_DEVICE_SHIFT) - 1) == 0;
    shaped
        .then(|| u32::try_from((handle >> HANDLE_DEVICE_SHIFT) & HANDLE_DEVICE_MASK).ok())
        .flatten()
}

/// The code for a stream handle that is not live on `current`: 107003
/// (`ACL_ERROR_RT_STREAM_CONTEXT`, "stream not in the current context") when it is a live
/// stream of another device, 107017 (`ACL_ERROR_RT_INVALID_HANDLE`) otherwise. The caller
/// holds no device lock (this takes the other device's).
pub(crate) fn missing_stream(current: &Device, handle: u64) -> AclError {
    let foreign = handle_device(handle)
        .filter(|&id| id != current.id)
        .and_then(device)
        .is_some_and(|other| other.lock().model.has_stream(handle));
    if foreign { ACL_ERROR_RT_STREAM_CONTEXT } else { ACL_ERROR_RT_INVALID_HANDLE }
}

/// Back to a fresh process: every device's streams, events, allocations, faults and counters
/// dropped and its generation bumped (so every thread must bind again), the device count,
/// SoC name and init flag restored. Handles keep counting. Returns the stream workers to
/// join once no lock is held.
pub(crate) fn reset_all() -> Vec<JoinHandle<()>> {
    *process() = Process::new();
    DEVICE_COUNT.store(DEFAULT_DEVICE_COUNT, Ordering::Release);
    set_op_timeout_us(DEFAULT_OP_TIMEOUT_US);
    let mut workers = Vec::new();
    for device in DEVICES.iter() {
        let mut state = device.lock();
        workers.append(&mut state.workers);
        let generation = state.generation() + 1;
        // Threads still inside a wait leave it by themselves (with RESET_UNDER_WAIT): their
        // count stays right.
        let waits_inside = state.waits_inside;
        // Every worker finds its stream gone and exits.
        state.wake_workers();
        *state = State::new(generation);
        state.waits_inside = waits_inside;
        drop(state);
        device.notify();
    }
    RETIRED_HOST.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    workers
}

/// One device: its state, and the condition variable its waits wait on.
pub(crate) struct Device {
    id: u32,
    state: Mutex<State>,
    changed: Condvar,
}

impl Device {
    fn new(id: u32) -> Self {
        Self { id, state: Mutex::new(State::new(0)), changed: Condvar::new() }
    }

    /// This device's id.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under the lock is caught at the FFI boundary; the state stays usable.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wakes every host thread waiting for a change on this device (an event, stream or device
    /// synchronize, a healthy destroy, a pageable copy). Stream workers sleep on their own
    /// condition variables ([`State::refresh`]).
    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }

    /// Waits for a change on this device, at most until `deadline` (`None`: no limit).
    /// Returns the guard and whether the deadline has passed.
    pub(crate) fn wait<'a>(
        &self,
        guard: MutexGuard<'a, State>,
        deadline: Option<Instant>,
    ) -> (MutexGuard<'a, State>, bool) {
        wait_until(&self.changed, guard, deadline)
    }
}

/// Waits on `condvar` (with a device's lock), at most until `deadline` (`None`: no limit).
/// Returns the guard and whether the deadline has passed.
fn wait_until<'a>(
    condvar: &Condvar,
    guard: MutexGuard<'a, State>,
    deadline: Option<Instant>,
) -> (MutexGuard<'a, State>, bool) {
    let Some(deadline) = deadline else {
        let guard = condvar.wait(guard).unwrap_or_else(std::sync::PoisonError::into_inner);
        return (guard, false);
    };
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return (guard, true);
    }
    let (guard, _) =
        condvar.wait_timeout(guard, left).unwrap_or_else(std::sync::PoisonError::into_inner);
    (guard, Instant::now() >= deadline)
}

/// The fake's device-side timing: tasks take no time of their own, and an async copy moves a
/// KiB in 100 ns (about a host `memcpy`), so a big copy takes real time as the old worker's
/// `memcpy` did and can outlast a wait's timeout (the device check's overrun step).
const COPY_TIMING: Timing = Timing {
    task_switch: 0,
    kernel_start_latency: 0,
    event_task: 0,
    copy_task: 0,
    copy_ns_per_kib: 100,
};

/// What the probe reports as the SoC name.
pub(crate) enum SocName {
    Default,
    Custom(CString),
    Null,
}

/// A live stream's worker: its condition variable, and what it last saw of its stream.
struct Worker {
    wake: Arc<Condvar>,
    seen: StreamNext,
}

/// One device's state: its model, its pinned host allocations, its counters and its stream
/// workers.
pub(crate) struct State {
    /// Threads inside a device wait on this device now (an event, stream or device
    /// synchronize that has blocked at least once): a force reset meanwhile is a reset under
    /// a wait.
    pub(crate) waits_inside: u64,
    /// The context generations before this model's (whole-fake resets).
    base_generation: u64,
    /// The device: streams, events, device memory, sticky codes, runs, fault rules, switches.
    pub(crate) model: device_model::Device,
    /// Pinned host memory (`aclrtMallocHost`), by address.
    pub(crate) host_allocations: BTreeMap<usize, Box<[u8]>>,
    pub(crate) counters: FakeCounters,
    pub(crate) workers: Vec<JoinHandle<()>>,
    /// Each live stream's worker.
    wakes: BTreeMap<u64, Worker>,
    /// `SWITCH_EVENT_WAIT_STALL_MS`: every event wait stays this long inside the call before
    /// it looks at its event (the host's call, not the device: the fake's own switch).
    pub(crate) event_wait_stall_ms: u32,
    /// The live events created with `ACL_EVENT_TIME_LINE`: only they give a timestamp
    /// (`aclrtEventGetTimestamp`).
    pub(crate) timeline_events: std::collections::BTreeSet<u64>,
}

impl State {
    fn new(base_generation: u64) -> Self {
        Self {
            waits_inside: 0,
            base_generation,
            model: device_model::Device::new(Semantics::DEVICE, COPY_TIMING, 0),
            host_allocations: BTreeMap::new(),
            counters: FakeCounters::ZERO,
            workers: Vec::new(),
            event_wait_stall_ms: 0,
            timeline_events: std::collections::BTreeSet::new(),
            wakes: BTreeMap::new(),
        }
    }

    /// Context generation: bumped by every force reset of this device.
    pub(crate) fn generation(&self) -> u64 {
        self.base_generation + self.model.generation()
    }

    /// Moves the device to the device clock now, with the process's op timeout: every task
    /// due by now has started or ended. Returns whether anything moved (the caller notifies
    /// the host threads waiting on the device).
    pub(crate) fn advance(&mut self) -> bool {
        let timeout_us = op_timeout_us();
        self.model.set_op_timeout(
            (timeout_us != NEVER_OP_TIMEOUT_US).then(|| timeout_us.saturating_mul(1_000)),
        );
        let now = device_now_ns();
        let moved =
            self.model.advance(now, &mut FakeHost { pinned: &mut self.host_allocations }) > 0;
        if moved {
            self.refresh();
        }
        moved
    }

    /// Wakes each stream's worker whose next time changed (a task queued, started, ended, its
    /// wait released, its stream gone).
    pub(crate) fn refresh(&mut self) {
        for (&id, worker) in &mut self.wakes {
            let next = self.model.stream_next(id);
            if next != worker.seen {
                worker.seen = next;
                worker.wake.notify_all();
            }
        }
        self.wakes.retain(|_, worker| worker.seen != StreamNext::Gone);
    }

    /// A new stream's worker, started after the model made stream `id`.
    pub(crate) fn add_worker(&mut self, id: u64, worker: JoinHandle<()>, wake: Arc<Condvar>) {
        self.workers.retain(|w| !w.is_finished());
        self.workers.push(worker);
        self.wakes.insert(id, Worker { wake, seen: StreamNext::Idle });
    }

    /// Wakes every stream's worker, to look at its stream again (a change of the device's
    /// semantics).
    pub(crate) fn wake_workers(&self) {
        for worker in self.wakes.values() {
            worker.wake.notify_all();
        }
    }

    /// `aclrtResetDeviceForce` on this device once its rules let it: every stream, event,
    /// device and pinned host allocation killed (and counted as reclaimed), a new context
    /// generation. Fault rules, the semantic switches, the stream numbering (unless switched)
    /// and the counters stay. A thread inside a wait on this device makes it a reset under a
    /// wait: counted, and the waiter returns [`RESET_UNDER_WAIT`](crate::RESET_UNDER_WAIT)
    /// when it wakes.
    pub(crate) fn force_reset(&mut self) -> Result<(), AclError> {
        let reclaimed = self.model.force_reset(device_now_ns()).map_err(AclCode::raw)?;
        if self.waits_inside > 0 {
            self.counters.resets_under_wait += 1;
            RESETS_UNDER_WAIT_TOTAL.fetch_add(1, Ordering::AcqRel);
        }
        let c = &mut self.counters;
        c.force_resets += 1;
        c.streams_reclaimed += reclaimed.streams;
        c.events_reclaimed += reclaimed.events;
        c.allocations_reclaimed += reclaimed.allocations;
        // Pinned host memory belongs to the context too [I]: the lane forgets it after a
        // reset and never frees it, so the reset reclaims it (no stream is left to copy into
        // it).
        c.host_allocations_reclaimed += self.host_allocations.len() as u64;
        for (_, data) in std::mem::take(&mut self.host_allocations) {
            retire_host(data);
        }
        // Every stream is gone: each worker sees it and exits.
        self.refresh();
        self.refresh_live_counts();
        Ok(())
    }

    /// Whether `[address, address + len)` lies in one live pinned host allocation.
    pub(crate) fn pinned(&self, address: usize, len: usize) -> bool {
        pinned_in(&self.host_allocations, address, len)
    }

    pub(crate) fn refresh_live_counts(&mut self) {
        let (streams, events, allocations) = self.model.live_counts();
        let c = &mut self.counters;
        c.live_streams = streams;
        c.live_events = events;
        c.live_allocations = allocations;
        c.live_host_allocations = self.host_allocations.len() as u64;
    }
}

/// Whether `[address, address + len)` lies in one allocation of `pinned`.
fn pinned_in(pinned: &BTreeMap<usize, Box<[u8]>>, address: usize, len: usize) -> bool {
    pinned.range(..=address).next_back().is_some_and(|(&base, data)| {
        (address - base).checked_add(len).is_some_and(|end| end <= data.len())
    })
}

/// The host side of a copy task when it runs: pinned memory must still be allocated (a buffer
/// freed too early fails the stream with 107000 instead of being written); pageable memory is
/// the caller's, who waits inside `aclrtMemcpyAsync` until the copy ran.
pub(crate) struct FakeHost<'a> {
    pub(crate) pinned: &'a mut BTreeMap<usize, Box<[u8]>>,
}

impl FakeHost<'_> {
    fn pinned_slice(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let address = usize::try_from(addr).ok()?;
        let (&base, data) = self.pinned.range_mut(..=address).next_back()?;
        let offset = address - base;
        data.get_mut(offset..offset.checked_add(len)?)
    }
}

impl HostMemory for FakeHost<'_> {
    fn read(&mut self, addr: u64, len: usize, pinned: bool) -> Result<Vec<u8>, AclCode> {
        if pinned {
            return self
                .pinned_slice(addr, len)
                .map(|bytes| bytes.to_vec())
                .ok_or(AclCode::RtParamInvalid);
        }
        let mut bytes = vec![0_u8; len];
        // SAFETY: a pageable host source is the caller's pointer, valid for `len` bytes until
        // the copy has run (the call's contract; `aclrtMemcpyAsync` returns only after the
        // task ran), and `bytes` is a distinct buffer of `len` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(addr as usize as *const u8, bytes.as_mut_ptr(), len)
        };
        Ok(bytes)
    }

    fn write(&mut self, addr: u64, bytes: &[u8], pinned: bool) -> Result<(), AclCode> {
        if pinned {
            let out = self.pinned_slice(addr, bytes.len()).ok_or(AclCode::RtParamInvalid)?;
            out.copy_from_slice(bytes);
            return Ok(());
        }
        // SAFETY: a pageable host destination is the caller's pointer, valid for
        // `bytes.len()` writable bytes until the copy has run (the call's contract), distinct
        // from `bytes`.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), addr as usize as *mut u8, bytes.len());
        }
        Ok(())
    }

    fn holds(&self, addr: u64, len: usize, pinned: bool) -> bool {
        !pinned || usize::try_from(addr).is_ok_and(|a| pinned_in(self.pinned, a, len))
    }
}

/// Starts the worker thread of stream `id` on `device`.
pub(crate) fn spawn_worker(
    device: &'static Device,
    id: u64,
    wake: Arc<Condvar>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(format!("fake-acl-{}-stream-{id:#x}", device.id)).spawn(
        move || {
            punctual_timers();
            worker(device, id, &wake);
        },
    )
}

/// The timer slack a stream's worker runs with (ns): Linux's least. A device's kernel ends
/// when its time is up; a normal thread's timed wait may end up to 50 us late (the default
/// slack), by an amount that depends on which other timers of the process it is merged with.
/// On a bench that lateness lands inside a run's device span, differently in each arm: the
/// lane and the loop it is compared with ran the same period, yet their spans differed by
/// 25 us and their gaps by as much the other way (docs/performance.md).
pub const WORKER_TIMER_SLACK_NS: u64 = 1;

/// Sets the calling thread's timer slack to [`WORKER_TIMER_SLACK_NS`] (Linux; elsewhere, and
/// where the call fails, the thread keeps its slack: the kernels only end later).
fn punctual_timers() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_TIMERSLACK reads one unsigned long by value and touches no memory;
        // it changes only the calling thread's own timer slack.
        let _ =
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, WORKER_TIMER_SLACK_NS as libc::c_ulong) };
    }
}

/// Runs stream `id` until it is destroyed (or its device reset): it sleeps on its own
/// condition variable until the model's next time for its stream (or until woken, while its
/// stream is idle or waits on something else), then moves the device to now.
fn worker(device: &'static Device, id: u64, wake: &Condvar) {
    let mut state = device.lock();
    loop {
        if state.advance() {
            device.notify();
        }
        let next = state.model.stream_next(id);
        if let Some(worker) = state.wakes.get_mut(&id) {
            worker.seen = next;
        }
        let deadline = match next {
            StreamNext::Gone => return,
            StreamNext::Idle | StreamNext::Blocked => None,
            StreamNext::At(at) => {
                let left = Duration::from_nanos(at.saturating_sub(device_now_ns()));
                Instant::now().checked_add(left)
            }
        };
        state = wait_until(wake, state, deadline).0;
    }
}

/// The host address of a copy (`None` for device to device).
pub(crate) fn host_side(kind: i32, dst: usize, src: usize) -> Option<usize> {
    match kind {
        ACL_MEMCPY_HOST_TO_DEVICE => Some(src),
        ACL_MEMCPY_DEVICE_TO_HOST => Some(dst),
        _ => None,
    }
}

/// Checks a copy's arguments and device side(s) without touching memory.
pub(crate) fn check_copy(
    state: &State,
    dst: usize,
    dest_max: usize,
    src: usize,
    count: usize,
    kind: i32,
) -> Result<(), AclError> {
    if dst == 0 || src == 0 {
        return Err(ACL_ERROR_INVALID_PARAM);
    }
    if count > dest_max {
        return Err(ACL_ERROR_RT_PARAM_INVALID);
    }
    if !(ACL_MEMCPY_HOST_TO_HOST..=ACL_MEMCPY_DEVICE_TO_DEVICE).contains(&kind) {
        return Err(ACL_ERROR_RT_PARAM_INVALID);
    }
    let device_dst = matches!(kind, ACL_MEMCPY_HOST_TO_DEVICE | ACL_MEMCPY_DEVICE_TO_DEVICE);
    let device_src = matches!(kind, ACL_MEMCPY_DEVICE_TO_HOST | ACL_MEMCPY_DEVICE_TO_DEVICE);
    let on_device = |address: usize| state.model.bytes(address as u64, count).is_some();
    if (device_dst && !on_device(dst)) || (device_src && !on_device(src)) {
        return Err(ACL_ERROR_RT_PARAM_INVALID);
    }
    Ok(())
}

/// Runs `body`, a device wait of the calling thread on `device` (event, stream or device
/// synchronize), counted as a thread inside a wait. `body` gets the generation at entry and
/// must end with [`RESET_UNDER_WAIT`](crate::RESET_UNDER_WAIT) when [`wait_inside`] says the device was reset.
pub(crate) fn counted_wait<'a>(
    mut state: MutexGuard<'a, State>,
    body: impl FnOnce(MutexGuard<'a, State>, u64) -> (MutexGuard<'a, State>, AclError),
) -> AclError {
    let generation = state.generation();
    state.waits_inside += 1;
    let (mut state, code) = body(state, generation);
    state.waits_inside = state.waits_inside.saturating_sub(1);
    code
}

/// One wait inside [`counted_wait`]: the guard, whether `deadline` passed, and `Err` when
/// the device was reset meanwhile (a force reset or `runlanefake_reset`): the context the
/// wait read is gone. Real ACL would read the deleted device object here, a use-after-free
/// (device-truth §5); the fake returns [`RESET_UNDER_WAIT`](crate::RESET_UNDER_WAIT) instead.
pub(crate) fn wait_inside<'a>(
    device: &Device,
    state: MutexGuard<'a, State>,
    deadline: Option<Instant>,
    generation: u64,
) -> Result<(MutexGuard<'a, State>, bool), MutexGuard<'a, State>> {
    let (mut state, expired) = device.wait(state, deadline);
    if state.generation() != generation {
        return Err(state);
    }
    if state.advance() {
        device.notify();
    }
    Ok((state, expired))
}
