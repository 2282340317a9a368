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
//! wait. And the outcome callback, shown by whichever thread holds the claim before it lets
//! go of it: a lane thread that shows outcomes outside the claim (as the lane thread did
//! before issue 44) shows one beside another thread's device call, and a holder that lets
//! go without showing leaves a callback unmade.
//!
//! And the caller-driven lane (L-23, no thread of the lane's own): callers take the offered
//! wait themselves (`take_wait`), sleep on `delivered` while another caller is inside it
//! (`caller_idle`), and an offered wait or a wait's end wakes them: a caller asleep while the
//! one inside answers, or while the steps another caller runs offer the next wait, is never
//! left asleep.

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
    run_steps_showing(mailbox, body, None)
}

/// The outcome callback of a scenario: what it was shown, and whether a thread running the
/// steps is inside a "device call" (between two steps).
#[derive(Default)]
struct Showing {
    shown: loom::sync::Mutex<Vec<u64>>,
    calling: AtomicBool,
}

impl Showing {
    /// Shows the outcomes delivered since the last look (the service's `Engine::announce`),
    /// asserting no call of the steps is in flight.
    fn show(&self, mailbox: &Mailbox<Toy>) {
        let mut buffer = VecDeque::new();
        mailbox.take_unannounced(&mut buffer);
        if !buffer.is_empty() {
            assert!(
                !self.calling.load(Ordering::SeqCst),
                "an outcome shown beside a call of the steps"
            );
            self.shown.lock().unwrap().extend(buffer.drain(..));
        }
    }
}

/// As [`run_steps`]; with `show`, the holder of the claim shows delivered outcomes after each
/// step that delivered some and before it lets go, and a step that says `Again` is followed
/// by a "device call" (the service executes an effect there, with no lock held).
fn run_steps_showing(mailbox: &Mailbox<Toy>, body: Body, show: Option<&Showing>) -> Ran {
    match mailbox.begin_steps() {
        Ok(true) => {}
        Ok(false) => return Ran::Elsewhere,
        Err(_) => return Ran::Lost,
    }
    loop {
        let Ok(((flow, shutdown), to_show)) = mailbox.step(|toy, cx| (body(toy, cx), cx.shutdown))
        else {
            return Ran::Lost;
        };
        if let (Some(show), true) = (show, to_show) {
            show.show(mailbox);
        }
        match flow {
            Flow::Again => {
                if let Some(show) = show {
                    show.calling.store(true, Ordering::SeqCst);
                    thread::yield_now();
                    show.calling.store(false, Ordering::SeqCst);
                }
            }
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
/// and its end is a loss (which ends the waiter). Ends quietly on a loss. With `show` (an
/// outcome callback is set), it shows outcomes only while it holds the claim.
fn lane_loop(mailbox: &Mailbox<Toy>, body: Body, show: Option<&Showing>) {
    loop {
        match run_steps_showing(mailbox, body, show) {
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

/// A lane with a completion waiter whose finished item is followed by a call of the steps
/// (the launch of the next run, on the thread that ran the steps): as [`waiter_body`], with
/// `Again` after each finish.
fn calling_waiter_body(toy: &mut Toy, cx: &mut Step<'_, Toy>) -> Flow {
    if let Some((ticket, answer)) = cx.waited() {
        if toy.awaiting == Some(ticket) {
            toy.awaiting = None;
            toy.finished.push_back(answer);
            return Flow::Again;
        }
    }
    waiter_body(toy, cx)
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
    lane_loop(mailbox, plain_body, None);
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
    if cx.out() == 0 && cx.shutdown { Flow::Exit } else { Flow::Sleep }
}

fn lane_thread_with_workers(mailbox: &Mailbox<Toy>) {
    lane_loop(mailbox, workers_body, None);
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
    if toy.awaiting.is_none() && cx.shutdown { Flow::Exit } else { Flow::Sleep }
}

fn lane_thread_with_waiter(mailbox: &Mailbox<Toy>) {
    lane_loop(mailbox, waiter_body, None);
}

/// The completion waiter: answers every wait with itself (the "device call" between taking
/// and answering is a preemption point), then runs the steps itself unless another thread
/// does (whoever has the event runs the steps), until the lane is lost.
fn waiter(mailbox: &Mailbox<Toy>) -> usize {
    waiter_showing(mailbox, waiter_body, None)
}

/// [`waiter`] for a lane of `body`, running the steps as [`run_steps_showing`] with `show`.
fn waiter_showing(mailbox: &Mailbox<Toy>, body: Body, show: Option<&Showing>) -> usize {
    let mut answered = 0;
    while let Some((ticket, wait)) = take_wait(mailbox) {
        thread::yield_now();
        mailbox.give_waited(ticket, wait);
        run_steps_showing(mailbox, body, show);
        answered += 1;
    }
    answered
}

/// The service's waiter loop: blocks until a wait is offered, then takes it (with the time
/// its call starts; the toy's clock reads 0). `None` once the lane is lost.
fn take_wait(mailbox: &Mailbox<Toy>) -> Option<(u64, u64)> {
    while mailbox.next_offer() {
        if let Some(taken) = mailbox.take_wait(0, |_| true) {
            return Some(taken);
        }
    }
    None
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
        let Ok((reset, _)) = mailbox.step(|toy, cx| {
            if toy.awaiting.is_none() {
                toy.awaiting = Some(1);
                cx.hand_wait(1, 1);
                return false;
            }
            // Its answer, if any, is dropped: nobody asks for it any more.
            let _ = cx.waited();
            cx.withdraw_wait();
            cx.inside().is_none()
        }) else {
            return;
        };
        if reset {
            assert!(!in_call.load(Ordering::SeqCst), "a force reset under a wait");
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
    while let Some((ticket, wait)) = take_wait(mailbox) {
        in_call.store(true, Ordering::SeqCst);
        thread::yield_now();
        in_call.store(false, Ordering::SeqCst);
        mailbox.give_waited(ticket, wait);
        // The steps are the resetting lane thread's (or over, with the lane).
        let ran = run_steps(mailbox, waiter_body);
        assert!(matches!(ran, Ran::Elsewhere | Ran::Lost), "{ran:?}");
    }
}

/// The last handle goes; the lane thread ends.
fn shut_down(mailbox: &Mailbox<Toy>, lane: thread::JoinHandle<()>) {
    mailbox.shutdown();
    lane.join().expect("the lane thread");
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
        shut_down(&mailbox, lane);
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
        shut_down(&mailbox, lane);
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
            Err(WaitError::Lost { item, cause: LostCause::new("boom") })
        );
        assert_eq!(mailbox.command(true, |_| Ok(((), None))), Err(LostCause::new("boom")));
        lane.join().expect("the lane thread");
    });
}

#[test]
fn the_shutdown_wakes_the_idle_lane_thread() {
    model(|| {
        let mailbox = toy_mailbox(false);
        let lane = on_thread(&mailbox, lane_thread);
        shut_down(&mailbox, lane);
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
        shut_down(&mailbox, lane);
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
        shut_down(&mailbox, lane);
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
        shut_down(&mailbox, lane);
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
        shut_down(&mailbox, lane);
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
        shut_down(&mailbox, lane);
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
        shut_down(&mailbox, lane);
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
        shut_down(&mailbox, lane);
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
        shut_down(&mailbox, lane);
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
        shut_down(&mailbox, lane);
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
            on_thread(&mailbox, move |mailbox| lane_thread_resetting(mailbox, &in_call))
        };
        lane.join().expect("the lane thread reset, never under a wait");
        waiter.join().expect("the waiter ended with the loss");
    });
}

#[test]
fn every_outcome_is_shown_once_by_the_thread_holding_the_claim_and_never_beside_a_call_of_the_steps()
 {
    // The completion waiter runs the steps that deliver the outcome and then "launches" (a
    // call between steps), while the lane thread may be woken by the submit: only the claim's
    // holder shows outcomes, so the callback never runs beside that call (issue 44: it ran on
    // the lane thread beside the waiter's force reset), and every outcome is shown before the
    // steps end, whichever thread ran them last.
    model_bounded(3, || {
        let mailbox = toy_mailbox(true);
        let show = Arc::new(Showing::default());
        let lane = {
            let show = Arc::clone(&show);
            on_thread(&mailbox, move |mailbox| {
                lane_loop(mailbox, calling_waiter_body, Some(&show));
            })
        };
        let waiter = {
            let show = Arc::clone(&show);
            on_thread(&mailbox, move |mailbox| {
                waiter_showing(mailbox, calling_waiter_body, Some(&show))
            })
        };
        let item = submit(&mailbox);
        assert_eq!(mailbox.wait(item, None), Ok(item));
        shut_down(&mailbox, lane);
        assert_eq!(waiter.join().expect("the waiter"), 1);
        assert_eq!(*show.shown.lock().unwrap(), vec![item]);
    });
}

/// A caller's `wait` where the caller drives the lane: takes the outcome once delivered, runs
/// the steps, takes the offered wait and answers it itself (the device call is a preemption
/// point), and sleeps on `delivered` while another caller is inside it.
fn caller_wait(mailbox: &Mailbox<Toy>, seq: u64) -> u64 {
    loop {
        if let Some(taken) = mailbox.try_take(seq) {
            return taken.expect("the outcome");
        }
        run_steps(mailbox, waiter_body);
        if let Some(taken) = mailbox.try_take(seq) {
            return taken.expect("the outcome");
        }
        if let Some((ticket, wait)) = mailbox.take_wait(0, |_| true) {
            thread::yield_now();
            mailbox.give_waited(ticket, wait);
            continue;
        }
        mailbox.caller_idle(Some(seq), None);
    }
}

/// A caller-driven lane's mailbox (no thread of its own).
fn caller_mailbox() -> Arc<Mailbox<Toy>> {
    let mailbox = toy_mailbox(false);
    mailbox.callers_wait();
    mailbox
}

#[test]
fn two_callers_driving_a_lane_with_no_thread_of_its_own_each_get_their_outcome() {
    // One caller waits for the first item (it takes and makes the wait), the other submits
    // the second (running the steps itself) and waits for it: whichever is inside the device
    // wait, the other sleeps and is woken by the wait's end or the next wait offered.
    model_bounded(3, || {
        let mailbox = caller_mailbox();
        let first = submit_from(&mailbox, Some(waiter_body));
        let other = on_thread(&mailbox, move |mailbox| caller_wait(mailbox, first));
        let second = submit_from(&mailbox, Some(waiter_body));
        assert_eq!(caller_wait(&mailbox, second), second);
        assert_eq!(other.join().expect("the other caller"), first);
    });
}

#[test]
fn a_caller_waiting_while_another_runs_the_steps_takes_the_wait_they_offer() {
    // The submitting caller runs the steps that offer the wait while the waiting caller may
    // already be asleep: the offer wakes it (no thread of the lane's own would).
    model_bounded(3, || {
        let mailbox = caller_mailbox();
        let next = 1;
        let waiting = on_thread(&mailbox, move |mailbox| {
            // The item is the first the lane accepts; wait until it is.
            while let Some(Err(WaitError::Unknown { .. })) = mailbox.try_take(next) {
                thread::yield_now();
            }
            caller_wait(mailbox, next)
        });
        let item = submit_from(&mailbox, Some(waiter_body));
        assert_eq!(item, next);
        assert_eq!(waiting.join().expect("the waiting caller"), item);
    });
}
