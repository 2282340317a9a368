//! The dispatch machine: what the thread running a lane's steps does next, as one sans-IO
//! machine that every driver of a lane drives.
//!
//! [`Dispatch::decide`] takes `now`, the lane's steps, what the other threads answered
//! ([`Helpers`]) and the executor's bookkeeping ([`Bookkeeping`], no device call), and
//! returns what this thread does: execute an effect here, make a device wait here, sleep
//! until the next timer, end, or lose the lane. Runner work and device waits it hands out
//! through [`Helpers`] as it goes. Every decision is a row of [`dispatch_step`]'s table
//! (`docs/state-machines/dispatch.md`), every deadline is in one [`TimerTable`].
//!
//! Three drivers run it: [`Driver::turn`](crate::Driver::turn) in the zero-worker setting
//! ([`Setting::DRIVER`]: every wait made here), lane-service on whichever of its threads has
//! the event, and the simulator's virtual workers in virtual time. None keeps a policy of
//! its own.

mod table;
mod timers;

pub use table::{
    Act, DispatchInput, DispatchRefusal, DispatchState, Setting, dispatch_step, dispatch_table,
};
pub use timers::{Timer, TimerTable};

use lane_core::{Effect, FaultNotice, RecoveryHook, RunPhase, Timestamp};

use crate::answer::Answer;
use crate::device::Device;
use crate::driver::{DriverError, Turn};
use crate::executor::{Executor, Wait};
use crate::observer::Observer;
use crate::runner::{Runner, is_host_work};
use crate::steps::LaneSteps;
use crate::waiter::{DeviceWait, Readback};

/// A host worker's answer to a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkerAnswer {
    /// The worker ran the job ([`run_host_work`](crate::run_host_work)): this answers it,
    /// with the device's text about a failed prepare or finalise, read on the worker's
    /// thread (ACL keeps it per thread).
    Answered(Answer),
    /// The worker could not bind the device: the thread running the steps runs the job.
    HandedBack(Effect),
}

/// What the lane's other threads answered, and where the machine hands work to them. In the
/// zero-worker setting there are none ([`NoHelpers`]).
pub trait Helpers {
    /// The next host worker answer, in the order given.
    fn answer(&mut self) -> Option<WorkerAnswer>;
    /// The completion waiter's latest answer ([`run_device_wait`](crate::run_device_wait)),
    /// with the ticket of the wait it answers.
    fn waited(&mut self) -> Option<(u64, Wait)>;
    /// Hands runner work to a host worker.
    fn dispatch(&mut self, job: Effect);
    /// Hands a device wait to the completion waiter under `ticket` (replacing one it has not
    /// taken).
    fn hand_wait(&mut self, ticket: u64, wait: DeviceWait);
    /// Takes back a wait the waiter has not taken yet.
    fn withdraw_wait(&mut self);
    /// Whether the waiter has taken a wait and not answered it (it is inside a device call).
    fn waiter_inside(&self) -> bool;
    /// Jobs handed to host workers whose answers are not taken yet.
    fn jobs_out(&self) -> usize;
    /// Whether the last handle is gone.
    fn shutdown(&self) -> bool;
}

/// No other thread: the zero-worker setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoHelpers;

impl Helpers for NoHelpers {
    fn answer(&mut self) -> Option<WorkerAnswer> {
        None
    }
    fn waited(&mut self) -> Option<(u64, Wait)> {
        None
    }
    fn dispatch(&mut self, _job: Effect) {}
    fn hand_wait(&mut self, _ticket: u64, _wait: DeviceWait) {}
    fn withdraw_wait(&mut self) {}
    fn waiter_inside(&self) -> bool {
        false
    }
    fn jobs_out(&self) -> usize {
        0
    }
    fn shutdown(&self) -> bool {
        false
    }
}

/// The executor's part of a decision: bookkeeping with no device call.
pub trait Bookkeeping {
    /// The fault notices that concern the lane's device since the last look (L-19).
    fn next_notice(&mut self) -> Option<FaultNotice>;
    /// Does the executor's own part of runner work handed to a worker
    /// ([`Executor::hand_off`]).
    fn hand_off(&mut self, effect: &Effect);
    /// `effect` as a device wait, if it is one ([`Executor::device_wait`]).
    fn device_wait(&mut self, effect: &Effect) -> Option<DeviceWait>;
    /// Notes an `AwaitCompletion` ([`Executor::execute`] makes no device call for it).
    ///
    /// # Errors
    ///
    /// As [`Executor::execute`].
    fn note_await(&mut self, effect: Effect) -> Result<(), DriverError>;
    /// Keeps the status bytes a completion wait read with the run's record
    /// ([`Executor::keep_readback`]).
    fn keep_readback(&mut self, readback: Readback);
    /// The awaited run's completion as a device wait ([`Executor::completion_wait`]).
    ///
    /// # Errors
    ///
    /// As [`Executor::completion_wait`].
    fn completion_wait(
        &mut self,
        deadline: Option<Timestamp>,
    ) -> Result<Option<DeviceWait>, DriverError>;
}

impl<D: Device, R: Runner<D>> Bookkeeping for Executor<D, R> {
    fn next_notice(&mut self) -> Option<FaultNotice> {
        Self::next_notice(self)
    }
    fn hand_off(&mut self, effect: &Effect) {
        Self::hand_off(self, effect);
    }
    fn device_wait(&mut self, effect: &Effect) -> Option<DeviceWait> {
        Self::device_wait(self, effect)
    }
    fn note_await(&mut self, effect: Effect) -> Result<(), DriverError> {
        self.execute(effect, &mut crate::NoObserver).map(drop)
    }
    fn keep_readback(&mut self, readback: Readback) {
        Self::keep_readback(self, readback);
    }
    fn completion_wait(
        &mut self,
        deadline: Option<Timestamp>,
    ) -> Result<Option<DeviceWait>, DriverError> {
        Self::completion_wait(self, deadline)
    }
}

/// What the thread running the steps does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Execute this effect on this thread (no lock held), then feed the executor's answer
    /// with [`LaneSteps::feed`].
    Execute(Effect),
    /// Make this device wait on this thread, then give the answer to
    /// [`Dispatch::answer_here`] (the zero-worker setting only).
    WaitHere {
        /// The wait's ticket.
        ticket: u64,
        /// The wait.
        wait: DeviceWait,
    },
    /// Nothing to do until an answer, a command, or this deadline (`None`: no timer).
    Sleep(Option<Timestamp>),
    /// Settled after the shutdown: the thread ends.
    Exit,
    /// The lane cannot go on safely: it ends, lost.
    Lose(Loss),
}

/// Why the machine ends a lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Loss {
    /// L-20: a force reset is due and the completion waiter is still inside a device call
    /// past its bound.
    #[error(
        "the completion waiter is still inside a device call past its bound: no force reset \
         is made under a wait (L-20), so the device is left unrecovered"
    )]
    WaiterStuck,
}

/// The device wait out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WaitOut {
    /// Its ticket: an answer naming another is stale.
    ticket: u64,
    wait: DeviceWait,
}

/// The dispatch machine's state: the wait out, the held reset, the shutdown's progress and
/// the timers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    setting: Setting,
    state: DispatchState,
    wait_out: Option<WaitOut>,
    /// Device waits handed out so far (each one's ticket).
    tickets: u64,
    /// The latest bound of any wait handed out: a waiter's call returns by then.
    latest_bound: Timestamp,
    held_reset: Option<Effect>,
    closed_for_shutdown: bool,
    teardown_retried: bool,
    /// How often to look at the notice ring while asleep (`None`: the caller looks).
    notice_poll_ns: Option<u64>,
    timers: TimerTable,
    /// Every (state, input) this machine took, for the explorer's coverage.
    trail: Option<Vec<(DispatchState, DispatchInput)>>,
}

impl Dispatch {
    /// A machine in `setting`; a sleeping thread looks at the notice ring every
    /// `notice_poll_ns` (`None`: the caller looks at it on its own calls).
    #[must_use]
    pub const fn new(setting: Setting, notice_poll_ns: Option<u64>) -> Self {
        Self {
            setting,
            state: DispatchState::Free,
            wait_out: None,
            tickets: 0,
            latest_bound: Timestamp(0),
            held_reset: None,
            closed_for_shutdown: false,
            teardown_retried: false,
            notice_poll_ns,
            timers: TimerTable::new(),
            trail: None,
        }
    }

    /// Records every (state, input) taken from now on ([`Dispatch::trail`]).
    #[must_use]
    pub fn recording(mut self) -> Self {
        self.trail = Some(Vec::new());
        self
    }

    /// The (state, input) pairs taken since [`Dispatch::recording`].
    #[must_use]
    pub fn trail(&self) -> &[(DispatchState, DispatchInput)] {
        self.trail.as_deref().unwrap_or(&[])
    }

    /// The setting.
    #[must_use]
    pub const fn setting(&self) -> Setting {
        self.setting
    }

    /// The machine's state.
    #[must_use]
    pub const fn state(&self) -> DispatchState {
        self.state
    }

    /// The timers.
    #[must_use]
    pub const fn timers(&self) -> &TimerTable {
        &self.timers
    }

    /// Whether a device wait is out (on the waiter, or left for this thread).
    #[must_use]
    pub const fn wait_out(&self) -> bool {
        self.wait_out.is_some()
    }

    /// Takes `input` through the table.
    fn take(&mut self, input: DispatchInput) -> Result<Act, DriverError> {
        let (next, act) = dispatch_step(self.setting, self.state, input).map_err(|refusal| {
            DriverError::Dispatch {
                state: self.state,
                input,
                refusal,
            }
        })?;
        if let Some(trail) = &mut self.trail {
            trail.push((self.state, input));
        }
        self.state = next;
        Ok(act)
    }

    /// Decides what this thread does next at `now`: feeds every answer the other threads
    /// gave, the notices and the shutdown, hands out runner work and device waits, answers a
    /// wait past its bound, and returns the first thing this thread must do itself.
    ///
    /// # Errors
    ///
    /// A [`DriverError`] from a lane step (a lost lane), or [`DriverError::Dispatch`] for a
    /// situation the table rules out (a bug).
    pub fn decide<O: Observer>(
        &mut self,
        now: Timestamp,
        steps: &mut LaneSteps<O>,
        helpers: &mut impl Helpers,
        books: &mut impl Bookkeeping,
    ) -> Result<Next, DriverError> {
        if let Some(poll) = self.notice_poll_ns {
            self.timers.set(Timer::NoticePoll, now.after_ns(poll));
        }
        while let Some(answer) = helpers.answer() {
            match answer {
                WorkerAnswer::Answered(answer) => {
                    self.take(DispatchInput::WorkerAnswered)?;
                    steps.feed(now, answer)?;
                }
                // The answers left are taken at the next decision, which follows the
                // execution without a sleep.
                WorkerAnswer::HandedBack(effect) => {
                    self.take(DispatchInput::HandedBack)?;
                    return Ok(Next::Execute(effect));
                }
            }
        }
        self.take_notices(now, steps, books)?;
        if self.state == DispatchState::ResetHeld {
            // A wait not taken yet never starts: the check and the withdrawal are one step
            // under the caller's lock, so the waiter cannot take it after the reset.
            helpers.withdraw_wait();
            if !helpers.waiter_inside() {
                self.take(DispatchInput::WaiterLeft)?;
                self.timers.stop(Timer::WaiterBound);
                if let Some(effect) = self.held_reset.take() {
                    return Ok(Next::Execute(effect));
                }
            } else if self.timers.passed(Timer::WaiterBound, now) {
                self.take(DispatchInput::WaiterPastBound)?;
                return Ok(Next::Lose(Loss::WaiterStuck));
            } else {
                self.take(DispatchInput::WaiterInside)?;
                return Ok(Next::Sleep(self.timers.next_timeout()));
            }
        }
        self.forget_abandoned(steps)?;
        if let Some((ticket, waited)) = helpers.waited() {
            match self.wait_out.filter(|out| out.ticket == ticket) {
                Some(out) => self.answer(now, steps, helpers, books, out, waited)?,
                None => {
                    self.take(DispatchInput::StaleWaited)?;
                }
            }
        }
        if helpers.shutdown() && !self.closed_for_shutdown {
            self.take(DispatchInput::Shutdown)?;
            self.closed_for_shutdown = true;
            steps.close(now)?;
        }
        // S-7: a stream the teardown left gets one more destroy before the thread ends.
        if helpers.shutdown()
            && !self.teardown_retried
            && steps.lane().state().is_closed()
            && !steps.lane().streams_left().is_empty()
        {
            self.take(DispatchInput::TeardownLeft)?;
            self.teardown_retried = true;
            steps.retry_teardown(now)?;
        }
        loop {
            while let Some(effect) = steps.next_effect(now) {
                if let Some(next) = self.route(now, effect, helpers, books)? {
                    return Ok(next);
                }
            }
            self.forget_abandoned(steps)?;
            if self.wait_out.is_none() {
                if let Some(wait) = books.completion_wait(steps.deadline())? {
                    let act = self.take(DispatchInput::Awaiting)?;
                    let ticket = self.hand_wait(now, wait, helpers);
                    if act == Act::WaitHere {
                        return Ok(Next::WaitHere { ticket, wait });
                    }
                }
            }
            match self.wait_out {
                Some(out) if self.timers.passed(Timer::WaitBound, now) => {
                    self.take(DispatchInput::BoundPassed)?;
                    self.clear_wait();
                    // Not started yet: the waiter never makes it.
                    helpers.withdraw_wait();
                    // Past the deadline the lane poisons; were the run still awaiting,
                    // nothing would be out and the settle check would report it stuck.
                    apply(steps, now, out.wait.answer_at_bound(now), books)?;
                }
                _ => break,
            }
        }
        let input = if self.wait_out.is_some() {
            DispatchInput::Waiting
        } else if helpers.jobs_out() > 0 {
            DispatchInput::JobsOut
        } else {
            // Nothing to do, nothing out: the lane must be settled (else it is stuck).
            let settled = steps.settled()?;
            if helpers.shutdown() && settled == Turn::Idle {
                DispatchInput::SettledShutdown
            } else {
                DispatchInput::Settled
            }
        };
        Ok(match (self.take(input)?, self.wait_out) {
            (Act::WaitHere, Some(out)) => Next::WaitHere {
                ticket: out.ticket,
                wait: out.wait,
            },
            (Act::Exit, _) => Next::Exit,
            _ => Next::Sleep(self.timers.next_timeout()),
        })
    }

    /// Gives the lane every fault notice that concerns its device since the last look
    /// (L-19); a driver also looks before each command, so the command sees the notice.
    ///
    /// # Errors
    ///
    /// A lane step's [`DriverError`].
    pub fn take_notices<O: Observer>(
        &mut self,
        now: Timestamp,
        steps: &mut LaneSteps<O>,
        books: &mut impl Bookkeeping,
    ) -> Result<(), DriverError> {
        while let Some(notice) = books.next_notice() {
            self.take(DispatchInput::Notice)?;
            steps.fault_notice(now, notice)?;
        }
        Ok(())
    }

    /// Routes one effect: handed out (`None`: look at the next), or this thread's to do.
    fn route(
        &mut self,
        now: Timestamp,
        effect: Effect,
        helpers: &mut impl Helpers,
        books: &mut impl Bookkeeping,
    ) -> Result<Option<Next>, DriverError> {
        let input = if is_host_work(&effect) {
            DispatchInput::HostWork
        } else if matches!(effect, Effect::DrainDevice { .. }) {
            DispatchInput::Drain
        } else if matches!(
            effect,
            Effect::ForceReset { .. } | Effect::Hook(RecoveryHook::OnPoison { .. })
        ) {
            // L-20, and L-24: after `OnPoison` the runtime resets the device, so it too waits
            // until the waiter is out of its device call.
            helpers.withdraw_wait();
            if helpers.waiter_inside() {
                DispatchInput::ResetUnderWait
            } else {
                DispatchInput::Reset
            }
        } else if matches!(effect, Effect::AwaitCompletion { .. }) {
            DispatchInput::Await
        } else {
            DispatchInput::Call
        };
        Ok(match self.take(input)? {
            Act::ToWorker => {
                books.hand_off(&effect);
                helpers.dispatch(effect);
                None
            }
            Act::ToWaiter => {
                if let Some(wait) = books.device_wait(&effect) {
                    self.hand_wait(now, wait, helpers);
                }
                None
            }
            Act::Note => {
                books.note_await(effect)?;
                None
            }
            Act::Hold => {
                self.held_reset = Some(effect);
                self.timers.set(Timer::WaiterBound, self.latest_bound);
                Some(Next::Sleep(self.timers.next_timeout()))
            }
            // A drain made here still forgets what was awaited, as the executor does.
            _ => Some(Next::Execute(effect)),
        })
    }

    /// Gives the wait a fresh ticket and hands it out (to the waiter, or keeps it for this
    /// thread); it is the wait out now (one replaced is abandoned).
    fn hand_wait(&mut self, now: Timestamp, wait: DeviceWait, helpers: &mut impl Helpers) -> u64 {
        self.tickets += 1;
        let ticket = self.tickets;
        self.wait_out = Some(WaitOut { ticket, wait });
        if self.setting.waiter {
            let bound = wait.bound(now);
            self.latest_bound = self.latest_bound.max(bound);
            self.timers.set(Timer::WaitBound, bound);
            helpers.hand_wait(ticket, wait);
        }
        ticket
    }

    fn clear_wait(&mut self) {
        self.wait_out = None;
        self.timers.stop(Timer::WaitBound);
    }

    /// Forgets a completion wait whose run no longer awaits (a poison abandoned it).
    fn forget_abandoned<O: Observer>(&mut self, steps: &LaneSteps<O>) -> Result<(), DriverError> {
        if self
            .wait_out
            .is_some_and(|out| !still_asked(steps, &out.wait))
        {
            self.take(DispatchInput::Abandoned)?;
            self.clear_wait();
        }
        Ok(())
    }

    /// Feeds the answer to the wait out; a run still awaiting after an early answer gets the
    /// same wait again.
    fn answer<O: Observer>(
        &mut self,
        now: Timestamp,
        steps: &mut LaneSteps<O>,
        helpers: &mut impl Helpers,
        books: &mut impl Bookkeeping,
        out: WaitOut,
        waited: Wait,
    ) -> Result<(), DriverError> {
        let early = !matches!(waited, Wait::Answered(_) | Wait::Completed { .. });
        apply(steps, now, waited, books)?;
        if early && still_asked(steps, &out.wait) {
            self.take(DispatchInput::WaitedEarly)?;
            self.hand_wait(now, out.wait, helpers);
        } else {
            self.take(DispatchInput::Waited)?;
            self.clear_wait();
        }
        Ok(())
    }

    /// The answer to a wait made here ([`Next::WaitHere`] with `ticket`), at `now`.
    ///
    /// # Errors
    ///
    /// A lane step's [`DriverError`].
    pub fn answer_here<O: Observer>(
        &mut self,
        now: Timestamp,
        steps: &mut LaneSteps<O>,
        books: &mut impl Bookkeeping,
        ticket: u64,
        waited: Wait,
    ) -> Result<(), DriverError> {
        match self.wait_out.filter(|out| out.ticket == ticket) {
            Some(out) => self.answer(now, steps, &mut NoHelpers, books, out, waited),
            // Abandoned meanwhile (nothing else runs here, so only a bug gets here).
            None => Ok(()),
        }
    }
}

/// Whether the lane still waits for `wait`'s answer: a completion's run is still awaiting
/// (a poison moves it on); a drain always is.
fn still_asked<O: Observer>(steps: &LaneSteps<O>, wait: &DeviceWait) -> bool {
    match *wait {
        DeviceWait::Completion { run, .. } => {
            matches!(steps.lane().phase_of(run), Some(RunPhase::Awaiting { .. }))
        }
        DeviceWait::Drain { .. } => true,
    }
}

/// Feeds a device wait's answer to the lane; status bytes read with a record go to the
/// executor first, for the status read the answer leads to.
fn apply<O: Observer>(
    steps: &mut LaneSteps<O>,
    now: Timestamp,
    waited: Wait,
    books: &mut impl Bookkeeping,
) -> Result<(), DriverError> {
    match waited {
        Wait::Answered(answer) => steps.feed(now, answer),
        Wait::Completed { answer, readback } => {
            books.keep_readback(readback);
            steps.feed(now, answer)
        }
        Wait::Expired(at) => steps.expire(now.max(at)),
        Wait::Pending => Ok(()),
    }
}
