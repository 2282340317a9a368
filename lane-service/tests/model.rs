//! The lane service's lock and wake-up protocol, model-checked with loom: `src/mailbox.rs`
//! itself, compiled against loom's mutex and condition variables, with a toy lane in place
//! of the real one (the protocol is generic over it). loom explores every interleaving of
//! each scenario (up to a bounded number of preemptions) and fails on a deadlock, which is
//! what a lost wake-up becomes here: a thread asleep with nobody left to wake it.
//!
//! The host workers' hand-off is modelled too: the lane thread dispatches runner work, a
//! worker answers it, the answer wakes the lane thread, and the close, the shutdown and a
//! loss end the workers.
//!
//! The completion waiter too: the lane thread hands it one device wait at a time, its answer
//! wakes the lane thread (also when it lands while the lane thread decides to sleep), and the
//! lane thread's end (a loss) ends it, also when the shutdown comes while it is inside a
//! device call.
//!
//! Deliberate bugs these scenarios catch (each tried by hand): a command that sets the work
//! flag without notifying the lane thread, a delivery without `notify_all`, a loss that
//! wakes no waiter, a step that dispatches without notifying `jobs` (the worker sleeps on a
//! queued job), an answer that sets the work flag without notifying `work` (the lane
//! thread sleeps on an answered job), a hand-off of a wait without notifying `waits` (the
//! waiter sleeps on a wait), a waiter's answer that does not set the work flag (the lane
//! thread sleeps on the answered wait), and a loss that does not notify `waits` (the waiter
//! never ends). And L-20: a force reset that ignores whether the waiter is inside its call,
//! or leaves a wait the waiter has not taken yet to be taken after it, is a reset under a
//! wait. And the outcome callback: a lane thread that ends without showing the outcomes
//! delivered since its last look (after it ran the steps, or when it finds that another
//! thread ran them to their end) leaves a callback unmade.

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
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use mailbox::{Delivers, Mailbox, Step};
use std::collections::VecDeque;

/// A lane reduced to what the protocol sees: commands queue items, the lane thread finishes
/// them (itself, by a host worker's answer, or by the completion waiter's), outcomes are item
/// numbers.
#[derive(Default)]
struct Toy {
    next: u64,
    queued: VecDeque<u64>,
    /// The item whose wait is out on the completion waiter (its ticket is the item).
    awaiting: Option<u64>,
    /// Answered by a worker, in any order; finished in item order (as the lane delivers).
    answered: Vec<u64>,
    /// The last item finished.
    last_finished: u64,
    finished: VecDeque<u64>,
}

impl Toy {
    /// Finishes the answered items that are next in item order.
    fn finish_in_order(&mut self) {
        loop {
            let next = self.last_finished + 1;
            let Some(at) = self.answered.iter().position(|&a| a == next) else {
                return;
            };
            self.answered.swap_remove(at);
            self.last_finished = next;
            self.finished.push_back(next);
        }
    }
}

impl Delivers for Toy {
    type Outcome = u64;
    type Work = u64;
    type Answer = u64;
    type Wait = u64;
    type Waited = u64;

    fn take_outcome(&mut self) -> Option<u64> {
        self.finished.pop_front()
    }

    fn seq(outcome: &u64) -> u64 {
        *outcome
    }
}

/// A command from a handle; `runs_steps`: the caller's thread is bound and runs the steps
/// itself afterwards unless another thread runs them (`submitters_bound`).
fn submit_from(mailbox: &Mailbox<Toy>, runs_steps: Option<Body>) -> u64 {
    let item = mailbox
        .command(runs_steps.is_none(), |toy| {
            toy.next += 1;
            toy.queued.push_back(toy.next);
            Ok((toy.next, Some(toy.next)))
        })
        .expect("the lane is not lost");
    if let Some(body) = runs_steps {
        run_steps(mailbox, body);
    }
    item
}

fn submit(mailbox: &Mailbox<Toy>) -> u64 {
    submit_from(mailbox, None)
}

/// What one step of a toy lane leaves to do.
enum Flow {
    /// Step again.
    Again,
    /// Nothing to do until work is posted.
    Sleep,
    /// Settled after the shutdown: the steps end.
    Exit,
}

/// One step of a toy lane, under the lock.
type Body = fn(&mut Toy, &mut Step<'_, Toy>) -> Flow;

/// What [`run_steps`] did.
#[derive(Debug, PartialEq, Eq)]
enum Ran {
    /// Another thread runs the steps.
    Elsewhere,
    /// Ran them to a sleep; whether the step saw the shutdown.
    Slept(bool),
    /// Ran them to their end.
    Exited,
    /// The lane is lost.
    Lost,
}

/// The service's `Engine::run_steps`: claim the steps (or leave them to the thread that has
/// them), step until a step sleeps and nothing was posted meanwhile, or the steps end.
fn run_steps(mailbox: &Mailbox<Toy>, body: Body) -> Ran {
    match mailbox.begin_steps() {
        Ok(true) => {}
        Ok(false) => return Ran::Elsewhere,
        Err(_) => return Ran::Lost,
    }
    loop {
        let Ok((flow, shutdown)) = mailbox.step(|toy, cx| (body(toy, cx), cx.shutdown)) else {
            return Ran::Lost;
        };
        match flow {
            Flow::Again => {}
            Flow::Sleep => {
                if mailbox.end_steps(false) {
                    return Ran::Slept(shutdown);
                }
            }
            Flow::Exit => {
                mailbox.end_steps(true);
                return Ran::Exited;
            }
        }
    }
}

/// The service's lane thread: runs the steps when woken for work no other thread runs them
/// for, sleeps otherwise; once the steps end (on any thread) it retires the workers and ends,
/// and its end is a loss (which ends the waiter). Ends quietly on a loss.
fn lane_loop(mailbox: &Mailbox<Toy>, body: Body) {
    loop {
        match run_steps(mailbox, body) {
            Ran::Exited => break,
            Ran::Lost => return,
            Ran::Slept(_) | Ran::Elsewhere => {}
        }
        if mailbox.exited() {
            break;
        }
        mailbox.idle(None);
        if mailbox.exited() {
            break;
        }
    }
    mailbox.retire_workers();
    mailbox.lose(LostCause::new("the lane thread ended"));
}

/// The service's lane thread with an outcome callback set (`announce`): as [`lane_loop`], and
/// it shows the outcomes delivered since it last looked after each run of the steps and, on
/// every path, before it ends (also when another thread ran the steps to their end after its
/// last look). Returns the outcomes it showed, in order.
fn announcing_lane_loop(mailbox: &Mailbox<Toy>, body: Body) -> Vec<u64> {
    let mut shown = Vec::new();
    let mut buffer = VecDeque::new();
    let mut unannounced = |shown: &mut Vec<u64>| {
        mailbox.take_unannounced(&mut buffer);
        shown.extend(buffer.drain(..));
    };
    loop {
        let ran = run_steps(mailbox, body);
        unannounced(&mut shown);
        match ran {
            Ran::Exited => break,
            Ran::Lost => return shown,
            Ran::Slept(_) | Ran::Elsewhere => {}
        }
        if mailbox.exited() {
            unannounced(&mut shown);
            break;
        }
        mailbox.idle(None);
        if mailbox.exited() {
            unannounced(&mut shown);
            break;
        }
    }
    mailbox.retire_workers();
    mailbox.lose(LostCause::new("the lane thread ended"));
    shown
}

/// A lane that finishes one queued item per step, and ends at the shutdown once nothing is
/// queued.
fn plain_body(toy: &mut Toy, cx: &mut Step<'_, Toy>) -> Flow {
    match toy.queued.pop_front() {
        Some(item) => {
            toy.finished.push_back(item);
            Flow::Again
        }
        None if cx.shutdown => Flow::Exit,
        None => Flow::Sleep,
    }
}

/// The lane thread's loop of [`plain_body`].
fn lane_thread(mailbox: &Mailbox<Toy>) {
    lane_loop(mailbox, plain_body);
}

/// A lane with host workers: every queued item goes to a worker, and is finished when its
/// answer comes back; at the shutdown with nothing out, the steps end.
fn workers_body(toy: &mut Toy, cx: &mut Step<'_, Toy>) -> Flow {
    while let Some(answer) = cx.answer() {
        toy.answered.push(answer);
    }
    toy.finish_in_order();
    while let Some(item) = toy.queued.pop_front() {
        cx.dispatch(item);
    }
    if cx.out() == 0 && cx.shutdown {
        Flow::Exit
    } else {
        Flow::Sleep
    }
}

fn lane_thread_with_workers(mailbox: &Mailbox<Toy>) {
    lane_loop(mailbox, workers_body);
}

/// A lane with a completion waiter: each queued item is awaited through the waiter, one at a
/// time (the lane awaits only its oldest launched run), and finished when the waiter's answer
/// to its ticket comes back; at the shutdown with nothing out, the steps end.
fn waiter_body(toy: &mut Toy, cx: &mut Step<'_, Toy>) -> Flow {
    if let Some((ticket, answer)) = cx.waited() {
        if toy.awaiting == Some(ticket) {
            toy.awaiting = None;
            toy.finished.push_back(answer);
        }
    }
    if toy.awaiting.is_none() {
        if let Some(item) = toy.queued.pop_front() {
            toy.awaiting = Some(item);
            cx.hand_wait(item, item);
        }
    }
    if toy.awaiting.is_none() && cx.shutdown {
        Flow::Exit
    } else {
        Flow::Sleep
    }
}

fn lane_thread_with_waiter(mailbox: &Mailbox<Toy>) {
    lane_loop(mailbox, waiter_body);
}

/// The completion waiter: answers every wait with itself (the "device call" between taking
/// and answering is a preemption point), then runs the steps itself unless another thread
/// does (whoever has the event runs the steps), until the lane is lost.
fn waiter(mailbox: &Mailbox<Toy>) -> usize {
    let mut answered = 0;
    while let Some((ticket, wait)) = mailbox.take_wait() {
        thread::yield_now();
        mailbox.give_waited(ticket, wait);
        run_steps(mailbox, waiter_body);
        answered += 1;
    }
    answered
}

fn spawn_waiter(mailbox: &Arc<Mailbox<Toy>>) -> thread::JoinHandle<usize> {
    on_thread(mailbox, waiter)
}

/// `body` on a thread of its own, over a handle to `mailbox` (every scenario's lane thread,
/// waiter and worker start this way).
fn on_thread<T: Send + 'static>(
    mailbox: &Arc<Mailbox<Toy>>,
    body: impl FnOnce(&Mailbox<Toy>) -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    let mailbox = Arc::clone(mailbox);
    thread::spawn(move || body(&mailbox))
}

/// A toy lane's mailbox with a queue of two (`announce`: an outcome callback is set).
fn toy_mailbox(announce: bool) -> Arc<Mailbox<Toy>> {
    Arc::new(Mailbox::new(Toy::default(), announce, 2, 2))
}

/// A host worker: answers every job with itself and runs the steps its answer starts unless
/// another thread does, until the workers retire or the lane is lost.
fn worker(mailbox: &Mailbox<Toy>) -> usize {
    let mut answered = 0;
    while let Some(job) = mailbox.take_job() {
        mailbox.give_answer(job, false);
        run_steps(mailbox, workers_body);
        answered += 1;
    }
    answered
}

fn spawn_worker(mailbox: &Arc<Mailbox<Toy>>) -> thread::JoinHandle<usize> {
    on_thread(mailbox, worker)
}

/// The lane thread of a recovery (L-20): hands one wait to the waiter, then, without waiting
/// for its answer (the run it was for was abandoned), makes a "force reset" as soon as the
/// waiter is out of its device call, taking back a wait the waiter has not taken (it polls
/// the mailbox, as the service's lane thread does when woken by its bound); the reset
/// asserts the waiter is not inside its call. Then the lane ends (a loss ends the waiter).
fn lane_thread_resetting(mailbox: &Mailbox<Toy>, in_call: &AtomicBool) {
    // It holds the steps throughout: the waiter's answer is this thread's to take.
    assert_eq!(mailbox.begin_steps(), Ok(true));
    loop {
        let Ok(reset) = mailbox.step(|toy, cx| {
            if toy.awaiting.is_none() {
                toy.awaiting = Some(1);
                cx.hand_wait(1, 1);
                return false;
            }
            // Its answer, if any, is dropped: nobody asks for it any more.
            let _ = cx.waited();
            cx.withdraw_wait();
            !cx.waiter_inside()
        }) else {
            return;
        };
        if reset {
            assert!(
                !in_call.load(Ordering::SeqCst),
                "a force reset under a wait"
            );
            mailbox.lose(LostCause::new("the lane thread ended"));
            return;
        }
        // Not asleep on the mailbox: the service's lane thread wakes at its bound or for a
        // command while the waiter is still inside its call.
        thread::yield_now();
    }
}

/// A completion waiter that marks the time it is inside its device call.
fn marking_waiter(mailbox: &Mailbox<Toy>, in_call: &AtomicBool) {
    while let Some((ticket, wait)) = mailbox.take_wait() {
        in_call.store(true, Ordering::SeqCst);
        thread::yield_now();
        in_call.store(false, Ordering::SeqCst);
        mailbox.give_waited(ticket, wait);
        // The steps are the resetting lane thread's (or over, with the lane).
        let ran = run_steps(mailbox, waiter_body);
        assert!(matches!(ran, Ran::Elsewhere | Ran::Lost), "{ran:?}");
    }
}

fn model(scenario: impl Fn() + Sync + Send + 'static) {
    model_bounded(3, scenario);
}

/// Four threads: two preemptions keep the exploration to seconds.
fn model_bounded(preemptions: usize, scenario: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.check(scenario);
}

#[test]
fn a_command_wakes_the_idle_lane_thread_and_its_outcome_wakes_the_waiter() {
    model(|| {
        let mailbox = toy_mailbox(false);
        let lane = on_thread(&mailbox, lane_thread);
        let item = submit(&mailbox);
        assert_eq!(mailbox.wait(item, None), Ok(item));
        mailbox.shutdown();
        lane.join().expect("the lane thread");
    });
}

#[test]
fn a_poll_and_a_wait_racing_for_one_outcome_take_it_exactly_once() {
    model(|| {
        let mailbox = toy_mailbox(false);
        let item = submit(&mailbox);
        let lane = on_thread(&mailbox, lane_thread);
        let poller = on_thread(&mailbox, Mailbox::poll);
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
        let mailbox = toy_mailbox(false);
        let item = submit(&mailbox);
        // The lane thread dies before finishing anything.
        let lane = on_thread(&mailbox, |mailbox| mailbox.lose(LostCause::new("boom")));
        assert_eq!(
            mailbox.wait(item, None),
            Err(WaitError::Lost {
                item,
                cause: LostCause::new("boom"),
            })
        );
        assert_eq!(
            mailbox.command(true, |_| Ok(((), None))),
            Err(LostCause::new("boom"))
        );
        lane.join().expect("the lane thread");
    });
}

#[test]
fn the_shutdown_wakes_the_idle_lane_thread() {
    model(|| {
        let mailbox = toy_mailbox(false);
        let lane = on_thread(&mailbox, lane_thread);
        mailbox.shutdown();
        lane.join().expect("the lane thread");
    });
}

#[test]
fn dispatched_work_wakes_a_worker_and_its_answer_wakes_the_lane_thread_and_the_waiter() {
    model(|| {
        let mailbox = toy_mailbox(false);
        let lane = on_thread(&mailbox, lane_thread_with_workers);
        let worker = spawn_worker(&mailbox);
        let item = submit(&mailbox);
        assert_eq!(mailbox.wait(item, None), Ok(item));
        mailbox.shutdown();
        lane.join().expect("the lane thread");
        assert_eq!(worker.join().expect("the worker"), 1);
    });
}

#[test]
fn two_workers_answer_two_jobs_in_any_order_and_both_outcomes_arrive() {
    model_bounded(2, || {
        let mailbox = toy_mailbox(false);
        let first = submit(&mailbox);
        let second = submit(&mailbox);
        let lane = on_thread(&mailbox, lane_thread_with_workers);
        let workers = [spawn_worker(&mailbox), spawn_worker(&mailbox)];
        assert_eq!(mailbox.wait(second, None), Ok(second));
        assert_eq!(mailbox.wait(first, None), Ok(first));
        mailbox.shutdown();
        lane.join().expect("the lane thread");
        let answered: usize = workers.map(|w| w.join().expect("a worker")).iter().sum();
        assert_eq!(answered, 2);
    });
}

#[test]
fn the_shutdown_with_no_work_retires_an_idle_worker() {
    model(|| {
        let mailbox = toy_mailbox(false);
        let lane = on_thread(&mailbox, lane_thread_with_workers);
        let worker = spawn_worker(&mailbox);
        mailbox.shutdown();
        lane.join().expect("the lane thread");
        assert_eq!(worker.join().expect("the worker"), 0);
    });
}

#[test]
fn a_worker_s_loss_wakes_the_idle_lane_thread_the_waiter_and_the_other_worker() {
    model_bounded(2, || {
        let mailbox = toy_mailbox(false);
        let lane = on_thread(&mailbox, lane_thread_with_workers);
        let idle_worker = spawn_worker(&mailbox);
        let item = submit(&mailbox);
        // A worker that panics on its job: the service loses the lane with the cause.
        let panicking = on_thread(&mailbox, |mailbox| {
            if mailbox.take_job().is_some() {
                mailbox.lose(LostCause::new("worker panic"));
            }
        });
        // Either worker may take the job; only the panicking one never answers it.
        match mailbox.wait(item, None) {
            Ok(got) => assert_eq!(got, item),
            Err(WaitError::Lost { cause, .. }) => assert_eq!(cause, LostCause::new("worker panic")),
            Err(other) => panic!("unexpected: {other:?}"),
        }
        mailbox.shutdown();
        lane.join().expect("the lane thread");
        // Retired or lost: a panicking worker that got no job ends too.
        panicking.join().expect("the panicking worker");
        // Retired or lost: either way the idle worker ends.
        idle_worker.join().expect("the idle worker");
    });
}

#[test]
fn a_completion_posted_while_the_lane_thread_decides_to_sleep_wakes_it_and_the_waiter() {
    model(|| {
        let mailbox = toy_mailbox(false);
        let lane = on_thread(&mailbox, lane_thread_with_waiter);
        let waiter = spawn_waiter(&mailbox);
        let item = submit(&mailbox);
        assert_eq!(mailbox.wait(item, None), Ok(item));
        mailbox.shutdown();
        lane.join().expect("the lane thread");
        assert_eq!(waiter.join().expect("the waiter"), 1);
    });
}

#[test]
fn a_command_posted_while_the_waiter_runs_the_steps_is_taken_before_it_lets_go() {
    model_bounded(2, || {
        let mailbox = toy_mailbox(false);
        let lane = on_thread(&mailbox, lane_thread_with_waiter);
        let waiter = spawn_waiter(&mailbox);
        let first = submit(&mailbox);
        // Posted while the waiter may be running the steps for the first item's answer: a
        // command that finds a thread running them wakes no one, so that thread must take it.
        let second = submit(&mailbox);
        assert_eq!(mailbox.wait(first, None), Ok(first));
        assert_eq!(mailbox.wait(second, None), Ok(second));
        mailbox.shutdown();
        lane.join().expect("the lane thread");
        assert_eq!(waiter.join().expect("the waiter"), 2);
    });
}

#[test]
fn a_completion_arriving_while_a_submitter_runs_the_steps_is_taken_by_it() {
    model_bounded(2, || {
        let mailbox = toy_mailbox(false);
        let lane = on_thread(&mailbox, lane_thread_with_waiter);
        let waiter = spawn_waiter(&mailbox);
        // The submitting thread runs the steps (it hands the first wait out itself); the
        // second submit may be running them when the first answer arrives, and the waiter
        // then leaves them to it.
        let first = submit_from(&mailbox, Some(waiter_body));
        let second = submit_from(&mailbox, Some(waiter_body));
        assert_eq!(mailbox.wait(first, None), Ok(first));
        assert_eq!(mailbox.wait(second, None), Ok(second));
        mailbox.shutdown();
        lane.join().expect("the lane thread");
        assert_eq!(waiter.join().expect("the waiter"), 2);
    });
}

#[test]
fn two_waits_in_turn_each_wake_the_lane_thread_and_arrive_in_order() {
    model_bounded(2, || {
        let mailbox = toy_mailbox(false);
        let first = submit(&mailbox);
        let second = submit(&mailbox);
        let lane = on_thread(&mailbox, lane_thread_with_waiter);
        let waiter = spawn_waiter(&mailbox);
        assert_eq!(mailbox.wait(second, None), Ok(second));
        assert_eq!(mailbox.wait(first, None), Ok(first));
        mailbox.shutdown();
        lane.join().expect("the lane thread");
        assert_eq!(waiter.join().expect("the waiter"), 2);
    });
}

#[test]
fn the_shutdown_with_the_waiter_inside_a_device_call_delivers_its_answer_and_ends_every_thread() {
    model(|| {
        let mailbox = toy_mailbox(false);
        let lane = on_thread(&mailbox, lane_thread_with_waiter);
        let waiter = spawn_waiter(&mailbox);
        let item = submit(&mailbox);
        // The last handle goes while the wait may be out, in the waiter's device call.
        mailbox.shutdown();
        lane.join().expect("the lane thread");
        assert_eq!(waiter.join().expect("the waiter"), 1);
        // The launched item still got its outcome before the lane thread ended.
        assert_eq!(mailbox.poll(), Some(item));
    });
}

#[test]
fn the_lane_s_loss_ends_an_idle_waiter_and_drops_a_late_answer() {
    model(|| {
        let mailbox = toy_mailbox(false);
        let waiter = spawn_waiter(&mailbox);
        mailbox.lose(LostCause::new("boom"));
        assert_eq!(waiter.join().expect("the waiter"), 0);
        // An answer given after the loss is dropped, never a hang.
        mailbox.give_waited(1, 1);
    });
}

#[test]
fn a_force_reset_is_made_only_once_the_waiter_is_out_of_its_call_and_never_lost() {
    model(|| {
        let mailbox = toy_mailbox(false);
        let in_call = Arc::new(AtomicBool::new(false));
        let waiter = {
            let in_call = Arc::clone(&in_call);
            on_thread(&mailbox, move |mailbox| marking_waiter(mailbox, &in_call))
        };
        let lane = {
            let in_call = Arc::clone(&in_call);
            on_thread(&mailbox, move |mailbox| {
                lane_thread_resetting(mailbox, &in_call)
            })
        };
        lane.join()
            .expect("the lane thread reset, never under a wait");
        waiter.join().expect("the waiter ended with the loss");
    });
}

#[test]
fn every_outcome_is_announced_before_the_lane_thread_ends_when_the_waiter_ran_the_steps_last() {
    // The completion waiter runs the steps that deliver the outcome and, after the shutdown,
    // the steps' end, while the lane thread finds them taken (another thread runs them): the
    // lane thread must still show that outcome before it ends, or `destroy` returns with a
    // callback never made (found as a rare failure of lane-capi's callback test). Four
    // preemptions reach that order; two or three do not.
    model_bounded(4, || {
        let mailbox = toy_mailbox(true);
        let lane = on_thread(&mailbox, |mailbox| {
            announcing_lane_loop(mailbox, waiter_body)
        });
        let waiter = spawn_waiter(&mailbox);
        let item = submit(&mailbox);
        assert_eq!(mailbox.wait(item, None), Ok(item));
        mailbox.shutdown();
        assert_eq!(lane.join().expect("the lane thread"), vec![item]);
        assert_eq!(waiter.join().expect("the waiter"), 1);
    });
}
