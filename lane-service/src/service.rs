//! [`spawn`], the [`LaneHandle`] and the lane thread's loop.

use lane_core::{
    CloseReport, CodeRef, Effect, LaneState, Outcome, Profile, PublicationId, RunId, RunRequest,
    Timestamp,
};
use lane_driver::{
    Device, DriverError, Executor, LaneSteps, NoObserver, Report, Runner, Turn, Wait,
};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{self, JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use crate::error::{LostCause, ServiceError, WaitError};
use crate::mailbox::{Delivers, Mailbox};

/// The outcome callback: called on the lane thread with each outcome, in order (see
/// [`ServiceConfig::on_outcome`]).
pub type OutcomeCallback = Box<dyn FnMut(&Outcome) + Send + 'static>;

/// The default bound on one slice of a completion wait (see [`ServiceConfig::wait_slice`]).
pub const DEFAULT_WAIT_SLICE: Duration = Duration::from_millis(5);

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
}

impl ServiceConfig {
    /// A config for `profile`: invariants checked, [`DEFAULT_WAIT_SLICE`], no callback.
    #[must_use]
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            check_invariants: true,
            wait_slice: DEFAULT_WAIT_SLICE,
            on_outcome: None,
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

/// Owned by the handles; dropping the last one shuts the lane down.
struct Inner {
    mailbox: Arc<Mailbox<Shared>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    thread_id: ThreadId,
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

/// Spawns the lane thread and returns a handle on its lane. `make` runs on the lane thread
/// and builds the device and the runner there, so every device and runner call (from
/// `make` to the last release) happens on that one thread; its error, or its panic, is
/// returned from here.
pub fn spawn<D, R, F, E>(config: ServiceConfig, make: F) -> Result<LaneHandle, ServiceError>
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
    } = config;
    let copies = profile.copies();
    let shared = Shared {
        steps: LaneSteps::new(profile).check_invariants(check_invariants),
        now: Timestamp(0),
        closed_for_shutdown: false,
    };
    let mailbox = Arc::new(Mailbox::new(shared, on_outcome.is_some()));
    let lane_mailbox = Arc::clone(&mailbox);
    let slice_ms = i32::try_from(wait_slice.as_millis())
        .unwrap_or(i32::MAX)
        .max(1);
    let (made_tx, made_rx) = mpsc::channel::<Result<(), ServiceError>>();
    let thread = thread::Builder::new()
        .name("lane".into())
        .spawn(move || {
            let mut made = Some(made_tx);
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
                    let _ = tx.send(Ok(()));
                }
                let mut executor = Executor::with_copies(device, runner, copies);
                lane_loop(&lane_mailbox, &mut executor, slice_ms, &mut on_outcome)
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
            lane_mailbox.lose(cause);
        })
        .map_err(|e| ServiceError::Thread(e.to_string()))?;
    let thread_id = thread.thread().id();
    let made = made_rx
        .recv()
        .unwrap_or_else(|_| Err(ServiceError::Make("the lane thread ended".into())));
    if let Err(error) = made {
        let _ = thread.join();
        return Err(error);
    }
    Ok(LaneHandle {
        inner: Arc::new(Inner {
            mailbox,
            thread: Mutex::new(Some(thread)),
            thread_id,
        }),
    })
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
    /// Wait one slice for the awaited run, up to its deadline.
    Await(Option<Timestamp>),
    /// Nothing to do: sleep until a command.
    Idle,
    /// The last handle is gone and the lane is settled: end the thread.
    Exit,
}

/// The lane thread: one lane step under the lock, then the device work it asked for with
/// the lock released, until the last handle is gone and the lane is settled.
fn lane_loop<D: Device, R: Runner<D>>(
    mailbox: &Mailbox<Shared>,
    executor: &mut Executor<D, R>,
    slice_ms: i32,
    on_outcome: &mut Option<OutcomeCallback>,
) -> Result<(), LostCause> {
    loop {
        let now = executor.now();
        let awaiting = executor.is_awaiting();
        let next = mailbox.step(|shared, shutdown| -> Result<Next, DriverError> {
            shared.now = now;
            if shutdown && !shared.closed_for_shutdown {
                shared.closed_for_shutdown = true;
                shared.steps.close(now)?;
            }
            if let Some(effect) = shared.steps.next_effect(now) {
                return Ok(Next::Execute(effect));
            }
            if awaiting {
                return Ok(Next::Await(shared.steps.deadline()));
            }
            // Nothing to do and nothing awaited: the lane must be settled (else it is stuck,
            // a driver error).
            let settled = shared.steps.settled()?;
            Ok(if shutdown && settled == Turn::Idle {
                Next::Exit
            } else {
                Next::Idle
            })
        })?;
        announce(mailbox, on_outcome);
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
            Next::Await(deadline) => match executor
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
            },
            Next::Idle => {
                mailbox.idle();
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
