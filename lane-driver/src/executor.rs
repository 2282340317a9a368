//! The [`Executor`]: owns the device, the runner and the slots' device resources, and turns
//! one lane effect into the one [`Answer`] (the event and the device's text about a failed
//! call) that answers it, with no access to the lane. The single-thread
//! [`Driver`](crate::Driver) and a multi-threaded service (lane-service) both drive the lane
//! through it, so there is one code path from effect to device call.

use core::sync::atomic::{AtomicU64, Ordering};

use lane_core::status_latch::{
    self, AclCode, CoveredRead, HeaderLayout, RECORD_BYTES, RecordRead, ReturnCode, VerdictChannel,
};
use lane_core::stream_pair::{DestroyMode, StreamHandle};
use lane_core::{
    CopyPath, DeviceTiming, Effect, Event, FaultNotice, LaunchStep, Lease, MAX_SLOTS, Overlap,
    Peers, RecoveryHook, RunId, Timestamp, TimingSource,
};

use crate::answer::Answer;
use crate::device::{
    Device, DevicePtr, EventHandle, HostPtr, LaunchContext, LaunchStage, PinnedCopies,
};
use crate::driver::{
    ARM_BYTES, DriverError, HANDSHAKE_OFFSET, HEADER_OFFSET, PROBE_BYTES, RECORD_OFFSET,
    SLOT_BYTES, TIMING_BYTES, TIMING_OFFSET,
};
use crate::notice_ring::NoticeRead;
use crate::observer::{Observation, Observer, Release};
use crate::runner::{AicoreLaunch, RunArgs, Runner, finalise_answer, prepare_answer};
use crate::waiter::{
    DeviceWait, OnDevice, READBACK_BYTES, Readback, drain, event_failed, run_device_wait,
};
/// Where the arm's source (zeros) sits in a slot's pinned host buffer.
const PINNED_ARM_OFFSET: usize = 0;
/// Where the status read lands in a slot's pinned host buffer: after the arm's source, so a
/// readback never changes what the next arm copies.
const PINNED_READBACK_OFFSET: usize = PINNED_ARM_OFFSET + ARM_BYTES;
/// Bytes of a slot's pinned host buffer.
const PINNED_BYTES: usize = PINNED_READBACK_OFFSET + READBACK_BYTES;
/// The readback's fill before each launch: a timing buffer of all `0xFF` is one no kernel
/// and no arm ever leaves, so it means the copy on the stream never landed.
const NOT_LANDED: [u8; READBACK_BYTES] = [0xFF; READBACK_BYTES];
/// What the synchronous arm writes: the handshake, timing buffer and status header cleared,
/// so no latch outlives its run.
const ZEROS: [u8; ARM_BYTES] = [0; ARM_BYTES];

/// The text a declined launch that was not queued fails its run with (the lane's cause is a
/// `NotStarted` launch with 207000).
const DECLINED_ALONE: &str = "the runner declined a launch with no run ahead of it on the pair: a decline only defers a launch queued behind a run, so the run fails; launch it, or fail it with a code";

/// A `LaunchRun` effect's fields, as the launch path takes them.
#[derive(Clone, Copy, Debug)]
struct Launch {
    run: RunId,
    lease: Lease,
    aicpu: StreamHandle,
    aicore: StreamHandle,
    after: Peers<Lease>,
    epoch: Option<u64>,
}

/// A slot's arm made at its run's prepare ([`Executor`]'s `arm_ahead`).
#[derive(Debug)]
enum ArmedAhead {
    /// The handshake, timing buffer and status header are cleared: the launch skips its copy.
    Armed,
    /// The copy failed: the run's launch fails at its arm with this code and text.
    Failed { code: AclCode, text: Option<String> },
}

/// A slot's resources for copies on the streams ([`CopyPath::OnStream`]).
#[derive(Clone, Copy, Debug)]
struct Pinned {
    /// The slot's pinned host buffer ([`PINNED_BYTES`]): the arm's zeros, then the readback.
    host: HostPtr,
    /// Recorded on the AICore stream after the arm copy; the AICPU stream waits for it, so
    /// the AICPU kernel never reads a handshake the arm has not cleared yet.
    armed: EventHandle,
    /// The code of a readback copy whose enqueue failed at this slot's last launch: the
    /// status read answers it (the synchronous read's stage), not the launch.
    read_failed: Option<AclCode>,
}

/// Per-slot device resources, created at the slot's first launch and reused by every run
/// that leases the slot (L-13): the run's two fence events, and one device allocation
/// holding the handshake region, the timing buffer, the status header and the result record
/// (laid out as [`HANDSHAKE_OFFSET`] shows); with copies on the streams also a pinned host
/// buffer and the "armed" event.
#[derive(Clone, Copy, Debug)]
struct SlotResources {
    /// `[boundary, core_done]`: the boundary is recorded on the AICPU stream behind a wait on
    /// `core_done`, which is recorded on the AICore stream after its kernel (L-5). Reused by
    /// every run of the slot (`ACL_EVENT_SYNC` events re-record without a reset).
    events: [EventHandle; 2],
    /// Whether each event was recorded since the slot was last released (a never-recorded
    /// event waits as success, so the driver tracks records itself).
    recorded: [bool; 2],
    /// The run launched on this slot last: its epoch and the pair it went to (what the
    /// device verdict synchronizes).
    launched: Option<Launched>,
    /// The slot's allocation ([`SLOT_BYTES`]).
    buffer: DevicePtr,
    /// `Some` exactly with [`CopyPath::OnStream`].
    pinned: Option<Pinned>,
    /// Where the device gives event timestamps ([`Device::event_timestamps`]): recorded on
    /// the AICore stream right before each run's AICore kernel, behind the wait on the
    /// predecessor's boundary, so its timestamp is the run's device start.
    started: Option<EventHandle>,
    /// The proof of overlap of the run launched on this slot last, taken right after its
    /// launch calls returned (an event query of its predecessor's boundary).
    overlap: Overlap,
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

    fn record(&self) -> DevicePtr {
        self.buffer.at(RECORD_OFFSET)
    }

    fn boundary(&self) -> EventHandle {
        self.events[0]
    }

    fn core_done(&self) -> EventHandle {
        self.events[1]
    }
}

/// A slot's last launch, as the completion wait needs it.
#[derive(Clone, Copy, Debug)]
struct Launched {
    /// The run's lease: a later launch waits on this slot's boundary, and a covered record is
    /// read from it, only for this lease.
    lease: Lease,
    epoch: u64,
    /// `[aicpu, aicore]`.
    streams: [StreamHandle; 2],
}

/// The process-wide epoch counter: every run of every lane of the process gets its own, so
/// a record can never be mistaken for another run's, even across lanes or a reset.
static NEXT_EPOCH: AtomicU64 = AtomicU64::new(1);

/// A fresh epoch for a run (L-8): process-unique and never 0 (the value a zeroed record
/// region reads as).
pub fn next_epoch() -> u64 {
    loop {
        let epoch = NEXT_EPOCH.fetch_add(1, Ordering::Relaxed);
        if epoch != 0 {
            return epoch;
        }
    }
}

/// The run the lane asked to await (its deadline is read from `Lane::poll_deadline`).
#[derive(Clone, Copy, Debug)]
struct Awaited {
    run: RunId,
    lease: Lease,
    channel: VerdictChannel,
    sync_bound_ns: u64,
    unfenced: Option<AclCode>,
}

/// What a device wait ended with ([`Executor::wait`], [`run_device_wait`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Wait {
    /// The wait has the event that answers it, with the device's text about a failed wait:
    /// feed it to the lane.
    Answered(Answer),
    /// A completion answered as [`Wait::Answered`] does, with the status bytes its record's
    /// copy read ([`DeviceWait::Completion`]'s `readback`): give them to
    /// [`Executor::keep_readback`], then feed the answer. Not boxed: a wait is made once
    /// per run, and a box would be an allocation per run.
    Completed {
        /// The answer to feed.
        answer: Answer,
        /// The run's timing buffer and status header, for its status read.
        readback: Readback,
    },
    /// The deadline passed at this time before the run completed: tell the lane
    /// (`Lane::handle_timeout`).
    Expired(Timestamp),
    /// Nothing was waited for: the lane awaits nothing, or no longer (a poison abandoned the
    /// awaited run while runner work was out, see [`Executor::completion_wait`]); or the run
    /// is not complete yet and the caller who drives the lane waits no longer (its `wait`
    /// timeout, or a look: [`Reach`](crate::Reach)). The run stays live: the dispatch machine
    /// hands the same wait out again.
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
    /// How launches arm their slot and status reads read it back (the profile's).
    copies: CopyPath,
    slots: [Option<SlotResources>; MAX_SLOTS as usize],
    awaited: Option<Awaited>,
    /// Where the status read lands: the timing buffer, then the status header.
    readback: [u8; READBACK_BYTES],
    /// Per slot, the device's text about a readback enqueue that failed at the slot's last
    /// launch: the status read's failure answers it, so it carries the text.
    readback_text: [Option<String>; MAX_SLOTS as usize],
    /// Per slot, the status bytes its last run's completion wait read with the record
    /// ([`Executor::keep_readback`]): that run's status read answers from them.
    kept: [Option<Readback>; MAX_SLOTS as usize],
    /// Per slot, the arm its run's prepare made (decision 0024), for that lease: the run's
    /// launch makes no copy of its own, or reports the copy's failure.
    ahead: [Option<(Lease, ArmedAhead)>; MAX_SLOTS as usize],
    /// The text of an arm made at prepare that failed, taken by the launch that reports it.
    arm_text: Option<String>,
    /// Where this executor reads the process's notice ring from (L-19): notices written
    /// before it existed are not its device's streams.
    notice_cursor: u64,
    /// Notices overwritten before this executor read them.
    notices_lost: u64,
}

impl<D: Device, R: Runner<D>> Executor<D, R> {
    /// An executor on `device`, running runs through `runner`, with synchronous copies
    /// ([`CopyPath::Sync`]); no slot resources yet.
    pub fn new(device: D, runner: R) -> Self {
        Self::with_copies(device, runner, CopyPath::Sync)
    }

    /// An executor whose launches arm and whose status reads read back through `copies`
    /// (pass the profile's `Profile::copies`).
    pub fn with_copies(device: D, runner: R, copies: CopyPath) -> Self {
        Self {
            device,
            runner,
            copies,
            slots: [None; MAX_SLOTS as usize],
            awaited: None,
            readback: [0; READBACK_BYTES],
            readback_text: [const { None }; MAX_SLOTS as usize],
            kept: [const { None }; MAX_SLOTS as usize],
            ahead: [const { None }; MAX_SLOTS as usize],
            arm_text: None,
            notice_cursor: crate::notices().head(),
            notices_lost: 0,
        }
    }

    /// The next device fault notice from the process's ring that concerns this device
    /// ([`Device::notice_concerns`]), skipping the rest (L-19).
    pub fn next_notice(&mut self) -> Option<FaultNotice> {
        let ring = crate::notices();
        loop {
            match ring.read(&mut self.notice_cursor) {
                NoticeRead::Empty => return None,
                NoticeRead::Lost { count } => {
                    self.notices_lost = self.notices_lost.saturating_add(count);
                }
                NoticeRead::Notice(raw) => {
                    let code = AclCode::from_raw(raw.code).unwrap_or(AclCode::Unknown(raw.code));
                    let notice = FaultNotice {
                        device: raw.device,
                        stream_id: raw.stream_id,
                        code,
                    };
                    if self.device.notice_concerns(&notice) {
                        return Some(notice);
                    }
                }
            }
        }
    }

    /// How many notices were overwritten in the ring before this executor read them (more
    /// than [`NOTICE_CAPACITY`](crate::NOTICE_CAPACITY) between two of its steps).
    pub const fn notices_lost(&self) -> u64 {
        self.notices_lost
    }

    /// How launches arm their slot and status reads read it back.
    pub const fn copies(&self) -> CopyPath {
        self.copies
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

    /// The runner, mutably.
    pub fn runner_mut(&mut self) -> &mut R {
        &mut self.runner
    }

    /// The device and the runner, consuming the executor.
    pub fn into_parts(self) -> (D, R) {
        (self.device, self.runner)
    }

    /// The text about the failed call behind `event` ([`Runner::recent_error_message`], else
    /// [`Device::recent_error_message`], read right after the call), if `event` reports a
    /// failed device or runner call; `None` for every other event, so a success never reads
    /// (or allocates) a text.
    fn failure_text(&mut self, event: &Event) -> Option<String> {
        let failed = match event {
            Event::PrepareFailed { .. }
            | Event::LaunchFailed { .. }
            | Event::CompletionFailed { .. }
            | Event::StatusReadFailed { .. }
            | Event::FinaliseFailed { .. }
            | Event::UploadFailed { .. }
            | Event::StreamCreateFailed { .. }
            | Event::StreamDestroyFailed { .. } => true,
            // A completion whose record read or device verdict failed.
            Event::Completed { .. } => event_failed(event),
            _ => false,
        };
        if !failed {
            return None;
        }
        // The runner's text first: a failed callback is the runner's call, and its text is
        // read on this thread when it fails; a device call's failure leaves none there.
        self.runner
            .recent_error_message()
            .or_else(|| self.device.recent_error_message())
    }

    /// Runs one effect through the device and the runner; returns the answer to it: the
    /// event, with the device's text about the failed call when it reports one (`None` for
    /// an await, which [`Executor::wait`] answers later). Touches no lane: `observer` sees
    /// only a failed release of a half-made slot.
    pub fn execute<O: Observer>(
        &mut self,
        effect: Effect,
        observer: &mut O,
    ) -> Result<Option<Answer>, DriverError> {
        // A text left by a failure the lane is not told about (a drain, a release) must never
        // be pinned on this effect's failure: drop it before the effect's first call.
        drop(self.device.recent_error_message());
        drop(self.runner.recent_error_message());
        let mut kept_text = None;
        let (d, r) = (&mut self.device, &mut self.runner);
        let event = match effect {
            Effect::PrepareRun {
                run,
                lease,
                diagnostics,
            } => {
                let result = r.prepare_run(d, run, lease.slot, diagnostics);
                if result.is_ok() {
                    self.arm_ahead(lease);
                }
                prepare_answer(run, lease, result)
            }
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
                after,
                epoch,
            } => {
                let launch = Launch {
                    run,
                    lease,
                    aicpu,
                    aicore,
                    after,
                    epoch,
                };
                let launched = self.launch(&launch, observer);
                // A failed arm made at the run's prepare left its text for this answer.
                kept_text = self.arm_text.take();
                match launched {
                    Ok(AicoreLaunch::Launched) => Event::Launched { run, lease },
                    Ok(AicoreLaunch::Declined) => {
                        if after.is_empty() {
                            kept_text = Some(DECLINED_ALONE.to_owned());
                        }
                        Event::LaunchDeclined { run, lease }
                    }
                    Err((step, code)) => Event::LaunchFailed {
                        run,
                        lease,
                        step,
                        code,
                    },
                }
            }
            Effect::AwaitCompletion {
                run,
                lease,
                channel,
                sync_bound_ns,
                unfenced,
                ..
            } => {
                // The deadline is read from the lane at every wait.
                self.awaited = Some(Awaited {
                    run,
                    lease,
                    channel,
                    sync_bound_ns,
                    unfenced,
                });
                return Ok(None);
            }
            Effect::ReadRecords { run, lease, behind } => Event::RecordsRead {
                run,
                lease,
                records: behind
                    .iter()
                    .map(|(covered, lease)| CoveredRead {
                        run: covered.0,
                        record: self.read_covered_record(lease),
                    })
                    .collect(),
            },
            Effect::ReadStatus { run, lease, layout } => {
                kept_text = self
                    .readback_text
                    .get_mut(usize::from(lease.slot.0))
                    .and_then(Option::take);
                self.read_status(run, lease, layout)?
            }
            Effect::FinaliseRun {
                run,
                lease,
                verdict,
                ..
            } => {
                let result = r.finalise_verdict(d, run, lease.slot, verdict);
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
                drain(&mut OnDevice(d), attempt, timeout_ns)
            }
            Effect::ForceReset { attempt } => {
                // L-20: between attempts the device is bound again, since a second force
                // reset with no `aclrtSetDevice` in between is refused (507007, device-truth
                // §5). A failed bind shows as the reset's own failure.
                if attempt > 1 {
                    let _ = d.set_device();
                }
                let result = d.reset_device_force();
                // Also after a failed reset: the next attempt resets again, and a device no
                // attempt recovers is never touched again.
                self.forget_device_handles();
                match result {
                    Ok(()) => Event::ResetDone { attempt },
                    Err(code) => Event::ResetFailed { attempt, code },
                }
            }
            Effect::Probe { attempt } => match self.probe() {
                Ok(()) => Event::ProbePassed { attempt },
                Err(code) => Event::ProbeFailed { attempt, code },
            },
            Effect::Hook(hook) => {
                match hook {
                    RecoveryHook::OnPoison { origin, cause } => {
                        r.on_poison(d, origin, cause);
                        // The last thing the lane does with the device until the runtime's
                        // reset, which kills every handle: forget them now, never destroy.
                        self.forget_device_handles();
                    }
                    RecoveryHook::BeforeReset { origin, cause } => {
                        r.before_reset(d, origin, cause);
                    }
                    RecoveryHook::AfterReset { recovered } => r.after_reset(d, recovered),
                }
                return Ok(None);
            }
            Effect::AdoptReset => {
                d.adopt_reset();
                self.forget_device_handles();
                return Ok(None);
            }
        };
        let text = match (kept_text, &event) {
            (
                Some(kept),
                Event::StatusReadFailed { .. }
                | Event::LaunchFailed { .. }
                | Event::LaunchDeclined { .. },
            ) => Some(kept),
            _ => self.failure_text(&event),
        };
        Ok(Some(Answer { event, text }))
    }

    /// Forgets every slot resource and the awaited run: every handle is dead after a force
    /// reset, the lane's or the runtime's (a5 segfaults on reuse), so they are dropped, never
    /// destroyed or freed.
    fn forget_device_handles(&mut self) {
        self.slots = [None; MAX_SLOTS as usize];
        self.readback_text = [const { None }; MAX_SLOTS as usize];
        self.kept = [const { None }; MAX_SLOTS as usize];
        self.ahead = [const { None }; MAX_SLOTS as usize];
        self.awaited = None;
    }

    /// The launch order of L-5 and L-13. AICore stream: the arm (Sync: one synchronous copy
    /// that clears the slot's handshake, timing buffer and status header, unless the run's
    /// prepare made it, decision 0024, when its result stands in for the copy; OnStream: the
    /// readback filled with `0xFF`, the arm as a copy, the "armed" event, which the AICPU
    /// stream waits for), a wait on the boundary of the predecessor the lane names (`after`),
    /// the
    /// AICore kernel, `core_done`. AICPU stream: the AICPU kernel, a wait on `core_done`,
    /// (OnStream: the readback copy), the boundary. AICore is submitted before AICPU, back to
    /// back; nothing waits on the device between them. A failure before the AICore kernel is
    /// the arm's (`NotStarted`); a record or wait after a kernel was accepted leaves the run
    /// unfenced (`RecordEvent`, poison). The device is told each stage before its calls
    /// ([`Device::launch_context`]) and that the launch ended, whatever it ended with.
    fn launch<O: Observer>(
        &mut self,
        launch: &Launch,
        observer: &mut O,
    ) -> Result<AicoreLaunch, (LaunchStep, ReturnCode)> {
        let run = launch.run;
        let stage = |stage| Some(LaunchContext { run, stage });
        self.device.launch_context(stage(LaunchStage::Arm));
        let result = self.launch_calls(launch, observer);
        self.device.launch_context(None);
        result
    }

    /// The calls of [`launch`](Self::launch), in order; a declined AICore launch returns
    /// before anything of the run reached a kernel, and a launched run is announced to the
    /// runner ([`Runner::on_launched`]) once its kernels were accepted, fenced or not.
    fn launch_calls<O: Observer>(
        &mut self,
        launch: &Launch,
        observer: &mut O,
    ) -> Result<AicoreLaunch, (LaunchStep, ReturnCode)> {
        let Launch {
            run,
            lease,
            aicpu,
            aicore,
            after,
            epoch,
        } = *launch;
        let slot = self
            .slot_resources(lease.slot.0, observer)
            .map_err(|code| (LaunchStep::Arm, code.into()))?;
        // The boundary of the newest predecessor the lane names (its completion has not come
        // back) that was recorded: the successor's AICore kernel starts only once both of its
        // kernels exited. One whose launch failed before its boundary (at depth three and up,
        // decided after this launch was queued) recorded nothing, so the next older one is
        // waited on instead (L-5).
        let predecessor = after
            .iter()
            .filter(|prev| prev.slot != lease.slot)
            .find_map(|prev| {
                self.slots
                    .get(usize::from(prev.slot.0))
                    .copied()
                    .flatten()
                    .filter(|slot| {
                        slot.recorded[0] && slot.launched.is_some_and(|l| l.lease == prev)
                    })
            })
            .map(|prev| prev.boundary());
        let ahead = self
            .ahead
            .get_mut(usize::from(lease.slot.0))
            .and_then(Option::take)
            .filter(|(armed_for, _)| *armed_for == lease)
            .map(|(_, armed)| armed);
        let (d, r) = (&mut self.device, &mut self.runner);
        match (slot.pinned, ahead) {
            (None, Some(ArmedAhead::Armed)) => Ok(()),
            (None, Some(ArmedAhead::Failed { code, text })) => {
                self.arm_text = text;
                Err(code)
            }
            (None, None) => d.memcpy_to_device(slot.handshake(), &ZEROS),
            (Some(pinned), _) => {
                pinned_copies(d).and_then(|p| arm_on_stream(p, &slot, pinned, aicpu, aicore))
            }
        }
        .map_err(|code| (LaunchStep::Arm, code.into()))?;
        if let Some(boundary) = predecessor {
            d.stream_wait_event(aicore, boundary)
                .map_err(|code| (LaunchStep::Arm, code.into()))?;
        }
        // Behind the wait, right before the AICore kernel: the run's device start.
        if let Some(started) = slot.started {
            d.record_event(started, aicore)
                .map_err(|code| (LaunchStep::Arm, code.into()))?;
        }
        let epoch = epoch.unwrap_or_else(next_epoch);
        let args = RunArgs {
            run,
            slot: lease.slot,
            status_header: slot.header(),
            timing: slot.timing(),
            handshake: slot.handshake(),
            record: slot.record(),
            epoch,
            queued: !after.is_empty(),
        };
        let aicore_launch = r
            .try_launch_aicore(d, aicore, &args)
            .map_err(|code| (LaunchStep::Aicore, code))?;
        if aicore_launch == AicoreLaunch::Declined {
            return Ok(AicoreLaunch::Declined);
        }
        d.launch_context(Some(LaunchContext {
            run,
            stage: LaunchStage::Kernels,
        }));
        // From here a kernel is on a stream: a failed record or wait leaves the run unfenced,
        // and its wait is the device verdict on this pair, so the slot keeps the launch.
        if let Some(slot) = self
            .slots
            .get_mut(usize::from(lease.slot.0))
            .and_then(Option::as_mut)
        {
            slot.launched = Some(Launched {
                lease,
                epoch,
                streams: [aicpu, aicore],
            });
            slot.overlap = Overlap::Unknown;
        }
        let (d, r) = (&mut self.device, &mut self.runner);
        // Before the AICPU kernel: a failure here orphans the AICore kernel, as a failed AICPU
        // launch does (L-5: `Partial`, known now with its own code).
        d.record_event(slot.core_done(), aicore)
            .map_err(|code| (LaunchStep::CoreDone, code.into()))?;
        r.launch_aicpu(d, aicpu, &args)
            .map_err(|code| (LaunchStep::Aicpu, code))?;
        // Both kernels are accepted: the proof of overlap, before anything else is enqueued.
        let overlap = overlap_at_launch(d, predecessor);
        if let Some(slot) = self
            .slots
            .get_mut(usize::from(lease.slot.0))
            .and_then(Option::as_mut)
        {
            slot.overlap = overlap;
        }
        // Both kernels are accepted: the run is launched, fenced or not (L-5).
        let fenced = self.fence(&slot, lease, aicpu);
        if matches!(fenced, Ok(()) | Err((LaunchStep::RecordEvent, _))) {
            self.runner.on_launched(&mut self.device, &args);
        }
        fenced.map(|()| AicoreLaunch::Launched)
    }

    /// A launch's calls after both kernels were accepted: the AICPU stream's wait on
    /// `core_done`, the readback copy (copies on the streams), the boundary. A failure leaves
    /// the run unfenced (`RecordEvent`).
    fn fence(
        &mut self,
        slot: &SlotResources,
        lease: Lease,
        aicpu: StreamHandle,
    ) -> Result<(), (LaunchStep, ReturnCode)> {
        let d = &mut self.device;
        let unfenced = |code: AclCode| (LaunchStep::RecordEvent, ReturnCode::from(code));
        d.stream_wait_event(aicpu, slot.core_done())
            .map_err(unfenced)?;
        // A failed readback enqueue is the status read's failure, as with the synchronous
        // read (SPEC §5.3 stages): the run launched, so it is answered after completion.
        let read_failed = slot.pinned.and_then(|pinned| {
            let readback = pinned.host.at(PINNED_READBACK_OFFSET);
            pinned_copies(d)
                .and_then(|p| {
                    p.memcpy_from_device_async(readback, slot.timing(), READBACK_BYTES, aicpu)
                })
                .err()
        });
        // The status read answers this failure after completion, so the device's text about
        // the enqueue is kept for it (it is not the launch's).
        let read_text = read_failed.and_then(|_| d.recent_error_message());
        if let Some(kept) = self.readback_text.get_mut(usize::from(lease.slot.0)) {
            *kept = read_text;
        }
        let d = &mut self.device;
        d.record_event(slot.boundary(), aicpu).map_err(unfenced)?;
        if let Some(slot) = self
            .slots
            .get_mut(usize::from(lease.slot.0))
            .and_then(Option::as_mut)
        {
            slot.recorded = [true; 2];
            if let Some(pinned) = slot.pinned.as_mut() {
                pinned.read_failed = read_failed;
            }
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
        let events = match self.copies {
            CopyPath::Sync => 2,
            CopyPath::OnStream => 3,
        };
        let mut made = Made::default();
        let timestamps = self.device.event_timestamps();
        let d = &mut self.device;
        let result = (|| {
            for _ in 0..events {
                made.events.push(d.create_event()?);
            }
            if timestamps {
                made.started = Some(d.create_event()?);
            }
            let buffer = d.malloc(SLOT_BYTES)?;
            made.buffer = Some(buffer);
            // Device memory holds garbage: the record's `published` word is zeroed once, here;
            // a record then counts only when stamped with its run's epoch (L-8).
            d.memcpy_to_device(buffer.at(RECORD_OFFSET), &[0; RECORD_BYTES])?;
            if self.copies == CopyPath::OnStream {
                let p = pinned_copies(d)?;
                let host = p.malloc_host(PINNED_BYTES)?;
                made.host = Some(host);
                // The arm's source never changes: zero it once.
                p.write_host(host.at(PINNED_ARM_OFFSET), &ZEROS)?;
            }
            Ok(())
        })();
        let (Ok(()), [aicpu, aicore, rest @ ..], Some(buffer)) =
            (result, made.events.as_slice(), made.buffer)
        else {
            // All or nothing: what was made so far was never handed out.
            self.release_made(observer, &made);
            return Err(result.err().unwrap_or(AclCode::RtParamInvalid));
        };
        let pinned = made.host.zip(rest.first()).map(|(host, &armed)| Pinned {
            host,
            armed,
            read_failed: None,
        });
        let resources = SlotResources {
            events: [*aicpu, *aicore],
            recorded: [false; 2],
            launched: None,
            buffer,
            pinned,
            started: made.started,
            overlap: Overlap::Unknown,
        };
        if let Some(entry) = self.slots.get_mut(idx) {
            *entry = Some(resources);
        }
        Ok(resources)
    }

    /// Gives back every resource in `made` (a slot's, at close or after a failed creation).
    fn release_made<O: Observer>(&mut self, observer: &mut O, made: &Made) {
        for &event in made.events.iter().chain(&made.started) {
            self.release(observer, Release::DestroyEvent, |d| d.destroy_event(event));
        }
        if let Some(buffer) = made.buffer {
            self.release(observer, Release::Free, |d| d.free(buffer));
        }
        if let Some(host) = made.host {
            self.release(observer, Release::FreeHost, |d| {
                pinned_copies(d).and_then(|p| p.free_host(host))
            });
        }
    }

    /// The status read of L-8 and L-17: the timing buffer and the header behind it, from
    /// the bytes the run's completion wait read with its record ([`Executor::keep_readback`]),
    /// else in one synchronous copy, or (copies on the streams) from the pinned readback the
    /// run's own copy filled before its completion events passed.
    fn read_status(
        &mut self,
        run: RunId,
        lease: Lease,
        layout: HeaderLayout,
    ) -> Result<Event, DriverError> {
        let Some(slot) = self.slots.get(usize::from(lease.slot.0)).copied().flatten() else {
            return Err(DriverError::UnrecordedEvent { run });
        };
        let len = TIMING_BYTES + layout.size();
        let measured = self.measured(&slot);
        let kept = self
            .kept
            .get_mut(usize::from(lease.slot.0))
            .and_then(|kept| kept.take_if(|kept| kept.lease == lease));
        // Read with the record, right after the boundary: decoded where it lies, no copy.
        if let (None, Some(kept)) = (slot.pinned, &kept) {
            return status_read(run, lease, layout, &kept.bytes[..len], measured);
        }
        let read = match slot.pinned {
            None => self
                .device
                .memcpy_from_device(&mut self.readback[..len], slot.timing()),
            Some(Pinned {
                read_failed: Some(code),
                ..
            }) => Err(code),
            Some(pinned) => self.read_pinned(&slot, pinned, len),
        };
        if let Err(code) = read {
            return Ok(Event::StatusReadFailed { run, lease, code });
        }
        status_read(run, lease, layout, &self.readback[..len], measured)
    }

    /// What the executor measured of the slot's last run: its proof of overlap and, where
    /// the device gives event timestamps, its device start and end from them (start event,
    /// boundary). A failed timestamp call leaves the timing buffer as the source.
    fn measured(&mut self, slot: &SlotResources) -> Measured {
        let events = slot.started.filter(|_| slot.recorded[0]);
        let timestamps = events.and_then(|started| {
            let start = self.device.event_timestamp(started);
            let end = self.device.event_timestamp(slot.boundary());
            match (start, end) {
                (Ok(start), Ok(end)) if start <= end => Some((start, end)),
                _ => {
                    // The lane is not told: the text must not follow another failure.
                    drop(self.device.recent_error_message());
                    None
                }
            }
        });
        Measured {
            overlap: slot.overlap,
            timestamps,
        }
    }

    /// Reads the pinned readback (no device call). A readback still holding the launch's
    /// `0xFF` fill never landed: its copy failed on the stream (a sticky fault ended the
    /// run), so the synchronous read asks the device, which answers with the fault's code
    /// exactly as the synchronous path does.
    fn read_pinned(
        &mut self,
        slot: &SlotResources,
        pinned: Pinned,
        len: usize,
    ) -> Result<(), AclCode> {
        let readback = &mut self.readback[..len];
        pinned_copies(&mut self.device)?
            .read_host(readback, pinned.host.at(PINNED_READBACK_OFFSET))?;
        if readback.get(..TIMING_BYTES) == NOT_LANDED.get(..TIMING_BYTES) {
            return self.device.memcpy_from_device(readback, slot.timing());
        }
        Ok(())
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

    /// Arms `lease`'s slot at its run's prepare, with synchronous copies and once the slot
    /// has its resources (decision 0024): the copy the launch would make first, made while
    /// the predecessor still runs, so it leaves the depth-one path. The slot's last run was
    /// finalised before this lease was given, so nothing of it is live (L-13). A failure is
    /// kept for the run's launch, which reports it as its arm's (stage `NotStarted`, as
    /// before); a finalise or a reset forgets it. A slot's first prepare finds no resources:
    /// its launch makes them and arms.
    fn arm_ahead(&mut self, lease: Lease) {
        let idx = usize::from(lease.slot.0);
        let Some(resources) = self.slots.get(idx).copied().flatten() else {
            return;
        };
        if resources.pinned.is_some() {
            return;
        }
        let armed = match self.device.memcpy_to_device(resources.handshake(), &ZEROS) {
            Ok(()) => ArmedAhead::Armed,
            Err(code) => ArmedAhead::Failed {
                code,
                text: self.device.recent_error_message(),
            },
        };
        if let Some(entry) = self.ahead.get_mut(idx) {
            *entry = Some((lease, armed));
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
        if let Some(kept) = self.kept.get_mut(usize::from(lease.slot.0)) {
            *kept = None;
        }
        if let Some(ahead) = self.ahead.get_mut(usize::from(lease.slot.0)) {
            *ahead = None;
        }
    }

    /// Keeps the status bytes a completion wait read with the run's record
    /// ([`Wait::Completed`]): the run's status read answers from them instead of a copy of
    /// its own. Bookkeeping only, no device call; a later run of the slot (another lease)
    /// never reads them.
    pub fn keep_readback(&mut self, readback: Readback) {
        if let Some(kept) = self.kept.get_mut(usize::from(readback.lease.slot.0)) {
            *kept = Some(readback);
        }
    }

    /// The awaited run's completion as a [`DeviceWait`] for a completion waiter, bounded by
    /// `deadline` (the lane's `Lane::poll_deadline`, read by the caller just before); the
    /// executor no longer awaits it (the waiter's answer is the lane's to take). `None` when
    /// nothing is awaited, or with no `deadline`: the lane awaits nothing, because a poison
    /// abandoned the awaited run while runner work was out on host workers (the drain that
    /// forgets it waits for that work, L-18, `RecoveryStep::Quiesce`), so the run is
    /// forgotten now.
    ///
    /// # Errors
    ///
    /// [`DriverError::UnrecordedEvent`]: the run's slot events were never recorded (a wait
    /// would pass at once).
    pub fn completion_wait(
        &mut self,
        deadline: Option<Timestamp>,
    ) -> Result<Option<DeviceWait>, DriverError> {
        let Some(Awaited {
            run,
            lease,
            channel,
            sync_bound_ns,
            unfenced,
        }) = self.awaited.take()
        else {
            return Ok(None);
        };
        let Some(deadline) = deadline else {
            return Ok(None);
        };
        let Some(slot) = self.slots.get(usize::from(lease.slot.0)).copied().flatten() else {
            return Err(DriverError::UnrecordedEvent { run });
        };
        // An unfenced run recorded none of its events: its wait is the device verdict alone.
        let fenced = slot.recorded == [true; 2] || unfenced.is_some();
        let (true, Some(launched)) = (fenced, slot.launched) else {
            return Err(DriverError::UnrecordedEvent { run });
        };
        Ok(Some(DeviceWait::Completion {
            run,
            lease,
            boundary: slot.boundary(),
            record: slot.record(),
            // Synchronous copies read the status with the record; on-stream copies read it
            // into pinned memory before the boundary.
            readback: slot.pinned.is_none().then(|| slot.timing()),
            epoch: launched.epoch,
            streams: launched.streams,
            channel,
            deadline,
            sync_bound_ns,
            unfenced,
        }))
    }

    /// The result record of the run holding `lease`, read device-to-host and decoded for its
    /// epoch (L-8a: a run a synchronize covered). Not read when the slot's last launch is not
    /// that lease's (its kernels never reached a stream).
    fn read_covered_record(&mut self, lease: Lease) -> RecordRead {
        let Some(slot) = self.slots.get(usize::from(lease.slot.0)).copied().flatten() else {
            return RecordRead::NotRead;
        };
        let Some(launched) = slot.launched.filter(|launched| launched.lease == lease) else {
            return RecordRead::NotRead;
        };
        let mut bytes = [0; RECORD_BYTES];
        match self.device.memcpy_from_device(&mut bytes, slot.record()) {
            Ok(()) => RecordRead::Read(status_latch::decode_record(&bytes, launched.epoch)),
            Err(code) => RecordRead::Failed(code),
        }
    }

    /// `effect` as a [`DeviceWait`] for a completion waiter, if it is one (`DrainDevice`),
    /// with the executor's own part of it done: nothing is awaited after a poison.
    pub fn device_wait(&mut self, effect: &Effect) -> Option<DeviceWait> {
        let Effect::DrainDevice {
            attempt,
            timeout_ns,
        } = *effect
        else {
            return None;
        };
        // Everything in flight was abandoned by the poison.
        self.awaited = None;
        Some(DeviceWait::Drain {
            attempt,
            timeout_ns,
        })
    }

    /// Blocks on the awaited run's completion on this thread ([`run_device_wait`] on the
    /// device itself): both of its completion events, AICPU first (as the C++ drain does),
    /// bounded by `deadline` (see [`completion_wait`](Self::completion_wait)). The
    /// single-thread [`Driver`](crate::Driver)'s wait; lane-service hands the same
    /// [`DeviceWait`] to its completion waiter instead. Status bytes read with the record are
    /// kept here ([`Executor::keep_readback`]), so the answer is never [`Wait::Completed`].
    ///
    /// # Errors
    ///
    /// As [`completion_wait`](Self::completion_wait).
    pub fn wait(&mut self, deadline: Option<Timestamp>) -> Result<Wait, DriverError> {
        Ok(match self.completion_wait(deadline)? {
            Some(wait) => match run_device_wait(&mut OnDevice(&mut self.device), &wait) {
                Wait::Completed { answer, readback } => {
                    self.keep_readback(readback);
                    Wait::Answered(answer)
                }
                other => other,
            },
            None => Wait::Pending,
        })
    }

    /// Proves the device usable after a reset: re-bind, a stream create and destroy, a small
    /// alloc and free (the C++ runtime's probe), then the device's own check
    /// ([`Device::own_probe`]).
    fn probe(&mut self) -> Result<(), AclCode> {
        let d = &mut self.device;
        d.set_device()?;
        let stream = d.create_stream()?;
        d.destroy_stream(stream)?;
        let ptr = d.malloc(PROBE_BYTES)?;
        d.free(ptr)?;
        d.own_probe()
    }

    /// After close: destroy each slot's events and free its buffer (the lane's streams were
    /// destroyed by the lane itself). A slot released already is skipped, so calling it
    /// again is harmless; `observer` sees each failed release.
    pub fn release_slot_resources<O: Observer>(&mut self, observer: &mut O) {
        for idx in 0..self.slots.len() {
            let Some(resources) = self.slots.get_mut(idx).and_then(Option::take) else {
                continue;
            };
            self.release_made(observer, &Made::from(resources));
        }
        self.readback_text = [const { None }; MAX_SLOTS as usize];
        self.kept = [const { None }; MAX_SLOTS as usize];
        self.ahead = [const { None }; MAX_SLOTS as usize];
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

/// A slot's resources as made so far (creation is all or nothing) or as released at close.
#[derive(Debug, Default)]
struct Made {
    /// `[aicpu, aicore, armed]`, as far as made.
    events: Vec<EventHandle>,
    /// The start event ([`SlotResources::started`]), if made.
    started: Option<EventHandle>,
    buffer: Option<DevicePtr>,
    host: Option<HostPtr>,
}

impl From<SlotResources> for Made {
    fn from(slot: SlotResources) -> Self {
        let mut events = slot.events.to_vec();
        events.extend(slot.pinned.map(|p| p.armed));
        Self {
            events,
            started: slot.started,
            buffer: Some(slot.buffer),
            host: slot.pinned.map(|p| p.host),
        }
    }
}

/// What the executor measured of a run, beside its timing buffer ([`Executor`]'s `measured`).
#[derive(Clone, Copy, Debug)]
struct Measured {
    overlap: Overlap,
    /// Device start and end from event timestamps, where the device gave them.
    timestamps: Option<(u64, u64)>,
}

/// The proof of overlap of a run whose kernels were both accepted: the boundary its AICore
/// stream waits for (`predecessor`) still unfired is [`Overlap::Proven`], fired
/// [`Overlap::NotProven`]; a failed query counts neither way ([`Overlap::Unknown`], its text
/// dropped: the lane is not told); no predecessor is [`Overlap::NotQueued`].
fn overlap_at_launch<D: Device>(d: &mut D, predecessor: Option<EventHandle>) -> Overlap {
    let Some(boundary) = predecessor else {
        return Overlap::NotQueued;
    };
    match d.query_event(boundary) {
        Ok(false) => Overlap::Proven,
        Ok(true) => Overlap::NotProven,
        Err(_) => {
            drop(d.recent_error_message());
            Overlap::Unknown
        }
    }
}

/// A run's `StatusRead` from its timing buffer and status header as read (`bytes`: the
/// timing buffer, then the header in `layout`), with what the executor measured: event
/// timestamps, where there are some, stand in for the timing buffer's start and end.
fn status_read(
    run: RunId,
    lease: Lease,
    layout: HeaderLayout,
    bytes: &[u8],
    measured: Measured,
) -> Result<Event, DriverError> {
    let (timing, header) = bytes.split_at(TIMING_BYTES.min(bytes.len()));
    let status = status_latch::decode(layout, header)
        .map_err(|source| DriverError::Decode { run, source })?;
    let (start, end) = timing.split_at(timing.len().min(8));
    let timing = match measured.timestamps {
        Some((start_ns, end_ns)) => DeviceTiming {
            start_ns,
            end_ns,
            source: TimingSource::EventTimestamps,
            overlap: measured.overlap,
        },
        None => DeviceTiming {
            start_ns: u64::from_le_bytes(start.try_into().unwrap_or([0; 8])),
            end_ns: u64::from_le_bytes(end.try_into().unwrap_or([0; 8])),
            source: TimingSource::TimingBuffer,
            overlap: measured.overlap,
        },
    };
    Ok(Event::StatusRead {
        run,
        lease,
        status,
        timing,
    })
}

/// The arm of a launch with copies on the streams, in order: the readback filled with
/// `0xFF` (so a copy that never lands reads as not landed, never as the slot's last header),
/// the arm copy and the "armed" record on the AICore stream, and the AICPU stream's wait
/// for it. Any failure is the arm's (nothing of the run reached a kernel yet).
fn arm_on_stream(
    d: &mut dyn PinnedCopies,
    slot: &SlotResources,
    pinned: Pinned,
    aicpu: StreamHandle,
    aicore: StreamHandle,
) -> Result<(), AclCode> {
    d.write_host(pinned.host.at(PINNED_READBACK_OFFSET), &NOT_LANDED)?;
    d.memcpy_to_device_async(
        slot.handshake(),
        pinned.host.at(PINNED_ARM_OFFSET),
        ARM_BYTES,
        aicore,
    )?;
    d.record_event(pinned.armed, aicore)?;
    d.stream_wait_event(aicpu, pinned.armed)
}

/// The device's copies on the streams ([`Device::pinned_copies`]), asked for only on the
/// `CopyPath::OnStream` path. A device without them answers each call the path would have
/// made with `207000` (`ACL_ERROR_RT_FEATURE_NOT_SUPPORT`), having touched nothing, so its
/// text about the last failed call is whatever it was.
fn pinned_copies<D: Device>(d: &mut D) -> Result<&mut dyn PinnedCopies, AclCode> {
    d.pinned_copies().ok_or(AclCode::RtFeatureNotSupport)
}
