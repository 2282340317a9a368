//! The status read (L-8, L-17) and the record read of a covered run (L-8a): the bytes read
//! back, decoded with what the executor measured of the run.

use lane_core::status_latch::{self, AclCode, HeaderLayout, RECORD_BYTES, RecordRead};
use lane_core::{DeviceTiming, Event, Lease, Overlap, RunId, TimingSource};

use super::Executor;
use super::slot::{NOT_LANDED, PINNED_READBACK_OFFSET, Pinned, SlotResources, pinned_copies};
use crate::device::Device;
use crate::driver::{DriverError, TIMING_BYTES};
use crate::runner::Runner;

impl<D: Device, R: Runner<D>> Executor<D, R> {
    /// The status read of L-8 and L-17: the timing buffer and the header, from the bytes the
    /// completion wait kept ([`Executor::keep_readback`]), else one synchronous copy, or the
    /// pinned readback (copies on the streams).
    pub(super) fn read_status(
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
            None => self.device.memcpy_from_device(&mut self.readback[..len], slot.timing()),
            Some(Pinned { read_failed: Some(code), .. }) => Err(code),
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
        Measured { overlap: slot.overlap, timestamps }
    }

    /// Reads the pinned readback (no device call). One still holding the launch's `0xFF` fill
    /// never landed (a sticky fault), so the synchronous read asks the device for the code.
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

    /// The result record of the run holding `lease`, read device-to-host and decoded for its
    /// epoch (L-8a: a run a synchronize covered). Not read when the slot's last launch is not
    /// that lease's (its kernels never reached a stream).
    pub(super) fn read_covered_record(&mut self, lease: Lease) -> RecordRead {
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
}

/// What the executor measured of a run, beside its timing buffer ([`Executor`]'s `measured`).
#[derive(Clone, Copy, Debug)]
struct Measured {
    overlap: Overlap,
    /// Device start and end from event timestamps, where the device gave them.
    timestamps: Option<(u64, u64)>,
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
    Ok(Event::StatusRead { run, lease, status, timing })
}
