//! The driver loop: drains lane effects, executes them through a [`Device`] and a
//! [`Runner`], feeds each answer back, and blocks on the awaited run's completion events when
//! nothing else is left.

use lane_core::status_latch::{self, AclCode, DecodeError, HeaderLayout, Stage};
use lane_core::stream_pair::{DestroyMode, Role, StreamHandle};
use lane_core::{
    Cause, CloseReport, CodeRef, DeviceTiming, Effect, Event, EventError, InvariantViolation, Lane,
    LaneState, LaunchStep, Lease, MAX_SLOTS, Outcome, Profile, PublicationId, PublicationResult,
    PublishError, RunId, RunRequest, SubmitError, Timestamp,
};
use std::collections::VecDeque;
use thiserror::Error;

use crate::device::{Device, DevicePtr, EventHandle};
use crate::observer::{Command, NoObserver, Observation, Observer, Release};
use crate::runner::{PrepareError, RunArgs, Runner};

/// Bytes reserved for each slot's status header (the largest layout is 896).
const HEADER_BYTES: usize = 1024;
/// Bytes of each slot's timing buffer: device start and end, little-endian u64 nanoseconds.
pub const TIMING_BYTES: usize = 16;
/// Bytes of each slot's handshake region, cleared before every AICore launch.
pub const HANDSHAKE_BYTES: usize = 64;

/// Where each slot buffer sits in the slot's one device allocation. A small synchronous copy
/// costs a driver round trip whatever its size (measured-figures.md A1: ~9.5 us, flat from 4
/// to 64 bytes), so the layout makes each per-run transfer one copy: the handshake and the
/// timing buffer are adjacent (one H2D clears both before a launch), and so are the timing
/// buffer and the status header (one D2H reads both after completion).
///
/// ```text
/// [0, 64)       handshake
/// [64, 80)      timing buffer
/// [80, 1104)    status header (the layout's size of it is used)
///
/// arm, before the launch (H2D):      [0, 80)          handshake + timing buffer
/// read, after completion (D2H):      [64, 80 + size)  timing buffer + status header
/// ```
pub const HANDSHAKE_OFFSET: usize = 0;
/// Offset of the timing buffer in a slot's allocation (see [`HANDSHAKE_OFFSET`]).
pub const TIMING_OFFSET: usize = HANDSHAKE_OFFSET + HANDSHAKE_BYTES;
/// Offset of the status header in a slot's allocation (see [`HANDSHAKE_OFFSET`]).
pub const HEADER_OFFSET: usize = TIMING_OFFSET + TIMING_BYTES;
/// Bytes of a slot's one device allocation.
pub const SLOT_BYTES: usize = HEADER_OFFSET + HEADER_BYTES;
/// The bytes the arm copy clears: the handshake and the timing buffer.
const ARM_BYTES: usize = HANDSHAKE_BYTES + TIMING_BYTES;
/// Bytes the probe allocates and frees.
const PROBE_BYTES: usize = 64;

/// Why the driver stopped. Each is a bug in the lane, the driver, the device or the runner, never a
/// device failure (those become verdicts).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DriverError {
    /// A lane invariant broke after a step.
    #[error("{0}")]
    Invariant(#[from] InvariantViolation),
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
    /// A status header the driver read could not be decoded.
    #[error("status header of {run} could not be decoded")]
    Decode {
        /// The run.
        run: RunId,
        /// Why.
        #[source]
        source: DecodeError,
    },
    /// The lane asked to await a run but reports no deadline for it (`Lane::poll_deadline`
    /// is the one source of the bound on every wait).
    #[error("asked to await {run}, but the lane reports no deadline")]
    NoDeadline {
        /// The run.
        run: RunId,
    },
}

/// An outcome as the driver delivers it: the lane's [`Outcome`] and, when the device call
/// that failed it left one, the device's own text about it (`aclGetRecentErrMsg`, through
/// [`Device::recent_error_message`]). Its `Display` is the outcome's stable line with that
/// text appended.
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
        write!(
            f,
            "{}",
            self.outcome.with_detail(self.device_message.as_deref())
        )
    }
}

/// Device texts kept at most (one per failed item; a poison's origin is looked up by the
/// items it takes down, all delivered within a few steps).
const MAX_MESSAGES: usize = 2 * MAX_SLOTS as usize + lane_core::MAX_PENDING_PUBLICATIONS;

/// What one [`Driver::turn`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Effects ran or a wait ended; call `turn` again.
    Progress,
    /// Every accepted item has its outcome and nothing is in flight.
    Idle,
}

/// Per-slot device resources, created at the slot's first launch and reused by every run
/// that leases the slot (L-13): one completion event per stream, and one device allocation
/// holding the handshake region, the timing buffer and the status header (laid out as
/// [`HANDSHAKE_OFFSET`] shows).
#[derive(Clone, Copy, Debug)]
struct SlotResources {
    /// `[aicpu, aicore]`.
    events: [EventHandle; 2],
    /// Whether each event was recorded since the slot was last released (a never-recorded
    /// event waits as success, so the driver tracks records itself).
    recorded: [bool; 2],
    /// The slot's allocation ([`SLOT_BYTES`]).
    buffer: DevicePtr,
}

impl SlotResources {
    fn handshake(&self) -> DevicePtr {
        self.buffer.at(HANDSHAKE_OFFSET)
    }

    fn timing(&self) -> DevicePtr {
        self.buffer.at(TIMING_OFFSET)
    }

    fn header(&self) -> DevicePtr {
        self.buffer.at(HEADER_OFFSET)
    }
}

/// The run the lane asked to await (its deadline is read from `Lane::poll_deadline`).
#[derive(Clone, Copy, Debug)]
struct Awaited {
    run: RunId,
    lease: Lease,
}

/// The one driver loop, generic over the device, the runner and the observer. Both the
/// simulator and the NPU backend run the lane through it.
#[derive(Debug)]
pub struct Driver<D: Device, R: Runner<D>, O: Observer = NoObserver> {
    lane: Lane,
    device: D,
    runner: R,
    observer: O,
    slots: [Option<SlotResources>; MAX_SLOTS as usize],
    awaited: Option<Awaited>,
    outcomes: VecDeque<Report>,
    /// The device's text about each failed call, keyed by the item (run or publication
    /// sequence number) whose effect failed. Empty unless a call failed.
    messages: Vec<(u64, String)>,
    check_invariants: bool,
    /// Where the status read lands: the timing buffer, then the status header.
    readback: [u8; TIMING_BYTES + HEADER_BYTES],
}

impl<D: Device, R: Runner<D>> Driver<D, R> {
    /// A driver for a new lane with `profile` on `device`, running runs through `runner`,
    /// observed by nobody (see [`Driver::with_observer`]). Invariants are checked after every
    /// step (turn it off with [`Driver::check_invariants`] for benchmarks).
    pub fn new(profile: Profile, device: D, runner: R) -> Self {
        Self {
            lane: Lane::new(profile),
            device,
            runner,
            observer: NoObserver,
            slots: [None; MAX_SLOTS as usize],
            awaited: None,
            outcomes: VecDeque::new(),
            messages: Vec::new(),
            check_invariants: true,
            readback: [0; TIMING_BYTES + HEADER_BYTES],
        }
    }
}

impl<D: Device, R: Runner<D>, O: Observer> Driver<D, R, O> {
    /// The same driver, reporting every step to `observer` (traces, checks).
    pub fn with_observer<P: Observer>(self, observer: P) -> Driver<D, R, P> {
        Driver {
            lane: self.lane,
            device: self.device,
            runner: self.runner,
            observer,
            slots: self.slots,
            awaited: self.awaited,
            outcomes: self.outcomes,
            messages: self.messages,
            check_invariants: self.check_invariants,
            readback: self.readback,
        }
    }

    /// Whether to run `Lane::check_invariants` after every step.
    #[must_use]
    pub fn check_invariants(mut self, on: bool) -> Self {
        self.check_invariants = on;
        self
    }

    /// The lane (read-only).
    pub const fn lane(&self) -> &Lane {
        &self.lane
    }

    /// The device.
    pub const fn device(&self) -> &D {
        &self.device
    }

    /// The device, mutably (e.g. to install a fault in a simulator).
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    /// The runner.
    pub const fn runner(&self) -> &R {
        &self.runner
    }

    /// The observer.
    pub const fn observer(&self) -> &O {
        &self.observer
    }

    /// The device, the runner and the observer, consuming the driver.
    pub fn into_parts(self) -> (D, R, O) {
        (self.device, self.runner, self.observer)
    }

    /// Submits a run and executes whatever it starts.
    pub fn submit(
        &mut self,
        request: RunRequest,
    ) -> Result<Result<RunId, SubmitError>, DriverError> {
        self.command(
            Command::Submit,
            |lane, now| lane.submit(now, request),
            |result| result.as_ref().ok().map(|r| r.0),
        )
    }

    /// Publishes code and executes whatever it starts.
    pub fn publish(
        &mut self,
        code: CodeRef,
    ) -> Result<Result<PublicationId, PublishError>, DriverError> {
        self.command(
            Command::Publish,
            |lane, now| lane.publish(now, code),
            |result| result.as_ref().ok().map(|p| p.0),
        )
    }

    /// Closes the lane and executes whatever that starts; call [`Driver::run_until_idle`]
    /// to let launched runs finish and the streams be destroyed.
    pub fn close(&mut self) -> Result<CloseReport, DriverError> {
        self.command(Command::Close, |lane, now| lane.close(now), |_| None)
    }

    /// The one command path: gives the lane `command` at the device's time, reports it
    /// (with the id it `accepted`), checks the lane and executes whatever it started.
    fn command<T>(
        &mut self,
        command: Command,
        apply: impl FnOnce(&mut Lane, Timestamp) -> T,
        accepted: impl FnOnce(&T) -> Option<u64>,
    ) -> Result<T, DriverError> {
        let now = self.device.now();
        let result = apply(&mut self.lane, now);
        self.observer.observe(&Observation::Command {
            now,
            command,
            accepted: accepted(&result),
        });
        self.after_step()?;
        self.execute_effects()?;
        Ok(result)
    }

    /// The next outcome, in submission order (without the device's text; see
    /// [`Driver::poll_report`]).
    pub fn poll_outcome(&mut self) -> Option<Outcome> {
        self.poll_report().map(|report| report.outcome)
    }

    /// The next outcome with the device's text about the failed call behind it, in
    /// submission order.
    pub fn poll_report(&mut self) -> Option<Report> {
        self.outcomes.pop_front()
    }

    /// Executes every effect the lane has, then, if nothing is left, blocks on the awaited
    /// run (bounded by its deadline).
    pub fn turn(&mut self) -> Result<Turn, DriverError> {
        if self.execute_effects()? {
            return Ok(Turn::Progress);
        }
        if let Some(awaited) = self.awaited.take() {
            self.wait_for(awaited)?;
            self.execute_effects()?;
            return Ok(Turn::Progress);
        }
        if self.lane.is_idle() || matches!(self.lane.state(), LaneState::Lost | LaneState::Closed) {
            return Ok(Turn::Idle);
        }
        Err(DriverError::Stuck {
            pending: self.lane.pending_items(),
            state: self.lane.state(),
        })
    }

    /// Turns until the lane is idle.
    pub fn run_until_idle(&mut self) -> Result<(), DriverError> {
        while self.turn()? == Turn::Progress {}
        Ok(())
    }

    /// Executes queued effects until none is left; returns whether any ran.
    fn execute_effects(&mut self) -> Result<bool, DriverError> {
        let mut any = false;
        while let Some(effect) = self.lane.poll_effect() {
            any = true;
            let now = self.device.now();
            self.observer.observe(&Observation::Effect {
                now,
                effect: &effect,
            });
            if let Some(event) = self.execute(effect)? {
                self.feed(event)?;
            }
        }
        self.collect_outcomes();
        if self.lane.state() == LaneState::Closed {
            self.release_slot_resources();
        }
        Ok(any)
    }

    fn feed(&mut self, event: Event) -> Result<(), DriverError> {
        if let Some(item) = failed_item(&event) {
            self.keep_message(item);
        } else if matches!(
            event,
            Event::StreamCreateFailed { .. } | Event::StreamDestroyFailed { .. }
        ) {
            self.keep_message(STREAM_CALL);
        }
        let now = self.device.now();
        let result = self.lane.handle(now, event);
        self.observer.observe(&Observation::Event {
            now,
            event: &event,
            result: &result,
        });
        result.map_err(DriverError::Rejected)?;
        self.after_step()
    }

    fn after_step(&mut self) -> Result<(), DriverError> {
        self.collect_outcomes();
        if self.check_invariants {
            self.lane.check_invariants()?;
        }
        Ok(())
    }

    fn collect_outcomes(&mut self) {
        while let Some(outcome) = self.lane.poll_outcome() {
            let now = self.device.now();
            self.observer.observe(&Observation::Outcome {
                now,
                outcome: &outcome,
            });
            let device_message = outcome.cause_item().and_then(|item| {
                // A stream create or destroy fails the run waiting to launch, which the
                // driver cannot name when the call fails: its text is keyed by the stage.
                let key = match cause_of(&outcome).and_then(Cause::stage) {
                    Some(Stage::StreamCreate | Stage::StreamDestroy) => STREAM_CALL,
                    _ => item,
                };
                self.messages
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, text)| text.clone())
            });
            self.outcomes.push_back(Report {
                outcome,
                device_message,
            });
        }
        // Every item has its outcome: no later outcome can name a kept text.
        if !self.messages.is_empty() && self.lane.pending_items() == 0 {
            self.messages.clear();
        }
    }

    /// Keeps the device's text about the call that just failed `item`'s effect.
    fn keep_message(&mut self, item: u64) {
        let Some(text) = self.device.recent_error_message() else {
            return;
        };
        if self.messages.len() >= MAX_MESSAGES {
            self.messages.remove(0);
        }
        self.messages.push((item, text));
    }

    /// Runs one effect; returns the event that answers it (`None` for an await, which is
    /// answered later by [`Driver::wait_for`]).
    fn execute(&mut self, effect: Effect) -> Result<Option<Event>, DriverError> {
        let (d, r) = (&mut self.device, &mut self.runner);
        let event = match effect {
            Effect::PrepareRun {
                run,
                lease,
                diagnostics,
            } => match r.prepare_run(d, run, lease.slot, diagnostics) {
                Ok(()) => Event::Prepared { run, lease },
                Err(PrepareError::Incompatible) => Event::PrepareIncompatible { run, lease },
                Err(PrepareError::Failed(code)) => Event::PrepareFailed { run, lease, code },
            },
            Effect::CreateStream { role } => match d.create_stream() {
                Ok(handle) => Event::StreamCreated { role, handle },
                Err(code) => Event::StreamCreateFailed { role, code },
            },
            Effect::DestroyStream { role, handle, mode } => {
                // The pair decides: a stream that may hold stuck or errored work is never
                // given to `aclrtDestroyStream`, which would wait for it.
                let result = match mode {
                    DestroyMode::Healthy => d.destroy_stream(handle),
                    DestroyMode::Force => d.destroy_stream_force(handle),
                };
                match result {
                    Ok(()) => Event::StreamDestroyed { role, handle },
                    Err(code) => Event::StreamDestroyFailed { role, handle, code },
                }
            }
            Effect::LaunchRun {
                run,
                lease,
                aicpu,
                aicore,
            } => match self.launch(run, lease, aicpu, aicore) {
                Ok(()) => Event::Launched { run, lease },
                Err((step, code)) => Event::LaunchFailed {
                    run,
                    lease,
                    step,
                    code,
                },
            },
            Effect::AwaitCompletion { run, lease, .. } => {
                // The deadline is read when the wait starts, from the lane.
                self.awaited = Some(Awaited { run, lease });
                return Ok(None);
            }
            Effect::ReadStatus { run, lease, layout } => self.read_status(run, lease, layout)?,
            Effect::FinaliseRun {
                run,
                lease,
                copy_back,
            } => {
                let result = r.finalise_run(d, run, lease.slot, copy_back);
                // Finalisation releases the slot's completion events for the next run (L-7).
                if let Some(slot) = self
                    .slots
                    .get_mut(usize::from(lease.slot.0))
                    .and_then(Option::as_mut)
                {
                    slot.recorded = [false; 2];
                }
                match result {
                    Ok(()) => Event::Finalised { run, lease },
                    Err(failure) => Event::FinaliseFailed {
                        run,
                        lease,
                        failure,
                    },
                }
            }
            Effect::UploadCode { publication, code } => match r.upload_code(d, code) {
                Ok(()) => Event::Uploaded { publication },
                Err(code) => Event::UploadFailed { publication, code },
            },
            Effect::DrainDevice {
                attempt,
                timeout_ns,
            } => {
                // Everything in flight was abandoned by the poison.
                self.awaited = None;
                let timeout_ms = i32::try_from(timeout_ns.div_ceil(1_000_000))
                    .unwrap_or(i32::MAX)
                    .max(1);
                // The drain's code proves nothing (SPEC §5.3): the reset follows whatever it
                // returns, and only the probe decides the device's health.
                let _ = d.synchronize_device(timeout_ms);
                Event::DeviceDrained { attempt }
            }
            Effect::ForceReset { attempt } => {
                let result = d.reset_device_force();
                // Every handle is dead after a reset (a5 segfaults on reuse): forget, never destroy.
                // Also after a failed reset: the next attempt resets again, and a device no
                // attempt recovers is never touched again.
                self.slots = [None; MAX_SLOTS as usize];
                self.awaited = None;
                match result {
                    Ok(()) => Event::ResetDone { attempt },
                    Err(code) => Event::ResetFailed { attempt, code },
                }
            }
            Effect::Probe { attempt } => match self.probe() {
                Ok(()) => Event::ProbePassed { attempt },
                Err(code) => Event::ProbeFailed { attempt, code },
            },
        };
        Ok(Some(event))
    }

    /// The launch order of L-5 and L-13: arm the slot (clear its handshake and timing buffer,
    /// one copy), AICore kernel, AICPU kernel, then one completion event per stream.
    fn launch(
        &mut self,
        run: RunId,
        lease: Lease,
        aicpu: StreamHandle,
        aicore: StreamHandle,
    ) -> Result<(), (LaunchStep, AclCode)> {
        let slot = self
            .slot_resources(lease.slot.0)
            .map_err(|code| (LaunchStep::Arm, code))?;
        let (d, r) = (&mut self.device, &mut self.runner);
        d.memcpy_to_device(slot.handshake(), &[0; ARM_BYTES])
            .map_err(|code| (LaunchStep::Arm, code))?;
        let args = RunArgs {
            run,
            slot: lease.slot,
            status_header: slot.header(),
            timing: slot.timing(),
            handshake: slot.handshake(),
        };
        r.launch_aicore(d, aicore, &args)
            .map_err(|code| (LaunchStep::Aicore, code))?;
        r.launch_aicpu(d, aicpu, &args)
            .map_err(|code| (LaunchStep::Aicpu, code))?;
        d.record_event(slot.events[0], aicpu)
            .map_err(|code| (LaunchStep::RecordEvent, code))?;
        d.record_event(slot.events[1], aicore)
            .map_err(|code| (LaunchStep::RecordEvent, code))?;
        if let Some(slot) = self
            .slots
            .get_mut(usize::from(lease.slot.0))
            .and_then(Option::as_mut)
        {
            slot.recorded = [true; 2];
        }
        Ok(())
    }

    /// The slot's resources, created (all or nothing) at its first use.
    fn slot_resources(&mut self, slot: u8) -> Result<SlotResources, AclCode> {
        let idx = usize::from(slot);
        if let Some(existing) = self.slots.get(idx).copied().flatten() {
            return Ok(existing);
        }
        let d = &mut self.device;
        let mut made_events: Vec<EventHandle> = Vec::new();
        let result = (|| {
            for _ in 0..2 {
                made_events.push(d.create_event()?);
            }
            d.malloc(SLOT_BYTES)
        })();
        let buffer = match result {
            Ok(buffer) => buffer,
            Err(code) => {
                // All or nothing: the events made so far were never handed out.
                for event in made_events {
                    self.release(Release::DestroyEvent, |d| d.destroy_event(event));
                }
                return Err(code);
            }
        };
        let resources = SlotResources {
            events: [made_events[0], made_events[1]],
            recorded: [false; 2],
            buffer,
        };
        if let Some(entry) = self.slots.get_mut(idx) {
            *entry = Some(resources);
        }
        Ok(resources)
    }

    fn read_status(
        &mut self,
        run: RunId,
        lease: Lease,
        layout: HeaderLayout,
    ) -> Result<Event, DriverError> {
        let Some(slot) = self.slots.get(usize::from(lease.slot.0)).copied().flatten() else {
            return Err(DriverError::UnrecordedEvent { run });
        };
        // One copy: the timing buffer and the header behind it (L-8, L-17).
        let readback = &mut self.readback[..TIMING_BYTES + layout.size()];
        if let Err(code) = self.device.memcpy_from_device(readback, slot.timing()) {
            return Ok(Event::StatusReadFailed { run, lease, code });
        }
        let (timing, header) = readback.split_at(TIMING_BYTES);
        let status = status_latch::decode(layout, header)
            .map_err(|source| DriverError::Decode { run, source })?;
        let (start, end) = timing.split_at(8);
        let timing = DeviceTiming {
            start_ns: u64::from_le_bytes(start.try_into().unwrap_or([0; 8])),
            end_ns: u64::from_le_bytes(end.try_into().unwrap_or([0; 8])),
        };
        Ok(Event::StatusRead {
            run,
            lease,
            status,
            timing,
        })
    }

    /// Blocks on both of the awaited run's completion events, AICPU first (as the C++ drain
    /// does), bounded by the lane's deadline.
    fn wait_for(&mut self, awaited: Awaited) -> Result<(), DriverError> {
        let Awaited { run, lease } = awaited;
        let Some(deadline) = self.lane.poll_deadline() else {
            return Err(DriverError::NoDeadline { run });
        };
        let Some(slot) = self.slots.get(usize::from(lease.slot.0)).copied().flatten() else {
            return Err(DriverError::UnrecordedEvent { run });
        };
        if slot.recorded != [true; 2] {
            return Err(DriverError::UnrecordedEvent { run });
        }
        for event in slot.events {
            let now = self.device.now();
            if now >= deadline {
                self.observer.observe(&Observation::Timeout { now });
                self.lane.handle_timeout(now);
                return self.after_step();
            }
            let remaining_ms = i32::try_from(deadline.since(now).div_ceil(1_000_000))
                .unwrap_or(i32::MAX)
                .max(1);
            if let Err(code) = self.device.synchronize_event(event, remaining_ms) {
                return self.feed(Event::CompletionFailed { run, lease, code });
            }
        }
        self.feed(Event::Completed { run, lease })
    }

    /// Proves the device usable after a reset: re-bind, a stream create and destroy, a small
    /// alloc and free (the C++ runtime's probe).
    fn probe(&mut self) -> Result<(), AclCode> {
        let d = &mut self.device;
        d.set_device()?;
        let stream = d.create_stream()?;
        d.destroy_stream(stream)?;
        let ptr = d.malloc(PROBE_BYTES)?;
        d.free(ptr)?;
        Ok(())
    }

    /// After close: destroy each slot's events and free its buffer (the lane's streams were
    /// destroyed by the lane itself).
    fn release_slot_resources(&mut self) {
        for idx in 0..self.slots.len() {
            let Some(resources) = self.slots.get_mut(idx).and_then(Option::take) else {
                continue;
            };
            for event in resources.events {
                self.release(Release::DestroyEvent, |d| d.destroy_event(event));
            }
            self.release(Release::Free, |d| d.free(resources.buffer));
        }
    }

    /// Gives a resource back. Nothing waits on the answer (the lane is closed, or the
    /// resource was never handed out), so a failure is only reported to the observer.
    fn release(&mut self, release: Release, call: impl FnOnce(&mut D) -> Result<(), AclCode>) {
        if let Err(code) = call(&mut self.device) {
            let now = self.device.now();
            self.observer
                .observe(&Observation::ReleaseFailed { now, release, code });
        }
    }
}

/// The key of the text of a failed stream create or destroy (no item's sequence number:
/// those start at 1 and never reach it).
const STREAM_CALL: u64 = u64::MAX;

/// The cause an outcome reports, if it has one.
const fn cause_of(outcome: &Outcome) -> Option<&Cause> {
    match outcome {
        Outcome::Run(r) => r.verdict.cause(),
        Outcome::Publication(p) => match &p.result {
            PublicationResult::Failed { cause } | PublicationResult::Poisoned { cause, .. } => {
                Some(cause)
            }
            PublicationResult::Uploaded | PublicationResult::Cancelled => None,
        },
    }
}

/// The item (run or publication sequence number) whose effect a failure event answers, for
/// the events that carry a device code and fail an item.
const fn failed_item(event: &Event) -> Option<u64> {
    match event {
        Event::PrepareFailed { run, .. }
        | Event::LaunchFailed { run, .. }
        | Event::CompletionFailed { run, .. }
        | Event::StatusReadFailed { run, .. }
        | Event::FinaliseFailed { run, .. } => Some(run.0),
        Event::UploadFailed { publication, .. } => Some(publication.0),
        _ => None,
    }
}

/// Which stream a completion event index belongs to, for traces.
#[must_use]
pub const fn event_role(index: usize) -> Role {
    if index == 0 {
        Role::Aicpu
    } else {
        Role::Aicore
    }
}
