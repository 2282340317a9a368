//! The lock, the claim on the lane's steps and the wake-ups between the handles, the lane
//! thread, the host workers and the completion waiter: one mutex over the lane, its
//! delivered outcomes, the workers' two queues and the waiter's two slots, and four
//! condition variables.
//!
//! - **The claim.** Whoever brings an event runs the steps it starts, if no other thread runs
//!   them (`begin_steps` sets `State::running`). Every event sets `State::work` under the
//!   lock; `step` clears it in the same hold in which it looks at the lane, and `end_steps`
//!   refuses while `work` is set, so the running thread takes every event posted while it
//!   ran. The claim is never held across a blocking device wait.
//! - `work` wakes the lane thread for an event posted while no thread runs the steps; it
//!   sleeps only while `work && !running` is false, so no event is lost between look and
//!   sleep.
//! - `delivered` wakes waiters (`notify_all` for every outcome and the loss). Where the
//!   caller drives the lane (`callers_wait`), an offered wait and a device wait's end wake
//!   it too.
//! - `jobs` wakes host workers, once per job (`Step::dispatch`). A worker's answer (or its
//!   job, handed back when it could not bind) goes into `answers` as an event, and the worker
//!   then runs the steps unless another thread does.
//! - `waits` wakes the completion waiter for the one wait offered (`Step::hand_wait`, with a
//!   ticket). It takes the wait with its call's start time in one lock hold (`take_wait`), so
//!   a step sees it either offered or started; its answer is an event, and the waiter then
//!   runs the steps unless another thread does. Only the loss stops it. A driving caller
//!   takes the offered wait the same way (`Step::inside`).
//!
//! The queues are allocated once (one job per slot), so handing work over allocates nothing
//! per run. The lock is never held across a device call (L-16). Every notify is made after
//! the lock is released ([`Wakes`]): waking a thread onto a halted CPU costs the waker about
//! 10 us (10.7 us median on a 2-vCPU guest). No wake-up is lost: every sleeper re-checks the
//! state under the lock.
//!
//! This file is self-contained over `super::sync` and `super::error` so the loom model test
//! compiles it as is against loom's primitives.

use super::error::{LostCause, WaitError};
use super::sync::{Condvar, Mutex, MutexGuard, lock, wait, wait_until};
use std::collections::VecDeque;
use std::time::Instant;

/// What the mailbox needs of the lane it guards.
pub(crate) trait Delivers {
    /// An outcome: one per accepted item, delivered in the lane's order (sequence order, but
    /// for a run an earlier ordering key placed ahead, L-2).
    type Outcome: Clone;
    /// The next outcome the lane produced, if any.
    fn take_outcome(&mut self) -> Option<Self::Outcome>;
    /// The sequence number of `outcome`'s item.
    fn seq(outcome: &Self::Outcome) -> u64;
    /// Runner work the lane thread hands to a host worker.
    type Work;
    /// A worker's answer to one [`Work`](Delivers::Work), fed to the lane by the lane thread.
    type Answer;
    /// A device wait the lane thread hands to the completion waiter.
    type Wait;
    /// The waiter's answer to one [`Wait`](Delivers::Wait).
    type Waited;
}

/// What a lane step sees of the mailbox beside the lane: whether the last handle is gone,
/// and the host workers' queues.
pub(crate) struct Step<'a, L: Delivers> {
    /// The last handle is gone: close the lane, finish, and end the thread.
    pub(crate) shutdown: bool,
    jobs: &'a mut VecDeque<L::Work>,
    answers: &'a mut VecDeque<L::Answer>,
    out: &'a mut usize,
    dispatched: usize,
    wait: &'a mut Option<(u64, L::Wait)>,
    waited: &'a mut Option<(u64, L::Waited)>,
    inside: Option<(u64, u64)>,
    handed_wait: bool,
}

impl<L: Delivers> Step<'_, L> {
    /// Hands `work` to a host worker (woken when the step ends).
    pub(crate) fn dispatch(&mut self, work: L::Work) {
        self.jobs.push_back(work);
        *self.out += 1;
        self.dispatched += 1;
    }

    /// The next answer a worker gave, in the order they were given.
    pub(crate) fn answer(&mut self) -> Option<L::Answer> {
        let answer = self.answers.pop_front()?;
        *self.out = self.out.saturating_sub(1);
        Some(answer)
    }

    /// How many dispatched jobs have no answer taken yet (queued, running, or answered).
    pub(crate) const fn out(&self) -> usize {
        *self.out
    }

    /// Hands `wait` to the completion waiter under `ticket` (woken when the step ends),
    /// replacing one it has not taken yet (abandoned).
    pub(crate) fn hand_wait(&mut self, ticket: u64, wait: L::Wait) {
        *self.wait = Some((ticket, wait));
        self.handed_wait = true;
    }

    /// The completion waiter's latest answer, with the ticket of the wait it answers.
    pub(crate) fn waited(&mut self) -> Option<(u64, L::Waited)> {
        self.waited.take()
    }

    /// The wait the completion waiter (or a caller) took and has not answered yet, with its
    /// call's start: no force reset then (L-20).
    pub(crate) const fn inside(&self) -> Option<(u64, u64)> {
        self.inside
    }

    /// Takes back the wait handed to the completion waiter if it has not taken it yet.
    pub(crate) fn withdraw_wait(&mut self) {
        *self.wait = None;
    }
}

/// Everything behind the lock.
pub(crate) struct State<L: Delivers> {
    /// The lane (with its step helper).
    pub(crate) lane: L,
    /// Delivered outcomes not taken yet, in the lane's order.
    ready: VecDeque<L::Outcome>,
    /// Delivered outcomes the lane thread has not shown the callback yet.
    unannounced: VecDeque<L::Outcome>,
    /// Whether outcomes are kept for the callback.
    announce: bool,
    /// Which items have their outcome.
    delivered: Delivered,
    /// The highest sequence number accepted.
    issued: u64,
    /// Runner work handed to the host workers and not taken by one yet.
    jobs: VecDeque<L::Work>,
    /// The workers' answers, not taken by the lane thread yet.
    answers: VecDeque<L::Answer>,
    /// Jobs dispatched whose answer the lane thread has not taken yet.
    out: usize,
    /// The device wait handed to the completion waiter and not taken by it yet.
    wait: Option<(u64, L::Wait)>,
    /// The waiter's latest answer, not taken by the lane thread yet.
    waited: Option<(u64, L::Waited)>,
    /// The wait the waiter took and has not answered yet, and its call's start (ns).
    inside: Option<(u64, u64)>,
    /// The caller drives the lane ([`Mailbox::callers_wait`]).
    callers_wait: bool,
    /// The workers end: the lane is closed with no job out, or the lane thread ended.
    retire: bool,
    /// A command or a worker's answer arrived since the lane thread last polled the lane.
    work: bool,
    /// A thread is running the lane's steps: what is posted meanwhile is its to take.
    running: bool,
    /// A thread ran the steps to their end after the shutdown: the lane thread ends.
    exited: bool,
    /// The last handle is gone: close the lane, finish, and end the thread.
    shutdown: bool,
    /// Why the lane thread ended, once it did.
    lost: Option<LostCause>,
    /// The items whose outcome [`Mailbox::take_untaken`] took: a wait for one gets `Lost`.
    drained: Vec<u64>,
}

/// The shared state and its four condition variables.
pub(crate) struct Mailbox<L: Delivers> {
    state: Mutex<State<L>>,
    work: Condvar,
    delivered: Condvar,
    jobs: Condvar,
    waits: Condvar,
}

/// The wake-ups a change under the lock calls for, made once the lock is released
/// ([`Mailbox::wake`]).
#[derive(Clone, Copy, Default)]
struct Wakes {
    /// Outcomes were delivered: every waiter looks (`notify_all`).
    delivered: bool,
    /// The lane thread (the only thread sleeping on `work`).
    work: bool,
    /// Host workers, one per job handed out.
    jobs: usize,
    /// The completion waiter, for the wait handed to it.
    waits: bool,
}

impl<L: Delivers> Mailbox<L> {
    /// A mailbox guarding `lane`; `announce` keeps a copy of each outcome for the callback;
    /// `jobs` and `outcomes` size the queues and outcome buffers once.
    pub(crate) fn new(lane: L, announce: bool, jobs: usize, outcomes: usize) -> Self {
        Self {
            state: Mutex::new(State {
                lane,
                ready: VecDeque::with_capacity(outcomes),
                unannounced: VecDeque::with_capacity(if announce { outcomes } else { 0 }),
                announce,
                delivered: Delivered::with_capacity(outcomes),
                issued: 0,
                jobs: VecDeque::with_capacity(jobs),
                answers: VecDeque::with_capacity(jobs),
                out: 0,
                wait: None,
                waited: None,
                inside: None,
                callers_wait: false,
                retire: false,
                work: false,
                running: false,
                exited: false,
                shutdown: false,
                lost: None,
                drained: Vec::new(),
            }),
            work: Condvar::new(),
            delivered: Condvar::new(),
            jobs: Condvar::new(),
            waits: Condvar::new(),
        }
    }

    /// Moves the lane's new outcomes into `ready`; the wake-ups it needs are added to `wakes`
    /// (the waiters, and the lane thread for the callback), made once the lock is released.
    fn deliver(state: &mut State<L>, wakes: &mut Wakes) {
        let mut any = false;
        while let Some(outcome) = state.lane.take_outcome() {
            state.delivered.insert(L::seq(&outcome));
            if state.announce {
                state.unannounced.push_back(outcome.clone());
            }
            state.ready.push_back(outcome);
            any = true;
        }
        if any {
            wakes.delivered = true;
        }
    }

    /// Makes the wake-ups `wakes` holds, with the lock released (the module doc says why).
    fn wake(&self, wakes: Wakes) {
        if wakes.delivered {
            self.delivered.notify_all();
        }
        if wakes.work {
            self.work.notify_one();
        }
        for _ in 0..wakes.jobs {
            self.jobs.notify_one();
        }
        if wakes.waits {
            self.waits.notify_one();
        }
    }

    /// Wakes every sleeper of every kind, with the lock released: the lane is lost.
    fn wake_all(&self) {
        self.delivered.notify_all();
        self.work.notify_all();
        self.jobs.notify_all();
        self.waits.notify_all();
    }

    /// A command from any thread: applies `apply` (its result and the sequence number it
    /// accepted) under the lock, delivers and posts it as work; with no thread running the
    /// steps, the lane thread is woken if `wake`. Fails when the lane is lost, or by `apply`.
    pub(crate) fn command<R>(
        &self,
        wake: bool,
        apply: impl FnOnce(&mut L) -> Result<(R, Option<u64>), LostCause>,
    ) -> Result<R, LostCause> {
        let mut state = lock(&self.state);
        if let Some(cause) = &state.lost {
            return Err(cause.clone());
        }
        let (result, accepted) = match apply(&mut state.lane) {
            Ok(answer) => answer,
            Err(cause) => {
                state.lost.get_or_insert(cause.clone());
                drop(state);
                self.wake_all();
                return Err(cause);
            }
        };
        if let Some(seq) = accepted {
            state.issued = state.issued.max(seq);
        }
        let mut wakes = Wakes::default();
        Self::deliver(&mut state, &mut wakes);
        state.work = true;
        wakes.work |= wake && !state.running;
        drop(state);
        self.wake(wakes);
        Ok(result)
    }

    /// Claims the lane's steps for the calling thread: `false` when another thread runs them
    /// or they ended; the cause when the lane is lost.
    pub(crate) fn begin_steps(&self) -> Result<bool, LostCause> {
        let mut state = lock(&self.state);
        if let Some(cause) = &state.lost {
            return Err(cause.clone());
        }
        if state.running || state.exited {
            return Ok(false);
        }
        state.running = true;
        Ok(true)
    }

    /// Lets go of the lane's steps, unless work was posted since the last
    /// [`step`](Self::step): then `false`, and the caller steps again. With `exit` the steps
    /// are over for good and the lane thread is woken to end.
    pub(crate) fn end_steps(&self, exit: bool) -> bool {
        let mut state = lock(&self.state);
        if exit {
            state.exited = true;
            state.running = false;
            drop(state);
            self.work.notify_all();
            return true;
        }
        if state.work && state.lost.is_none() {
            return false;
        }
        state.running = false;
        true
    }

    /// Lets go of the lane's steps without running them: work posted meanwhile, or `wake` (a
    /// bound submitter leaves it a recovery call), wakes the lane thread.
    pub(crate) fn hand_steps_back(&self, wake: bool) {
        let mut state = lock(&self.state);
        state.running = false;
        state.work |= wake;
        let work = state.work;
        drop(state);
        if work {
            self.work.notify_one();
        }
    }

    /// Whether a thread ran the steps to their end after the shutdown.
    pub(crate) fn exited(&self) -> bool {
        lock(&self.state).exited
    }

    /// A lane step: clears the work flag, applies `step`, wakes whom it handed work to, and
    /// delivers. Fails when the lane is lost already: the lane thread then ends.
    pub(crate) fn step<R>(
        &self,
        step: impl FnOnce(&mut L, &mut Step<'_, L>) -> R,
    ) -> Result<(R, bool), LostCause> {
        let mut guard = lock(&self.state);
        if let Some(cause) = &guard.lost {
            return Err(cause.clone());
        }
        let state = &mut *guard;
        state.work = false;
        let mut cx = Step {
            shutdown: state.shutdown,
            jobs: &mut state.jobs,
            answers: &mut state.answers,
            out: &mut state.out,
            dispatched: 0,
            wait: &mut state.wait,
            waited: &mut state.waited,
            inside: state.inside,
            handed_wait: false,
        };
        let result = step(&mut state.lane, &mut cx);
        let mut wakes = Wakes {
            jobs: cx.dispatched,
            waits: cx.handed_wait,
            // A caller asleep in `wait` takes an offered wait.
            delivered: cx.handed_wait && state.callers_wait,
            ..Wakes::default()
        };
        Self::deliver(state, &mut wakes);
        let to_announce = !state.unannounced.is_empty();
        drop(guard);
        self.wake(wakes);
        Ok((result, to_announce))
    }

    /// On a host worker: the next job, blocking until there is one; `None` once the workers
    /// retire (the lane closed with nothing out, or the lane thread ended).
    pub(crate) fn take_job(&self) -> Option<L::Work> {
        let mut state = lock(&self.state);
        loop {
            if state.retire || state.lost.is_some() {
                return None;
            }
            if let Some(job) = state.jobs.pop_front() {
                return Some(job);
            }
            state = wait(&self.jobs, state);
        }
    }

    /// On a host worker: hands `answer` back as work (dropped when the lane is lost); with
    /// `wake` and no thread running the steps, wakes the lane thread for it.
    pub(crate) fn give_answer(&self, answer: L::Answer, wake: bool) {
        let mut state = lock(&self.state);
        if state.lost.is_some() {
            return;
        }
        state.answers.push_back(answer);
        state.work = true;
        let wake = wake && !state.running;
        drop(state);
        if wake {
            self.work.notify_one();
        }
    }

    /// On the completion waiter: blocks until a device wait is offered and no thread is
    /// inside one; `false` once the lane is lost (the lane thread's end is always a loss).
    pub(crate) fn next_offer(&self) -> bool {
        let mut state = lock(&self.state);
        loop {
            if state.lost.is_some() {
                return false;
            }
            if state.wait.is_some() && state.inside.is_none() {
                return true;
            }
            state = wait(&self.waits, state);
        }
    }

    /// Takes the offered device wait, if `due` accepts it and no thread is inside one, with
    /// `at` (the lane's clock, ns) as its call's start: until
    /// [`give_waited`](Self::give_waited) the taker is inside it (L-20). Never blocks.
    pub(crate) fn take_wait(
        &self,
        at: u64,
        due: impl FnOnce(&L::Wait) -> bool,
    ) -> Option<(u64, L::Wait)> {
        let mut state = lock(&self.state);
        if state.lost.is_some() || state.inside.is_some() {
            return None;
        }
        if !state.wait.as_ref().is_some_and(|(_, wait)| due(wait)) {
            return None;
        }
        let (ticket, wait) = state.wait.take()?;
        state.inside = Some((ticket, at));
        Some((ticket, wait))
    }

    /// Whether a device wait is offered and no thread is inside one (a caller may take it).
    pub(crate) fn offer_free(&self) -> bool {
        let state = lock(&self.state);
        state.wait.is_some() && state.inside.is_none() && state.lost.is_none()
    }

    /// On the thread that took the wait `ticket`: hands its answer back as work (dropped when
    /// the lane is lost), replacing an answer not taken yet (it answered a wait abandoned
    /// since). Where the caller drives the lane, callers asleep in `wait` wake.
    pub(crate) fn give_waited(&self, ticket: u64, answer: L::Waited) {
        let mut state = lock(&self.state);
        state.inside = None;
        let wake = state.callers_wait;
        if state.lost.is_none() {
            state.waited = Some((ticket, answer));
            state.work = true;
        }
        drop(state);
        if wake {
            self.delivered.notify_all();
        }
    }

    /// The caller drives the lane: callers sleep on `delivered`, and an offered wait or a
    /// device wait's end wakes them.
    pub(crate) fn callers_wait(&self) {
        lock(&self.state).callers_wait = true;
    }

    /// On the lane thread once the lane is closed with no job out: the workers end.
    pub(crate) fn retire_workers(&self) {
        lock(&self.state).retire = true;
        self.jobs.notify_all();
    }

    /// Swaps the outcomes delivered since the last call (for the callback) into the empty
    /// `into`: both buffers keep their capacity, so this allocates nothing in steady state.
    pub(crate) fn take_unannounced(&self, into: &mut VecDeque<L::Outcome>) {
        debug_assert!(into.is_empty(), "the last outcomes were all shown");
        std::mem::swap(&mut lock(&self.state).unannounced, into);
    }

    /// On the lane thread with nothing to do: sleeps until work no thread runs the steps for,
    /// the end of the steps, the loss, or `until`. Returns whether it was woken.
    pub(crate) fn idle(&self, until: Option<Instant>) -> bool {
        sleep(&self.work, lock(&self.state), until, |state| {
            (state.work && !state.running) || state.exited || state.lost.is_some()
        })
    }

    /// The next delivered outcome, in the lane's order; never blocks behind the device.
    pub(crate) fn poll(&self) -> Option<L::Outcome> {
        lock(&self.state).ready.pop_front()
    }

    /// Takes every delivered outcome not taken yet, for a destroy's report, and marks their
    /// items under the same lock: a wait for one then gets `Lost`, never `AlreadyTaken`.
    pub(crate) fn take_untaken(&self) -> Vec<L::Outcome> {
        let mut state = lock(&self.state);
        let taken: Vec<L::Outcome> = state.ready.drain(..).collect();
        state.drained.extend(taken.iter().map(L::seq));
        taken
    }

    /// Item `seq`'s outcome, taken, if delivered; why it never will be (an unknown item, one
    /// taken already, a lost lane); `None` while it is still to come. Never blocks.
    pub(crate) fn try_take(&self, seq: u64) -> Option<Result<L::Outcome, WaitError>> {
        answer(&mut lock(&self.state), seq)
    }

    /// Where the caller drives the lane: sleeps until item `seq` has its outcome, a device
    /// wait is free to take, unclaimed work is posted, the steps end, the loss, or `until`.
    pub(crate) fn caller_idle(&self, seq: Option<u64>, until: Option<Instant>) {
        sleep(&self.delivered, lock(&self.state), until, |state| {
            seq.is_some_and(|seq| state.ready.iter().any(|o| L::seq(o) == seq))
                || (state.wait.is_some() && state.inside.is_none())
                || (state.work && !state.running)
                || state.exited
                || state.lost.is_some()
        });
    }

    /// Blocks the caller until item `seq` has its outcome (and takes it), the lane is lost,
    /// or `deadline` passes (`None`: no deadline).
    pub(crate) fn wait(
        &self,
        seq: u64,
        deadline: Option<Instant>,
    ) -> Result<L::Outcome, WaitError> {
        let mut state = lock(&self.state);
        loop {
            if let Some(answer) = answer(&mut state, seq) {
                return answer;
            }
            state = match deadline {
                None => wait(&self.delivered, state),
                Some(deadline) => {
                    let (mut state, passed) = wait_until(&self.delivered, state, deadline);
                    if passed {
                        // One last look: the outcome may have come with the deadline.
                        return take(&mut state, seq).ok_or(WaitError::TimedOut { item: seq });
                    }
                    state
                }
            };
        }
    }

    /// Reads the lane under the lock, also once it is lost (the final report after the lane
    /// thread ended).
    pub(crate) fn inspect<R>(&self, read: impl FnOnce(&L) -> R) -> R {
        read(&lock(&self.state).lane)
    }

    /// Reads the lane and the delivered outcomes not taken yet, under the lock.
    pub(crate) fn status<R>(&self, read: impl FnOnce(&L, &VecDeque<L::Outcome>) -> R) -> R {
        let state = lock(&self.state);
        read(&state.lane, &state.ready)
    }

    /// Why the lane thread ended, if it did.
    pub(crate) fn lost(&self) -> Option<LostCause> {
        lock(&self.state).lost.clone()
    }

    /// The lane thread ended (a panic, a driver error, or the end after a shutdown): every
    /// waiter and every later command sees `cause`. The first cause is kept.
    pub(crate) fn lose(&self, cause: LostCause) {
        lock(&self.state).lost.get_or_insert(cause);
        self.wake_all();
    }

    /// The last handle is gone: posted as work, so the thread running the steps takes it
    /// before it lets go, or the lane thread is woken for it, to close the lane and end.
    pub(crate) fn shutdown(&self) {
        let mut state = lock(&self.state);
        state.shutdown = true;
        state.work = true;
        let wake = !state.running;
        drop(state);
        if wake {
            self.work.notify_one();
        }
    }
}

/// The items whose outcome was delivered: outcomes come nearly in sequence order (L-2), so
/// the set is every item up to a mark and the few delivered past it.
struct Delivered {
    /// Every item at or below it has its outcome.
    below: u64,
    /// Items above `below` with their outcome (at most the lane's capacity: the storage
    /// allocated at the start is not outgrown).
    above: Vec<u64>,
}

impl Delivered {
    /// None delivered, with room for `capacity` delivered past the mark.
    fn with_capacity(capacity: usize) -> Self {
        Self { below: 0, above: Vec::with_capacity(capacity) }
    }

    /// Item `seq` has its outcome.
    fn insert(&mut self, seq: u64) {
        if self.contains(seq) {
            return;
        }
        self.above.push(seq);
        while let Some(at) = self.above.iter().position(|&s| s == self.below + 1) {
            self.above.swap_remove(at);
            self.below += 1;
        }
    }

    /// Whether item `seq` has its outcome.
    fn contains(&self, seq: u64) -> bool {
        seq <= self.below || self.above.contains(&seq)
    }
}

/// Item `seq`'s outcome, taken, or why it never will be (an unknown item, one taken
/// already or by [`Mailbox::take_untaken`], a lost lane); `None` while it is still to come.
fn answer<L: Delivers>(state: &mut State<L>, seq: u64) -> Option<Result<L::Outcome, WaitError>> {
    if let Some(outcome) = take(state, seq) {
        return Some(Ok(outcome));
    }
    if seq == 0 || seq > state.issued {
        return Some(Err(WaitError::Unknown { item: seq }));
    }
    if state.drained.contains(&seq) {
        return Some(Err(WaitError::Lost {
            item: seq,
            cause: LostCause::new(
                "the lane was destroyed before this outcome was taken: the destroy counted it \
                 among the outcomes never taken",
            ),
        }));
    }
    if state.delivered.contains(seq) {
        return Some(Err(WaitError::AlreadyTaken { item: seq }));
    }
    let cause = state.lost.clone()?;
    Some(Err(WaitError::Lost { item: seq, cause }))
}

/// Sleeps on `condvar` until `woken` holds (`true`) or `until` passes (then whether it holds).
fn sleep<L: Delivers>(
    condvar: &Condvar,
    mut state: MutexGuard<'_, State<L>>,
    until: Option<Instant>,
    woken: impl Fn(&State<L>) -> bool,
) -> bool {
    while !woken(&state) {
        state = match until {
            None => wait(condvar, state),
            Some(until) => {
                let (state, passed) = wait_until(condvar, state, until);
                if passed {
                    return woken(&state);
                }
                state
            }
        };
    }
    true
}

/// Takes item `seq`'s outcome out of `ready`, if it is there.
fn take<L: Delivers>(state: &mut State<L>, seq: u64) -> Option<L::Outcome> {
    let idx = state.ready.iter().position(|o| L::seq(o) == seq)?;
    state.ready.remove(idx)
}
