//! The [`Runner`] trait: the embedding runtime's work for a run. On hardware the runtime owns
//! kernels and host buffers, so the lane asks it to prepare, launch, finalise and upload;
//! the lane's own calls are the [`Device`]'s.

use lane_core::status_latch::{AclCode, ReturnCode, RuntimeCode};
use lane_core::stream_pair::StreamHandle;
use lane_core::{Cause, CodeRef, Effect, Event, FinaliseFailure, Lease, RunId, SlotId, Verdict};

use crate::answer::Answer;
use crate::device::{Device, DevicePtr};

/// What a run's two kernels receive: its identity and its slot's device buffers (L-13),
/// three regions of the slot's one allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunArgs {
    /// The run.
    pub run: RunId,
    /// Its slot.
    pub slot: SlotId,
    /// The slot's status header (the runtime latches its codes here).
    pub status_header: DevicePtr,
    /// The slot's timing buffer: device start and end, two little-endian u64 nanoseconds.
    pub timing: DevicePtr,
    /// The slot's handshake region (AICore workers report here; the AICPU kernel waits on it).
    pub handshake: DevicePtr,
    /// The slot's result record region ([`RECORD_BYTES`](lane_core::status_latch::RECORD_BYTES)):
    /// the device side publishes the run's record here, stamped with [`epoch`](Self::epoch),
    /// `published` last (L-8); a run is `Ok` only on its own published ok record.
    pub record: DevicePtr,
    /// The run's epoch: process-unique, never 0 (or `RunRequest::epoch`). A record counts only
    /// when its `published` word is this value.
    pub epoch: u64,
    /// The launch is queued behind a run still on the pair: only such a launch may be
    /// declined ([`AicoreLaunch::Declined`]).
    pub queued: bool,
}

/// What the runner's AICore launch did ([`Runner::try_launch_aicore`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AicoreLaunch {
    /// The AICore kernel is enqueued.
    Launched,
    /// The runner declined a queued launch (it cannot run beside the run ahead of it):
    /// nothing was enqueued, and the run launches again once the pair is empty. Declining a
    /// launch that is not queued fails the run, not started (207000).
    Declined,
}

/// Why the runner's prepare failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrepareError {
    /// The run cannot be prepared while its predecessor runs (`RUN_LANE_PREPARE_INCOMPATIBLE`):
    /// nothing was touched, and it is prepared again once the predecessor has its outcome.
    Incompatible,
    /// Preparation failed with this ACL code; the runner freed what it had allocated.
    Failed(AclCode),
    /// Preparation returned one of the runtime's latch codes, negated (-1..-999): terminal,
    /// classified as the same code latched. The runner freed what it had allocated.
    Runtime(RuntimeCode),
}

impl From<ReturnCode> for PrepareError {
    /// A prepare's failure code: an ACL code, or a runtime latch code.
    fn from(code: ReturnCode) -> Self {
        match code {
            ReturnCode::Acl(code) => Self::Failed(code),
            ReturnCode::Runtime(code) => Self::Runtime(code),
        }
    }
}

/// How much of a runner's host work (prepare and finalise, which touch no stream) may run on
/// host workers ([`HostWorker`]), as the runner declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Concurrency {
    /// Whether prepare and finalise may run on host worker threads.
    pub off_lane_thread: bool,
    /// How many prepares may run at once, each on its own slot (at least 1). The lane's
    /// prepare window is the smaller of this and the profile's.
    pub prepares_at_once: u8,
}

impl Concurrency {
    /// Everything on the lane thread, one prepare at a time (the default).
    pub const LANE_THREAD: Self = Self { off_lane_thread: false, prepares_at_once: 1 };
}

impl Default for Concurrency {
    fn default() -> Self {
        Self::LANE_THREAD
    }
}

/// A runner's prepare and finalise on a host worker thread, made and owned by that thread.
pub trait HostWorker: Send {
    /// Binds the calling worker thread to the device if it is not bound, before every job;
    /// an error hands the job back to the lane thread. By default there is nothing to bind.
    fn bind(&mut self) -> Result<(), AclCode> {
        Ok(())
    }
    /// As [`Runner::prepare_run`].
    fn prepare_run(
        &mut self,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError>;
    /// As [`Runner::finalise_run`].
    fn finalise_run(
        &mut self,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure>;
    /// As [`Runner::finalise_verdict`]: by default [`finalise_run`](Self::finalise_run) with
    /// `copy_back` (`verdict.is_ok()`).
    fn finalise_verdict(
        &mut self,
        run: RunId,
        slot: SlotId,
        verdict: Verdict,
    ) -> Result<(), FinaliseFailure> {
        self.finalise_run(run, slot, verdict.is_ok())
    }
    /// The device's text about this worker's latest failed prepare or finalise
    /// (`aclGetRecentErrMsg`, kept per thread); taken. By default none.
    fn recent_error_message(&mut self) -> Option<String> {
        None
    }
}

/// The embedding runtime's work for a run: host preparation, the two kernel launches,
/// finalisation, code upload. Each method gets the device, to launch on the lane's streams.
pub trait Runner<D: Device + ?Sized> {
    /// Prepare `run` into `slot` (host runtime buffer, arena, args upload). Touches no stream.
    fn prepare_run(
        &mut self,
        device: &mut D,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError>;
    /// `rtKernelLaunchWithHandleV2` on the AICore stream: the run's AICore workers. A
    /// failure is an ACL code, or one of the runtime's latch codes negated (its latched
    /// failure; [`ReturnCode`]).
    fn launch_aicore(
        &mut self,
        device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode>;
    /// `rtsLaunchCpuKernel` on the AICPU stream: the run's scheduler. A failure is as
    /// [`launch_aicore`](Self::launch_aicore)'s, and orphans the AICore kernel (L-5, poison).
    fn launch_aicpu(
        &mut self,
        device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode>;
    /// Copy outputs back (when `copy_back`), validate, free per-run resources.
    fn finalise_run(
        &mut self,
        device: &mut D,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure>;
    /// Upload published AICore code. A failure is an ACL code, or one of the runtime's latch
    /// codes negated ([`ReturnCode`]); either fails only the publication.
    fn upload_code(&mut self, device: &mut D, code: CodeRef) -> Result<(), ReturnCode>;

    /// The AICore launch the executor makes, which may decline a queued launch
    /// ([`AicoreLaunch::Declined`]); by default [`launch_aicore`](Self::launch_aicore).
    fn try_launch_aicore(
        &mut self,
        device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<AicoreLaunch, ReturnCode> {
        self.launch_aicore(device, stream, args).map(|()| AicoreLaunch::Launched)
    }

    /// The run is launched (both kernels accepted): called once, right after its launch; the
    /// runtime publishes the run's acceptance here. By default nothing.
    fn on_launched(&mut self, device: &mut D, args: &RunArgs) {
        let _ = (device, args);
    }

    /// Finalise `run` knowing its verdict so far; the executor calls this one. By default
    /// [`finalise_run`](Self::finalise_run) with `copy_back` = `verdict.is_ok()`.
    fn finalise_verdict(
        &mut self,
        device: &mut D,
        run: RunId,
        slot: SlotId,
        verdict: Verdict,
    ) -> Result<(), FinaliseFailure> {
        self.finalise_run(device, run, slot, verdict.is_ok())
    }

    /// The runtime owns recovery (L-24) and the device is poisoned (by `origin`'s failure, or
    /// a fault notice): every item has its verdict and the lane makes no device call until
    /// the runtime reports its reset. Called once per poison; the lane's handles are alive
    /// during the call and forgotten after it. By default nothing.
    fn on_poison(&mut self, device: &mut D, origin: Option<RunId>, cause: Cause) {
        let _ = (device, origin, cause);
    }

    /// In-place recovery (L-24) is about to force-reset the device: quiesce the runtime's own
    /// device users. Called once per recovery. By default nothing.
    fn before_reset(&mut self, device: &mut D, origin: Option<RunId>, cause: Cause) {
        let _ = (device, origin, cause);
    }

    /// In-place recovery ended: `recovered` (rebuild what the reset destroyed), or `false`
    /// (the lane is lost). Called once per recovery. By default nothing.
    fn after_reset(&mut self, device: &mut D, recovered: bool) {
        let _ = (device, recovered);
    }

    /// How much of this runner's host work may leave the lane thread; by default none.
    fn concurrency(&self) -> Concurrency {
        Concurrency::LANE_THREAD
    }

    /// The text about this runner's latest failed call, read on the calling thread right
    /// after it failed, before [`Device::recent_error_message`]; taken. By default none.
    fn recent_error_message(&mut self) -> Option<String> {
        None
    }
}

/// The event that answers a `PrepareRun` with the runner's `result` (the lane thread's and a
/// worker's prepare answer alike).
pub(crate) const fn prepare_answer(
    run: RunId,
    lease: Lease,
    result: Result<(), PrepareError>,
) -> Event {
    match result {
        Ok(()) => Event::Prepared { run, lease },
        Err(PrepareError::Incompatible) => Event::PrepareIncompatible { run, lease },
        Err(PrepareError::Failed(code)) => {
            Event::PrepareFailed { run, lease, code: ReturnCode::Acl(code) }
        }
        Err(PrepareError::Runtime(code)) => {
            Event::PrepareFailed { run, lease, code: ReturnCode::Runtime(code) }
        }
    }
}

/// The event that answers a `FinaliseRun` with the runner's `result`.
pub(crate) const fn finalise_answer(
    run: RunId,
    lease: Lease,
    result: Result<(), FinaliseFailure>,
) -> Event {
    match result {
        Ok(()) => Event::Finalised { run, lease },
        Err(failure) => Event::FinaliseFailed { run, lease, failure },
    }
}

/// Whether `effect` is runner host work a [`HostWorker`] may run off the lane thread
/// (`PrepareRun`, `FinaliseRun`).
#[must_use]
pub const fn is_host_work(effect: &Effect) -> bool {
    matches!(effect, Effect::PrepareRun { .. } | Effect::FinaliseRun { .. })
}

/// Runs one piece of runner host work on `worker` and answers it as the
/// [`Executor`](crate::Executor) would, with the worker's text about a failure; `None` for an
/// effect that is not host work ([`is_host_work`]).
pub fn run_host_work<W: HostWorker + ?Sized>(worker: &mut W, effect: Effect) -> Option<Answer> {
    let event = host_work_event(worker, effect)?;
    let failed = matches!(event, Event::PrepareFailed { .. } | Event::FinaliseFailed { .. });
    let text = if failed { worker.recent_error_message() } else { None };
    Some(Answer { event, text })
}

/// [`run_host_work`]'s calls: the event that answers `effect`.
fn host_work_event<W: HostWorker + ?Sized>(worker: &mut W, effect: Effect) -> Option<Event> {
    match effect {
        Effect::PrepareRun { run, lease, diagnostics } => {
            Some(prepare_answer(run, lease, worker.prepare_run(run, lease.slot, diagnostics)))
        }
        Effect::FinaliseRun { run, lease, verdict, .. } => {
            Some(finalise_answer(run, lease, worker.finalise_verdict(run, lease.slot, verdict)))
        }
        _ => None,
    }
}
