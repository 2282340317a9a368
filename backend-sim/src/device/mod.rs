//! The simulated device: a [`device_model::Device`] driven in virtual time, the host's costs,
//! the trace, and the simulator's own invariants.
//!
//! # Time
//!
//! `host_ns` is the host thread's clock, [`Device::now`]. Every call advances the model to it
//! first, then spends its cost ([`Costs`]); a blocking wait runs the model forward to the
//! event's completion (plus the host wake-up) or to the timeout. The device's own behaviour
//! (task order and timing, sticky codes, the handshake, the kernels' writes and records, the
//! fault rules) is the model's; [`Costs`] gives it its device-side costs as its
//! [`device_model::Timing`], and [`Semantics::SIMULATOR`] its switches.
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
//! The simulator follows the executor's launch context ([`Device::launch_context`]), never the
//! order of calls: a record in a run's `Kernels` stage is that run's (its fault site names the
//! run), one in its `Arm` stage (the "armed" event) belongs to no run and is no fault site; a
//! call from another thread (lane-service's completion waiter) between the two launches
//! changes nothing. The run's fate (the `run` fault site) is decided at its AICPU launch, and
//! the device remembers every record it published ([`SimDevice::take_published`]) so a
//! harness can check each verdict against it. An AICore kernel whose AICPU partner is never
//! enqueued spins until the op timeout kills it, orphaned when its launch ends; both kernels
//! on one stream is a deadlock, recorded and failed loudly.
//!
//! # Sticky errors (device-truth §1)
//!
//! Completion is not the verdict: a faulted, op-timeout-killed or latched run's events
//! complete, an event wait returns 0 and a stream query reports no error. Only
//! [`Device::synchronize_stream`] returns a stream's sticky code (507046 past its timeout, a
//! zero timeout refused with 107000). A device exception or an op-timeout kill also makes the
//! device bad until a force reset; a latch leaves 507018 on the AICPU stream alone.
//!
//! [`Device::now`]: lane_driver::Device::now
//! [`Device::launch_context`]: lane_driver::Device::launch_context
//! [`Device::synchronize_stream`]: lane_driver::Device::synchronize_stream
//! [`Semantics::SIMULATOR`]: device_model::Semantics::SIMULATOR

// The model holds the device; these files hold the host's side of each call (its cost, its
// trace record, the simulator's invariants): calls.rs the `Device` impl (stream, event,
// memory, copy and recovery calls), kernels.rs the runner's two launches and the launch
// context, runner.rs the runner's other calls.
mod calls;
mod kernels;
mod runner;

pub use runner::SimRunner;

use std::collections::{BTreeMap, BTreeSet};

use device_model::faults::Injected;
use device_model::{Ending as ModelEnding, HostMemory, Note, Semantics, Timing};
use lane_core::status_latch::{self, AclCode, HeaderLayout};
use lane_core::{DEFAULT_DEVICE_OP_TIMEOUT_NS, FinaliseFailure, RunId};
use lane_driver::{DevicePtr, HostPtr, LaunchContext, PrepareError, RunArgs};
use rand_core::RngCore;

use crate::costs::{Cost, Costs};
use crate::faults::{FaultRule, Latched, rng_for};
use crate::observer::Journal;
use crate::trace::{Ending, Record, Side, Trace};

use kernels::PendingCore;

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
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceFailure {
    /// A device invariant broke (see the crate doc's list).
    #[error("device invariant broken: {0}")]
    Invariant(String),
    /// Work that can never finish: both kernels of a run on one stream, or an unbounded
    /// wait on an event that never completes.
    #[error("deadlock: {0}")]
    Deadlock(String),
    /// The lane kept the device busy without making progress.
    #[error("livelock: {0}")]
    Livelock(String),
}

/// Host time spent on behalf of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostUse {
    /// Time in calls (their costs).
    pub busy_ns: u64,
    /// Time blocked in waits for the device.
    pub blocked_ns: u64,
}

/// Pinned host memory (`aclrtMallocHost`) by base address, which the model's copy tasks read
/// and write.
#[derive(Clone, Debug, Default)]
struct PinnedHost(BTreeMap<HostPtr, Vec<u8>>);

impl PinnedHost {
    /// The pinned allocation holding `len` bytes from `ptr`, as that slice.
    fn region(&self, ptr: HostPtr, len: usize) -> Option<&[u8]> {
        let (base, bytes) = self.0.range(..=ptr).next_back()?;
        let offset = usize::try_from(ptr.0 - base.0).ok()?;
        bytes.get(offset..offset.checked_add(len)?)
    }

    fn region_mut(&mut self, ptr: HostPtr, len: usize) -> Option<&mut [u8]> {
        let (base, bytes) = self.0.range_mut(..=ptr).next_back()?;
        let offset = usize::try_from(ptr.0 - base.0).ok()?;
        bytes.get_mut(offset..offset.checked_add(len)?)
    }
}

impl HostMemory for PinnedHost {
    fn read(&mut self, addr: u64, len: usize, _pinned: bool) -> Result<Vec<u8>, AclCode> {
        self.region(HostPtr(addr), len).map(<[u8]>::to_vec).ok_or(AclCode::RtParamInvalid)
    }

    fn write(&mut self, addr: u64, bytes: &[u8], _pinned: bool) -> Result<(), AclCode> {
        let out = self.region_mut(HostPtr(addr), bytes.len()).ok_or(AclCode::RtParamInvalid)?;
        out.copy_from_slice(bytes);
        Ok(())
    }

    fn holds(&self, addr: u64, len: usize, _pinned: bool) -> bool {
        self.region(HostPtr(addr), len).is_some()
    }
}

/// What the trace knows of one device task the model runs (by its tag): its record, once
/// pushed, and what the model reported of it so far.
#[derive(Clone, Debug, Default)]
struct TaskTrace {
    /// The trace record, once pushed (a run's kernels are recorded at its AICPU launch).
    record: Option<usize>,
    /// A kernel's run and side.
    kernel: Option<(RunId, Side)>,
    /// The run's fate, once decided (at its AICPU launch).
    fate: Option<Injected>,
    /// An AICore kernel whose launch ended without its partner.
    orphaned: bool,
    started: Option<u64>,
    ended: Option<(u64, ModelEnding)>,
    /// A record or copy task's span.
    ran: Option<(u64, u64)>,
}

impl TaskTrace {
    /// A run's kernel on `side`, not yet recorded.
    fn kernel(run: RunId, side: Side) -> Self {
        Self { kernel: Some((run, side)), ..Self::default() }
    }

    /// A kernel's ending as the trace shows it: the run's fate names how it ended.
    fn ending(&self) -> Ending {
        let side = self.kernel.map(|(_, side)| side);
        let fated = |fate: &Option<Injected>| match fate {
            Some(Injected::Latch(latched)) => Ending::Latched(*latched),
            Some(Injected::Silent) => Ending::Silent,
            Some(Injected::Hang) if side == Some(Side::Aicpu) => Ending::Silent,
            Some(Injected::Exception(code)) => Ending::Exception(*code),
            _ => Ending::Clean,
        };
        match (self.started, self.ended) {
            (_, Some((_, ModelEnding::Killed(_)))) if self.orphaned => Ending::Orphaned,
            (_, Some((_, ModelEnding::Killed(code)))) => Ending::OpTimeout(code),
            (_, Some((_, ModelEnding::Fault(code)))) => Ending::Exception(code),
            (_, Some(_)) => fated(&self.fate),
            (None, None) if !self.orphaned => Ending::Blocked,
            _ if self.orphaned => Ending::Orphaned,
            _ => match self.fate {
                Some(Injected::Stuck) => Ending::Hang,
                _ => fated(&self.fate),
            },
        }
    }
}

/// The simulated device, run by the one [`lane_driver::Driver`] loop with [`SimRunner`]. It
/// gives no completion waiter itself: in a lane service, wrap it in a
/// [`SharedSim`](crate::SharedSim), which shares it with the service's waiter thread.
#[derive(Debug)]
pub struct SimDevice {
    costs: Costs,
    seed: u64,
    run_times: RunTimes,
    /// The device itself.
    model: device_model::Device,
    /// The scheduler's clean status header, encoded once.
    clean_header: Vec<u8>,
    host_ns: u64,
    next_stream: u64,
    next_event: u64,
    next_ptr: u64,
    host_memory: PinnedHost,
    next_host_ptr: u64,
    /// Where the executor is in a run's launch (the module doc says what it decides).
    launch: Option<LaunchContext>,
    binary_loaded: bool,
    pending_core: Option<PendingCore>,
    /// Runs launched and not yet finalised or reset, with their slot buffers.
    live_runs: BTreeMap<RunId, RunArgs>,
    /// When each live run's scheduler ended (`None`: not yet), for the queued-launch count.
    run_ends: BTreeMap<RunId, Option<u64>>,
    queued_launches: u64,
    /// Records that landed, by run; taken by the harness's check ([`Self::take_published`]).
    published: BTreeMap<RunId, PublishedRecord>,
    /// Every run whose error record landed, kept: a run's verdict may name it as the run that
    /// left a sticky code (L-8a) after its own outcome was checked.
    published_errors: BTreeSet<RunId>,
    /// The device tasks the model runs, by tag: their trace records and the kernels' runs.
    tasks: BTreeMap<u64, TaskTrace>,
    next_tag: u64,
    resets: u64,
    calls: u64,
    call_budget: u64,
    journal: Journal,
    failure: Option<DeviceFailure>,
    /// Whether the device gives event timestamps ([`SimDevice::with_event_timestamps`]).
    event_timestamps: bool,
}

impl SimDevice {
    /// A fresh device: no streams, no faults, the host clock at 0.
    pub fn new(costs: Costs, layout: HeaderLayout, seed: u64, run_times: RunTimes) -> Self {
        let timing = Timing {
            task_switch: costs.get(Cost::TaskSwitch),
            kernel_start_latency: costs.get(Cost::KernelStartLatency),
            event_task: costs.get(Cost::EventTask),
            copy_task: costs.get(Cost::CopyTask),
            copy_ns_per_kib: 0,
        };
        let mut model = device_model::Device::new(Semantics::SIMULATOR, timing, seed);
        model.keep_notes(true);
        model.set_op_timeout(Some(DEFAULT_DEVICE_OP_TIMEOUT_NS));
        Self {
            costs,
            seed,
            run_times,
            model,
            clean_header: status_latch::encode(layout, &Latched::status(None, layout)),
            host_ns: 0,
            next_stream: FIRST_STREAM,
            next_event: FIRST_EVENT,
            next_ptr: FIRST_PTR,
            host_memory: PinnedHost::default(),
            next_host_ptr: FIRST_HOST_PTR,
            launch: None,
            binary_loaded: false,
            pending_core: None,
            live_runs: BTreeMap::new(),
            run_ends: BTreeMap::new(),
            queued_launches: 0,
            published: BTreeMap::new(),
            published_errors: BTreeSet::new(),
            tasks: BTreeMap::new(),
            next_tag: 1,
            resets: 0,
            calls: 0,
            call_budget: u64::MAX,
            journal: Journal::new(false),
            failure: None,
            event_timestamps: false,
        }
    }

    /// Records a trace of every call, lane step and device task (off by default).
    #[must_use]
    pub fn with_trace(mut self, on: bool) -> Self {
        self.journal = Journal::new(on);
        self
    }

    /// Whether the device gives event timestamps (`aclrtEventGetTimestamp`, for
    /// `TimingSource::EventTimestamps`; off by default, so the calls and virtual times of a
    /// run without them stay as they were).
    #[must_use]
    pub const fn with_event_timestamps(mut self, on: bool) -> Self {
        self.event_timestamps = on;
        self
    }

    /// The device op timeout (`aclrtSetOpExecuteTimeOutV2`; default
    /// [`DEFAULT_DEVICE_OP_TIMEOUT_NS`]): a hung run's kernels end this long after they
    /// started, with 507014 (AICore) and 507017 (AICPU). Set it from
    /// `Profile::device_op_timeout_ns`, as backend-acl does at open.
    #[must_use]
    pub fn with_op_timeout(mut self, ns: u64) -> Self {
        self.model.set_op_timeout(Some(ns));
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
        self.model.install(rule);
    }

    /// Removes every fault rule (the device's state, a hung kernel or a sticky fault,
    /// stays until the lane recovers it).
    pub fn heal(&mut self) {
        self.model.heal();
    }

    /// How many faults fired.
    pub const fn faults_injected(&self) -> u64 {
        self.model.faults_injected()
    }

    /// The first simulator failure (invariant, deadlock, livelock), if any.
    pub const fn failure(&self) -> Option<&DeviceFailure> {
        self.failure.as_ref()
    }

    /// The trace recorded so far.
    pub fn trace(&self) -> Trace {
        self.journal.trace()
    }

    /// The journal this device writes into; give it to [`SimObserver::new`](crate::SimObserver::new)
    /// so lane steps land in the same trace.
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

    /// Moves the host clock to `at_ns` and returns where it was (a virtual host worker's call
    /// runs on its own clock, [`crate::workers`]).
    pub const fn set_host_clock(&mut self, at_ns: u64) -> u64 {
        core::mem::replace(&mut self.host_ns, at_ns)
    }

    /// The thread whose clock the device is on wakes from a sleep (not a device call): its
    /// `host_wakeup`, billed to `run` and recorded as a `wake_up` call saying `why`.
    pub fn host_wakeup(&mut self, run: Option<RunId>, why: &'static str) {
        let start = self.host_ns;
        self.spend_ns(self.costs.get(Cost::HostWakeup), run);
        let end = self.host_ns;
        self.journal.push(|| call_record("wake_up", start..end, run, why.to_owned(), None));
    }

    /// The result record the run's kernels published (stamped with the epoch the run was
    /// launched with) that landed in its slot's record region, if any, and forgets it: the
    /// harness checks the run's verdict with it, once (L-8, L-8a).
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

    /// Starts a call: counts it and moves the device to the host clock. Returns the call's
    /// start.
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

    /// The device catches up with the host clock: every task due by then has run, so the host
    /// sees every write that has landed.
    fn settle(&mut self) {
        let _ = self.model.advance(self.host_ns, &mut self.host_memory);
        self.absorb_notes();
    }

    /// Runs the device forward until `done` holds, up to `deadline` (a blocking wait): when
    /// it came to hold.
    fn run_until(
        &mut self,
        deadline: Option<u64>,
        done: impl Fn(&device_model::Device) -> bool,
    ) -> Option<u64> {
        let reached = self.model.run_until(deadline, &mut self.host_memory, done);
        self.absorb_notes();
        reached
    }

    /// A fresh tag for a device task (its trace record, its kernel's run).
    fn new_tag(&mut self) -> u64 {
        let tag = self.next_tag;
        self.next_tag += 1;
        tag
    }

    /// What the model reported: the trace records it completes, the runs' ends and records,
    /// and the kernels' writes, checked against the live runs' buffers (L-13).
    fn absorb_notes(&mut self) {
        for note in self.model.take_notes() {
            match note {
                Note::KernelStarted { tag, at } => {
                    if let Some(task) = self.tasks.get_mut(&tag) {
                        task.started = Some(at);
                    }
                    self.patch(tag);
                }
                Note::KernelEnded { tag, at, ending, .. } => {
                    let Some(task) = self.tasks.get_mut(&tag) else {
                        continue;
                    };
                    task.ended = Some((at, ending));
                    if let Some((run, side)) = task.kernel {
                        if side == Side::Aicpu || task.orphaned {
                            if let Some(end) = self.run_ends.get_mut(&run) {
                                *end = Some(at);
                            }
                        }
                    }
                    self.patch(tag);
                }
                Note::TaskRan { tag, start, end, result } => {
                    if let Some(task) = self.tasks.get_mut(&tag) {
                        task.ran = Some((start, end));
                    }
                    self.patch(tag);
                    if let Err(code) = result {
                        self.violation(format!(
                            "a copy on a stream failed with {} when it ran: a buffer it moves was freed or is out of range",
                            code.raw()
                        ));
                    }
                }
                Note::KernelWrote { run, addr, len, landed } => {
                    self.check_kernel_write(run.map(RunId), DevicePtr(addr), len, landed)
                }
                Note::Published { run, error } => {
                    if let Some(run) = run.map(RunId) {
                        let record = if error {
                            self.published_errors.insert(run);
                            PublishedRecord::Error
                        } else {
                            PublishedRecord::Ok
                        };
                        self.published.insert(run, record);
                    }
                }
                Note::Dropped { tag, .. } => {
                    self.tasks.remove(&tag);
                }
            }
        }
    }

    /// Pushes task `tag`'s trace record (what `make` builds for the run the driver's effect is
    /// for) and writes what is known of the task into it.
    fn push_task(&mut self, tag: u64, make: impl FnOnce(Option<RunId>) -> Record) {
        let index = self.journal.push_indexed(make);
        if let Some(task) = self.tasks.get_mut(&tag) {
            task.record = index;
        }
        self.patch(tag);
    }

    /// Writes what is known of task `tag` into its trace record, once it has one; forgets a
    /// task that has ended and been recorded.
    fn patch(&mut self, tag: u64) {
        let Some(task) = self.tasks.get(&tag) else {
            return;
        };
        let Some(index) = task.record else {
            return;
        };
        let ending = task.ending();
        let (started, ended, ran) = (task.started, task.ended, task.ran);
        self.journal.patch(index, |record| match record {
            Record::Kernel(k) => {
                k.start_ns = started.or(k.start_ns);
                k.end_ns = ended.map(|(at, _)| at);
                k.ending = ending;
            }
            Record::EventTask { complete_ns, .. } => *complete_ns = ran.map(|(_, end)| end),
            Record::CopyTask { span, .. } => *span = ran,
            _ => {}
        });
        if ended.is_some() || ran.is_some() {
            self.tasks.remove(&tag);
        }
    }

    /// A kernel's write landed (or not), by no live run's kernels but the buffer's own (L-13).
    fn check_kernel_write(&mut self, run: Option<RunId>, ptr: DevicePtr, len: usize, landed: bool) {
        if !landed {
            self.violation(format!(
                "run {}'s kernels wrote {len} bytes at {:#x}, which is not inside an allocation",
                run.map_or(0, |r| r.0),
                ptr.0
            ));
            return;
        }
        let owner = self
            .live_runs
            .values()
            .find(|a| [a.status_header, a.timing, a.handshake, a.record].contains(&ptr))
            .map(|a| a.run);
        if let (Some(owner), Some(run)) = (owner, run) {
            if owner != run {
                self.violation(format!(
                    "run {}'s kernels wrote {:#x}, a buffer of live run {} (L-13)",
                    run.0, ptr.0, owner.0
                ));
            }
        }
    }

    fn fail(&mut self, failure: DeviceFailure) {
        if self.failure.is_none() {
            let at = self.host_ns;
            self.journal.push(|| Record::Note { at_ns: at, text: failure.to_string() });
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
        self.journal.bill(run, ns, 0);
    }

    /// Host time blocked in a wait, billed like [`Self::spend_ns`].
    fn block_ns(&mut self, ns: u64, run: Option<RunId>) {
        self.host_ns = self.host_ns.saturating_add(ns);
        self.journal.bill(run, 0, ns);
    }

    /// The device's sticky fault, if the host clock has reached it.
    fn sticky_now(&self) -> Result<(), AclCode> {
        self.model.fault_now(self.host_ns)
    }

    /// The shape every model call shares: [`Self::enter`], its host time (`host`: a fixed
    /// cost spent first, or what the body spends), `body` (given the call's start), then its
    /// one journal record: `name`, `detail` of the result and the error's text (made only if
    /// the journal keeps them), named as `named` says. Every device and runner method goes
    /// through it but `write_host` and `read_host`, plain host memory: no call.
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

/// First stream handle (AICPU and AICore handles are drawn from one counter).
const FIRST_STREAM: u64 = 1;
/// First event handle.
const FIRST_EVENT: u64 = 1001;
/// First device address.
const FIRST_PTR: u64 = 0x1000_0000;
/// First pinned host address (`aclrtMallocHost`), far from device addresses so a mix-up
/// between the two is a dead handle, never a silent hit.
const FIRST_HOST_PTR: u64 = 0x7000_0000_0000;

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
