//! The lock and wake-up protocol between the lane thread and the handles: one mutex over the
//! lane and its delivered outcomes, and two condition variables.
//!
//! - `work` wakes the lane thread. A command sets `State::work` and notifies under the lock;
//!   the lane thread clears the flag in the same lock hold in which it polls the lane, and
//!   sleeps only while the flag is clear, so a command between its poll and its sleep is
//!   never lost.
//! - `delivered` wakes waiters. Every outcome moved into `ready` and the lane's loss are
//!   announced with `notify_all` under the lock; a waiter re-checks `ready` and the loss
//!   before every sleep.
//!
//! The lock is held only for a lane step or a queue operation, never across a device call
//! (L-16): the lane thread takes it to poll an effect or feed an event, and drops it before
//! executing the effect.
//!
//! This file is self-contained over `super::sync` and `super::error` so the loom model test
//! compiles it as is against loom's primitives.

use super::error::{LostCause, WaitError};
use super::sync::{Condvar, Mutex, MutexGuard, lock, wait, wait_until};
use std::collections::VecDeque;
use std::time::Instant;

/// What the mailbox needs of the lane it guards.
pub(crate) trait Delivers {
    /// An outcome: one per accepted item, delivered in sequence order.
    type Outcome: Clone;
    /// The next outcome the lane produced, if any.
    fn take_outcome(&mut self) -> Option<Self::Outcome>;
    /// The sequence number of `outcome`'s item.
    fn seq(outcome: &Self::Outcome) -> u64;
}

/// Everything behind the lock.
pub(crate) struct State<L: Delivers> {
    /// The lane (with its step helper).
    pub(crate) lane: L,
    /// Delivered outcomes not taken yet, in sequence order.
    ready: VecDeque<L::Outcome>,
    /// Delivered outcomes the lane thread has not shown the callback yet.
    unannounced: VecDeque<L::Outcome>,
    /// Whether outcomes are kept for the callback.
    announce: bool,
    /// The highest sequence number delivered (every item at or below it has its outcome).
    delivered: u64,
    /// The highest sequence number accepted.
    issued: u64,
    /// A command arrived since the lane thread last polled the lane.
    work: bool,
    /// The last handle is gone: close the lane, finish, and end the thread.
    shutdown: bool,
    /// Why the lane thread ended, once it did.
    lost: Option<LostCause>,
}

/// The shared state and its two condition variables.
pub(crate) struct Mailbox<L: Delivers> {
    state: Mutex<State<L>>,
    work: Condvar,
    delivered: Condvar,
}

impl<L: Delivers> Mailbox<L> {
    /// A mailbox guarding `lane`; `announce` keeps a copy of each outcome for the callback.
    pub(crate) fn new(lane: L, announce: bool) -> Self {
        Self {
            state: Mutex::new(State {
                lane,
                ready: VecDeque::new(),
                unannounced: VecDeque::new(),
                announce,
                delivered: 0,
                issued: 0,
                work: false,
                shutdown: false,
                lost: None,
            }),
            work: Condvar::new(),
            delivered: Condvar::new(),
        }
    }

    /// Moves the lane's new outcomes into `ready`, waking waiters if there were any.
    fn deliver(&self, state: &mut MutexGuard<'_, State<L>>) {
        let mut any = false;
        while let Some(outcome) = state.lane.take_outcome() {
            state.delivered = state.delivered.max(L::seq(&outcome));
            if state.announce {
                state.unannounced.push_back(outcome.clone());
            }
            state.ready.push_back(outcome);
            any = true;
        }
        if any {
            self.delivered.notify_all();
        }
    }

    /// A command from any thread: applies `apply` to the lane under the lock (it returns its
    /// result and the sequence number it accepted, if any), delivers what it finished and
    /// wakes the lane thread. Fails when the lane is lost, or is lost by `apply`'s error.
    pub(crate) fn command<R>(
        &self,
        apply: impl FnOnce(&mut L) -> Result<(R, Option<u64>), LostCause>,
    ) -> Result<R, LostCause> {
        let mut state = lock(&self.state);
        if let Some(cause) = &state.lost {
            return Err(cause.clone());
        }
        let (result, accepted) = match apply(&mut state.lane) {
            Ok(answer) => answer,
            Err(cause) => {
                self.lose_locked(&mut state, cause.clone());
                return Err(cause);
            }
        };
        if let Some(seq) = accepted {
            state.issued = state.issued.max(seq);
        }
        self.deliver(&mut state);
        state.work = true;
        self.work.notify_one();
        Ok(result)
    }

    /// A lane step on the lane thread: clears the work flag and applies `step` (told whether
    /// the last handle is gone), then delivers. Fails when the lane is lost already (a
    /// command's driver error): the lane thread then ends.
    pub(crate) fn step<R>(&self, step: impl FnOnce(&mut L, bool) -> R) -> Result<R, LostCause> {
        let mut state = lock(&self.state);
        if let Some(cause) = &state.lost {
            return Err(cause.clone());
        }
        state.work = false;
        let shutdown = state.shutdown;
        let result = step(&mut state.lane, shutdown);
        self.deliver(&mut state);
        Ok(result)
    }

    /// The outcomes delivered since the last call, for the callback (empty unless it is set).
    pub(crate) fn unannounced(&self) -> VecDeque<L::Outcome> {
        std::mem::take(&mut lock(&self.state).unannounced)
    }

    /// On the lane thread with nothing to do: sleeps until a command, the shutdown or the
    /// loss (the next [`step`](Self::step) tells which).
    pub(crate) fn idle(&self) {
        let mut state = lock(&self.state);
        while !state.work && !state.shutdown && state.lost.is_none() {
            state = wait(&self.work, state);
        }
    }

    /// The next delivered outcome, in sequence order; never blocks behind the device.
    pub(crate) fn poll(&self) -> Option<L::Outcome> {
        lock(&self.state).ready.pop_front()
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
            if let Some(outcome) = take(&mut state, seq) {
                return Ok(outcome);
            }
            if seq == 0 || seq > state.issued {
                return Err(WaitError::Unknown { item: seq });
            }
            if seq <= state.delivered {
                return Err(WaitError::AlreadyTaken { item: seq });
            }
            if let Some(cause) = &state.lost {
                return Err(WaitError::Lost {
                    item: seq,
                    cause: cause.clone(),
                });
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

    /// Why the lane thread ended, if it did.
    pub(crate) fn lost(&self) -> Option<LostCause> {
        lock(&self.state).lost.clone()
    }

    /// The lane thread ended (a panic, a driver error, or the end after a shutdown): every
    /// waiter and every later command sees `cause`. The first cause is kept.
    pub(crate) fn lose(&self, cause: LostCause) {
        let mut state = lock(&self.state);
        self.lose_locked(&mut state, cause);
    }

    fn lose_locked(&self, state: &mut MutexGuard<'_, State<L>>, cause: LostCause) {
        if state.lost.is_none() {
            state.lost = Some(cause);
        }
        self.delivered.notify_all();
        self.work.notify_all();
    }

    /// The last handle is gone: wakes the lane thread to close the lane and end.
    pub(crate) fn shutdown(&self) {
        let mut state = lock(&self.state);
        state.shutdown = true;
        self.work.notify_one();
    }
}

/// Takes item `seq`'s outcome out of `ready`, if it is there.
fn take<L: Delivers>(state: &mut State<L>, seq: u64) -> Option<L::Outcome> {
    let idx = state.ready.iter().position(|o| L::seq(o) == seq)?;
    state.ready.remove(idx)
}
