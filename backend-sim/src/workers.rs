//! Virtual host workers: the runner's prepare and finalise off the lane thread, in virtual
//! time, with no threads.
//!
//! lane-service runs a runner's `PrepareRun` and `FinaliseRun` on host worker threads when the
//! runner's [`Concurrency`] allows, so the lane thread only launches, records, waits and reads
//! status. The simulator models that deterministically: each worker is a track with its own
//! clock, and [`WorkerLoop`] is the lane thread's loop (lane-service's `LaneThread::run` and
//! `decide`) over the lane's steps and the executor ([`Driver::parts_mut`]):
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
//! - the answers (`Prepared`, `Finalised`, and the failures, exactly as the executor made
//!   them on the lane thread) are fed back in end-time order, at the lane thread's next lane
//!   step once its clock has reached them (lane-service's `decide` feeds every answer given
//!   before it executes anything);
//! - with nothing to execute, a run awaited, answers out and the next launch waiting on a
//!   prepare that is out (`Lane::next_launch_waits_on_prepare`: an answer could start a
//!   launch), the lane thread sleeps until the next answer, at most one wait slice
//!   ([`WAIT_SLICE_NS`], lane-service's `DEFAULT_WAIT_SLICE`) and never past the run's
//!   deadline. Woken by an answer it pays a `host_wakeup`, feeds the answers and executes
//!   what they enable (a launch) before it looks at the awaited run again; not woken within
//!   the slice it pays a `host_wakeup` (the timed wait ends) and makes one sliced completion
//!   wait;
//! - otherwise (no answer out, or none that could start a launch: a finalise, a prepare
//!   behind a full pair) it makes the sliced completion wait at once; that wait is a device
//!   call (`synchronize_event`) and an answer landing during it is seen only when it returns;
//! - with nothing awaited and answers out it sleeps until the next answer (a `host_wakeup`).
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
    RunId, RunRequest, SlotId, SubmitError, Timestamp,
};
use lane_driver::{
    Concurrency, Device, Driver, DriverError, Observer, PrepareError, RunArgs, Runner, Turn, Wait,
    is_host_work,
};

use crate::device::{SimDevice, SimRunner};

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

/// lane-service's default wait slice (`lane_service::DEFAULT_WAIT_SLICE`, 5 ms) in
/// nanoseconds: the longest the lane thread sleeps for an answer, and the longest single
/// completion wait, before it looks again.
pub const WAIT_SLICE_NS: u64 = 5_000_000;

/// A worker's answer, fed to the lane once the lane thread's clock reaches `end_ns`.
#[derive(Clone, Debug)]
struct Answer {
    end_ns: u64,
    /// Hand-out order: answers ending together are fed in it.
    seq: u64,
    /// The run the job was for (a wake-up it causes is billed to it).
    run: Option<RunId>,
    reply: Reply,
}

/// What a worker gives back for a job.
#[derive(Clone, Debug)]
enum Reply {
    /// The job ran: the event that answers it.
    Answered {
        event: Event,
        /// The device's text about the failed call, read on the worker right after it.
        message: Option<String>,
    },
    /// The worker could not bind the device: the lane thread runs the job itself.
    HandedBack(Effect),
}

/// The lane thread's loop with virtual host workers (see the module doc): the same public
/// steps as [`Driver`] (`submit`, `publish`, `close`, `turn`), over the driver's parts.
#[derive(Clone, Debug)]
pub struct WorkerLoop {
    /// When each worker is next free.
    free_at: Vec<u64>,
    /// Whether each worker has bound the device since the last force reset.
    bound: Vec<bool>,
    /// Answers not yet fed, in `(end_ns, seq)` order.
    answers: Vec<Answer>,
    handed_out: u64,
    /// The wait slice, in ns.
    slice_ns: u64,
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
            slice_ns: WAIT_SLICE_NS,
        })
    }

    /// Runner calls handed out whose answers the lane has not been fed yet.
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
    /// has (runner work to the workers); else, with a run awaited, a sleep for an answer
    /// (while answers are out and the next launch waits on a prepare that is out) or one
    /// sliced completion wait; else a sleep until the next answer.
    pub fn turn<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
    ) -> Result<Turn, DriverError> {
        if self.execute_effects(driver, tracks)? {
            return Ok(Turn::Progress);
        }
        let (steps, executor) = driver.parts_mut();
        if executor.is_awaiting() {
            let deadline = steps.deadline();
            // lane-service's `decide`: answers first only when one could start a launch.
            if steps.lane().next_launch_waits_on_prepare()
                && self.await_answer(executor, tracks, deadline)
            {
                self.execute_effects(driver, tracks)?;
                return Ok(Turn::Progress);
            }
            let (steps, executor) = driver.parts_mut();
            let slice_ms = i32::try_from(self.slice_ns / 1_000_000)
                .unwrap_or(i32::MAX)
                .max(1);
            // lane-service slices its waits to look for commands and answers between them.
            // Here nothing arrives during a wait but the workers' answers, so with none out
            // the slices would string together into this one wait: make it whole (a hung run
            // is then one turn, not one per slice until the op timeout).
            let slice = (!self.answers.is_empty()).then_some(slice_ms);
            match executor.wait(deadline, slice)? {
                Wait::Answered(event) => {
                    let message = executor.device_message(&event);
                    let now = executor.now();
                    steps.feed(now, event, message)?;
                }
                Wait::Expired(now) => steps.expire(now)?,
                // A slice ended with the run still running: look again.
                Wait::Pending => {}
            }
            self.execute_effects(driver, tracks)?;
            return Ok(Turn::Progress);
        }
        if let Some((next, run)) = self.answers.first().map(|a| (a.end_ns, a.run)) {
            let device = executor.device_mut();
            tracks.idle_until(device, next);
            tracks.wake_up(device, run, "a worker's answer");
            self.execute_effects(driver, tracks)?;
            return Ok(Turn::Progress);
        }
        steps.settled()
    }

    /// lane-service's `await_answer`: with answers out, a run awaited and the next launch
    /// waiting on a prepare that is out, the lane thread sleeps until the next answer, at
    /// most one slice and never past the run's deadline; either way it wakes (a
    /// `host_wakeup`). Returns whether an answer woke it (the caller
    /// then feeds it and executes what it enables); else the caller waits on the run.
    fn await_answer<D: Device, R: Runner<D>>(
        &self,
        executor: &mut lane_driver::Executor<D, R>,
        tracks: &mut dyn HostTracks<D>,
        deadline: Option<Timestamp>,
    ) -> bool {
        let Some(next) = self.answers.first() else {
            return false;
        };
        let now = executor.now();
        let left = deadline.map_or(0, |deadline| deadline.since(now));
        let bound = self.slice_ns.min(left);
        if bound == 0 {
            return false;
        }
        let device = executor.device_mut();
        let until = now.0.saturating_add(bound);
        if next.end_ns <= until {
            tracks.idle_until(device, next.end_ns);
            tracks.wake_up(device, next.run, "a worker's answer");
            true
        } else {
            tracks.idle_until(device, until);
            tracks.wake_up(device, None, "the wait slice ended");
            false
        }
    }

    /// Feeds the answers the lane thread's clock has reached and executes the lane's effects
    /// until none is left; returns whether anything happened.
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
            while handed_back.is_none() && self.answers.first().is_some_and(|a| a.end_ns <= now.0) {
                let answer = self.answers.remove(0);
                any = true;
                match answer.reply {
                    Reply::Answered { event, message } => steps.feed(now, event, message)?,
                    // lane-service's `decide` executes it before it takes the later answers.
                    Reply::HandedBack(effect) => handed_back = Some(effect),
                }
            }
            let effect = if let Some(effect) = handed_back {
                // On the lane thread's track; a finalise releases the slot's events again,
                // harmless: the slot is leased to no other run before this answer.
                effect
            } else {
                let Some(effect) = steps.next_effect(now) else {
                    break;
                };
                any = true;
                if is_host_work(&effect) {
                    // The executor runs it on the worker's track (its finalise releases the
                    // slot's events, as lane-service's `Executor::hand_off` does).
                    self.hand_out(effect, now, executor, steps.observer_mut(), tracks)?;
                    continue;
                }
                if matches!(effect, Effect::ForceReset { .. }) {
                    // A reset unbinds every thread: each worker binds again before its next
                    // call.
                    self.bound.fill(false);
                }
                effect
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
        let track = u8::try_from(worker).unwrap_or(u8::MAX);
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
        self.handed_out += 1;
        let answer = Answer {
            end_ns: end,
            seq: self.handed_out,
            run,
            reply,
        };
        let at = self
            .answers
            .partition_point(|a| (a.end_ns, a.seq) <= (answer.end_ns, answer.seq));
        self.answers.insert(at, answer);
        Ok(())
    }
}
