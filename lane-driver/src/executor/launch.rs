//! The launch path (L-5, L-13): a run's arm, its two kernels and its fence, the arm made
//! ahead at its prepare, and the proof of overlap taken at launch.

use lane_core::status_latch::{AclCode, ReturnCode};
use lane_core::stream_pair::StreamHandle;
use lane_core::{LaunchStep, Lease, Overlap};

use super::slot::{
    Launched, NOT_LANDED, PINNED_ARM_OFFSET, PINNED_READBACK_OFFSET, Pinned, SlotResources, ZEROS,
    pinned_copies,
};
use super::{Executor, Launch, next_epoch};
use crate::device::{Device, EventHandle, LaunchContext, LaunchStage, PinnedCopies};
use crate::driver::ARM_BYTES;
use crate::observer::Observer;
use crate::runner::{AicoreLaunch, RunArgs, Runner};
use crate::waiter::READBACK_BYTES;

/// A slot's arm made at its run's prepare ([`Executor`]'s `arm_ahead`).
#[derive(Debug)]
pub(super) enum ArmedAhead {
    /// The handshake, timing buffer and status header are cleared: the launch skips its copy.
    Armed,
    /// The copy failed: the run's launch fails at its arm with this code and text.
    Failed { code: AclCode, text: Option<String> },
}

impl<D: Device, R: Runner<D>> Executor<D, R> {
    /// The launch order of L-5 and L-13. AICore stream: the arm (unless made at prepare,
    /// decision 0024), a wait on the boundary of the predecessor the lane names (`after`), the
    /// AICore kernel, `core_done`. AICPU stream: the AICPU kernel, a wait on `core_done`,
    /// (OnStream: the readback copy), the boundary. Both are submitted back to back. A
    /// failure before the AICore kernel is the arm's (`NotStarted`); a record or wait after a
    /// kernel was accepted leaves the run unfenced (`RecordEvent`, poison). The device is told
    /// each stage ([`Device::launch_context`]) and the launch's end.
    pub(super) fn launch<O: Observer>(
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
        let Launch { run, lease, aicpu, aicore, after, epoch } = *launch;
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
                self.slots.get(usize::from(prev.slot.0)).copied().flatten().filter(|slot| {
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
            d.stream_wait_event(aicore, boundary).map_err(|code| (LaunchStep::Arm, code.into()))?;
        }
        // Behind the wait, right before the AICore kernel: the run's device start.
        if let Some(started) = slot.started {
            d.record_event(started, aicore).map_err(|code| (LaunchStep::Arm, code.into()))?;
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
        let aicore_launch =
            r.try_launch_aicore(d, aicore, &args).map_err(|code| (LaunchStep::Aicore, code))?;
        if aicore_launch == AicoreLaunch::Declined {
            return Ok(AicoreLaunch::Declined);
        }
        d.launch_context(Some(LaunchContext { run, stage: LaunchStage::Kernels }));
        // From here a kernel is on a stream: a failed record or wait leaves the run unfenced,
        // and its wait is the device verdict on this pair, so the slot keeps the launch.
        if let Some(slot) = self.slots.get_mut(usize::from(lease.slot.0)).and_then(Option::as_mut) {
            slot.launched = Some(Launched { lease, epoch, streams: [aicpu, aicore] });
            slot.overlap = Overlap::Unknown;
        }
        let (d, r) = (&mut self.device, &mut self.runner);
        // Before the AICPU kernel: a failure here orphans the AICore kernel, as a failed AICPU
        // launch does (L-5: `Partial`, known now with its own code).
        d.record_event(slot.core_done(), aicore)
            .map_err(|code| (LaunchStep::CoreDone, code.into()))?;
        r.launch_aicpu(d, aicpu, &args).map_err(|code| (LaunchStep::Aicpu, code))?;
        // Both kernels are accepted: the proof of overlap, before anything else is enqueued.
        let overlap = overlap_at_launch(d, predecessor);
        if let Some(slot) = self.slots.get_mut(usize::from(lease.slot.0)).and_then(Option::as_mut) {
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
        d.stream_wait_event(aicpu, slot.core_done()).map_err(unfenced)?;
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
        if let Some(slot) = self.slots.get_mut(usize::from(lease.slot.0)).and_then(Option::as_mut) {
            slot.recorded = [true; 2];
            if let Some(pinned) = slot.pinned.as_mut() {
                pinned.read_failed = read_failed;
            }
        }
        Ok(())
    }

    /// Arms `lease`'s slot at its run's prepare, with synchronous copies and once the slot
    /// has its resources (decision 0024): the launch's first copy, made while the predecessor
    /// still runs (nothing of the slot's last run is live, L-13). A failure is kept for the
    /// run's launch, which reports it as its arm's; a finalise or a reset forgets it.
    pub(super) fn arm_ahead(&mut self, lease: Lease) {
        let idx = usize::from(lease.slot.0);
        let Some(resources) = self.slots.get(idx).copied().flatten() else {
            return;
        };
        if resources.pinned.is_some() {
            return;
        }
        let armed = match self.device.memcpy_to_device(resources.handshake(), &ZEROS) {
            Ok(()) => ArmedAhead::Armed,
            Err(code) => ArmedAhead::Failed { code, text: self.device.recent_error_message() },
        };
        if let Some(entry) = self.ahead.get_mut(idx) {
            *entry = Some((lease, armed));
        }
    }
}

/// The proof of overlap of a run whose kernels were both accepted: the `predecessor`'s
/// boundary still unfired is [`Overlap::Proven`], fired [`Overlap::NotProven`], a failed
/// query [`Overlap::Unknown`] (its text dropped); none is [`Overlap::NotQueued`].
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

/// The arm of a launch with copies on the streams: the readback filled with `0xFF` (a copy
/// that never lands reads as such), the arm copy and the "armed" record on the AICore
/// stream, and the AICPU stream's wait for it. Any failure is the arm's.
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
