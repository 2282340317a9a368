//! Starting a lane: [`spawn`] and [`spawn_with_workers`], the lane thread, the completion
//! waiter and the host workers, or the caller-driven start.

use lane_core::{MAX_SLOTS, Profile, ProfileSpec, Timestamp};
use lane_driver::dispatch::{Dispatch, Here, Setting, WorkerAnswer};
use lane_driver::{
    CompletionWaiter, Concurrency, Device, Executor, HostWorker, LaneSteps, Runner,
    run_device_wait, run_host_work,
};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{self, JoinHandle};

use crate::error::{LostCause, ServiceError};
use crate::mailbox::Mailbox;

use super::engine::{Announcer, Engine, RunsSteps, lane_thread};
use super::handle::LaneHandle;
use super::{Drive, Inner, NOTICE_POLL_NS, OUTCOMES_KEPT, ServiceConfig, Shared, Threads};

/// A host worker factory: called once on each worker thread with the worker's index, so it
/// binds the device there before it makes the worker.
type MakeWorker = Arc<dyn Fn(usize) -> Result<Box<dyn HostWorker>, String> + Send + Sync>;

/// Starts a lane and returns a handle on it. With [`Drive::LaneThreads`] (the default) it
/// spawns the lane thread: `make` builds the device and the runner there (its error, or its
/// panic, is returned from here), and they are dropped there. The device's completion waiter
/// ([`Device::completion_waiter`]) gets a thread of its own; a device without one is refused
/// ([`ServiceError::Waiter`]). The steps run on whichever of the lane's threads has the
/// event, one at a time, hence `Send`. With [`Drive::Caller`] no thread starts: `make` runs
/// on this thread, and every handle call runs the steps on its caller's thread.
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
/// `off_lane_thread` (else, or where the caller drives, `make_worker` is never called).
///
/// `make_worker(index)` runs on worker `index`'s own thread, so it binds the device there
/// before it returns the worker; its error, or its panic, fails the spawn with
/// [`ServiceError::Worker`]. The lane's prepare window is the smaller of the profile's and
/// the runner's `prepares_at_once`. A panicking worker loses the lane.
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
    let window = profile.prepare_window().min(concurrency.prepares_at_once.max(1));
    // Narrowing a valid window keeps it valid (1..=slots).
    Profile::custom(ProfileSpec { prepare_window: window, ..profile.spec() }).unwrap_or(profile)
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
    Arc::new(Mailbox::new(shared, announce, usize::from(MAX_SLOTS), OUTCOMES_KEPT))
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
                let (device, runner, waiter) = match with_waiter(make()) {
                    Ok(parts) => parts,
                    Err(error) => {
                        if let Some(tx) = made.take() {
                            let _ = tx.send(Err(error));
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
    let made =
        made_rx.recv().unwrap_or_else(|_| Err(ServiceError::Make("the lane thread ended".into())));
    let (concurrency, waiter) = match made {
        Ok(made) => made,
        Err(error) => {
            let _ = thread.join();
            return Err(error);
        }
    };
    let make_worker = make_worker.filter(|_| concurrency.off_lane_thread && workers > 0);
    let off_lane = make_worker.is_some();
    let setting = if off_lane { Setting::WORKERS } else { Setting::WAITER };
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
        thread::Builder::new().name("lane-waiter".into()).spawn(move || {
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
    let ServiceConfig { profile, check_invariants, on_outcome, .. } = config;
    let made = catch_unwind(AssertUnwindSafe(make)).map_err(|payload| {
        ServiceError::Make(format!("panicked: {}", panic_text(payload.as_ref())))
    })?;
    let (device, runner, waiter) = with_waiter(made)?;
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
        executor: Mutex::new(Some(Executor::with_copies(device, runner, profile.copies()))),
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
            threads: Mutex::new(Threads::default()),
            own: Vec::new(),
        }),
    })
}

/// `make`'s device and runner with the device's completion waiter, or why there is no lane.
fn with_waiter<D: Device, R, E: fmt::Display>(
    made: Result<(D, R), E>,
) -> Result<(D, R, Box<dyn CompletionWaiter + Send>), ServiceError> {
    let (mut device, runner) = made.map_err(|error| ServiceError::Make(error.to_string()))?;
    let waiter =
        device.completion_waiter().map_err(|code| ServiceError::Waiter(code.to_string()))?;
    Ok((device, runner, waiter))
}

/// The completion waiter thread: takes each offered device wait with the time its call
/// starts, makes it through the device's [`CompletionWaiter`], hands the answer back, and
/// then runs the lane's steps itself unless another thread does, until the lane is lost. A
/// panic loses the lane with its text.
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
        mailbox.lose(LostCause::new(format!("panic on the completion waiter: {text}")));
    }
}

/// Starts `count` host workers and waits until each made its worker; on a failure the
/// workers made so far end (the mailbox is lost) and are joined.
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
        let (engine, make_worker, ready) =
            (Arc::clone(engine) as Arc<dyn RunsSteps>, Arc::clone(make_worker), ready_tx.clone());
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

/// A host worker thread: makes its worker, says so, then answers jobs until the workers
/// retire, running the steps after each answer. A panic loses the lane with its text.
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
                Ok(()) => (run_host_work(&mut *worker, job).map(WorkerAnswer::Answered), true),
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
            mailbox.lose(LostCause::new(format!("panic on host worker {index}: {text}")));
        } else {
            let _ =
                ready.send(Err(ServiceError::Worker { index, text: format!("panicked: {text}") }));
        }
    }
}

pub(super) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
