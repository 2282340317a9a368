//! The fake device: one process-wide state behind one mutex and one condition variable.
//! Streams are FIFO task queues, each run by its own worker thread in real time; every state
//! change notifies the condition variable, and every wait is a timed condvar wait on it.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::CString;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ascend_cl_sys::types::*;

use crate::{ENGINE_AICORE, ENGINE_AICPU, ENGINE_ANY, FakeCounters, Outcome};

/// The device op timeout before `aclrtSetOpExecuteTimeOutV2` (ascend-cl.md §2.6: 1091 s).
pub(crate) const DEFAULT_OP_TIMEOUT_US: u64 = 1_091_000_000;
/// The SoC name the probe reports until a test chooses another.
pub(crate) const DEFAULT_SOC_NAME: &str = "Ascend910B1";
/// First handle value: non-NULL, never dereferenced, never reused.
const FIRST_HANDLE: u64 = 0x1000;

/// The one device.
pub(crate) static DEVICE: Device = Device {
    state: Mutex::new(State::new()),
    changed: Condvar::new(),
};

thread_local! {
    /// The context generation this thread bound with `aclrtSetDevice` (a force reset starts a
    /// new generation, so every thread must bind again).
    static BOUND: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Nanoseconds on the fake's device clock (monotonic, from the first use).
pub(crate) fn device_now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

pub(crate) struct Device {
    state: Mutex<State>,
    changed: Condvar,
}

impl Device {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under the lock is caught at the FFI boundary; the state stays usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }

    /// Waits for a change, at most until `deadline` (`None`: no limit). Returns the guard and
    /// whether the deadline has passed.
    pub(crate) fn wait<'a>(
        &self,
        guard: MutexGuard<'a, State>,
        deadline: Option<Instant>,
    ) -> (MutexGuard<'a, State>, bool) {
        match deadline {
            None => (
                self.changed
                    .wait(guard)
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
                false,
            ),
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return (guard, true);
                }
                let (guard, _) = self
                    .changed
                    .wait_timeout(guard, left)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                (guard, Instant::now() >= deadline)
            }
        }
    }
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
    pub(crate) queue: VecDeque<Task>,
    pub(crate) submitted: u64,
    pub(crate) completed: u64,
    pub(crate) running: bool,
    /// Kernels queued or running on this stream (a launch behind one is a queued launch).
    pub(crate) kernels_out: u64,
    /// Sticky: once set, nothing more runs on this stream.
    pub(crate) error: Option<AclError>,
}

impl Stream {
    fn idle(&self) -> bool {
        self.error.is_some() || (self.queue.is_empty() && !self.running)
    }
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

pub(crate) struct State {
    pub(crate) initialised: bool,
    pub(crate) device_count: u32,
    pub(crate) soc_name: SocName,
    pub(crate) op_timeout_us: u64,
    /// Context generation: bumped by every force reset.
    pub(crate) generation: u64,
    next_handle: u64,
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
    const fn new() -> Self {
        Self {
            initialised: false,
            device_count: 1,
            soc_name: SocName::Default,
            op_timeout_us: DEFAULT_OP_TIMEOUT_US,
            generation: 0,
            next_handle: FIRST_HANDLE,
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

    /// Back to a fresh process: everything dropped, defaults restored. Returns the workers
    /// to join once the lock is released.
    pub(crate) fn reset_all(&mut self) -> Vec<JoinHandle<()>> {
        let next_handle = self.next_handle;
        let generation = self.generation + 1;
        let workers = std::mem::take(&mut self.workers);
        *self = Self::new();
        // Handles and generations keep counting, so a stale handle or binding never matches.
        self.next_handle = next_handle;
        self.generation = generation;
        workers
    }

    pub(crate) fn new_handle(&mut self) -> u64 {
        let handle = self.next_handle;
        self.next_handle += 0x10;
        handle
    }

    /// 107002 unless the calling thread bound the current context.
    pub(crate) fn require_context(&self) -> Result<(), AclError> {
        if BOUND.get() == Some(self.generation) {
            Ok(())
        } else {
            Err(ACL_ERROR_RT_CONTEXT_NULL)
        }
    }

    pub(crate) fn bind_current_thread(&self) {
        BOUND.set(Some(self.generation));
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
                Some(s) if s.completed >= upto => EventState::Complete,
                Some(s) => s.error.map_or(EventState::NotReady, EventState::Failed),
            },
        }
    }

    /// Removes a stream (its worker exits when it notices) and settles the events that
    /// captured its work.
    pub(crate) fn remove_stream(&mut self, id: u64) {
        let Some(stream) = self.streams.remove(&id) else {
            return;
        };
        for event in self.events.values_mut() {
            if let Capture::Pending { stream: s, upto } = event.capture {
                if s == id {
                    event.capture = if stream.completed >= upto && stream.error.is_none() {
                        Capture::Complete
                    } else {
                        Capture::Aborted
                    };
                }
            }
        }
    }

    /// Every stream idle (or faulted).
    pub(crate) fn all_idle(&self) -> bool {
        self.streams.values().all(Stream::idle)
    }

    pub(crate) fn first_stream_error(&self) -> Option<AclError> {
        self.streams.values().find_map(|s| s.error)
    }

    pub(crate) fn stream_idle(&self, id: u64) -> Option<bool> {
        self.streams.get(&id).map(Stream::idle)
    }

    pub(crate) fn op_timeout(&self) -> Duration {
        Duration::from_micros(self.op_timeout_us)
    }

    pub(crate) fn refresh_live_counts(&mut self) {
        let c = &mut self.counters;
        c.live_streams = self.streams.len() as u64;
        c.live_events = self.events.len() as u64;
        c.live_allocations = self.allocations.len() as u64;
        c.live_host_allocations = self.host_allocations.len() as u64;
    }
}

/// Starts the worker thread of stream `id`.
pub(crate) fn spawn_worker(id: u64) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("fake-acl-stream-{id:#x}"))
        .spawn(move || worker(id))
}

/// Runs stream `id`'s tasks in order until the stream is destroyed.
fn worker(id: u64) {
    let mut state = DEVICE.lock();
    loop {
        let task = match state.streams.get_mut(&id) {
            None => return,
            Some(stream) if stream.error.is_none() => match stream.queue.pop_front() {
                Some(task) => {
                    stream.running = true;
                    task
                }
                None => {
                    state = DEVICE.wait(state, None).0;
                    continue;
                }
            },
            Some(_) => {
                state = DEVICE.wait(state, None).0;
                continue;
            }
        };
        let kernel = matches!(task, Task::Kernel(_));
        let (guard, result) = match task {
            Task::Copy(task) => {
                let result = run_copy(&mut state, &task);
                (state, Some(result))
            }
            Task::Kernel(kernel) => run_kernel(state, id, &kernel),
            Task::Wait(capture) => wait_for(state, id, capture),
        };
        state = guard;
        let Some(result) = result else {
            return;
        };
        let Some(stream) = state.streams.get_mut(&id) else {
            return;
        };
        stream.running = false;
        if kernel {
            stream.kernels_out = stream.kernels_out.saturating_sub(1);
        }
        match result {
            Ok(()) => stream.completed += 1,
            Err(code) => stream.error = Some(code),
        }
        DEVICE.notify();
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
fn wait_for(
    mut state: MutexGuard<'_, State>,
    id: u64,
    capture: Capture,
) -> (MutexGuard<'_, State>, Option<Result<(), AclError>>) {
    loop {
        if !state.streams.contains_key(&id) {
            return (state, None);
        }
        match state.event_state(capture) {
            EventState::Complete => return (state, Some(Ok(()))),
            EventState::Failed(code) => return (state, Some(Err(code))),
            EventState::NotReady => state = DEVICE.wait(state, None).0,
        }
    }
}

/// Runs one kernel in real time. `None`: the stream was destroyed meanwhile.
fn run_kernel<'a>(
    mut state: MutexGuard<'a, State>,
    id: u64,
    kernel: &Kernel,
) -> (MutexGuard<'a, State>, Option<Result<(), AclError>>) {
    let start = device_now_ns();
    if kernel.timing != 0 {
        if let Some(bytes) = state.device_bytes(kernel.timing, 8) {
            bytes.copy_from_slice(&start.to_le_bytes());
        }
    }
    let op_timeout = state.op_timeout();
    let (duration, result) = match kernel.outcome {
        Outcome::Hang => (op_timeout, Err(timeout_code(kernel.engine))),
        _ if kernel.duration > op_timeout => (op_timeout, Err(timeout_code(kernel.engine))),
        Outcome::Exception => (kernel.duration, Err(exception_code(kernel.engine))),
        Outcome::Ok | Outcome::Latch => (kernel.duration, Ok(())),
    };
    let deadline = Instant::now() + duration;
    loop {
        if !state.streams.contains_key(&id) {
            return (state, None);
        }
        let (guard, expired) = DEVICE.wait(state, Some(deadline));
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
    let result = result.and_then(|()| {
        if kernel.header == 0 || kernel.header_bytes.is_empty() {
            return Ok(());
        }
        // The header was checked at launch; an allocation freed since is a bad address.
        let bytes = state
            .device_bytes(kernel.header, kernel.header_bytes.len())
            .ok_or_else(|| exception_code(kernel.engine))?;
        bytes.copy_from_slice(&kernel.header_bytes);
        Ok(())
    });
    (state, Some(result))
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
