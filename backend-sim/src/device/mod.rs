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
//! sees a write once its clock passes it. The device remembers every record it published
//! ([`SimDevice::take_published`]), so a harness can check that no run is `Ok` without an ok
//! one and that no verdict names a run its own record does not convict.
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
//! record, a failed record read) reads the stale 507018, which the lane charges to the run
//! that left it (L-8a: its error record marked the stream, and the lane replaces the stream
//! once drained). A synchronize waits for every task on its stream, so one made for a run
//! covers the runs queued behind it too (device-truth §1).
//!
//! [`Device::now`]: lane_driver::Device::now
//! [`Device::launch_context`]: lane_driver::Device::launch_context
//! [`Device::synchronize_stream`]: lane_driver::Device::synchronize_stream

// One file per resource, each owning its part of the device's state and the calls on it;
// the `Device` impl (device_trait.rs) only delegates to them.
mod device_trait;
mod events;
mod kernels;
mod memory;
mod pinned;
mod recovery;
mod runner;
mod streams;

pub use runner::SimRunner;

use std::collections::BTreeMap;

use lane_core::status_latch::{AclCode, HeaderLayout};
use lane_core::stream_pair::StreamHandle;
use lane_core::{DEFAULT_DEVICE_OP_TIMEOUT_NS, FinaliseFailure, RunId};
use lane_driver::{DevicePtr, EventHandle, HostPtr, LaunchContext, PrepareError, RunArgs};
use rand_core::RngCore;

use crate::costs::{Cost, Costs};
use crate::faults::{FaultRule, Faults, rng_for};
use crate::observer::Journal;
use crate::trace::{Record, Trace};

use events::{Capture, FIRST_EVENT};
use kernels::PendingCore;
use memory::{Allocation, FIRST_PTR, PendingWrite};
use pinned::{FIRST_HOST_PTR, PendingCopy};
use streams::{FIRST_STREAM, Stream};

/// What a run's published result record said (the device's own note, for the harness).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublishedRecord {
    /// The run's record says ok.
    Ok,
    /// The run's record says error (a latched code).
    Error,
}

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
        let draw = rng_for(seed ^ run.0.rotate_left(17), crate::faults::streams::JITTER).next_u64();
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

/// The simulated device: implements [`Device`] (and [`SimRunner`] does the runner's work on
/// it), so the one [`lane_driver::Driver`] loop runs the lane on it. It gives no completion
/// waiter itself: in a lane service, wrap it in a [`SharedSim`](crate::SharedSim), which
/// shares it with the service's waiter thread.
///
/// [`Device`]: lane_driver::Device
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
    ///
    /// [`Device::launch_context`]: lane_driver::Device::launch_context
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
    /// Records that landed, by run; taken by the harness's check ([`Self::take_published`]).
    published: BTreeMap<RunId, PublishedRecord>,
    /// Every run whose error record landed, kept: a run's verdict may name it as the run that
    /// left a sticky code (L-8a) after its own outcome was checked.
    published_errors: std::collections::BTreeSet<RunId>,
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
            published: BTreeMap::new(),
            published_errors: std::collections::BTreeSet::new(),
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

    /// The result record the run's kernels published (stamped with the epoch the run was
    /// launched with) that landed in its slot's record region, if any, and forgets it (each
    /// run's is taken once, when its outcome is checked). The harness checks every verdict
    /// with it: no path reports `Ok` without a published ok record (L-8), and no failure names
    /// a run its own record does not convict (L-8a).
    pub fn take_published(&mut self, run: RunId) -> Option<PublishedRecord> {
        self.published.remove(&run)
    }

    /// Whether the run's kernels published an error record (kept for the lane's life): the
    /// run a sticky code may be charged to (L-8a).
    #[must_use]
    pub fn published_an_error(&self, run: RunId) -> bool {
        self.published_errors.contains(&run)
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
            Self::Runtime(code) => format!("runtime_status={} {}", -code.value(), code.name()),
        }
    }
}

impl CallError for FinaliseFailure {
    fn text(&self) -> String {
        match self {
            Self::Validation => "validation".to_owned(),
            Self::Acl(code) => code.text(),
            Self::Runtime(code) => format!("runtime_status={} {}", -code.value(), code.name()),
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
