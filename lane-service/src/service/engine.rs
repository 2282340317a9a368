//! The [`Engine`]: the lane's steps and its executor, run by whichever of the lane's threads
//! (or, caller-driven, callers) has the event, and the outcome callback they show.

use lane_core::Timestamp;
use lane_driver::dispatch::{Here, Loss, Next};
use lane_driver::{
    CompletionWaiter, Device, DeviceWait, DriverError, Executor, NoObserver, Reach, Report, Runner,
    run_device_wait_as,
};
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use crate::error::LostCause;
use crate::mailbox::Mailbox;
use crate::sync::lock;

use super::spawn::panic_text;
use super::{OUTCOMES_KEPT, OutcomeCallback, STEPS_HERE, Shared, lane_id, lost, sleep_until};

/// How a caller that drives the lane makes an offered device wait ([`RunsSteps::make_offered`]).
#[derive(Clone, Copy, Debug)]
pub(super) enum How {
    /// `wait`: block in it, up to the caller's deadline (`None`: the wait's own bound).
    Block { until: Option<Instant> },
    /// `poll`: look at a completion without waiting; make a drain.
    Look,
    /// A command: make only what is due, a drain, or a completion whose deadline passed
    /// (looked at first: it may have completed while no call was made).
    Due,
}

/// The lane's steps and its executor, shared by every thread that may run them. One runs
/// them at a time (the mailbox's `running` claim), so the executor's and the callback's
/// locks are never contended.
pub(super) struct Engine<D: Device, R: Runner<D>> {
    pub(super) mailbox: Arc<Mailbox<Shared>>,
    /// Put in by the thread that made the device and the runner, taken out at the end to be
    /// dropped there.
    pub(super) executor: Mutex<Option<Executor<D, R>>>,
    /// Runner host work goes to the host workers.
    pub(super) off_lane: bool,
    /// The outcome callback, shown each delivered outcome by the thread holding the claim.
    pub(super) announcer: Mutex<Announcer>,
    /// Where the caller drives the lane: the device's completion waiter, for the caller that
    /// takes an offered device wait.
    pub(super) waiter: Option<Mutex<Box<dyn CompletionWaiter + Send>>>,
    /// The machine lost the lane to a completion waiter stuck in a call past its bound.
    pub(super) waiter_stuck: AtomicBool,
}

/// What the last run of the steps left the thread to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ran {
    /// Another thread runs the steps (or the executor is not in yet).
    Elsewhere,
    /// Ran them to a sleep until work is posted or `until` (device clock, read at `now`).
    Slept { until: Option<Timestamp>, now: Timestamp },
    /// Let go of them for the lane's own threads (a recovery call a submitter does not make).
    Left,
    /// Ran them to their end after the shutdown.
    Exited,
}

/// The lane's steps, type-erased for the threads that do not own the device's type.
pub(super) trait RunsSteps: Send + Sync {
    /// Runs the lane's steps on the calling thread, as `here` may, until they sleep, unless
    /// another thread runs them. A loss is recorded in the mailbox and returned.
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
        let mut executor = lock(&self.executor);
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
            Err(payload) => LostCause::new(format!(
                "panic on {}: {}",
                thread_label(thread::current().name().unwrap_or("a caller's thread")),
                panic_text(payload.as_ref())
            )),
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
        let mut waiter = lock(waiter);
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
        let waited =
            catch_unwind(AssertUnwindSafe(|| run_device_wait_as(&mut **waiter, &wait, reach)));
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
    pub(super) fn install(&self, executor: Executor<D, R>) {
        *lock(&self.executor) = Some(executor);
    }

    /// Takes the executor out at the lane's end.
    pub(super) fn uninstall(&self) -> Option<Executor<D, R>> {
        lock(&self.executor).take()
    }

    /// Shows the outcome callback the outcomes delivered since the last call, with no lock
    /// held, on the thread holding the claim (never beside a device call: issue 44).
    pub(super) fn announce(&self) {
        let mut announcer = lock(&self.announcer);
        let Announcer { callback, shown } = &mut *announcer;
        if let Some(callback) = callback {
            self.mailbox.take_unannounced(shown);
            for report in shown.drain(..) {
                callback(&report.outcome);
            }
        }
    }

    /// Feeds what was pushed and polls the dispatch machine under the lock, then does what it
    /// asks of this thread with the lock released, until the machine sleeps (and nothing was
    /// posted meanwhile), leaves or ends.
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
                    answer = executor.execute(effect, &mut NoObserver).map_err(|e| lost(&e))?;
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

/// The lane thread: runs the lane's steps when work is posted that no other thread runs them
/// for, and sleeps until the machine's next timer (at least every [`NOTICE_POLL_NS`]), until
/// the steps end after the shutdown.
pub(super) fn lane_thread<D: Device + Send, R: Runner<D> + Send>(
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
pub(super) struct Announcer {
    pub(super) callback: Option<OutcomeCallback>,
    pub(super) shown: VecDeque<Report>,
}

impl Announcer {
    pub(super) fn new(callback: Option<OutcomeCallback>) -> Self {
        // It swaps buffers with the mailbox's, so it starts at the same size.
        let kept = if callback.is_some() { OUTCOMES_KEPT } else { 0 };
        Self { callback, shown: VecDeque::with_capacity(kept) }
    }
}
