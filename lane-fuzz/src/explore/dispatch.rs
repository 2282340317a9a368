//! The dispatch machine ([`lane_driver::dispatch::dispatch_step`]) against the world it
//! reads: every order in which a lane's effects, its host workers' answers, the completion
//! waiter's answers and calls, fault notices and the last handle's drop can come, within a
//! budget of effects, in each [`Setting`].
//!
//! The world is modelled apart from the table: it offers only inputs its facts allow (an
//! answer only for work handed out, a reset under a wait only while the waiter is inside a
//! device call, a waiter's start only of a wait offered to it while it is in no call, a
//! recovery call on a bound submitter's thread) and applies each action by its meaning.
//! After every step the machine's state must agree with the world's facts (`WaitOut` exactly
//! while a wait is out, `ResetHeld` exactly while a reset is held, `Deferred` exactly while a
//! recovery call waits for the lane's own threads), a reset is never executed while the
//! waiter is inside a device call (L-20), and a submitter never executes one. The explorer
//! also records every table row it used, so a test can show that each accepted row is
//! reachable.

use std::collections::BTreeSet;

use lane_driver::dispatch::{Act, DispatchInput, DispatchState, Setting, dispatch_step};

use super::{Model, Stats, explore};

/// Where the device wait stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Wait {
    /// No device wait is out.
    None,
    /// The wait is offered to the completion waiter (taken or not: `in_call`).
    Waiter,
    /// The wait is left for the thread running the steps (no waiter).
    Here,
}

/// One step of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The thread running the steps finds this input.
    Find(DispatchInput),
    /// The last handle is dropped.
    LastHandleGone,
    /// The waiter's device call for a wait no longer out returns (its answer is stale).
    WaiterReturns,
}

/// The machine and the facts of the world around it.
#[derive(Clone, Debug)]
pub struct DispatchModel {
    setting: Setting,
    machine: DispatchState,
    wait: Wait,
    /// The waiter took the wait out and is inside its device call.
    in_call: bool,
    /// The waiter is inside the device call of a wait no longer out (it has one thread: a
    /// wait handed meanwhile is taken when this call returns).
    in_old_call: bool,
    /// The waiter owes an answer to a wait that is no longer out.
    stale: bool,
    /// A force reset is held until the waiter leaves its call.
    held: bool,
    /// A recovery call waits for one of the lane's own threads (a submitter left it).
    deferred: bool,
    /// The deferred call was taken back and is routed next.
    rerouting: bool,
    /// Host worker jobs out (at most one: more adds no row).
    jobs: u8,
    /// The executor awaits a run's completion.
    awaiting: bool,
    shutdown: bool,
    closed: bool,
    /// The teardown left a stream and its one retry has not been made.
    teardown_left: bool,
    exited: bool,
    lost: bool,
    /// Effects and notices the lane may still bring.
    budget: u8,
}

impl DispatchModel {
    /// A settled lane in `setting` that may still bring `budget` effects and notices.
    #[must_use]
    pub fn new(setting: Setting, budget: u8) -> Self {
        Self {
            setting,
            machine: DispatchState::Free,
            wait: Wait::None,
            in_call: false,
            in_old_call: false,
            stale: false,
            held: false,
            deferred: false,
            rerouting: false,
            jobs: 0,
            awaiting: false,
            shutdown: false,
            closed: false,
            teardown_left: true,
            exited: false,
            lost: false,
            budget,
        }
    }

    /// The table row an action uses, if it is an input.
    #[must_use]
    pub fn row(&self, action: Action) -> Option<(DispatchState, DispatchInput)> {
        match action {
            Action::Find(input) => Some((self.machine, input)),
            _ => None,
        }
    }

    /// The inputs the world's facts allow now.
    fn inputs(&self) -> Vec<DispatchInput> {
        use DispatchInput as I;
        let Setting { workers, waiter } = self.setting;
        let mut out = Vec::new();
        if self.rerouting {
            // The deferred call taken back is routed before anything else.
            out.push(if self.in_old_call { I::ResetUnderWait } else { I::Reset });
            return out;
        }
        if workers && self.jobs > 0 {
            out.extend([I::WorkerAnswered, I::HandedBack]);
        }
        if self.budget > 0 {
            out.push(I::Notice);
        }
        if self.held || self.deferred {
            // While a reset is held or deferred the thread looks only at answers, at who it
            // is, and at the waiter.
            out.push(I::Elsewhere);
            if self.deferred {
                out.push(I::Resume);
            } else if self.in_old_call {
                out.extend([I::WaiterInside, I::WaiterPastBound]);
            } else {
                out.push(I::WaiterLeft);
            }
            return out;
        }
        if self.wait != Wait::None {
            out.extend([I::Abandoned, I::Waiting]);
        }
        // The waiter takes an offered wait once it is in no call.
        if self.wait == Wait::Waiter && !self.in_call && !self.in_old_call {
            out.push(I::WaitStarted);
        }
        let answerable = self.wait == Wait::Here || self.in_call;
        if answerable {
            out.push(I::Waited);
        }
        if answerable && self.awaiting {
            out.push(I::WaitedEarly);
        }
        // A wait's bound runs from the waiter's start, or from the hand-out while the waiter
        // is inside an older call; an offer to an idle waiter has none.
        if self.wait == Wait::Waiter && (self.in_call || self.in_old_call) {
            out.push(I::BoundPassed);
        }
        if self.stale && !self.in_old_call {
            out.push(I::StaleWaited);
        }
        if self.shutdown && !self.closed {
            out.push(I::Shutdown);
        }
        if self.closed && self.teardown_left {
            out.push(I::TeardownLeft);
        }
        if self.budget > 0 {
            if !(workers && self.jobs > 0) {
                out.push(I::HostWork);
            }
            out.extend([I::Drain, I::Call]);
            if !self.awaiting {
                out.push(I::Await);
            }
            if self.wait == Wait::None {
                out.push(if waiter && self.in_old_call { I::ResetUnderWait } else { I::Reset });
                // The same recovery call, on a bound submitter's thread.
                if waiter {
                    out.push(I::Elsewhere);
                }
            }
        }
        if self.awaiting && self.wait == Wait::None {
            out.push(I::Awaiting);
        }
        let idle = self.wait == Wait::None && !self.awaiting;
        if idle && workers && self.jobs > 0 {
            out.push(I::JobsOut);
        }
        if idle && self.jobs == 0 {
            out.push(if self.shutdown && self.closed { I::SettledShutdown } else { I::Settled });
        }
        out
    }

    /// Applies what the machine chose, by its meaning; `Err` names a broken property.
    fn apply(&mut self, input: DispatchInput, act: Act) -> Result<(), String> {
        use DispatchInput as I;
        let spend = |budget: &mut u8| *budget = budget.saturating_sub(1);
        match (input, act) {
            (I::WorkerAnswered, Act::Feed) | (I::HandedBack, Act::Execute) => self.jobs -= 1,
            (I::Notice, Act::Feed) => spend(&mut self.budget),
            (I::WaiterLeft, Act::Execute) => {
                self.held = false;
                spend(&mut self.budget);
            }
            (I::WaiterInside, Act::Sleep) | (I::Elsewhere, Act::Leave) => {}
            (I::Elsewhere, Act::Defer) => {
                self.deferred = true;
                spend(&mut self.budget);
            }
            (I::Resume, Act::Route) => {
                self.deferred = false;
                self.rerouting = true;
            }
            (I::WaitStarted, Act::CountFromStart) => self.in_call = true,
            (I::WaiterPastBound, Act::Lose) => self.lost = true,
            (I::Abandoned, Act::Forget) => {
                self.leave_wait();
                self.awaiting = false;
            }
            (I::Waited, Act::Feed) => {
                self.in_call = false;
                self.wait = Wait::None;
                self.awaiting = false;
            }
            (I::WaitedEarly, Act::FeedAndAgain) | (I::Waiting, Act::Sleep | Act::WaitHere) => {}
            (I::StaleWaited, Act::Drop) => self.stale = false,
            (I::Shutdown, Act::Close) => self.closed = true,
            (I::TeardownLeft, Act::RetryTeardown) => self.teardown_left = false,
            (I::HostWork, Act::ToWorker) => {
                self.jobs += 1;
                spend(&mut self.budget);
            }
            (I::Reset, Act::Execute) if self.rerouting => self.rerouting = false,
            (I::HostWork | I::Call | I::Drain | I::Reset, Act::Execute) => {
                spend(&mut self.budget);
            }
            (I::Drain, Act::ToWaiter) => {
                // A drain replaces the wait out: the waiter's answer to it is stale.
                self.leave_wait();
                self.hand_wait();
                spend(&mut self.budget);
            }
            (I::ResetUnderWait, Act::Hold) => {
                self.rerouting = false;
                self.held = true;
            }
            (I::Await, Act::Note) => {
                self.awaiting = true;
                spend(&mut self.budget);
            }
            (I::Awaiting, Act::ToWaiter) => self.hand_wait(),
            (I::Awaiting, Act::WaitHere) => self.wait = Wait::Here,
            (I::BoundPassed, Act::AnswerAtBound) => {
                self.leave_wait();
                self.awaiting = false;
            }
            (I::JobsOut | I::Settled, Act::Sleep) => {}
            (I::SettledShutdown, Act::Exit) => self.exited = true,
            (input, act) => {
                return Err(format!(
                    "{:?}: {input:?} in {:?} led to {act:?}, which does not mean what the world did",
                    self.setting, self.machine
                ));
            }
        }
        Ok(())
    }

    /// The wait out is no longer out (no longer offered, so a waiter that has not taken it
    /// never does): a call the waiter is inside owes a stale answer.
    fn leave_wait(&mut self) {
        if self.in_call {
            self.in_call = false;
            self.in_old_call = true;
            self.stale = true;
        }
        self.wait = Wait::None;
    }

    /// A wait is offered to the waiter, which starts it later (`WaitStarted`).
    fn hand_wait(&mut self) {
        self.wait = Wait::Waiter;
        self.in_call = false;
    }

    /// The machine's state the world's facts call for.
    fn expected(&self) -> DispatchState {
        if self.held {
            DispatchState::ResetHeld
        } else if self.deferred {
            DispatchState::Deferred
        } else if self.wait == Wait::None {
            DispatchState::Free
        } else {
            DispatchState::WaitOut
        }
    }
}

impl Model for DispatchModel {
    type Action = Action;

    fn actions(&self) -> Vec<Action> {
        if self.exited || self.lost {
            return Vec::new();
        }
        let mut out: Vec<Action> = self.inputs().into_iter().map(Action::Find).collect();
        if !self.shutdown {
            out.push(Action::LastHandleGone);
        }
        if self.in_old_call {
            out.push(Action::WaiterReturns);
        }
        out
    }

    fn step(&mut self, action: Action) -> Result<(), String> {
        match action {
            Action::LastHandleGone => self.shutdown = true,
            Action::WaiterReturns => {
                // The old call returns; the waiter then starts a wait offered meanwhile.
                self.in_old_call = false;
            }
            Action::Find(input) => {
                let under_wait = self.in_call || self.in_old_call;
                let (next, act) = dispatch_step(self.setting, self.machine, input).map_err(|r| {
                    format!(
                        "{:?}: the table refuses {input:?} in {:?} ({r:?}), which the world can bring",
                        self.setting, self.machine
                    )
                })?;
                if act == Act::Execute
                    && matches!(input, DispatchInput::Reset | DispatchInput::WaiterLeft)
                    && under_wait
                {
                    return Err(
                        "a force reset executed while the waiter is inside a call (L-20)".into()
                    );
                }
                if input == DispatchInput::Elsewhere && !matches!(act, Act::Defer | Act::Leave) {
                    return Err(format!("a submitter's recovery call led to {act:?}"));
                }
                self.apply(input, act)?;
                self.machine = next;
                if self.machine != self.expected() {
                    return Err(format!(
                        "{:?}: after {input:?} the machine is {:?}, the world calls for {:?}",
                        self.setting,
                        self.machine,
                        self.expected()
                    ));
                }
            }
        }
        Ok(())
    }

    fn key(&self) -> String {
        format!("{self:?}")
    }

    fn check(&self) -> Result<(), String> {
        if !self.exited && !self.lost && self.actions().is_empty() {
            return Err(format!("{:?}: nothing can happen: {self:?}", self.setting));
        }
        Ok(())
    }

    fn rust(action: Action) -> String {
        match action {
            Action::Find(input) => format!("Action::Find(DispatchInput::{input:?})"),
            other => format!("Action::{other:?}"),
        }
    }
}

/// What [`run`] covered in one setting.
#[derive(Clone, Debug)]
pub struct Covered {
    /// The exploration's figures.
    pub stats: Stats,
    /// Every table row some reached state used.
    pub rows: BTreeSet<(usize, usize)>,
}

/// Explores `setting` with `budget` effects; the rows used are (state, input) indices into
/// [`DispatchState::ALL`] and [`DispatchInput::ALL`].
///
/// # Errors
///
/// The broken property, with the shortest trace to it.
pub fn run(setting: Setting, budget: u8, limit: usize) -> Result<Covered, String> {
    let mut rows = BTreeSet::new();
    let stats = explore(DispatchModel::new(setting, budget), limit, |model| {
        for action in model.actions() {
            if let Some((state, input)) = model.row(action) {
                rows.insert((index(&DispatchState::ALL, state), index(&DispatchInput::ALL, input)));
            }
        }
    })
    .map_err(|failure| match failure.violation() {
        Some(v) => super::render::<DispatchModel>(
            v,
            &format!("// DispatchModel::new({setting:?}, {budget}), then:"),
            "",
        ),
        None => format!("more than {limit} states"),
    })?;
    Ok(Covered { stats, rows })
}

/// The rows `setting`'s table accepts, as (state, input) indices.
#[must_use]
pub fn accepted_rows(setting: Setting) -> BTreeSet<(usize, usize)> {
    let mut rows = BTreeSet::new();
    for (s, state) in DispatchState::ALL.iter().enumerate() {
        for (i, input) in DispatchInput::ALL.iter().enumerate() {
            if dispatch_step(setting, *state, *input).is_ok() {
                rows.insert((s, i));
            }
        }
    }
    rows
}

fn index<T: PartialEq>(all: &[T], item: T) -> usize {
    all.iter().position(|x| *x == item).unwrap_or(usize::MAX)
}
