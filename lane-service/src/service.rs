//! [`spawn`], the [`LaneHandle`], the lane's threads and the caller-driven mode.

mod engine;
mod handle;
mod spawn;

use lane_core::{CloseReport, Effect, Outcome, Profile, PublicationId, RunId, Timestamp};
use lane_driver::dispatch::{Dispatch, Here, Loss, WorkerAnswer};
use lane_driver::{DeviceWait, DriverError, LaneSteps, Report, Wait};
use std::cell::Cell;
use std::fmt;
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{self, JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use crate::error::LostCause;
use crate::mailbox::{Delivers, Mailbox};
use crate::sync::lock;

use self::engine::{How, Ran, RunsSteps};
pub use self::handle::LaneHandle;
pub use self::spawn::{spawn, spawn_with_workers};

/// The outcome callback: called with each outcome, in order, by the thread running the
/// lane's steps (see [`ServiceConfig::on_outcome`]).
pub type OutcomeCallback = Box<dyn FnMut(&Outcome) + Send + 'static>;

/// The default number of host workers (see [`ServiceConfig::workers`]): one can prepare the
/// next run while the other finalises the last.
pub const DEFAULT_WORKERS: usize = 2;

/// Delivered outcomes a lane holds, not taken yet, before its buffers grow (16, about
/// 2 KiB): a caller that takes them as documented leaves a few at most, so steady state
/// allocates nothing. The lane does not bound them.
const OUTCOMES_KEPT: usize = 16;

/// How long a shutdown waits for a completion waiter the lane was lost to (stuck inside a
/// device call past its bound, [`Loss::WaiterStuck`]) before it leaves the thread behind.
const STUCK_WAITER_JOIN: Duration = Duration::from_secs(1);

/// Who runs a lane's steps (SPEC L-16, L-23).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Drive {
    /// The lane's own threads: a lane thread (timers, notice polls, wake-ups), a completion
    /// waiter thread (every blocking device wait) and optional host workers; whoever has the
    /// event runs the steps.
    #[default]
    LaneThreads,
    /// The caller's threads (L-23): the lane starts no thread. [`spawn`] makes the device and
    /// the runner on the calling thread; every [`LaneHandle`] call runs the lane's steps on
    /// its thread; [`LaneHandle::wait`] makes the device wait itself, bounded by its timeout
    /// (an expired wait leaves the run live); [`LaneHandle::poll_outcome`] only looks. A
    /// deadline passed while no call is made is acted on at the next call. Every calling
    /// thread must be bound to the lane's device.
    Caller,
}

/// How [`spawn`] sets the lane up.
pub struct ServiceConfig {
    /// The lane's profile.
    pub profile: Profile,
    /// Whether to run `Lane::check_invariants` after every lane step (a broken invariant
    /// loses the lane with the violation as its cause).
    pub check_invariants: bool,
    /// Called with every outcome, in sequence order, by the thread that runs the lane's steps,
    /// before it lets go of them and with no lock held: never beside a device or runner call of
    /// the lane. It sees the outcome, it does not take it. It may call any handle method but
    /// `wait` (it would block the steps) and `shut_down`
    /// ([`ServiceError::OwnThread`](crate::ServiceError::OwnThread)), and must not hold the
    /// last handle.
    pub on_outcome: Option<OutcomeCallback>,
    /// How many host worker threads run the runner's prepare and finalise
    /// ([`spawn_with_workers`], when [`concurrency`](lane_driver::Runner::concurrency) allows
    /// it). [`spawn`], and a lane the caller drives, start none whatever this says.
    pub workers: usize,
    /// The threads that call [`LaneHandle::submit`] and [`LaneHandle::publish`] are bound to
    /// the lane's device, so the lane's steps may run on them: such a command prepares and
    /// launches on the caller's thread (never a device wait, L-16, nor a recovery call). Off
    /// (the default), a command wakes one of the lane's own threads. Only the embedding can
    /// say it holds.
    pub submitters_bound: bool,
    /// Who runs the lane's steps: the lane's own threads (the default) or the caller's.
    pub drive: Drive,
}

impl ServiceConfig {
    /// A config for `profile`: invariants checked, no callback, [`DEFAULT_WORKERS`], the
    /// lane's own threads.
    #[must_use]
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            check_invariants: true,
            on_outcome: None,
            workers: DEFAULT_WORKERS,
            submitters_bound: false,
            drive: Drive::LaneThreads,
        }
    }
}

impl fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceConfig")
            .field("profile", &self.profile)
            .field("check_invariants", &self.check_invariants)
            .field("on_outcome", &self.on_outcome.is_some())
            .field("workers", &self.workers)
            .field("submitters_bound", &self.submitters_bound)
            .field("drive", &self.drive)
            .finish()
    }
}

/// An accepted item: a run or a publication (they share one sequence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ItemId {
    /// A run.
    Run(RunId),
    /// A publication.
    Publication(PublicationId),
}

impl ItemId {
    /// The item's sequence number.
    #[must_use]
    pub const fn seq(self) -> u64 {
        match self {
            Self::Run(run) => run.0,
            Self::Publication(publication) => publication.0,
        }
    }
}

impl From<RunId> for ItemId {
    fn from(run: RunId) -> Self {
        Self::Run(run)
    }
}

impl From<PublicationId> for ItemId {
    fn from(publication: PublicationId) -> Self {
        Self::Publication(publication)
    }
}

/// A thread of the lane a shutdown left behind (detached): stuck inside a device call past
/// every bound; it ends when its call returns, touching nothing of the lane's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadLeft {
    /// The thread's name (`lane-waiter`: the completion waiter).
    pub thread: &'static str,
    /// Why the lane was lost to it.
    pub cause: LostCause,
}

impl fmt::Display for ThreadLeft {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the shutdown left the {} thread behind, stuck inside a device call ({}); it ends \
             when that call returns: force-reset the device before reusing it",
            self.thread, self.cause
        )
    }
}

/// What [`LaneHandle::shut_down`] ended with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shutdown {
    /// The lane's final close report.
    pub report: CloseReport,
    /// A thread the shutdown left behind instead of joining it (a completion waiter stuck in a
    /// device call), if any.
    pub left: Option<ThreadLeft>,
}

/// What the mailbox guards: the lane's steps, the latest clock reading of the thread running
/// them (commands from other threads are given at it), and the dispatch machine.
struct Shared {
    steps: LaneSteps,
    now: Timestamp,
    /// What the thread running the steps does next: every policy of the lane.
    dispatch: Dispatch,
}

impl Delivers for Shared {
    type Outcome = Report;
    type Work = Effect;
    type Answer = WorkerAnswer;
    type Wait = DeviceWait;
    type Waited = Wait;

    fn take_outcome(&mut self) -> Option<Report> {
        self.steps.poll_report()
    }

    fn seq(report: &Report) -> u64 {
        report.outcome.seq()
    }
}

fn lost(error: &DriverError) -> LostCause {
    LostCause::new(format!("driver error: {error}"))
}

thread_local! {
    /// The mailbox (its address) of the lane whose steps this thread runs now, if any: a
    /// shutdown asked from there (an outcome callback) would wait for this very thread.
    static STEPS_HERE: Cell<usize> = const { Cell::new(0) };
}

/// The identity [`STEPS_HERE`] holds for `mailbox`.
fn lane_id(mailbox: &Arc<Mailbox<Shared>>) -> usize {
    Arc::as_ptr(mailbox) as usize
}

/// Owned by the handles; dropping the last one shuts the lane down.
struct Inner {
    mailbox: Arc<Mailbox<Shared>>,
    /// The lane's steps, for any thread that may run them.
    engine: Arc<dyn RunsSteps>,
    /// Who runs the steps.
    drive: Drive,
    /// A command runs the steps on its caller's thread ([`ServiceConfig::submitters_bound`]).
    steps_here: bool,
    /// The lane's threads, joined once, under this lock (a second caller waits until the
    /// first has joined them all); what the first shutdown left behind.
    threads: Mutex<Threads>,
    /// The lane thread, the host workers and the completion waiter: a shutdown asked on one
    /// of them cannot join them.
    own: Vec<ThreadId>,
}

/// The lane's threads not joined yet (none where the caller drives the lane).
#[derive(Default)]
struct Threads {
    lane: Option<JoinHandle<()>>,
    /// The host workers (none unless the runner allows them and a factory was given).
    workers: Vec<JoinHandle<()>>,
    /// The completion waiter, and what its end closes (a receive sees it disconnected).
    waiter: Option<(JoinHandle<()>, mpsc::Receiver<()>)>,
    /// What the first shutdown left behind.
    left: Option<ThreadLeft>,
    /// The steps ran to their end on a caller's thread (the caller-driven shutdown is done).
    finished: bool,
}

impl Inner {
    /// Whether the calling thread is one of the lane's own, or is running its steps (an
    /// outcome callback): a shutdown there would wait for itself.
    fn on_own_thread(&self) -> bool {
        self.own.contains(&thread::current().id())
            || STEPS_HERE.with(Cell::get) == lane_id(&self.mailbox)
    }

    /// Asks the lane to close and end, then waits for it; returns what it left behind, or
    /// `None` on a thread of its own (it only asks). Once done, a later call returns at once.
    fn shut_down(&self) -> Option<Option<ThreadLeft>> {
        self.mailbox.shutdown();
        if self.on_own_thread() {
            return None;
        }
        let mut threads = lock(&self.threads);
        if self.drive == Drive::Caller {
            if !threads.finished {
                drive_to_end(&self.mailbox, &*self.engine);
                threads.finished = true;
            }
            return Some(threads.left.clone());
        }
        if let Some(lane) = threads.lane.take() {
            // A panic was recorded as the lost cause already.
            let _ = lane.join();
        }
        // The lane thread's end (a loss) stopped them, the waiter once the device call it may
        // be in returns (bounded by the run's deadline); a panic of theirs is the lost cause
        // already.
        for worker in threads.workers.drain(..) {
            let _ = worker.join();
        }
        if let Some((waiter, ended)) = threads.waiter.take() {
            // A stuck waiter's call ignores every bound it was given: wait a little, then
            // leave it.
            if self.engine.waiter_stuck()
                && ended.recv_timeout(STUCK_WAITER_JOIN) == Err(mpsc::RecvTimeoutError::Timeout)
            {
                drop(waiter);
                threads.left = Some(ThreadLeft {
                    thread: "lane-waiter",
                    cause: self
                        .mailbox
                        .lost()
                        .unwrap_or_else(|| LostCause::new(Loss::WaiterStuck.to_string())),
                });
            } else {
                let _ = waiter.join();
            }
        }
        Some(threads.left.clone())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Dropped on the lane's own thread (by the callback), it ends on its own.
        let _ = self.shut_down();
    }
}

/// When a thread that found nothing to do next looks again: the machine's next timer (on the
/// device's clock, read at `now` there), at most [`NOTICE_POLL_NS`] from `now` (a fault
/// notice wakes no one).
fn sleep_until(ran: Option<Ran>, now: Instant) -> Instant {
    let poll = Duration::from_nanos(NOTICE_POLL_NS);
    let wait = match ran {
        Some(Ran::Slept { until: Some(until), now: at }) => {
            Duration::from_nanos(until.since(at)).min(poll)
        }
        _ => poll,
    };
    now.checked_add(wait).unwrap_or(now)
}

/// Where the caller drives the lane: runs the steps on this thread until they end after the
/// shutdown (making each offered device wait here, sleeping while another caller is inside
/// one), then drops the device and the runner here.
fn drive_to_end(mailbox: &Mailbox<Shared>, engine: &dyn RunsSteps) {
    loop {
        let ran = engine.run_steps(Here::Own);
        match ran {
            Ok(Ran::Exited) | Err(_) => break,
            Ok(_) if mailbox.exited() || mailbox.lost().is_some() => break,
            Ok(_) => {}
        }
        if engine.make_offered(How::Block { until: None }) {
            continue;
        }
        let now = Instant::now();
        mailbox.caller_idle(None, Some(sleep_until(ran.ok(), now)));
    }
    engine.finish();
}

/// How often a sleeping lane thread (or a caller asleep in `wait`) looks for device fault
/// notices (L-19): notices come up to seconds late, so this adds little.
pub const NOTICE_POLL_NS: u64 = 50_000_000;
