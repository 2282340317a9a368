//! The lane service's lock and wake-up protocol, model-checked with loom: `src/mailbox.rs`
//! itself, compiled against loom's mutex and condition variables, with a toy lane in place
//! of the real one (the protocol is generic over it). loom explores every interleaving of
//! each scenario (up to a bounded number of preemptions) and fails on a deadlock, which is
//! what a lost wake-up becomes here: a thread asleep with nobody left to wake it.
//!
//! Deliberate bugs these scenarios catch (each tried by hand): a command that sets the work
//! flag without notifying the lane thread, a delivery without `notify_all`, and a loss that
//! wakes no waiter.

/// The facade `mailbox.rs` is written against, over loom's primitives.
mod sync {
    pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
    use std::sync::PoisonError;
    use std::time::Instant;

    pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        condvar.wait(guard).unwrap_or_else(PoisonError::into_inner)
    }

    /// loom has no clock: a timed wait is modelled as an untimed one (the scenarios wait
    /// without deadline, so a missed wake-up shows as a deadlock, not a timeout).
    pub(crate) fn wait_until<'a, T>(
        condvar: &Condvar,
        guard: MutexGuard<'a, T>,
        _deadline: Instant,
    ) -> (MutexGuard<'a, T>, bool) {
        (wait(condvar, guard), false)
    }
}

mod error {
    pub(crate) use lane_service::{LostCause, WaitError};
}

#[allow(dead_code)]
#[path = "../src/mailbox.rs"]
mod mailbox;

use lane_service::{LostCause, WaitError};
use loom::sync::Arc;
use loom::thread;
use mailbox::{Delivers, Mailbox};
use std::collections::VecDeque;

/// A lane reduced to what the protocol sees: commands queue items, the lane thread finishes
/// them, outcomes are item numbers.
#[derive(Default)]
struct Toy {
    next: u64,
    queued: VecDeque<u64>,
    finished: VecDeque<u64>,
}

impl Delivers for Toy {
    type Outcome = u64;

    fn take_outcome(&mut self) -> Option<u64> {
        self.finished.pop_front()
    }

    fn seq(outcome: &u64) -> u64 {
        *outcome
    }
}

fn submit(mailbox: &Mailbox<Toy>) -> u64 {
    mailbox
        .command(|toy| {
            toy.next += 1;
            toy.queued.push_back(toy.next);
            Ok((toy.next, Some(toy.next)))
        })
        .expect("the lane is not lost")
}

/// The lane thread's loop: finish one queued item per step; sleep when there is none; end
/// at the shutdown once nothing is queued.
fn lane_thread(mailbox: &Mailbox<Toy>) {
    loop {
        let (idle, exit) = mailbox
            .step(|toy, shutdown| match toy.queued.pop_front() {
                Some(item) => {
                    toy.finished.push_back(item);
                    (false, false)
                }
                None => (true, shutdown),
            })
            .expect("the lane is not lost");
        if exit {
            return;
        }
        if idle {
            mailbox.idle();
        }
    }
}

fn model(scenario: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(scenario);
}

#[test]
fn a_command_wakes_the_idle_lane_thread_and_its_outcome_wakes_the_waiter() {
    model(|| {
        let mailbox = Arc::new(Mailbox::new(Toy::default(), false));
        let lane = {
            let mailbox = Arc::clone(&mailbox);
            thread::spawn(move || lane_thread(&mailbox))
        };
        let item = submit(&mailbox);
        assert_eq!(mailbox.wait(item, None), Ok(item));
        mailbox.shutdown();
        lane.join().expect("the lane thread");
    });
}

#[test]
fn a_poll_and_a_wait_racing_for_one_outcome_take_it_exactly_once() {
    model(|| {
        let mailbox = Arc::new(Mailbox::new(Toy::default(), false));
        let item = submit(&mailbox);
        let lane = {
            let mailbox = Arc::clone(&mailbox);
            thread::spawn(move || lane_thread(&mailbox))
        };
        let poller = {
            let mailbox = Arc::clone(&mailbox);
            thread::spawn(move || mailbox.poll())
        };
        let waited = mailbox.wait(item, None);
        let polled = poller.join().expect("the poller");
        match (waited, polled) {
            (Ok(got), None) => assert_eq!(got, item),
            (Err(WaitError::AlreadyTaken { item: got }), Some(polled)) => {
                assert_eq!((got, polled), (item, item));
            }
            other => panic!("taken other than exactly once: {other:?}"),
        }
        mailbox.shutdown();
        lane.join().expect("the lane thread");
    });
}

#[test]
fn the_lane_thread_s_loss_wakes_a_waiter_and_refuses_later_commands() {
    model(|| {
        let mailbox = Arc::new(Mailbox::new(Toy::default(), false));
        let item = submit(&mailbox);
        let lane = {
            let mailbox = Arc::clone(&mailbox);
            // The lane thread dies before finishing anything.
            thread::spawn(move || mailbox.lose(LostCause::new("boom")))
        };
        assert_eq!(
            mailbox.wait(item, None),
            Err(WaitError::Lost {
                item,
                cause: LostCause::new("boom"),
            })
        );
        assert_eq!(
            mailbox.command(|_| Ok(((), None))),
            Err(LostCause::new("boom"))
        );
        lane.join().expect("the lane thread");
    });
}

#[test]
fn the_shutdown_wakes_the_idle_lane_thread() {
    model(|| {
        let mailbox = Arc::new(Mailbox::new(Toy::default(), false));
        let lane = {
            let mailbox = Arc::clone(&mailbox);
            thread::spawn(move || lane_thread(&mailbox))
        };
        mailbox.shutdown();
        lane.join().expect("the lane thread");
    });
}
