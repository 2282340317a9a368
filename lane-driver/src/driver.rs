//! The driver loop: drains lane effects, executes them through a [`Device`] and a
//! [`Runner`], feeds each answer back, and blocks on the awaited run's completion events when
//! nothing else is left.

use lane_core::status_latch::{DecodeError, RECORD_BYTES};
use lane_core::{
    CloseReport, CodeRef, DeviceResetError, EventError, InvariantViolation, Lane, LaneState,
    Outcome, Profile, PublicationId, PublishError, RunId, RunRequest, SubmitError, Timestamp,
};
use thiserror::Error;

use crate::device::Device;
use crate::dispatch::{
    Dispatch, DispatchInput, DispatchRefusal, DispatchState, Here, Next, Setting,
};
use crate::executor::{Executor, Wait};
use crate::observer::{NoObserver, Observer};
use crate::runner::Runner;
use crate::steps::LaneSteps;
use crate::waiter::{OnDevice, run_device_wait};

/// Bytes reserved for each slot's status header (the largest layout is 896).
pub(crate) const HEADER_BYTES: usize = 1024;
/// Bytes of each slot's timing buffer: device start and end, little-endian u64 nanoseconds.
pub const TIMING_BYTES: usize = 16;
/// Bytes of each slot's handshake region, cleared before every AICore launch.
pub const HANDSHAKE_BYTES: usize = 64;

/// Where each slot buffer sits in the slot's one device allocation. A small synchronous copy
/// costs a driver round trip whatever its size (measured-figures.md A1: ~9.5 us), so each
/// per-run transfer is one copy: one H2D clears handshake, timing buffer and header before a
/// launch (no latch outlives its run), and one D2H right after the boundary reads timing
/// buffer, header and record (L-8, [`Readback`](crate::Readback)). With copies on the
/// streams the status goes to pinned memory instead, and the waiter reads the record alone.
///
/// ```text
/// [0, 64)        handshake
/// [64, 80)       timing buffer
/// [80, 1104)     status header (the layout's size of it is used)
/// [1104, 1384)   result record (280 bytes; its `published` word zeroed once, at allocation)
///
/// arm, before the launch (H2D):         [0, 1104)     handshake + timing buffer + header
/// after completion, on the waiter (D2H): [64, 1384)   timing buffer + header + record
/// (copies on the streams: the record alone, [1104, 1384); the status from pinned memory)
/// ```
pub const HANDSHAKE_OFFSET: usize = 0;
/// Offset of the timing buffer in a slot's allocation (see [`HANDSHAKE_OFFSET`]).
pub const TIMING_OFFSET: usize = HANDSHAKE_OFFSET + HANDSHAKE_BYTES;
/// Offset of the status header in a slot's allocation (see [`HANDSHAKE_OFFSET`]).
pub const HEADER_OFFSET: usize = TIMING_OFFSET + TIMING_BYTES;
/// Offset of the result record in a slot's allocation (see [`HANDSHAKE_OFFSET`]).
pub const RECORD_OFFSET: usize = HEADER_OFFSET + HEADER_BYTES;
/// Bytes of a slot's one device allocation.
pub const SLOT_BYTES: usize = RECORD_OFFSET + RECORD_BYTES;
/// The bytes the arm copy clears: the handshake, the timing buffer and the status header.
pub(crate) const ARM_BYTES: usize = HANDSHAKE_BYTES + TIMING_BYTES + HEADER_BYTES;
/// Bytes the probe allocates and frees.
pub(crate) const PROBE_BYTES: usize = 64;

/// Why the driver stopped. Each is a bug in the lane, the driver, the device or the runner, never a
/// device failure (those become verdicts).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DriverError {
    /// A lane invariant broke after a step (boxed: it names a run's phase and input, which
    /// would make every driver result large for a bug's sake).
    #[error("{0}")]
    Invariant(Box<InvariantViolation>),
    /// The lane rejected an event the driver produced for one of its own effects.
    #[error("the lane rejected the driver's own event: {0}")]
    Rejected(EventError),
    /// The lane has unfinished items but nothing to do and nothing to wait for.
    #[error("stuck: {pending} items pending in state {state:?} with no effect and nothing awaited")]
    Stuck {
        /// Items without an outcome.
        pending: usize,
        /// The lane's state.
        state: LaneState,
    },
    /// The lane asked to await a run whose slot events were never recorded (a wait would
    /// return success at once).
    #[error("asked to await {run}, whose slot events were never recorded")]
    UnrecordedEvent {
        /// The run.
        run: RunId,
    },
    /// The dispatch machine met a situation its table rules out (a bug in the driver).
    #[error("the dispatch machine refused {input:?} in {state:?}: {refusal:?}")]
    Dispatch {
        /// The machine's state.
        state: DispatchState,
        /// What it found.
        input: DispatchInput,
        /// Why the table refuses it.
        refusal: DispatchRefusal,
    },
    /// A status header the driver read could not be decoded.
    #[error("status header of {run} could not be decoded")]
    Decode {
        /// The run.
        run: RunId,
        /// Why.
        #[source]
        source: DecodeError,
    },
}

impl From<InvariantViolation> for DriverError {
    fn from(violation: InvariantViolation) -> Self {
        Self::Invariant(Box::new(violation))
    }
}

/// An outcome as the driver delivers it, with the device's text about the failed call behind
/// it, if any; its `Display` is the outcome's stable line with that text appended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The outcome.
    pub outcome: Outcome,
    /// The device's text about the failed call behind the outcome's cause (the origin's, for
    /// an item taken down by a poison). Only a failure allocates it.
    pub device_message: Option<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.outcome.with_detail(self.device_message.as_deref()))
    }
}

/// What one [`Driver::turn`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Effects ran or a wait ended; call `turn` again.
    Progress,
    /// Every accepted item has its outcome and nothing is in flight.
    Idle,
}

/// The one driver loop, generic over the device, the runner and the observer: the lane's
/// [`LaneSteps`] and the [`Executor`], run on the caller's thread.
#[derive(Debug)]
pub struct Driver<D: Device, R: Runner<D>, O: Observer = NoObserver> {
    steps: LaneSteps<O>,
    executor: Executor<D, R>,
    /// The dispatch machine in its zero-worker setting: every wait is made here.
    dispatch: Dispatch,
}

impl<D: Device, R: Runner<D>> Driver<D, R> {
    /// A driver for a new lane with `profile` on `device`, running runs through `runner`,
    /// observed by nobody (see [`Driver::with_observer`]). Invariants are checked after every
    /// step (turn it off with [`Driver::check_invariants`] for benchmarks).
    pub fn new(profile: Profile, device: D, runner: R) -> Self {
        Self {
            executor: Executor::with_copies(device, runner, profile.copies()),
            steps: LaneSteps::new(profile),
            dispatch: Dispatch::new(Setting::DRIVER, None),
        }
    }
}

impl<D: Device, R: Runner<D>, O: Observer> Driver<D, R, O> {
    /// The same driver, reporting every step to `observer` (traces, checks).
    pub fn with_observer<P: Observer>(self, observer: P) -> Driver<D, R, P> {
        Driver {
            steps: self.steps.with_observer(observer),
            executor: self.executor,
            dispatch: self.dispatch,
        }
    }

    /// Whether to run `Lane::check_invariants` after every step.
    #[must_use]
    pub fn check_invariants(mut self, on: bool) -> Self {
        self.steps = self.steps.check_invariants(on);
        self
    }

    /// The lane (read-only).
    pub const fn lane(&self) -> &Lane {
        self.steps.lane()
    }

    /// The device.
    pub const fn device(&self) -> &D {
        self.executor.device()
    }

    /// The device, mutably (e.g. to install a fault in a simulator).
    pub fn device_mut(&mut self) -> &mut D {
        self.executor.device_mut()
    }

    /// The runner.
    pub const fn runner(&self) -> &R {
        self.executor.runner()
    }

    /// The runner, mutably (e.g. to plan a fault for a later run).
    pub fn runner_mut(&mut self) -> &mut R {
        self.executor.runner_mut()
    }

    /// The observer.
    pub const fn observer(&self) -> &O {
        self.steps.observer()
    }

    /// The lane's steps and the executor, mutably, for a caller that runs its own loop over
    /// the two parts (the simulator's virtual host workers).
    pub fn parts_mut(&mut self) -> (&mut LaneSteps<O>, &mut Executor<D, R>) {
        (&mut self.steps, &mut self.executor)
    }

    /// The device, the runner and the observer, consuming the driver.
    pub fn into_parts(self) -> (D, R, O) {
        let (device, runner) = self.executor.into_parts();
        (device, runner, self.steps.into_observer())
    }

    /// Submits a run and executes whatever it starts.
    pub fn submit(
        &mut self,
        request: RunRequest,
    ) -> Result<Result<RunId, SubmitError>, DriverError> {
        self.take_notices()?;
        self.command(|steps, now| steps.submit(now, request))
    }

    /// Publishes code and executes whatever it starts.
    pub fn publish(
        &mut self,
        code: CodeRef,
    ) -> Result<Result<PublicationId, PublishError>, DriverError> {
        self.take_notices()?;
        self.command(|steps, now| steps.publish(now, code))
    }

    /// Tells the lane the runtime reset the device (L-24) and executes whatever that starts
    /// (the lane forgets its handles and reopens).
    pub fn device_reset(&mut self) -> Result<Result<(), DeviceResetError>, DriverError> {
        self.command(|steps, now| steps.device_reset(now))
    }

    /// Closes the lane and executes whatever that starts; call [`Driver::run_until_idle`]
    /// to let launched runs finish and the streams be destroyed.
    pub fn close(&mut self) -> Result<CloseReport, DriverError> {
        self.command(|steps, now| steps.close(now))
    }

    /// Makes one lane step at the device's clock, then executes whatever it starts.
    fn command<T>(
        &mut self,
        step: impl FnOnce(&mut LaneSteps<O>, Timestamp) -> Result<T, DriverError>,
    ) -> Result<T, DriverError> {
        let now = self.executor.now();
        let result = step(&mut self.steps, now)?;
        self.execute_effects()?;
        Ok(result)
    }

    /// The next outcome, in submission order (without the device's text; see
    /// [`Driver::poll_report`]).
    pub fn poll_outcome(&mut self) -> Option<Outcome> {
        self.steps.poll_outcome()
    }

    /// The next outcome with the device's text about the failed call behind it, in
    /// submission order.
    pub fn poll_report(&mut self) -> Option<Report> {
        self.steps.poll_report()
    }

    /// Executes every effect the lane has, then, if nothing is left, blocks on the awaited
    /// run (bounded by its deadline, in one wait per completion event). Each step is the
    /// dispatch machine's ([`Setting::DRIVER`]).
    pub fn turn(&mut self) -> Result<Turn, DriverError> {
        self.take_notices()?;
        if self.execute_effects()? {
            return Ok(Turn::Progress);
        }
        let now = self.executor.now();
        match self.dispatch.poll(now, Here::Own, &mut self.steps, &mut self.executor)? {
            Next::WaitHere { ticket, wait } => {
                let answer = run_device_wait(&mut OnDevice(self.executor.device_mut()), &wait);
                let now = match answer {
                    Wait::Expired(at) => at,
                    _ => self.executor.now(),
                };
                self.dispatch.answer_here(
                    now,
                    &mut self.steps,
                    &mut self.executor,
                    ticket,
                    answer,
                )?;
                self.execute_effects()?;
                Ok(Turn::Progress)
            }
            // Effects came in since (a notice); they run at the next turn.
            Next::Execute(effect) => {
                self.execute(effect)?;
                Ok(Turn::Progress)
            }
            // No other thread: nothing is handed out, and nothing is left for another.
            Next::Sleep(_)
            | Next::Exit
            | Next::Lose(_)
            | Next::Leave
            | Next::ToWorker(_)
            | Next::ToWaiter { .. } => self.steps.settled(),
        }
    }

    /// Turns until the lane is idle.
    pub fn run_until_idle(&mut self) -> Result<(), DriverError> {
        while self.turn()? == Turn::Progress {}
        Ok(())
    }

    /// Gives the lane every fault notice that concerns its device (L-19), read from the
    /// process's ring since the last step.
    fn take_notices(&mut self) -> Result<(), DriverError> {
        let now = self.executor.now();
        self.dispatch.take_notices(now, &mut self.steps, &mut self.executor)
    }

    /// Executes the effects the dispatch machine gives this thread until it has none left
    /// (a wait it leaves for the next turn); returns whether any ran.
    fn execute_effects(&mut self) -> Result<bool, DriverError> {
        let mut any = false;
        loop {
            let now = self.executor.now();
            let next = self.dispatch.poll(now, Here::Own, &mut self.steps, &mut self.executor)?;
            let Next::Execute(effect) = next else {
                break;
            };
            any = true;
            self.execute(effect)?;
        }
        if self.steps.lane().state().is_closed() {
            self.executor.release_slot_resources(self.steps.observer_mut());
        }
        Ok(any)
    }

    /// Executes one effect here and feeds its answer.
    fn execute(&mut self, effect: lane_core::Effect) -> Result<(), DriverError> {
        if let Some(answer) = self.executor.execute(effect, self.steps.observer_mut())? {
            let now = self.executor.now();
            self.steps.feed(now, answer)?;
        }
        Ok(())
    }
}
