//! The dispatch machine: what the thread running a lane's steps does next, as one sans-IO
//! machine every driver of a lane drives, in quinn-proto's shape.
//!
//! - **Inputs are pushed** (`handle_*`), with no lane step: a worker's answer, the waiter's
//!   start and answer of a wait, the last handle's drop, a timer's passing.
//! - **What the thread does next is polled**: [`Dispatch::poll`] feeds what was pushed and
//!   returns one [`Next`]. The wait a waiter may take is [`Dispatch::offered`], which a
//!   driver mirrors after every poll (a withdrawn wait is one no longer offered).
//! - **The state carries its data** ([`State`]). Every decision is a row of
//!   [`dispatch_step`]'s table (`docs/state-machines/dispatch.md`); every deadline is in one
//!   [`TimerTable`], derived from the state after each poll.
//!
//! Three drivers run it: [`Driver::turn`](crate::Driver::turn) ([`Setting::DRIVER`]),
//! lane-service (L-23 included) and the simulator's virtual workers. None keeps a policy of
//! its own. [`Bookkeeping`] stays a trait: its calls are the executor's own records, answered
//! synchronously with no device call, so polling them out as values would only add a round
//! trip per effect.

mod table;
mod timers;

pub use table::{
    Act, DispatchInput, DispatchRefusal, DispatchState, Setting, dispatch_step, dispatch_table,
};
pub use timers::{Timer, TimerTable};

use std::collections::VecDeque;

use lane_core::{Effect, FaultNotice, MAX_SLOTS, RecoveryHook, RunPhase, Timestamp};

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
    /// The worker ran the job ([`run_host_work`](crate::run_host_work)): this answers it
    /// (with the device's text, read on the worker's thread).
    Answered(Answer),
    /// The worker could not bind the device: the thread running the steps runs the job.
    HandedBack(Effect),
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
    fn note_await(&mut self, effect: Effect) -> Result<(), DriverError>;
    /// Keeps the status bytes a completion wait read with the run's record
    /// ([`Executor::keep_readback`]).
    fn keep_readback(&mut self, readback: Readback);
    /// The awaited run's completion as a device wait ([`Executor::completion_wait`]).
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

/// Which thread polls: what it may make.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Here {
    /// One of the lane's own threads, a driving caller's, or the single-thread driver: it
    /// makes every call the machine gives it.
    Own,
    /// A bound submitting thread (inside `submit` or `publish`): it makes no recovery call
    /// ([`Next::Leave`]).
    Submitter,
}

/// What the thread running the steps does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Execute this effect on this thread (no lock held), then feed the executor's answer
    /// with [`LaneSteps::feed`].
    Execute(Effect),
    /// Hand this runner work to a host worker, then poll again.
    ToWorker(Effect),
    /// Offer this device wait to the completion waiter under `ticket` (replacing one it has
    /// not taken), then poll again.
    ToWaiter {
        /// The wait's ticket: the waiter's start and answer name it.
        ticket: u64,
        /// The wait.
        wait: DeviceWait,
    },
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
    /// Let go of the steps and wake one of the lane's own threads: a recovery call is next
    /// and this thread makes none ([`Here::Submitter`]).
    Leave,
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
pub struct WaitOut {
    /// Its ticket: an answer naming another is stale.
    pub ticket: u64,
    /// The wait.
    pub wait: DeviceWait,
    /// When it was handed out: its bound counts from here until the waiter starts it.
    pub handed: Timestamp,
}

/// A force reset held until the completion waiter leaves its device call (L-20).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldReset {
    /// The `ForceReset` effect.
    pub reset: Effect,
    /// The bound of the waiter's call, counted from its start: past it the waiter ignores
    /// its timeout, and the lane is lost.
    pub bound: Timestamp,
}

/// The machine's state, with its data; [`State::kind`] is the table's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// No device wait is out.
    Free,
    /// One device wait is out.
    WaitOut(WaitOut),
    /// A force reset waits for the waiter.
    ResetHeld(HeldReset),
    /// A recovery call waits for one of the lane's own threads.
    Deferred(Effect),
}

impl State {
    /// The state's row in [`dispatch_step`]'s table.
    #[must_use]
    pub const fn kind(&self) -> DispatchState {
        match self {
            Self::Free => DispatchState::Free,
            Self::WaitOut(_) => DispatchState::WaitOut,
            Self::ResetHeld(_) => DispatchState::ResetHeld,
            Self::Deferred(_) => DispatchState::Deferred,
        }
    }
}

/// The completion waiter as the machine was told of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiter {
    /// In no device call.
    Idle,
    /// Inside the call of the wait `ticket`, which returns by `bound` (counted from the
    /// call's start).
    Inside {
        /// The wait's ticket.
        ticket: u64,
        /// When the call returns at the latest.
        bound: Timestamp,
    },
}

/// How far the last handle's drop got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shutdown {
    /// The lane's handles are alive.
    Open,
    /// The last handle is gone; the lane is not closed for it yet.
    Asked,
    /// Closed for the shutdown.
    Closed,
    /// Closed, and the streams the teardown left were destroyed once more (S-7).
    Retried,
}

/// Where the next poll picks up: a hand-out returns at once, and the poll after it goes on
/// where that one left off, so what is handed out is handed out in the order it was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resume {
    /// Feed what was pushed, then look at the lane's effects.
    Start,
    /// Look at the lane's effects.
    Effects,
}

/// The dispatch machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    setting: Setting,
    state: State,
    waiter: Waiter,
    shutdown: Shutdown,
    resume: Resume,
    /// Host workers' answers pushed and not fed yet, in the order given (one job per slot is
    /// out at most, so the queue never grows past its first allocation).
    answers: VecDeque<WorkerAnswer>,
    /// The waiter's latest answer, not fed yet (a later one replaces it: the earlier answered
    /// a wait abandoned since).
    waited: Option<(u64, Wait)>,
    /// A wait handed out again after an early answer, returned by the poll that fed it.
    again: Option<(u64, DeviceWait)>,
    /// Jobs handed to host workers whose answers are not fed yet.
    jobs: usize,
    /// Device waits handed out so far (each one's ticket).
    tickets: u64,
    /// How often to look at the notice ring while asleep (`None`: the caller looks).
    notice_poll_ns: Option<u64>,
    timers: TimerTable,
    /// Every (state, input) this machine took, for the explorer's coverage.
    trail: Option<Vec<(DispatchState, DispatchInput)>>,
    /// The state the last row taken leads to (checked against the state at the next).
    row_led_to: DispatchState,
}

impl Dispatch {
    /// A machine in `setting`; a sleeping thread looks at the notice ring every
    /// `notice_poll_ns` (`None`: the caller looks at it on its own calls).
    #[must_use]
    pub fn new(setting: Setting, notice_poll_ns: Option<u64>) -> Self {
        Self {
            setting,
            state: State::Free,
            waiter: Waiter::Idle,
            shutdown: Shutdown::Open,
            resume: Resume::Start,
            answers: VecDeque::with_capacity(usize::from(MAX_SLOTS)),
            waited: None,
            again: None,
            jobs: 0,
            tickets: 0,
            notice_poll_ns,
            timers: TimerTable::new(),
            trail: None,
            row_led_to: DispatchState::Free,
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
    pub const fn state(&self) -> &State {
        &self.state
    }

    /// The completion waiter, as the machine was told of it.
    #[must_use]
    pub const fn waiter(&self) -> Waiter {
        self.waiter
    }

    /// The timers.
    #[must_use]
    pub const fn timers(&self) -> &TimerTable {
        &self.timers
    }

    /// The earliest timer: until when a thread with nothing to do may sleep.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.timers.next_timeout()
    }

    /// The wait the completion waiter may take now, with its ticket: the wait out while the
    /// waiter has not started it. Mirrored after every poll, so a withdrawn wait is never
    /// started.
    #[must_use]
    pub const fn offered(&self) -> Option<(u64, DeviceWait)> {
        match self.state {
            State::WaitOut(out) if self.setting.waiter => match self.waiter {
                Waiter::Inside { ticket, .. } if ticket == out.ticket => None,
                _ => Some((out.ticket, out.wait)),
            },
            _ => None,
        }
    }

    /// Takes `input` through the table.
    fn take(&mut self, input: DispatchInput) -> Result<Act, DriverError> {
        let kind = self.state.kind();
        debug_assert_eq!(kind, self.row_led_to, "the state moves as its last row said");
        let (next, act) = dispatch_step(self.setting, kind, input)
            .map_err(|refusal| DriverError::Dispatch { state: kind, input, refusal })?;
        if let Some(trail) = &mut self.trail {
            trail.push((kind, input));
        }
        // The caller moves the state's data with the row, to the kind the row names.
        self.row_led_to = next;
        Ok(act)
    }

    /// A host worker answered a job; fed at the next poll, in the order given.
    pub fn handle_answer(&mut self, answer: WorkerAnswer) {
        self.answers.push_back(answer);
    }

    /// The completion waiter started the offered wait `ticket`'s device call at `at`: the
    /// wait's bound counts from there. Pushing the same start again changes nothing.
    ///
    /// # Errors
    ///
    /// [`DriverError::Dispatch`] when `ticket` is not the wait offered (a driver bug).
    pub fn handle_wait_started(&mut self, ticket: u64, at: Timestamp) -> Result<(), DriverError> {
        if matches!(self.waiter, Waiter::Inside { ticket: inside, .. } if inside == ticket) {
            return Ok(());
        }
        let out = match self.state {
            State::WaitOut(out) if out.ticket == ticket => Some(out),
            _ => None,
        };
        self.take(DispatchInput::WaitStarted)?;
        let Some(out) = out else {
            return Err(DriverError::Dispatch {
                state: self.state.kind(),
                input: DispatchInput::WaitStarted,
                refusal: DispatchRefusal::NotExpected,
            });
        };
        self.waiter = Waiter::Inside { ticket, bound: out.wait.bound(at) };
        self.refresh_timers();
        Ok(())
    }

    /// The completion waiter answered the wait `ticket` and left its device call; the answer
    /// is fed at the next poll (or dropped, when that wait is no longer out).
    pub fn handle_waited(&mut self, ticket: u64, waited: Wait) {
        if matches!(self.waiter, Waiter::Inside { ticket: inside, .. } if inside <= ticket) {
            self.waiter = Waiter::Idle;
        }
        self.waited = Some((ticket, waited));
        self.refresh_timers();
    }

    /// The last handle is gone: the next poll closes the lane, and the machine exits once it
    /// is settled. Pushing it again changes nothing.
    pub const fn handle_shutdown(&mut self) {
        if matches!(self.shutdown, Shutdown::Open) {
            self.shutdown = Shutdown::Asked;
        }
    }

    /// Whether the shutdown was pushed.
    #[must_use]
    pub const fn shutting_down(&self) -> bool {
        !matches!(self.shutdown, Shutdown::Open)
    }

    /// Whether a timer is due at `now`: for a sleeping driver deciding whether to poll.
    #[must_use]
    pub fn handle_timeout(&self, now: Timestamp) -> bool {
        self.timers.next_timeout().is_some_and(|at| now >= at)
    }

    /// Decides what this thread does next at `now`: feeds what was pushed, hands out runner
    /// work and device waits (one per poll), answers a wait past its bound, and returns the
    /// first thing this thread must do itself.
    ///
    /// # Errors
    ///
    /// A [`DriverError`] from a lane step (a lost lane), or [`DriverError::Dispatch`] for a
    /// situation the table rules out (a bug).
    pub fn poll<O: Observer>(
        &mut self,
        now: Timestamp,
        here: Here,
        steps: &mut LaneSteps<O>,
        books: &mut impl Bookkeeping,
    ) -> Result<Next, DriverError> {
        let next = self.decide(now, here, steps, books);
        self.resume = match next {
            Ok(Next::ToWorker(_) | Next::ToWaiter { .. }) => Resume::Effects,
            _ => Resume::Start,
        };
        self.refresh_timers();
        debug_assert_eq!(self.state.kind(), self.row_led_to, "the state moved as its row said");
        next
    }

    fn decide<O: Observer>(
        &mut self,
        now: Timestamp,
        here: Here,
        steps: &mut LaneSteps<O>,
        books: &mut impl Bookkeeping,
    ) -> Result<Next, DriverError> {
        if self.resume == Resume::Start {
            if let Some(next) = self.preamble(now, here, steps, books)? {
                return Ok(next);
            }
            if let Some((ticket, wait)) = self.again.take() {
                return Ok(Next::ToWaiter { ticket, wait });
            }
        }
        loop {
            while let Some(effect) = steps.next_effect(now) {
                if let Some(next) = self.route(now, here, effect, books)? {
                    return Ok(next);
                }
            }
            self.forget_abandoned(steps)?;
            if matches!(self.state, State::Free) {
                if let Some(wait) = books.completion_wait(steps.deadline())? {
                    let act = self.take(DispatchInput::Awaiting)?;
                    let ticket = self.hand_wait(now, wait);
                    return Ok(if act == Act::WaitHere {
                        Next::WaitHere { ticket, wait }
                    } else {
                        Next::ToWaiter { ticket, wait }
                    });
                }
            }
            match self.state {
                State::WaitOut(out) if self.wait_bound().is_some_and(|at| now >= at) => {
                    self.take(DispatchInput::BoundPassed)?;
                    // No longer offered: a waiter that has not taken it never makes it.
                    self.state = State::Free;
                    // Past the deadline the lane poisons; were the run still awaiting,
                    // nothing would be out and the settle check would report it stuck.
                    apply(steps, now, out.wait.answer_at_bound(now), books)?;
                }
                _ => break,
            }
        }
        let input = if matches!(self.state, State::WaitOut(_)) {
            DispatchInput::Waiting
        } else if self.jobs > 0 {
            DispatchInput::JobsOut
        } else {
            // Nothing to do, nothing out: the lane must be settled (else it is stuck).
            let settled = steps.settled()?;
            if self.shutting_down() && settled == Turn::Idle {
                DispatchInput::SettledShutdown
            } else {
                DispatchInput::Settled
            }
        };
        let act = self.take(input)?;
        self.refresh_timers();
        Ok(match (act, self.state) {
            (Act::WaitHere, State::WaitOut(out)) => {
                Next::WaitHere { ticket: out.ticket, wait: out.wait }
            }
            (Act::Exit, _) => Next::Exit,
            _ => Next::Sleep(self.timers.next_timeout()),
        })
    }

    /// What a poll feeds before it looks at the lane's effects. `Some`: what this thread does
    /// now.
    fn preamble<O: Observer>(
        &mut self,
        now: Timestamp,
        here: Here,
        steps: &mut LaneSteps<O>,
        books: &mut impl Bookkeeping,
    ) -> Result<Option<Next>, DriverError> {
        if let Some(poll) = self.notice_poll_ns {
            self.timers.set(Timer::NoticePoll, now.after_ns(poll));
        }
        while let Some(answer) = self.answers.pop_front() {
            self.jobs = self.jobs.saturating_sub(1);
            match answer {
                WorkerAnswer::Answered(answer) => {
                    self.take(DispatchInput::WorkerAnswered)?;
                    steps.feed(now, answer)?;
                }
                // The answers left are taken at the next poll, which follows the execution
                // without a sleep.
                WorkerAnswer::HandedBack(effect) => {
                    self.take(DispatchInput::HandedBack)?;
                    return Ok(Some(Next::Execute(effect)));
                }
            }
        }
        self.take_notices(now, steps, books)?;
        if here == Here::Submitter && matches!(self.state, State::ResetHeld(_) | State::Deferred(_))
        {
            self.take(DispatchInput::Elsewhere)?;
            return Ok(Some(Next::Leave));
        }
        match self.state {
            State::ResetHeld(held) => {
                return Ok(Some(match self.waiter {
                    Waiter::Idle => {
                        self.take(DispatchInput::WaiterLeft)?;
                        self.state = State::Free;
                        Next::Execute(held.reset)
                    }
                    Waiter::Inside { .. } if now >= held.bound => {
                        self.take(DispatchInput::WaiterPastBound)?;
                        Next::Lose(Loss::WaiterStuck)
                    }
                    Waiter::Inside { .. } => {
                        self.take(DispatchInput::WaiterInside)?;
                        self.refresh_timers();
                        Next::Sleep(self.timers.next_timeout())
                    }
                }));
            }
            State::Deferred(effect) => {
                self.take(DispatchInput::Resume)?;
                self.state = State::Free;
                if let Some(next) = self.route(now, here, effect, books)? {
                    return Ok(Some(next));
                }
            }
            State::Free | State::WaitOut(_) => {}
        }
        self.forget_abandoned(steps)?;
        if let Some((ticket, waited)) = self.waited.take() {
            match self.state {
                State::WaitOut(out) if out.ticket == ticket => {
                    self.answer(now, steps, books, out, waited)?;
                }
                _ => {
                    self.take(DispatchInput::StaleWaited)?;
                }
            }
        }
        if self.shutdown == Shutdown::Asked {
            self.take(DispatchInput::Shutdown)?;
            self.shutdown = Shutdown::Closed;
            steps.close(now)?;
        }
        // S-7: a stream the teardown left gets one more destroy before the thread ends.
        if self.shutdown == Shutdown::Closed
            && steps.lane().state().is_closed()
            && !steps.lane().streams_left().is_empty()
        {
            self.take(DispatchInput::TeardownLeft)?;
            self.shutdown = Shutdown::Retried;
            steps.retry_teardown(now)?;
        }
        self.resume = Resume::Effects;
        Ok(None)
    }

    /// Gives the lane every fault notice that concerns its device since the last look
    /// (L-19); a driver also looks before each command, so the command sees the notice.
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

    /// Routes one effect: handed out or noted (`None`: look at the next), or this thread's
    /// to do.
    fn route(
        &mut self,
        now: Timestamp,
        here: Here,
        effect: Effect,
        books: &mut impl Bookkeeping,
    ) -> Result<Option<Next>, DriverError> {
        // Recovery's calls, and the runtime's notifications of it (after `OnPoison` the
        // runtime resets the device itself, L-24), are the lane's own threads' to make.
        let recovery =
            matches!(effect, Effect::ForceReset { .. } | Effect::Probe { .. } | Effect::Hook(_));
        let input = if recovery && here == Here::Submitter && self.setting.waiter {
            DispatchInput::Elsewhere
        } else if is_host_work(&effect) {
            DispatchInput::HostWork
        } else if matches!(effect, Effect::DrainDevice { .. }) {
            DispatchInput::Drain
        } else if matches!(
            effect,
            Effect::ForceReset { .. } | Effect::Hook(RecoveryHook::OnPoison { .. })
        ) {
            // L-20, and L-24: after `OnPoison` the runtime resets the device, so it too waits
            // until the waiter is out of its device call.
            match self.waiter {
                Waiter::Inside { .. } => DispatchInput::ResetUnderWait,
                Waiter::Idle => DispatchInput::Reset,
            }
        } else if matches!(effect, Effect::AwaitCompletion { .. }) {
            DispatchInput::Await
        } else {
            DispatchInput::Call
        };
        Ok(match self.take(input)? {
            Act::ToWorker => {
                books.hand_off(&effect);
                self.jobs += 1;
                Some(Next::ToWorker(effect))
            }
            Act::ToWaiter => books.device_wait(&effect).map(|wait| {
                let ticket = self.hand_wait(now, wait);
                Next::ToWaiter { ticket, wait }
            }),
            Act::Note => {
                books.note_await(effect)?;
                None
            }
            Act::Hold => {
                // ResetUnderWait is taken only while the waiter is inside a call.
                let Waiter::Inside { bound, .. } = self.waiter else {
                    return Err(DriverError::Dispatch {
                        state: DispatchState::ResetHeld,
                        input,
                        refusal: DispatchRefusal::NotExpected,
                    });
                };
                self.state = State::ResetHeld(HeldReset { reset: effect, bound });
                self.refresh_timers();
                Some(Next::Sleep(self.timers.next_timeout()))
            }
            Act::Defer => {
                self.state = State::Deferred(effect);
                Some(Next::Leave)
            }
            // A drain made here still forgets what was awaited, as the executor does.
            _ => Some(Next::Execute(effect)),
        })
    }

    /// Gives the wait a fresh ticket; it is the wait out now (one replaced is abandoned).
    fn hand_wait(&mut self, now: Timestamp, wait: DeviceWait) -> u64 {
        self.tickets += 1;
        let ticket = self.tickets;
        self.state = State::WaitOut(WaitOut { ticket, wait, handed: now });
        ticket
    }

    /// The wait out's bound (only with a waiter): from the start of the waiter's call once it
    /// took it; from its hand-out while the waiter is inside an older call; none while it is
    /// offered to an idle waiter (a driving caller may not have called `wait` yet).
    fn wait_bound(&self) -> Option<Timestamp> {
        let State::WaitOut(out) = self.state else {
            return None;
        };
        if !self.setting.waiter {
            return None;
        }
        match self.waiter {
            Waiter::Inside { ticket, bound } if ticket == out.ticket => Some(bound),
            Waiter::Inside { .. } => Some(out.wait.bound(out.handed)),
            Waiter::Idle => None,
        }
    }

    /// The timers, from the state.
    fn refresh_timers(&mut self) {
        match self.wait_bound() {
            Some(at) => self.timers.set(Timer::WaitBound, at),
            None => self.timers.stop(Timer::WaitBound),
        }
        match self.state {
            State::ResetHeld(held) => self.timers.set(Timer::WaiterBound, held.bound),
            _ => self.timers.stop(Timer::WaiterBound),
        }
    }

    /// Forgets a completion wait whose run no longer awaits (a poison abandoned it); no
    /// longer offered, a waiter that has not taken it never makes it.
    fn forget_abandoned<O: Observer>(&mut self, steps: &LaneSteps<O>) -> Result<(), DriverError> {
        if let State::WaitOut(out) = self.state {
            if !still_asked(steps, &out.wait) {
                self.take(DispatchInput::Abandoned)?;
                self.state = State::Free;
            }
        }
        Ok(())
    }

    /// Feeds the answer to the wait out; a run still awaiting after an early answer (the
    /// waiter's expiry, or a wait the caller cut short) gets the same wait again.
    fn answer<O: Observer>(
        &mut self,
        now: Timestamp,
        steps: &mut LaneSteps<O>,
        books: &mut impl Bookkeeping,
        out: WaitOut,
        waited: Wait,
    ) -> Result<(), DriverError> {
        let early = !matches!(waited, Wait::Answered(_) | Wait::Completed { .. });
        apply(steps, now, waited, books)?;
        if early && still_asked(steps, &out.wait) {
            self.take(DispatchInput::WaitedEarly)?;
            let ticket = self.hand_wait(now, out.wait);
            if self.setting.waiter {
                self.again = Some((ticket, out.wait));
            }
        } else {
            self.take(DispatchInput::Waited)?;
            self.state = State::Free;
        }
        Ok(())
    }

    /// The answer to a wait made here ([`Next::WaitHere`] with `ticket`), at `now`.
    pub fn answer_here<O: Observer>(
        &mut self,
        now: Timestamp,
        steps: &mut LaneSteps<O>,
        books: &mut impl Bookkeeping,
        ticket: u64,
        waited: Wait,
    ) -> Result<(), DriverError> {
        match self.state {
            State::WaitOut(out) if out.ticket == ticket => {
                self.answer(now, steps, books, out, waited)?;
                self.refresh_timers();
                Ok(())
            }
            // Abandoned meanwhile (nothing else runs here, so only a bug gets here).
            _ => Ok(()),
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
