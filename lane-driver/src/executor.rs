//! The [`Executor`]: owns the device, the runner and the slots' device resources, and turns
//! one lane effect into the one [`Answer`] that answers it, with no access to the lane: the
//! one code path from effect to device call, for every driver.

mod launch;
mod slot;
mod status;
mod wait;

use core::sync::atomic::{AtomicU64, Ordering};

use lane_core::status_latch::{AclCode, CoveredRead, VerdictChannel};
use lane_core::stream_pair::{DestroyMode, StreamHandle};
use lane_core::{
    CopyPath, Effect, Event, FaultNotice, Lease, MAX_SLOTS, Peers, RecoveryHook, RunId, Timestamp,
};

use self::launch::ArmedAhead;
use self::slot::SlotResources;
use crate::answer::Answer;
use crate::device::Device;
use crate::driver::{DriverError, PROBE_BYTES};
use crate::notice_ring::NoticeRead;
use crate::observer::Observer;
use crate::runner::{AicoreLaunch, Runner, finalise_answer, prepare_answer};
use crate::waiter::{OnDevice, READBACK_BYTES, Readback, drain, event_failed};

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

/// What a device wait ended with ([`Executor::wait`], [`run_device_wait`](crate::run_device_wait)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Wait {
    /// The wait has the event that answers it, with the device's text about a failed wait:
    /// feed it to the lane.
    Answered(Answer),
    /// A completion answered with the status bytes its record's copy read: give them to
    /// [`Executor::keep_readback`], then feed the answer. Not boxed: that would allocate per run.
    Completed {
        /// The answer to feed.
        answer: Answer,
        /// The run's timing buffer and status header, for its status read.
        readback: Readback,
    },
    /// The deadline passed at this time before the run completed: tell the lane
    /// (`Lane::handle_timeout`).
    Expired(Timestamp),
    /// Nothing was waited for (the lane awaits nothing, or no longer), or the run is not
    /// complete and a driving caller waits no longer ([`Reach`](crate::Reach)): the run stays
    /// live, and the dispatch machine hands the same wait out again.
    Pending,
}

/// Executes lane effects on a device through a runner, owning both and the slots' device
/// resources (L-13). It never reads or changes a lane, so a multi-threaded caller can
/// release its lane lock around every call made here (L-16).
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
        }
    }

    /// The next device fault notice from the process's ring that concerns this device
    /// ([`Device::notice_concerns`]), skipping the rest (L-19).
    pub fn next_notice(&mut self) -> Option<FaultNotice> {
        let ring = crate::notices();
        loop {
            match ring.read(&mut self.notice_cursor) {
                NoticeRead::Empty => return None,
                // Overwritten before this executor read them: nothing to give the lane.
                NoticeRead::Lost { .. } => {}
                NoticeRead::Notice(raw) => {
                    let code = AclCode::from_raw(raw.code).unwrap_or(AclCode::Unknown(raw.code));
                    let notice = FaultNotice { device: raw.device, stream_id: raw.stream_id, code };
                    if self.device.notice_concerns(&notice) {
                        return Some(notice);
                    }
                }
            }
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

    /// The runner, mutably.
    pub fn runner_mut(&mut self) -> &mut R {
        &mut self.runner
    }

    /// The device and the runner, consuming the executor.
    pub fn into_parts(self) -> (D, R) {
        (self.device, self.runner)
    }

    /// The text about the failed call behind `event` (the runner's, else the device's), if
    /// `event` reports a failed call; a success never reads (or allocates) a text.
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
        self.runner.recent_error_message().or_else(|| self.device.recent_error_message())
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
            Effect::PrepareRun { run, lease, diagnostics } => {
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
            Effect::LaunchRun { run, lease, aicpu, aicore, after, epoch } => {
                let launch = Launch { run, lease, aicpu, aicore, after, epoch };
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
                    Err((step, code)) => Event::LaunchFailed { run, lease, step, code },
                }
            }
            Effect::AwaitCompletion { run, lease, channel, sync_bound_ns, unfenced, .. } => {
                // The deadline is read from the lane at every wait.
                self.awaited = Some(Awaited { run, lease, channel, sync_bound_ns, unfenced });
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
                kept_text =
                    self.readback_text.get_mut(usize::from(lease.slot.0)).and_then(Option::take);
                self.read_status(run, lease, layout)?
            }
            Effect::FinaliseRun { run, lease, verdict, .. } => {
                let result = r.finalise_verdict(d, run, lease.slot, verdict);
                self.release_events(lease);
                finalise_answer(run, lease, result)
            }
            Effect::UploadCode { publication, code } => match r.upload_code(d, code) {
                Ok(()) => Event::Uploaded { publication },
                Err(code) => Event::UploadFailed { publication, code },
            },
            Effect::DrainDevice { attempt, timeout_ns } => {
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

    /// Whether the lane asked to await a run that no wait has answered yet.
    #[must_use]
    pub const fn is_awaiting(&self) -> bool {
        self.awaited.is_some()
    }

    /// `effect` goes to a host worker instead of [`execute`](Self::execute): does the
    /// executor's own part of it, no device call (a `FinaliseRun` releases the slot's
    /// completion events, L-7).
    pub fn hand_off(&mut self, effect: &Effect) {
        if let Effect::FinaliseRun { lease, .. } = effect {
            self.release_events(*lease);
        }
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
}
