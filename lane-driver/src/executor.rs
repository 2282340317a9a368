//! The [`Executor`]: owns the device, the runner and the slots' device resources, and turns
//! one lane effect into the one event that answers it, with no access to the lane. The
//! single-thread [`Driver`](crate::Driver) and a multi-threaded service (lane-service) both
//! drive the lane through it, so there is one code path from effect to device call.

use lane_core::status_latch::{self, AclCode, HeaderLayout};
use lane_core::stream_pair::{DestroyMode, StreamHandle};
use lane_core::{DeviceTiming, Effect, Event, LaunchStep, Lease, MAX_SLOTS, RunId, Timestamp};

use crate::device::{Device, DevicePtr, EventHandle};
use crate::driver::{
    ARM_BYTES, DriverError, HANDSHAKE_OFFSET, HEADER_BYTES, HEADER_OFFSET, PROBE_BYTES, SLOT_BYTES,
    TIMING_BYTES, TIMING_OFFSET,
};
use crate::observer::{Observation, Observer, Release};
use crate::runner::{RunArgs, Runner, finalise_answer, prepare_answer};

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
    /// How many of the slot's two completion events a wait saw complete (a sliced wait
    /// resumes at the next).
    completed: usize,
}

/// What one [`Executor::wait`] ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The wait has the event that answers the await: feed it to the lane.
    Answered(Event),
    /// The deadline passed at this time before the run completed: tell the lane
    /// (`Lane::handle_timeout`).
    Expired(Timestamp),
    /// A slice ended with the run still running (or nothing is awaited): look for other
    /// work, then wait again.
    Pending,
}

/// Executes lane effects on a device through a runner, owning both and the slots' device
/// resources (completion events and buffers, created once per slot, re-recorded per run,
/// L-13). It never reads or changes a lane: the caller polls effects and feeds the events
/// back, so a multi-threaded caller can hold its lane lock for the lane steps alone and
/// release it around every call made here (L-16).
#[derive(Debug)]
pub struct Executor<D: Device, R: Runner<D>> {
    device: D,
    runner: R,
    slots: [Option<SlotResources>; MAX_SLOTS as usize],
    awaited: Option<Awaited>,
    /// Where the status read lands: the timing buffer, then the status header.
    readback: [u8; TIMING_BYTES + HEADER_BYTES],
}

impl<D: Device, R: Runner<D>> Executor<D, R> {
    /// An executor on `device`, running runs through `runner`; no slot resources yet.
    pub fn new(device: D, runner: R) -> Self {
        Self {
            device,
            runner,
            slots: [None; MAX_SLOTS as usize],
            awaited: None,
            readback: [0; TIMING_BYTES + HEADER_BYTES],
        }
    }

    /// The device's clock ([`Device::now`]), the one clock the lane is given.
    pub fn now(&mut self) -> Timestamp {
        self.device.now()
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

    /// The device and the runner, consuming the executor.
    pub fn into_parts(self) -> (D, R) {
        (self.device, self.runner)
    }

    /// The device's text about the failed call behind `event`
    /// ([`Device::recent_error_message`], read right after the call), if `event` reports a
    /// failed device or runner call; `None` for every other event, so a success never reads
    /// (or allocates) a text.
    pub fn device_message(&mut self, event: &Event) -> Option<String> {
        let failed = matches!(
            event,
            Event::PrepareFailed { .. }
                | Event::LaunchFailed { .. }
                | Event::CompletionFailed { .. }
                | Event::StatusReadFailed { .. }
                | Event::FinaliseFailed { .. }
                | Event::UploadFailed { .. }
                | Event::StreamCreateFailed { .. }
                | Event::StreamDestroyFailed { .. }
        );
        if failed {
            self.device.recent_error_message()
        } else {
            None
        }
    }

    /// Runs one effect through the device and the runner; returns the event that answers it
    /// (`None` for an await, which [`Executor::wait`] answers later). Touches no lane:
    /// `observer` sees only a failed release of a half-made slot.
    pub fn execute<O: Observer>(
        &mut self,
        effect: Effect,
        observer: &mut O,
    ) -> Result<Option<Event>, DriverError> {
        // A text left by a failure the lane is not told about (a drain, a release) must never
        // be pinned on this effect's failure: drop it before the effect's first call.
        drop(self.device.recent_error_message());
        let (d, r) = (&mut self.device, &mut self.runner);
        let event = match effect {
            Effect::PrepareRun {
                run,
                lease,
                diagnostics,
            } => prepare_answer(run, lease, r.prepare_run(d, run, lease.slot, diagnostics)),
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
            } => match self.launch(run, lease, aicpu, aicore, observer) {
                Ok(()) => Event::Launched { run, lease },
                Err((step, code)) => Event::LaunchFailed {
                    run,
                    lease,
                    step,
                    code,
                },
            },
            Effect::AwaitCompletion { run, lease, .. } => {
                // The deadline is read from the lane at every wait.
                self.awaited = Some(Awaited {
                    run,
                    lease,
                    completed: 0,
                });
                return Ok(None);
            }
            Effect::ReadStatus { run, lease, layout } => self.read_status(run, lease, layout)?,
            Effect::FinaliseRun {
                run,
                lease,
                copy_back,
            } => {
                let result = r.finalise_run(d, run, lease.slot, copy_back);
                self.release_events(lease);
                finalise_answer(run, lease, result)
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
    fn launch<O: Observer>(
        &mut self,
        run: RunId,
        lease: Lease,
        aicpu: StreamHandle,
        aicore: StreamHandle,
        observer: &mut O,
    ) -> Result<(), (LaunchStep, AclCode)> {
        let slot = self
            .slot_resources(lease.slot.0, observer)
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
    fn slot_resources<O: Observer>(
        &mut self,
        slot: u8,
        observer: &mut O,
    ) -> Result<SlotResources, AclCode> {
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
                    self.release(observer, Release::DestroyEvent, |d| d.destroy_event(event));
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

    /// Whether the lane asked to await a run that no wait has answered yet.
    #[must_use]
    pub const fn is_awaiting(&self) -> bool {
        self.awaited.is_some()
    }

    /// `effect` goes to a host worker instead of [`execute`](Self::execute) (runner host
    /// work, [`is_host_work`](crate::is_host_work)): does the executor's own part of it, which
    /// needs no device call. A `FinaliseRun` releases the slot's completion events for the
    /// next run (L-7), as an executed one does; the worker's answer comes back through
    /// [`run_host_work`](crate::run_host_work).
    pub fn hand_off(&mut self, effect: &Effect) {
        if let Effect::FinaliseRun { lease, .. } = effect {
            self.release_events(*lease);
        }
    }

    /// Finalisation releases the slot's completion events for the next run (L-7): they count
    /// as never recorded until the next launch records them.
    fn release_events(&mut self, lease: Lease) {
        if let Some(slot) = self
            .slots
            .get_mut(usize::from(lease.slot.0))
            .and_then(Option::as_mut)
        {
            slot.recorded = [false; 2];
        }
    }

    /// Blocks on both of the awaited run's completion events, AICPU first (as the C++ drain
    /// does), bounded by `deadline` (the lane's `Lane::poll_deadline`, read by the caller
    /// just before).
    ///
    /// With `slice_ms`, no single event wait is longer than that: a slice that ends before
    /// the deadline with the event still pending returns [`Wait::Pending`] (the awaited run
    /// and the events already completed are kept), so a multi-threaded caller can look for
    /// new work between slices. The last slice before the deadline is the full remainder, so
    /// its timeout is answered exactly as an unsliced wait answers it. Without `slice_ms`
    /// the wait never returns `Pending`.
    pub fn wait(
        &mut self,
        deadline: Option<Timestamp>,
        slice_ms: Option<i32>,
    ) -> Result<Wait, DriverError> {
        let Some(mut awaited) = self.awaited.take() else {
            return Ok(Wait::Pending);
        };
        let Awaited { run, lease, .. } = awaited;
        let Some(deadline) = deadline else {
            return Err(DriverError::NoDeadline { run });
        };
        let Some(slot) = self.slots.get(usize::from(lease.slot.0)).copied().flatten() else {
            return Err(DriverError::UnrecordedEvent { run });
        };
        if slot.recorded != [true; 2] {
            return Err(DriverError::UnrecordedEvent { run });
        }
        while let Some(&event) = slot.events.get(awaited.completed) {
            let now = self.device.now();
            if now >= deadline {
                return Ok(Wait::Expired(now));
            }
            let remaining_ms = i32::try_from(deadline.since(now).div_ceil(1_000_000))
                .unwrap_or(i32::MAX)
                .max(1);
            let timeout_ms = slice_ms.map_or(remaining_ms, |slice| slice.clamp(1, remaining_ms));
            match self.device.synchronize_event(event, timeout_ms) {
                Ok(()) => awaited.completed += 1,
                Err(AclCode::RtEventSyncTimeout) if timeout_ms < remaining_ms => {
                    // A slice ended, not the deadline: keep waiting after the caller looked.
                    self.awaited = Some(awaited);
                    return Ok(Wait::Pending);
                }
                Err(code) => {
                    return Ok(Wait::Answered(Event::CompletionFailed { run, lease, code }));
                }
            }
        }
        Ok(Wait::Answered(Event::Completed { run, lease }))
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
    /// destroyed by the lane itself). A slot released already is skipped, so calling it
    /// again is harmless; `observer` sees each failed release.
    pub fn release_slot_resources<O: Observer>(&mut self, observer: &mut O) {
        for idx in 0..self.slots.len() {
            let Some(resources) = self.slots.get_mut(idx).and_then(Option::take) else {
                continue;
            };
            for event in resources.events {
                self.release(observer, Release::DestroyEvent, |d| d.destroy_event(event));
            }
            self.release(observer, Release::Free, |d| d.free(resources.buffer));
        }
    }

    /// Gives a resource back. Nothing waits on the answer (the lane is closed, or the
    /// resource was never handed out), so a failure is only reported to the observer.
    fn release<O: Observer>(
        &mut self,
        observer: &mut O,
        release: Release,
        call: impl FnOnce(&mut D) -> Result<(), AclCode>,
    ) {
        if let Err(code) = call(&mut self.device) {
            let now = self.device.now();
            observer.observe(&Observation::ReleaseFailed { now, release, code });
        }
    }
}
