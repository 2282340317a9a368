//! A slot's device resources: their layout, their creation at the slot's first launch, and
//! their release at finalisation and close.

use lane_core::status_latch::{AclCode, RECORD_BYTES};
use lane_core::stream_pair::StreamHandle;
use lane_core::{CopyPath, Lease, MAX_SLOTS, Overlap};

use super::Executor;
use crate::device::{Device, DevicePtr, EventHandle, HostPtr, PinnedCopies};
use crate::driver::{
    ARM_BYTES, HANDSHAKE_OFFSET, HEADER_OFFSET, RECORD_OFFSET, SLOT_BYTES, TIMING_OFFSET,
};
use crate::observer::{Observation, Observer, Release};
use crate::runner::Runner;
use crate::waiter::READBACK_BYTES;

/// Where the arm's source (zeros) sits in a slot's pinned host buffer.
pub(super) const PINNED_ARM_OFFSET: usize = 0;
/// Where the status read lands in a slot's pinned host buffer: after the arm's source, so a
/// readback never changes what the next arm copies.
pub(super) const PINNED_READBACK_OFFSET: usize = PINNED_ARM_OFFSET + ARM_BYTES;
/// Bytes of a slot's pinned host buffer.
pub(super) const PINNED_BYTES: usize = PINNED_READBACK_OFFSET + READBACK_BYTES;
/// The readback's fill before each launch: a timing buffer of all `0xFF` is one no kernel
/// and no arm ever leaves, so it means the copy on the stream never landed.
pub(super) const NOT_LANDED: [u8; READBACK_BYTES] = [0xFF; READBACK_BYTES];
/// What the synchronous arm writes: the handshake, timing buffer and status header cleared,
/// so no latch outlives its run.
pub(super) const ZEROS: [u8; ARM_BYTES] = [0; ARM_BYTES];

/// A slot's resources for copies on the streams ([`CopyPath::OnStream`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Pinned {
    /// The slot's pinned host buffer ([`PINNED_BYTES`]): the arm's zeros, then the readback.
    pub(super) host: HostPtr,
    /// Recorded on the AICore stream after the arm copy; the AICPU stream waits for it, so
    /// the AICPU kernel never reads a handshake the arm has not cleared yet.
    pub(super) armed: EventHandle,
    /// The code of a readback copy whose enqueue failed at this slot's last launch: the
    /// status read answers it (the synchronous read's stage), not the launch.
    pub(super) read_failed: Option<AclCode>,
}

/// Per-slot device resources, created at the slot's first launch and reused by every run
/// that leases the slot (L-13): two fence events and one allocation (laid out as
/// [`HANDSHAKE_OFFSET`] shows); with copies on the streams also [`Pinned`].
#[derive(Clone, Copy, Debug)]
pub(super) struct SlotResources {
    /// `[boundary, core_done]`: the boundary is recorded on the AICPU stream behind a wait on
    /// `core_done`, which is recorded on the AICore stream after its kernel (L-5). Reused by
    /// every run of the slot (`ACL_EVENT_SYNC` events re-record without a reset).
    pub(super) events: [EventHandle; 2],
    /// Whether each event was recorded since the slot was last released (a never-recorded
    /// event waits as success, so the driver tracks records itself).
    pub(super) recorded: [bool; 2],
    /// The run launched on this slot last: its epoch and the pair it went to (what the
    /// device verdict synchronizes).
    pub(super) launched: Option<Launched>,
    /// The slot's allocation ([`SLOT_BYTES`]).
    pub(super) buffer: DevicePtr,
    /// `Some` exactly with [`CopyPath::OnStream`].
    pub(super) pinned: Option<Pinned>,
    /// Where the device gives event timestamps ([`Device::event_timestamps`]): recorded on
    /// the AICore stream right before each run's AICore kernel, behind the wait on the
    /// predecessor's boundary, so its timestamp is the run's device start.
    pub(super) started: Option<EventHandle>,
    /// The proof of overlap of the run launched on this slot last, taken right after its
    /// launch calls returned (an event query of its predecessor's boundary).
    pub(super) overlap: Overlap,
}

impl SlotResources {
    pub(super) fn handshake(&self) -> DevicePtr {
        self.buffer.at(HANDSHAKE_OFFSET)
    }

    pub(super) fn timing(&self) -> DevicePtr {
        self.buffer.at(TIMING_OFFSET)
    }

    pub(super) fn header(&self) -> DevicePtr {
        self.buffer.at(HEADER_OFFSET)
    }

    pub(super) fn record(&self) -> DevicePtr {
        self.buffer.at(RECORD_OFFSET)
    }

    pub(super) fn boundary(&self) -> EventHandle {
        self.events[0]
    }

    pub(super) fn core_done(&self) -> EventHandle {
        self.events[1]
    }
}

/// A slot's last launch, as the completion wait needs it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Launched {
    /// The run's lease: a later launch waits on this slot's boundary, and a covered record is
    /// read from it, only for this lease.
    pub(super) lease: Lease,
    pub(super) epoch: u64,
    /// `[aicpu, aicore]`.
    pub(super) streams: [StreamHandle; 2],
}

impl<D: Device, R: Runner<D>> Executor<D, R> {
    /// The slot's resources, created (all or nothing) at its first use.
    pub(super) fn slot_resources<O: Observer>(
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

    /// Finalisation releases the slot's completion events for the next run (L-7): they count
    /// as never recorded until the next launch records them.
    pub(super) fn release_events(&mut self, lease: Lease) {
        if let Some(slot) = self.slots.get_mut(usize::from(lease.slot.0)).and_then(Option::as_mut) {
            slot.recorded = [false; 2];
        }
        if let Some(kept) = self.kept.get_mut(usize::from(lease.slot.0)) {
            *kept = None;
        }
        if let Some(ahead) = self.ahead.get_mut(usize::from(lease.slot.0)) {
            *ahead = None;
        }
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

/// The device's copies on the streams ([`Device::pinned_copies`]); without them each call
/// the `CopyPath::OnStream` path would make answers `207000`, touching nothing.
pub(super) fn pinned_copies<D: Device>(d: &mut D) -> Result<&mut dyn PinnedCopies, AclCode> {
    d.pinned_copies().ok_or(AclCode::RtFeatureNotSupport)
}
