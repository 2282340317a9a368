//! [`Device`]: one device's state and every call on it, and the engine that moves its streams
//! forward in time ([`Device::advance`], [`Device::run_until`]).
//!
//! # Time
//!
//! A stream is a FIFO of tasks. The front task starts at `max(previous end + task switch,
//! enqueue + start latency)` (a wait: at the previous end, with no switch); a kernel works its
//! duration (or until the op timeout kills it), a record or a copy its own task time, a wait
//! until the tasks its event captured have completed. Every start and end is that formula's
//! value, never the time the backend happened to look, so the same calls at the same times
//! give the same device, whichever thread drives it: backend-sim advances it to its virtual
//! host clock, acl-fake's stream workers to the real clock when a task is due.
//! [`Device::advance`] applies every transition due by `now` in time order; the backend keeps
//! no device state of its own.

use std::collections::{BTreeMap, VecDeque};

use status_latch::{AclCode, RECORD_BYTES};

use crate::config::{Engine, Ns, OpTimeoutCodeOn, Semantics, Timing};
use crate::faults::{FaultRule, Faults, Injected, KernelHeader, Site};
use crate::kernel::{
    Contribution, Ending, KernelSpec, Outcome, RunKey, fate, latched_header, planned_end,
};
use crate::memory::Memory;

/// `ACL_ERROR_RT_STREAM_ABORT`: a wait on work whose stream was destroyed unfinished.
pub const STREAM_ABORT: i32 = 107_023;

/// A handle the device does not hold: never created, destroyed, or killed by a force reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dead {
    /// A stream.
    Stream(u64),
    /// An event.
    Event(u64),
    /// A device address outside every allocation.
    Memory(u64),
}

/// Why a call failed: a dead handle (each backend answers it its own way: the simulator
/// reports a broken invariant, the fake the code ACL gives), or an ACL code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// A handle the device does not hold.
    Dead(Dead),
    /// The call returns this code.
    Code(AclCode),
}

impl From<AclCode> for CallError {
    fn from(code: AclCode) -> Self {
        Self::Code(code)
    }
}

/// What an event's capture amounts to now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventState {
    /// Never recorded, or the stream passed the record (completion is not the verdict: work
    /// that failed completes too, device-truth §1).
    Complete,
    /// The stream has not passed the record yet.
    NotReady,
    /// The work it captured can never complete (its stream destroyed unfinished), or under the
    /// legacy switch its stream faulted.
    Failed(AclCode),
}

/// Which run an event record belongs to, for the `event-record` fault site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordRun {
    /// The caller knows: this run, or none.
    Known(Option<u64>),
    /// The slot's "armed" record, before the run's kernels: no run, and no record fault.
    Armed,
    /// Inferred from the stream, for a caller that does not say: the run of the last kernel
    /// launched on it, unless the record directly follows a host-to-device copy (a slot's arm
    /// with copies on the streams, before its run's kernels): then it is [`RecordRun::Armed`].
    LastKernel,
}

/// One side of a copy task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Host memory, owned by the backend ([`HostMemory`]); `pinned` when it was allocated
    /// with `aclrtMallocHost`.
    Host {
        /// Its address.
        addr: u64,
        /// Pinned (the backend checks at task time that it is still allocated).
        pinned: bool,
    },
    /// Device memory.
    Device(u64),
}

/// Host memory, which the backend owns: a copy task reads or writes it when it runs.
pub trait HostMemory {
    /// `len` bytes at `addr` (an error fails the copy on its stream).
    ///
    /// # Errors
    ///
    /// The code the copy task fails with.
    fn read(&mut self, addr: u64, len: usize, pinned: bool) -> Result<Vec<u8>, AclCode>;
    /// Writes `bytes` at `addr` (an error fails the copy on its stream).
    ///
    /// # Errors
    ///
    /// The code the copy task fails with.
    fn write(&mut self, addr: u64, bytes: &[u8], pinned: bool) -> Result<(), AclCode>;
    /// Whether `len` bytes at `addr` may take part in a copy (checked at its enqueue).
    fn holds(&self, addr: u64, len: usize, pinned: bool) -> bool;
}

/// Host memory of a backend that has none: every copy touching it fails with 107000.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHostMemory;

impl HostMemory for NoHostMemory {
    fn read(&mut self, _: u64, _: usize, _: bool) -> Result<Vec<u8>, AclCode> {
        Err(AclCode::RtParamInvalid)
    }
    fn write(&mut self, _: u64, _: &[u8], _: bool) -> Result<(), AclCode> {
        Err(AclCode::RtParamInvalid)
    }
    fn holds(&self, _: u64, _: usize, _: bool) -> bool {
        false
    }
}

/// What happened on the device, for a backend that traces it (kept only when asked,
/// [`Device::keep_notes`]). Tasks are named by the tag the backend gave them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// A kernel reached the front of its stream (it may spin for its partner first).
    KernelStarted {
        /// Its tag.
        tag: u64,
        /// When.
        at: Ns,
    },
    /// A kernel ended.
    KernelEnded {
        /// Its tag.
        tag: u64,
        /// When its work started (its partner's too, with the handshake); `None`: it never
        /// worked (killed while spinning).
        work_start: Option<Ns>,
        /// When.
        at: Ns,
        /// How.
        ending: Ending,
    },
    /// A record, copy or wait task ran from `start` to `end`.
    TaskRan {
        /// Its tag.
        tag: u64,
        /// When it started.
        start: Ns,
        /// When it ended.
        end: Ns,
        /// What it returned.
        result: Result<(), AclCode>,
    },
    /// A kernel wrote device memory (`landed` false: no allocation held the bytes).
    KernelWrote {
        /// The kernel's run id, if known.
        run: Option<u64>,
        /// Where.
        addr: u64,
        /// How many bytes.
        len: usize,
        /// Whether they landed.
        landed: bool,
    },
    /// A run's result record landed.
    Published {
        /// The run id, if known.
        run: Option<u64>,
        /// An error record (else ok).
        error: bool,
    },
    /// A queued or running task was dropped with its stream (a destroy or a force reset).
    Dropped {
        /// Its tag.
        tag: u64,
        /// When.
        at: Ns,
    },
}

/// What a launch did beside queueing its kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launched {
    /// It queued behind an unfinished kernel of its stream.
    pub queued: bool,
    /// The fate its run's `run` rule decided (an AICPU kernel with a run id), if one fired.
    pub fate: Option<Injected>,
}

/// What a force reset reclaimed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Streams killed.
    pub streams: u64,
    /// Events killed.
    pub events: u64,
    /// Device allocations killed.
    pub allocations: u64,
}

/// What a stream's worker should do next ([`Device::stream_next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamNext {
    /// The stream is gone.
    Gone,
    /// Nothing queued (or, legacy, halted by a fault): wait for an enqueue.
    Idle,
    /// Its next transition is due at this time.
    At(Ns),
    /// Its front task waits for something elsewhere (an event, a partner kernel) or never ends.
    Blocked,
}

/// An async copy to enqueue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopySpec {
    /// Where the bytes come from.
    pub src: Place,
    /// Where they go.
    pub dst: Place,
    /// How many.
    pub len: usize,
}

/// An event's capture: what it completes with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capture {
    /// Never recorded: complete.
    Never,
    /// The record task `seq` of `stream`, not passed yet.
    Pending { stream: u64, seq: u64 },
    /// Passed at this time.
    Done(Ns),
    /// Its stream was destroyed before passing it.
    Aborted,
}

#[derive(Clone, Debug)]
struct Event {
    capture: Capture,
    /// Created with `ACL_EVENT_SYNC`: another stream may wait on it.
    sync: bool,
    /// The run whose launch recorded it last.
    run: Option<u64>,
}

#[derive(Clone, Debug)]
struct Kernel {
    spec: KernelSpec,
}

#[derive(Clone, Debug)]
struct CopyTask {
    copy: CopySpec,
    /// A copy fault rule's code: the task fails on its stream and no byte lands.
    fail: Option<AclCode>,
}

#[derive(Clone, Debug)]
enum TaskKind {
    Kernel(Box<Kernel>),
    Record { event: u64 },
    Wait(Capture),
    Copy(CopyTask),
}

#[derive(Clone, Debug)]
struct Task {
    /// Its number on its stream, from 1.
    seq: u64,
    enqueued: Ns,
    tag: u64,
    /// A caller waits for this task's own result ([`Device::task_result`]).
    watched: bool,
    kind: TaskKind,
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    /// A kernel of a run waiting for its partner to start (the handshake); the op timeout
    /// kills it at `killed_at`.
    Spinning { killed_at: Option<Ns> },
    /// A wait task, until its capture passes.
    Waiting,
    /// Working until `end` (`None`: never).
    Working {
        end: Option<Ns>,
        work_start: Ns,
        ending: Ending,
    },
}

#[derive(Clone, Debug)]
struct Head {
    task: Task,
    start: Ns,
    phase: Phase,
    /// The result a non-kernel task ends with.
    fail: Option<AclCode>,
}

#[derive(Clone, Debug)]
struct Stream {
    number: i32,
    queue: VecDeque<Task>,
    head: Option<Head>,
    /// When its last task ended (its creation, before any).
    prev_end: Ns,
    submitted: u64,
    completed: u64,
    /// Kernels queued or running.
    kernels_out: u64,
    /// The first failed task's code and its end, kept until the stream is destroyed or the
    /// device force-reset.
    sticky: Option<(Ns, AclCode)>,
    /// The run of the last kernel launched on it.
    last_run: Option<u64>,
    /// Its last task is a host-to-device copy (an arm).
    after_arm: bool,
}

impl Stream {
    fn idle(&self, legacy: bool) -> bool {
        (legacy && self.sticky.is_some()) || (self.head.is_none() && self.queue.is_empty())
    }
}

/// One kernel of a run, as the run tracks it.
#[derive(Clone, Copy, Debug)]
struct RunKernel {
    stream: u64,
    seq: u64,
    /// Spinning for its partner since this time.
    spinning: Option<Ns>,
    working: bool,
}

#[derive(Clone, Debug, Default)]
struct Run {
    id: Option<u64>,
    kernels: [Option<RunKernel>; 2],
    ends: [Option<Contribution>; 2],
    record: Option<u64>,
}

/// The slot buffers of the run launched last with a handshake address: a device-to-host read
/// covering one of them is that run's status or record read.
#[derive(Clone, Copy, Debug, Default)]
struct LiveRun {
    id: Option<u64>,
    header: Option<u64>,
    record: Option<u64>,
}

/// Which slot buffer a read covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotRead {
    /// The status header: a status read.
    Header,
    /// The result record: a record read.
    Record,
}

/// One device: its streams and their tasks, events, device memory, runs, sticky codes, reset
/// generation and fault rules.
#[derive(Clone, Debug)]
pub struct Device {
    semantics: Semantics,
    timing: Timing,
    op_timeout: Option<Ns>,
    faults: Faults,
    generation: u64,
    next_stream_number: i32,
    streams: BTreeMap<u64, Stream>,
    events: BTreeMap<u64, Event>,
    memory: Memory,
    runs: BTreeMap<RunKey, Run>,
    live: BTreeMap<u64, LiveRun>,
    /// The device fault (`device_fault_fails_calls`): from when, and its code.
    fault: Option<(Ns, AclCode)>,
    notes: Option<Vec<Note>>,
    results: BTreeMap<(u64, u64), Result<(), AclCode>>,
}

impl Device {
    /// A device with no streams, no rules, `semantics`, `timing`, no op timeout, rates drawn
    /// from `seed`.
    #[must_use]
    pub fn new(semantics: Semantics, timing: Timing, seed: u64) -> Self {
        Self {
            semantics,
            timing,
            op_timeout: None,
            faults: Faults::new(seed),
            generation: 0,
            next_stream_number: 1,
            streams: BTreeMap::new(),
            events: BTreeMap::new(),
            memory: Memory::default(),
            runs: BTreeMap::new(),
            live: BTreeMap::new(),
            fault: None,
            notes: None,
            results: BTreeMap::new(),
        }
    }

    /// Keeps [`Note`]s of what happens (off by default), for [`Device::take_notes`].
    pub fn keep_notes(&mut self, on: bool) {
        self.notes = on.then(Vec::new);
    }

    /// The notes kept since the last take.
    pub fn take_notes(&mut self) -> Vec<Note> {
        self.notes.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn note(&mut self, note: impl FnOnce() -> Note) {
        if let Some(notes) = self.notes.as_mut() {
            notes.push(note());
        }
    }

    /// The semantic switches.
    #[must_use]
    pub const fn semantics(&self) -> Semantics {
        self.semantics
    }

    /// Sets the semantic switches (they apply from the next transition on).
    pub fn set_semantics(&mut self, semantics: Semantics) {
        self.semantics = semantics;
    }

    /// The op timeout (`None`: never), which a kernel reads when it starts to work.
    #[must_use]
    pub const fn op_timeout(&self) -> Option<Ns> {
        self.op_timeout
    }

    /// Sets the op timeout (`None`: kernels are never killed).
    pub fn set_op_timeout(&mut self, op_timeout: Option<Ns>) {
        self.op_timeout = op_timeout;
    }

    /// The context generation: bumped by every force reset.
    #[must_use]
    pub const fn generation(&self) -> u64 {
        self.generation
    }

    /// The installed fault rules.
    #[must_use]
    pub fn fault_rules(&self) -> &[FaultRule] {
        self.faults.rules()
    }

    /// Installs a fault rule after the others (its `calls` count from now).
    pub fn install(&mut self, rule: FaultRule) {
        self.faults.install(rule);
    }

    /// Removes every fault rule.
    pub fn heal(&mut self) {
        self.faults.heal();
    }

    /// How many faults fired.
    #[must_use]
    pub const fn faults_injected(&self) -> u64 {
        self.faults.injected()
    }

    /// Consults the rules at `site` about `run` (for the sites the backend owns: the probe,
    /// the runner's prepare, finalise and upload).
    pub fn decide(&mut self, site: Site, run: Option<u64>) -> Option<Injected> {
        self.faults.decide(site, run)
    }

    /// Consults the `call` rules for a call of `symbol`: the raw value it returns instead of
    /// running, if one fires.
    pub fn decide_call(&mut self, symbol: &str) -> Option<i32> {
        self.faults.decide_call(symbol)
    }

    fn fail_at(&mut self, site: Site, run: Option<u64>) -> Result<(), AclCode> {
        match self.faults.decide(site, run) {
            Some(Injected::Fail(code)) => Err(code),
            _ => Ok(()),
        }
    }

    // ----- the device fault -------------------------------------------------------------

    /// The device fault, if one happened by `now` ([`Semantics::device_fault_fails_calls`]):
    /// what every checked call returns until a force reset.
    ///
    /// # Errors
    ///
    /// The device fault's code.
    pub fn fault_now(&self, now: Ns) -> Result<(), AclCode> {
        match self.fault {
            Some((since, code)) if since <= now => Err(code),
            _ => Ok(()),
        }
    }

    /// What a device synchronize returns once the device is drained: the device fault, or
    /// (without the sticky fallout) the first faulted stream's code.
    ///
    /// # Errors
    ///
    /// That code.
    pub fn device_code(&self, now: Ns) -> Result<(), AclCode> {
        if self.semantics.device_fault_fails_calls {
            return self.fault_now(now);
        }
        match self
            .streams
            .values()
            .find_map(|s| s.sticky.filter(|(since, _)| *since <= now))
        {
            Some((_, code)) => Err(code),
            None => Ok(()),
        }
    }

    fn stream(&self, id: u64) -> Result<&Stream, CallError> {
        self.streams
            .get(&id)
            .ok_or(CallError::Dead(Dead::Stream(id)))
    }

    /// An enqueue on `id` is refused: the stream holds a sticky code and
    /// [`Semantics::refuse_enqueue_after_fault`] is on (507899).
    fn refuse_enqueue(&self, id: u64) -> Result<(), AclCode> {
        let sticky = self.streams.get(&id).is_some_and(|s| s.sticky.is_some());
        if self.semantics.refuse_enqueue_after_fault && sticky {
            Err(AclCode::RtDrvInternalError)
        } else {
            Ok(())
        }
    }

    // ----- streams ----------------------------------------------------------------------

    /// `aclrtCreateStreamWithConfig`: stream `id` (the backend's handle), empty from `now`;
    /// returns its number (`aclrtStreamGetId`).
    ///
    /// # Errors
    ///
    /// The device fault, or a `stream-create` rule's code.
    pub fn create_stream(&mut self, id: u64, now: Ns) -> Result<i32, AclCode> {
        self.fault_now(now)?;
        self.fail_at(Site::StreamCreate, None)?;
        let number = self.next_stream_number;
        self.next_stream_number = number.saturating_add(1);
        self.streams.insert(
            id,
            Stream {
                number,
                queue: VecDeque::new(),
                head: None,
                prev_end: now,
                submitted: 0,
                completed: 0,
                kernels_out: 0,
                sticky: None,
                last_run: None,
                after_arm: false,
            },
        );
        Ok(number)
    }

    /// Whether stream `id` still has tasks to run (`None`: not live). A stream halted by a
    /// fault under the legacy switch has none.
    #[must_use]
    pub fn stream_busy(&self, id: u64) -> Option<bool> {
        let legacy = self.semantics.legacy_event_faults;
        self.streams.get(&id).map(|s| !s.idle(legacy))
    }

    /// `aclrtDestroyStream(Force)`: stream `id` dies; its queued and running tasks are
    /// dropped (their runs publish nothing) and an event that captured unfinished work on it
    /// never completes. Whether to wait for its work first is the backend's.
    ///
    /// # Errors
    ///
    /// A dead stream, or a `stream-destroy` rule's code (the stream survives).
    pub fn destroy_stream(&mut self, id: u64, now: Ns) -> Result<(), CallError> {
        self.stream(id)?;
        self.fail_at(Site::StreamDestroy, None)?;
        self.remove_stream(id, now);
        Ok(())
    }

    fn remove_stream(&mut self, id: u64, now: Ns) {
        let Some(stream) = self.streams.remove(&id) else {
            return;
        };
        for task in stream
            .head
            .iter()
            .map(|h| &h.task)
            .chain(stream.queue.iter())
        {
            let tag = task.tag;
            self.note(|| Note::Dropped { tag, at: now });
        }
        // A run with a kernel on this stream can no longer publish.
        self.runs
            .retain(|_, run| run.kernels.iter().flatten().all(|k| k.stream != id));
        let abort = |capture: &mut Capture| {
            if matches!(*capture, Capture::Pending { stream, .. } if stream == id) {
                *capture = Capture::Aborted;
            }
        };
        for event in self.events.values_mut() {
            abort(&mut event.capture);
        }
        let mut aborted_heads = Vec::new();
        for (&other, s) in &mut self.streams {
            for task in &mut s.queue {
                if let TaskKind::Wait(capture) = &mut task.kind {
                    abort(capture);
                }
            }
            if let Some(head) = s.head.as_mut() {
                if let TaskKind::Wait(capture) = &mut head.task.kind {
                    abort(capture);
                    if *capture == Capture::Aborted && matches!(head.phase, Phase::Waiting) {
                        aborted_heads.push(other);
                    }
                }
            }
        }
        for other in aborted_heads {
            self.end_wait(other, now, Some(AclCode::Unknown(STREAM_ABORT)));
        }
    }

    /// Stream `id`'s number (`aclrtStreamGetId`).
    #[must_use]
    pub fn stream_number(&self, id: u64) -> Option<i32> {
        self.streams.get(&id).map(|s| s.number)
    }

    /// The live streams' handles and numbers, in handle order.
    pub fn stream_numbers(&self) -> impl Iterator<Item = (u64, i32)> + '_ {
        self.streams.iter().map(|(&id, s)| (id, s.number))
    }

    /// Whether stream `id` is live.
    #[must_use]
    pub fn has_stream(&self, id: u64) -> bool {
        self.streams.contains_key(&id)
    }

    /// The tasks submitted to stream `id` so far (what a synchronize waits for).
    #[must_use]
    pub fn stream_submitted(&self, id: u64) -> Option<u64> {
        self.streams.get(&id).map(|s| s.submitted)
    }

    /// Whether stream `id` has completed its first `upto` tasks (under the legacy switch, or
    /// halted by a fault). `true` for a stream that is gone.
    #[must_use]
    pub fn stream_reached(&self, id: u64, upto: u64) -> bool {
        let legacy = self.semantics.legacy_event_faults;
        self.streams
            .get(&id)
            .is_none_or(|s| s.completed >= upto || (legacy && s.sticky.is_some()))
    }

    /// Stream `id`'s sticky code as of `now` (`Ok(None)`: clean).
    ///
    /// # Errors
    ///
    /// A dead stream.
    pub fn stream_sticky(&self, id: u64, now: Ns) -> Result<Option<AclCode>, CallError> {
        Ok(self
            .stream(id)?
            .sticky
            .filter(|(since, _)| *since <= now)
            .map(|(_, code)| code))
    }

    /// Whether every stream is idle (drained, or halted by a fault under the legacy switch).
    #[must_use]
    pub fn all_idle(&self) -> bool {
        let legacy = self.semantics.legacy_event_faults;
        self.streams.values().all(|s| s.idle(legacy))
    }

    /// Streams, events and device allocations alive now.
    #[must_use]
    pub fn live_counts(&self) -> (u64, u64, u64) {
        let n = |len: usize| u64::try_from(len).unwrap_or(u64::MAX);
        (
            n(self.streams.len()),
            n(self.events.len()),
            n(self.memory.len()),
        )
    }

    // ----- events -----------------------------------------------------------------------

    /// `aclrtCreateEventExWithFlag`: event `id` (the backend's handle), never recorded;
    /// `sync` with `ACL_EVENT_SYNC` (another stream may wait on it).
    ///
    /// # Errors
    ///
    /// The device fault.
    pub fn create_event(&mut self, id: u64, sync: bool, now: Ns) -> Result<(), AclCode> {
        self.fault_now(now)?;
        self.events.insert(
            id,
            Event {
                capture: Capture::Never,
                sync,
                run: None,
            },
        );
        Ok(())
    }

    /// Whether event `id` is live.
    #[must_use]
    pub fn has_event(&self, id: u64) -> bool {
        self.events.contains_key(&id)
    }

    /// `aclrtDestroyEvent`: `false` if it was not live.
    pub fn destroy_event(&mut self, id: u64) -> bool {
        self.events.remove(&id).is_some()
    }

    /// `aclrtRecordEvent`: a task on `stream` that passes once every task before it has; the
    /// event captures it (a later record moves the event, not a wait already queued on it).
    ///
    /// # Errors
    ///
    /// A dead stream or event, the device fault, a refused enqueue, an `event-record` rule's
    /// code.
    pub fn record_event(
        &mut self,
        event: u64,
        stream: u64,
        run: RecordRun,
        tag: u64,
        now: Ns,
    ) -> Result<(), CallError> {
        let (last_run, after_arm) = {
            let s = self.stream(stream)?;
            (s.last_run, s.after_arm)
        };
        if !self.events.contains_key(&event) {
            return Err(CallError::Dead(Dead::Event(event)));
        }
        self.fault_now(now)?;
        self.refuse_enqueue(stream)?;
        let run = match run {
            RecordRun::Armed => None,
            RecordRun::Known(run) => {
                self.fail_at(Site::EventRecord, run)?;
                run
            }
            RecordRun::LastKernel if after_arm => None,
            RecordRun::LastKernel => {
                self.fail_at(Site::EventRecord, last_run)?;
                last_run
            }
        };
        let seq = self.enqueue(stream, TaskKind::Record { event }, tag, false, now);
        if let Some(e) = self.events.get_mut(&event) {
            e.capture = Capture::Pending { stream, seq };
            e.run = run;
        }
        Ok(())
    }

    /// The run whose launch recorded event `id` last.
    #[must_use]
    pub fn event_run(&self, id: u64) -> Option<u64> {
        self.events.get(&id).and_then(|e| e.run)
    }

    /// `aclrtStreamWaitEvent`: `stream`'s later tasks start once the tasks the event captured
    /// now have completed (a never-recorded event: no wait).
    ///
    /// # Errors
    ///
    /// A dead event or stream, 207000 for an event without `ACL_EVENT_SYNC`, the device fault,
    /// a refused enqueue.
    pub fn stream_wait_event(
        &mut self,
        stream: u64,
        event: u64,
        tag: u64,
        now: Ns,
    ) -> Result<(), CallError> {
        let Some(e) = self.events.get(&event) else {
            return Err(CallError::Dead(Dead::Event(event)));
        };
        if !e.sync {
            return Err(AclCode::RtFeatureNotSupport.into());
        }
        let capture = e.capture;
        self.stream(stream)?;
        self.fault_now(now)?;
        self.refuse_enqueue(stream)?;
        self.enqueue(stream, TaskKind::Wait(capture), tag, false, now);
        Ok(())
    }

    /// What event `id`'s capture amounts to now (`None`: not live).
    #[must_use]
    pub fn event_state(&self, id: u64) -> Option<EventState> {
        let event = self.events.get(&id)?;
        Some(match event.capture {
            Capture::Never | Capture::Done(_) => EventState::Complete,
            Capture::Aborted => EventState::Failed(AclCode::Unknown(STREAM_ABORT)),
            Capture::Pending { stream, .. } => match self.streams.get(&stream) {
                None => EventState::Failed(AclCode::Unknown(STREAM_ABORT)),
                Some(s) if self.semantics.legacy_event_faults => s
                    .sticky
                    .map_or(EventState::NotReady, |(_, code)| EventState::Failed(code)),
                Some(_) => EventState::NotReady,
            },
        })
    }

    /// When event `id` completed: `Some(None)` never recorded, `Some(Some(t))` passed at `t`,
    /// `None` not passed (or not live).
    #[must_use]
    pub fn event_passed(&self, id: u64) -> Option<Option<Ns>> {
        match self.events.get(&id)?.capture {
            Capture::Never => Some(None),
            Capture::Done(at) => Some(Some(at)),
            Capture::Pending { .. } | Capture::Aborted => None,
        }
    }

    // ----- memory -----------------------------------------------------------------------

    /// The checks an allocation makes before the backend picks its address (`aclrtMalloc`,
    /// `aclrtMallocHost`): the device fault, a zero size (107000), a `malloc` rule's code.
    ///
    /// # Errors
    ///
    /// That code.
    pub fn check_malloc(&mut self, size: usize, now: Ns) -> Result<(), AclCode> {
        self.fault_now(now)?;
        if size == 0 {
            return Err(AclCode::RtParamInvalid);
        }
        self.fail_at(Site::Malloc, None)
    }

    /// Device memory of `size` zero bytes at `base` (the backend's address, checked by
    /// [`Device::check_malloc`]).
    pub fn allocate(&mut self, base: u64, size: usize) {
        self.memory.insert(base, size);
    }

    /// `aclrtFree` of the allocation at `base`: whether a queued or running task will still
    /// use it (the simulator's invariant; the fake lets that task fail).
    ///
    /// # Errors
    ///
    /// [`Dead::Memory`] when no allocation starts at `base`.
    pub fn free(&mut self, base: u64) -> Result<bool, CallError> {
        let span = self
            .memory
            .span(base)
            .ok_or(CallError::Dead(Dead::Memory(base)))?;
        let in_use = self.streams.values().any(|s| {
            s.head
                .iter()
                .map(|h| &h.task)
                .chain(s.queue.iter())
                .any(|task| task_touches(task, &span))
        });
        self.memory.remove(base);
        Ok(in_use)
    }

    /// Whether a queued or running copy task will still use host memory in `span`.
    #[must_use]
    pub fn host_in_use(&self, span: &core::ops::Range<u64>) -> bool {
        self.streams.values().any(|s| {
            s.head
                .iter()
                .map(|h| &h.task)
                .chain(s.queue.iter())
                .any(|task| {
                    matches!(&task.kind, TaskKind::Copy(c) if [c.copy.src, c.copy.dst]
                    .into_iter()
                    .any(|place| matches!(place, Place::Host { addr, .. } if span.contains(&addr))))
                })
        })
    }

    /// The allocation holding `addr`: its base and `addr`'s offset in it.
    #[must_use]
    pub fn locate(&self, addr: u64) -> Option<(u64, usize)> {
        self.memory.locate(addr)
    }

    /// The `len` bytes at `addr`, if one allocation holds them all.
    #[must_use]
    pub fn bytes(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.memory.bytes(addr, len)
    }

    /// The run whose kernels last wrote the allocation holding `addr`.
    #[must_use]
    pub fn kernel_writer(&self, addr: u64) -> Option<u64> {
        self.memory.kernel_writer(addr)
    }

    /// A synchronous host-to-device copy (`aclrtMemcpy`): the arm (its fault site; a copy of a
    /// whole 280-byte record region, the region's one zeroing, is not an arm), or any other.
    ///
    /// # Errors
    ///
    /// The device fault, an `arm` rule's code, a dead address, 107000 for a range past its
    /// allocation.
    pub fn write(&mut self, dst: u64, bytes: &[u8], now: Ns) -> Result<(), CallError> {
        self.fault_now(now)?;
        if bytes.len() != RECORD_BYTES {
            self.fail_at(Site::Arm, None)?;
        }
        if self.memory.locate(dst).is_none() {
            return Err(CallError::Dead(Dead::Memory(dst)));
        }
        if self.memory.write(dst, bytes, None) {
            Ok(())
        } else {
            Err(AclCode::RtParamInvalid.into())
        }
    }

    /// The live run whose `what` buffer a read of `len` bytes from `src` covers, if any.
    #[must_use]
    pub fn slot_read(&self, src: u64, len: usize, what: SlotRead) -> Option<Option<u64>> {
        let read = src..src.saturating_add(u64::try_from(len).unwrap_or(u64::MAX));
        self.live
            .values()
            .find(|run| {
                let at = match what {
                    SlotRead::Header => run.header,
                    SlotRead::Record => run.record,
                };
                at.is_some_and(|at| read.contains(&at))
            })
            .map(|run| run.id)
    }

    /// A synchronous device-to-host copy (`aclrtMemcpy`) into `dst`: a status read when it
    /// covers a live run's header, a record read when it covers its record (their fault
    /// sites).
    ///
    /// # Errors
    ///
    /// The device fault, a `status-read` or `record-read` rule's code, a dead address, 107000
    /// for a range past its allocation.
    pub fn read(&mut self, dst: &mut [u8], src: u64, now: Ns) -> Result<(), CallError> {
        let len = dst.len();
        let header_of = self.slot_read(src, len, SlotRead::Header);
        let record_of = self.slot_read(src, len, SlotRead::Record);
        self.fault_now(now)?;
        if let Some(run) = header_of {
            self.fail_at(Site::StatusRead, run)?;
        }
        if let Some(run) = record_of {
            self.fail_at(Site::RecordRead, run)?;
        }
        if self.memory.locate(src).is_none() {
            return Err(CallError::Dead(Dead::Memory(src)));
        }
        let bytes = self.memory.bytes(src, len).ok_or(AclCode::RtParamInvalid)?;
        dst.copy_from_slice(bytes);
        Ok(())
    }

    /// A synchronous device-to-device copy.
    ///
    /// # Errors
    ///
    /// 107000 when either range is outside one allocation.
    pub fn copy_within(&mut self, dst: u64, src: u64, len: usize) -> Result<(), AclCode> {
        let bytes = self
            .memory
            .bytes(src, len)
            .ok_or(AclCode::RtParamInvalid)?
            .to_vec();
        if self.memory.write(dst, &bytes, None) {
            Ok(())
        } else {
            Err(AclCode::RtParamInvalid)
        }
    }

    // ----- copies on the streams --------------------------------------------------------

    /// `aclrtMemcpyAsync`: a copy task on `stream`; its bytes move when the stream reaches it.
    /// A host-to-device copy is an arm (its fault site), a device-to-host one covering a live
    /// run's header that run's status read; a `copy` rule fails the task when it runs.
    /// Returns the task's number on its stream (for [`Device::task_result`] when `watched`).
    ///
    /// # Errors
    ///
    /// A dead stream or device address, the device fault, 107000 for a range outside its
    /// allocation, a refused enqueue, an `arm` or `status-read` rule's code.
    pub fn enqueue_copy(
        &mut self,
        stream: u64,
        copy: CopySpec,
        host: &dyn HostMemory,
        watched: bool,
        tag: u64,
        now: Ns,
    ) -> Result<u64, CallError> {
        self.stream(stream)?;
        self.fault_now(now)?;
        for place in [copy.src, copy.dst] {
            match place {
                Place::Device(addr) if self.memory.locate(addr).is_none() => {
                    return Err(CallError::Dead(Dead::Memory(addr)));
                }
                _ => {}
            }
        }
        for place in [copy.src, copy.dst] {
            let fits = match place {
                Place::Device(addr) => self.memory.bytes(addr, copy.len).is_some(),
                Place::Host { addr, pinned } => host.holds(addr, copy.len, pinned),
            };
            if !fits {
                return Err(AclCode::RtParamInvalid.into());
            }
        }
        self.refuse_enqueue(stream)?;
        match (copy.src, copy.dst) {
            (Place::Host { .. }, Place::Device(_)) => self.fail_at(Site::Arm, None)?,
            (Place::Device(src), Place::Host { .. }) => {
                if let Some(run) = self.slot_read(src, copy.len, SlotRead::Header) {
                    self.fail_at(Site::StatusRead, run)?;
                }
            }
            _ => {}
        }
        let fail = match self.faults.decide(Site::Copy, None) {
            Some(Injected::Fail(code)) => Some(code),
            _ => None,
        };
        Ok(self.enqueue(
            stream,
            TaskKind::Copy(CopyTask { copy, fail }),
            tag,
            watched,
            now,
        ))
    }

    /// A watched task's own result, once it ran (taken).
    pub fn task_result(&mut self, stream: u64, seq: u64) -> Option<Result<(), AclCode>> {
        self.results.remove(&(stream, seq))
    }

    // ----- kernels ----------------------------------------------------------------------

    /// Launches a kernel on `stream`.
    ///
    /// Checks, in order: the stream; the buffers (107000: a range outside its allocation, a
    /// record with epoch 0, a second kernel of one engine in a run); the device fault; a
    /// refused enqueue; the `aicore-launch`/`aicpu-launch` rule (with its run id). Then the
    /// kernel rules may change its outcome, and an AICPU kernel with a run id decides its
    /// run's fate (the `run` site) for both kernels.
    ///
    /// # Errors
    ///
    /// The first check that fails.
    pub fn launch(
        &mut self,
        stream: u64,
        spec: KernelSpec,
        now: Ns,
    ) -> Result<Launched, CallError> {
        let mut spec = spec;
        self.stream(stream)?;
        let fits =
            |at: Option<u64>, len: usize| at.is_none_or(|a| self.memory.bytes(a, len).is_some());
        if !fits(spec.timing, 16)
            || !fits(spec.header, spec.header_bytes.len())
            || !fits(spec.record, RECORD_BYTES)
            || (spec.record.is_some() && spec.epoch == 0)
        {
            return Err(AclCode::RtParamInvalid.into());
        }
        if let Some(key) = spec.run {
            let taken = self
                .runs
                .get(&key)
                .is_some_and(|run| run.kernels[spec.engine.index()].is_some());
            if taken {
                return Err(AclCode::RtParamInvalid.into());
            }
        }
        self.fault_now(now)?;
        self.refuse_enqueue(stream)?;
        let site = match spec.engine {
            Engine::Aicore => Site::AicoreLaunch,
            Engine::Aicpu => Site::AicpuLaunch,
        };
        self.fail_at(site, spec.run_id)?;
        if let Some(Injected::Kernel(outcome, header)) =
            self.faults.decide(Site::Kernel(spec.engine), spec.run_id)
        {
            spec.outcome = outcome;
            match header {
                KernelHeader::Own => {}
                KernelHeader::Latched(latched) => {
                    spec.header_bytes = latched_header(latched, &spec.header_bytes);
                }
                KernelHeader::Bytes(bytes) => spec.header_bytes = bytes,
            }
        }
        let queued = self.streams.get(&stream).is_some_and(|s| s.kernels_out > 0);
        let (engine, run, run_id, record, header) =
            (spec.engine, spec.run, spec.run_id, spec.record, spec.header);
        let tag = spec.tag;
        let seq = self.enqueue(
            stream,
            TaskKind::Kernel(Box::new(Kernel { spec })),
            tag,
            false,
            now,
        );
        if let Some(s) = self.streams.get_mut(&stream) {
            s.kernels_out += 1;
            s.last_run = run_id;
        }
        if let Some(key) = run {
            let r = self.runs.entry(key).or_default();
            r.id = r.id.or(run_id);
            r.kernels[engine.index()] = Some(RunKernel {
                stream,
                seq,
                spinning: None,
                working: false,
            });
            if record.is_some() {
                r.record = record;
            }
            let live = self.live.entry(key.handshake).or_default();
            if live.id != run_id && run_id.is_some() {
                *live = LiveRun::default();
            }
            live.id = run_id.or(live.id);
            live.header = header.or(live.header);
            live.record = record.or(live.record);
            if engine == Engine::Aicpu && run_id.is_some() {
                let fate = self.faults.decide(Site::Run, run_id);
                if let Some(injected) = &fate {
                    self.apply_fate(key, injected);
                }
                return Ok(Launched { queued, fate });
            }
        }
        Ok(Launched { queued, fate: None })
    }

    /// Applies a run's fate to each of its kernels that has not started to work.
    fn apply_fate(&mut self, key: RunKey, injected: &Injected) {
        let Some(run) = self.runs.get(&key) else {
            return;
        };
        let kernels = run.kernels;
        for engine in Engine::BOTH {
            let Some(k) = kernels[engine.index()].filter(|k| !k.working) else {
                continue;
            };
            let Some(kernel) = self.queued_kernel_mut(k.stream, k.seq) else {
                continue;
            };
            if let Some((outcome, header)) = fate(injected, engine, &kernel.spec.header_bytes) {
                kernel.spec.outcome = outcome;
                if let Some(header) = header {
                    kernel.spec.header_bytes = header;
                }
            }
        }
    }

    /// The kernel task `seq` of `stream`, queued or spinning at its front.
    fn queued_kernel_mut(&mut self, stream: u64, seq: u64) -> Option<&mut Kernel> {
        let s = self.streams.get_mut(&stream)?;
        let task = match s.head.as_mut() {
            Some(head) if head.task.seq == seq => &mut head.task,
            _ => s.queue.iter_mut().find(|t| t.seq == seq)?,
        };
        match &mut task.kind {
            TaskKind::Kernel(kernel) => Some(kernel),
            _ => None,
        }
    }

    /// The lane finalised run `id`: its slot buffers are no longer its (a read of them is no
    /// longer its status or record read).
    pub fn retire_run(&mut self, id: u64) {
        self.live.retain(|_, run| run.id != Some(id));
    }

    // ----- recovery ---------------------------------------------------------------------

    /// `aclrtResetDeviceForce`: every stream (its work dropped), event and allocation dies,
    /// the device fault clears, a new context generation starts. Fault rules and switches
    /// stay; the stream numbering too, unless [`Semantics::reset_restarts_stream_numbering`].
    ///
    /// # Errors
    ///
    /// A `reset` rule's code (nothing is reset).
    pub fn force_reset(&mut self, now: Ns) -> Result<Reclaimed, AclCode> {
        self.fail_at(Site::Reset, None)?;
        let (streams, events, allocations) = self.live_counts();
        let ids: Vec<u64> = self.streams.keys().copied().collect();
        for id in ids {
            self.remove_stream(id, now);
        }
        self.events.clear();
        self.memory.clear();
        self.runs.clear();
        self.live.clear();
        self.results.clear();
        self.fault = None;
        self.generation += 1;
        if self.semantics.reset_restarts_stream_numbering {
            self.next_stream_number = 1;
        }
        Ok(Reclaimed {
            streams,
            events,
            allocations,
        })
    }

    // ----- the engine -------------------------------------------------------------------

    fn enqueue(&mut self, stream: u64, kind: TaskKind, tag: u64, watched: bool, now: Ns) -> u64 {
        let Some(s) = self.streams.get_mut(&stream) else {
            return 0;
        };
        s.after_arm = matches!(
            &kind,
            TaskKind::Copy(CopyTask {
                copy: CopySpec {
                    src: Place::Host { .. },
                    dst: Place::Device(_),
                    ..
                },
                ..
            })
        );
        s.submitted += 1;
        let seq = s.submitted;
        s.queue.push_back(Task {
            seq,
            enqueued: now,
            tag,
            watched,
            kind,
        });
        seq
    }

    /// When the front task of a stream with no running task starts.
    fn ready(&self, s: &Stream, task: &Task) -> Ns {
        let t = &self.timing;
        let (switch, latency) = match task.kind {
            TaskKind::Wait(_) => return s.prev_end,
            TaskKind::Kernel(_) => (t.task_switch, t.kernel_start_latency),
            TaskKind::Record { .. } | TaskKind::Copy(_) => (t.task_switch, 0),
        };
        s.prev_end
            .saturating_add(switch)
            .max(task.enqueued.saturating_add(latency))
    }

    fn next_of(&self, s: &Stream) -> Option<Ns> {
        match &s.head {
            Some(head) => match head.phase {
                Phase::Working { end, .. } => end,
                Phase::Spinning { killed_at } => killed_at,
                Phase::Waiting => None,
            },
            None if self.semantics.legacy_event_faults && s.sticky.is_some() => None,
            None => s.queue.front().map(|task| self.ready(s, task)),
        }
    }

    /// The earliest transition due on any stream, and its stream.
    fn next_transition(&self) -> Option<(Ns, u64)> {
        self.streams
            .iter()
            .filter_map(|(&id, s)| self.next_of(s).map(|t| (t, id)))
            .min()
    }

    /// What stream `id`'s worker should do next.
    #[must_use]
    pub fn stream_next(&self, id: u64) -> StreamNext {
        let Some(s) = self.streams.get(&id) else {
            return StreamNext::Gone;
        };
        if s.head.is_none()
            && (s.queue.is_empty() || (self.semantics.legacy_event_faults && s.sticky.is_some()))
        {
            return StreamNext::Idle;
        }
        self.next_of(s).map_or(StreamNext::Blocked, StreamNext::At)
    }

    /// Applies every transition due by `now`, in time order; returns how many.
    pub fn advance(&mut self, now: Ns, host: &mut dyn HostMemory) -> usize {
        let mut applied = 0;
        while let Some((t, id)) = self.next_transition().filter(|(t, _)| *t <= now) {
            self.step(id, t, host);
            applied += 1;
        }
        applied
    }

    /// Applies transitions in time order until `done` holds, up to `deadline` (`None`: no
    /// limit). Returns when `done` came to hold (the transition's time), or `None` when it did
    /// not by the deadline (every transition due by then applied) or never can.
    pub fn run_until(
        &mut self,
        deadline: Option<Ns>,
        host: &mut dyn HostMemory,
        done: impl Fn(&Self) -> bool,
    ) -> Option<Ns> {
        loop {
            let (t, id) = self
                .next_transition()
                .filter(|(t, _)| deadline.is_none_or(|d| *t <= d))?;
            self.step(id, t, host);
            if done(self) {
                return Some(t);
            }
        }
    }

    fn step(&mut self, id: u64, t: Ns, host: &mut dyn HostMemory) {
        let Some(s) = self.streams.get(&id) else {
            return;
        };
        match s.head.as_ref().map(|h| h.phase) {
            None => self.start_front(id, t),
            Some(Phase::Working { .. }) => self.finish(id, t, host),
            Some(Phase::Spinning { .. }) => self.kill_spinning(id, t),
            Some(Phase::Waiting) => {}
        }
    }

    fn start_front(&mut self, id: u64, t: Ns) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let Some(task) = s.queue.pop_front() else {
            return;
        };
        let timing = self.timing;
        let (phase, fail) = match &task.kind {
            TaskKind::Record { .. } => (working(t.saturating_add(timing.event_task), t), None),
            TaskKind::Copy(copy) => {
                let kib = u64::try_from(copy.copy.len).unwrap_or(u64::MAX) / 1024;
                let moving = kib.saturating_mul(timing.copy_ns_per_kib);
                (
                    working(t.saturating_add(timing.copy_task).saturating_add(moving), t),
                    None,
                )
            }
            TaskKind::Wait(capture) => match *capture {
                Capture::Never => (working(t.max(task.enqueued), t), None),
                Capture::Done(at) => (working(t.max(at), t), None),
                Capture::Aborted => (working(t, t), Some(AclCode::Unknown(STREAM_ABORT))),
                Capture::Pending { .. } => (Phase::Waiting, None),
            },
            TaskKind::Kernel(_) => (Phase::Waiting, None),
        };
        let kernel = match &task.kind {
            TaskKind::Kernel(k) => Some((k.spec.run, k.spec.engine, task.tag)),
            _ => None,
        };
        s.head = Some(Head {
            task,
            start: t,
            phase,
            fail,
        });
        if let Some((run, engine, tag)) = kernel {
            self.note(|| Note::KernelStarted { tag, at: t });
            self.start_kernel(id, t, run, engine);
        }
    }

    /// A kernel at the front of stream `id` since `t`: it works at once, or (the handshake)
    /// spins until its partner has started too, and then both work.
    fn start_kernel(&mut self, id: u64, t: Ns, run: Option<RunKey>, engine: Engine) {
        let paired = run.filter(|_| self.semantics.handshake);
        let Some(key) = paired else {
            self.begin_work(id, t);
            return;
        };
        let partner = self
            .runs
            .get(&key)
            .and_then(|r| r.kernels[engine.partner().index()]);
        match partner.filter(|p| p.spinning.is_some()) {
            Some(p) => {
                self.begin_work(p.stream, t);
                self.begin_work(id, t);
                self.couple(key, t);
            }
            None => {
                let killed_at = self.op_timeout.map(|o| t.saturating_add(o));
                if let Some(head) = self.streams.get_mut(&id).and_then(|s| s.head.as_mut()) {
                    head.phase = Phase::Spinning { killed_at };
                }
                if let Some(k) = self
                    .runs
                    .get_mut(&key)
                    .and_then(|r| r.kernels[engine.index()].as_mut())
                {
                    k.spinning = Some(t);
                }
            }
        }
    }

    /// The scheduler ends no earlier than its workers (the handshake): the AICPU kernel of a
    /// run whose kernels began together at `t` ends with the later of the two.
    fn couple(&mut self, key: RunKey, t: Ns) {
        let Some(run) = self.runs.get(&key) else {
            return;
        };
        let [Some(core), Some(cpu)] = run.kernels else {
            return;
        };
        let end_of = |d: &Self, k: RunKernel| match d.streams.get(&k.stream)?.head.as_ref()?.phase {
            Phase::Working {
                end, work_start, ..
            } if work_start == t => Some(end),
            _ => None,
        };
        let (Some(core_end), Some(cpu_end)) = (end_of(self, core), end_of(self, cpu)) else {
            return;
        };
        let coupled = match (core_end, cpu_end) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        if let Some(Phase::Working { end, .. }) = self
            .streams
            .get_mut(&cpu.stream)
            .and_then(|s| s.head.as_mut())
            .map(|h| &mut h.phase)
        {
            *end = coupled;
        }
    }

    /// The kernel at the front of stream `id` starts its work at `t`: its end is planned and
    /// its timing buffer's start written.
    fn begin_work(&mut self, id: u64, t: Ns) {
        let op_timeout = self.op_timeout;
        let Some(head) = self.streams.get_mut(&id).and_then(|s| s.head.as_mut()) else {
            return;
        };
        let TaskKind::Kernel(kernel) = &head.task.kind else {
            return;
        };
        let spec = &kernel.spec;
        let (end, ending) = planned_end(spec.outcome, spec.engine, spec.duration, t, op_timeout);
        head.phase = Phase::Working {
            end,
            work_start: t,
            ending,
        };
        let (run, run_id, engine, timing) = (spec.run, spec.run_id, spec.engine, spec.timing);
        if let Some(k) = run
            .and_then(|key| self.runs.get_mut(&key))
            .and_then(|r| r.kernels[engine.index()].as_mut())
        {
            k.spinning = None;
            k.working = true;
        }
        if let Some(at) = timing {
            self.kernel_write(run_id, at, &t.to_le_bytes());
        }
    }

    fn kernel_write(&mut self, run: Option<u64>, addr: u64, bytes: &[u8]) -> bool {
        let landed = self.memory.write(addr, bytes, run);
        let len = bytes.len();
        self.note(|| Note::KernelWrote {
            run,
            addr,
            len,
            landed,
        });
        landed
    }

    /// A kernel spinning for a partner that never started is killed by the op timeout.
    fn kill_spinning(&mut self, id: u64, t: Ns) {
        let Some(head) = self.streams.get_mut(&id).and_then(|s| s.head.as_mut()) else {
            return;
        };
        let TaskKind::Kernel(kernel) = &head.task.kind else {
            return;
        };
        let code = kernel.spec.engine.timeout_code();
        head.phase = Phase::Working {
            end: Some(t),
            work_start: t,
            ending: Ending::Killed(code),
        };
        // It never worked: no timing, no header.
        self.end_kernel(id, t, false);
    }

    fn finish(&mut self, id: u64, t: Ns, host: &mut dyn HostMemory) {
        let Some(head) = self.streams.get(&id).and_then(|s| s.head.as_ref()) else {
            return;
        };
        match &head.task.kind {
            TaskKind::Kernel(_) => self.end_kernel(id, t, true),
            TaskKind::Record { event } => {
                let (event, seq) = (*event, head.task.seq);
                self.pass_record(id, seq, event, t);
                self.complete(id, t, Ok(()));
            }
            TaskKind::Copy(copy) => {
                let copy = copy.clone();
                let result = match copy.fail {
                    Some(code) => Err(code),
                    None => self.run_copy(copy.copy, host),
                };
                self.complete(id, t, result);
            }
            TaskKind::Wait(_) => {
                let result = head.fail.map_or(Ok(()), Err);
                self.complete(id, t, result);
            }
        }
    }

    fn run_copy(&mut self, copy: CopySpec, host: &mut dyn HostMemory) -> Result<(), AclCode> {
        let bytes = match copy.src {
            Place::Device(addr) => self
                .memory
                .bytes(addr, copy.len)
                .ok_or(AclCode::RtParamInvalid)?
                .to_vec(),
            Place::Host { addr, pinned } => host.read(addr, copy.len, pinned)?,
        };
        match copy.dst {
            Place::Device(addr) => {
                if self.memory.write(addr, &bytes, None) {
                    Ok(())
                } else {
                    Err(AclCode::RtParamInvalid)
                }
            }
            Place::Host { addr, pinned } => host.write(addr, &bytes, pinned),
        }
    }

    /// The record task `seq` of stream `id` passed at `t`: the events and waits that captured
    /// it complete.
    fn pass_record(&mut self, id: u64, seq: u64, event: u64, t: Ns) {
        let pending = Capture::Pending { stream: id, seq };
        if let Some(e) = self.events.get_mut(&event) {
            if e.capture == pending {
                e.capture = Capture::Done(t);
            }
        }
        let mut released = Vec::new();
        for (&other, s) in &mut self.streams {
            for task in &mut s.queue {
                if let TaskKind::Wait(capture) = &mut task.kind {
                    if *capture == pending {
                        *capture = Capture::Done(t);
                    }
                }
            }
            if let Some(head) = s.head.as_mut() {
                if let TaskKind::Wait(capture) = &mut head.task.kind {
                    if *capture == pending {
                        *capture = Capture::Done(t);
                        if matches!(head.phase, Phase::Waiting) {
                            released.push(other);
                        }
                    }
                }
            }
        }
        for other in released {
            self.end_wait(other, t, None);
        }
    }

    /// The wait at the front of stream `id` ends at `max(its start, t)`.
    fn end_wait(&mut self, id: u64, t: Ns, fail: Option<AclCode>) {
        if let Some(head) = self.streams.get_mut(&id).and_then(|s| s.head.as_mut()) {
            let end = head.start.max(t);
            head.phase = working(end, head.start);
            head.fail = fail;
        }
    }

    /// The kernel at the front of stream `id` ends at `t` as planned: its writes (when it
    /// worked), its stream's result, the op-timeout code's placement, the device fault, and
    /// its run's record.
    fn end_kernel(&mut self, id: u64, t: Ns, worked: bool) {
        let Some(head) = self.streams.get(&id).and_then(|s| s.head.as_ref()) else {
            return;
        };
        let (
            TaskKind::Kernel(kernel),
            Phase::Working {
                ending, work_start, ..
            },
        ) = (&head.task.kind, head.phase)
        else {
            return;
        };
        let spec = kernel.spec.clone();
        let tag = head.task.tag;
        let mut ending = ending;
        if worked {
            if let Some(at) = spec.timing {
                self.kernel_write(spec.run_id, at.saturating_add(8), &t.to_le_bytes());
            }
            if ending == Ending::Clean {
                if let Some(at) = spec.header.filter(|_| !spec.header_bytes.is_empty()) {
                    // The header was checked at launch; an allocation freed since is a bad
                    // address.
                    if !self.kernel_write(spec.run_id, at, &spec.header_bytes) {
                        ending = Ending::Fault(spec.engine.exception_code());
                    }
                }
            }
            // A latched AICPU kernel returns a fatal status (device-truth §1).
            let fatal = spec.outcome == Outcome::Latch
                && spec.engine == Engine::Aicpu
                && self.semantics.latch_faults_stream
                && !self.semantics.legacy_event_faults;
            if fatal && ending == Ending::Clean {
                ending = Ending::Fatal(AclCode::RtAicpuException);
            }
        }
        let work_start = worked.then_some(work_start);
        self.note(|| Note::KernelEnded {
            tag,
            work_start,
            at: t,
            ending,
        });
        let result = match ending {
            Ending::Clean => Ok(()),
            Ending::Fault(code) | Ending::Fatal(code) => Err(code),
            Ending::Killed(code) => self.place_timeout_code(id, &spec, code, t),
        };
        if matches!(ending, Ending::Fault(_) | Ending::Killed(_))
            && self.semantics.device_fault_fails_calls
        {
            let code = match ending {
                Ending::Fault(code) | Ending::Killed(code) => code,
                Ending::Clean | Ending::Fatal(_) => AclCode::RtInternalError,
            };
            self.fault.get_or_insert((t, code));
        }
        self.settle_run(&spec, ending);
        if let Some(s) = self.streams.get_mut(&id) {
            s.kernels_out = s.kernels_out.saturating_sub(1);
        }
        self.complete(id, t, result);
    }

    /// Where an op-timeout kill leaves its code: this stream's result, and the partner's
    /// sticky code ([`Semantics::op_timeout_code_on`]).
    fn place_timeout_code(
        &mut self,
        id: u64,
        spec: &KernelSpec,
        code: AclCode,
        t: Ns,
    ) -> Result<(), AclCode> {
        let mode = self.semantics.op_timeout_code_on;
        let partner = (mode != OpTimeoutCodeOn::OwnStream)
            .then(|| {
                let run = self.runs.get(&spec.run?)?;
                run.kernels[spec.engine.partner().index()]
                    .map(|k| k.stream)
                    .filter(|s| *s != id && self.streams.contains_key(s))
            })
            .flatten();
        let Some(partner) = partner else {
            return Err(code);
        };
        if let Some(p) = self.streams.get_mut(&partner) {
            p.sticky.get_or_insert((t, code));
        }
        if mode == OpTimeoutCodeOn::PartnerStream {
            Ok(())
        } else {
            Err(code)
        }
    }

    /// Settles a kernel's ending on its run, publishing the run's record when it is the run's
    /// last kernel to end (before its task completes, so an event recorded after it sees the
    /// record); a kernel alone publishes by its own ending.
    fn settle_run(&mut self, spec: &KernelSpec, ending: Ending) {
        let aicpu = spec.engine == Engine::Aicpu;
        let Some(key) = spec.run else {
            if let Some(record) = spec.record {
                let contribution = Contribution::of(spec.outcome, &spec.header_bytes, ending, true);
                self.publish(record, spec.epoch, spec.run_id, &contribution);
            }
            return;
        };
        let Some(run) = self.runs.get_mut(&key) else {
            return;
        };
        run.ends[spec.engine.index()] = Some(Contribution::of(
            spec.outcome,
            &spec.header_bytes,
            ending,
            aicpu,
        ));
        let both_ended =
            run.kernels.iter().all(Option::is_some) && run.ends.iter().all(Option::is_some);
        if !both_ended {
            return;
        }
        let Some(run) = self.runs.remove(&key) else {
            return;
        };
        let [Some(core), Some(cpu)] = run.ends else {
            return;
        };
        if let (Contribution::Ok, Some(record)) = (core, run.record) {
            self.publish(record, key.epoch, run.id.or(spec.run_id), &cpu);
        }
    }

    fn publish(&mut self, record: u64, epoch: u64, run: Option<u64>, contribution: &Contribution) {
        let Some(bytes) = contribution.record(epoch) else {
            return;
        };
        if self.kernel_write(run, record, &bytes) {
            let error = matches!(contribution, Contribution::Error { .. });
            self.note(|| Note::Published { run, error });
        }
    }

    /// The task at the front of stream `id` completes at `t` with `result`: a failure is
    /// sticky (continue-on-failure: the next task runs; legacy: nothing more runs).
    fn complete(&mut self, id: u64, t: Ns, result: Result<(), AclCode>) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let Some(head) = s.head.take() else {
            return;
        };
        s.completed += 1;
        s.prev_end = t;
        if let Err(code) = result {
            s.sticky.get_or_insert((t, code));
        }
        if head.task.watched {
            self.results.insert((id, head.task.seq), result);
        }
        if !matches!(head.task.kind, TaskKind::Kernel(_)) {
            let (tag, start) = (head.task.tag, head.start);
            self.note(|| Note::TaskRan {
                tag,
                start,
                end: t,
                result,
            });
        }
    }
}

const fn working(end: Ns, start: Ns) -> Phase {
    Phase::Working {
        end: Some(end),
        work_start: start,
        ending: Ending::Clean,
    }
}

/// Whether a queued or running task will still use device memory in `span`.
fn task_touches(task: &Task, span: &core::ops::Range<u64>) -> bool {
    match &task.kind {
        TaskKind::Kernel(kernel) => {
            let s = &kernel.spec;
            [s.timing, s.header, s.record]
                .into_iter()
                .flatten()
                .any(|at| span.contains(&at))
        }
        TaskKind::Copy(copy) => [copy.copy.src, copy.copy.dst]
            .into_iter()
            .any(|place| matches!(place, Place::Device(at) if span.contains(&at))),
        TaskKind::Record { .. } | TaskKind::Wait(_) => false,
    }
}
