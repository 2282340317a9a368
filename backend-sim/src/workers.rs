//! Virtual host workers and the completion waiter: the runner's prepare and finalise, and
//! every device wait, off the lane thread, in virtual time, with no threads.
//!
//! lane-service runs a runner's `PrepareRun` and `FinaliseRun` on host worker threads when the
//! runner's [`Concurrency`] allows, and every blocking device wait (a run's completion, the
//! recovery drain) on its completion waiter thread, so the lane thread only launches,
//! records, reads status and makes stream and recovery calls. The simulator models that
//! deterministically: each worker and the waiter is a track with its own clock, and
//! [`WorkerLoop`] is the lane thread's loop (lane-service's `LaneThread::run` and `decide`)
//! over the lane's steps and the executor ([`Driver::parts_mut`]):
//!
//! - a `PrepareRun` or `FinaliseRun` effect goes to the earliest-free worker (lane-service's
//!   job queue is FIFO and a free worker takes the next job, which is the same assignment).
//!   A worker that was asleep (free before the hand-off) first wakes up (`host_wakeup` on its
//!   own track); a busy one takes the job when its last call returns. The executor runs the
//!   call on that worker's clock ([`HostTracks::enter`]), so its host costs are charged to the
//!   worker's track, not the lane thread's, and its trace records are the worker's. A
//!   worker's first call (and its first after a force reset, which unbinds every thread) is
//!   `set_device`: the worker binds the device first. A worker that cannot bind hands the
//!   job back (lane-service's `HostWorker::bind`): once its clock reaches the failed bind's
//!   end, the lane thread executes the job itself, charged to its own track, before it feeds
//!   the later answers;
//! - a device wait (the awaited run's completion, `Executor::completion_wait`, once nothing
//!   is left to execute; a `DrainDevice` effect, `Executor::device_wait`) goes to the
//!   completion waiter's track ([`WAITER_TRACK`]), one at a time, with a ticket: the waiter
//!   wakes if it was asleep, binds (`set_device`) before its first wait and after a force
//!   reset, and makes the wait with `lane_driver::run_device_wait`, the function
//!   lane-service's waiter runs, on its own clock;
//! - the answers (`Prepared`, `Finalised`, the completions and the failures, exactly as the
//!   executor made them on the lane thread) are fed back once the lane thread's clock has
//!   reached them, the workers' first (lane-service's `decide` takes every worker answer
//!   before the waiter's); a waiter's answer to a wait the lane thread no longer waits for
//!   (a poison abandoned its run, or the lane thread answered it at its bound) is dropped;
//! - with nothing to execute the lane thread sleeps until the next answer, or the bound of
//!   the wait out (`DeviceWait::bound`) if that comes first, when it answers the wait itself;
//!   it pays a `host_wakeup` either way. It never waits on the device.
//!
//! Commands come from the workload between turns, at the lane thread's clock, as a client
//! thread's command wakes lane-service's lane thread. The hand-off of a job and the giving
//! of an answer cost no modelled host time: each is a push into a queue allocated once,
//! under the lock the lane step holds, and the wake-up it causes is charged to the thread
//! that wakes.
//!
//! Device-side state the calls change (the faults drawn, the run's slot buffers released at
//! finalise) changes in the order the calls were handed out, which is the lane's order.

use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{
    CloseReport, CodeRef, Effect, Event, FinaliseFailure, LaneState, PublicationId, PublishError,
    RunId, RunPhase, RunRequest, SlotId, SubmitError, Timestamp,
};
use lane_driver::{
    CompletionWaiter, Concurrency, Device, DevicePtr, DeviceWait, Driver, DriverError, EventHandle,
    LaneSteps, Observer, PrepareError, RunArgs, Runner, Turn, Wait, is_host_work, run_device_wait,
    wait_failed,
};

use crate::device::{SimDevice, SimRunner};
use crate::trace::WAITER_TRACK;

/// A backend's virtual host worker tracks: where a runner call made on a worker runs in
/// virtual time. Only a virtual-time backend has them (the simulator); on a real clock the
/// lane service's threads are the workers.
pub trait HostTracks<D> {
    /// How many workers run runner calls (0: all on the lane thread).
    fn workers(&self) -> u8;
    /// Puts the device's host clock on `worker`'s track at `at_ns`: every call until
    /// [`HostTracks::leave`] is that worker's (its costs, its trace records).
    fn enter(&mut self, device: &mut D, worker: u8, at_ns: u64);
    /// Back on the lane thread's clock; returns when the worker's calls ended.
    fn leave(&mut self, device: &mut D) -> u64;
    /// The lane thread has nothing to do until `at_ns`: its clock moves there.
    fn idle_until(&mut self, device: &mut D, at_ns: u64);
    /// The thread whose clock the device is on (the lane thread, or the worker between
    /// [`HostTracks::enter`] and [`HostTracks::leave`]) wakes from a sleep: its wake-up
    /// latency, billed to `run`, saying `why`.
    fn wake_up(&mut self, device: &mut D, run: Option<RunId>, why: &'static str);
}

/// The simulator's worker tracks on a [`SimDevice`]: the device's one host clock is moved to
/// the worker's time for its call and back to the lane thread's after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimTracks {
    workers: u8,
    /// The lane thread's clock while a worker's call runs.
    lane_ns: u64,
}

impl SimTracks {
    /// `workers` virtual host workers (0: the runner's work stays on the lane thread).
    pub const fn new(workers: u8) -> Self {
        Self {
            workers,
            lane_ns: 0,
        }
    }
}

impl HostTracks<SimDevice> for SimTracks {
    fn workers(&self) -> u8 {
        self.workers
    }

    fn enter(&mut self, device: &mut SimDevice, worker: u8, at_ns: u64) {
        self.lane_ns = device.set_host_clock(at_ns);
        device.journal().set_track(Some(worker));
    }

    fn leave(&mut self, device: &mut SimDevice) -> u64 {
        device.journal().set_track(None);
        device.set_host_clock(self.lane_ns)
    }

    fn idle_until(&mut self, device: &mut SimDevice, at_ns: u64) {
        let now = device.host_ns();
        device.set_host_clock(now.max(at_ns));
    }

    fn wake_up(&mut self, device: &mut SimDevice, run: Option<RunId>, why: &'static str) {
        device.host_wakeup(run, why);
    }
}

/// [`SimRunner`] declaring that its prepare and finalise may run off the lane thread, with
/// up to `prepares_at_once` prepares at once (each on its own slot). [`SimRunner`] itself
/// keeps the default (everything on the lane thread), so every existing embedding of it is
/// unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffLaneRunner {
    prepares_at_once: u8,
}

impl OffLaneRunner {
    /// A runner allowing `prepares_at_once` prepares at once (at least 1).
    pub const fn new(prepares_at_once: u8) -> Self {
        Self {
            prepares_at_once: if prepares_at_once == 0 {
                1
            } else {
                prepares_at_once
            },
        }
    }
}

impl Runner<SimDevice> for OffLaneRunner {
    fn prepare_run(
        &mut self,
        device: &mut SimDevice,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError> {
        SimRunner.prepare_run(device, run, slot, diagnostics)
    }

    fn launch_aicore(
        &mut self,
        device: &mut SimDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), AclCode> {
        SimRunner.launch_aicore(device, stream, args)
    }

    fn launch_aicpu(
        &mut self,
        device: &mut SimDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), AclCode> {
        SimRunner.launch_aicpu(device, stream, args)
    }

    fn finalise_run(
        &mut self,
        device: &mut SimDevice,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        SimRunner.finalise_run(device, run, slot, copy_back)
    }

    fn upload_code(&mut self, device: &mut SimDevice, code: CodeRef) -> Result<(), AclCode> {
        SimRunner.upload_code(device, code)
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency {
            off_lane_thread: true,
            prepares_at_once: self.prepares_at_once,
        }
    }
}

/// A host thread's answer, fed to the lane once the lane thread's clock reaches `end_ns`.
#[derive(Clone, Debug)]
struct Answer {
    end_ns: u64,
    /// Hand-out order: answers ending together are fed in it.
    seq: u64,
    /// The run the job was for (a wake-up it causes is billed to it).
    run: Option<RunId>,
    reply: Reply,
}

/// What a host thread gives back.
#[derive(Clone, Debug)]
enum Reply {
    /// A worker ran its job: the event that answers it.
    Answered {
        event: Event,
        /// The device's text about the failed call, read on the worker right after it.
        message: Option<String>,
    },
    /// The worker could not bind the device: the lane thread runs the job itself.
    HandedBack(Effect),
    /// The completion waiter's answer to the device wait with this ticket.
    Waited {
        ticket: u64,
        wait: Wait,
        /// The device's text about a failed wait, read on the waiter right after it.
        message: Option<String>,
    },
}

/// The device wait out on the completion waiter.
#[derive(Clone, Copy, Debug)]
struct WaitOut {
    ticket: u64,
    wait: DeviceWait,
    /// Past this the lane thread answers the wait itself ([`DeviceWait::bound`]).
    bound: u64,
}

/// The completion waiter's device calls on its own track: it binds (`set_device`) before its
/// first wait and again after a force reset, as lane-service's waiter does.
struct OnWaiterTrack<'a, D: Device> {
    device: &'a mut D,
    bound: &'a mut bool,
}

impl<D: Device> CompletionWaiter for OnWaiterTrack<'_, D> {
    fn bind(&mut self) -> Result<(), AclCode> {
        if !*self.bound {
            self.device.set_device()?;
            *self.bound = true;
        }
        Ok(())
    }

    fn now(&mut self) -> Timestamp {
        self.device.now()
    }

    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.device.synchronize_event(event, timeout_ms)
    }

    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.device.synchronize_stream(stream, timeout_ms)
    }

    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        self.device.memcpy_from_device(dst, src)
    }

    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.device.synchronize_device(timeout_ms)
    }

    fn recent_error_message(&mut self) -> Option<String> {
        self.device.recent_error_message()
    }
}

/// The lane thread's loop with virtual host workers and the completion waiter (see the
/// module doc): the same public steps as [`Driver`] (`submit`, `publish`, `close`, `turn`),
/// over the driver's parts.
#[derive(Clone, Debug)]
pub struct WorkerLoop {
    /// When each worker is next free.
    free_at: Vec<u64>,
    /// Whether each worker has bound the device since the last force reset.
    bound: Vec<bool>,
    /// Answers not yet fed, in `(end_ns, seq)` order.
    answers: Vec<Answer>,
    handed_out: u64,
    /// When the completion waiter is next free.
    waiter_free_at: u64,
    /// Whether the waiter has bound the device since the last force reset.
    waiter_bound: bool,
    /// The device wait out on the waiter, if any.
    wait_out: Option<WaitOut>,
    /// Device waits handed out so far (each one's ticket).
    tickets: u64,
}

impl WorkerLoop {
    /// A loop with `workers` workers, if the runner lets its work leave the lane thread and
    /// there is at least one worker; `None` otherwise (the plain [`Driver`] then runs it all).
    pub fn new(workers: u8, concurrency: Concurrency) -> Option<Self> {
        (workers > 0 && concurrency.off_lane_thread).then(|| Self {
            free_at: vec![0; usize::from(workers)],
            bound: vec![false; usize::from(workers)],
            answers: Vec::new(),
            handed_out: 0,
            waiter_free_at: 0,
            waiter_bound: false,
            wait_out: None,
            tickets: 0,
        })
    }

    /// Runner calls and device waits handed out whose answers the lane has not been fed yet.
    pub fn outstanding(&self) -> usize {
        self.answers.len()
    }

    /// As [`Driver::submit`].
    pub fn submit<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
        request: RunRequest,
    ) -> Result<Result<RunId, SubmitError>, DriverError> {
        let (steps, executor) = driver.parts_mut();
        let now = executor.now();
        let result = steps.submit(now, request)?;
        self.execute_effects(driver, tracks)?;
        Ok(result)
    }

    /// As [`Driver::publish`].
    pub fn publish<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
        code: CodeRef,
    ) -> Result<Result<PublicationId, PublishError>, DriverError> {
        let (steps, executor) = driver.parts_mut();
        let now = executor.now();
        let result = steps.publish(now, code)?;
        self.execute_effects(driver, tracks)?;
        Ok(result)
    }

    /// As [`Driver::close`].
    pub fn close<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
    ) -> Result<CloseReport, DriverError> {
        let (steps, executor) = driver.parts_mut();
        let now = executor.now();
        let report = steps.close(now)?;
        self.execute_effects(driver, tracks)?;
        Ok(report)
    }

    /// As [`Driver::turn`], as lane-service's lane thread decides: every effect the lane
    /// has (runner work to the workers, device waits to the completion waiter); else a sleep
    /// until the next answer (a worker's or the waiter's) or the bound of the wait out,
    /// whichever comes first. The lane thread never waits on the device itself.
    pub fn turn<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
    ) -> Result<Turn, DriverError> {
        if self.execute_effects(driver, tracks)? {
            return Ok(Turn::Progress);
        }
        let (steps, executor) = driver.parts_mut();
        let next = self.answers.first().map(|a| (a.end_ns, a.run, a.why()));
        let bound = self.wait_out.map(|out| out.bound);
        let wake = match (next, bound) {
            (Some((at, _, _)), Some(bound)) if bound < at => (bound, None, "a wait's bound"),
            (Some(next), _) => next,
            (None, Some(bound)) => (bound, None, "a wait's bound"),
            (None, None) => return steps.settled(),
        };
        let device = executor.device_mut();
        tracks.idle_until(device, wake.0);
        tracks.wake_up(device, wake.1, wake.2);
        self.execute_effects(driver, tracks)?;
        Ok(Turn::Progress)
    }

    /// Feeds the answers the lane thread's clock has reached, executes the lane's effects
    /// until none is left (runner work to the workers, device waits to the waiter), and
    /// answers a wait out past its bound itself; returns whether anything happened.
    fn execute_effects<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
    ) -> Result<bool, DriverError> {
        let (steps, executor) = driver.parts_mut();
        let mut any = false;
        loop {
            let now = executor.now();
            let mut handed_back = None;
            // lane-service's `decide` takes every worker answer given by now before the
            // waiter's: the reached answers in end-time order, the waiter's last.
            while handed_back.is_none() {
                let reached = |a: &Answer| a.end_ns <= now.0;
                let next = self
                    .answers
                    .iter()
                    .position(|a| reached(a) && !matches!(a.reply, Reply::Waited { .. }))
                    .or_else(|| self.answers.iter().position(reached));
                let Some(next) = next else {
                    break;
                };
                let answer = self.answers.remove(next);
                any = true;
                match answer.reply {
                    Reply::Answered { event, message } => steps.feed(now, event, message)?,
                    // lane-service's `decide` executes it before it takes the later answers.
                    Reply::HandedBack(effect) => handed_back = Some(effect),
                    Reply::Waited {
                        ticket,
                        wait,
                        message,
                    } => {
                        // An answer to a wait answered at its bound, or whose run a poison
                        // abandoned, is dropped, as lane-service drops it.
                        if self.wait_out.is_some_and(|out| out.ticket == ticket) {
                            let out = self.wait_out.take();
                            if out.is_some_and(|out| still_asked(steps, &out.wait)) {
                                apply_wait(steps, now, wait, message)?;
                            }
                        }
                    }
                }
            }
            if self
                .wait_out
                .is_some_and(|out| !still_asked(steps, &out.wait))
            {
                self.wait_out = None;
            }
            let effect = if let Some(effect) = handed_back {
                // On the lane thread's track; a finalise releases the slot's events again,
                // harmless: the slot is leased to no other run before this answer.
                effect
            } else if let Some(effect) = steps.next_effect(now) {
                any = true;
                if is_host_work(&effect) {
                    // The executor runs it on the worker's track (its finalise releases the
                    // slot's events, as lane-service's `Executor::hand_off` does).
                    self.hand_out(effect, now, executor, steps.observer_mut(), tracks)?;
                    continue;
                }
                if let Some(wait) = executor.device_wait(&effect) {
                    self.hand_wait(wait, now, executor, tracks);
                    continue;
                }
                if matches!(effect, Effect::ForceReset { .. }) {
                    // A reset unbinds every thread: each worker and the waiter bind again
                    // before their next call.
                    self.bound.fill(false);
                    self.waiter_bound = false;
                }
                effect
            } else {
                if self.wait_out.is_none() {
                    if let Some(wait) = executor.completion_wait(steps.deadline())? {
                        any = true;
                        self.hand_wait(wait, now, executor, tracks);
                        continue;
                    }
                }
                match self.wait_out {
                    // The waiter has not answered by the bound: the lane thread answers the
                    // wait itself (lane-service's `decide`).
                    Some(out) if now.0 >= out.bound => {
                        any = true;
                        self.wait_out = None;
                        apply_wait(steps, now, out.wait.answer_at_bound(now), None)?;
                        continue;
                    }
                    _ => break,
                }
            };
            if let Some(event) = executor.execute(effect, steps.observer_mut())? {
                let message = executor.device_message(&event);
                let now = executor.now();
                steps.feed(now, event, message)?;
            }
        }
        if steps.lane().state() == LaneState::Closed {
            executor.release_slot_resources(steps.observer_mut());
        }
        Ok(any)
    }

    /// Makes `wait` on the completion waiter's track at its own time (after a wake-up if it
    /// was asleep), binding first if it is unbound, and keeps the answer until the lane
    /// thread's clock reaches its end. It is the wait out now (one replaced is abandoned).
    fn hand_wait<D: Device, R: Runner<D>>(
        &mut self,
        wait: DeviceWait,
        now: Timestamp,
        executor: &mut lane_driver::Executor<D, R>,
        tracks: &mut dyn HostTracks<D>,
    ) {
        self.tickets += 1;
        let ticket = self.tickets;
        self.wait_out = Some(WaitOut {
            ticket,
            wait,
            bound: wait.bound(now).0,
        });
        let run = match wait {
            DeviceWait::Completion { run, .. } => Some(run),
            DeviceWait::Drain { .. } => None,
        };
        let asleep = self.waiter_free_at <= now.0;
        let start = now.0.max(self.waiter_free_at);
        let device = executor.device_mut();
        tracks.enter(device, WAITER_TRACK, start);
        if asleep {
            tracks.wake_up(device, run, "a device wait");
        }
        let mut waiter = OnWaiterTrack {
            device,
            bound: &mut self.waiter_bound,
        };
        let answer = run_device_wait(&mut waiter, &wait);
        let message = if wait_failed(&answer) {
            waiter.recent_error_message()
        } else {
            None
        };
        let end = tracks.leave(executor.device_mut());
        self.waiter_free_at = end;
        self.push_answer(Answer {
            end_ns: end,
            seq: 0,
            run,
            reply: Reply::Waited {
                ticket,
                wait: answer,
                message,
            },
        });
    }

    /// Queues `answer` in `(end_ns, seq)` order, numbering it.
    fn push_answer(&mut self, mut answer: Answer) {
        self.handed_out += 1;
        answer.seq = self.handed_out;
        let at = self
            .answers
            .partition_point(|a| (a.end_ns, a.seq) <= (answer.end_ns, answer.seq));
        self.answers.insert(at, answer);
    }

    /// Runs one runner effect on the earliest-free worker, at its own time (after a wake-up
    /// if it was asleep), and keeps the answer until the lane thread's clock reaches its end.
    fn hand_out<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        effect: Effect,
        now: Timestamp,
        executor: &mut lane_driver::Executor<D, R>,
        observer: &mut O,
        tracks: &mut dyn HostTracks<D>,
    ) -> Result<(), DriverError> {
        let worker = (0..self.free_at.len())
            .min_by_key(|&w| (self.free_at[w], w))
            .unwrap_or(0);
        let asleep = self.free_at[worker] <= now.0;
        let start = now.0.max(self.free_at[worker]);
        let track = u8::try_from(worker).unwrap_or(u8::MAX - 1);
        let run = effect.run();
        tracks.enter(executor.device_mut(), track, start);
        if asleep {
            tracks.wake_up(executor.device_mut(), run, "a job");
        }
        let bind = if self.bound[worker] {
            Ok(())
        } else {
            executor.device_mut().set_device()
        };
        let replied = match bind {
            Ok(()) => {
                self.bound[worker] = true;
                executor.execute(effect, observer).map(|answered| {
                    answered.map(|event| Reply::Answered {
                        message: executor.device_message(&event),
                        event,
                    })
                })
            }
            // A worker that cannot bind hands the job back to the lane thread (it stays
            // unbound and tries again before its next job).
            Err(_) => Ok(Some(Reply::HandedBack(effect))),
        };
        let end = tracks.leave(executor.device_mut());
        let Some(reply) = replied? else {
            return Ok(());
        };
        self.free_at[worker] = end;
        self.push_answer(Answer {
            end_ns: end,
            seq: 0,
            run,
            reply,
        });
        Ok(())
    }
}

impl Answer {
    /// What the lane thread's wake-up for this answer says.
    const fn why(&self) -> &'static str {
        match self.reply {
            Reply::Answered { .. } | Reply::HandedBack(_) => "a worker's answer",
            Reply::Waited { .. } => "a completion waiter's answer",
        }
    }
}

/// Whether the lane still waits for `wait`'s answer (lane-service's `Shared::still_asked`):
/// a completion's run is still awaiting; a drain always is.
fn still_asked<O: Observer>(steps: &LaneSteps<O>, wait: &DeviceWait) -> bool {
    match *wait {
        DeviceWait::Completion { run, .. } => {
            steps.lane().phase_of(run) == Some(RunPhase::Awaiting)
        }
        DeviceWait::Drain { .. } => true,
    }
}

/// Feeds a device wait's answer to the lane (lane-service's `Shared::apply_wait`).
fn apply_wait<O: Observer>(
    steps: &mut LaneSteps<O>,
    now: Timestamp,
    answer: Wait,
    message: Option<String>,
) -> Result<(), DriverError> {
    match answer {
        Wait::Answered(event) => steps.feed(now, event, message),
        Wait::Expired(at) => steps.expire(now.max(at)),
        Wait::Pending => Ok(()),
    }
}
