//! The simulated device: host and device on one virtual clock, streams as FIFO queues,
//! events, device memory, sticky errors, and the device invariants.
//!
//! # Time
//!
//! `host_ns` is the host thread's clock, [`Device::now`]. Every call advances it by its
//! cost ([`Costs`]); a blocking wait advances it to the event's completion plus the host
//! wake-up, or to the timeout. The device runs in parallel: a task's start is
//! `max(enqueue + kernel start latency, previous task's end on its stream + task switch)`,
//! so run N+1's kernels enqueued while run N executes start right after it.
//!
//! # A run on the device
//!
//! The executor's launch order (SPEC L-5, device-truth §3) is, per run:
//!
//! ```text
//! AICore stream: [wait predecessor's boundary] -> AICore kernel -> record core_done
//! AICPU  stream: AICPU kernel -> wait core_done -> [readback copy] -> record boundary
//! ```
//!
//! The device follows the executor's launch context ([`Device::launch_context`]), never the
//! order of calls: the record made on the AICore kernel's stream while that kernel waits for
//! its AICPU partner (the run's `Kernels` stage, between the two launches) is that run's
//! `core_done`, enqueued behind the AICore kernel once the kernel's end is known; a record on
//! the AICPU stream after the AICPU launch is the run's boundary. A call from another thread
//! (lane-service's completion waiter) may land between the two launches and changes nothing.
//! A task behind `stream_wait_event(s, e)` starts only once the tasks `e` captured have
//! finished: the boundary behind `core_done`, the successor's AICore kernel behind the
//! predecessor's boundary.
//!
//! The AICore kernel spins until its AICPU scheduler hands it work (the handshake); the run
//! starts when both kernels have started, spends the per-run preamble, then its device time,
//! and both kernels end together. The kernels write the slot's handshake (at start), timing
//! buffer and status header (at end) through the arguments they were launched with, and the
//! AICPU scheduler publishes the run's result record ([`RunArgs::record`], stamped with
//! [`RunArgs::epoch`]) at its end, before the boundary can complete: `ok` for a clean run, an
//! error with the latched code (source: the status header, payload: the header's error tail)
//! for a latch, nothing for a device exception, an op-timeout kill or a `silent` run. The host
//! sees a write once its clock passes it. The device remembers every ok record it published
//! ([`SimDevice::take_published_ok`]), so a harness can check that no run is `Ok` without one.
//!
//! An AICore kernel whose AICPU partner is never enqueued (a partial launch) never ends: it
//! is orphaned when its launch ends (the context goes to `None`, or another launch's starts).
//! Both kernels on one stream is a deadlock: the simulator records it and fails loudly.
//!
//! # Sticky errors (device-truth §1)
//!
//! Completion is not the verdict. A run whose kernel faulted, was killed by the op timeout
//! or latched a fatal code still ends, so its events complete: an event wait returns 0 once
//! the tasks it captured ended, and a stream query reports no error. Streams run in
//! continue-on-failure mode: tasks behind a faulted task still run (a queued successor
//! executes), and the faulted stream keeps its code until it is destroyed or the device is
//! force-reset. Only [`Device::synchronize_stream`] returns it: it waits (in virtual time,
//! bounded by its timeout: 507046 if the stream's tasks do not end in time; a zero timeout is
//! refused with 107000) and returns the stream's sticky code.
//!
//! A hung AICore kernel ends at the device op timeout ([`SimDevice::with_op_timeout`], SPEC
//! L-6) with 507014 on the AICore stream; a hung AICPU scheduler with 507017 on the AICPU
//! stream (its never-released workers with 507014 on theirs); only a `stuck` run never ends.
//! A device exception ends the run's kernels at their normal end and faults its engine's
//! stream with the code (507015/507014: AICore, 507018/507017: AICPU, any other: both).
//!
//! Either also makes the device bad (the sim's model of the sticky fallout): every checked
//! call (launches, stream and event creation, records, copies, allocations) returns the code
//! until a force reset. An event wait and a stream query never do.
//!
//! A latch is an AICPU kernel that exits with a fatal status (a latched `SCOPE_DEADLOCK`, an
//! explicit orchestrator fatal): its events complete, it publishes its error record, and it
//! leaves 507018 sticky on the AICPU stream (device-truth §1), as acl-fake does by default.
//! The device stays good (later enqueues run), but any later synchronize of that stream
//! returns 507018 until the stream is destroyed or the device force-reset: a later run whose
//! record is ok is never synchronized and stays `Ok`; one that needs the device verdict (no
//! record, a failed record read) reads the stale 507018 and poisons.

use std::collections::BTreeMap;

use lane_core::status_latch::{
    self, AclCode, HeaderLayout, RECORD_BYTES, RecordSource, RecordWrite, encode_record,
};
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, DEFAULT_DEVICE_OP_TIMEOUT_NS, FinaliseFailure, RunId, SlotId, Timestamp};
use lane_driver::{
    Device, DevicePtr, EventHandle, HostPtr, LaunchContext, LaunchStage, PinnedCopies,
    PrepareError, RECORD_OFFSET, RunArgs, Runner,
};
use rand_core::RngCore;

use crate::costs::{Cost, Costs};
use crate::faults::{FaultRule, Faults, Injected, Latched, Site, rng_for, streams};
use crate::observer::Journal;
use crate::trace::{Ending, KernelRecord, Record, Side, Trace};

/// First stream handle (AICPU and AICore handles are drawn from one counter).
const FIRST_STREAM: u64 = 1;
/// First event handle.
const FIRST_EVENT: u64 = 1001;
/// First device address.
const FIRST_PTR: u64 = 0x1000_0000;
/// `aclrtMalloc` rounds up to 32 bytes and adds 32 bytes of padding (ascend-cl.md §2.5).
const MALLOC_ALIGN: u64 = 32;
/// First pinned host address (`aclrtMallocHost`), far from device addresses so a mix-up
/// between the two is a dead handle, never a silent hit.
const FIRST_HOST_PTR: u64 = 0x7000_0000_0000;

/// How long each run's device work takes: a base time, jittered per run from the seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunTimes {
    /// The base device time of a run, after its preamble.
    pub device_ns: u64,
    /// Uniform jitter around the base, in parts per million of it (0 = every run equal).
    pub jitter_ppm: u32,
}

impl RunTimes {
    /// The device time of `run`: a pure function of the seed and the run id.
    pub fn of(&self, seed: u64, run: RunId) -> u64 {
        let span = self.device_ns.saturating_mul(u64::from(self.jitter_ppm)) / 1_000_000;
        if span == 0 {
            return self.device_ns;
        }
        let draw = rng_for(seed ^ run.0.rotate_left(17), streams::JITTER).next_u64();
        let offset = draw % (2 * span + 1);
        (self.device_ns + offset).saturating_sub(span).max(1)
    }
}

/// The first thing that went wrong in the simulator itself (not a device failure the lane
/// handles): a device invariant broke, a deadlock, or a livelock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceFailure {
    /// A device invariant broke (see the crate doc's list).
    Invariant(String),
    /// Work that can never finish: both kernels of a run on one stream, or an unbounded
    /// wait on an event that never completes.
    Deadlock(String),
    /// The lane kept the device busy without making progress.
    Livelock(String),
}

impl core::fmt::Display for DeviceFailure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Invariant(what) => write!(f, "device invariant broken: {what}"),
            Self::Deadlock(what) => write!(f, "deadlock: {what}"),
            Self::Livelock(what) => write!(f, "livelock: {what}"),
        }
    }
}

/// Host time spent on behalf of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostUse {
    /// Time in calls (their costs).
    pub busy_ns: u64,
    /// Time blocked in waits for the device.
    pub blocked_ns: u64,
}

#[derive(Clone, Copy, Debug)]
struct Stream {
    /// When the last enqueued task ends; `None` = never.
    tail: Option<u64>,
    /// Ordinal of the last enqueued task, and its start, for the FIFO check.
    last_task: Option<(u64, Option<u64>)>,
    /// From when, and with which code, the stream is sticky-faulted.
    faulted: Option<(u64, AclCode)>,
}

#[derive(Clone, Copy, Debug)]
struct Capture {
    run: Option<RunId>,
    /// When the stream passes the event; `None` = never.
    complete_at: Option<u64>,
}

/// Which address space an allocation comes from.
#[derive(Clone, Copy, Debug)]
enum Memory {
    /// Device memory (`aclrtMalloc`).
    Device,
    /// Pinned host memory (`aclrtMallocHost`).
    Pinned,
}

#[derive(Clone, Debug)]
struct Allocation {
    bytes: Vec<u8>,
    /// The run whose kernels wrote it last (a host write clears it).
    kernel_writer: Option<RunId>,
}

#[derive(Clone, Debug)]
struct PendingWrite {
    at: u64,
    seq: u64,
    run: RunId,
    ptr: DevicePtr,
    bytes: Vec<u8>,
    /// A result record that says ok, with this epoch: remembered as published when it lands.
    ok_epoch: Option<u64>,
}

/// An async copy task on a stream (copies on the streams): it moves its bytes when it runs
/// in virtual time, not when it is enqueued.
#[derive(Clone, Copy, Debug)]
struct PendingCopy {
    /// When the task ends (its bytes land then).
    at: u64,
    seq: u64,
    /// The stream it runs on (a force destroy drops it).
    stream: StreamHandle,
    direction: CopyDirection,
    len: usize,
}

#[derive(Clone, Copy, Debug)]
enum CopyDirection {
    /// Pinned host memory to the device (the arm).
    ToDevice { src: HostPtr, dst: DevicePtr },
    /// The device to pinned host memory (the status read).
    ToHost { src: DevicePtr, dst: HostPtr },
}

/// One device write due by the host clock, in device-time order.
enum Due {
    Kernel(PendingWrite),
    Copy(PendingCopy),
}

/// What a run's AICPU scheduler publishes at its end.
#[derive(Clone, Copy, Debug)]
enum Publish {
    /// An ok record.
    Ok,
    /// An error record with the latched code (the header latches it too).
    Error(Latched),
    /// No record (a `silent` run): the region keeps whatever it held.
    Nothing,
}

/// The status header's error tail, the payload of a tensormap_and_ringbuffer record
/// (device-truth §2: bytes 784..848 of the 896-byte header).
const ERROR_TAIL: core::ops::Range<usize> = 784..848;

/// An AICore kernel enqueued and waiting for its AICPU partner's launch.
#[derive(Clone, Copy, Debug)]
struct PendingCore {
    args: RunArgs,
    stream: StreamHandle,
    enqueued: u64,
    start: Option<u64>,
    /// The run's `core_done` record, made while the kernel waits for its partner: the event
    /// and when it was recorded. Its task is enqueued behind the kernel once the kernel's end
    /// is known (at the AICPU launch).
    core_done: Option<(EventHandle, u64)>,
}

/// The simulated device: implements [`Device`] (and [`SimRunner`] does the runner's work on
/// it), so the one [`lane_driver::Driver`] loop runs the lane on it. It gives no completion
/// waiter itself: in a lane service, wrap it in a [`SharedSim`](crate::SharedSim), which
/// shares it with the service's waiter thread.
#[derive(Debug)]
pub struct SimDevice {
    costs: Costs,
    layout: HeaderLayout,
    seed: u64,
    run_times: RunTimes,
    faults: Faults,
    host_ns: u64,
    streams: BTreeMap<StreamHandle, Stream>,
    next_stream: u64,
    tasks_enqueued: u64,
    events: BTreeMap<EventHandle, Option<Capture>>,
    next_event: u64,
    memory: BTreeMap<DevicePtr, Allocation>,
    next_ptr: u64,
    pending_writes: Vec<PendingWrite>,
    /// Async copy tasks not yet run (copies on the streams).
    pending_copies: Vec<PendingCopy>,
    write_seq: u64,
    /// Pinned host memory (`aclrtMallocHost`), by base address.
    host_memory: BTreeMap<HostPtr, Vec<u8>>,
    next_host_ptr: u64,
    /// Where the executor is in a run's launch ([`Device::launch_context`]): a record in the
    /// arm is the slot's "armed" event, which belongs to no run yet; one after the AICore
    /// kernel is that run's.
    launch: Option<LaunchContext>,
    /// The device is bad from `.0` on with code `.1`, until a force reset.
    sticky: Option<(u64, AclCode)>,
    binary_loaded: bool,
    pending_core: Option<PendingCore>,
    /// Runs launched and not yet finalised or reset, with their slot buffers.
    live_runs: BTreeMap<RunId, RunArgs>,
    /// When each live run's kernels end (`None` = never), for the queued-launch count.
    run_ends: BTreeMap<RunId, Option<u64>>,
    /// The streams each live run's kernels were launched on (`[aicore, aicpu]`).
    run_streams: BTreeMap<RunId, [StreamHandle; 2]>,
    queued_launches: u64,
    /// Ok records that landed, by run, with their epoch; taken by the harness's check
    /// ([`Self::take_published_ok`]).
    published_ok: BTreeMap<RunId, u64>,
    resets: u64,
    calls: u64,
    call_budget: u64,
    /// The device op timeout: a hung kernel ends this long after it started.
    op_timeout_ns: u64,
    journal: Journal,
    failure: Option<DeviceFailure>,
}

impl SimDevice {
    /// A fresh device: no streams, no faults, the host clock at 0.
    pub fn new(costs: Costs, layout: HeaderLayout, seed: u64, run_times: RunTimes) -> Self {
        Self {
            costs,
            layout,
            seed,
            run_times,
            faults: Faults::new(seed),
            host_ns: 0,
            streams: BTreeMap::new(),
            next_stream: FIRST_STREAM,
            tasks_enqueued: 0,
            events: BTreeMap::new(),
            next_event: FIRST_EVENT,
            memory: BTreeMap::new(),
            next_ptr: FIRST_PTR,
            pending_writes: Vec::new(),
            pending_copies: Vec::new(),
            write_seq: 0,
            host_memory: BTreeMap::new(),
            next_host_ptr: FIRST_HOST_PTR,
            launch: None,
            sticky: None,
            binary_loaded: false,
            pending_core: None,
            live_runs: BTreeMap::new(),
            run_ends: BTreeMap::new(),
            run_streams: BTreeMap::new(),
            queued_launches: 0,
            published_ok: BTreeMap::new(),
            resets: 0,
            calls: 0,
            call_budget: u64::MAX,
            op_timeout_ns: DEFAULT_DEVICE_OP_TIMEOUT_NS,
            journal: Journal::new(false),
            failure: None,
        }
    }

    /// Records a trace of every call, lane step and device task (off by default).
    #[must_use]
    pub fn with_trace(mut self, on: bool) -> Self {
        self.journal = Journal::new(on);
        self
    }

    /// The device op timeout (`aclrtSetOpExecuteTimeOutV2`; default
    /// [`DEFAULT_DEVICE_OP_TIMEOUT_NS`]): a hung run's kernels end this long after they
    /// started, with 507014 (AICore) and 507017 (AICPU). Set it from
    /// `Profile::device_op_timeout_ns`, as backend-acl does at open.
    #[must_use]
    pub const fn with_op_timeout(mut self, ns: u64) -> Self {
        self.op_timeout_ns = ns;
        self
    }

    /// Fails loudly (a livelock) after this many backend calls.
    #[must_use]
    pub const fn with_call_budget(mut self, calls: u64) -> Self {
        self.call_budget = calls;
        self
    }

    /// Installs a fault rule after the existing ones.
    pub fn install(&mut self, rule: FaultRule) {
        self.faults.install(rule);
    }

    /// Removes every fault rule (the device's state, a hung kernel or a sticky fault,
    /// stays until the lane recovers it).
    pub fn heal(&mut self) {
        self.faults.heal();
    }

    /// The installed fault rules.
    pub fn fault_rules(&self) -> &[FaultRule] {
        self.faults.rules()
    }

    /// How many faults fired.
    pub const fn faults_injected(&self) -> u64 {
        self.faults.injected()
    }

    /// The first simulator failure (invariant, deadlock, livelock), if any.
    pub const fn failure(&self) -> Option<&DeviceFailure> {
        self.failure.as_ref()
    }

    /// The trace recorded so far.
    pub fn trace(&self) -> Trace {
        self.journal.trace()
    }

    /// The journal this device writes its calls and kernels into; give it to the driver's
    /// observer ([`SimObserver::new`](crate::SimObserver::new)) so lane steps land in the same
    /// trace.
    pub fn journal(&self) -> Journal {
        self.journal.clone()
    }

    /// Launches that found an earlier run's kernels still queued or running on the device:
    /// runs queued behind their predecessor (the point of depth two).
    pub const fn queued_launches(&self) -> u64 {
        self.queued_launches
    }

    /// Force resets that succeeded.
    pub const fn resets(&self) -> u64 {
        self.resets
    }

    /// The host clock, in ns.
    pub const fn host_ns(&self) -> u64 {
        self.host_ns
    }

    /// Moves the host clock to `at_ns` and returns where it was. The virtual host workers
    /// ([`crate::workers`]) run a runner call on a worker's own clock this way and then put
    /// the lane thread's clock back; the lane thread idles forward with it.
    pub const fn set_host_clock(&mut self, at_ns: u64) -> u64 {
        core::mem::replace(&mut self.host_ns, at_ns)
    }

    /// A host thread that slept on a condition variable (not in a device call) wakes: the
    /// wake-up latency (`host_wakeup`) is host time on the thread whose clock the device
    /// is on (the lane thread, or a virtual host worker's, [`crate::workers`]), billed to
    /// `run` and recorded as a `wake_up` call saying `why`.
    pub fn host_wakeup(&mut self, run: Option<RunId>, why: &'static str) {
        let start = self.host_ns;
        self.spend_ns(self.costs.get(Cost::HostWakeup), run);
        let end = self.host_ns;
        self.journal
            .push(|| call_record("wake_up", start..end, run, why.to_owned(), None));
    }

    /// `aclrtStreamQuery`: whether every task on the stream has finished. As on hardware it
    /// reports no error, not even a faulted stream's sticky code (device-truth §1: a query of a
    /// drained faulted stream returns 0); [`Device::synchronize_stream`] is the call that
    /// materializes it.
    pub fn query_stream(&mut self, stream: StreamHandle) -> Result<bool, AclCode> {
        self.call(
            "query_stream",
            Cost::EventQuery,
            Named::Run(None),
            |d, start| match d.streams.get(&stream) {
                None => Err(d.dead_handle("query_stream", "stream", stream.0)),
                Some(s) => Ok(s.tail.is_some_and(|t| t <= start)),
            },
            |_| format!("h{}", stream.0),
        )
    }

    /// Whether the run's kernels published an ok result record (stamped with the epoch the
    /// run was launched with) that landed in its slot's record region, and forgets it (each
    /// run's is taken once, when its outcome is checked). The harness checks every `Ok`
    /// verdict with it: no path may report `Ok` without a published ok record (L-8).
    pub fn take_published_ok(&mut self, run: RunId) -> bool {
        self.published_ok.remove(&run).is_some()
    }

    // ----- bookkeeping -----------------------------------------------------------------

    /// Starts a call: counts it and lets the host see every device write that has landed.
    /// Returns the call's start.
    fn enter(&mut self) -> u64 {
        self.calls += 1;
        if self.calls == self.call_budget {
            self.fail(DeviceFailure::Livelock(format!(
                "{} backend calls without the workload finishing; the lane is looping",
                self.calls
            )));
        }
        self.settle();
        self.host_ns
    }

    fn fail(&mut self, failure: DeviceFailure) {
        if self.failure.is_none() {
            let at = self.host_ns;
            self.journal.push(|| Record::Note {
                at_ns: at,
                text: failure.to_string(),
            });
            self.failure = Some(failure);
        }
    }

    fn violation(&mut self, what: String) {
        self.fail(DeviceFailure::Invariant(what));
    }

    fn dead_handle(&mut self, call: &str, what: &str, handle: u64) -> AclCode {
        self.violation(format!(
            "{call} on {what} {handle:#x}, which is not live (never created, destroyed, or dropped by a reset)"
        ));
        AclCode::RtInvalidHandle
    }

    /// The checks every allocation makes (a zero size is invalid; the malloc fault site
    /// applies to device and pinned memory alike) and its address: the next one of `memory`,
    /// aligned, with a guard gap so neighbouring allocations never touch.
    fn next_allocation(&mut self, size: usize, memory: Memory) -> Result<u64, AclCode> {
        if size == 0 {
            return Err(AclCode::RtParamInvalid);
        }
        if let Some(Injected::Fail(code)) = self.faults.decide(Site::Malloc, None) {
            return Err(code);
        }
        let next = match memory {
            Memory::Device => &mut self.next_ptr,
            Memory::Pinned => &mut self.next_host_ptr,
        };
        let ptr = *next;
        let size64 = u64::try_from(size).unwrap_or(u64::MAX);
        *next = ptr.saturating_add(size64.div_ceil(MALLOC_ALIGN) * MALLOC_ALIGN + MALLOC_ALIGN);
        Ok(ptr)
    }

    /// A call's cost: host time, billed to whatever run the driver's effect is for (the
    /// journal knows; the device does not).
    fn spend(&mut self, cost: Cost) {
        let ns = self.costs.get(cost);
        self.host_ns = self.host_ns.saturating_add(ns);
        self.journal.bill_effect_busy(ns);
    }

    /// Host time of a wait, billed to the run whose launch recorded the awaited event.
    fn spend_ns(&mut self, ns: u64, run: Option<RunId>) {
        self.host_ns = self.host_ns.saturating_add(ns);
        self.journal.bill(
            run,
            HostUse {
                busy_ns: ns,
                blocked_ns: 0,
            },
        );
    }

    /// Host time blocked in a wait, billed like [`Self::spend_ns`].
    fn block_ns(&mut self, ns: u64, run: Option<RunId>) {
        self.host_ns = self.host_ns.saturating_add(ns);
        self.journal.bill(
            run,
            HostUse {
                busy_ns: 0,
                blocked_ns: ns,
            },
        );
    }

    /// The device's sticky error, if the host clock has reached it.
    fn sticky_now(&self) -> Result<(), AclCode> {
        match self.sticky {
            Some((since, code)) if since <= self.host_ns => Err(code),
            _ => Ok(()),
        }
    }

    /// The shape every model call shares: [`Self::enter`] (the call counted, the host caught
    /// up), its host time (`host`: a fixed cost spent first, or what the body spends), `body`
    /// (given the call's start), then its one journal record: `name`, `detail` of the
    /// result and the error's text, named as `named` says. The detail and the text are made
    /// only if the journal keeps them. Every `Device`, `PinnedCopies` and runner method goes
    /// through it but the host's own access to pinned memory (`write_host`, `read_host`),
    /// which is no call: it counts nothing, costs nothing and leaves no record, so it only
    /// settles the device's writes.
    fn call<T, E: CallError>(
        &mut self,
        name: &'static str,
        host: impl Into<HostTime>,
        named: Named,
        body: impl FnOnce(&mut Self, u64) -> Result<T, E>,
        detail: impl FnOnce(&Result<T, E>) -> String,
    ) -> Result<T, E> {
        let start = self.enter();
        if let HostTime::Fixed(cost) = host.into() {
            self.spend(cost);
        }
        let result = body(self, start);
        let end = self.host_ns;
        let record = |run| {
            let error = result.as_ref().err().map(CallError::text);
            call_record(name, start..end, run, detail(&result), error)
        };
        match named {
            Named::Run(run) => self.journal.push(|| record(run)),
            Named::Effect => self.journal.push_for_effect(record),
        }
        result
    }

    /// `aclrtDestroyStream` (`force` false: queued work is a violation) or
    /// `aclrtDestroyStreamForce` (`force` true: queued work is dropped with the stream).
    fn destroy_stream_call(&mut self, stream: StreamHandle, force: bool) -> Result<(), AclCode> {
        let name = if force {
            "destroy_stream_force"
        } else {
            "destroy_stream"
        };
        self.call(
            name,
            Cost::StreamDestroy,
            Named::Run(None),
            |d, start| match d.streams.get(&stream).copied() {
                None => Err(d.dead_handle(name, "stream", stream.0)),
                Some(s) => match d.faults.decide(Site::StreamDestroy, None) {
                    Some(Injected::Fail(code)) => Err(code),
                    _ => {
                        let queued = s.tail.is_none_or(|t| t > start);
                        if queued && !force {
                            let when = s
                                .tail
                                .map_or_else(|| "never ends".to_owned(), |t| format!("ends at {t} ns"));
                            d.violation(format!(
                                "stream h{} destroyed at {start} ns with queued work (its last task {when})",
                                stream.0
                            ));
                        }
                        if queued && force {
                            // The stream's queued kernels never write their slot buffers.
                            let dropped: Vec<RunId> = d
                                .run_streams
                                .iter()
                                .filter(|(_, streams)| streams.contains(&stream))
                                .map(|(run, _)| *run)
                                .collect();
                            d.pending_writes.retain(|w| !dropped.contains(&w.run));
                            d.pending_copies.retain(|c| c.stream != stream);
                            d.journal.push(|| Record::Note {
                                at_ns: start,
                                text: format!(
                                    "stream h{} force-destroyed: its queued work dropped",
                                    stream.0
                                ),
                            });
                        }
                        d.streams.remove(&stream);
                        Ok(())
                    }
                },
            },
            |_| format!("h{}", stream.0),
        )
    }

    /// Applies every device write (kernel writes and copy tasks) the host clock has passed,
    /// in device-time order.
    fn settle(&mut self) {
        if self.pending_writes.is_empty() && self.pending_copies.is_empty() {
            return;
        }
        let now = self.host_ns;
        let mut due: Vec<(u64, u64, Due)> = Vec::new();
        self.pending_writes.retain(|w| {
            if w.at <= now {
                due.push((w.at, w.seq, Due::Kernel(w.clone())));
                false
            } else {
                true
            }
        });
        self.pending_copies.retain(|c| {
            if c.at <= now {
                due.push((c.at, c.seq, Due::Copy(*c)));
                false
            } else {
                true
            }
        });
        due.sort_by_key(|(at, seq, _)| (*at, *seq));
        for (_, _, due) in due {
            match due {
                Due::Kernel(write) => self.apply_kernel_write(write),
                Due::Copy(copy) => self.run_copy_task(copy),
            }
        }
    }

    fn apply_kernel_write(&mut self, write: PendingWrite) {
        if let Some(owner) = self.owner_of(write.ptr) {
            if owner != write.run {
                self.violation(format!(
                    "run {}'s kernels wrote {:#x}, a buffer of live run {} (L-13)",
                    write.run.0, write.ptr.0, owner.0
                ));
            }
        }
        match self.region_mut(write.ptr, write.bytes.len()) {
            Some((alloc, offset)) => {
                if let Some(dst) = alloc.bytes.get_mut(offset..offset + write.bytes.len()) {
                    dst.copy_from_slice(&write.bytes);
                }
                alloc.kernel_writer = Some(write.run);
                if let Some(epoch) = write.ok_epoch {
                    self.published_ok.insert(write.run, epoch);
                }
            }
            None => self.violation(format!(
                "run {}'s kernels wrote {} bytes at {:#x}, which is not inside an allocation",
                write.run.0,
                write.bytes.len(),
                write.ptr.0
            )),
        }
    }

    /// An async copy task runs: its bytes move now, in virtual time. A stream sticky-faulted
    /// by an earlier task still runs it (continue-on-failure, device-truth §1).
    fn run_copy_task(&mut self, copy: PendingCopy) {
        let len = copy.len;
        match copy.direction {
            CopyDirection::ToDevice { src, dst } => {
                let Some(bytes) = self.host_region(src, len).map(<[u8]>::to_vec) else {
                    self.violation(format!(
                        "an arm copy read {len} bytes at host {:#x}, which is not pinned memory",
                        src.0
                    ));
                    return;
                };
                match self.region_mut(dst, len) {
                    Some((alloc, offset)) => {
                        if let Some(out) = alloc.bytes.get_mut(offset..offset + len) {
                            out.copy_from_slice(&bytes);
                        }
                        alloc.kernel_writer = None;
                    }
                    None => self.violation(format!(
                        "an arm copy wrote {len} bytes at {:#x}, which is not inside an allocation",
                        dst.0
                    )),
                }
            }
            CopyDirection::ToHost { src, dst } => {
                if let Some(run) = self.header_read_of(src, len) {
                    self.check_timing_writer(run);
                }
                let Some(bytes) = self
                    .region_mut(src, len)
                    .and_then(|(alloc, offset)| alloc.bytes.get(offset..offset + len))
                    .map(<[u8]>::to_vec)
                else {
                    self.violation(format!(
                        "a readback copy read {len} bytes at {:#x}, which is not inside an allocation",
                        src.0
                    ));
                    return;
                };
                match self.host_region_mut(dst, len) {
                    Some(out) => out.copy_from_slice(&bytes),
                    None => self.violation(format!(
                        "a readback copy wrote {len} bytes at host {:#x}, which is not pinned memory",
                        dst.0
                    )),
                }
            }
        }
    }

    /// The live run whose status header a read of `len` bytes from `src` covers: that read
    /// is the run's status read.
    fn header_read_of(&self, src: DevicePtr, len: usize) -> Option<RunId> {
        let len = u64::try_from(len).unwrap_or(u64::MAX);
        let read = src.0..src.0.saturating_add(len);
        self.live_runs
            .values()
            .find(|a| read.contains(&a.status_header.0))
            .map(|a| a.run)
    }

    /// The pinned allocation holding `len` bytes from `ptr`, as that slice.
    fn host_region(&self, ptr: HostPtr, len: usize) -> Option<&[u8]> {
        let (base, bytes) = self.host_memory.range(..=ptr).next_back()?;
        let offset = usize::try_from(ptr.0 - base.0).ok()?;
        bytes.get(offset..offset.checked_add(len)?)
    }

    /// [`Self::host_region`], mutably.
    fn host_region_mut(&mut self, ptr: HostPtr, len: usize) -> Option<&mut [u8]> {
        let (base, bytes) = self.host_memory.range_mut(..=ptr).next_back()?;
        let offset = usize::try_from(ptr.0 - base.0).ok()?;
        bytes.get_mut(offset..offset.checked_add(len)?)
    }

    /// Enqueues an async copy task of `len` bytes on `stream`; the caller checked the
    /// handles. Its bytes move when it runs ([`Self::run_copy_task`]).
    fn enqueue_copy(&mut self, stream: StreamHandle, direction: CopyDirection, len: usize) {
        let start = self.task_start(stream, 0);
        let end = start.map(|s| s.saturating_add(self.costs.get(Cost::CopyTask)));
        self.enqueue(stream, start, end);
        let enqueued_ns = self.host_ns;
        let what = match direction {
            CopyDirection::ToDevice { .. } => "arm h2d",
            CopyDirection::ToHost { .. } => "readback d2h",
        };
        self.journal.push_for_effect(|run| Record::CopyTask {
            stream: stream.0,
            what,
            len,
            run: run.map(|r| r.0),
            enqueued_ns,
            span: start.zip(end),
        });
        // A copy behind a task that never ends never runs.
        if let (Some(_), Some(at)) = (start, end) {
            self.write_seq += 1;
            self.pending_copies.push(PendingCopy {
                at,
                seq: self.write_seq,
                stream,
                direction,
                len,
            });
        }
    }

    /// The checks every async copy's enqueue makes, in the synchronous copy's order: the
    /// stream, the device's sticky fault, the device buffer, the pinned buffer.
    fn check_copy(
        &mut self,
        call: &str,
        stream: StreamHandle,
        device: DevicePtr,
        host: HostPtr,
        len: usize,
    ) -> Result<(), AclCode> {
        if !self.streams.contains_key(&stream) {
            return Err(self.dead_handle(call, "stream", stream.0));
        }
        self.sticky_now()?;
        if self.locate(device).is_none() {
            return Err(self.dead_handle(call, "buffer", device.0));
        }
        if self.region_mut(device, len).is_none() || self.host_region(host, len).is_none() {
            return Err(AclCode::RtParamInvalid);
        }
        Ok(())
    }

    /// The live run whose slot buffers include `ptr`.
    fn owner_of(&self, ptr: DevicePtr) -> Option<RunId> {
        self.live_runs
            .values()
            .find(|a| [a.status_header, a.timing, a.handshake, a.record].contains(&ptr))
            .map(|a| a.run)
    }

    /// The allocation holding `ptr`, as `(base, offset of ptr)` (a pointer may address a
    /// field inside an allocation, as the driver's slot buffers do).
    fn locate(&self, ptr: DevicePtr) -> Option<(DevicePtr, usize)> {
        let (&base, alloc) = self.memory.range(..=ptr).next_back()?;
        let offset = usize::try_from(ptr.0 - base.0).ok()?;
        (offset < alloc.bytes.len()).then_some((base, offset))
    }

    /// The allocation holding all `len` bytes from `ptr`, and the offset of `ptr` in it.
    fn region_mut(&mut self, ptr: DevicePtr, len: usize) -> Option<(&mut Allocation, usize)> {
        let (base, offset) = self.locate(ptr)?;
        let alloc = self.memory.get_mut(&base)?;
        (offset.checked_add(len)? <= alloc.bytes.len()).then_some((alloc, offset))
    }

    fn write_later(&mut self, at: u64, run: RunId, ptr: DevicePtr, bytes: Vec<u8>) {
        self.write_seq += 1;
        self.pending_writes.push(PendingWrite {
            at,
            seq: self.write_seq,
            run,
            ptr,
            bytes,
            ok_epoch: None,
        });
    }

    /// The pending AICore kernel's launch ended without its AICPU partner: it spins forever
    /// (a partial launch orphans it).
    fn orphan_pending_core(&mut self) {
        let Some(pending) = self.pending_core.take() else {
            return;
        };
        if let Some(stream) = self.streams.get_mut(&pending.stream) {
            stream.tail = None;
        }
        self.run_ends.insert(pending.args.run, None);
        if let Some((event, recorded_ns)) = pending.core_done {
            // Behind a kernel that never ends: the event never completes.
            self.journal.push(|| Record::EventTask {
                stream: pending.stream.0,
                event: event.0,
                run: Some(pending.args.run.0),
                recorded_ns,
                complete_ns: None,
            });
        }
        self.journal.push(|| {
            Record::Kernel(KernelRecord {
                run: pending.args.run.0,
                side: Side::Aicore,
                stream: pending.stream.0,
                enqueued_ns: pending.enqueued,
                start_ns: pending.start,
                end_ns: None,
                ending: Ending::Orphaned,
                killed_ns: None,
            })
        });
    }

    /// Appends a task to a stream, checking FIFO order (a device invariant).
    fn enqueue(&mut self, stream: StreamHandle, start: Option<u64>, end: Option<u64>) {
        self.tasks_enqueued += 1;
        let seq = self.tasks_enqueued;
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        let order_ok = match (s.last_task, start) {
            (Some((prev_seq, _)), _) if prev_seq >= seq => false,
            (Some(_), Some(start)) => s.tail.is_some_and(|t| t <= start),
            _ => true,
        };
        s.last_task = Some((seq, start));
        s.tail = end;
        if !order_ok {
            self.violation(format!(
                "task {seq} on stream h{} would start before its predecessor ended",
                stream.0
            ));
        }
    }

    /// When a task enqueued now on `stream` starts: after the kernel start latency, and
    /// after the stream's previous task plus a task switch. `None` if that never ends.
    fn task_start(&self, stream: StreamHandle, latency: u64) -> Option<u64> {
        let tail = self.streams.get(&stream)?.tail?;
        let after_tail = tail.saturating_add(self.costs.get(Cost::TaskSwitch));
        Some(after_tail.max(self.host_ns.saturating_add(latency)))
    }

    /// Device invariants that can be checked at any step (the others are checked where
    /// they could break: enqueue, writes, launches, destroys).
    fn check_device_invariants(&mut self) {
        let mut seen: BTreeMap<DevicePtr, RunId> = BTreeMap::new();
        let mut clash = None;
        for args in self.live_runs.values() {
            for ptr in [args.status_header, args.timing, args.handshake, args.record] {
                if let Some(other) = seen.insert(ptr, args.run) {
                    clash = Some((ptr.0, other.0, args.run.0));
                }
            }
        }
        if let Some((ptr, a, b)) = clash {
            self.violation(format!(
                "live runs {a} and {b} share the slot buffer {ptr:#x} (L-13)"
            ));
        }
    }
}

/// Whom a call's journal record names ([`SimDevice::call`]).
#[derive(Clone, Copy, Debug)]
enum Named {
    /// This run, or none.
    Run(Option<RunId>),
    /// The run whose effect the driver is executing (a call the device cannot tie to a run,
    /// such as a copy).
    Effect,
}

/// The host time a call spends ([`SimDevice::call`]).
#[derive(Clone, Copy, Debug)]
enum HostTime {
    /// This cost, spent before the body and billed to the driver's effect.
    Fixed(Cost),
    /// What the body spends: a wait, whose host time (and the run billed) its outcome
    /// decides.
    ByOutcome,
}

impl From<Cost> for HostTime {
    fn from(cost: Cost) -> Self {
        Self::Fixed(cost)
    }
}

/// A call's error, as its journal record writes it ([`SimDevice::call`]): the runner's
/// calls fail with more than an ACL code.
trait CallError {
    /// The record's error text.
    fn text(&self) -> String;
}

impl CallError for AclCode {
    fn text(&self) -> String {
        format!("{} {}", self.raw(), self.name())
    }
}

impl CallError for PrepareError {
    fn text(&self) -> String {
        match self {
            Self::Incompatible => "incompatible".to_owned(),
            Self::Failed(code) => code.text(),
        }
    }
}

impl CallError for FinaliseFailure {
    fn text(&self) -> String {
        match self {
            Self::Validation => "validation".to_owned(),
            Self::Acl(code) => code.text(),
        }
    }
}

impl Device for SimDevice {
    fn now(&mut self) -> Timestamp {
        Timestamp(self.host_ns)
    }

    fn set_device(&mut self) -> Result<(), AclCode> {
        self.call(
            "set_device",
            Cost::SetDevice,
            Named::Run(None),
            |d, _| {
                // The `probe` fault site: the recovery probe's bind, and a host worker's (whose job
                // then goes back to the lane thread).
                match d.faults.decide(Site::Probe, None) {
                    Some(Injected::Fail(code)) => Err(code),
                    _ => Ok(()),
                }
            },
            |_| String::new(),
        )
    }

    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.call(
            "synchronize_device",
            Cost::SynchronizeDevice,
            Named::Run(None),
            |d, _| {
                let drained_at = d
                    .streams
                    .values()
                    .map(|s| s.tail)
                    .try_fold(0_u64, |acc, t| t.map(|t| acc.max(t)));
                let timeout_ns = u64::try_from(timeout_ms)
                    .unwrap_or(0)
                    .saturating_mul(1_000_000);
                match drained_at {
                    Some(t) if t.saturating_sub(d.host_ns) <= timeout_ns => {
                        let wait = t.saturating_sub(d.host_ns);
                        if wait > 0 {
                            d.block_ns(wait, None);
                            d.spend(Cost::HostWakeup);
                        }
                        d.sticky_now()
                    }
                    _ => {
                        d.block_ns(timeout_ns, None);
                        Err(AclCode::RtStreamSyncTimeout)
                    }
                }
            },
            |_| format!("timeout {timeout_ms} ms"),
        )
    }

    fn reset_device_force(&mut self) -> Result<(), AclCode> {
        self.call(
            "reset_device_force",
            Cost::ResetDevice,
            Named::Run(None),
            |d, _| {
                let result = match d.faults.decide(Site::Reset, None) {
                    Some(Injected::Fail(code)) => Err(code),
                    _ => Ok(()),
                };
                if result.is_ok() {
                    let (streams, events, buffers) =
                        (d.streams.len(), d.events.len(), d.memory.len());
                    d.streams.clear();
                    d.events.clear();
                    d.memory.clear();
                    d.pending_writes.clear();
                    d.pending_copies.clear();
                    // Pinned memory belongs to the context a force reset tears down.
                    d.host_memory.clear();
                    d.sticky = None;
                    d.binary_loaded = false;
                    d.live_runs.clear();
                    d.run_ends.clear();
                    d.run_streams.clear();
                    d.resets += 1;
                    let at = d.host_ns;
                    d.journal.kill_open_kernels(at);
                    d.journal.push(|| Record::Note {
                        at_ns: at,
                        text: format!(
                            "device reset: {streams} streams, {events} events and {buffers} buffers dropped; running kernels killed"
                        ),
                    });
                }
                result
            },
            |_| String::new(),
        )
    }

    fn create_stream(&mut self) -> Result<StreamHandle, AclCode> {
        self.call(
            "create_stream",
            Cost::StreamCreate,
            Named::Run(None),
            |d, _| {
                d.sticky_now()
                    .and_then(|()| match d.faults.decide(Site::StreamCreate, None) {
                        Some(Injected::Fail(code)) => Err(code),
                        _ => {
                            let handle = d.next_stream;
                            d.next_stream += 1;
                            d.streams.insert(
                                StreamHandle(handle),
                                Stream {
                                    tail: Some(d.host_ns),
                                    last_task: None,
                                    faulted: None,
                                },
                            );
                            Ok(StreamHandle(handle))
                        }
                    })
            },
            |result| result.map(|h| format!("-> h{}", h.0)).unwrap_or_default(),
        )
    }

    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.destroy_stream_call(stream, false)
    }

    fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.destroy_stream_call(stream, true)
    }

    fn create_event(&mut self) -> Result<EventHandle, AclCode> {
        self.call(
            "create_event",
            Cost::EventCreate,
            Named::Run(None),
            |d, _| {
                d.sticky_now().map(|()| {
                    let handle = d.next_event;
                    d.next_event += 1;
                    d.events.insert(EventHandle(handle), None);
                    EventHandle(handle)
                })
            },
            |result| result.map(|h| format!("-> e{}", h.0)).unwrap_or_default(),
        )
    }

    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode> {
        // The "armed" record belongs to the arm, before its run's kernels: no run, and no
        // record fault (those name the run's fence records, as on the synchronous path).
        let armed = self.launch.is_some_and(|c| c.stage == LaunchStage::Arm);
        let run = self
            .launch
            .filter(|c| c.stage == LaunchStage::Kernels)
            .map(|c| c.run);
        self.call(
            "record_event",
            Cost::EventRecord,
            Named::Run(run),
            |d, start| {
                if !d.events.contains_key(&event) {
                    return Err(d.dead_handle("record_event", "event", event.0));
                }
                if !d.streams.contains_key(&stream) {
                    return Err(d.dead_handle("record_event", "stream", stream.0));
                }
                d.sticky_now()?;
                if !armed {
                    if let Some(Injected::Fail(code)) = d.faults.decide(Site::EventRecord, run) {
                        return Err(code);
                    }
                }
                // A record on the stream of an AICore kernel waiting for its partner (only
                // ever in its launch: the launch's end orphans it) is that run's `core_done`
                // (L-5). Its task goes behind the kernel, whose end the AICPU launch decides.
                if let Some(pending) = d.pending_core.as_mut().filter(|p| p.stream == stream) {
                    pending.core_done = Some((event, start));
                    d.events.insert(
                        event,
                        Some(Capture {
                            run,
                            complete_at: None,
                        }),
                    );
                    return Ok(());
                }
                let task_start = d.task_start(stream, 0);
                let complete_at =
                    task_start.map(|s| s.saturating_add(d.costs.get(Cost::EventTask)));
                d.enqueue(stream, task_start, complete_at);
                d.events.insert(event, Some(Capture { run, complete_at }));
                d.journal.push(|| Record::EventTask {
                    stream: stream.0,
                    event: event.0,
                    run: run.map(|r| r.0),
                    recorded_ns: start,
                    complete_ns: complete_at,
                });
                Ok(())
            },
            |_| format!("e{} on h{}", event.0, stream.0),
        )
    }

    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        // The wait's host time is billed to the run whose launch recorded the event.
        let capture = self.events.get(&event).copied();
        let run = capture.flatten().and_then(|c| c.run);
        self.call(
            "synchronize_event",
            HostTime::ByOutcome,
            Named::Run(run),
            |d, _| match capture {
                None => {
                    d.spend_ns(d.costs.get(Cost::EventQuery), run);
                    Err(d.dead_handle("synchronize_event", "event", event.0))
                }
                Some(_) if timeout_ms == 0 || timeout_ms < -1 => {
                    d.spend_ns(d.costs.get(Cost::EventQuery), run);
                    Err(AclCode::RtParamInvalid)
                }
                Some(capture) => {
                    if let Some(Injected::Fail(code)) = d.faults.decide(Site::EventWait, run) {
                        d.spend_ns(d.costs.get(Cost::EventQuery), run);
                        Err(code)
                    } else {
                        d.wait_for_capture(event, capture, timeout_ms, run)
                    }
                }
            },
            |_| format!("e{} timeout {timeout_ms} ms", event.0),
        )
    }

    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.call(
            "synchronize_stream",
            HostTime::ByOutcome,
            Named::Effect,
            |d, _| match d.streams.get(&stream).copied() {
                None => {
                    d.spend(Cost::EventQuery);
                    Err(d.dead_handle("synchronize_stream", "stream", stream.0))
                }
                // A zero timeout is refused (device-truth §1), as is any negative but -1
                // (forever).
                Some(_) if timeout_ms == 0 || timeout_ms < -1 => {
                    d.spend(Cost::EventQuery);
                    Err(AclCode::RtParamInvalid)
                }
                Some(st) => {
                    d.spend(Cost::SynchronizeDevice);
                    let now = d.host_ns;
                    let limit = u64::try_from(timeout_ms)
                        .ok()
                        .map(|ms| ms.saturating_mul(1_000_000));
                    match (st.tail, limit) {
                        (Some(t), limit) if limit.is_none_or(|l| t.saturating_sub(now) <= l) => {
                            if t > now {
                                d.block_ns(t - now, None);
                                d.spend(Cost::HostWakeup);
                            }
                            // The stream's sticky code, once its tasks have ended.
                            match st.faulted {
                                Some((since, code)) if since <= d.host_ns => Err(code),
                                _ => Ok(()),
                            }
                        }
                        (_, Some(limit)) => {
                            d.block_ns(limit, None);
                            Err(AclCode::RtStreamSyncTimeout)
                        }
                        (_, None) => {
                            d.fail(DeviceFailure::Deadlock(format!(
                                "the host synchronizes stream h{} without a timeout and its tasks never end",
                                stream.0
                            )));
                            Err(AclCode::RtStreamSyncTimeout)
                        }
                    }
                }
            },
            |_| format!("h{} timeout {timeout_ms} ms", stream.0),
        )
    }

    fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode> {
        self.call(
            "destroy_event",
            Cost::EventDestroy,
            Named::Run(None),
            |d, _| {
                if d.events.remove(&event).is_some() {
                    Ok(())
                } else {
                    Err(d.dead_handle("destroy_event", "event", event.0))
                }
            },
            |_| format!("e{}", event.0),
        )
    }

    fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode> {
        self.call(
            "malloc",
            Cost::Malloc,
            Named::Run(None),
            |d, _| {
                d.sticky_now().and_then(|()| {
                    let ptr = d.next_allocation(size, Memory::Device)?;
                    d.memory.insert(
                        DevicePtr(ptr),
                        Allocation {
                            bytes: vec![0; size],
                            kernel_writer: None,
                        },
                    );
                    Ok(DevicePtr(ptr))
                })
            },
            |result| match &result {
                Ok(p) => format!("{size} B -> {:#x}", p.0),
                Err(_) => format!("{size} B"),
            },
        )
    }

    fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode> {
        self.call(
            "free",
            Cost::Free,
            Named::Run(None),
            |d, _| {
                if let Some(alloc) = d.memory.remove(&ptr) {
                    let end = ptr
                        .0
                        .saturating_add(u64::try_from(alloc.bytes.len()).unwrap_or(u64::MAX));
                    let copied = d.pending_copies.iter().any(|c| match c.direction {
                        CopyDirection::ToDevice { dst: p, .. }
                        | CopyDirection::ToHost { src: p, .. } => (ptr.0..end).contains(&p.0),
                    });
                    if copied
                        || d.pending_writes
                            .iter()
                            .any(|w| (ptr.0..end).contains(&w.ptr.0))
                    {
                        d.violation(format!(
                            "{:#x} freed while a run's kernels will still write it",
                            ptr.0
                        ));
                    }
                    Ok(())
                } else {
                    Err(d.dead_handle("free", "buffer", ptr.0))
                }
            },
            |_| format!("{:#x}", ptr.0),
        )
    }

    fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode> {
        self.call(
            "memcpy_h2d",
            Cost::WriteH2d,
            Named::Effect,
            |d, _| {
                // The executor zeroes a slot's record region once, when it makes the slot: that copy
                // is not an arm (the arm's fault site counts arms).
                let record_zeroing = src.len() == RECORD_BYTES
                    && d.locate(dst)
                        .is_some_and(|(_, offset)| offset == RECORD_OFFSET);
                d.sticky_now().and_then(|()| {
                    if !record_zeroing {
                        if let Some(Injected::Fail(code)) = d.faults.decide(Site::Arm, None) {
                            return Err(code);
                        }
                    }
                    if d.locate(dst).is_none() {
                        return Err(d.dead_handle("memcpy_to_device", "buffer", dst.0));
                    }
                    let (alloc, offset) = d
                        .region_mut(dst, src.len())
                        .ok_or(AclCode::RtParamInvalid)?;
                    if let Some(out) = alloc.bytes.get_mut(offset..offset + src.len()) {
                        out.copy_from_slice(src);
                    }
                    alloc.kernel_writer = None;
                    Ok(())
                })
            },
            |_| format!("{} B -> {:#x}", src.len(), dst.0),
        )
    }

    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        let len = dst.len();
        self.call(
            "memcpy_d2h",
            Cost::ReadD2h,
            Named::Effect,
            |d, _| {
                // A read covering a live run's status header is that run's status read.
                let header_of = d.header_read_of(src, len);
                if let Some(run) = header_of {
                    d.check_timing_writer(run);
                }
                // A read of a live run's record region is the waiter's record read (L-8).
                let record_of = d
                    .live_runs
                    .values()
                    .find(|a| a.record == src)
                    .map(|a| a.run);
                d.sticky_now().and_then(|()| {
                    if let Some(run) = header_of {
                        if let Some(Injected::Fail(code)) =
                            d.faults.decide(Site::StatusRead, Some(run))
                        {
                            return Err(code);
                        }
                    }
                    if let Some(run) = record_of {
                        if let Some(Injected::Fail(code)) =
                            d.faults.decide(Site::RecordRead, Some(run))
                        {
                            return Err(code);
                        }
                    }
                    if d.locate(src).is_none() {
                        return Err(d.dead_handle("memcpy_from_device", "buffer", src.0));
                    }
                    let (alloc, offset) = d
                        .region_mut(src, dst.len())
                        .ok_or(AclCode::RtParamInvalid)?;
                    if let Some(bytes) = alloc.bytes.get(offset..offset + dst.len()) {
                        dst.copy_from_slice(bytes);
                    }
                    Ok(())
                })
            },
            |_| format!("{len} B <- {:#x}", src.0),
        )
    }

    fn stream_wait_event(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode> {
        self.call(
            "stream_wait_event",
            Cost::StreamWait,
            Named::Effect,
            |d, start| match d.events.get(&event).copied() {
                None => Err(d.dead_handle("stream_wait_event", "event", event.0)),
                Some(capture) => match d.streams.get(&stream).copied() {
                    None => Err(d.dead_handle("stream_wait_event", "stream", stream.0)),
                    Some(st) => d.sticky_now().map(|()| {
                        // Later tasks start after the capture completes (never, if it never
                        // does); a never-recorded event is no wait at all.
                        let after = capture.map_or(Some(start), |c| c.complete_at);
                        let tail = st.tail.zip(after).map(|(t, a)| t.max(a));
                        if let Some(s) = d.streams.get_mut(&stream) {
                            s.tail = tail;
                        }
                    }),
                },
            },
            |_| format!("h{} waits e{}", stream.0, event.0),
        )
    }

    fn launch_context(&mut self, context: Option<LaunchContext>) {
        // Only the pending kernel's own `Kernels` stage continues its launch: any other
        // context (`None`, or another launch's arm) means the launch ended without the
        // AICPU partner, so the kernel is orphaned now, whatever other threads call.
        let continues = |p: &PendingCore| {
            context.is_some_and(|c| c.run == p.args.run && c.stage == LaunchStage::Kernels)
        };
        if self.pending_core.is_some_and(|p| !continues(&p)) {
            self.orphan_pending_core();
        }
        self.launch = context;
    }

    fn pinned_copies(&mut self) -> Option<&mut dyn PinnedCopies> {
        Some(self)
    }
}

impl PinnedCopies for SimDevice {
    fn malloc_host(&mut self, size: usize) -> Result<HostPtr, AclCode> {
        // Pinned memory is allocated like device memory, once per slot.
        self.call(
            "malloc_host",
            Cost::Malloc,
            Named::Run(None),
            |d, _| {
                d.sticky_now().and_then(|()| {
                    // The slot's resources are made together: a malloc fault fails either allocation.
                    let ptr = d.next_allocation(size, Memory::Pinned)?;
                    d.host_memory.insert(HostPtr(ptr), vec![0; size]);
                    Ok(HostPtr(ptr))
                })
            },
            |result| match &result {
                Ok(p) => format!("{size} B -> host {:#x}", p.0),
                Err(_) => format!("{size} B"),
            },
        )
    }

    fn free_host(&mut self, ptr: HostPtr) -> Result<(), AclCode> {
        self.call(
            "free_host",
            Cost::Free,
            Named::Run(None),
            |d, _| {
                if let Some(bytes) = d.host_memory.remove(&ptr) {
                    let end = ptr
                        .0
                        .saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
                    if d.pending_copies.iter().any(|c| match c.direction {
                        CopyDirection::ToDevice { src: p, .. }
                        | CopyDirection::ToHost { dst: p, .. } => (ptr.0..end).contains(&p.0),
                    }) {
                        d.violation(format!(
                            "host {:#x} freed while a copy on a stream will still use it",
                            ptr.0
                        ));
                    }
                    Ok(())
                } else {
                    Err(d.dead_handle("free_host", "pinned buffer", ptr.0))
                }
            },
            |_| format!("host {:#x}", ptr.0),
        )
    }

    fn memcpy_to_device_async(
        &mut self,
        dst: DevicePtr,
        src: HostPtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.call(
            "memcpy_h2d_async",
            Cost::CopyEnqueue,
            Named::Effect,
            |d, _| {
                d.check_copy("memcpy_h2d_async", stream, dst, src, len)
                    .and_then(|()| {
                        // The arm's fault site, as for the synchronous arm.
                        if let Some(Injected::Fail(code)) = d.faults.decide(Site::Arm, None) {
                            return Err(code);
                        }
                        d.enqueue_copy(stream, CopyDirection::ToDevice { src, dst }, len);
                        Ok(())
                    })
            },
            |_| format!("{len} B host {:#x} -> {:#x} on h{}", src.0, dst.0, stream.0),
        )
    }

    fn memcpy_from_device_async(
        &mut self,
        dst: HostPtr,
        src: DevicePtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.call(
            "memcpy_d2h_async",
            Cost::CopyEnqueue,
            Named::Effect,
            |d, _| {
                // A read covering a live run's status header is that run's status read.
                let header_of = d.header_read_of(src, len);
                d.check_copy("memcpy_d2h_async", stream, src, dst, len)
                    .and_then(|()| {
                        // The status read's fault site, as for the synchronous read.
                        if let Some(run) = header_of {
                            if let Some(Injected::Fail(code)) =
                                d.faults.decide(Site::StatusRead, Some(run))
                            {
                                return Err(code);
                            }
                        }
                        d.enqueue_copy(stream, CopyDirection::ToHost { src, dst }, len);
                        Ok(())
                    })
            },
            |_| format!("{len} B {:#x} -> host {:#x} on h{}", src.0, dst.0, stream.0),
        )
    }

    fn write_host(&mut self, dst: HostPtr, src: &[u8]) -> Result<(), AclCode> {
        // Plain host memory: no call, no cost; settle first so the order with copy tasks holds.
        self.settle();
        match self.host_region_mut(dst, src.len()) {
            Some(out) => {
                out.copy_from_slice(src);
                Ok(())
            }
            None => Err(AclCode::RtParamInvalid),
        }
    }

    fn read_host(&mut self, dst: &mut [u8], src: HostPtr) -> Result<(), AclCode> {
        // The host sees a copy task's bytes once its clock has passed the task's end.
        self.settle();
        match self.host_region(src, dst.len()) {
            Some(bytes) => {
                dst.copy_from_slice(bytes);
                Ok(())
            }
            None => Err(AclCode::RtParamInvalid),
        }
    }
}

/// The simulation's [`Runner`]: host preparation and finalisation cost host time, and the
/// two kernel launches enqueue the run's kernels, all through the [`SimDevice`] it is given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimRunner;

impl Runner<SimDevice> for SimRunner {
    fn prepare_run(
        &mut self,
        device: &mut SimDevice,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError> {
        device.run_prepare_run(run, slot, diagnostics)
    }

    fn launch_aicore(
        &mut self,
        device: &mut SimDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), AclCode> {
        device.run_launch_aicore(stream, args)
    }

    fn launch_aicpu(
        &mut self,
        device: &mut SimDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), AclCode> {
        device.run_launch_aicpu(stream, args)
    }

    fn finalise_run(
        &mut self,
        device: &mut SimDevice,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        device.run_finalise_run(run, slot, copy_back)
    }

    fn upload_code(&mut self, device: &mut SimDevice, code: CodeRef) -> Result<(), AclCode> {
        device.run_upload_code(code)
    }
}

/// The runner's work on the device model ([`SimRunner`] delegates here).
impl SimDevice {
    fn run_launch_aicore(&mut self, stream: StreamHandle, args: &RunArgs) -> Result<(), AclCode> {
        self.call(
            "launch_aicore",
            Cost::KernelLaunch,
            Named::Run(Some(args.run)),
            |d, _| {
                if let Some(waiting) = d.pending_core.map(|p| p.args.run) {
                    // Only a launch's end leaves a kernel without its partner; a second
                    // AICore kernel within one launch breaks L-5's order.
                    d.violation(format!(
                        "run {}'s AICore kernel was launched while run {}'s still waited for its AICPU partner (L-5)",
                        args.run.0, waiting.0
                    ));
                    d.orphan_pending_core();
                }
                if !d.binary_loaded {
                    d.spend(Cost::FirstAicoreLaunch);
                }
                let args = *args;
                if d.streams.contains_key(&stream) {
                    d.sticky_now().and_then(|()| {
                        if let Some(Injected::Fail(code)) =
                            d.faults.decide(Site::AicoreLaunch, Some(args.run))
                        {
                            return Err(code);
                        }
                        d.binary_loaded = true;
                        let now = d.host_ns;
                        if d.run_ends.values().any(|end| end.is_none_or(|e| e > now)) {
                            d.queued_launches += 1;
                        }
                        d.live_runs.insert(args.run, args);
                        d.journal.note_epoch(args.epoch, args.run);
                        d.check_device_invariants();
                        let start_ns = d.task_start(stream, d.costs.get(Cost::KernelStartLatency));
                        // The AICore kernel's end is known once its scheduler is enqueued.
                        d.enqueue(stream, start_ns, None);
                        d.pending_core = Some(PendingCore {
                            args,
                            stream,
                            enqueued: now,
                            start: start_ns,
                            core_done: None,
                        });
                        Ok(())
                    })
                } else {
                    Err(d.dead_handle("launch_aicore", "stream", stream.0))
                }
            },
            |_| format!("run {} on h{}", args.run.0, stream.0),
        )
    }

    fn run_launch_aicpu(&mut self, stream: StreamHandle, args: &RunArgs) -> Result<(), AclCode> {
        let args = *args;
        self.call(
            "launch_aicpu",
            Cost::KernelLaunch,
            Named::Run(Some(args.run)),
            |d, _| {
                if !d.streams.contains_key(&stream) {
                    return Err(d.dead_handle("launch_aicpu", "stream", stream.0));
                }
                d.sticky_now()?;
                if let Some(Injected::Fail(code)) =
                    d.faults.decide(Site::AicpuLaunch, Some(args.run))
                {
                    // The AICore kernel stays enqueued, spinning: orphaned when its launch
                    // ends ([`Device::launch_context`]).
                    return Err(code);
                }
                d.start_run(stream, args);
                Ok(())
            },
            |_| format!("run {} on h{}", args.run.0, stream.0),
        )
    }

    fn run_prepare_run(
        &mut self,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError> {
        self.call(
            "prepare_run",
            Cost::Prepare,
            Named::Run(Some(run)),
            |d, _| {
                let others_live = d.live_runs.keys().any(|&r| r != run);
                match d.faults.decide(Site::Prepare, Some(run)) {
                    Some(Injected::Fail(code)) => Err(PrepareError::Failed(code)),
                    // Only an overlapping prepare can be incompatible; alone, it always fits.
                    Some(Injected::Incompatible) if others_live => Err(PrepareError::Incompatible),
                    // The args upload is a device copy: a bad device fails it.
                    _ => d.sticky_now().map_err(PrepareError::Failed),
                }
            },
            |_| {
                let diagnostics = if diagnostics { " diagnostics" } else { "" };
                format!("run {} slot {}{diagnostics}", run.0, slot.0)
            },
        )
    }

    fn run_finalise_run(
        &mut self,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        self.call(
            "finalise_run",
            Cost::Finalise,
            Named::Run(Some(run)),
            |d, _| {
                let result = if copy_back {
                    d.sticky_now().map_err(FinaliseFailure::Acl).and_then(|()| {
                        match d.faults.decide(Site::Finalise, Some(run)) {
                            Some(Injected::Fail(code)) => Err(FinaliseFailure::Acl(code)),
                            Some(Injected::Validation) => Err(FinaliseFailure::Validation),
                            _ => Ok(()),
                        }
                    })
                } else {
                    Ok(())
                };
                // Finalisation releases the run's slot buffers for the next lease.
                d.live_runs.remove(&run);
                d.run_ends.remove(&run);
                d.run_streams.remove(&run);
                result
            },
            |_| {
                let copy_back = if copy_back { " copy-back" } else { "" };
                format!("run {} slot {}{copy_back}", run.0, slot.0)
            },
        )
    }

    fn run_upload_code(&mut self, code: CodeRef) -> Result<(), AclCode> {
        self.call(
            "upload_code",
            Cost::Upload,
            Named::Run(None),
            |d, _| {
                d.sticky_now().and_then(|()| {
                    match d.faults.decide(Site::Upload, None) {
                        Some(Injected::Fail(code)) => Err(code),
                        _ => {
                            // New code: the next AICore launch loads its binary again.
                            d.binary_loaded = false;
                            Ok(())
                        }
                    }
                })
            },
            |_| format!("code {}", code.0),
        )
    }
}

impl SimDevice {
    /// Both kernels of `args.run` are enqueued (AICore pending, AICPU on `aicpu`): decide
    /// the run's fate, compute its device times and schedule its writes.
    fn start_run(&mut self, aicpu: StreamHandle, args: RunArgs) {
        let run = args.run;
        let now = self.host_ns;
        let Some(core) = self.pending_core.take().filter(|p| p.args.run == run) else {
            self.violation(format!(
                "run {}'s AICPU kernel was launched without its AICore kernel waiting for it in its launch (L-5)",
                run.0
            ));
            return;
        };
        if core.stream == aicpu {
            self.fail(DeviceFailure::Deadlock(format!(
                "run {} has both kernels on stream h{}: the AICPU scheduler queues behind AICore \
                 workers that wait for it forever (the pair must be two streams)",
                run.0, aicpu.0
            )));
            self.enqueue(aicpu, None, None);
            self.run_ends.insert(run, None);
            return;
        }
        let latency = self.costs.get(Cost::KernelStartLatency);
        let aicpu_start = self.task_start(aicpu, latency);
        let both_start = core.start.zip(aicpu_start).map(|(c, p)| c.max(p));
        let injected = self.faults.decide(Site::Run, Some(run));
        let device_ns = self.run_times.of(self.seed, run);
        let preamble = self.costs.get(Cost::RunPreamble);
        // Each kernel's ending, `[aicore, aicpu]`. Continue-on-failure (device-truth §1): a
        // run behind a faulted task still runs, whatever its stream's sticky code.
        let (end, endings) = match both_start {
            None => (None, [Ending::Blocked; 2]),
            Some(s) => {
                let normal_end = s.saturating_add(preamble).saturating_add(device_ns);
                let killed_at = s.saturating_add(self.op_timeout_ns);
                match injected {
                    Some(Injected::Hang) => {
                        // The op timeout (SPEC L-6) kills the hung AICore kernel before the
                        // host's deadline; its scheduler, the workers gone, exits unpublished.
                        self.fault_streams(killed_at, &[(core.stream, AclCode::RtAicoreTimeout)]);
                        (
                            Some(killed_at),
                            [Ending::OpTimeout(AclCode::RtAicoreTimeout), Ending::Silent],
                        )
                    }
                    Some(Injected::HangAicpu) => {
                        self.fault_streams(
                            killed_at,
                            &[
                                (aicpu, AclCode::RtAicpuTimeout),
                                (core.stream, AclCode::RtAicoreTimeout),
                            ],
                        );
                        (
                            Some(killed_at),
                            [
                                Ending::OpTimeout(AclCode::RtAicoreTimeout),
                                Ending::OpTimeout(AclCode::RtAicpuTimeout),
                            ],
                        )
                    }
                    Some(Injected::Stuck) => (None, [Ending::Hang; 2]),
                    Some(Injected::Exception(code)) => {
                        // The kernels fault as they would have ended, so a queued successor
                        // has been launched before the device turns bad. The code names the
                        // engine whose stream it faults.
                        let code = match code {
                            AclCode::RtAicoreException | AclCode::RtAicoreTimeout => {
                                self.fault_streams(normal_end, &[(core.stream, code)])
                            }
                            AclCode::RtAicpuException | AclCode::RtAicpuTimeout => {
                                self.fault_streams(normal_end, &[(aicpu, code)])
                            }
                            _ => self
                                .fault_streams(normal_end, &[(core.stream, code), (aicpu, code)]),
                        };
                        (Some(normal_end), [Ending::Exception(code); 2])
                    }
                    Some(Injected::Latch(latched)) => {
                        // The AICPU kernel returns a fatal status: 507018 stays on its stream
                        // (device-truth §1), read by any later synchronize of it. The device
                        // is not made bad: later enqueues still run (as acl-fake's default).
                        self.fault_stream_only(normal_end, aicpu, AclCode::RtAicpuException);
                        (Some(normal_end), [Ending::Latched(latched); 2])
                    }
                    Some(Injected::Silent) => (Some(normal_end), [Ending::Silent; 2]),
                    _ => (Some(normal_end), [Ending::Clean; 2]),
                }
            }
        };
        // Both kernels end with the run; each stream's tail is the run's end.
        if let Some(st) = self.streams.get_mut(&core.stream) {
            st.tail = end;
        }
        if let Some((event, recorded_ns)) = core.core_done {
            // `core_done` behind the AICore kernel (it never completes behind one that never
            // ends).
            let task_start = self.task_start(core.stream, 0);
            let complete_at = task_start.map(|s| s.saturating_add(self.costs.get(Cost::EventTask)));
            self.enqueue(core.stream, task_start, complete_at);
            self.events.insert(
                event,
                Some(Capture {
                    run: Some(run),
                    complete_at,
                }),
            );
            self.journal.push(|| Record::EventTask {
                stream: core.stream.0,
                event: event.0,
                run: Some(run.0),
                recorded_ns,
                complete_ns: complete_at,
            });
        }
        self.enqueue(aicpu, aicpu_start, end);
        self.run_ends.insert(run, end);
        self.run_streams.insert(run, [core.stream, aicpu]);
        if let (Some(s), Some(e)) = (both_start, end) {
            let writes = match endings[1] {
                Ending::Clean => Some(Publish::Ok),
                Ending::Latched(code) => Some(Publish::Error(code)),
                Ending::Silent if endings[0] == Ending::Silent => Some(Publish::Nothing),
                _ => None,
            };
            if let Some(publish) = writes {
                self.schedule_run_writes(args, s, e, publish);
            }
        }
        let enqueued = [core.enqueued, now];
        let starts = [core.start, aicpu_start];
        for (i, (side, stream)) in [(Side::Aicore, core.stream), (Side::Aicpu, aicpu)]
            .into_iter()
            .enumerate()
        {
            let record = KernelRecord {
                run: run.0,
                side,
                stream: stream.0,
                enqueued_ns: enqueued.get(i).copied().unwrap_or(now),
                start_ns: starts.get(i).copied().flatten(),
                end_ns: end,
                ending: endings.get(i).copied().unwrap_or(Ending::Clean),
                killed_ns: None,
            };
            self.journal.push(|| Record::Kernel(record));
        }
    }

    /// Faults `stream` alone with `code` at `at` (sticky until the stream is destroyed or the
    /// device force-reset), leaving the device good: what an AICPU kernel's fatal status
    /// leaves (a latch). An earlier code on the stream stays.
    fn fault_stream_only(&mut self, at: u64, stream: StreamHandle, code: AclCode) {
        if let Some(st) = self.streams.get_mut(&stream) {
            st.faulted.get_or_insert((at, code));
        }
    }

    /// Faults each stream with its code at `at` (sticky until the stream is destroyed or the
    /// device force-reset; later tasks still run) and makes the device bad from the earliest
    /// fault on; returns the device's sticky code (the first fault's).
    fn fault_streams(&mut self, at: u64, faults: &[(StreamHandle, AclCode)]) -> AclCode {
        for &(stream, code) in faults {
            if let Some(st) = self.streams.get_mut(&stream) {
                st.faulted.get_or_insert((at, code));
            }
        }
        let first = faults.first().map_or(AclCode::RtInternalError, |f| f.1);
        let earliest = self.sticky.map_or(at, |(since, _)| since.min(at));
        let code = self.sticky.map_or(first, |(_, c)| c);
        self.sticky = Some((earliest, code));
        code
    }

    /// The kernels' writes: the handshake when the workers report, the timing buffer and
    /// the status header when the run ends, and the result record the AICPU scheduler
    /// publishes at its end (before the run's boundary can complete), stamped with the
    /// run's epoch.
    fn schedule_run_writes(&mut self, args: RunArgs, start: u64, end: u64, publish: Publish) {
        let run = args.run;
        self.write_later(start, run, args.handshake, run.0.to_le_bytes().to_vec());
        let mut timing = start.to_le_bytes().to_vec();
        timing.extend_from_slice(&end.to_le_bytes());
        self.write_later(end, run, args.timing, timing);
        let latched = match publish {
            Publish::Error(latched) => Some(latched),
            Publish::Ok | Publish::Nothing => None,
        };
        let status = Latched::status(latched, self.layout);
        let mut header = vec![0; self.layout.size()];
        if status_latch::encode_into(self.layout, &status, &mut header).is_err() {
            self.violation("status header layout larger than its buffer".to_owned());
        }
        let record = match publish {
            Publish::Nothing => None,
            Publish::Ok => Some(encode_record(args.epoch, &RecordWrite::Ok)),
            Publish::Error(latched) => {
                // tensormap_and_ringbuffer's payload is its header's error tail; host_build_graph
                // has none.
                let payload = match self.layout {
                    HeaderLayout::TensormapAndRingbuffer => {
                        header.get(ERROR_TAIL).unwrap_or_default()
                    }
                    HeaderLayout::HostBuildGraph => &[],
                };
                Some(encode_record(
                    args.epoch,
                    &RecordWrite::Error {
                        code: latched.code.value(),
                        source: RecordSource::Header,
                        payload,
                    },
                ))
            }
        };
        self.write_later(end, run, args.status_header, header);
        if let Some(bytes) = record {
            self.write_later(end, run, args.record, bytes.to_vec());
            if matches!(publish, Publish::Ok) {
                if let Some(write) = self.pending_writes.last_mut() {
                    write.ok_epoch = Some(args.epoch);
                }
            }
        }
    }

    /// Blocks on an event's capture for at most `timeout_ms`.
    fn wait_for_capture(
        &mut self,
        event: EventHandle,
        capture: Option<Capture>,
        timeout_ms: i32,
        run: Option<RunId>,
    ) -> Result<(), AclCode> {
        let now = self.host_ns;
        let complete_at = match capture {
            // Never recorded: success at once (ascend-cl.md §2.4). The driver tracks records.
            None => Some(now),
            Some(c) => c.complete_at,
        };
        let timeout_ns = if timeout_ms == -1 {
            None
        } else {
            Some(
                u64::try_from(timeout_ms)
                    .unwrap_or(0)
                    .saturating_mul(1_000_000),
            )
        };
        match (complete_at, timeout_ns) {
            (Some(t), _) if t <= now => {
                self.spend_ns(self.costs.get(Cost::EventQuery), run);
                Ok(())
            }
            (Some(t), None) => {
                self.block_ns(t - now, run);
                self.spend_ns(self.costs.get(Cost::HostWakeup), run);
                Ok(())
            }
            (Some(t), Some(limit)) if t - now <= limit => {
                self.block_ns(t - now, run);
                self.spend_ns(self.costs.get(Cost::HostWakeup), run);
                Ok(())
            }
            (_, Some(limit)) => {
                self.block_ns(limit, run);
                Err(AclCode::RtEventSyncTimeout)
            }
            (None, None) => {
                self.fail(DeviceFailure::Deadlock(format!(
                    "the host waits without a timeout on event e{} whose stream never passes it",
                    event.0
                )));
                Err(AclCode::RtEventSyncTimeout)
            }
        }
    }

    /// The run's timing buffer was written by no run's kernels but its own (L-13, L-17).
    fn check_timing_writer(&mut self, run: RunId) {
        let Some(args) = self.live_runs.get(&run).copied() else {
            return;
        };
        let writer = self
            .locate(args.timing)
            .and_then(|(base, _)| self.memory.get(&base))
            .and_then(|a| a.kernel_writer);
        if let Some(writer) = writer.filter(|w| *w != run) {
            self.violation(format!(
                "run {}'s timing buffer {:#x} was last written by run {}'s kernels (L-13)",
                run.0, args.timing.0, writer.0
            ));
        }
    }
}

/// A host call's trace record.
fn call_record(
    name: &'static str,
    span: core::ops::Range<u64>,
    run: Option<RunId>,
    detail: String,
    error: Option<String>,
) -> Record {
    Record::Call {
        track: None,
        start_ns: span.start,
        end_ns: span.end,
        name,
        run: run.map(|r| r.0),
        detail,
        error,
    }
}
