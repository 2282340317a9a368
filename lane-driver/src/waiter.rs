//! Device waits: the [`DeviceWait`] a lane asks for, the [`CompletionWaiter`] that makes it on
//! a thread of its own, and [`run_device_wait`], the one wait loop. The [`Driver`](crate::Driver)
//! runs it on the device itself ([`OnDevice`]); lane-service on its waiter thread, so the lane
//! thread never blocks in a device wait (L-16, L-18), or on a driving caller with no lock
//! held (L-23, [`Reach`]).

use lane_core::status_latch::{
    AclCode, Boundary, DeviceVerdict, Evidence, RECORD_BYTES, RecordRead, VerdictChannel,
    decode_record, needs_device_verdict,
};
use lane_core::stream_pair::StreamHandle;
use lane_core::{Event, Lease, RunId, Timestamp};

use crate::answer::Answer;
use crate::device::{Device, DevicePtr, EventHandle};
use crate::driver::{HEADER_BYTES, TIMING_BYTES};
use crate::executor::Wait;

/// Bytes of a [`Readback`]: a slot's timing buffer and status header region, up to the result
/// record. The status copy on the stream takes as many (enqueued before the layout is known).
pub const READBACK_BYTES: usize = TIMING_BYTES + HEADER_BYTES;

/// A run's timing buffer and status header, read in the same copy as its result record, so
/// the status read needs no device call ([`Executor::keep_readback`](crate::Executor::keep_readback)).
/// Both are final once the boundary completed; one copy instead of two saves a driver round
/// trip per run (measured-figures.md A1: ~9.5 us).
#[derive(Clone, PartialEq, Eq)]
pub struct Readback {
    /// The run's lease: the bytes answer only this run's status read.
    pub lease: Lease,
    /// The slot's `[timing buffer, status header)` region, as read.
    pub bytes: [u8; READBACK_BYTES],
}

impl core::fmt::Debug for Readback {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Readback")
            .field("lease", &self.lease)
            .field("bytes", &format_args!("[{} bytes]", self.bytes.len()))
            .finish()
    }
}

/// How long past a wait's own bound the lane thread waits for the waiter's answer before it
/// answers itself: one event wait slice (an overrun is at most one, device-truth §5) and a
/// second of margin. Only a waiter stuck in a call that ignores its timeout is overtaken
/// (its run ends with a host wait timeout; a drain proves nothing, SPEC §5.3).
pub const WAITER_GRACE_NS: u64 = EVENT_WAIT_SLICE_NS + 1_000_000_000;

/// The longest slice of the device's event wait (device-truth §5): a wait may return up to a
/// slice after its timeout.
pub const EVENT_WAIT_SLICE_NS: u64 = 5_000_000_000;

// A waiter whose event wait overran by one slice is never overtaken.
const _: () = assert!(WAITER_GRACE_NS > EVENT_WAIT_SLICE_NS);

/// One blocking device wait, made on the lane thread and answered by [`run_device_wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceWait {
    /// The awaited run's completion and the evidence for its verdict (L-6, L-8, L-8a).
    Completion {
        /// The awaited run.
        run: RunId,
        /// Its lease.
        lease: Lease,
        /// The run's boundary: completes once both kernels exited.
        boundary: EventHandle,
        /// The slot's result record region.
        record: DevicePtr,
        /// The slot's timing buffer ([`READBACK_BYTES`] before `record`) when the status is
        /// read in the record's copy ([`Wait::Completed`]); `None`: the record alone.
        readback: Option<DevicePtr>,
        /// The run's epoch (the record counts only when stamped with it).
        epoch: u64,
        /// The pair the run was launched on, `[aicpu, aicore]`: what the device verdict
        /// synchronizes.
        streams: [StreamHandle; 2],
        /// The profile's verdict channel.
        channel: VerdictChannel,
        /// The run's deadline.
        deadline: Timestamp,
        /// The device verdict's bound, counted from the boundary's completion, so a long
        /// successor cannot time out this run's verdict (L-8a).
        sync_bound_ns: u64,
        /// The failed fence call's code: the device verdict alone answers (L-5, L-8).
        unfenced: Option<AclCode>,
    },
    /// Recovery step 1: `aclrtSynchronizeDeviceWithTimeout`, whose result proves nothing.
    Drain {
        /// The recovery attempt.
        attempt: u8,
        /// The drain's bound (ns).
        timeout_ns: u64,
    },
}

impl DeviceWait {
    /// The latest time the lane thread waits for this wait's answer, handed out at `issued`
    /// (own bound plus [`WAITER_GRACE_NS`]); past it, [`answer_at_bound`](Self::answer_at_bound).
    #[must_use]
    pub const fn bound(&self, issued: Timestamp) -> Timestamp {
        let own = match *self {
            Self::Completion { deadline, sync_bound_ns, .. } => {
                deadline.0.saturating_add(sync_bound_ns)
            }
            Self::Drain { timeout_ns, .. } => issued.0.saturating_add(timeout_ns),
        };
        Timestamp(own.saturating_add(WAITER_GRACE_NS))
    }

    /// The answer the lane thread gives itself at `now`, past the [`bound`](Self::bound): the
    /// run's deadline passed (a host wait timeout), or the drain is over.
    #[must_use]
    pub const fn answer_at_bound(&self, now: Timestamp) -> Wait {
        match *self {
            Self::Completion { .. } => Wait::Expired(now),
            Self::Drain { attempt, .. } => {
                Wait::Answered(Answer::new(Event::DeviceDrained { attempt }))
            }
        }
    }
}

/// The device calls a completion waiter makes on a thread other than the lane thread, so the
/// lane thread stays free while a run executes (L-18). Handed out by
/// [`Device::completion_waiter`]; [`bind`](Self::bind) is called before every wait.
pub trait CompletionWaiter {
    /// Binds the calling thread to the lane's device and context if it is not bound since the
    /// last force reset (`aclrtSetDevice`). By default there is nothing to bind.
    /// Its failure fails the wait (an attach failure, SPEC §5.4).
    fn bind(&mut self) -> Result<(), AclCode> {
        Ok(())
    }
    /// The lane's clock, read on this thread: the same clock as [`Device::now`].
    fn now(&mut self) -> Timestamp;
    /// `aclrtSynchronizeEventWithTimeout(e, ms)` on this thread, as
    /// [`Device::synchronize_event`]. `507047` on timeout.
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode>;
    /// `aclrtQueryEventStatus` on this thread, as [`Device::query_event`] (default `207000`).
    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        let _ = event;
        Err(AclCode::RtFeatureNotSupport)
    }
    /// `aclrtSynchronizeStreamWithTimeout(stream, ms)` on this thread, as
    /// [`Device::synchronize_stream`]: the device verdict.
    /// Fails with the stream's sticky code, or `507046` on timeout.
    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode>;
    /// `aclrtMemcpy(.., ACL_MEMCPY_DEVICE_TO_HOST)` on this thread, as
    /// [`Device::memcpy_from_device`]: the result record's read right after the boundary.
    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode>;
    /// `aclrtSynchronizeDeviceWithTimeout(ms)` on this thread, as
    /// [`Device::synchronize_device`]. Its result proves nothing.
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode>;
    /// `aclGetRecentErrMsg` on this thread after a failed wait (ACL keeps it per thread).
    fn recent_error_message(&mut self) -> Option<String> {
        None
    }
}

/// A device making its own waits: the single-thread [`Driver`](crate::Driver)'s path, on the
/// thread that owns the device (already bound).
#[derive(Debug)]
pub struct OnDevice<'a, D: Device>(pub &'a mut D);

impl<D: Device> CompletionWaiter for OnDevice<'_, D> {
    fn now(&mut self) -> Timestamp {
        self.0.now()
    }

    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.0.synchronize_event(event, timeout_ms)
    }

    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        self.0.query_event(event)
    }

    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.0.synchronize_stream(stream, timeout_ms)
    }

    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        self.0.memcpy_from_device(dst, src)
    }

    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.0.synchronize_device(timeout_ms)
    }

    fn recent_error_message(&mut self) -> Option<String> {
        self.0.recent_error_message()
    }
}

/// How a wait is made: blocking, as the completion waiter makes every wait, or as a call of
/// a caller that drives the lane (L-23).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The completion waiter's: block in the device wait, bounded by the wait's own bound.
    Waiter,
    /// A caller's `wait`: as [`Reach::Waiter`], also bounded by `cap`; cut short there it
    /// answers [`Wait::Pending`] (the run stays live).
    Wait {
        /// The caller's own bound, if earlier than the wait's.
        cap: Option<Timestamp>,
    },
    /// A caller's `poll`: look at the boundary ([`CompletionWaiter::query_event`]); not
    /// complete (or no look) answers [`Wait::Pending`], complete goes on as [`Reach::Waiter`].
    Look,
}

/// Makes `wait` through `waiter` ([`run_device_wait_as`] with [`Reach::Waiter`]): binds, then
/// a completion waits on the boundary within its deadline ([`Wait::Expired`] only if a last
/// look finds it incomplete), reads and decodes the record, and where the record does not
/// decide ([`needs_device_verdict`]) synchronizes the AICPU then AICore stream within the
/// verdict's bound (L-8, L-8a). A drain answers `DeviceDrained` whatever it returned (SPEC
/// §5.3). A failed wait's answer carries [`CompletionWaiter::recent_error_message`].
pub fn run_device_wait<W: CompletionWaiter + ?Sized>(waiter: &mut W, wait: &DeviceWait) -> Wait {
    run_device_wait_as(waiter, wait, Reach::Waiter)
}

/// [`run_device_wait`], made as `reach` says. Past the deadline, a look on a device without
/// [`CompletionWaiter::query_event`] falls back to a 1 ms event wait (L-23).
pub fn run_device_wait_as<W: CompletionWaiter + ?Sized>(
    waiter: &mut W,
    wait: &DeviceWait,
    reach: Reach,
) -> Wait {
    match wait_event(waiter, wait, reach) {
        Made::Event(event, readback) => {
            let text = if event_failed(&event) { waiter.recent_error_message() } else { None };
            let answer = Answer { event, text };
            match readback {
                Some(readback) => Wait::Completed { answer, readback },
                None => Wait::Answered(answer),
            }
        }
        Made::Expired(at) => Wait::Expired(at),
        Made::Pending => Wait::Pending,
    }
}

/// What [`wait_event`]'s calls came to (not boxed: turned into a [`Wait`] at once).
#[allow(clippy::large_enum_variant)]
enum Made {
    /// The event that answers the wait, with the status bytes read in the record's copy, if
    /// asked for and read.
    Event(Event, Option<Readback>),
    /// The deadline was found passed at this time.
    Expired(Timestamp),
    /// Not complete yet, and the caller does not wait longer (its cap, or a look).
    Pending,
}

/// [`run_device_wait_as`]'s calls.
fn wait_event<W: CompletionWaiter + ?Sized>(
    waiter: &mut W,
    wait: &DeviceWait,
    reach: Reach,
) -> Made {
    match *wait {
        DeviceWait::Completion {
            run,
            lease,
            boundary,
            record,
            readback,
            epoch,
            streams,
            channel,
            deadline,
            sync_bound_ns,
            unfenced,
        } => {
            let failed = |code| Made::Event(Event::CompletionFailed { run, lease, code }, None);
            if let Err(code) = waiter.bind() {
                return failed(code);
            }
            let now = waiter.now();
            if now >= deadline {
                // One look first: a run whose boundary completed before anybody looked (a
                // caller that drives the lane and called late) is not a host wait timeout.
                if unfenced.is_some() || !looked(waiter, boundary, reach != Reach::Waiter) {
                    return Made::Expired(now);
                }
            } else if let Some(code) = unfenced {
                // Its events prove nothing (a never-recorded event even waits as success):
                // the pair's synchronize decides, bounded by the deadline.
                let evidence = Evidence {
                    channel,
                    boundary: Boundary::Unfenced(code),
                    record: RecordRead::NotRead,
                    device: Some(device_verdict(waiter, streams, deadline)),
                };
                let event = Event::Completed { run, lease, evidence };
                return Made::Event(event, None);
            } else {
                match reach {
                    // A look that cannot tell (not supported, or failed) leaves the
                    // completion to a blocking wait, which answers it with the real code.
                    Reach::Look => {
                        if !matches!(waiter.query_event(boundary), Ok(true)) {
                            return Made::Pending;
                        }
                    }
                    // A timeout at the whole remainder (507047) is a failed wait; at the
                    // caller's earlier cap it only cuts the wait short.
                    Reach::Waiter | Reach::Wait { .. } => {
                        let until = match reach {
                            Reach::Wait { cap: Some(cap) } => cap.min(deadline),
                            _ => deadline,
                        };
                        match waiter.synchronize_event(boundary, remaining_ms(until, now)) {
                            Ok(()) => {}
                            Err(AclCode::RtEventSyncTimeout) if until < deadline => {
                                return Made::Pending;
                            }
                            Err(code) => return failed(code),
                        }
                    }
                }
            }
            // L-8a: the synchronize waits for the runs queued behind too, so its bound starts
            // here, not at the await.
            let sync_deadline = waiter.now().after_ns(sync_bound_ns);
            let (record, readback) = match channel {
                VerdictChannel::Record => match readback.filter(|at| adjacent(*at, record)) {
                    Some(at) => read_record_with_status(waiter, at, lease, epoch),
                    None => (read_record(waiter, record, epoch), None),
                },
                VerdictChannel::StreamSync => (RecordRead::NotRead, None),
            };
            let mut evidence =
                Evidence { channel, boundary: Boundary::Complete, record, device: None };
            if needs_device_verdict(&evidence) {
                evidence.device = Some(device_verdict(waiter, streams, sync_deadline));
            }
            let event = Event::Completed { run, lease, evidence };
            Made::Event(event, readback)
        }
        DeviceWait::Drain { attempt, timeout_ns } => {
            Made::Event(drain(waiter, attempt, timeout_ns), None)
        }
    }
}

/// Whether `boundary` is complete, without waiting for it: its query; where the device has
/// none (207000) and `or_wait` (a caller's look past the deadline), an event wait of 1 ms.
fn looked<W: CompletionWaiter + ?Sized>(
    waiter: &mut W,
    boundary: EventHandle,
    or_wait: bool,
) -> bool {
    match waiter.query_event(boundary) {
        Ok(done) => done,
        Err(AclCode::RtFeatureNotSupport) if or_wait => {
            waiter.synchronize_event(boundary, 1).is_ok()
        }
        Err(_) => false,
    }
}

/// What is left of `deadline` at `now`, in ACL's milliseconds ([`ms`]).
fn remaining_ms(deadline: Timestamp, now: Timestamp) -> i32 {
    ms(deadline.since(now))
}

/// `ns` in the milliseconds ACL takes: rounded up, at least 1 (0 is "refused" for a stream
/// synchronize), at most `i32::MAX`.
fn ms(ns: u64) -> i32 {
    i32::try_from(ns.div_ceil(1_000_000)).unwrap_or(i32::MAX).max(1)
}

/// The result record's read, right after the boundary: one device-to-host copy, decoded for
/// the run's epoch (an earlier run's record reads as never published).
fn read_record<W: CompletionWaiter + ?Sized>(
    waiter: &mut W,
    record: DevicePtr,
    epoch: u64,
) -> RecordRead {
    let mut bytes = [0; RECORD_BYTES];
    match waiter.memcpy_from_device(&mut bytes, record) {
        Ok(()) => RecordRead::Read(decode_record(&bytes, epoch)),
        Err(code) => RecordRead::Failed(code),
    }
}

/// Whether the status bytes start [`READBACK_BYTES`] before the record, so one copy reads
/// both (the slot layout, `lane_driver::HANDSHAKE_OFFSET`).
fn adjacent(readback: DevicePtr, record: DevicePtr) -> bool {
    record.0.checked_sub(readback.0) == u64::try_from(READBACK_BYTES).ok()
}

/// The record's read with the status bytes in front of it, in one copy from `at` (the slot's
/// timing buffer); a failed copy keeps nothing (the status read makes its own).
fn read_record_with_status<W: CompletionWaiter + ?Sized>(
    waiter: &mut W,
    at: DevicePtr,
    lease: Lease,
    epoch: u64,
) -> (RecordRead, Option<Readback>) {
    let mut bytes = [0; READBACK_BYTES + RECORD_BYTES];
    if let Err(code) = waiter.memcpy_from_device(&mut bytes, at) {
        return (RecordRead::Failed(code), None);
    }
    let (status, record) = bytes.split_at(READBACK_BYTES);
    let mut readback = Readback { lease, bytes: [0; READBACK_BYTES] };
    readback.bytes.copy_from_slice(status);
    (RecordRead::Read(decode_record(record, epoch)), Some(readback))
}

/// The device verdict (L-8): a bounded synchronize of the AICPU stream, then the AICore
/// stream, each code answered for the lane to attribute (L-8a). The AICore stream is
/// synchronized after an AICPU code too (that may be another run's sticky status), but not
/// after the AICPU synchronize's timeout: the bound is spent.
fn device_verdict<W: CompletionWaiter + ?Sized>(
    waiter: &mut W,
    [aicpu, aicore]: [StreamHandle; 2],
    deadline: Timestamp,
) -> DeviceVerdict {
    let timeout = AclCode::RtStreamSyncTimeout;
    let mut synchronize = |stream| {
        let now = waiter.now();
        if now >= deadline {
            return Some(timeout);
        }
        waiter.synchronize_stream(stream, remaining_ms(deadline, now)).err()
    };
    let aicpu = synchronize(aicpu);
    let aicore = match aicpu {
        Some(code) if code == timeout => None,
        _ => synchronize(aicore),
    };
    if aicpu.is_none() && aicore.is_none() {
        DeviceVerdict::Clean
    } else {
        DeviceVerdict::Returned { aicpu, aicore }
    }
}

/// Recovery's bounded drain through `waiter`: `DeviceDrained` whatever the call (or the bind)
/// returned; the drain proves nothing, the probe decides (SPEC §5.3).
pub(crate) fn drain<W: CompletionWaiter + ?Sized>(
    waiter: &mut W,
    attempt: u8,
    timeout_ns: u64,
) -> Event {
    if waiter.bind().is_ok() {
        let _ = waiter.synchronize_device(ms(timeout_ns));
    }
    Event::DeviceDrained { attempt }
}

/// Whether `wait` answered a failed device call, whose text [`run_device_wait`] reads
/// ([`CompletionWaiter::recent_error_message`]).
#[must_use]
pub const fn wait_failed(wait: &Wait) -> bool {
    match wait {
        Wait::Answered(answer) | Wait::Completed { answer, .. } => event_failed(&answer.event),
        Wait::Expired(_) | Wait::Pending => false,
    }
}

/// Whether `event`, a wait's answer, reports a failed wait: a failed event wait or bind, or a
/// completion whose record read or device verdict failed.
pub(crate) const fn event_failed(event: &Event) -> bool {
    match event {
        Event::CompletionFailed { .. } => true,
        Event::Completed { evidence, .. } => {
            matches!(evidence.record, RecordRead::Failed(_))
                || matches!(evidence.device, Some(device) if device.code().is_some())
        }
        _ => false,
    }
}
