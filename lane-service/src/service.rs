//! [`spawn`], the [`LaneHandle`] and the lane thread's loop.

use lane_core::{
    CloseReport, CodeRef, Effect, MAX_SLOTS, Outcome, Profile, ProfileSpec, PublicationId, RunId,
    RunRequest, Timestamp,
};
use lane_driver::dispatch::{Dispatch, Helpers, Next, Setting, WorkerAnswer};
use lane_driver::{
    CompletionWaiter, Concurrency, Device, DeviceWait, DriverError, Executor, HostWorker,
    LaneSteps, NoObserver, Report, Runner, Wait, run_device_wait, run_host_work,
};
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{self, JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use crate::error::{LostCause, ServiceError, WaitError};
use crate::mailbox::{Delivers, Mailbox, Step};

/// The outcome callback: called on the lane thread with each outcome, in order (see
/// [`ServiceConfig::on_outcome`]).
pub type OutcomeCallback = Box<dyn FnMut(&Outcome) + Send + 'static>;

/// The default number of host workers (see [`ServiceConfig::workers`]): one can prepare the
/// next run while the other finalises the last.
pub const DEFAULT_WORKERS: usize = 2;

/// Delivered outcomes a lane holds, not taken yet (and, with a callback, not shown yet),
/// before its buffers grow: 16, about 2 KiB. The lane does not bound them (a caller that
/// never takes an outcome keeps them all); a caller that takes them as the documented loop
/// does leaves a few at most, so steady state allocates nothing.
const OUTCOMES_KEPT: usize = 16;

/// How [`spawn`] sets the lane up.
pub struct ServiceConfig {
    /// The lane's profile.
    pub profile: Profile,
    /// Whether to run `Lane::check_invariants` after every lane step (a broken invariant
    /// loses the lane with the violation as its cause).
    pub check_invariants: bool,
    /// Called on the lane thread with every outcome, in sequence order, after the outcome
    /// is queued and with no lock held. It sees the outcome; it does not take it: each
    /// outcome is still taken exactly once, by [`LaneHandle::poll_outcome`] or
    /// [`LaneHandle::wait`]. It may call any handle method but `wait` (which would block the
    /// lane thread), and must not hold the last handle (the lane would never shut down).
    /// Each outcome another thread delivers (the completion waiter delivers every run's)
    /// then wakes the lane thread for it, so leave it `None` unless it is needed.
    pub on_outcome: Option<OutcomeCallback>,
    /// How many host worker threads run the runner's prepare and finalise off the lane
    /// thread ([`spawn_with_workers`]), when the runner's
    /// [`concurrency`](Runner::concurrency) allows it. `0` keeps them on the lane thread;
    /// [`spawn`] starts none whatever this says.
    pub workers: usize,
    /// The threads that call [`LaneHandle::submit`] and [`LaneHandle::publish`] are bound to
    /// the lane's device (`aclrtSetDevice` on them), so the lane's steps, runner callbacks
    /// included, may run on them: a command to a lane that no thread is running the steps
    /// for prepares and launches on the caller's thread, and returns after those calls (never
    /// after a device wait, L-16). Off (the default), a command wakes one of the lane's own
    /// threads. Binding a caller's thread is visible to the caller, so only the embedding can
    /// say it holds.
    pub submitters_bound: bool,
}

impl ServiceConfig {
    /// A config for `profile`: invariants checked, no callback, [`DEFAULT_WORKERS`].
    #[must_use]
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            check_invariants: true,
            on_outcome: None,
            workers: DEFAULT_WORKERS,
            submitters_bound: false,
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

/// What the mailbox guards: the lane's steps, the latest clock reading of the thread
/// running them (the time commands from other threads are given at: the device's clock is
/// read only by the thread running the steps), and the dispatch machine.
struct Shared {
    steps: LaneSteps,
    now: Timestamp,
    /// What the thread running the steps does next: every policy of the threaded lane.
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

impl Helpers for Step<'_, Shared> {
    fn answer(&mut self) -> Option<WorkerAnswer> {
        Step::answer(self)
    }
    fn waited(&mut self) -> Option<(u64, Wait)> {
        Step::waited(self)
    }
    fn dispatch(&mut self, job: Effect) {
        Step::dispatch(self, job);
    }
    fn hand_wait(&mut self, ticket: u64, wait: DeviceWait) {
        Step::hand_wait(self, ticket, wait);
    }
    fn withdraw_wait(&mut self) {
        Step::withdraw_wait(self);
    }
    fn waiter_inside(&self) -> bool {
        Step::waiter_inside(self)
    }
    fn jobs_out(&self) -> usize {
        self.out()
    }
    fn shutdown(&self) -> bool {
        self.shutdown
    }
}

fn lost(error: &DriverError) -> LostCause {
    LostCause::new(format!("driver error: {error}"))
}

/// Owned by the handles; dropping the last one shuts the lane down.
struct Inner {
    mailbox: Arc<Mailbox<Shared>>,
    /// The lane's steps, for a command on a submitting thread to run
    /// ([`ServiceConfig::submitters_bound`]); `None`: commands wake the lane's own threads.
    steps_here: Option<Arc<dyn RunsSteps>>,
    /// The lane's threads, joined once, under this lock (a second caller waits until the
    /// first has joined them all).
    threads: Mutex<Threads>,
    /// The lane thread, the host workers and the completion waiter: a shutdown asked on one
    /// of them cannot join them.
    own: Vec<ThreadId>,
}

/// The lane's threads not joined yet.
struct Threads {
    lane: Option<JoinHandle<()>>,
    /// The host workers (none unless the runner allows them and a factory was given).
    workers: Vec<JoinHandle<()>>,
    /// The completion waiter.
    waiter: Option<JoinHandle<()>>,
}

impl Inner {
    /// Asks the lane thread to close the lane and end, then joins every thread of the lane;
    /// returns whether they are joined (`false` on one of the lane's own threads, which would
    /// join itself: it only asks). Once joined, a later call returns at once.
    fn shut_down(&self) -> bool {
        self.mailbox.shutdown();
        if self.own.contains(&thread::current().id()) {
            return false;
        }
        let mut threads = self
            .threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
        if let Some(waiter) = threads.waiter.take() {
            let _ = waiter.join();
        }
        true
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Dropped on the lane's own thread (by the callback), it ends on its own.
        self.shut_down();
    }
}

/// A handle on a lane service: `Send + Sync + Clone`, usable from any thread. Every method
/// but [`wait`](Self::wait) returns without waiting for a device call (L-16). Dropping the
/// last clone closes the lane, lets launched runs finish, and joins the lane thread.
#[derive(Clone)]
pub struct LaneHandle {
    inner: Arc<Inner>,
}

impl fmt::Debug for LaneHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaneHandle")
            .field("lost", &self.inner.mailbox.lost())
            .finish_non_exhaustive()
    }
}

impl LaneHandle {
    fn mailbox(&self) -> &Mailbox<Shared> {
        &self.inner.mailbox
    }

    /// Posts a command; with [`ServiceConfig::submitters_bound`] the caller then runs the
    /// lane's steps unless another thread does (which takes the command before it lets go).
    fn command<T>(
        &self,
        apply: impl FnOnce(&mut Shared) -> Result<(T, Option<u64>), LostCause>,
    ) -> Result<T, LostCause> {
        let here = self.inner.steps_here.as_deref();
        let result = self.mailbox().command(here.is_none(), apply)?;
        if let Some(steps) = here {
            // A loss here is the lane's, recorded in the mailbox: the next call reports it.
            let _ = steps.run_steps();
        }
        Ok(result)
    }

    /// Submits a run: its id, or the lane's refusal (nothing accepted), at once (with
    /// [`ServiceConfig::submitters_bound`], once its prepare and launch are made, if no other
    /// thread runs the lane's steps).
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

    /// Closes the lane (L-15) at once: launched runs still finish on the lane thread,
    /// queued ones get their cancelled outcomes. Closing twice is harmless.
    pub fn close(&self) -> Result<CloseReport, ServiceError> {
        self.command(|shared| {
            let report = shared.steps.close(shared.now).map_err(|e| lost(&e))?;
            Ok((report, None))
        })
        .map_err(ServiceError::Lost)
    }

    /// Takes the next outcome in sequence order, if one is delivered and not taken yet.
    /// Never blocks behind the device. After a loss the outcomes delivered before it can
    /// still be taken; [`lost`](Self::lost) tells a loss from "nothing yet".
    pub fn poll_outcome(&self) -> Option<Outcome> {
        self.poll_report().map(|report| report.outcome)
    }

    /// As [`poll_outcome`](Self::poll_outcome), with the device's text about the failed call
    /// behind the outcome (`aclGetRecentErrMsg`), if it left one: the [`Report`]'s `Display`
    /// is the stable failure line with that text appended.
    pub fn poll_report(&self) -> Option<Report> {
        self.mailbox().poll()
    }

    /// Blocks the caller (only) until `item` has its outcome and takes it, or `timeout`
    /// passes, or the lane is lost.
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
        self.mailbox().wait(item.into().seq(), deadline)
    }

    /// Why the lane thread ended, if it did (a panic, a driver error, a shutdown).
    #[must_use]
    pub fn lost(&self) -> Option<LostCause> {
        self.mailbox().lost()
    }

    /// Shuts the lane down whatever other clones exist, and returns its final close report:
    /// closes the lane, lets launched runs finish (each bounded by its deadline), destroys
    /// once more the streams its teardown left (S-7: the retry at the end, so a stream whose
    /// destroys failed gets its last chance), and joins the lane thread, the host workers and
    /// the completion waiter. The report's `streams_left` names what still survives. Afterwards
    /// every command and every wait on any clone is refused as lost, including a wait blocked
    /// meanwhile; outcomes delivered before can still be polled. A second call returns the
    /// same report once the threads have ended. Dropping the last handle does the same,
    /// without the report.
    ///
    /// # Errors
    ///
    /// [`ServiceError::OwnThread`] on one of the lane's own threads (the outcome callback, a
    /// host worker): it would join itself; the shutdown is asked for all the same.
    pub fn shut_down(&self) -> Result<CloseReport, ServiceError> {
        if !self.inner.shut_down() {
            return Err(ServiceError::OwnThread);
        }
        Ok(self
            .mailbox()
            .inspect(|shared| shared.steps.lane().close_report()))
    }
}

/// A host worker factory: called once on each worker thread with the worker's index, so it
/// binds the device there before it makes the worker.
type MakeWorker = Arc<dyn Fn(usize) -> Result<Box<dyn HostWorker>, String> + Send + Sync>;

/// Spawns the lane thread and returns a handle on its lane. `make` runs on the lane thread
/// and builds the device and the runner there (its error, or its panic, is returned from
/// here); the executor that owns them stays there, and is dropped there. Then the device's
/// completion waiter ([`Device::completion_waiter`]) gets a thread of its own, which makes
/// every blocking wait of the lane; a device without one is refused
/// ([`ServiceError::Waiter`]). The lane's steps, and so its device and runner calls, run on
/// whichever of the lane's threads has the event (the waiter launches the run after the one
/// it saw complete), one thread at a time, which is why the device and the runner must be
/// `Send`. Runner host work stays with the thread running the steps (see
/// [`spawn_with_workers`]).
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
/// `off_lane_thread` (else no worker starts and `make_worker` is never called).
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
    let ServiceConfig {
        profile,
        check_invariants,
        on_outcome,
        workers,
        submitters_bound,
    } = config;
    let copies = profile.copies();
    let announce = on_outcome.is_some();
    let mut announcer = Announcer::new(on_outcome);
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
                lane_thread(lane_engine, &mut announcer)
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
    let shared = Shared {
        steps: LaneSteps::new(narrowed(profile, concurrency)).check_invariants(check_invariants),
        now: Timestamp(0),
        dispatch: Dispatch::new(setting, Some(NOTICE_POLL_NS)),
    };
    // Each job is one slot's prepare or finalise: at most one per slot is out.
    let mailbox = Arc::new(Mailbox::new(
        shared,
        announce,
        usize::from(MAX_SLOTS),
        OUTCOMES_KEPT,
    ));
    let engine = Arc::new(Engine {
        mailbox: Arc::clone(&mailbox),
        executor: Mutex::new(None),
        off_lane,
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
    let waiter = {
        let engine: Arc<dyn RunsSteps> = Arc::clone(&engine) as Arc<dyn RunsSteps>;
        let mailbox = Arc::clone(&mailbox);
        thread::Builder::new()
            .name("lane-waiter".into())
            .spawn(move || completion_waiter(&mailbox, &*engine, waiter))
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
    let steps_here = submitters_bound.then(|| Arc::clone(&engine) as Arc<dyn RunsSteps>);
    let _ = go_tx.send(Some(engine));
    let own = std::iter::once(thread_id)
        .chain(workers.iter().map(|worker| worker.thread().id()))
        .chain(std::iter::once(waiter.thread().id()))
        .collect();
    Ok(LaneHandle {
        inner: Arc::new(Inner {
            mailbox,
            steps_here,
            threads: Mutex::new(Threads {
                lane: Some(thread),
                workers,
                waiter: Some(waiter),
            }),
            own,
        }),
    })
}

/// The completion waiter thread: makes each device wait handed to it (a run's completion,
/// the recovery drain) through the device's [`CompletionWaiter`], binding first, hands the
/// answer back with its ticket, and then runs the lane's steps itself unless another thread
/// does (whoever has the event runs the steps: the next run's launch is made here), until
/// the lane is lost (the lane thread's end is always a loss). A panic loses the lane with
/// its text.
fn completion_waiter(
    mailbox: &Mailbox<Shared>,
    steps: &dyn RunsSteps,
    mut waiter: Box<dyn CompletionWaiter + Send>,
) {
    let result = catch_unwind(AssertUnwindSafe(|| {
        while let Some((ticket, wait)) = mailbox.take_wait() {
            // A failed wait's text is read on this thread, right after the wait.
            let waited = run_device_wait(&mut *waiter, &wait);
            mailbox.give_waited(ticket, waited);
            // A loss is recorded in the mailbox: the next take_wait ends the loop.
            let _ = steps.run_steps();
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
                let _ = steps.run_steps();
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
/// to seconds late, so this adds little, and an idle lane wakes only this often.
pub const NOTICE_POLL_NS: u64 = 50_000_000;

/// The lane's steps and its executor, shared by every thread that may run them: the lane
/// thread, the completion waiter, the host workers and, with
/// [`ServiceConfig::submitters_bound`], the submitting threads. One runs them at a time
/// (the mailbox's `running` claim); the executor's lock is only ever taken by that thread,
/// so it is never contended.
struct Engine<D: Device, R: Runner<D>> {
    mailbox: Arc<Mailbox<Shared>>,
    /// Put in by the lane thread once it made the device and the runner, taken out by it
    /// at its end (they are dropped on the thread that made them).
    executor: Mutex<Option<Executor<D, R>>>,
    /// Runner host work goes to the host workers.
    off_lane: bool,
}

/// What the lane thread's last run of the steps left it to do.
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
    /// Ran them to their end after the shutdown.
    Exited,
}

/// The lane's steps, type-erased for the threads that do not own the device's type.
trait RunsSteps: Send + Sync {
    /// Runs the lane's steps on the calling thread until they sleep, unless another thread
    /// runs them. A loss (a driver error, a panic) is recorded in the mailbox and returned.
    fn run_steps(&self) -> Result<Ran, LostCause>;
}

impl<D: Device + Send, R: Runner<D> + Send> RunsSteps for Engine<D, R> {
    fn run_steps(&self) -> Result<Ran, LostCause> {
        if !self.mailbox.begin_steps()? {
            return Ok(Ran::Elsewhere);
        }
        let mut executor = self
            .executor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(executor) = executor.as_mut() else {
            // Not started yet: the lane thread runs the steps once it has its executor.
            self.mailbox.hand_steps_back();
            return Ok(Ran::Elsewhere);
        };
        let result = catch_unwind(AssertUnwindSafe(|| self.steps(executor)));
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
}

/// How a panic's lost cause names the thread it happened on.
fn thread_label(name: &str) -> String {
    match name {
        "lane" => "the lane thread".to_owned(),
        "lane-waiter" => "the completion waiter".to_owned(),
        _ => match name.strip_prefix("lane-worker-") {
            Some(index) => format!("host worker {index}"),
            None => format!("the submitting thread {name:?}"),
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

    /// Takes the executor out at the lane thread's end.
    fn uninstall(&self) -> Option<Executor<D, R>> {
        self.executor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// One dispatch decision under the lock, then what it asks this thread to do with the
    /// lock released, until the machine sleeps (and nothing was posted meanwhile) or ends.
    fn steps(&self, executor: &mut Executor<D, R>) -> Result<Ran, LostCause> {
        let mailbox = &*self.mailbox;
        let off_lane = self.off_lane;
        // The answer of the effect executed last: fed under the lock of the next decision, so
        // each effect costs one hold of the lane's lock, not two.
        let mut answer = None;
        loop {
            let now = executor.now();
            let (next, retire, closed) = mailbox.step(|shared, cx| {
                shared.now = now;
                let fed = answer
                    .take()
                    .map_or(Ok(()), |answer| shared.steps.feed(now, answer));
                let next =
                    fed.and_then(|()| shared.dispatch.decide(now, &mut shared.steps, cx, executor));
                let closed = shared.steps.lane().state().is_closed();
                (next, off_lane && cx.out() == 0 && closed, closed)
            })?;
            if retire {
                mailbox.retire_workers();
            }
            let next = next.map_err(|e| lost(&e))?;
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
                Next::Exit => {
                    executor.release_slot_resources(&mut NoObserver);
                    mailbox.end_steps(true);
                    return Ok(Ran::Exited);
                }
                Next::Lose(loss) => return Err(LostCause::new(loss.to_string())),
                Next::WaitHere { .. } => {
                    return Err(LostCause::new(
                        "driver error: the dispatch machine asked a threaded lane to wait here",
                    ));
                }
            }
        }
    }
}

/// The lane thread: runs the lane's steps when work is posted that no other thread runs
/// them for, shows the outcome callback each delivered outcome, and sleeps until the next
/// timer of the dispatch machine (at least every [`NOTICE_POLL_NS`]: a fault notice wakes no
/// one), until a thread runs the steps to their end after the shutdown.
fn lane_thread<D: Device + Send, R: Runner<D> + Send>(
    engine: &Engine<D, R>,
    announcer: &mut Announcer,
) -> Result<(), LostCause> {
    let mailbox = &*engine.mailbox;
    loop {
        let ran = engine.run_steps()?;
        announce(mailbox, announcer);
        let until = match ran {
            Ran::Exited => return Ok(()),
            Ran::Slept { until, now } => {
                // The bound is on the device's clock: as a real-time instant from `now`,
                // capped so the notice ring is looked at.
                let poll = now.after_ns(NOTICE_POLL_NS);
                let until = until.map_or(poll, |until| until.min(poll));
                Instant::now().checked_add(Duration::from_nanos(until.since(now)))
            }
            Ran::Elsewhere => {
                if mailbox.exited() {
                    // The thread that ran the steps to their end may have delivered outcomes
                    // after the announce above: each is still shown before this thread ends.
                    announce(mailbox, announcer);
                    return Ok(());
                }
                Instant::now().checked_add(Duration::from_nanos(NOTICE_POLL_NS))
            }
        };
        mailbox.idle(until);
        if mailbox.exited() {
            announce(mailbox, announcer);
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

/// Shows the callback the outcomes delivered since the last call, with no lock held.
fn announce(mailbox: &Mailbox<Shared>, announcer: &mut Announcer) {
    if let Some(callback) = &mut announcer.callback {
        mailbox.take_unannounced(&mut announcer.shown);
        for report in announcer.shown.drain(..) {
            callback(&report.outcome);
        }
    }
}
