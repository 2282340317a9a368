//! [`spawn`], the [`LaneHandle`] and the lane thread's loop.

use lane_core::{
    CloseReport, CodeRef, Effect, Event, LaneState, MAX_SLOTS, Outcome, Profile, ProfileSpec,
    PublicationId, RunId, RunRequest, Timestamp,
};
use lane_driver::{
    Concurrency, Device, DriverError, Executor, HostWorker, LaneSteps, NoObserver, Report, Runner,
    Turn, Wait, is_host_work, run_host_work,
};
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

/// The default bound on one slice of a completion wait (see [`ServiceConfig::wait_slice`]).
pub const DEFAULT_WAIT_SLICE: Duration = Duration::from_millis(5);

/// The default number of host workers (see [`ServiceConfig::workers`]): one can prepare the
/// next run while the other finalises the last.
pub const DEFAULT_WORKERS: usize = 2;

/// How [`spawn`] sets the lane up.
pub struct ServiceConfig {
    /// The lane's profile.
    pub profile: Profile,
    /// Whether to run `Lane::check_invariants` after every lane step (a broken invariant
    /// loses the lane with the violation as its cause).
    pub check_invariants: bool,
    /// The longest single `synchronize_event` the lane thread makes. A completion wait is
    /// cut into slices of at most this; between slices the lane thread takes the lock once
    /// to execute effects the commands left (the run's deadline still bounds the whole wait,
    /// from `Lane::poll_deadline`). Commands themselves never wait for a slice: this bounds
    /// only how late the lane thread starts the work a command asked for (e.g. preparing the
    /// next run while one runs), at the cost of one lock and one event wait call per slice.
    pub wait_slice: Duration,
    /// Called on the lane thread with every outcome, in sequence order, after the outcome
    /// is queued and with no lock held. It sees the outcome; it does not take it: each
    /// outcome is still taken exactly once, by [`LaneHandle::poll_outcome`] or
    /// [`LaneHandle::wait`]. It may call any handle method but `wait` (which would block the
    /// lane thread), and must not hold the last handle (the lane would never shut down).
    pub on_outcome: Option<OutcomeCallback>,
    /// How many host worker threads run the runner's prepare and finalise off the lane
    /// thread ([`spawn_with_workers`]), when the runner's
    /// [`concurrency`](Runner::concurrency) allows it. `0` keeps them on the lane thread;
    /// [`spawn`] starts none whatever this says.
    pub workers: usize,
}

impl ServiceConfig {
    /// A config for `profile`: invariants checked, [`DEFAULT_WAIT_SLICE`], no callback,
    /// [`DEFAULT_WORKERS`].
    #[must_use]
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            check_invariants: true,
            wait_slice: DEFAULT_WAIT_SLICE,
            on_outcome: None,
            workers: DEFAULT_WORKERS,
        }
    }
}

impl fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceConfig")
            .field("profile", &self.profile)
            .field("check_invariants", &self.check_invariants)
            .field("wait_slice", &self.wait_slice)
            .field("on_outcome", &self.on_outcome.is_some())
            .field("workers", &self.workers)
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

/// What the mailbox guards: the lane's steps, and the lane thread's latest clock reading
/// (the time commands from other threads are given at: the device's clock is read on the
/// lane thread only).
struct Shared {
    steps: LaneSteps,
    now: Timestamp,
    /// The lane thread closed the lane for the shutdown.
    closed_for_shutdown: bool,
}

impl Delivers for Shared {
    type Outcome = Report;
    type Work = Effect;
    type Answer = WorkerAnswer;

    fn take_outcome(&mut self) -> Option<Report> {
        self.steps.poll_report()
    }

    fn seq(report: &Report) -> u64 {
        report.outcome.seq()
    }
}

/// A host worker's answer to a job.
enum WorkerAnswer {
    /// The worker ran the job; this event answers it.
    Answered(Event),
    /// The worker could not bind the device ([`HostWorker::bind`]): the lane thread, always
    /// bound, runs the job itself with its own runner.
    HandedBack(Effect),
}

fn lost(error: &DriverError) -> LostCause {
    LostCause::new(format!("driver error: {error}"))
}

/// Owned by the handles; dropping the last one shuts the lane down.
struct Inner {
    mailbox: Arc<Mailbox<Shared>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    thread_id: ThreadId,
    /// The host workers (none unless the runner allows them and a factory was given).
    workers: Vec<JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.mailbox.shutdown();
        // Dropped on the lane thread itself (by the callback): it ends on its own.
        if thread::current().id() == self.thread_id {
            return;
        }
        let handle = self
            .thread
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(handle) = handle {
            // A panic was recorded as the lost cause already.
            let _ = handle.join();
        }
        // The lane thread's end stopped them; a worker's panic is the lost cause already.
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
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

    /// Submits a run: its id, or the lane's refusal (nothing accepted), at once.
    pub fn submit(&self, request: RunRequest) -> Result<RunId, ServiceError> {
        let result = self.mailbox().command(|shared| {
            let result = shared
                .steps
                .submit(shared.now, request)
                .map_err(|e| lost(&e))?;
            let accepted = result.as_ref().ok().map(|run| run.0);
            Ok((result, accepted))
        });
        Ok(result.map_err(ServiceError::Lost)??)
    }

    /// Publishes code: the publication's id, or the lane's refusal, at once.
    pub fn publish(&self, code: CodeRef) -> Result<PublicationId, ServiceError> {
        let result = self.mailbox().command(|shared| {
            let result = shared
                .steps
                .publish(shared.now, code)
                .map_err(|e| lost(&e))?;
            let accepted = result.as_ref().ok().map(|publication| publication.0);
            Ok((result, accepted))
        });
        Ok(result.map_err(ServiceError::Lost)??)
    }

    /// Closes the lane (L-15) at once: launched runs still finish on the lane thread,
    /// queued ones get their cancelled outcomes. Closing twice is harmless.
    pub fn close(&self) -> Result<CloseReport, ServiceError> {
        self.mailbox()
            .command(|shared| {
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

    /// Why the lane thread ended, if it did (a panic, a driver error).
    #[must_use]
    pub fn lost(&self) -> Option<LostCause> {
        self.mailbox().lost()
    }
}

/// A host worker factory: called once on each worker thread with the worker's index, so it
/// binds the device there before it makes the worker.
type MakeWorker = Arc<dyn Fn(usize) -> Result<Box<dyn HostWorker>, String> + Send + Sync>;

/// Spawns the lane thread and returns a handle on its lane. `make` runs on the lane thread
/// and builds the device and the runner there, so every device and runner call (from
/// `make` to the last release) happens on that one thread; its error, or its panic, is
/// returned from here. Runner host work stays on the lane thread (see
/// [`spawn_with_workers`]).
pub fn spawn<D, R, F, E>(config: ServiceConfig, make: F) -> Result<LaneHandle, ServiceError>
where
    D: Device + 'static,
    R: Runner<D> + 'static,
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
/// lane thread then makes only the launches, records, waits, status reads, stream calls and
/// recovery; each worker's answer comes back through the mailbox and wakes the lane thread.
/// A panicking worker loses the lane with the panic as its cause.
pub fn spawn_with_workers<D, R, F, E, W, WE>(
    config: ServiceConfig,
    make: F,
    make_worker: W,
) -> Result<LaneHandle, ServiceError>
where
    D: Device + 'static,
    R: Runner<D> + 'static,
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

/// What the lane thread hears from [`start`] once its runner is made: the mailbox to run the
/// lane in, and whether runner work goes to workers; `None`: a worker failed, end now.
type Go = Option<(Arc<Mailbox<Shared>>, bool)>;

fn start<D, R, F, E>(
    config: ServiceConfig,
    make: F,
    make_worker: Option<MakeWorker>,
) -> Result<LaneHandle, ServiceError>
where
    D: Device + 'static,
    R: Runner<D> + 'static,
    F: FnOnce() -> Result<(D, R), E> + Send + 'static,
    E: fmt::Display,
{
    let ServiceConfig {
        profile,
        check_invariants,
        wait_slice,
        mut on_outcome,
        workers,
    } = config;
    let copies = profile.copies();
    let announce = on_outcome.is_some();
    let (made_tx, made_rx) = mpsc::channel::<Result<Concurrency, ServiceError>>();
    let (go_tx, go_rx) = mpsc::channel::<Go>();
    let thread = thread::Builder::new()
        .name("lane".into())
        .spawn(move || {
            let mut made = Some(made_tx);
            let mut mailbox = None;
            let result = catch_unwind(AssertUnwindSafe(|| {
                let (device, runner) = match make() {
                    Ok(parts) => parts,
                    Err(error) => {
                        if let Some(tx) = made.take() {
                            let _ = tx.send(Err(ServiceError::Make(error.to_string())));
                        }
                        return Ok(());
                    }
                };
                if let Some(tx) = made.take() {
                    let _ = tx.send(Ok(runner.concurrency()));
                }
                let Ok(Some((lane_mailbox, off_lane))) = go_rx.recv() else {
                    return Ok(());
                };
                let lane_mailbox = mailbox.insert(lane_mailbox);
                let mut executor = Executor::with_copies(device, runner, copies);
                let mut lane = LaneThread {
                    mailbox: lane_mailbox,
                    slice: wait_slice,
                    off_lane,
                    retired: false,
                };
                lane.run(&mut executor, &mut on_outcome)
            }));
            let cause = match result {
                Ok(Ok(())) => {
                    LostCause::new("the lane thread ended after the last handle was dropped")
                }
                Ok(Err(cause)) => cause,
                Err(payload) => {
                    let text = panic_text(payload.as_ref());
                    if let Some(tx) = made.take() {
                        let _ = tx.send(Err(ServiceError::Make(format!("panicked: {text}"))));
                    }
                    LostCause::new(format!("panic on the lane thread: {text}"))
                }
            };
            if let Some(mailbox) = mailbox {
                mailbox.lose(cause);
            }
        })
        .map_err(|e| ServiceError::Thread(e.to_string()))?;
    let thread_id = thread.thread().id();
    let concurrency = made_rx
        .recv()
        .unwrap_or_else(|_| Err(ServiceError::Make("the lane thread ended".into())));
    let concurrency = match concurrency {
        Ok(concurrency) => concurrency,
        Err(error) => {
            let _ = thread.join();
            return Err(error);
        }
    };
    let shared = Shared {
        steps: LaneSteps::new(narrowed(profile, concurrency)).check_invariants(check_invariants),
        now: Timestamp(0),
        closed_for_shutdown: false,
    };
    // Each job is one slot's prepare or finalise: at most one per slot is out.
    let mailbox = Arc::new(Mailbox::new(shared, announce, usize::from(MAX_SLOTS)));
    let make_worker = make_worker.filter(|_| concurrency.off_lane_thread && workers > 0);
    let off_lane = make_worker.is_some();
    let workers = match make_worker {
        Some(make_worker) => match start_workers(&mailbox, &make_worker, workers) {
            Ok(workers) => workers,
            Err(error) => {
                let _ = go_tx.send(None);
                let _ = thread.join();
                return Err(error);
            }
        },
        None => Vec::new(),
    };
    let _ = go_tx.send(Some((Arc::clone(&mailbox), off_lane)));
    Ok(LaneHandle {
        inner: Arc::new(Inner {
            mailbox,
            thread: Mutex::new(Some(thread)),
            thread_id,
            workers,
        }),
    })
}

/// Starts `count` host workers, each making its worker on its own thread; waits until every
/// one is made. On a failure the workers made so far end (the mailbox is lost) and are
/// joined.
fn start_workers(
    mailbox: &Arc<Mailbox<Shared>>,
    make_worker: &MakeWorker,
    count: usize,
) -> Result<Vec<JoinHandle<()>>, ServiceError> {
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), ServiceError>>();
    let mut handles = Vec::with_capacity(count);
    let mut failure = None;
    for index in 0..count {
        let (mailbox, make_worker, ready) = (
            Arc::clone(mailbox),
            Arc::clone(make_worker),
            ready_tx.clone(),
        );
        let spawned = thread::Builder::new()
            .name(format!("lane-worker-{index}"))
            .spawn(move || host_worker(&mailbox, &*make_worker, index, &ready));
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
/// then answers jobs until the workers retire. A panic anywhere loses the lane with its text.
fn host_worker(
    mailbox: &Mailbox<Shared>,
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
            // goes back to the lane thread, so the runner's prepare or finalise still runs.
            let answer = match worker.bind() {
                Ok(()) => run_host_work(&mut *worker, job).map(WorkerAnswer::Answered),
                Err(_) => Some(WorkerAnswer::HandedBack(job)),
            };
            if let Some(answer) = answer {
                mailbox.give_answer(answer);
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

/// What the lane thread does next, decided under the lock.
enum Next {
    /// Execute this effect (lock released).
    Execute(Effect),
    /// Wait one slice for the awaited run, up to its deadline; `answers` says a worker's
    /// answer comes first: a job is out and the next launch waits only on a prepare that is
    /// out (`Lane::next_launch_waits_on_prepare`), so its answer would start a launch. Any
    /// other answer (a finalise, a prepare behind a full pair) enables no launch, and the
    /// awaited run's completion, which frees the pair, is waited for first.
    Await {
        deadline: Option<Timestamp>,
        answers: bool,
    },
    /// Nothing to do: sleep until a command or a worker's answer.
    Idle,
    /// The last handle is gone and the lane is settled: end the thread.
    Exit,
}

/// The lane thread's loop and what it keeps between steps.
struct LaneThread<'a> {
    mailbox: &'a Mailbox<Shared>,
    slice: Duration,
    /// Runner host work goes to the host workers.
    off_lane: bool,
    /// The workers were told to end (the lane is closed with no job out).
    retired: bool,
}

impl LaneThread<'_> {
    /// One lane step under the lock, then the device work it asked for with the lock
    /// released, until the last handle is gone and the lane is settled.
    fn run<D: Device, R: Runner<D>>(
        &mut self,
        executor: &mut Executor<D, R>,
        on_outcome: &mut Option<OutcomeCallback>,
    ) -> Result<(), LostCause> {
        let mailbox = self.mailbox;
        let slice_ms = i32::try_from(self.slice.as_millis())
            .unwrap_or(i32::MAX)
            .max(1);
        loop {
            let now = executor.now();
            let awaiting = executor.is_awaiting();
            let off_lane = self.off_lane;
            let (next, retire, shutdown) = mailbox.step(|shared, cx| {
                let next = decide(shared, cx, executor, now, awaiting, off_lane);
                let retire =
                    off_lane && cx.out() == 0 && shared.steps.lane().state() == LaneState::Closed;
                (next, retire, cx.shutdown)
            })?;
            announce(mailbox, on_outcome);
            if retire && !self.retired {
                self.retired = true;
                mailbox.retire_workers();
            }
            let closed = match next.map_err(|e| lost(&e))? {
                Next::Execute(effect) => {
                    if let Some(event) = executor
                        .execute(effect, &mut NoObserver)
                        .map_err(|e| lost(&e))?
                    {
                        let message = executor.device_message(&event);
                        let now = executor.now();
                        feed(mailbox, |steps| steps.feed(now, event, message), now)?
                    } else {
                        false
                    }
                }
                Next::Await { deadline, answers } => {
                    if answers && self.await_answer(deadline, now, shutdown) {
                        continue;
                    }
                    match executor
                        .wait(deadline, Some(slice_ms))
                        .map_err(|e| lost(&e))?
                    {
                        Wait::Answered(event) => {
                            let message = executor.device_message(&event);
                            let now = executor.now();
                            feed(mailbox, |steps| steps.feed(now, event, message), now)?
                        }
                        Wait::Expired(now) => feed(mailbox, |steps| steps.expire(now), now)?,
                        Wait::Pending => false,
                    }
                }
                Next::Idle => {
                    // After the shutdown, idle only while workers have jobs out: sleep until
                    // their answers, not on the shutdown seen already.
                    mailbox.idle(None, shutdown);
                    false
                }
                Next::Exit => {
                    executor.release_slot_resources(&mut NoObserver);
                    return Ok(());
                }
            };
            announce(mailbox, on_outcome);
            // L-15: once closed, the slots' events and buffers go back (a no-op once they have).
            if closed {
                executor.release_slot_resources(&mut NoObserver);
            }
        }
    }

    /// With a run awaited and a launch waiting on a prepare that is out: sleeps until a
    /// worker's answer or a command, at most one slice and never past the awaited run's
    /// deadline (the event wait alone decides a timeout). Returns whether it was woken; else
    /// the caller looks at the run.
    fn await_answer(&self, deadline: Option<Timestamp>, now: Timestamp, shutdown: bool) -> bool {
        let left = deadline.map_or(0, |deadline| deadline.since(now));
        let bound = self.slice.min(Duration::from_nanos(left));
        if bound.is_zero() {
            return false;
        }
        Instant::now()
            .checked_add(bound)
            .is_some_and(|until| self.mailbox.idle(Some(until), shutdown))
    }
}

/// The lane step that decides what the lane thread does next: feeds the workers' answers,
/// closes for the shutdown, hands runner host work to the workers (`off_lane`), and returns
/// the first effect the lane thread executes itself, or why there is none.
fn decide<D: Device, R: Runner<D>>(
    shared: &mut Shared,
    cx: &mut Step<'_, Shared>,
    executor: &mut Executor<D, R>,
    now: Timestamp,
    awaiting: bool,
    off_lane: bool,
) -> Result<Next, DriverError> {
    shared.now = now;
    while let Some(answer) = cx.answer() {
        match answer {
            // A worker's call is not the lane thread's: no device text goes with its failure.
            WorkerAnswer::Answered(event) => shared.steps.feed(now, event, None)?,
            // Executing a handed-back finalise releases the slot's events again, which
            // `hand_off` already did: harmless, the lane leases the slot to no other run
            // before the finalise is answered. The answers left are taken by the next step,
            // which follows the execution without a sleep.
            WorkerAnswer::HandedBack(effect) => return Ok(Next::Execute(effect)),
        }
    }
    if cx.shutdown && !shared.closed_for_shutdown {
        shared.closed_for_shutdown = true;
        shared.steps.close(now)?;
    }
    while let Some(effect) = shared.steps.next_effect(now) {
        if off_lane && is_host_work(&effect) {
            executor.hand_off(&effect);
            cx.dispatch(effect);
            continue;
        }
        return Ok(Next::Execute(effect));
    }
    if awaiting {
        return Ok(Next::Await {
            deadline: shared.steps.deadline(),
            answers: cx.out() > 0 && shared.steps.lane().next_launch_waits_on_prepare(),
        });
    }
    // Workers still have jobs out: their answers come back as work.
    if cx.out() > 0 {
        return Ok(Next::Idle);
    }
    // Nothing to do and nothing awaited: the lane must be settled (else it is stuck, a
    // driver error).
    let settled = shared.steps.settled()?;
    Ok(if cx.shutdown && settled == Turn::Idle {
        Next::Exit
    } else {
        Next::Idle
    })
}

/// Feeds the lane thread's answer under the lock; returns whether the lane is closed.
fn feed(
    mailbox: &Mailbox<Shared>,
    apply: impl FnOnce(&mut LaneSteps) -> Result<(), DriverError>,
    now: Timestamp,
) -> Result<bool, LostCause> {
    mailbox
        .step(|shared, _| {
            shared.now = now;
            apply(&mut shared.steps)?;
            Ok(shared.steps.lane().state() == LaneState::Closed)
        })?
        .map_err(|e: DriverError| lost(&e))
}

/// Shows the callback the outcomes delivered since the last call, with no lock held.
fn announce(mailbox: &Mailbox<Shared>, on_outcome: &mut Option<OutcomeCallback>) {
    if let Some(callback) = on_outcome {
        for report in mailbox.unannounced() {
            callback(&report.outcome);
        }
    }
}
