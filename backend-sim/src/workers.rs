//! Virtual host workers and the completion waiter: the runner's prepare and finalise, and
//! every device wait, off the lane thread, in virtual time, with no threads.
//!
//! lane-service runs a runner's `PrepareRun` and `FinaliseRun` on host worker threads when the
//! runner's [`Concurrency`] allows, and every blocking device wait on its completion waiter
//! thread, so the lane thread only launches, records, reads status and makes stream and
//! recovery calls. Here [`WorkerLoop`] is the lane thread, driving the one dispatch machine
//! ([`lane_driver::dispatch::Dispatch`], [`Setting::WORKERS`]) as lane-service's lane thread
//! does: the machine decides what happens next (hand-outs, stale answers, bounds, a force
//! reset held while the waiter is inside a call). Only the virtual-time model lives here,
//! each worker and the waiter a track with its own clock:
//!
//! - a job runs at once on the earliest-free worker (lane-service's FIFO job queue makes the
//!   same assignment), on that worker's clock ([`HostTracks::enter`]), so its host costs and
//!   trace records are the worker's. A worker that was asleep first pays a `host_wakeup`; it
//!   binds (`set_device`) before its first call and after a force reset, and one that cannot
//!   bind hands the job back (lane-service's `HostWorker::bind`);
//! - a device wait runs on the waiter's track ([`WAITER_TRACK`]), one at a time, with
//!   `lane_driver::run_device_wait` (lane-service's waiter's own function), waking and binding
//!   as a worker does. A waiter still inside a call finds the wait in lane-service's one slot
//!   when that call returns; until then the machine may replace or withdraw it;
//! - the answers are held until the lane thread's clock reaches them, then given to the
//!   machine: the workers' in `(end, hand-out)` order, and the waiter's latest (its one
//!   answer slot);
//! - when the machine says sleep, the lane thread's clock moves to the next answer's end or
//!   the machine's next timer, whichever comes first, and pays a `host_wakeup`. It never
//!   waits on the device.
//!
//! Commands come from the workload between turns, at the lane thread's clock. A hand-off and
//! an answer cost no modelled host time (a push into a queue allocated once, under the lock
//! the lane step holds); the wake-up they cause is charged to the thread that wakes. Device
//! state the calls change changes in the order the calls were handed out, the lane's order.

use lane_core::status_latch::{AclCode, ReturnCode};
use lane_core::stream_pair::StreamHandle;
use lane_core::{
    CloseReport, CodeRef, Effect, FaultNotice, FinaliseFailure, PublicationId, PublishError, RunId,
    RunRequest, SlotId, SubmitError, Timestamp,
};
use lane_driver::dispatch::{
    Bookkeeping, Dispatch, DispatchInput, DispatchInput as Input, DispatchRefusal,
    DispatchRefusal as Refusal, Here, Next, Setting, WorkerAnswer,
};
use lane_driver::{
    CompletionWaiter, Concurrency, Device, DevicePtr, DeviceWait, Driver, DriverError, EventHandle,
    Executor, LaneSteps, NoObserver, Observer, PrepareError, Readback, RunArgs, Runner, Turn, Wait,
    run_device_wait,
};

use crate::device::{SimDevice, SimRunner};
use crate::trace::WAITER_TRACK;

/// A virtual-time backend's host worker tracks: where a runner call made on a worker runs
/// in virtual time (on a real clock the lane service's threads are the workers).
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
    /// The thread whose clock the device is on wakes from a sleep: its wake-up latency,
    /// billed to `run`, saying `why`.
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
        Self { workers, lane_ns: 0 }
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
/// up to `prepares_at_once` prepares at once ([`SimRunner`] keeps them on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffLaneRunner {
    prepares_at_once: u8,
}

impl OffLaneRunner {
    /// A runner allowing `prepares_at_once` prepares at once (at least 1).
    pub const fn new(prepares_at_once: u8) -> Self {
        Self { prepares_at_once: if prepares_at_once == 0 { 1 } else { prepares_at_once } }
    }
}

runner_via!(OffLaneRunner, SimDevice, |_r, d| (&mut SimRunner, d)
    fn concurrency(&self) -> Concurrency {
        Concurrency {
            off_lane_thread: true,
            prepares_at_once: self.prepares_at_once,
        }
    }
);

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

    forward_calls! {|s| s.device;
        fn now(&mut self) -> Timestamp;
        fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode>;
        fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode>;
        fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode>;
        fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode>;
        fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode>;
        fn recent_error_message(&mut self) -> Option<String>;
    }
}

/// A host thread's answer, given to the dispatch machine once the lane thread's clock
/// reaches `end_ns`.
#[derive(Clone, Debug)]
struct Answer {
    end_ns: u64,
    /// Hand-out order: answers ending together are given in it.
    seq: u64,
    /// The run the job was for (a wake-up it causes is billed to it).
    run: Option<RunId>,
    reply: Reply,
}

/// What a host thread gives back. A waiter's answer may carry a run's status bytes
/// (`Wait::Completed`), unboxed as in lane-driver: one per run.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
enum Reply {
    /// A host worker's answer to its job.
    Worker(WorkerAnswer),
    /// The completion waiter's answer to the device wait with this ticket.
    Waited(u64, Wait),
}

impl Answer {
    /// What the lane thread's wake-up for this answer says.
    const fn why(&self) -> &'static str {
        match self.reply {
            Reply::Worker(_) => "a worker's answer",
            Reply::Waited(..) => "a completion waiter's answer",
        }
    }
}

/// The virtual-time model of the lane's other threads: the worker and waiter tracks, and
/// the answers they hold for the lane thread.
#[derive(Clone, Debug)]
struct OffLane {
    /// When each worker is next free.
    free_at: Vec<u64>,
    /// Whether each worker has bound the device since the last force reset.
    bound: Vec<bool>,
    /// Answers not yet given to the machine, in `(end_ns, seq)` order.
    answers: Vec<Answer>,
    handed_out: u64,
    /// When the completion waiter is next free.
    waiter_free_at: u64,
    /// Whether the waiter has bound the device since the last force reset.
    waiter_bound: bool,
    /// A device wait (with its ticket) left for the waiter until its call returns, unless the
    /// machine replaces or withdraws it first (lane-service's one untaken wait).
    untaken: Option<(u64, DeviceWait)>,
}

/// The executor as the machine's bookkeeping, noting whether the lane thread did any.
struct Books<'a, D: Device, R: Runner<D>> {
    executor: &'a mut Executor<D, R>,
    /// A notice was taken or an awaited run noted.
    progress: bool,
}

impl<D: Device, R: Runner<D>> Bookkeeping for Books<'_, D, R> {
    fn next_notice(&mut self) -> Option<FaultNotice> {
        let notice = self.executor.next_notice();
        self.progress |= notice.is_some();
        notice
    }

    forward_calls! {|s| s.executor;
        fn hand_off(&mut self, effect: &Effect);
        fn device_wait(&mut self, effect: &Effect) -> Option<DeviceWait>;
        fn keep_readback(&mut self, readback: Readback);
        fn completion_wait(&mut self, deadline: Option<Timestamp>) -> Result<Option<DeviceWait>, DriverError>;
    }

    fn note_await(&mut self, effect: Effect) -> Result<(), DriverError> {
        self.progress = true;
        Bookkeeping::note_await(&mut *self.executor, effect)
    }
}

/// The lane thread's loop with virtual host workers and the completion waiter (see the
/// module doc): [`Driver`]'s public steps over its parts, decided by the dispatch machine.
#[derive(Clone, Debug)]
pub struct WorkerLoop {
    /// The dispatch machine, with host workers and a completion waiter; the lane thread
    /// looks at the notice ring on its own calls.
    dispatch: Dispatch,
    off_lane: OffLane,
}

impl WorkerLoop {
    /// A loop with `workers` workers, if the runner lets its work leave the lane thread and
    /// there is at least one worker; `None` otherwise (the plain [`Driver`] then runs it all).
    pub fn new(workers: u8, concurrency: Concurrency) -> Option<Self> {
        (workers > 0 && concurrency.off_lane_thread).then(|| Self {
            dispatch: Dispatch::new(Setting::WORKERS, None),
            off_lane: OffLane {
                free_at: vec![0; usize::from(workers)],
                bound: vec![false; usize::from(workers)],
                answers: Vec::new(),
                handed_out: 0,
                waiter_free_at: 0,
                waiter_bound: false,
                untaken: None,
            },
        })
    }

    /// Runner calls and device waits handed out whose answers the lane has not been fed yet.
    pub fn outstanding(&self) -> usize {
        self.off_lane.answers.len() + usize::from(self.off_lane.untaken.is_some())
    }

    /// As [`Driver::submit`].
    pub fn submit<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
        request: RunRequest,
    ) -> Result<Result<RunId, SubmitError>, DriverError> {
        self.command(driver, tracks, true, |steps, now| steps.submit(now, request))
    }

    /// As [`Driver::publish`].
    pub fn publish<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
        code: CodeRef,
    ) -> Result<Result<PublicationId, PublishError>, DriverError> {
        self.command(driver, tracks, true, |steps, now| steps.publish(now, code))
    }

    /// As [`Driver::close`].
    pub fn close<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
    ) -> Result<CloseReport, DriverError> {
        self.command(driver, tracks, false, LaneSteps::close)
    }

    /// A client command at the lane thread's clock (after the notices, if `notices`), then
    /// every effect it leads to.
    fn command<D: Device, R: Runner<D>, O: Observer, T>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
        notices: bool,
        step: impl FnOnce(&mut LaneSteps<O>, Timestamp) -> Result<T, DriverError>,
    ) -> Result<T, DriverError> {
        let (steps, executor) = driver.parts_mut();
        let now = executor.now();
        if notices {
            self.dispatch.take_notices(now, steps, executor)?;
        }
        let result = step(steps, now)?;
        self.execute_effects(driver, tracks)?;
        Ok(result)
    }

    /// As [`Driver::turn`], as lane-service's lane thread runs the dispatch machine: every
    /// effect the lane thread has, else a sleep until the next answer or the machine's next
    /// timer, whichever comes first.
    pub fn turn<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
    ) -> Result<Turn, DriverError> {
        if self.execute_effects(driver, tracks)? {
            return Ok(Turn::Progress);
        }
        let (steps, executor) = driver.parts_mut();
        let now = executor.now().0;
        let wake = loop {
            // A start pushed below may move the wait's bound: the timer is read each time.
            let timer = self.dispatch.poll_timeout().map(|at| at.0);
            // An answer given already and not taken is the machine's to leave (the waiter's
            // older one while a reset is held): the lane thread sleeps until the next one.
            let next = self
                .off_lane
                .answers
                .iter()
                .find(|a| a.end_ns > now)
                .map(|a| (a.end_ns, a.run, a.why()));
            let wake = match (next, timer) {
                (Some((at, _, _)), Some(timer)) if timer < at => {
                    Some((timer, None, "a wait's bound"))
                }
                (Some(next), _) => Some(next),
                (None, Some(timer)) => Some((timer, None, "a wait's bound")),
                (None, None) => None,
            };
            // The waiter returns from its call, and takes the wait left for it, before then.
            let by = wake.map_or(u64::MAX, |wake| wake.0);
            if !self.take_untaken(by, executor, tracks)? {
                break wake;
            }
        };
        let Some((at, run, why)) = wake else {
            return steps.settled();
        };
        let device = executor.device_mut();
        tracks.idle_until(device, at);
        tracks.wake_up(device, run, why);
        self.execute_effects(driver, tracks)?;
        Ok(Turn::Progress)
    }

    /// The waiter takes the wait left for it if its call returns by `by_ns`, and the machine
    /// is told when it started; returns whether it did.
    fn take_untaken<D: Device, R: Runner<D>>(
        &mut self,
        by_ns: u64,
        executor: &mut Executor<D, R>,
        tracks: &mut dyn HostTracks<D>,
    ) -> Result<bool, DriverError> {
        let Some((ticket, start)) = self.off_lane.take_untaken(by_ns, executor, tracks) else {
            return Ok(false);
        };
        self.dispatch.handle_wait_started(ticket, Timestamp(start))?;
        Ok(true)
    }

    /// Gives the machine every answer the lane thread's clock has reached: the workers' in
    /// `(end, hand-out)` order, the waiter's as it left its call. Returns whether any.
    fn push_due(&mut self, now_ns: u64) -> bool {
        let due = self.off_lane.answers.partition_point(|a| a.end_ns <= now_ns);
        if due == 0 {
            return false;
        }
        for answer in self.off_lane.answers.drain(..due) {
            match answer.reply {
                Reply::Worker(answer) => self.dispatch.handle_answer(answer),
                Reply::Waited(ticket, waited) => self.dispatch.handle_waited(ticket, waited),
            }
        }
        true
    }

    /// Polls the dispatch machine until it says sleep: what it gives this thread runs on the
    /// lane thread's track, hand-outs on the worker and waiter tracks. Whether any happened.
    fn execute_effects<D: Device, R: Runner<D>, O: Observer>(
        &mut self,
        driver: &mut Driver<D, R, O>,
        tracks: &mut dyn HostTracks<D>,
    ) -> Result<bool, DriverError> {
        let (steps, executor) = driver.parts_mut();
        let mut any = false;
        // An answer made during these polls is due already (a call that took no time).
        let mut due = false;
        loop {
            let now = executor.now();
            // The waiter's call returned while the lane thread was busy: it took the wait
            // left for it then.
            self.take_untaken(now.0, executor, tracks)?;
            any |= self.push_due(now.0);
            let before = self.dispatch.state().kind();
            let mut books = Books { executor: &mut *executor, progress: false };
            let next = self.dispatch.poll(now, Here::Own, steps, &mut books)?;
            // A state change is progress: a wait answered at its bound, a reset held.
            any |= books.progress || self.dispatch.state().kind() != before;
            // The machine withdraws a wait by no longer offering it.
            let offered = self.dispatch.offered().map(|(ticket, _)| ticket);
            if self.off_lane.untaken.is_some_and(|(ticket, _)| Some(ticket) != offered) {
                self.off_lane.untaken = None;
            }
            match next {
                Next::ToWorker(job) => {
                    any = true;
                    due |= self.off_lane.run_job(job, now.0, executor, tracks)?;
                }
                Next::ToWaiter { ticket, wait } => {
                    any = true;
                    // The waiter takes the wait at once if it is in no call; else it is left
                    // for the waiter, replacing one left before.
                    self.off_lane.untaken = None;
                    if self.off_lane.waiter_free_at <= now.0 {
                        let end =
                            self.off_lane.make_wait(ticket, wait, now.0, true, executor, tracks);
                        due |= end <= now.0;
                        self.dispatch.handle_wait_started(ticket, now)?;
                    } else {
                        self.off_lane.untaken = Some((ticket, wait));
                    }
                }
                Next::Execute(effect) => {
                    any = true;
                    if matches!(effect, Effect::ForceReset { .. }) {
                        // A reset unbinds every thread: each worker and the waiter bind again
                        // before their next call.
                        self.off_lane.bound.fill(false);
                        self.off_lane.waiter_bound = false;
                    }
                    if let Some(answer) = executor.execute(effect, steps.observer_mut())? {
                        let now = executor.now();
                        steps.feed(now, answer)?;
                    }
                }
                // An answer that took no time is the machine's to take before the lane
                // thread sleeps.
                Next::Sleep(_) if due => due = false,
                Next::Sleep(_) => break,
                Next::WaitHere { .. } | Next::Exit | Next::Leave | Next::Lose(_) => {
                    let (input, refusal) = match next {
                        Next::WaitHere { .. } => (Input::Waiting, Refusal::NotInSetting),
                        Next::Exit => (Input::SettledShutdown, Refusal::NotInSetting),
                        Next::Leave => (Input::Elsewhere, Refusal::NotInSetting),
                        // L-20: lane-service's lane thread ends, the lane lost; the simulator
                        // has no such end, so the simulation stops here.
                        _ => (Input::WaiterPastBound, Refusal::NotExpected),
                    };
                    return Err(self.refused(input, refusal));
                }
            }
        }
        if steps.lane().state().is_closed() {
            executor.release_slot_resources(steps.observer_mut());
        }
        Ok(any)
    }

    /// What the lane thread cannot do here, as a driver error: a wait on the lane thread and
    /// the thread's end have no place with a waiter and no shutdown, and a lost lane (L-20)
    /// no end in the simulator.
    fn refused(&self, input: DispatchInput, refusal: DispatchRefusal) -> DriverError {
        DriverError::Dispatch { state: self.dispatch.state().kind(), input, refusal }
    }
}

impl OffLane {
    /// The waiter takes the wait left for it if its call returns by `by_ns`: its ticket and
    /// the call's start.
    fn take_untaken<D: Device, R: Runner<D>>(
        &mut self,
        by_ns: u64,
        executor: &mut Executor<D, R>,
        host: &mut dyn HostTracks<D>,
    ) -> Option<(u64, u64)> {
        if self.waiter_free_at > by_ns {
            return None;
        }
        let (ticket, wait) = self.untaken.take()?;
        let start = self.waiter_free_at;
        self.make_wait(ticket, wait, start, false, executor, host);
        Some((ticket, start))
    }

    /// Makes `wait` on the completion waiter's track from `start_ns` (after a wake-up if it
    /// was `asleep`), binding first if it is unbound, and keeps the answer until the lane
    /// thread's clock reaches its end; returns the end.
    fn make_wait<D: Device, R: Runner<D>>(
        &mut self,
        ticket: u64,
        wait: DeviceWait,
        start_ns: u64,
        asleep: bool,
        executor: &mut Executor<D, R>,
        host: &mut dyn HostTracks<D>,
    ) -> u64 {
        let run = match wait {
            DeviceWait::Completion { run, .. } => Some(run),
            DeviceWait::Drain { .. } => None,
        };
        let device = executor.device_mut();
        host.enter(device, WAITER_TRACK, start_ns);
        if asleep {
            host.wake_up(device, run, "a device wait");
        }
        let mut waiter = OnWaiterTrack { device, bound: &mut self.waiter_bound };
        let answer = run_device_wait(&mut waiter, &wait);
        let end = host.leave(executor.device_mut());
        self.waiter_free_at = end;
        self.push_answer(Answer { end_ns: end, seq: 0, run, reply: Reply::Waited(ticket, answer) });
        end
    }

    /// Queues `answer` in `(end_ns, seq)` order, numbering it.
    fn push_answer(&mut self, mut answer: Answer) {
        self.handed_out += 1;
        answer.seq = self.handed_out;
        let at = self.answers.partition_point(|a| (a.end_ns, a.seq) <= (answer.end_ns, answer.seq));
        self.answers.insert(at, answer);
    }

    /// Runs one runner effect on the earliest-free worker at `now_ns` or when it is next
    /// free (after a wake-up if it was asleep), and keeps the answer until the lane thread's
    /// clock reaches its end; returns whether that end is `now_ns` (the job took no time).
    fn run_job<D: Device, R: Runner<D>>(
        &mut self,
        effect: Effect,
        now_ns: u64,
        executor: &mut Executor<D, R>,
        host: &mut dyn HostTracks<D>,
    ) -> Result<bool, DriverError> {
        let worker = (0..self.free_at.len()).min_by_key(|&w| (self.free_at[w], w)).unwrap_or(0);
        let asleep = self.free_at[worker] <= now_ns;
        let start = now_ns.max(self.free_at[worker]);
        let track = u8::try_from(worker).unwrap_or(u8::MAX - 1);
        let run = effect.run();
        host.enter(executor.device_mut(), track, start);
        if asleep {
            host.wake_up(executor.device_mut(), run, "a job");
        }
        let bind = if self.bound[worker] { Ok(()) } else { executor.device_mut().set_device() };
        let replied = match bind {
            Ok(()) => {
                self.bound[worker] = true;
                // A prepare or finalise shows the observer nothing (it sees only a launch's
                // failed release of a half-made slot).
                executor
                    .execute(effect, &mut NoObserver)
                    .map(|answered| answered.map(WorkerAnswer::Answered))
            }
            // A worker that cannot bind hands the job back to the lane thread (it stays
            // unbound and tries again before its next job).
            Err(_) => Ok(Some(WorkerAnswer::HandedBack(effect))),
        };
        let end = host.leave(executor.device_mut());
        let Some(reply) = replied? else {
            return Ok(false);
        };
        self.free_at[worker] = end;
        self.push_answer(Answer { end_ns: end, seq: 0, run, reply: Reply::Worker(reply) });
        Ok(end <= now_ns)
    }
}

#[cfg(test)]
mod tests {
    use crate::trace::{Record, WAITER_TRACK};
    use crate::{SimConfig, Workload, run};

    /// L-20 as lane-service keeps it: in this swarm mix a drain is handed out while the
    /// waiter is inside a hung run's completion wait, and its bound passes before the waiter
    /// gets to it. The machine answers it itself and holds the force reset until the waiter
    /// has left its call; the drain left for the waiter is taken back, never made. (The seed
    /// is the first whose mix meets that order, found by scanning seeds; a change of the
    /// lane's device calls can move it: it was 106 until a run's prepare armed its slot,
    /// decision 0024, and 173 until the waiter's grace grew to one event-wait slice.)
    #[test]
    fn no_force_reset_is_made_while_the_waiter_is_inside_a_call() {
        let config = SimConfig {
            workers: 1,
            depth: Some(2),
            slots: Some(3),
            prepare_window: Some(2),
            seed: 32,
            swarm: true,
            liveness: true,
            trace: true,
            workload: Workload { runs: 25, device_ns: 40_000, ..Workload::default() },
            ..SimConfig::default()
        };
        let report = run(&config, &mut |_, _| {}).unwrap_or_else(|e| panic!("{e}"));
        let calls: Vec<_> = report
            .trace
            .records()
            .iter()
            .filter_map(|r| match r {
                Record::Call { track, start_ns, end_ns, name, .. } => {
                    Some((*track, *start_ns, *end_ns, *name))
                }
                _ => None,
            })
            .collect();
        let resets: Vec<u64> = calls
            .iter()
            .filter(|&&(track, _, _, name)| track.is_none() && name == "reset_device_force")
            .map(|&(_, start, _, _)| start)
            .collect();
        assert!(resets.len() > 1, "the mix resets the device: {resets:?}");
        for reset in resets {
            let inside = calls.iter().find(|&&(track, start, end, _)| {
                track == Some(WAITER_TRACK) && start < reset && reset < end
            });
            assert_eq!(inside, None, "a force reset at {reset} ns under a wait");
        }
        // The withdrawn drain is never made: each drain is made by the waiter or answered at
        // its bound (the one wait in this mix whose bound passes), not both.
        let records = report.trace.records();
        let handed = records
            .iter()
            .filter(|r| {
                matches!(r, Record::Lane { text, .. } if text.starts_with("effect DrainDevice"))
            })
            .count();
        let made = calls
            .iter()
            .filter(|&&(track, _, _, name)| {
                track == Some(WAITER_TRACK) && name == "synchronize_device"
            })
            .count();
        let at_bound = records
            .iter()
            .filter(|r| {
                matches!(r, Record::Call { track: None, name: "wake_up", detail, .. }
                    if detail == "a wait's bound")
            })
            .count();
        assert_eq!(at_bound, 1, "one drain is answered at its bound");
        assert_eq!(made + at_bound, handed, "every other drain is the waiter's");
    }
}
