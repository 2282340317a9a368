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
//!
//! # Files
//!
//! This file holds the types and the device's switches and fault rules; the calls live by
//! what they act on in `streams`, `memory_calls` and `launches`, and the engine that moves
//! time forward in `engine` (split for length).

use std::collections::{BTreeMap, VecDeque};

use status_latch::AclCode;

use crate::config::{Ns, Semantics, Timing};
use crate::faults::{FaultRule, Faults, Injected, Site};
use crate::kernel::{Contribution, Ending, KernelSpec, RunKey};
use crate::memory::Memory;

mod engine;
mod launches;
mod memory_calls;
mod streams;

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
struct CopyTask {
    copy: CopySpec,
    /// A copy fault rule's code: the task fails on its stream and no byte lands.
    fail: Option<AclCode>,
}

#[derive(Clone, Debug)]
enum TaskKind {
    Kernel(Box<KernelSpec>),
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
    Working { end: Option<Ns>, work_start: Ns, ending: Ending },
}

#[derive(Clone, Debug)]
struct Head {
    task: Task,
    start: Ns,
    phase: Phase,
    /// The result a non-kernel task ends with.
    fail: Option<AclCode>,
}

#[derive(Clone, Debug, Default)]
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

    /// Its running task, then its queued ones.
    fn tasks(&self) -> impl Iterator<Item = &Task> {
        self.head.iter().map(|h| &h.task).chain(self.queue.iter())
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
        match self.streams.values().find_map(|s| s.sticky.filter(|(since, _)| *since <= now)) {
            Some((_, code)) => Err(code),
            None => Ok(()),
        }
    }

    fn stream(&self, id: u64) -> Result<&Stream, CallError> {
        self.streams.get(&id).ok_or(CallError::Dead(Dead::Stream(id)))
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
}
