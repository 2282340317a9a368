//! [`spawn`], the [`LaneHandle`] and the lane thread's loop.

use lane_core::{
    CloseReport, CodeRef, Effect, Event, LaneState, MAX_SLOTS, Outcome, Profile, ProfileSpec,
    PublicationId, RunId, RunPhase, RunRequest, Timestamp,
};
use lane_driver::{
    CompletionWaiter, Concurrency, Device, DeviceWait, DriverError, Executor, HostWorker,
    LaneSteps, NoObserver, Report, Runner, Turn, Wait, host_work_failed, is_host_work,
    run_device_wait, run_host_work, wait_failed,
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
    /// A config for `profile`: invariants checked, no callback, [`DEFAULT_WORKERS`].
    #[must_use]
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            check_invariants: true,
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

/// What the mailbox guards: the lane's steps, the lane thread's latest clock reading (the
/// time commands from other threads are given at: the device's clock is read on the lane
/// thread only), and the device wait out on the completion waiter.
struct Shared {
    steps: LaneSteps,
    now: Timestamp,
    /// The lane thread closed the lane for the shutdown.
    closed_for_shutdown: bool,
    /// The lane thread destroyed once more the streams the teardown left, at the shutdown.
    teardown_retried: bool,
    /// The device wait handed to the completion waiter and not answered yet.
    wait_out: Option<WaitOut>,
    /// Device waits handed out so far (each one's ticket).
    tickets: u64,
    /// The latest bound of any wait handed to the completion waiter: a call it is still in
    /// returns by then, or it ignores its timeout.
    waiter_bound: Timestamp,
    /// A force reset held back while the completion waiter is inside a device call (L-20).
    held_reset: Option<Effect>,
}

/// A device wait out on the completion waiter.
#[derive(Clone, Copy, Debug)]
struct WaitOut {
    /// Its ticket: the waiter's answer names it, so an answer to a wait the lane thread no
    /// longer waits for is told apart and dropped.
    ticket: u64,
    wait: DeviceWait,
    /// Past this the lane thread answers the wait itself ([`DeviceWait::bound`]).
    bound: Timestamp,
}

/// The completion waiter's answer to a device wait.
struct Waited {
    wait: Wait,
    /// The device's text about a failed wait, read on the waiter's thread (ACL keeps it per
    /// thread). Only a failure allocates it.
    message: Option<String>,
}

impl Delivers for Shared {
    type Outcome = Report;
    type Work = Effect;
    type Answer = WorkerAnswer;
    type Wait = DeviceWait;
    type Waited = Waited;

    fn take_outcome(&mut self) -> Option<Report> {
        self.steps.poll_report()
    }

    fn seq(report: &Report) -> u64 {
        report.outcome.seq()
    }
}

/// A host worker's answer to a job.
enum WorkerAnswer {
    /// The worker ran the job; this event answers it, with the device's text about a failed
    /// prepare or finalise, read on the worker's thread (ACL keeps it per thread). Only a
    /// failure allocates it.
    Answered(Event, Option<String>),
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
/// and builds the device and the runner there, so every device and runner call (from
/// `make` to the last release) happens on that one thread; its error, or its panic, is
/// returned from here. Then the device's completion waiter
/// ([`Device::completion_waiter`]) gets a thread of its own, which makes every blocking wait
/// of the lane; a device without one is refused ([`ServiceError::Waiter`]). Runner host work
/// stays on the lane thread (see [`spawn_with_workers`]).
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
/// lane thread then makes only the launches, records, status reads, stream calls and
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
/// lane in, and whether runner work goes to workers; `None`: a worker or the waiter failed to
/// start, end now.
type Go = Option<(Arc<Mailbox<Shared>>, bool)>;

/// What the lane thread tells [`start`] once `make` returned: the runner's concurrency and
/// the device's completion waiter, or why there is no lane.
type Made = Result<(Concurrency, Box<dyn CompletionWaiter + Send>), ServiceError>;

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
        mut on_outcome,
        workers,
    } = config;
    let copies = profile.copies();
    let announce = on_outcome.is_some();
    let (made_tx, made_rx) = mpsc::channel::<Made>();
    let (go_tx, go_rx) = mpsc::channel::<Go>();
    let thread = thread::Builder::new()
        .name("lane".into())
        .spawn(move || {
            let mut made = Some(made_tx);
            let mut mailbox = None;
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
                let Ok(Some((lane_mailbox, off_lane))) = go_rx.recv() else {
                    return Ok(());
                };
                let lane_mailbox = mailbox.insert(lane_mailbox);
                let mut executor = Executor::with_copies(device, runner, copies);
                let mut lane = LaneThread {
                    mailbox: lane_mailbox,
                    off_lane,
                    retired: false,
                };
                lane.run(&mut executor, &mut on_outcome)
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
            if let Some(mailbox) = mailbox {
                mailbox.lose(cause);
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
    let shared = Shared {
        steps: LaneSteps::new(narrowed(profile, concurrency)).check_invariants(check_invariants),
        now: Timestamp(0),
        closed_for_shutdown: false,
        teardown_retried: false,
        wait_out: None,
        tickets: 0,
        waiter_bound: Timestamp(0),
        held_reset: None,
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
    let waiter = {
        let mailbox = Arc::clone(&mailbox);
        thread::Builder::new()
            .name("lane-waiter".into())
            .spawn(move || completion_waiter(&mailbox, waiter))
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
    let _ = go_tx.send(Some((Arc::clone(&mailbox), off_lane)));
    let own = std::iter::once(thread_id)
        .chain(workers.iter().map(|worker| worker.thread().id()))
        .chain(std::iter::once(waiter.thread().id()))
        .collect();
    Ok(LaneHandle {
        inner: Arc::new(Inner {
            mailbox,
            threads: Mutex::new(Threads {
                lane: Some(thread),
                workers,
                waiter: Some(waiter),
            }),
            own,
        }),
    })
}

/// The completion waiter thread: makes each device wait the lane thread hands it (a run's
/// completion, the recovery drain) through the device's [`CompletionWaiter`], binding first,
/// and hands the answer back with its ticket, until the lane is lost (the lane thread's end
/// is always a loss). A panic loses the lane with its text.
fn completion_waiter(mailbox: &Mailbox<Shared>, mut waiter: Box<dyn CompletionWaiter + Send>) {
    let result = catch_unwind(AssertUnwindSafe(|| {
        while let Some((ticket, wait)) = mailbox.take_wait() {
            let wait = run_device_wait(&mut *waiter, &wait);
            let message = if wait_failed(&wait) {
                waiter.recent_error_message()
            } else {
                None
            };
            mailbox.give_waited(ticket, Waited { wait, message });
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
                Ok(()) => run_host_work(&mut *worker, job).map(|event| {
                    // Read right after the failed call, before the worker's thread makes
                    // another, as the lane thread does after its own.
                    let message = if host_work_failed(&event) {
                        worker.recent_error_message()
                    } else {
                        None
                    };
                    WorkerAnswer::Answered(event, message)
                }),
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
    /// Nothing to execute: sleep on the mailbox until a command, a host worker's or the
    /// completion waiter's answer, or this bound of the wait out passes (`None`: no bound,
    /// nothing is out on the waiter). The lane thread never sleeps in a device wait.
    Sleep(Option<Timestamp>),
    /// The last handle is gone and the lane is settled: end the thread.
    Exit,
    /// The lane cannot go on safely: end it, lost, with this cause.
    Lose(LostCause),
}

/// How often a sleeping lane thread looks for device fault notices (L-19): notices come up
/// to seconds late, so this adds little, and an idle lane wakes only this often.
pub const NOTICE_POLL_NS: u64 = 50_000_000;

/// The lane thread's loop and what it keeps between steps.
struct LaneThread<'a> {
    mailbox: &'a Mailbox<Shared>,
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
        loop {
            let now = executor.now();
            let off_lane = self.off_lane;
            let (next, retire, shutdown) = mailbox.step(|shared, cx| {
                let next = decide(shared, cx, executor, now, off_lane);
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
                Next::Sleep(bound) => {
                    // A fault notice wakes no one (its handler takes no lock): the lane thread
                    // looks at the ring at least this often (L-19).
                    let poll = now.after_ns(NOTICE_POLL_NS);
                    let bound = bound.map_or(poll, |bound| bound.min(poll));
                    // The bound is on the device's clock: as a real-time instant from `now`.
                    let until = Instant::now().checked_add(Duration::from_nanos(bound.since(now)));
                    // After the shutdown, sleep only for answers, not on the shutdown seen
                    // already.
                    mailbox.idle(until, shutdown);
                    false
                }
                Next::Exit => {
                    executor.release_slot_resources(&mut NoObserver);
                    return Ok(());
                }
                Next::Lose(cause) => return Err(cause),
            };
            announce(mailbox, on_outcome);
            // L-15: once closed, the slots' events and buffers go back (a no-op once they have).
            if closed {
                executor.release_slot_resources(&mut NoObserver);
            }
        }
    }
}

/// The lane step that decides what the lane thread does next: feeds the host workers' and
/// the completion waiter's answers, closes for the shutdown, hands runner host work to the
/// workers (`off_lane`) and every device wait (a run's completion, the recovery drain) to the
/// completion waiter, answers a wait out past its bound itself, and returns the first effect
/// the lane thread executes itself, or why there is none.
fn decide<D: Device, R: Runner<D>>(
    shared: &mut Shared,
    cx: &mut Step<'_, Shared>,
    executor: &mut Executor<D, R>,
    now: Timestamp,
    off_lane: bool,
) -> Result<Next, DriverError> {
    shared.now = now;
    while let Some(answer) = cx.answer() {
        match answer {
            // The device's text about a failed prepare or finalise came from the worker's
            // own thread: it reaches the outcome's line as a lane-thread failure's does.
            WorkerAnswer::Answered(event, message) => shared.steps.feed(now, event, message)?,
            // Executing a handed-back finalise releases the slot's events again, which
            // `hand_off` already did: harmless, the lane leases the slot to no other run
            // before the finalise is answered. The answers left are taken by the next step,
            // which follows the execution without a sleep.
            WorkerAnswer::HandedBack(effect) => return Ok(Next::Execute(effect)),
        }
    }
    // L-19: the fault notices that concern this lane's device, since its last step.
    while let Some(notice) = executor.next_notice() {
        shared.steps.fault_notice(now, notice)?;
    }
    // L-20: a force reset waits until the completion waiter has left its device call (its
    // bound returns it); one still inside past that bound ignores its timeout, and a reset
    // under it would free what it reads, so the lane ends instead.
    if let Some(effect) = shared.held_reset {
        // A wait not taken yet never starts: the check and the withdrawal are one step
        // under the lock, so the waiter cannot take it after the reset.
        cx.withdraw_wait();
        if !cx.waiter_inside() {
            shared.held_reset = None;
            return Ok(Next::Execute(effect));
        }
        if now >= shared.waiter_bound {
            return Ok(Next::Lose(LostCause::new(
                "the completion waiter is still inside a device call past its bound: no force \
                 reset is made under a wait (L-20), so the device is left unrecovered",
            )));
        }
        return Ok(Next::Sleep(Some(shared.waiter_bound)));
    }
    shared.abandon_stale_wait();
    if let Some((ticket, waited)) = cx.waited() {
        // An answer to a wait the lane thread answered itself, or no longer waits for (a
        // poison abandoned its run), names an older ticket: dropped.
        if let Some(out) = shared.wait_out.filter(|out| out.ticket == ticket) {
            shared.wait_out = None;
            shared.apply_wait(cx, out, waited.wait, waited.message, true)?;
        }
    }
    if cx.shutdown && !shared.closed_for_shutdown {
        shared.closed_for_shutdown = true;
        shared.steps.close(now)?;
    }
    // S-7: a stream the teardown left gets one more destroy before the lane thread ends
    // (time has passed since the teardown's own retry); the final report names it if it
    // still survives.
    if cx.shutdown
        && !shared.teardown_retried
        && shared.steps.lane().state() == LaneState::Closed
        && !shared.steps.lane().streams_left().is_empty()
    {
        shared.teardown_retried = true;
        shared.steps.retry_teardown(now)?;
    }
    loop {
        while let Some(effect) = shared.steps.next_effect(now) {
            if off_lane && is_host_work(&effect) {
                executor.hand_off(&effect);
                cx.dispatch(effect);
                continue;
            }
            if let Some(wait) = executor.device_wait(&effect) {
                shared.hand_wait(cx, wait);
                continue;
            }
            if matches!(effect, Effect::ForceReset { .. }) {
                cx.withdraw_wait();
                if cx.waiter_inside() {
                    shared.held_reset = Some(effect);
                    return Ok(Next::Sleep(Some(shared.waiter_bound)));
                }
            }
            if matches!(effect, Effect::AwaitCompletion { .. }) {
                // Only notes the run the executor awaits (no device call): done in this step,
                // so the wait is handed to the waiter below without another lock round.
                executor.execute(effect, &mut NoObserver)?;
                continue;
            }
            return Ok(Next::Execute(effect));
        }
        shared.abandon_stale_wait();
        if shared.wait_out.is_none() {
            if let Some(wait) = executor.completion_wait(shared.steps.deadline())? {
                shared.hand_wait(cx, wait);
            }
        }
        match shared.wait_out {
            // The waiter has not answered by the bound (stuck in a call that ignores its
            // timeout): the lane thread answers the wait itself and drops the late answer.
            Some(out) if now >= out.bound => {
                shared.wait_out = None;
                // Not started yet: the waiter never makes it.
                cx.withdraw_wait();
                let answer = out.wait.answer_at_bound(now);
                // Past the deadline the lane poisons; were the run still awaiting, nothing
                // would be out and the settle check below would report the lane stuck.
                shared.apply_wait(cx, out, answer, None, false)?;
            }
            _ => break,
        }
    }
    if let Some(out) = shared.wait_out {
        return Ok(Next::Sleep(Some(out.bound)));
    }
    // Workers still have jobs out: their answers come back as work.
    if cx.out() > 0 {
        return Ok(Next::Sleep(None));
    }
    // Nothing to do, nothing out: the lane must be settled (else it is stuck, a driver error).
    let settled = shared.steps.settled()?;
    Ok(if cx.shutdown && settled == Turn::Idle {
        Next::Exit
    } else {
        Next::Sleep(None)
    })
}

impl Shared {
    /// Hands `wait` to the completion waiter under a fresh ticket; it is the wait out now
    /// (one replaced is abandoned: its answer will name an older ticket).
    fn hand_wait(&mut self, cx: &mut Step<'_, Self>, wait: DeviceWait) {
        self.tickets += 1;
        let bound = wait.bound(self.now);
        self.waiter_bound = self.waiter_bound.max(bound);
        self.wait_out = Some(WaitOut {
            ticket: self.tickets,
            wait,
            bound,
        });
        cx.hand_wait(self.tickets, wait);
    }

    /// Whether the lane still waits for `wait`'s answer: a completion's run is still
    /// awaiting (a poison moves it on); a drain always is.
    fn still_asked(&self, wait: &DeviceWait) -> bool {
        match *wait {
            DeviceWait::Completion { run, .. } => {
                self.steps.lane().phase_of(run) == Some(RunPhase::Awaiting)
            }
            DeviceWait::Drain { .. } => true,
        }
    }

    /// Forgets a completion wait out whose run no longer awaits (a poison abandoned it): its
    /// answer must never reach the lane, which no longer asks for it.
    fn abandon_stale_wait(&mut self) {
        if self
            .wait_out
            .is_some_and(|out| !self.still_asked(&out.wait))
        {
            self.wait_out = None;
        }
    }

    /// Feeds the answer to the wait `out` (taken off `wait_out` already) to the lane. With
    /// `again`, a run still awaiting after it (a waiter's early expiry, which the lane
    /// ignores) gets the same wait again.
    fn apply_wait(
        &mut self,
        cx: &mut Step<'_, Self>,
        out: WaitOut,
        answer: Wait,
        message: Option<String>,
        again: bool,
    ) -> Result<(), DriverError> {
        let now = self.now;
        match answer {
            Wait::Answered(event) => self.steps.feed(now, event, message)?,
            Wait::Expired(at) => self.steps.expire(now.max(at))?,
            Wait::Pending => {}
        }
        if again && !matches!(answer, Wait::Answered(_)) && self.still_asked(&out.wait) {
            self.hand_wait(cx, out.wait);
        }
        Ok(())
    }
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
