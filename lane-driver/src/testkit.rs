//! Test support (cargo feature `testkit`): [`TestDevice`], the one scripted test device. It
//! records every call, keeps device memory for real (so a test's runner writes a run's status
//! header, timing and result record, and the waits read them), fails the calls its script
//! names ([`Fail`]) and stalls the one it is told to ([`Stall`]). Not a simulator: no kernel
//! runs, every recorded event has completed when it is waited for.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use lane_core::status_latch::{AclCode, RECORD_BYTES, RecordWrite, encode_record};
use lane_core::stream_pair::StreamHandle;
use lane_core::{RunId, Timestamp};

use crate::device::{Device, DevicePtr, EventHandle, LaunchContext, LaunchStage};
use crate::runner::RunArgs;
use crate::waiter::CompletionWaiter;

/// A device call, as a [`Fail`] or a [`Stall`] names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(missing_docs)]
pub enum Call {
    SetDevice,
    SynchronizeDevice,
    ResetDeviceForce,
    OwnProbe,
    CreateStream,
    DestroyStream,
    DestroyStreamForce,
    CreateEvent,
    RecordEvent,
    SynchronizeEvent,
    QueryEvent,
    EventTimestamp,
    SynchronizeStream,
    DestroyEvent,
    Malloc,
    Free,
    MemcpyToDevice,
    MemcpyFromDevice,
    StreamWaitEvent,
    /// [`Device::completion_waiter`].
    CompletionWaiter,
}

/// A scripted failure: the calls it names answer `code`.
#[derive(Clone, Debug)]
pub struct Fail {
    /// The call that fails.
    pub call: Call,
    /// Which of its calls fail, counted from 1 over the device's life (the waiter's too).
    pub nth: Range<usize>,
    /// Only a wait on one of these runs' boundaries (none: any).
    pub runs: Vec<u64>,
    /// The raw code it fails with.
    pub code: i32,
    /// The text `recent_error_message` hands out after it.
    pub message: Option<String>,
}

impl Fail {
    /// Every `call` from the `first`-th on.
    #[must_use]
    pub fn from(call: Call, first: usize, code: i32) -> Self {
        Self { call, nth: first..usize::MAX, runs: Vec::new(), code, message: None }
    }
    /// Every `call`.
    #[must_use]
    pub fn every(call: Call, code: i32) -> Self {
        Self::from(call, 1, code)
    }
    /// The `n`-th `call` only.
    #[must_use]
    pub fn nth(call: Call, n: usize, code: i32) -> Self {
        Self { nth: n..n + 1, ..Self::every(call, code) }
    }
    /// Every `call` on the boundary of one of `runs` (waits and looks at it).
    #[must_use]
    pub fn runs(call: Call, runs: &[u64], code: i32) -> Self {
        Self { runs: runs.to_vec(), ..Self::every(call, code) }
    }
    /// This failure, leaving `text` for `recent_error_message`.
    #[must_use]
    pub fn message(self, text: &str) -> Self {
        Self { message: Some(text.to_owned()), ..self }
    }
}

/// What a stalled call does once it has taken its stall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Then {
    /// Blocks the whole time, ignoring its timeout, then answers as usual (a driver call
    /// that never honours its bound).
    Answer,
    /// Blocks the whole time, then panics.
    Panic,
    /// Honours its timeout: until the time is up, each call sleeps its own timeout and
    /// answers the timeout's code, and a look at the event finds it unfinished (a long or
    /// hung run on a device that honours the wait's bound).
    TimeOut,
}

/// A stalled call: the next `call` (every one with `every`) says when it starts, then stalls
/// for `lasts`.
#[derive(Debug)]
pub struct Stall {
    /// The call that stalls.
    pub call: Call,
    /// How long the stall lasts, from the call that takes it.
    pub lasts: Duration,
    /// What the call does meanwhile.
    pub then: Then,
    /// Told the instant the stall starts.
    pub started: Option<Sender<Instant>>,
    /// Every such call stalls, not only the next.
    pub every: bool,
    /// When the stall taken ends.
    until: Option<Instant>,
}

impl Stall {
    /// The next `call` stalls `lasts`, then does `then`.
    #[must_use]
    pub const fn new(call: Call, lasts: Duration, then: Then) -> Self {
        Self { call, lasts, then, started: None, every: false, until: None }
    }
}

/// A [`TestDevice`]'s state and script, shared by the device and its completion waiter.
#[derive(Debug, Default)]
pub struct Script {
    /// Every call made, in order (the waiter's prefixed `waiter: `); a failed one ends with
    /// `-> <code>`. Nothing is recorded while `quiet`.
    pub calls: Vec<String>,
    /// Records no call (so no call allocates).
    pub quiet: bool,
    /// The real clock's start; `None`: a virtual clock, `now`, 1 µs on per call.
    pub clock: Option<Instant>,
    /// The virtual clock (ns).
    pub now: u64,
    /// The failures to answer.
    pub fail: Vec<Fail>,
    /// The stalls to make (the first of a call's).
    pub stalls: Vec<Stall>,
    /// The timeout of each event and stream wait, in ms.
    pub wait_timeouts: Vec<i32>,
    /// Each launch context the executor gave, with how many calls were recorded before it.
    pub contexts: Vec<(usize, Option<LaunchContext>)>,
    /// The name of the thread each force reset was made on.
    pub resets: Vec<Option<String>>,
    /// The call stalled right now.
    pub stalled: Option<Call>,
    /// The device (not a waiter or a watcher) was dropped.
    pub dropped: bool,
    /// What `recent_error_message` hands out next (set by a failed call, taken by the read).
    pub message: Option<String>,
    /// What the next event queries answer, first first (`false`: not yet fired); once empty,
    /// every recorded event has fired.
    pub queries: VecDeque<bool>,
    /// The device gives event timestamps: an event's is the clock at its last record.
    pub timestamps: bool,
    /// When each event was recorded last (virtual clock, ns).
    pub recorded_at: BTreeMap<u64, u64>,
    next: u64,
    counts: [usize; Call::CompletionWaiter as usize + 1],
    memory: Vec<(u64, Vec<u8>)>,
    context: Option<LaunchContext>,
    boundaries: Vec<(EventHandle, RunId)>,
}

impl Script {
    /// The next `call` fails with `code`.
    pub fn fail_next(&mut self, call: Call, code: i32) {
        let n = self.count(call) + 1;
        self.fail.push(Fail::nth(call, n, code));
    }
    /// How many `call`s were made.
    #[must_use]
    pub const fn count(&self, call: Call) -> usize {
        self.counts[call as usize]
    }
    /// The device bytes from `ptr` to the end of its allocation.
    ///
    /// # Panics
    ///
    /// If `ptr` is in no allocation.
    pub fn mem(&mut self, ptr: DevicePtr) -> &mut [u8] {
        let (idx, offset) = self.find(ptr);
        &mut self.memory[idx].1[offset..]
    }
    fn find(&self, ptr: DevicePtr) -> (usize, usize) {
        let idx = self
            .memory
            .iter()
            .position(|(base, bytes)| (*base..*base + bytes.len() as u64).contains(&ptr.0))
            .expect("a pointer into an allocation");
        (idx, (ptr.0 - self.memory[idx].0) as usize)
    }
    /// `p<id>`, or `p<id>+<offset>` inside the allocation (bases are `id << 16`).
    ///
    /// # Panics
    ///
    /// If `ptr` is in no allocation.
    #[must_use]
    pub fn name(&self, ptr: DevicePtr) -> String {
        let (idx, offset) = self.find(ptr);
        let id = self.memory[idx].0 >> 16;
        match offset {
            0 => format!("p{id}"),
            _ => format!("p{id}+{offset}"),
        }
    }
    /// Records a call the test's runner made, as the device's own.
    pub fn note(&mut self, text: impl FnOnce() -> String) {
        self.log(false, |_| text(), &Ok::<(), AclCode>(()));
    }
    fn id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
    /// Counts `call` (on `event`'s run) and answers whether the script fails it.
    fn answer(&mut self, call: Call, event: Option<EventHandle>) -> Result<(), AclCode> {
        self.counts[call as usize] += 1;
        let n = self.counts[call as usize];
        let run = event.and_then(|e| self.boundaries.iter().find(|(b, _)| *b == e));
        let run = run.map_or(0, |(_, r)| r.0);
        let fail = self.fail.iter().find(|f| {
            f.call == call && f.nth.contains(&n) && (f.runs.is_empty() || f.runs.contains(&run))
        });
        match fail {
            Some(fail) => {
                if fail.message.is_some() {
                    self.message.clone_from(&fail.message);
                }
                Err(AclCode::from_raw(fail.code).expect("a failure code"))
            }
            None => Ok(()),
        }
    }
    /// Records `text` (with the failure's code) and moves the virtual clock.
    fn log<T>(&mut self, waiter: bool, text: impl FnOnce(&Self) -> String, r: &Result<T, AclCode>) {
        self.now += 1_000;
        if self.quiet {
            return;
        }
        let who = if waiter { "waiter: " } else { "" };
        let text = match r {
            Ok(_) => format!("{who}{}", text(self)),
            Err(code) => format!("{who}{} -> {}", text(self), code.raw()),
        };
        self.calls.push(text);
    }
}

/// The one scripted test device: a [`Device`] and its own [`CompletionWaiter`] over one
/// shared [`Script`]. Every recorded event has completed when it is waited for or looked at.
#[derive(Debug)]
pub struct TestDevice {
    script: Arc<Mutex<Script>>,
    waiter: bool,
    owner: bool,
}

impl Default for TestDevice {
    fn default() -> Self {
        Self { script: Arc::default(), waiter: false, owner: true }
    }
}

impl TestDevice {
    /// A device on the real clock that records no call: nothing it does allocates per run.
    #[must_use]
    pub fn real() -> Self {
        let device = Self::default();
        device.script().clock = Some(Instant::now());
        device.script().quiet = true;
        device
    }
    /// The script, locked.
    ///
    /// # Panics
    ///
    /// If a thread panicked holding it.
    pub fn script(&self) -> MutexGuard<'_, Script> {
        self.script.lock().expect("the script's lock")
    }
    /// Another handle on this script: the device's waiter (`waiter`), or, for the test to
    /// read, neither the device nor its waiter.
    fn handle(&self, waiter: bool) -> Self {
        Self { script: Arc::clone(&self.script), waiter, owner: false }
    }
    /// Another handle on this device's script for the test to read.
    #[must_use]
    pub fn watch(&self) -> Self {
        self.handle(false)
    }
    /// A run's kernels: its timing buffer (start 1, end 2), a clean (zero) status header,
    /// then the run's ok result record.
    pub fn complete(&self, args: &RunArgs) {
        let mut script = self.script();
        script.mem(args.status_header).fill(0);
        let timing = script.mem(args.timing);
        timing[..8].copy_from_slice(&1u64.to_le_bytes());
        timing[8..16].copy_from_slice(&2u64.to_le_bytes());
        let record = encode_record(args.epoch, &RecordWrite::Ok);
        script.mem(args.record)[..RECORD_BYTES].copy_from_slice(&record);
    }

    /// `call` (on `event`'s run): the script's failure, or `make`'s result; recorded as `text`
    /// says.
    fn call<T>(
        &self,
        call: Call,
        event: Option<EventHandle>,
        make: impl FnOnce(&mut Script) -> T,
        text: impl FnOnce(&Script, Option<&T>) -> String,
    ) -> Result<T, AclCode> {
        let mut script = self.script();
        let r = script.answer(call, event).map(|()| make(&mut script));
        script.log(self.waiter, |s| text(s, r.as_ref().ok()), &r);
        r
    }
    /// A call with no result but success or its scripted failure.
    fn plain(&self, call: Call, text: impl FnOnce() -> String) -> Result<(), AclCode> {
        self.call(call, None, |_| (), |_, _| text())
    }
    /// A wait or a look: the stall, if it is `call`'s. `Some`: the stall's answer.
    fn stall(&self, call: Call, timeout_ms: i32, look: bool) -> Option<Result<(), AclCode>> {
        let bound = Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
        let (then, left) = {
            let mut script = self.script();
            let at = script.stalls.iter().position(|s| s.call == call)?;
            let stall = &mut script.stalls[at];
            if look {
                let pending = stall.until.is_none_or(|until| Instant::now() < until);
                return pending.then_some(Err(AclCode::RtEventSyncTimeout));
            }
            let until = *stall.until.get_or_insert_with(|| {
                let now = Instant::now();
                if let Some(started) = &stall.started {
                    let _ = started.send(now);
                }
                now + stall.lasts
            });
            let then = stall.then;
            let left = until.saturating_duration_since(Instant::now());
            if then != Then::TimeOut || left <= bound {
                // The stall is over with this call.
                if stall.every {
                    stall.until = None;
                } else {
                    script.stalls.remove(at);
                }
            }
            script.stalled = Some(call);
            (then, left)
        };
        let timed_out = then == Then::TimeOut && left > bound;
        thread::sleep(if timed_out { bound } else { left });
        self.script().stalled = None;
        match then {
            Then::Panic => panic!("the device exploded in {call:?}"),
            Then::TimeOut if timed_out => Some(Err(match call {
                Call::SynchronizeEvent => AclCode::RtEventSyncTimeout,
                _ => AclCode::RtStreamSyncTimeout,
            })),
            _ => None,
        }
    }
    fn wait(
        &self,
        call: Call,
        timeout_ms: i32,
        event: Option<EventHandle>,
        text: impl FnOnce() -> String,
    ) -> Result<(), AclCode> {
        self.script().wait_timeouts.push(timeout_ms);
        let Some(r) = self.stall(call, timeout_ms, false) else {
            return self.call(call, event, |_| (), |_, _| text());
        };
        self.script().log(self.waiter, |_| text(), &r);
        r
    }
}

impl Drop for TestDevice {
    fn drop(&mut self) {
        if let (true, Ok(mut script)) = (self.owner, self.script.lock()) {
            script.dropped = true;
        }
    }
}

impl Device for TestDevice {
    fn now(&mut self) -> Timestamp {
        let script = self.script();
        Timestamp(script.clock.map_or(script.now, |start| {
            u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
        }))
    }
    fn set_device(&mut self) -> Result<(), AclCode> {
        self.plain(Call::SetDevice, || "set_device".into())
    }
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.wait(Call::SynchronizeDevice, timeout_ms, None, || {
            format!("synchronize_device {timeout_ms}ms")
        })
    }
    fn reset_device_force(&mut self) -> Result<(), AclCode> {
        let name = thread::current().name().map(str::to_owned);
        self.script().resets.push(name);
        let _ = self.stall(Call::ResetDeviceForce, 0, false);
        self.plain(Call::ResetDeviceForce, || "reset_device_force".into())
    }
    fn own_probe(&mut self) -> Result<(), AclCode> {
        self.plain(Call::OwnProbe, || "own_probe".into())
    }
    fn create_stream(&mut self) -> Result<StreamHandle, AclCode> {
        let make = |s: &mut Script| StreamHandle(s.id());
        self.call(Call::CreateStream, None, make, |_, s| match s {
            Some(s) => format!("create_stream -> s{}", s.0),
            None => "create_stream".into(),
        })
    }
    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.plain(Call::DestroyStream, || format!("destroy_stream s{}", stream.0))
    }
    fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        let text = || format!("destroy_stream_force s{}", stream.0);
        self.plain(Call::DestroyStreamForce, text)
    }
    fn create_event(&mut self) -> Result<EventHandle, AclCode> {
        let make = |s: &mut Script| EventHandle(s.id());
        self.call(Call::CreateEvent, None, make, |_, e| match e {
            Some(e) => format!("create_event -> e{}", e.0),
            None => "create_event".into(),
        })
    }
    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode> {
        let mut script = self.script();
        if let Some(LaunchContext { run, stage: LaunchStage::Kernels }) = script.context {
            script.boundaries.retain(|(e, _)| *e != event);
            script.boundaries.push((event, run));
        }
        let now = script.now;
        script.recorded_at.insert(event.0, now);
        drop(script);
        let text =
            |_: &Script, _: Option<&()>| format!("record_event e{} on s{}", event.0, stream.0);
        self.call(Call::RecordEvent, Some(event), |_| (), text)
    }
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.wait(Call::SynchronizeEvent, timeout_ms, Some(event), || {
            format!("synchronize_event e{}", event.0)
        })
    }
    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        if self.stall(Call::SynchronizeEvent, 0, true).is_some() {
            return Ok(false);
        }
        let text = |_: &Script, fired: Option<&bool>| match fired {
            Some(false) => format!("query_event e{} -> unfired", event.0),
            _ => format!("query_event e{}", event.0),
        };
        let fired = |s: &mut Script| s.queries.pop_front().unwrap_or(true);
        self.call(Call::QueryEvent, Some(event), fired, text)
    }
    fn event_timestamps(&self) -> bool {
        self.script().timestamps
    }
    fn event_timestamp(&mut self, event: EventHandle) -> Result<u64, AclCode> {
        let text = |_: &Script, _: Option<&u64>| format!("event_timestamp e{}", event.0);
        let at = |s: &mut Script| s.recorded_at.get(&event.0).copied().unwrap_or(0);
        self.call(Call::EventTimestamp, Some(event), at, text)
    }
    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.wait(Call::SynchronizeStream, timeout_ms, None, || {
            format!("synchronize_stream s{}", stream.0)
        })
    }
    fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode> {
        self.plain(Call::DestroyEvent, || format!("destroy_event e{}", event.0))
    }
    fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode> {
        let make = |s: &mut Script| {
            let base = s.id() << 16;
            s.memory.push((base, vec![0; size]));
            DevicePtr(base)
        };
        self.call(Call::Malloc, None, make, |_, p| match p {
            Some(p) => format!("malloc {size} -> p{}", p.0 >> 16),
            None => format!("malloc {size}"),
        })
    }
    fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode> {
        let text = |s: &Script, _: Option<&()>| format!("free {}", s.name(ptr));
        self.call(Call::Free, None, |_| (), text)
    }
    fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode> {
        let copy = |s: &mut Script| s.mem(dst)[..src.len()].copy_from_slice(src);
        self.call(Call::MemcpyToDevice, None, copy, |s, _| {
            format!("memcpy_to_device {} {}B", s.name(dst), src.len())
        })
    }
    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        let len = dst.len();
        let copy = |s: &mut Script| dst.copy_from_slice(&s.mem(src)[..len]);
        self.call(Call::MemcpyFromDevice, None, copy, |s, _| {
            format!("memcpy_from_device {} {len}B", s.name(src))
        })
    }
    fn stream_wait_event(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode> {
        self.plain(Call::StreamWaitEvent, || {
            format!("stream_wait_event s{} e{}", stream.0, event.0)
        })
    }
    fn launch_context(&mut self, context: Option<LaunchContext>) {
        let mut script = self.script();
        let at = script.calls.len();
        script.context = context;
        if !script.quiet {
            script.contexts.push((at, context));
        }
    }
    fn recent_error_message(&mut self) -> Option<String> {
        self.script().message.take()
    }
    fn completion_waiter(&mut self) -> Result<Box<dyn CompletionWaiter + Send>, AclCode> {
        self.script().answer(Call::CompletionWaiter, None)?;
        Ok(Box::new(self.handle(true)))
    }
}

impl CompletionWaiter for TestDevice {
    fn now(&mut self) -> Timestamp {
        Device::now(self)
    }
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        Device::synchronize_event(self, event, timeout_ms)
    }
    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        Device::query_event(self, event)
    }
    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        Device::synchronize_stream(self, stream, timeout_ms)
    }
    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        Device::memcpy_from_device(self, dst, src)
    }
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        Device::synchronize_device(self, timeout_ms)
    }
    fn recent_error_message(&mut self) -> Option<String> {
        Device::recent_error_message(self)
    }
}
