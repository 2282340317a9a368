//! [`spawn`], the [`LaneHandle`], the lane's threads and the caller-driven mode.

use lane_core::{
    CloseReport, CodeRef, Effect, MAX_SLOTS, Outcome, Profile, ProfileSpec, PublicationId, RunId,
    RunRequest, RunState, RunStatus, Timestamp,
};
use lane_driver::dispatch::{Dispatch, Here, Loss, Next, Setting, WorkerAnswer};
use lane_driver::{
    CompletionWaiter, Concurrency, Device, DeviceWait, DriverError, Executor, HostWorker,
    LaneSteps, NoObserver, Reach, Report, Runner, Wait, run_device_wait, run_device_wait_as,
    run_host_work,
};
use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{self, JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use crate::error::{LostCause, ServiceError, WaitError};
use crate::mailbox::{Delivers, Mailbox};

/// The outcome callback: called with each outcome, in order, by the thread running the
/// lane's steps (see [`ServiceConfig::on_outcome`]).
pub type OutcomeCallback = Box<dyn FnMut(&Outcome) + Send + 'static>;

/// The default number of host workers (see [`ServiceConfig::workers`]): one can prepare the
/// next run while the other finalises the last.
pub const DEFAULT_WORKERS: usize = 2;

/// Delivered outcomes a lane holds, not taken yet (and, with a callback, not shown yet),
/// before its buffers grow: 16, about 2 KiB. The lane does not bound them (a caller that
/// never takes an outcome keeps them all); a caller that takes them as the documented loop
/// does leaves a few at most, so steady state allocates nothing.
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
    /// the runner on the calling thread; every [`LaneHandle`] call runs the lane's steps,
    /// runner callbacks included, on the thread that makes it; [`LaneHandle::wait`] makes the
    /// awaited run's device wait itself, bounded by its timeout; [`LaneHandle::poll_outcome`]
    /// looks at the run's boundary without waiting. A deadline that passes while no call is
    /// made is acted on at the next call. Every calling thread must be bound to the lane's
    /// device, as with [`ServiceConfig::submitters_bound`].
    Caller,
}

/// How [`spawn`] sets the lane up.
pub struct ServiceConfig {
    /// The lane's profile.
    pub profile: Profile,
    /// Whether to run `Lane::check_invariants` after every lane step (a broken invariant
    /// loses the lane with the violation as its cause).
    pub check_invariants: bool,
    /// Called with every outcome, in sequence order, by the thread that runs the lane's steps
    /// (the lane thread, the completion waiter, a host worker, a bound submitter, or, where
    /// the caller drives the lane, the caller), before it lets go of them and with no lock
    /// held: so it never runs beside a device or runner call of the lane, a force reset
    /// included, and one runs at a time. It sees the outcome; it does not take it: each
    /// outcome is still taken exactly once, by [`LaneHandle::poll_outcome`] or
    /// [`LaneHandle::wait`]. It may call any handle method but `wait` (which would block the
    /// lane's steps) and `shut_down` (refused there, [`ServiceError::OwnThread`]), and must
    /// not hold the last handle (the lane would never shut down).
    pub on_outcome: Option<OutcomeCallback>,
    /// How many host worker threads run the runner's prepare and finalise off the lane
    /// thread ([`spawn_with_workers`]), when the runner's
    /// [`concurrency`](Runner::concurrency) allows it. `0` keeps them with the lane's steps;
    /// [`spawn`], and a lane the caller drives, start none whatever this says.
    pub workers: usize,
    /// The threads that call [`LaneHandle::submit`] and [`LaneHandle::publish`] are bound to
    /// the lane's device (`aclrtSetDevice` on them), so the lane's steps, runner callbacks
    /// included, may run on them: a command to a lane that no thread is running the steps
    /// for prepares and launches on the caller's thread, and returns after those calls (never
    /// after a device wait, L-16; never after a recovery call: the drain, the force reset and
    /// the probe stay with the lane's own threads). Off (the default), a command wakes one of
    /// the lane's own threads. Binding a caller's thread is visible to the caller, so only the
    /// embedding can say it holds. A lane the caller drives runs its steps on every calling
    /// thread whatever this says.
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

/// A thread of the lane that a shutdown could not join: it is stuck inside a device call
/// past every bound it was given, and was left behind (detached) so the shutdown returns.
/// It ends when its call returns, and then touches nothing of the lane's.
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

/// What the mailbox guards: the lane's steps, the latest clock reading of the thread
/// running them (the time commands from other threads are given at: the device's clock is
/// read only by the thread running the steps), and the dispatch machine.
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
        let mut threads = self
            .threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
            if self.engine.waiter_stuck() {
                // Its call ignores every bound it was given: wait a little, then leave it.
                match ended.recv_timeout(STUCK_WAITER_JOIN) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        drop(waiter);
                        threads.left = Some(ThreadLeft {
                            thread: "lane-waiter",
                            cause: self
                                .mailbox
                                .lost()
                                .unwrap_or_else(|| LostCause::new(Loss::WaiterStuck.to_string())),
                        });
                    }
                    _ => {
                        let _ = waiter.join();
                    }
                }
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

/// A handle on a lane service: `Send + Sync + Clone`, usable from any thread. Every method
/// but [`wait`](Self::wait) returns without waiting for a device wait (L-16). Dropping the
/// last clone closes the lane, lets launched runs finish, and joins the lane's threads.
#[derive(Clone)]
pub struct LaneHandle {
    inner: Arc<Inner>,
}

impl fmt::Debug for LaneHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaneHandle")
            .field("drive", &self.inner.drive)
            .field("lost", &self.inner.mailbox.lost())
            .finish_non_exhaustive()
    }
}

impl LaneHandle {
    fn mailbox(&self) -> &Mailbox<Shared> {
        &self.inner.mailbox
    }

    /// Posts a command, then runs the lane's steps on this thread where the caller drives
    /// the lane or submitters are bound, unless another thread runs them (which takes the
    /// command before it lets go).
    fn command<T>(
        &self,
        apply: impl FnOnce(&mut Shared) -> Result<(T, Option<u64>), LostCause>,
    ) -> Result<T, LostCause> {
        let inner = &*self.inner;
        let caller = inner.drive == Drive::Caller;
        let result = self
            .mailbox()
            .command(!caller && !inner.steps_here, apply)?;
        // A loss here is the lane's, recorded in the mailbox: the next call reports it.
        if caller {
            let _ = inner.engine.run_steps(Here::Own);
            // A deadline passed while no call was made, or a recovery's drain: made now.
            if inner.engine.make_offered(How::Due) {
                let _ = inner.engine.run_steps(Here::Own);
            }
        } else if inner.steps_here {
            let _ = inner.engine.run_steps(Here::Submitter);
        }
        Ok(result)
    }

    /// Submits a run: its id, or the lane's refusal (nothing accepted), at once (with
    /// [`ServiceConfig::submitters_bound`], or where the caller drives the lane, once its
    /// prepare and launch are made, if no other thread runs the lane's steps).
    pub fn submit(&self, request: RunRequest) -> Result<RunId, ServiceError> {
        self.submit_noting(request, |_| {})
    }

    /// As [`submit`](Self::submit), and calls `accepted` with the run's id once the lane
    /// accepts it, before any of the run's runner callbacks can start (on this thread or
    /// another): a caller that keeps per-run data for its callbacks records it here. It runs
    /// under the lane's lock, so it must not call the lane.
    pub fn submit_noting(
        &self,
        request: RunRequest,
        accepted: impl FnOnce(RunId),
    ) -> Result<RunId, ServiceError> {
        let result = self.command(|shared| {
            let result = shared
                .steps
                .submit(shared.now, request)
                .map_err(|e| lost(&e))?;
            let seq = result.as_ref().ok().map(|run| run.0);
            if let Ok(run) = &result {
                accepted(*run);
            }
            Ok((result, seq))
        });
        Ok(result.map_err(ServiceError::Lost)??)
    }

    /// Publishes code: the publication's id, or the lane's refusal, at once.
    pub fn publish(&self, code: CodeRef) -> Result<PublicationId, ServiceError> {
        let result = self.command(|shared| {
            let result = shared
                .steps
                .publish(shared.now, code)
                .map_err(|e| lost(&e))?;
            let accepted = result.as_ref().ok().map(|publication| publication.0);
            Ok((result, accepted))
        });
        Ok(result.map_err(ServiceError::Lost)??)
    }

    /// Reports that the runtime reset the device (L-24, the runtime's recovery): the lane,
    /// which has made no device call since it told the runner `on_poison`, forgets its
    /// handles and reopens on fresh streams; submits are accepted again. At once.
    ///
    /// # Errors
    ///
    /// [`ServiceError::DeviceReset`] when the lane awaits no reset; [`ServiceError::Lost`].
    pub fn device_reset(&self) -> Result<(), ServiceError> {
        let result = self.command(|shared| {
            let result = shared
                .steps
                .device_reset(shared.now)
                .map_err(|e| lost(&e))?;
            Ok((result, None))
        });
        Ok(result.map_err(ServiceError::Lost)??)
    }

    /// Activates a run submitted held (`RunRequest::held`): it launches once its turn comes
    /// (it may be prepared already). At once.
    ///
    /// # Errors
    ///
    /// [`ServiceError::Control`] for a run not held, finished or unknown; [`ServiceError::Lost`].
    pub fn activate(&self, run: RunId) -> Result<(), ServiceError> {
        let result = self.command(|shared| {
            let result = shared
                .steps
                .activate(shared.now, run)
                .map_err(|e| lost(&e))?;
            Ok((result, None))
        });
        Ok(result.map_err(ServiceError::Lost)??)
    }

    /// Cancels an item that has not started: a run before its launch (queued, preparing,
    /// prepared, held, or its launch declined) or a publication before its upload. It gets a
    /// `Cancelled` outcome in its turn (L-2); a prepared run is finalised without copy-back
    /// first (L-7). At once.
    ///
    /// # Errors
    ///
    /// [`ServiceError::Control`]: a launched run (it finishes), an upload that started, an
    /// item with another outcome decided, or an unknown one; [`ServiceError::Lost`].
    pub fn cancel(&self, item: impl Into<ItemId>) -> Result<(), ServiceError> {
        let item = item.into();
        let result = self.command(|shared| {
            let result = shared
                .steps
                .cancel(shared.now, item.seq(), matches!(item, ItemId::Run(_)))
                .map_err(|e| lost(&e))?;
            Ok((result, None))
        });
        Ok(result.map_err(ServiceError::Lost)??)
    }

    /// Where an accepted run stands (`Lane::run_status`): queued, preparing, prepared,
    /// launched, or done (its outcome delivered and not taken yet), with its hold and its
    /// declined launches; `None` once its outcome was taken, or for an id the lane never
    /// gave. Never blocks behind the device.
    #[must_use]
    pub fn run_status(&self, run: RunId) -> Option<RunStatus> {
        self.mailbox().status(|shared, ready| {
            shared.steps.lane().run_status(run).or_else(|| {
                ready
                    .iter()
                    .find_map(|report: &Report| match report.outcome {
                        Outcome::Run(outcome) if outcome.run == run => Some(RunStatus {
                            state: RunState::Done,
                            held: false,
                            declines: outcome.declines,
                            key: outcome.key,
                        }),
                        _ => None,
                    })
            })
        })
    }

    /// Closes the lane (L-15) at once: launched runs still finish (on the lane's threads, or,
    /// where the caller drives the lane, at its later calls), queued ones get their cancelled
    /// outcomes. Closing twice is harmless.
    pub fn close(&self) -> Result<CloseReport, ServiceError> {
        self.command(|shared| {
            let report = shared.steps.close(shared.now).map_err(|e| lost(&e))?;
            Ok((report, None))
        })
        .map_err(ServiceError::Lost)
    }

    /// Takes the next outcome in the lane's order (sequence order, but for a run an earlier
    /// ordering key placed ahead, L-2), if one is delivered and not taken yet.
    /// Never blocks behind the device. After a loss the outcomes delivered before it can
    /// still be taken; [`lost`](Self::lost) tells a loss from "nothing yet". Where the caller
    /// drives the lane it runs the lane's steps first and looks at the awaited run's boundary
    /// without waiting (`aclrtQueryEventStatus`): a run found complete gets its verdict here
    /// (the record read; on a failure path, the device verdict's bounded synchronize).
    pub fn poll_outcome(&self) -> Option<Outcome> {
        self.poll_report().map(|report| report.outcome)
    }

    /// Takes every delivered outcome not taken yet, in the lane's order, without running the
    /// lane's steps: after [`LaneHandle::shut_down`], the outcomes the caller never took (a
    /// destroy reports them instead of dropping them silently).
    pub fn take_untaken(&self) -> Vec<Report> {
        self.mailbox().take_untaken()
    }

    /// As [`poll_outcome`](Self::poll_outcome), with the device's text about the failed call
    /// behind the outcome (`aclGetRecentErrMsg`), if it left one: the [`Report`]'s `Display`
    /// is the stable failure line with that text appended.
    pub fn poll_report(&self) -> Option<Report> {
        let inner = &*self.inner;
        if inner.drive == Drive::Caller && !inner.on_own_thread() {
            let _ = inner.engine.run_steps(Here::Own);
            if inner.engine.make_offered(How::Look) {
                let _ = inner.engine.run_steps(Here::Own);
            }
        }
        self.mailbox().poll()
    }

    /// Blocks the caller (only) until `item` has its outcome and takes it, or `timeout`
    /// passes, or the lane is lost. Where the caller drives the lane this thread runs the
    /// lane's steps and makes the awaited run's device wait itself, bounded by `timeout`:
    /// a wait cut short by it leaves the run live, and a later wait or poll gets its outcome.
    pub fn wait(&self, item: impl Into<ItemId>, timeout: Duration) -> Result<Outcome, WaitError> {
        self.wait_report(item, timeout).map(|report| report.outcome)
    }

    /// As [`wait`](Self::wait), with the device's text about the failed call behind the
    /// outcome (see [`poll_report`](Self::poll_report)).
    pub fn wait_report(
        &self,
        item: impl Into<ItemId>,
        timeout: Duration,
    ) -> Result<Report, WaitError> {
        let deadline = Instant::now().checked_add(timeout);
        let seq = item.into().seq();
        if self.inner.drive == Drive::Caller {
            return self.drive_until(seq, deadline);
        }
        self.mailbox().wait(seq, deadline)
    }

    /// The caller-driven wait: runs the steps and makes the offered device wait on this
    /// thread until item `seq` has its outcome; sleeps while another caller is inside the
    /// device wait.
    fn drive_until(&self, seq: u64, deadline: Option<Instant>) -> Result<Report, WaitError> {
        let mailbox = self.mailbox();
        let engine = &*self.inner.engine;
        // Whether this call made a device wait: one is made even at a deadline passed already
        // (capped at it), so a wait always looks once.
        let mut made = false;
        loop {
            if let Some(taken) = mailbox.try_take(seq) {
                return taken;
            }
            let ran = engine.run_steps(Here::Own);
            if let Some(taken) = mailbox.try_take(seq) {
                return taken;
            }
            let now = Instant::now();
            let passed = deadline.is_some_and(|deadline| now >= deadline);
            if !(passed && made) && engine.make_offered(How::Block { until: deadline }) {
                made = true;
                continue;
            }
            if passed {
                return mailbox
                    .try_take(seq)
                    .unwrap_or(Err(WaitError::TimedOut { item: seq }));
            }
            // Another caller is inside the device wait, or the steps are another thread's:
            // sleep until an outcome, the wait's end, the next timer or the deadline.
            let until = sleep_until(ran.ok(), now);
            let until = match deadline {
                Some(deadline) => deadline.min(until),
                None => until,
            };
            mailbox.caller_idle(Some(seq), Some(until));
        }
    }

    /// Why the lane ended, if it did (a panic, a driver error, a shutdown).
    #[must_use]
    pub fn lost(&self) -> Option<LostCause> {
        self.mailbox().lost()
    }

    /// Shuts the lane down whatever other clones exist, and returns its final close report:
    /// closes the lane, lets launched runs finish (each bounded by its deadline), destroys
    /// once more the streams its teardown left (S-7: the retry at the end, so a stream whose
    /// destroys failed gets its last chance), and joins the lane thread, the host workers and
    /// the completion waiter (where the caller drives the lane, this thread runs the steps to
    /// their end instead, and the device and the runner are dropped here). The report's
    /// `streams_left` names what still survives. A completion waiter the lane was lost to
    /// (stuck in a device call past its bound, L-20) is waited for about a second, then left
    /// behind: [`Shutdown::left`] names it. Afterwards every command and every wait on any
    /// clone is refused as lost, including a wait blocked meanwhile; outcomes delivered
    /// before can still be polled. A second call returns the same report once the threads
    /// have ended. Dropping the last handle does the same, without the report.
    ///
    /// # Errors
    ///
    /// [`ServiceError::OwnThread`] on one of the lane's own threads, or on a thread running
    /// its steps (the outcome callback, a host worker's runner call): it would wait for
    /// itself; the shutdown is asked for all the same.
    pub fn shut_down(&self) -> Result<Shutdown, ServiceError> {
        let Some(left) = self.inner.shut_down() else {
            return Err(ServiceError::OwnThread);
        };
        Ok(Shutdown {
            report: self
                .mailbox()
                .inspect(|shared| shared.steps.lane().close_report()),
            left,
        })
    }
}

/// When a thread that found nothing to do next looks again: the machine's next timer (on the
/// device's clock, read at `now` there), at most [`NOTICE_POLL_NS`] from `now` (a fault
/// notice wakes no one).
fn sleep_until(ran: Option<Ran>, now: Instant) -> Instant {
    let poll = Duration::from_nanos(NOTICE_POLL_NS);
    let wait = match ran {
        Some(Ran::Slept {
            until: Some(until),
            now: at,
        }) => Duration::from_nanos(until.since(at)).min(poll),
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

/// A host worker factory: called once on each worker thread with the worker's index, so it
/// binds the device there before it makes the worker.
type MakeWorker = Arc<dyn Fn(usize) -> Result<Box<dyn HostWorker>, String> + Send + Sync>;

/// Starts a lane and returns a handle on it. With [`Drive::LaneThreads`] (the default) it
/// spawns the lane thread: `make` runs there and builds the device and the runner there (its
/// error, or its panic, is returned from here); the executor that owns them stays there, and
/// is dropped there. Then the device's completion waiter ([`Device::completion_waiter`]) gets
/// a thread of its own, which makes every blocking wait of the lane; a device without one is
/// refused ([`ServiceError::Waiter`]). The lane's steps, and so its device and runner calls,
/// run on whichever of the lane's threads has the event (the waiter launches the run after
/// the one it saw complete), one thread at a time, which is why the device and the runner
/// must be `Send`. Runner host work stays with the thread running the steps (see
/// [`spawn_with_workers`]). With [`Drive::Caller`] no thread starts: `make` runs on this
/// thread, the completion waiter is kept for the callers' waits, and every handle call runs
/// the steps on its caller's thread.
pub fn spawn<D, R, F, E>(config: ServiceConfig, make: F) -> Result<LaneHandle, ServiceError>
where
    D: Device + Send + 'static,
    R: Runner<D> + Send + 'static,
    F: FnOnce() -> Result<(D, R), E> + Send + 'static,
    E: fmt::Display,
{
    start(config, make, None)
}

/// As [`spawn`], with the runner's prepare and finalise on [`ServiceConfig::workers`] host
/// worker threads when the runner's [`concurrency`](Runner::concurrency) says
/// `off_lane_thread` (else no worker starts and `make_worker` is never called; where the
/// caller drives the lane, none starts either).
///
/// `make_worker(index)` runs on worker `index`'s own thread, so it binds the device there
/// (`aclrtSetDevice`) before it returns the worker; its error, or its panic, fails the spawn
/// with [`ServiceError::Worker`] (and ends the lane and the workers already made). The lane's
/// prepare window is the smaller of the profile's and the runner's `prepares_at_once`. The
/// thread running the steps then makes only the launches, records, status reads, stream
/// calls and recovery; a worker posts its answer and runs the steps it starts itself unless
/// another thread runs them. A panicking worker loses the lane with the panic as its cause.
pub fn spawn_with_workers<D, R, F, E, W, WE>(
    config: ServiceConfig,
    make: F,
    make_worker: W,
) -> Result<LaneHandle, ServiceError>
where
    D: Device + Send + 'static,
    R: Runner<D> + Send + 'static,
    F: FnOnce() -> Result<(D, R), E> + Send + 'static,
    E: fmt::Display,
    W: Fn(usize) -> Result<Box<dyn HostWorker>, WE> + Send + Sync + 'static,
    WE: fmt::Display,
{
    let make_worker: MakeWorker =
        Arc::new(move |index| make_worker(index).map_err(|e| e.to_string()));
    start(config, make, Some(make_worker))
}

/// The lane's profile with its prepare window narrowed to what the runner allows.
fn narrowed(profile: Profile, concurrency: Concurrency) -> Profile {
    let window = profile
        .prepare_window()
        .min(concurrency.prepares_at_once.max(1));
    // Narrowing a valid window keeps it valid (1..=slots).
    Profile::custom(ProfileSpec {
        prepare_window: window,
        ..profile.spec()
    })
    .unwrap_or(profile)
}

/// What the lane thread hears from [`start`] once its runner is made: the engine to put its
/// executor in; `None`: a worker or the waiter failed to start, end now.
type Go<D, R> = Option<Arc<Engine<D, R>>>;

/// What the lane thread tells [`start`] once `make` returned: the runner's concurrency and
/// the device's completion waiter, or why there is no lane.
type Made = Result<(Concurrency, Box<dyn CompletionWaiter + Send>), ServiceError>;

/// The lane's steps over a mailbox and the dispatch machine in `setting`.
fn mailbox_for(
    profile: Profile,
    check_invariants: bool,
    concurrency: Concurrency,
    setting: Setting,
    notice_poll_ns: Option<u64>,
    announce: bool,
) -> Arc<Mailbox<Shared>> {
    let shared = Shared {
        steps: LaneSteps::new(narrowed(profile, concurrency)).check_invariants(check_invariants),
        now: Timestamp(0),
        dispatch: Dispatch::new(setting, notice_poll_ns),
    };
    // Each job is one slot's prepare or finalise: at most one per slot is out.
    Arc::new(Mailbox::new(
        shared,
        announce,
        usize::from(MAX_SLOTS),
        OUTCOMES_KEPT,
    ))
}

fn start<D, R, F, E>(
    config: ServiceConfig,
    make: F,
    make_worker: Option<MakeWorker>,
) -> Result<LaneHandle, ServiceError>
where
    D: Device + Send + 'static,
    R: Runner<D> + Send + 'static,
    F: FnOnce() -> Result<(D, R), E> + Send + 'static,
    E: fmt::Display,
{
    if config.drive == Drive::Caller {
        return start_here(config, make);
    }
    let ServiceConfig {
        profile,
        check_invariants,
        on_outcome,
        workers,
        submitters_bound,
        drive: _,
    } = config;
    let copies = profile.copies();
    let announcer = Announcer::new(on_outcome);
    let announce = announcer.callback.is_some();
    let (made_tx, made_rx) = mpsc::channel::<Made>();
    let (go_tx, go_rx) = mpsc::channel::<Go<D, R>>();
    let thread = thread::Builder::new()
        .name("lane".into())
        .spawn(move || {
            let mut made = Some(made_tx);
            let mut engine: Option<Arc<Engine<D, R>>> = None;
            let result = catch_unwind(AssertUnwindSafe(|| {
                let (mut device, runner) = match make() {
                    Ok(parts) => parts,
                    Err(error) => {
                        if let Some(tx) = made.take() {
                            let _ = tx.send(Err(ServiceError::Make(error.to_string())));
                        }
                        return Ok(());
                    }
                };
                let waiter = match device.completion_waiter() {
                    Ok(waiter) => waiter,
                    Err(code) => {
                        if let Some(tx) = made.take() {
                            let _ = tx.send(Err(ServiceError::Waiter(code.to_string())));
                        }
                        return Ok(());
                    }
                };
                if let Some(tx) = made.take() {
                    let _ = tx.send(Ok((runner.concurrency(), waiter)));
                }
                let Ok(Some(lane_engine)) = go_rx.recv() else {
                    return Ok(());
                };
                let lane_engine = &*engine.insert(lane_engine);
                lane_engine.install(Executor::with_copies(device, runner, copies));
                lane_thread(lane_engine)
            }));
            let cause = match result {
                Ok(Ok(())) => LostCause::new(
                    "the lane was shut down (its last handle dropped, or shut_down called)",
                ),
                Ok(Err(cause)) => cause,
                Err(payload) => {
                    let text = panic_text(payload.as_ref());
                    if let Some(tx) = made.take() {
                        let _ = tx.send(Err(ServiceError::Make(format!("panicked: {text}"))));
                    }
                    LostCause::new(format!("panic on the lane thread: {text}"))
                }
            };
            if let Some(engine) = engine {
                engine.mailbox.lose(cause);
                // Outcomes delivered before the end are still shown.
                engine.announce();
                // The device and the runner end on the thread that made them.
                drop(engine.uninstall());
            }
        })
        .map_err(|e| ServiceError::Thread(e.to_string()))?;
    let thread_id = thread.thread().id();
    let made = made_rx
        .recv()
        .unwrap_or_else(|_| Err(ServiceError::Make("the lane thread ended".into())));
    let (concurrency, waiter) = match made {
        Ok(made) => made,
        Err(error) => {
            let _ = thread.join();
            return Err(error);
        }
    };
    let make_worker = make_worker.filter(|_| concurrency.off_lane_thread && workers > 0);
    let off_lane = make_worker.is_some();
    let setting = if off_lane {
        Setting::WORKERS
    } else {
        Setting::WAITER
    };
    let mailbox = mailbox_for(
        profile,
        check_invariants,
        concurrency,
        setting,
        Some(NOTICE_POLL_NS),
        announce,
    );
    let engine = Arc::new(Engine {
        mailbox: Arc::clone(&mailbox),
        executor: Mutex::new(None),
        off_lane,
        announcer: Mutex::new(announcer),
        waiter: None,
        waiter_stuck: AtomicBool::new(false),
    });
    let workers = match make_worker {
        Some(make_worker) => match start_workers(&engine, &make_worker, workers) {
            Ok(workers) => workers,
            Err(error) => {
                let _ = go_tx.send(None);
                let _ = thread.join();
                return Err(error);
            }
        },
        None => Vec::new(),
    };
    let (ended_tx, ended_rx) = mpsc::channel::<()>();
    let waiter = {
        let engine: Arc<dyn RunsSteps> = Arc::clone(&engine) as Arc<dyn RunsSteps>;
        let mailbox = Arc::clone(&mailbox);
        thread::Builder::new()
            .name("lane-waiter".into())
            .spawn(move || {
                completion_waiter(&mailbox, &*engine, waiter);
                // The receiver sees the sender dropped: the waiter has ended.
                drop(ended_tx);
            })
    };
    let waiter = match waiter {
        Ok(waiter) => waiter,
        Err(e) => {
            let error = ServiceError::Thread(format!("the completion waiter: {e}"));
            mailbox.lose(LostCause::new(format!("the lane did not start: {error}")));
            for worker in workers {
                let _ = worker.join();
            }
            let _ = go_tx.send(None);
            let _ = thread.join();
            return Err(error);
        }
    };
    let _ = go_tx.send(Some(Arc::clone(&engine)));
    let own = std::iter::once(thread_id)
        .chain(workers.iter().map(|worker| worker.thread().id()))
        .chain(std::iter::once(waiter.thread().id()))
        .collect();
    Ok(LaneHandle {
        inner: Arc::new(Inner {
            mailbox,
            engine,
            drive: Drive::LaneThreads,
            steps_here: submitters_bound,
            threads: Mutex::new(Threads {
                lane: Some(thread),
                workers,
                waiter: Some((waiter, ended_rx)),
                left: None,
                finished: false,
            }),
            own,
        }),
    })
}

/// [`start`] where the caller drives the lane (L-23): `make` on this thread, no thread
/// started.
fn start_here<D, R, F, E>(config: ServiceConfig, make: F) -> Result<LaneHandle, ServiceError>
where
    D: Device + Send + 'static,
    R: Runner<D> + Send + 'static,
    F: FnOnce() -> Result<(D, R), E> + Send + 'static,
    E: fmt::Display,
{
    let ServiceConfig {
        profile,
        check_invariants,
        on_outcome,
        ..
    } = config;
    let (mut device, runner) = match catch_unwind(AssertUnwindSafe(make)) {
        Ok(Ok(parts)) => parts,
        Ok(Err(error)) => return Err(ServiceError::Make(error.to_string())),
        Err(payload) => {
            return Err(ServiceError::Make(format!(
                "panicked: {}",
                panic_text(payload.as_ref())
            )));
        }
    };
    let waiter = device
        .completion_waiter()
        .map_err(|code| ServiceError::Waiter(code.to_string()))?;
    let announcer = Announcer::new(on_outcome);
    let mailbox = mailbox_for(
        profile,
        check_invariants,
        runner.concurrency(),
        Setting::WAITER,
        None,
        announcer.callback.is_some(),
    );
    mailbox.callers_wait();
    let engine = Arc::new(Engine {
        mailbox: Arc::clone(&mailbox),
        executor: Mutex::new(Some(Executor::with_copies(
            device,
            runner,
            profile.copies(),
        ))),
        off_lane: false,
        announcer: Mutex::new(announcer),
        waiter: Some(Mutex::new(waiter)),
        waiter_stuck: AtomicBool::new(false),
    });
    Ok(LaneHandle {
        inner: Arc::new(Inner {
            mailbox,
            engine,
            drive: Drive::Caller,
            steps_here: false,
            threads: Mutex::new(Threads {
                lane: None,
                workers: Vec::new(),
                waiter: None,
                left: None,
                finished: false,
            }),
            own: Vec::new(),
        }),
    })
}

/// The completion waiter thread: takes each device wait offered (a run's completion, the
/// recovery drain) with the time its call starts, makes it through the device's
/// [`CompletionWaiter`], binding first, hands the answer back with its ticket, and then runs
/// the lane's steps itself unless another thread does (whoever has the event runs the steps:
/// the next run's launch is made here), until the lane is lost (the lane thread's end is
/// always a loss). A panic loses the lane with its text.
fn completion_waiter(
    mailbox: &Mailbox<Shared>,
    steps: &dyn RunsSteps,
    mut waiter: Box<dyn CompletionWaiter + Send>,
) {
    let result = catch_unwind(AssertUnwindSafe(|| {
        while mailbox.next_offer() {
            let at = waiter.now();
            let Some((ticket, wait)) = mailbox.take_wait(at.0, |_| true) else {
                continue;
            };
            // A failed wait's text is read on this thread, right after the wait.
            let waited = run_device_wait(&mut *waiter, &wait);
            mailbox.give_waited(ticket, waited);
            // A loss is recorded in the mailbox: the next look ends the loop.
            let _ = steps.run_steps(Here::Own);
        }
    }));
    if let Err(payload) = result {
        let text = panic_text(payload.as_ref());
        mailbox.lose(LostCause::new(format!(
            "panic on the completion waiter: {text}"
        )));
    }
}

/// Starts `count` host workers, each making its worker on its own thread; waits until every
/// one is made. On a failure the workers made so far end (the mailbox is lost) and are
/// joined.
fn start_workers<D, R>(
    engine: &Arc<Engine<D, R>>,
    make_worker: &MakeWorker,
    count: usize,
) -> Result<Vec<JoinHandle<()>>, ServiceError>
where
    D: Device + Send + 'static,
    R: Runner<D> + Send + 'static,
{
    let mailbox = &engine.mailbox;
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), ServiceError>>();
    let mut handles = Vec::with_capacity(count);
    let mut failure = None;
    for index in 0..count {
        let (engine, make_worker, ready) = (
            Arc::clone(engine) as Arc<dyn RunsSteps>,
            Arc::clone(make_worker),
            ready_tx.clone(),
        );
        let mailbox = Arc::clone(mailbox);
        let spawned = thread::Builder::new()
            .name(format!("lane-worker-{index}"))
            .spawn(move || host_worker(&mailbox, &*engine, &*make_worker, index, &ready));
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                failure = Some(ServiceError::Thread(e.to_string()));
                break;
            }
        }
    }
    drop(ready_tx);
    for _ in 0..handles.len() {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                failure.get_or_insert(error);
            }
            Err(_) => {
                failure.get_or_insert(ServiceError::Thread("a host worker ended".into()));
            }
        }
    }
    let Some(error) = failure else {
        return Ok(handles);
    };
    mailbox.lose(LostCause::new(format!("the lane did not start: {error}")));
    for handle in handles {
        let _ = handle.join();
    }
    Err(error)
}

/// A host worker thread: makes its worker (binding the device, in `make_worker`), says so,
/// then answers jobs until the workers retire, running the lane's steps after each answer
/// unless another thread does. A panic anywhere loses the lane with its text.
fn host_worker(
    mailbox: &Mailbox<Shared>,
    steps: &dyn RunsSteps,
    make_worker: &(dyn Fn(usize) -> Result<Box<dyn HostWorker>, String> + Send + Sync),
    index: usize,
    ready: &mpsc::Sender<Result<(), ServiceError>>,
) {
    let mut said = false;
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut worker = match make_worker(index) {
            Ok(worker) => worker,
            Err(text) => {
                said = true;
                let _ = ready.send(Err(ServiceError::Worker { index, text }));
                return;
            }
        };
        said = true;
        let _ = ready.send(Ok(()));
        while let Some(job) = mailbox.take_job() {
            // Unbound (its first job after a force reset, say) and unable to bind: the job
            // goes back, so the runner's prepare or finalise still runs, on a bound thread.
            let (answer, bound) = match worker.bind() {
                // A failed job's text is read on this thread, right after the job.
                Ok(()) => (
                    run_host_work(&mut *worker, job).map(WorkerAnswer::Answered),
                    true,
                ),
                Err(_) => (Some(WorkerAnswer::HandedBack(job)), false),
            };
            if let Some(answer) = answer {
                mailbox.give_answer(answer, !bound);
            }
            // A bound worker runs the steps its answer starts (the launch of the run it
            // prepared); an unbound one leaves them to a bound thread.
            if bound {
                let _ = steps.run_steps(Here::Own);
            }
        }
    }));
    if let Err(payload) = result {
        let text = panic_text(payload.as_ref());
        if said {
            mailbox.lose(LostCause::new(format!(
                "panic on host worker {index}: {text}"
            )));
        } else {
            let _ = ready.send(Err(ServiceError::Worker {
                index,
                text: format!("panicked: {text}"),
            }));
        }
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// How often a sleeping lane thread looks for device fault notices (L-19): notices come up
/// to seconds late, so this adds little, and an idle lane wakes only this often. A caller
/// asleep in a caller-driven `wait` looks as often.
pub const NOTICE_POLL_NS: u64 = 50_000_000;

/// How a caller that drives the lane makes an offered device wait ([`RunsSteps::make_offered`]).
#[derive(Clone, Copy, Debug)]
enum How {
    /// `wait`: block in it, up to the caller's deadline (`None`: the wait's own bound).
    Block { until: Option<Instant> },
    /// `poll`: look at a completion without waiting; make a drain.
    Look,
    /// A command: make only what is due, a drain, or a completion whose deadline passed
    /// (looked at first: it may have completed while no call was made).
    Due,
}

/// The lane's steps and its executor, shared by every thread that may run them: the lane
/// thread, the completion waiter, the host workers, the bound submitting threads and, where
/// the caller drives the lane, every caller. One runs them at a time (the mailbox's
/// `running` claim); the executor's lock is only ever taken by that thread, so it is never
/// contended, and neither is the outcome callback's.
struct Engine<D: Device, R: Runner<D>> {
    mailbox: Arc<Mailbox<Shared>>,
    /// Put in by the lane thread once it made the device and the runner, taken out by it
    /// at its end (they are dropped on the thread that made them); where the caller drives
    /// the lane, put in at the start and taken out by the shutdown.
    executor: Mutex<Option<Executor<D, R>>>,
    /// Runner host work goes to the host workers.
    off_lane: bool,
    /// The outcome callback, shown each delivered outcome by the thread holding the claim.
    announcer: Mutex<Announcer>,
    /// Where the caller drives the lane: the device's completion waiter, made once at the
    /// start, for the caller that takes an offered device wait (one at a time: the mailbox
    /// records who is inside).
    waiter: Option<Mutex<Box<dyn CompletionWaiter + Send>>>,
    /// The machine lost the lane to a completion waiter stuck in a call past its bound.
    waiter_stuck: AtomicBool,
}

/// What the last run of the steps left the thread to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ran {
    /// Another thread runs the steps (or the executor is not in yet): it takes what was
    /// posted.
    Elsewhere,
    /// Ran them to a sleep: nothing to do until work is posted or `until` (on the device's
    /// clock, read at `now`) passes.
    Slept {
        until: Option<Timestamp>,
        now: Timestamp,
    },
    /// Let go of them for the lane's own threads (a recovery call a submitter does not make).
    Left,
    /// Ran them to their end after the shutdown.
    Exited,
}

/// The lane's steps, type-erased for the threads that do not own the device's type.
trait RunsSteps: Send + Sync {
    /// Runs the lane's steps on the calling thread, as `here` may, until they sleep, unless
    /// another thread runs them. A loss (a driver error, a panic) is recorded in the mailbox
    /// and returned.
    fn run_steps(&self, here: Here) -> Result<Ran, LostCause>;
    /// Where the caller drives the lane: takes the offered device wait, if no caller is
    /// inside one and `how` takes it, makes it on this thread with no lock and no claim held
    /// (L-16), and hands the answer back; whether it made one.
    fn make_offered(&self, how: How) -> bool;
    /// Whether the lane was lost to a completion waiter stuck in a device call.
    fn waiter_stuck(&self) -> bool;
    /// Where the caller drives the lane: the steps ended; the device and the runner are
    /// dropped on this thread.
    fn finish(&self);
}

impl<D: Device + Send, R: Runner<D> + Send> RunsSteps for Engine<D, R> {
    fn run_steps(&self, here: Here) -> Result<Ran, LostCause> {
        if !self.mailbox.begin_steps()? {
            return Ok(Ran::Elsewhere);
        }
        let mut executor = self
            .executor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(executor) = executor.as_mut() else {
            // Not started yet: the lane thread runs the steps once it has its executor.
            self.mailbox.hand_steps_back(false);
            return Ok(Ran::Elsewhere);
        };
        let outer = STEPS_HERE.with(|cell| cell.replace(lane_id(&self.mailbox)));
        let result = catch_unwind(AssertUnwindSafe(|| self.steps(executor, here)));
        STEPS_HERE.with(|cell| cell.set(outer));
        let cause = match result {
            Ok(Ok(ran)) => return Ok(ran),
            Ok(Err(cause)) => cause,
            Err(payload) => {
                let name = thread::current()
                    .name()
                    .unwrap_or("a caller's thread")
                    .to_owned();
                let text = panic_text(payload.as_ref());
                LostCause::new(format!("panic on {}: {text}", thread_label(&name)))
            }
        };
        self.mailbox.lose(cause.clone());
        Err(cause)
    }

    fn make_offered(&self, how: How) -> bool {
        let Some(waiter) = &self.waiter else {
            return false;
        };
        if !self.mailbox.offer_free() {
            return false;
        }
        // Uncontended: the caller inside a wait lets go of it before it answers.
        let mut waiter = waiter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let at = waiter.now();
        let due = |wait: &DeviceWait| match (how, wait) {
            (How::Due, DeviceWait::Completion { deadline, .. }) => at >= *deadline,
            _ => true,
        };
        let Some((ticket, wait)) = self.mailbox.take_wait(at.0, due) else {
            return false;
        };
        let reach = match (how, wait) {
            (_, DeviceWait::Drain { .. }) => Reach::Waiter,
            (How::Block { until }, DeviceWait::Completion { .. }) => Reach::Wait {
                // The caller's deadline on the lane's clock.
                cap: until.map(|until| {
                    let left = until.saturating_duration_since(Instant::now());
                    at.after_ns(u64::try_from(left.as_nanos()).unwrap_or(u64::MAX))
                }),
            },
            (How::Look | How::Due, DeviceWait::Completion { .. }) => Reach::Look,
        };
        let waited = catch_unwind(AssertUnwindSafe(|| {
            run_device_wait_as(&mut **waiter, &wait, reach)
        }));
        drop(waiter);
        match waited {
            Ok(waited) => self.mailbox.give_waited(ticket, waited),
            Err(payload) => {
                let text = panic_text(payload.as_ref());
                self.mailbox.lose(LostCause::new(format!(
                    "panic in a device wait on {}: {text}",
                    thread_label(thread::current().name().unwrap_or("a caller's thread"))
                )));
            }
        }
        true
    }

    fn waiter_stuck(&self) -> bool {
        self.waiter_stuck.load(Ordering::SeqCst)
    }

    fn finish(&self) {
        self.announce();
        drop(self.uninstall());
    }
}

/// How a panic's lost cause names the thread it happened on.
fn thread_label(name: &str) -> String {
    match name {
        "lane" => "the lane thread".to_owned(),
        "lane-waiter" => "the completion waiter".to_owned(),
        _ => match name.strip_prefix("lane-worker-") {
            Some(index) => format!("host worker {index}"),
            None => format!("the calling thread {name:?}"),
        },
    }
}

impl<D: Device, R: Runner<D>> Engine<D, R> {
    /// Puts the lane thread's executor in: the steps can run from now on.
    fn install(&self, executor: Executor<D, R>) {
        *self
            .executor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(executor);
    }

    /// Takes the executor out at the lane's end.
    fn uninstall(&self) -> Option<Executor<D, R>> {
        self.executor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Shows the outcome callback the outcomes delivered since the last call, with no lock
    /// held: called by the thread holding the claim, so it never runs beside a device or
    /// runner call of the lane (decision 4 of issue 44: a force reset included).
    fn announce(&self) {
        let mut announcer = self
            .announcer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Announcer { callback, shown } = &mut *announcer;
        if let Some(callback) = callback {
            self.mailbox.take_unannounced(shown);
            for report in shown.drain(..) {
                callback(&report.outcome);
            }
        }
    }

    /// Feeds what was pushed and polls the dispatch machine under the lock, handing out what
    /// it hands out, then does what it asks of this thread with the lock released, until the
    /// machine sleeps (and nothing was posted meanwhile), leaves or ends. Delivered outcomes
    /// are shown the callback before the next call and before the claim is let go.
    fn steps(&self, executor: &mut Executor<D, R>, here: Here) -> Result<Ran, LostCause> {
        let mailbox = &*self.mailbox;
        let off_lane = self.off_lane;
        // The answer of the effect executed last: fed under the lock of the next decision, so
        // each effect costs one hold of the lane's lock, not two.
        let mut answer = None;
        loop {
            let now = executor.now();
            let ((next, retire, closed), to_announce) = mailbox.step(|shared, cx| {
                shared.now = now;
                let dispatch = &mut shared.dispatch;
                let next = (|| {
                    if let Some(answer) = answer.take() {
                        shared.steps.feed(now, answer)?;
                    }
                    // What the other threads did since the last step, in the order they did
                    // it: a waiter's answer predates the wait it took after it.
                    while let Some(answer) = cx.answer() {
                        dispatch.handle_answer(answer);
                    }
                    if let Some((ticket, waited)) = cx.waited() {
                        dispatch.handle_waited(ticket, waited);
                    }
                    if let Some((ticket, at)) = cx.inside() {
                        dispatch.handle_wait_started(ticket, Timestamp(at))?;
                    }
                    if cx.shutdown {
                        dispatch.handle_shutdown();
                    }
                    loop {
                        match dispatch.poll(now, here, &mut shared.steps, executor)? {
                            Next::ToWorker(job) => cx.dispatch(job),
                            Next::ToWaiter { ticket, wait } => cx.hand_wait(ticket, wait),
                            other => break Ok(other),
                        }
                    }
                })();
                // A wait the machine no longer offers is withdrawn in this same hold: a
                // waiter that has not taken it never does.
                if dispatch.offered().is_none() {
                    cx.withdraw_wait();
                }
                let closed = shared.steps.lane().state().is_closed();
                (next, off_lane && cx.out() == 0 && closed, closed)
            })?;
            if retire {
                mailbox.retire_workers();
            }
            if to_announce {
                self.announce();
            }
            let next = next.map_err(|e: DriverError| lost(&e))?;
            if closed {
                // L-15: once closed, the slots' events and buffers go back (a no-op once they
                // have), before the executor acts again.
                executor.release_slot_resources(&mut NoObserver);
            }
            match next {
                Next::Execute(effect) => {
                    answer = executor
                        .execute(effect, &mut NoObserver)
                        .map_err(|e| lost(&e))?;
                }
                Next::Sleep(until) => {
                    if mailbox.end_steps(false) {
                        return Ok(Ran::Slept { until, now });
                    }
                }
                Next::Leave => {
                    mailbox.hand_steps_back(true);
                    return Ok(Ran::Left);
                }
                Next::Exit => {
                    executor.release_slot_resources(&mut NoObserver);
                    self.announce();
                    mailbox.end_steps(true);
                    return Ok(Ran::Exited);
                }
                Next::Lose(loss) => {
                    if loss == Loss::WaiterStuck {
                        self.waiter_stuck.store(true, Ordering::SeqCst);
                    }
                    self.announce();
                    return Err(LostCause::new(loss.to_string()));
                }
                Next::WaitHere { .. } | Next::ToWorker(_) | Next::ToWaiter { .. } => {
                    return Err(LostCause::new(
                        "driver error: the dispatch machine asked a lane with a waiter to wait \
                         here, or handed out past the step",
                    ));
                }
            }
        }
    }
}

/// The lane thread: runs the lane's steps when work is posted that no other thread runs
/// them for, and sleeps until the next timer of the dispatch machine (at least every
/// [`NOTICE_POLL_NS`]: a fault notice wakes no one), until a thread runs the steps to their
/// end after the shutdown.
fn lane_thread<D: Device + Send, R: Runner<D> + Send>(
    engine: &Engine<D, R>,
) -> Result<(), LostCause> {
    let mailbox = &*engine.mailbox;
    loop {
        let ran = engine.run_steps(Here::Own)?;
        if ran == Ran::Exited || mailbox.exited() {
            return Ok(());
        }
        mailbox.idle(Some(sleep_until(Some(ran), Instant::now())));
        if mailbox.exited() {
            return Ok(());
        }
    }
}

/// The outcome callback, and the buffer the outcomes it is shown pass through (swapped with
/// the mailbox's, so neither reallocates in steady state).
struct Announcer {
    callback: Option<OutcomeCallback>,
    shown: VecDeque<Report>,
}

impl Announcer {
    fn new(callback: Option<OutcomeCallback>) -> Self {
        // It swaps buffers with the mailbox's, so it starts at the same size.
        let kept = if callback.is_some() { OUTCOMES_KEPT } else { 0 };
        Self {
            callback,
            shown: VecDeque::with_capacity(kept),
        }
    }
}
