//! The simulator's driver-level observer, and the journal it shares with the device.
//!
//! What only the lane knows (stream roles, which run a host call works for) reaches the
//! simulation through [`SimObserver`], as it would on hardware, and lands in the [`Journal`]:
//! the trace, the stream roles, the latched status headers the driver read, and the run host
//! time is billed to. The journal is instrumentation: no device decision reads it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lane_core::status_latch::{Record as Published, RecordRead, Status};
use lane_core::stream_pair::Role;
use lane_core::{Event, RunId};
use lane_driver::{Observation, Observer};

use crate::device::HostUse;
use crate::trace::{Record, Trace};

#[derive(Debug, Default)]
struct Log {
    trace: Trace,
    bill_to: Option<RunId>,
    stream_roles: BTreeMap<u64, Role>,
    aicore_streams_created: u64,
    latches: Vec<(RunId, Status)>,
    host_use: BTreeMap<u64, HostUse>,
    /// The virtual host worker whose track the device's host clock is on (`None`: the lane
    /// thread), set by [`crate::workers`] around a runner call it runs on a worker.
    track: Option<u8>,
    /// Host time in calls on worker tracks, by run.
    worker_use: BTreeMap<u64, u64>,
    /// The epochs of the last launches and the runs launched with them (a bounded window:
    /// the slots' records are all a stale stamp can be).
    epochs: Vec<(u64, u64)>,
}

/// Launches whose epochs [`Log::epochs`] keeps.
const EPOCH_WINDOW: usize = 16;

/// The records of one simulation, shared by the device (its calls, kernels and notes) and
/// the observer (lane steps), so the trace keeps the order things happened in.
#[derive(Clone, Debug, Default)]
pub struct Journal(Arc<Mutex<Log>>);

impl Journal {
    /// The log, tolerating poison (a panic while it was held is the simulation's own
    /// failure, reported elsewhere; the records stay readable).
    fn log(&self) -> MutexGuard<'_, Log> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A journal whose trace records (`on`) or ignores everything.
    pub(crate) fn new(trace: bool) -> Self {
        Self(Arc::new(Mutex::new(Log { trace: Trace::new(trace), ..Log::default() })))
    }

    /// Records what `make` builds (only called when tracing is on); a call made on a worker
    /// track is recorded as that worker's.
    pub(crate) fn push(&self, make: impl FnOnce() -> Record) {
        let mut log = self.log();
        let track = log.track;
        log.trace.push(|| make().on_track(track));
    }

    /// Records what `make` builds and returns its index, for [`Journal::patch`] (`None` when
    /// tracing is off); `for_effect` passes it the run whose effect the driver is executing.
    pub(crate) fn push_indexed(&self, make: impl FnOnce(Option<RunId>) -> Record) -> Option<usize> {
        let mut log = self.log();
        let (run, track) = (log.bill_to, log.track);
        log.trace.push_indexed(|| make(run).on_track(track))
    }

    /// Changes the record at `index` (a device task's placeholder, as the device runs it).
    pub(crate) fn patch(&self, index: usize, change: impl FnOnce(&mut Record)) {
        self.log().trace.patch(index, change);
    }

    /// Puts the records and host time of the calls that follow on worker `track`'s track
    /// (`None`: back on the lane thread).
    pub(crate) fn set_track(&self, track: Option<u8>) {
        self.log().track = track;
    }

    /// A force reset at `at` killed every kernel that had not ended.
    pub(crate) fn kill_open_kernels(&self, at: u64) {
        self.log().trace.kill_open_kernels(at);
    }

    /// Records what `make` builds for the run whose effect the driver is executing.
    pub(crate) fn push_for_effect(&self, make: impl FnOnce(Option<RunId>) -> Record) {
        self.push_indexed(make);
    }

    /// Bills a call's host time to the run whose effect the driver is executing, if any.
    pub(crate) fn bill_effect_busy(&self, ns: u64) {
        let run = self.log().bill_to;
        self.bill(run, ns, 0);
    }

    /// Bills host time busy in calls and blocked in waits to `run` (if any): the lane
    /// thread's, or the workers' while a worker's call runs (workers never wait).
    pub(crate) fn bill(&self, run: Option<RunId>, busy_ns: u64, blocked_ns: u64) {
        if let Some(run) = run {
            let mut log = self.log();
            if log.track.is_some() {
                let entry = log.worker_use.entry(run.0).or_default();
                *entry = entry.saturating_add(busy_ns);
                return;
            }
            let entry = log.host_use.entry(run.0).or_default();
            entry.busy_ns = entry.busy_ns.saturating_add(busy_ns);
            entry.blocked_ns = entry.blocked_ns.saturating_add(blocked_ns);
        }
    }

    /// Host time spent per run (by run id).
    pub fn host_use(&self) -> BTreeMap<u64, HostUse> {
        self.log().host_use.clone()
    }

    /// Host time in calls on virtual host worker tracks, per run (by run id).
    pub fn worker_use(&self) -> BTreeMap<u64, u64> {
        self.log().worker_use.clone()
    }

    /// The trace recorded so far.
    pub fn trace(&self) -> Trace {
        self.log().trace.clone()
    }

    /// The role of each stream the lane created (by handle).
    pub fn stream_roles(&self) -> BTreeMap<u64, Role> {
        self.log().stream_roles.clone()
    }

    /// AICore streams created so far (a publication or an unproven retirement adds one).
    pub fn aicore_streams_created(&self) -> u64 {
        self.log().aicore_streams_created
    }

    /// The device launched `run` with `epoch`. Epochs are process-wide, so the trace shows a
    /// stale stamp as the run launched with it, byte-identical per seed.
    pub(crate) fn note_epoch(&self, epoch: u64, run: RunId) {
        let mut log = self.log();
        if log.epochs.len() == EPOCH_WINDOW {
            log.epochs.remove(0);
        }
        log.epochs.push((epoch, run.0));
    }

    /// Every status header the driver read that latched a code, by run, in read order.
    pub fn latches(&self) -> Vec<(RunId, Status)> {
        self.log().latches.clone()
    }
}

/// The observer the simulation's driver reports to: lane steps into the trace, stream roles,
/// and the run each effect's host calls work for.
#[derive(Clone, Debug)]
pub struct SimObserver {
    journal: Journal,
}

impl SimObserver {
    /// An observer writing into `journal` (take it from [`SimDevice::journal`](crate::SimDevice::journal)).
    pub const fn new(journal: Journal) -> Self {
        Self { journal }
    }

    /// The journal it writes.
    pub const fn journal(&self) -> &Journal {
        &self.journal
    }
}

/// `event` as the trace shows it: a never-published record's stale stamp (another run's
/// epoch) replaced by the id of the run launched with it (0 if it is not a recent launch's).
fn stamp_as_run(epochs: &[(u64, u64)], mut event: Event) -> Event {
    if let Event::Completed { evidence, .. } = &mut event {
        if let RecordRead::Read(Published::NeverPublished { stamp }) = &mut evidence.record {
            if *stamp != 0 {
                *stamp = epochs.iter().find(|(epoch, _)| epoch == stamp).map_or(0, |(_, run)| *run);
            }
        }
    }
    event
}

impl Observer for SimObserver {
    fn observe(&mut self, step: &Observation<'_>) {
        let mut log = self.journal.log();
        let (at, text) = match *step {
            Observation::Command { now, command, accepted } => {
                log.bill_to = None;
                let name = command.name();
                let text = match (accepted, command) {
                    (Some(id), _) => format!("{name} -> {id}"),
                    (None, lane_driver::Command::Close | lane_driver::Command::RetryTeardown) => {
                        name.to_owned()
                    }
                    (None, _) => format!("{name} refused"),
                };
                (now, text)
            }
            Observation::Effect { now, effect } => {
                log.bill_to = effect.run();
                (now, format!("effect {effect}"))
            }
            Observation::Event { now, event, result } => {
                log.bill_to = None;
                match (*event, result) {
                    (Event::StreamCreated { role, handle }, Ok(())) => {
                        log.stream_roles.insert(handle.0, role);
                        if role == Role::Aicore {
                            log.aicore_streams_created += 1;
                        }
                    }
                    (Event::StatusRead { run, status, .. }, Ok(()))
                        if status.orch.is_some() || status.sched.is_some() =>
                    {
                        log.latches.push((run, status));
                    }
                    _ => {}
                }
                let verdict = match result {
                    Ok(()) => String::new(),
                    Err(e) => format!(" REJECTED: {e}"),
                };
                let shown = stamp_as_run(&log.epochs, *event);
                (now, format!("event  {shown}{verdict}"))
            }
            Observation::Timeout { now } => (now, "deadline passed: handle_timeout".to_owned()),
            Observation::Outcome { now, outcome } => (now, format!("outcome {outcome}")),
            Observation::ReleaseFailed { now, release, code } => {
                (now, format!("release {release:?} failed: {} {}", code.raw(), code.name()))
            }
        };
        log.trace.push(|| Record::Lane { at_ns: at.0, text });
    }
}
