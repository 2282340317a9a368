//! The fake devices: [`MAX_DEVICES`] independent device states, each behind its own mutex and
//! condition variable, and the process-wide part (the `aclInit` flag, the SoC name) behind
//! another. Streams are FIFO task queues, each run by its own worker thread in real time;
//! every state change notifies its device's condition variable, and every wait is a timed
//! condvar wait on the device it waits for, so a busy or hung device never wakes another's
//! waiters and sixteen lanes never contend on one lock.
//!
//! A thread's binding is a thread-local (device id, context generation); a call acts on the
//! thread's current device once that device's generation still matches (107002 otherwise).
//! Handles carry their device: `seq << 12 | device << 4` with one process-wide `seq` that never
//! repeats, so a handle is unique across devices, resets and [`reset_all`], and a stale or
//! foreign handle never matches a live one.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ascend_cl_sys::types::*;

use status_latch::{HeaderLayout, RECORD_BYTES, RecordSource, RecordWrite};

use crate::{
    DEFAULT_DEVICE_COUNT, ENGINE_AICORE, ENGINE_AICPU, ENGINE_ANY, FakeCounters, MAX_DEVICES,
    OP_TIMEOUT_CODE_ON_BOTH_STREAMS, OP_TIMEOUT_CODE_ON_OWN_STREAM,
    OP_TIMEOUT_CODE_ON_PARTNER_STREAM, Outcome,
};

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
        Self {
            initialised: false,
            soc_name: SocName::Default,
        }
    }
}

/// The process-wide state, locked.
pub(crate) fn process() -> MutexGuard<'static, Process> {
    // A panic under the lock is caught at the FFI boundary; the state stays usable.
    PROCESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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
    let state = device.lock();
    if state.generation != binding.generation {
        return Err(ACL_ERROR_RT_CONTEXT_NULL);
    }
    Ok((device, state))
}

/// Makes `device`'s current context the calling thread's (`aclrtSetDevice`).
pub(crate) fn bind_current_thread(device: &Device, state: &State) {
    let binding = Binding {
        device: device.id,
        generation: state.generation,
    };
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
        set.iter()
            .any(|b| b.device == device.id && b.generation == state.generation)
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
    RETIRED_HOST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(data);
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
        .is_some_and(|other| other.lock().streams.contains_key(&handle));
    if foreign {
        ACL_ERROR_RT_STREAM_CONTEXT
    } else {
        ACL_ERROR_RT_INVALID_HANDLE
    }
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
        let generation = state.generation + 1;
        // Threads still inside a wait leave it by themselves (with RESET_UNDER_WAIT): their
        // count stays right.
        let waits_inside = state.waits_inside;
        state.wake_workers();
        *state = State::new(generation);
        state.waits_inside = waits_inside;
        drop(state);
        device.notify();
    }
    RETIRED_HOST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clear();
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
        Self {
            id,
            state: Mutex::new(State::new(0)),
            changed: Condvar::new(),
        }
    }

    /// This device's id.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under the lock is caught at the FFI boundary; the state stays usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wakes every thread waiting for a change on this device: a wait on an event or a
    /// stream, a stream's worker held by a cross-stream wait. A stream's worker sleeping on
    /// its own queue or kernel is woken by [`Stream::enqueue`] or
    /// [`State::wake_workers`] instead.
    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }

    /// As [`wait`](Self::wait), on stream `id`'s own condition variable (see
    /// [`Stream::wake`]); `expired` and no wait when the stream is gone.
    fn wait_on_stream<'a>(
        &self,
        guard: MutexGuard<'a, State>,
        id: u64,
        deadline: Option<Instant>,
    ) -> (MutexGuard<'a, State>, bool) {
        let Some(wake) = guard.streams.get(&id).map(|s| Arc::clone(&s.wake)) else {
            return (guard, true);
        };
        wait_until(&wake, guard, deadline)
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
        let guard = condvar
            .wait(guard)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        return (guard, false);
    };
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return (guard, true);
    }
    let (guard, _) = condvar
        .wait_timeout(guard, left)
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    (guard, Instant::now() >= deadline)
}

/// What the probe reports as the SoC name.
pub(crate) enum SocName {
    Default,
    Custom(CString),
    Null,
}

/// A queued unit of stream work.
pub(crate) enum Task {
    Kernel(Kernel),
    /// An `aclrtMemcpyAsync`, checked at submission, performed when the stream reaches it.
    Copy(AsyncCopy),
    /// An `aclrtStreamWaitEvent`: holds the stream until the capture it took at submission
    /// is complete (a later record of the event does not move it, as in ACL).
    Wait(Capture),
}

/// A queued `aclrtMemcpyAsync`.
pub(crate) struct AsyncCopy {
    pub(crate) dst: usize,
    pub(crate) src: usize,
    pub(crate) count: usize,
    pub(crate) kind: i32,
    /// Its host side lies in pinned memory (`aclrtMallocHost`): the fake checks at task time
    /// that the allocation is still alive, so a buffer freed too early fails the stream
    /// instead of being written.
    pub(crate) pinned: bool,
    /// A copy fault rule's code: the copy fails on the stream and no byte lands.
    pub(crate) fail: Option<AclError>,
}

/// An event: the work its last record captured, and whether another stream may wait on it.
pub(crate) struct Event {
    pub(crate) capture: Capture,
    /// Created with `ACL_EVENT_SYNC` (`aclrtStreamWaitEvent` needs it).
    pub(crate) sync: bool,
}

pub(crate) struct Kernel {
    /// The run this kernel belongs to (`runlanefake_launch_run` with a non-NULL handshake),
    /// or `None`: a kernel alone.
    pub(crate) run: Option<RunKey>,
    /// Device address of the run's 280-byte result record (only the AICPU kernel's counts
    /// in a run), or 0: publish nothing.
    pub(crate) record: usize,
    /// The run's epoch, stamped into its record.
    pub(crate) epoch: u64,
    pub(crate) engine: u32,
    pub(crate) duration: Duration,
    pub(crate) outcome: Outcome,
    /// Device address of the 16-byte timing buffer (start, end: LE u64 ns), or 0.
    pub(crate) timing: usize,
    /// Device address of the status header, or 0.
    pub(crate) header: usize,
    pub(crate) header_bytes: Vec<u8>,
}

pub(crate) struct Stream {
    /// Its number (`aclrtStreamGetId`): small, unique on its device until
    /// `runlanefake_reset` (or, with `RESET_RESTARTS_STREAM_NUMBERING`, until a force reset).
    pub(crate) number: i32,
    pub(crate) queue: VecDeque<Task>,
    pub(crate) submitted: u64,
    pub(crate) completed: u64,
    pub(crate) running: bool,
    /// Kernels queued or running on this stream (a launch behind one is a queued launch).
    pub(crate) kernels_out: u64,
    /// Sticky: the first failed task's code, kept until the stream is destroyed or its
    /// device force-reset. Later tasks still run (continue-on-failure, device-truth §1),
    /// except under the legacy switch, where nothing more runs.
    pub(crate) error: Option<AclError>,
    /// Tasks taken off the queue so far (the index of the running task).
    pub(crate) popped: u64,
    /// Tasks whose own result a caller waits for (a pageable `aclrtMemcpyAsync`): task index
    /// to `None` while pending, then its code (0 success).
    pub(crate) watched: BTreeMap<u64, Option<AclError>>,
    /// What this stream's worker sleeps on while its queue is empty or a kernel runs (with the
    /// device's lock): woken by a task queued here, the stream's removal, or a change of the
    /// device's semantics. One condition variable a stream, not the device's, because every
    /// change on a device would otherwise wake every stream's worker: a herd of host threads
    /// that no device has, which on a small host delays the very launches it measures.
    pub(crate) wake: Arc<Condvar>,
}

impl Stream {
    /// A new, empty, healthy stream with number `number`.
    pub(crate) fn new(number: i32) -> Self {
        Self {
            number,
            queue: VecDeque::new(),
            submitted: 0,
            completed: 0,
            running: false,
            kernels_out: 0,
            error: None,
            popped: 0,
            watched: BTreeMap::new(),
            wake: Arc::new(Condvar::new()),
        }
    }

    /// Queues `task` and wakes this stream's worker.
    pub(crate) fn enqueue(&mut self, task: Task) {
        self.queue.push_back(task);
        self.submitted += 1;
        self.wake.notify_all();
    }

    /// Nothing left to run: drained, or (legacy) halted by a fault.
    fn idle(&self, legacy: bool) -> bool {
        (legacy && self.error.is_some()) || (self.queue.is_empty() && !self.running)
    }
}

/// The switches of [`crate::Semantics`], as one device keeps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Semantics {
    /// `ENQUEUE_AFTER_FAULT` = 1: an enqueue on a stream holding a sticky code is refused
    /// with 507899.
    pub(crate) refuse_enqueue_after_fault: bool,
    /// `OP_TIMEOUT_CODE_ON`: 0 own stream, 1 partner stream, 2 both.
    pub(crate) op_timeout_code_on: u32,
    /// `LEGACY_EVENT_FAULTS` = 1: event waits return the fault, nothing runs after it.
    pub(crate) legacy_event_faults: bool,
    /// `LATCH_FAULTS_STREAM` = 1: an AICPU kernel ending [`Outcome::Latch`] returns a fatal
    /// status, leaving 507018 sticky on its stream.
    pub(crate) latch_faults_stream: bool,
    /// `RESET_DROPS_EXCEPTION_CALLBACK` = 1: a force reset of this device empties the
    /// process's exception callback slot.
    pub(crate) reset_drops_exception_callback: bool,
    /// `RESET_RESTARTS_STREAM_NUMBERING` = 1: a force reset of this device starts its
    /// stream numbering again at 1.
    pub(crate) reset_restarts_stream_numbering: bool,
    /// `EVENT_WAIT_STALL_MS`: every event wait stays this long inside the call before it
    /// looks at its event.
    pub(crate) event_wait_stall_ms: u32,
}

impl Semantics {
    /// What a real device does (device-truth §1).
    pub(crate) const DEFAULT: Self = Self {
        refuse_enqueue_after_fault: false,
        op_timeout_code_on: OP_TIMEOUT_CODE_ON_OWN_STREAM,
        legacy_event_faults: false,
        latch_faults_stream: true,
        reset_drops_exception_callback: false,
        reset_restarts_stream_numbering: false,
        event_wait_stall_ms: 0,
    };
}

/// The two kernels of one run share a handshake address and an epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RunKey {
    pub(crate) handshake: usize,
    pub(crate) epoch: u64,
}

/// One run's kernels (at most one per engine) and where its record goes.
pub(crate) struct Run {
    kernels: Vec<RunKernel>,
    /// The AICPU kernel's record address (0: none given yet, or none).
    record: usize,
}

struct RunKernel {
    engine: u32,
    stream: u64,
    /// What its ending lets the run publish; `None` while it runs.
    end: Option<Contribution>,
}

/// What one kernel's ending lets its run publish.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Contribution {
    /// Nothing: a fault, a kill, a silent exit, an undecodable latch.
    Blocks,
    /// An ok record.
    Ok,
    /// An error record with the latched runtime code and the header's error tail.
    Error { code: i32, payload: Vec<u8> },
}

/// How a kernel ended.
pub(crate) enum Ending {
    /// Exited cleanly (Ok, Latch, Silent), header written.
    Clean,
    /// A device exception (or a header freed under it).
    Fault(AclError),
    /// Killed by the op timeout.
    Killed(AclError),
    /// Exited cleanly with a fatal status (an AICPU latch): its record is published, and the
    /// code is sticky on its stream.
    Fatal(AclError),
}

#[derive(Clone, Copy)]
pub(crate) enum Capture {
    /// Never recorded, or its stream finished the captured work before it was destroyed.
    Complete,
    Pending {
        stream: u64,
        upto: u64,
    },
    /// Its stream was destroyed with the captured work unfinished.
    Aborted,
}

/// What an event's capture amounts to now.
pub(crate) enum EventState {
    Complete,
    NotReady,
    Failed(AclError),
}

/// A call-failure rule: the next `count` calls of `name`, after `skip`, fail with `code`.
pub(crate) struct CallFault {
    pub(crate) name: String,
    pub(crate) code: AclError,
    pub(crate) skip: u32,
    pub(crate) count: u32,
}

/// A copy rule: the next `count` async copies, after `skip`, fail on their stream with `code`
/// when the stream reaches them (the enqueue itself succeeds).
pub(crate) struct CopyFault {
    pub(crate) code: AclError,
    pub(crate) skip: u32,
    pub(crate) count: u32,
}

/// A kernel rule: the next `count` launches on `engine`, after `skip`, end with `outcome`
/// (and, for a latch, write `header_bytes` as their status header).
pub(crate) struct KernelFault {
    pub(crate) outcome: Outcome,
    pub(crate) engine: u32,
    pub(crate) skip: u32,
    pub(crate) count: u32,
    pub(crate) header_bytes: Vec<u8>,
}

pub(crate) struct Allocation {
    pub(crate) data: Box<[u8]>,
    pub(crate) size: usize,
}

/// One device's state: its context generation, op timeout, streams, events, allocations,
/// fault rules and counters.
pub(crate) struct State {
    /// Threads inside a device wait on this device now (an event, stream or device
    /// synchronize that has blocked at least once): a force reset meanwhile is a reset under
    /// a wait.
    pub(crate) waits_inside: u64,
    /// The number the next stream gets (`aclrtStreamGetId`); kept by a force reset, so a
    /// number taken before it never names a later stream, unless
    /// `RESET_RESTARTS_STREAM_NUMBERING` sets it back to 1 there.
    pub(crate) next_stream_number: i32,
    /// The semantic switches (`runlanefake_set_semantics`).
    pub(crate) semantics: Semantics,
    /// Runs with a kernel launched whose record is not settled yet.
    pub(crate) runs: BTreeMap<RunKey, Run>,
    /// Context generation: bumped by every force reset of this device.
    pub(crate) generation: u64,
    pub(crate) streams: BTreeMap<u64, Stream>,
    pub(crate) events: BTreeMap<u64, Event>,
    pub(crate) allocations: BTreeMap<usize, Allocation>,
    pub(crate) host_allocations: BTreeMap<usize, Box<[u8]>>,
    pub(crate) call_faults: Vec<CallFault>,
    pub(crate) kernel_faults: Vec<KernelFault>,
    pub(crate) copy_faults: Vec<CopyFault>,
    pub(crate) counters: FakeCounters,
    pub(crate) workers: Vec<JoinHandle<()>>,
}

impl State {
    const fn new(generation: u64) -> Self {
        Self {
            waits_inside: 0,
            next_stream_number: 1,
            semantics: Semantics::DEFAULT,
            runs: BTreeMap::new(),
            generation,
            streams: BTreeMap::new(),
            events: BTreeMap::new(),
            allocations: BTreeMap::new(),
            host_allocations: BTreeMap::new(),
            call_faults: Vec::new(),
            kernel_faults: Vec::new(),
            copy_faults: Vec::new(),
            counters: FakeCounters::ZERO,
            workers: Vec::new(),
        }
    }

    /// `aclrtResetDeviceForce` on this device: every stream, event, device and pinned host
    /// allocation killed (and counted as reclaimed), a new context generation. Fault rules,
    /// the semantic switches, the stream numbering (unless `RESET_RESTARTS_STREAM_NUMBERING`
    /// restarts it at 1) and the counters stay. A thread inside a wait on this device makes
    /// it a reset under a wait: counted, and the waiter returns
    /// [`RESET_UNDER_WAIT`](crate::RESET_UNDER_WAIT) when it wakes.
    pub(crate) fn force_reset(&mut self) {
        if self.waits_inside > 0 {
            self.counters.resets_under_wait += 1;
            RESETS_UNDER_WAIT_TOTAL.fetch_add(1, Ordering::AcqRel);
        }
        let c = &mut self.counters;
        c.force_resets += 1;
        c.streams_reclaimed += self.streams.len() as u64;
        c.events_reclaimed += self.events.len() as u64;
        c.allocations_reclaimed += self.allocations.len() as u64;
        // Pinned host memory belongs to the context too [I]: the lane forgets it after a
        // reset and never frees it, so the reset reclaims it (no stream is left to copy into
        // it).
        c.host_allocations_reclaimed += self.host_allocations.len() as u64;
        let streams: Vec<u64> = self.streams.keys().copied().collect();
        for id in streams {
            self.remove_stream(id);
        }
        self.events.clear();
        self.allocations.clear();
        for (_, data) in std::mem::take(&mut self.host_allocations) {
            retire_host(data);
        }
        self.generation += 1;
        if self.semantics.reset_restarts_stream_numbering {
            self.next_stream_number = 1;
        }
        self.refresh_live_counts();
    }

    /// The failure a call-fault rule injects into this call of `name`, if any.
    pub(crate) fn injected_failure(&mut self, name: &str) -> Option<AclError> {
        let index = self.call_faults.iter().position(|f| f.name == name)?;
        let rule = &mut self.call_faults[index];
        if rule.skip > 0 {
            rule.skip -= 1;
            return None;
        }
        let code = rule.code;
        rule.count -= 1;
        if rule.count == 0 {
            self.call_faults.remove(index);
        }
        Some(code)
    }

    /// Applies the first matching kernel rule to a launch.
    pub(crate) fn apply_kernel_fault(&mut self, kernel: &mut Kernel) {
        let Some(index) = self
            .kernel_faults
            .iter()
            .position(|f| f.engine == ENGINE_ANY || f.engine == kernel.engine)
        else {
            return;
        };
        let rule = &mut self.kernel_faults[index];
        if rule.skip > 0 {
            rule.skip -= 1;
            return;
        }
        kernel.outcome = rule.outcome;
        if rule.outcome == Outcome::Latch {
            kernel.header_bytes.clone_from(&rule.header_bytes);
        }
        rule.count -= 1;
        if rule.count == 0 {
            self.kernel_faults.remove(index);
        }
    }

    /// The code the first copy rule gives this async copy, if any (consumed like a kernel
    /// rule).
    pub(crate) fn apply_copy_fault(&mut self) -> Option<AclError> {
        let rule = self.copy_faults.first_mut()?;
        if rule.skip > 0 {
            rule.skip -= 1;
            return None;
        }
        let code = rule.code;
        rule.count -= 1;
        if rule.count == 0 {
            self.copy_faults.remove(0);
        }
        Some(code)
    }

    /// Whether `[address, address + len)` lies in one live pinned host allocation.
    pub(crate) fn pinned(&self, address: usize, len: usize) -> bool {
        self.host_allocations
            .range(..=address)
            .next_back()
            .is_some_and(|(&base, data)| {
                (address - base)
                    .checked_add(len)
                    .is_some_and(|end| end <= data.len())
            })
    }

    /// The bytes `[address, address + len)` of one device allocation, if they lie in one.
    pub(crate) fn device_bytes(&mut self, address: usize, len: usize) -> Option<&mut [u8]> {
        let (&base, allocation) = self.allocations.range_mut(..=address).next_back()?;
        let offset = address - base;
        let end = offset.checked_add(len)?;
        if end > allocation.size {
            return None;
        }
        Some(&mut allocation.data[offset..end])
    }

    pub(crate) fn event_state(&self, capture: Capture) -> EventState {
        match capture {
            Capture::Complete => EventState::Complete,
            Capture::Aborted => EventState::Failed(ACL_ERROR_RT_STREAM_ABORT),
            Capture::Pending { stream, upto } => match self.streams.get(&stream) {
                None => EventState::Failed(ACL_ERROR_RT_STREAM_ABORT),
                // Every finished task counts, failed or not: completion does not propagate a
                // failed predecessor (device-truth §1).
                Some(s) if s.completed >= upto => EventState::Complete,
                Some(s) if self.semantics.legacy_event_faults => {
                    s.error.map_or(EventState::NotReady, EventState::Failed)
                }
                Some(_) => EventState::NotReady,
            },
        }
    }

    /// Removes a stream (its worker exits when it notices) and settles the events that
    /// captured its work.
    pub(crate) fn remove_stream(&mut self, id: u64) {
        let Some(stream) = self.streams.remove(&id) else {
            return;
        };
        // Its worker, asleep on its queue or a kernel, sees the removal and exits.
        stream.wake.notify_all();
        // A run with a kernel on this stream can no longer publish.
        self.runs
            .retain(|_, run| run.kernels.iter().all(|k| k.stream != id));
        let legacy = self.semantics.legacy_event_faults;
        for event in self.events.values_mut() {
            if let Capture::Pending { stream: s, upto } = event.capture {
                if s == id {
                    let clean = !legacy || stream.error.is_none();
                    event.capture = if stream.completed >= upto && clean {
                        Capture::Complete
                    } else {
                        Capture::Aborted
                    };
                }
            }
        }
    }

    /// Every stream idle (or, legacy, halted by a fault).
    pub(crate) fn all_idle(&self) -> bool {
        let legacy = self.semantics.legacy_event_faults;
        self.streams.values().all(|s| s.idle(legacy))
    }

    pub(crate) fn first_stream_error(&self) -> Option<AclError> {
        self.streams.values().find_map(|s| s.error)
    }

    pub(crate) fn stream_idle(&self, id: u64) -> Option<bool> {
        let legacy = self.semantics.legacy_event_faults;
        self.streams.get(&id).map(|s| s.idle(legacy))
    }

    /// Whether an enqueue on stream `id` is refused (`ENQUEUE_AFTER_FAULT` = 1 and the stream
    /// holds a sticky code).
    pub(crate) fn refuses_enqueue(&self, id: u64) -> bool {
        self.semantics.refuse_enqueue_after_fault
            && self.streams.get(&id).is_some_and(|s| s.error.is_some())
    }

    /// The process's op timeout; `None`: never (`aclrtSetOpExecuteTimeOutV2(0)`).
    pub(crate) fn op_timeout(&self) -> Option<Duration> {
        let timeout_us = op_timeout_us();
        (timeout_us != NEVER_OP_TIMEOUT_US).then(|| Duration::from_micros(timeout_us))
    }

    /// The number of stream `id` (`aclrtStreamGetId`), if it is live here.
    pub(crate) fn stream_number(&self, id: u64) -> Option<i32> {
        self.streams.get(&id).map(|s| s.number)
    }

    /// Whether a kernel of `engine` may join run `key` (107000 when the run already has one
    /// on that engine).
    pub(crate) fn check_run(&self, key: RunKey, engine: u32) -> Result<(), AclError> {
        let taken = self
            .runs
            .get(&key)
            .is_some_and(|run| run.kernels.iter().any(|k| k.engine == engine));
        if taken {
            Err(ACL_ERROR_RT_PARAM_INVALID)
        } else {
            Ok(())
        }
    }

    /// Registers a launched kernel with its run (checked by [`State::check_run`]).
    pub(crate) fn join_run(&mut self, kernel: &Kernel, stream: u64) {
        let Some(key) = kernel.run else {
            return;
        };
        let run = self.runs.entry(key).or_insert_with(|| Run {
            kernels: Vec::new(),
            record: 0,
        });
        if kernel.engine == ENGINE_AICPU {
            run.record = kernel.record;
        }
        run.kernels.push(RunKernel {
            engine: kernel.engine,
            stream,
            end: None,
        });
    }

    /// The stream of the other kernel of `kernel`'s run, if one was launched and its stream
    /// is alive.
    fn partner_stream(&self, kernel: &Kernel, own: u64) -> Option<u64> {
        let run = self.runs.get(&kernel.run?)?;
        run.kernels
            .iter()
            .find(|k| k.engine != kernel.engine)
            .map(|k| k.stream)
            .filter(|stream| *stream != own && self.streams.contains_key(stream))
    }

    /// Settles a kernel's ending on its run, publishing the run's record when this kernel is
    /// the run's last to end (before its task completes, so an event recorded after it sees
    /// the record).
    fn end_kernel(&mut self, kernel: &Kernel, clean: bool) {
        let Some(key) = kernel.run else {
            // A kernel alone: its own ending decides, by the AICPU rule.
            if kernel.record != 0 {
                let contribution = contribution(kernel, clean, true);
                self.publish(kernel.record, kernel.epoch, &contribution);
            }
            return;
        };
        let Some(run) = self.runs.get_mut(&key) else {
            return;
        };
        if let Some(k) = run.kernels.iter_mut().find(|k| k.engine == kernel.engine) {
            k.end = Some(contribution(kernel, clean, kernel.engine == ENGINE_AICPU));
        }
        let both_ended = run.kernels.len() == 2 && run.kernels.iter().all(|k| k.end.is_some());
        if !both_ended {
            return;
        }
        let Some(run) = self.runs.remove(&key) else {
            return;
        };
        let end_of = |engine| {
            run.kernels
                .iter()
                .find(|k| k.engine == engine)
                .and_then(|k| k.end.clone())
        };
        if end_of(ENGINE_AICORE) == Some(Contribution::Ok) && run.record != 0 {
            if let Some(aicpu) = end_of(ENGINE_AICPU) {
                self.publish(run.record, key.epoch, &aicpu);
            }
        }
    }

    /// Writes a record stamped `epoch` at `record`, when the contribution publishes one and
    /// the region is still allocated (it was checked at launch; one freed since gets nothing).
    fn publish(&mut self, record: usize, epoch: u64, contribution: &Contribution) {
        let write = match contribution {
            Contribution::Blocks => return,
            Contribution::Ok => RecordWrite::Ok,
            Contribution::Error { code, payload } => RecordWrite::Error {
                code: *code,
                source: RecordSource::Header,
                payload,
            },
        };
        let bytes = status_latch::encode_record(epoch, &write);
        if let Some(region) = self.device_bytes(record, RECORD_BYTES) {
            region.copy_from_slice(&bytes);
        }
    }

    /// Wakes every stream's worker, to look at its stream again (a change of the device's
    /// semantics, its reset).
    pub(crate) fn wake_workers(&self) {
        for stream in self.streams.values() {
            stream.wake.notify_all();
        }
    }

    pub(crate) fn refresh_live_counts(&mut self) {
        let c = &mut self.counters;
        c.live_streams = self.streams.len() as u64;
        c.live_events = self.events.len() as u64;
        c.live_allocations = self.allocations.len() as u64;
        c.live_host_allocations = self.host_allocations.len() as u64;
    }
}

/// Starts the worker thread of stream `id` on `device`.
pub(crate) fn spawn_worker(device: &'static Device, id: u64) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("fake-acl-{}-stream-{id:#x}", device.id))
        .spawn(move || {
            punctual_timers();
            worker(device, id)
        })
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
        let _ = unsafe {
            libc::prctl(
                libc::PR_SET_TIMERSLACK,
                WORKER_TIMER_SLACK_NS as libc::c_ulong,
            )
        };
    }
}

/// Runs stream `id`'s tasks in order until the stream is destroyed (or its device reset).
/// A failed task leaves its code sticky on the stream and the next task runs
/// (continue-on-failure, device-truth §1); under the legacy switch nothing more runs.
fn worker(device: &'static Device, id: u64) {
    let mut state = device.lock();
    loop {
        let legacy = state.semantics.legacy_event_faults;
        let (task, index) = match state.streams.get_mut(&id) {
            None => return,
            Some(stream) if legacy && stream.error.is_some() => {
                state = device.wait_on_stream(state, id, None).0;
                continue;
            }
            Some(stream) => match stream.queue.pop_front() {
                Some(task) => {
                    stream.running = true;
                    stream.popped += 1;
                    (task, stream.popped)
                }
                None => {
                    state = device.wait_on_stream(state, id, None).0;
                    continue;
                }
            },
        };
        let kernel = matches!(task, Task::Kernel(_));
        let (guard, result) = match task {
            Task::Copy(task) => {
                let result = run_copy(&mut state, &task);
                (state, Some(result))
            }
            Task::Kernel(kernel) => {
                let (mut guard, ending) = run_kernel(device, state, id, &kernel);
                let result = ending.map(|ending| settle_kernel(&mut guard, id, &kernel, ending));
                (guard, result)
            }
            Task::Wait(capture) => wait_for(device, state, id, capture),
        };
        state = guard;
        let Some(result) = result else {
            return;
        };
        let legacy = state.semantics.legacy_event_faults;
        let Some(stream) = state.streams.get_mut(&id) else {
            return;
        };
        stream.running = false;
        if kernel {
            stream.kernels_out = stream.kernels_out.saturating_sub(1);
        }
        if let Some(slot) = stream.watched.get_mut(&index) {
            *slot = Some(result.err().unwrap_or(ACL_SUCCESS));
        }
        match result {
            Ok(()) => stream.completed += 1,
            Err(code) if legacy => stream.error = Some(code),
            Err(code) => {
                stream.completed += 1;
                stream.error.get_or_insert(code);
            }
        }
        device.notify();
    }
}

/// A kernel's ending as its own stream's task result, with the op-timeout code placed by
/// the `OP_TIMEOUT_CODE_ON` switch and the run's record settled.
fn settle_kernel(
    state: &mut State,
    id: u64,
    kernel: &Kernel,
    ending: Ending,
) -> Result<(), AclError> {
    let result = match ending {
        Ending::Clean => Ok(()),
        Ending::Fault(code) | Ending::Fatal(code) => Err(code),
        Ending::Killed(code) => {
            let mode = state.semantics.op_timeout_code_on;
            let partner = (mode != OP_TIMEOUT_CODE_ON_OWN_STREAM)
                .then(|| state.partner_stream(kernel, id))
                .flatten();
            match partner {
                // No partner (a kernel alone, or its sibling not launched): its own stream.
                None => Err(code),
                Some(partner) => {
                    if let Some(p) = state.streams.get_mut(&partner) {
                        p.error.get_or_insert(code);
                    }
                    if mode == OP_TIMEOUT_CODE_ON_PARTNER_STREAM {
                        Ok(())
                    } else {
                        debug_assert_eq!(mode, OP_TIMEOUT_CODE_ON_BOTH_STREAMS);
                        Err(code)
                    }
                }
            }
        }
    };
    state.end_kernel(kernel, matches!(ending, Ending::Clean | Ending::Fatal(_)));
    result
}

/// What a kernel's ending lets its run publish: nothing unless it exited cleanly; by the
/// AICPU rule (`aicpu_rule`), an ok record for Ok and the latched code for Latch; by the
/// AICore rule, "ok" only for Ok.
fn contribution(kernel: &Kernel, clean: bool, aicpu_rule: bool) -> Contribution {
    match (clean, kernel.outcome) {
        (true, Outcome::Ok) => Contribution::Ok,
        (true, Outcome::Latch) if aicpu_rule => latch_contribution(&kernel.header_bytes),
        _ => Contribution::Blocks,
    }
}

/// A latch's record: the header decoded by the layout whose size is its length (896
/// tensormap_and_ringbuffer, 256 host_build_graph). A latched code gives an error record
/// (source: the header; payload: tensormap_and_ringbuffer's error tail, bytes 784..848 \[I\],
/// host_build_graph none); a clean header an ok record; any other length nothing.
fn latch_contribution(header: &[u8]) -> Contribution {
    let Some(layout) = HeaderLayout::ALL
        .into_iter()
        .find(|layout| layout.size() == header.len())
    else {
        return Contribution::Blocks;
    };
    let Ok(status) = status_latch::decode(layout, header) else {
        return Contribution::Blocks;
    };
    match status.latched() {
        None => Contribution::Ok,
        Some(latch) => {
            let payload = match layout {
                HeaderLayout::TensormapAndRingbuffer => header.get(784..848).unwrap_or(&[]),
                HeaderLayout::HostBuildGraph => &[],
            };
            Contribution::Error {
                code: latch.code.value(),
                payload: payload.to_vec(),
            }
        }
    }
}

/// Performs one async copy when its stream reaches it: a copy rule fails it, a pinned host
/// side freed since the enqueue fails it (107000), otherwise the bytes move now (a D2H reads
/// the device bytes as they are at task time).
fn run_copy(state: &mut State, task: &AsyncCopy) -> Result<(), AclError> {
    if let Some(code) = task.fail {
        return Err(code);
    }
    let host = host_side(task.kind, task.dst, task.src);
    if task.pinned && !host.is_some_and(|address| state.pinned(address, task.count)) {
        return Err(ACL_ERROR_RT_PARAM_INVALID);
    }
    copy(state, task.dst, task.src, task.count, task.kind)
}

/// The host address of a copy (`None` for device to device).
pub(crate) fn host_side(kind: i32, dst: usize, src: usize) -> Option<usize> {
    match kind {
        ACL_MEMCPY_HOST_TO_DEVICE => Some(src),
        ACL_MEMCPY_DEVICE_TO_HOST => Some(dst),
        _ => None,
    }
}

/// Holds stream `id` until `capture` is complete: `Err` with the code of the captured
/// stream's failure (its sticky error, or 107023 when it was destroyed with the work
/// unfinished); `None`: stream `id` was destroyed meanwhile.
fn wait_for<'a>(
    device: &Device,
    mut state: MutexGuard<'a, State>,
    id: u64,
    capture: Capture,
) -> (MutexGuard<'a, State>, Option<Result<(), AclError>>) {
    loop {
        if !state.streams.contains_key(&id) {
            return (state, None);
        }
        match state.event_state(capture) {
            EventState::Complete => return (state, Some(Ok(()))),
            EventState::Failed(code) => return (state, Some(Err(code))),
            EventState::NotReady => state = device.wait(state, None).0,
        }
    }
}

/// Runs one kernel in real time. `None`: the stream was destroyed meanwhile.
fn run_kernel<'a>(
    device: &Device,
    mut state: MutexGuard<'a, State>,
    id: u64,
    kernel: &Kernel,
) -> (MutexGuard<'a, State>, Option<Ending>) {
    let start = device_now_ns();
    if kernel.timing != 0 {
        if let Some(bytes) = state.device_bytes(kernel.timing, 8) {
            bytes.copy_from_slice(&start.to_le_bytes());
        }
    }
    let op_timeout = state.op_timeout();
    let killed = Ending::Killed(timeout_code(kernel.engine));
    // `None`: runs until its stream is destroyed (a hang with no op timeout).
    let (duration, ending) = match kernel.outcome {
        Outcome::Hang => (op_timeout, killed),
        _ if op_timeout.is_some_and(|limit| kernel.duration > limit) => (op_timeout, killed),
        Outcome::Exception => (
            Some(kernel.duration),
            Ending::Fault(exception_code(kernel.engine)),
        ),
        Outcome::Ok | Outcome::Latch | Outcome::Silent => (Some(kernel.duration), Ending::Clean),
    };
    let deadline = duration.and_then(|d| Instant::now().checked_add(d));
    loop {
        if !state.streams.contains_key(&id) {
            return (state, None);
        }
        // Only the stream's removal ends a kernel early: it sleeps on its own stream.
        let (guard, expired) = device.wait_on_stream(state, id, deadline);
        state = guard;
        if expired {
            break;
        }
    }
    if !state.streams.contains_key(&id) {
        return (state, None);
    }
    let end = device_now_ns();
    if kernel.timing != 0 {
        if let Some(bytes) = state.device_bytes(kernel.timing + 8, 8) {
            bytes.copy_from_slice(&end.to_le_bytes());
        }
    }
    let ending = match ending {
        Ending::Clean if kernel.header != 0 && !kernel.header_bytes.is_empty() => {
            // The header was checked at launch; an allocation freed since is a bad address.
            match state.device_bytes(kernel.header, kernel.header_bytes.len()) {
                Some(bytes) => {
                    bytes.copy_from_slice(&kernel.header_bytes);
                    Ending::Clean
                }
                None => Ending::Fault(exception_code(kernel.engine)),
            }
        }
        other => other,
    };
    // A latched AICPU kernel returns a fatal status: 507018 on its stream (device-truth §1).
    // The legacy switch keeps the old clean latch too.
    let fatal = kernel.outcome == Outcome::Latch
        && kernel.engine == ENGINE_AICPU
        && state.semantics.latch_faults_stream
        && !state.semantics.legacy_event_faults;
    let ending = match ending {
        Ending::Clean if fatal => Ending::Fatal(ACL_ERROR_RT_AICPU_EXCEPTION),
        other => other,
    };
    (state, Some(ending))
}

fn timeout_code(engine: u32) -> AclError {
    if engine == ENGINE_AICPU {
        ACL_ERROR_RT_AICPU_TIMEOUT
    } else {
        ACL_ERROR_RT_AICORE_TIMEOUT
    }
}

fn exception_code(engine: u32) -> AclError {
    if engine == ENGINE_AICPU {
        ACL_ERROR_RT_AICPU_EXCEPTION
    } else {
        ACL_ERROR_RT_AICORE_EXCEPTION
    }
}

/// Whether `engine` names an engine a kernel can run on.
pub(crate) fn valid_engine(engine: u32) -> bool {
    engine == ENGINE_AICORE || engine == ENGINE_AICPU
}

/// Checks a copy's device side(s) without touching memory.
pub(crate) fn check_copy(
    state: &mut State,
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
    let device_dst = matches!(
        kind,
        ACL_MEMCPY_HOST_TO_DEVICE | ACL_MEMCPY_DEVICE_TO_DEVICE
    );
    let device_src = matches!(
        kind,
        ACL_MEMCPY_DEVICE_TO_HOST | ACL_MEMCPY_DEVICE_TO_DEVICE
    );
    if !(ACL_MEMCPY_HOST_TO_HOST..=ACL_MEMCPY_DEVICE_TO_DEVICE).contains(&kind) {
        return Err(ACL_ERROR_RT_PARAM_INVALID);
    }
    if device_dst && state.device_bytes(dst, count).is_none() {
        return Err(ACL_ERROR_RT_PARAM_INVALID);
    }
    if device_src && state.device_bytes(src, count).is_none() {
        return Err(ACL_ERROR_RT_PARAM_INVALID);
    }
    Ok(())
}

/// Performs a copy whose device sides are re-checked here (an async copy runs later).
///
/// Host sides are the caller's pointers: as with ACL, the caller keeps them valid for
/// `count` bytes until the copy has run.
pub(crate) fn copy(
    state: &mut State,
    dst: usize,
    src: usize,
    count: usize,
    kind: i32,
) -> Result<(), AclError> {
    check_copy(state, dst, count, src, count, kind)?;
    let mut staging = vec![0_u8; count];
    match kind {
        ACL_MEMCPY_DEVICE_TO_HOST | ACL_MEMCPY_DEVICE_TO_DEVICE => {
            staging.copy_from_slice(
                state
                    .device_bytes(src, count)
                    .ok_or(ACL_ERROR_RT_PARAM_INVALID)?,
            );
        }
        _ => {
            // SAFETY: `src` is a host pointer valid for `count` bytes (the call's contract),
            // and `staging` is a distinct buffer of `count` bytes.
            unsafe { std::ptr::copy_nonoverlapping(src as *const u8, staging.as_mut_ptr(), count) };
        }
    }
    match kind {
        ACL_MEMCPY_HOST_TO_DEVICE | ACL_MEMCPY_DEVICE_TO_DEVICE => {
            state
                .device_bytes(dst, count)
                .ok_or(ACL_ERROR_RT_PARAM_INVALID)?
                .copy_from_slice(&staging);
        }
        _ => {
            // SAFETY: `dst` is a host pointer valid for `count` writable bytes (the call's
            // contract), and `staging` is a distinct buffer of `count` bytes.
            unsafe { std::ptr::copy_nonoverlapping(staging.as_ptr(), dst as *mut u8, count) };
        }
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
    let generation = state.generation;
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
    let (state, expired) = device.wait(state, deadline);
    if state.generation == generation {
        Ok((state, expired))
    } else {
        Err(state)
    }
}
