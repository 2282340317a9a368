//! The [`Device`] trait: the ACL calls a lane makes on a device, one method per call in
//! ascend-cl.md §5 (streams, events, device memory, recovery); the runtime's work (kernels,
//! host buffers) is the [`Runner`](crate::Runner)'s. backend-sim and backend-acl implement
//! it; methods return the raw [`AclCode`] on failure and never interpret it.
//!
//! **The runtime's to implement (L-22).** A runtime that owns its device implements this
//! trait (with [`PinnedCopies`] and a [`CompletionWaiter`] where it has them) and hands it
//! to `lane_service::spawn`: the lane's rules hold whatever executes them. Its
//! `create_stream` may return a stream the runtime already owns; every stream the lane is
//! done with goes back through `destroy_stream` or `destroy_stream_force`. A C or C++
//! runtime does the same through lane-capi's `RunLaneDeviceOps`.

use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{FaultNotice, RunId, Timestamp};

use crate::waiter::CompletionWaiter;

/// An event handle, chosen by the backend (`aclrtEvent`); a plain value
/// ([`Device`'s handles](Device#handles)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventHandle(pub u64);

/// A device memory address, chosen by the backend (`void *devPtr`); a plain value
/// ([`Device`'s handles](Device#handles)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevicePtr(pub u64);

impl DevicePtr {
    /// The address `offset` bytes into this one (a field of an allocation).
    #[must_use]
    pub const fn at(self, offset: usize) -> Self {
        Self(self.0.wrapping_add(offset as u64))
    }
}

/// A pinned host memory address (`aclrtMallocHost`); only the backend that made it reads or
/// writes through it ([`PinnedCopies`]). A plain value ([`Device`'s handles](Device#handles)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPtr(pub u64);

impl HostPtr {
    /// The address `offset` bytes into this one (a field of an allocation).
    #[must_use]
    pub const fn at(self, offset: usize) -> Self {
        Self(self.0.wrapping_add(offset as u64))
    }
}

/// Where the [`Executor`](crate::Executor) is in one run's launch (L-5), told to the device
/// before the calls it covers ([`Device::launch_context`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchContext {
    /// The run being launched.
    pub run: RunId,
    /// Which part of its launch the next calls are.
    pub stage: LaunchStage,
}

/// The parts of a run's launch, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchStage {
    /// The slot's resources and its arm: a record here belongs to no run yet.
    Arm,
    /// From an accepted AICore kernel on.
    Kernels,
}

/// The ACL calls a lane makes on a device. One method, one ACL call; the copies on the
/// streams are [`PinnedCopies`]. Called from the driver's thread only, never while the lane
/// is borrowed (no device wait under a lane lock, L-16). The provided methods have defaults
/// that do without; lane-service needs [`Device::completion_waiter`].
///
/// # Handles
///
/// [`StreamHandle`], [`EventHandle`], [`DevicePtr`] and [`HostPtr`] are plain values: safe
/// code can make any of them. So the backend must answer a handle it did not issue, or no
/// longer holds (destroyed, freed, or issued before a force reset), with an error code,
/// never with undefined behaviour (backend-acl's `issued` table, the simulator's maps), and
/// no method here is `unsafe`.
pub trait Device {
    /// Host nanoseconds since the backend's epoch (virtual in the simulator, monotonic on
    /// hardware). The driver reads time only here.
    fn now(&mut self) -> Timestamp;

    /// `aclrtSetDevice`: bind the calling thread (again after every reset).
    fn set_device(&mut self) -> Result<(), AclCode>;
    /// `aclrtSynchronizeDeviceWithTimeout(ms)`: bounded drain before a force reset. Its result
    /// proves nothing about the device's health.
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode>;
    /// `aclrtResetDeviceForce`: every stream, event and device allocation is dead afterwards.
    fn reset_device_force(&mut self) -> Result<(), AclCode>;
    /// The device's own check that a reset left it usable, made after the lane's probe calls
    /// passed (SPEC §5.3); its failure code fails the probe attempt. No ACL call; the default
    /// checks nothing more (L-22: lane-capi's `probe` entry).
    fn own_probe(&mut self) -> Result<(), AclCode> {
        Ok(())
    }

    /// The device was reset outside the lane (L-24): forget every handle and binding, as
    /// after [`reset_device_force`](Self::reset_device_force), with no device call.
    fn adopt_reset(&mut self) {}

    /// `aclrtCreateStreamWithConfig(&s, 0, 0)`.
    fn create_stream(&mut self) -> Result<StreamHandle, AclCode>;
    /// `aclrtDestroyStream` (healthy teardown: no queued work).
    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode>;
    /// `aclrtDestroyStreamForce` (replacing a stuck or errored stream; may have queued work,
    /// which is dropped).
    fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode>;

    /// `aclrtCreateEventExWithFlag(&e, ACL_EVENT_SYNC)`: reusable by re-recording.
    fn create_event(&mut self) -> Result<EventHandle, AclCode>;
    /// `aclrtRecordEvent(e, s)`: captures every task already submitted to `stream`.
    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode>;
    /// `aclrtSynchronizeEventWithTimeout(e, ms)`: blocks until the captured tasks finish;
    /// `507047` on timeout (the device keeps running). A never-recorded event returns success
    /// at once, so the driver tracks its own records. It does not return a stream's sticky
    /// error: the status header read does.
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode>;
    /// `aclrtQueryEventStatus(e, &status)`: whether `event`'s tasks finished, without waiting
    /// (`true` for a never-recorded event). A caller-driven lane's `poll` uses it (L-23). The
    /// default is `207000`: completions come only from a blocking wait.
    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        let _ = event;
        Err(AclCode::RtFeatureNotSupport)
    }
    /// Whether this device gives event timestamps ([`event_timestamp`](Self::event_timestamp)).
    /// Asked when a slot's resources are made: if `true` each slot gets a start event recorded
    /// before each AICore kernel (`TimingSource::EventTimestamps`). Default `false`.
    fn event_timestamps(&self) -> bool {
        false
    }
    /// `aclrtEventGetTimestamp(e, &ts)`: when `event`'s tasks finished, in device-clock
    /// nanoseconds; asked only after the event completed. The default is `207000`.
    fn event_timestamp(&mut self, event: EventHandle) -> Result<u64, AclCode> {
        let _ = event;
        Err(AclCode::RtFeatureNotSupport)
    }
    /// `aclrtSynchronizeStreamWithTimeout(stream, ms)` (`ms` > 0, else 107000; 507046 on
    /// timeout): returns the stream's sticky code, the only call that materializes a faulted
    /// kernel's code (device-truth §1). Made by the device verdict (L-8) only for a run its
    /// record does not decide.
    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode>;
    /// `aclrtDestroyEvent`.
    fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode>;

    /// `aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST)`.
    fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode>;
    /// `aclrtFree`.
    fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode>;
    /// `aclrtMemcpy(dst, .., src, .., ACL_MEMCPY_HOST_TO_DEVICE)`: synchronous.
    fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode>;
    /// `aclrtMemcpy(dst, .., src, .., ACL_MEMCPY_DEVICE_TO_HOST)`: synchronous, no implicit
    /// stream sync (the driver reads only after the run's completion events).
    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode>;

    /// `aclrtStreamWaitEvent(stream, event)`: later tasks on `stream` start only once
    /// `event`'s tasks finished (a run's fence, the order between runs L-5, the arm).
    fn stream_wait_event(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode>;

    /// The executor's place in a run's launch: `Some` before each [`LaunchStage`]'s calls,
    /// `None` once the launch ended. No ACL call; a backend that attributes calls to runs
    /// reads the run from here. No default, so a wrapping device must decide to forward it.
    fn launch_context(&mut self, context: Option<LaunchContext>);

    /// The copies on the streams: `Some(self)` from a [`PinnedCopies`] device. With the
    /// default `None`, a `CopyPath::OnStream` lane's calls answer `207000` (its arm fails).
    fn pinned_copies(&mut self) -> Option<&mut dyn PinnedCopies> {
        None
    }

    /// `aclGetRecentErrMsg` after the last call, if it failed; taken (a second call returns
    /// `None`). The [`Executor`](crate::Executor) takes it right after each failed call and
    /// puts it on the outcome ([`Answer`](crate::Answer)).
    fn recent_error_message(&mut self) -> Option<String> {
        None
    }

    /// A [`CompletionWaiter`] on this device for a thread of its own: lane-service's waiter
    /// thread makes every blocking wait, so the lane thread never blocks in one (L-16). By
    /// default `207000`: such a device runs on the single-thread [`Driver`](crate::Driver) only.
    fn completion_waiter(&mut self) -> Result<Box<dyn CompletionWaiter + Send>, AclCode> {
        Err(AclCode::RtFeatureNotSupport)
    }

    /// Whether a fault notice names this device and one of its streams' ids (L-19): a live
    /// one, or one destroyed since the last force reset less than a bound ago (a late notice;
    /// decision 0025). The default: no notice concerns it.
    fn notice_concerns(&self, notice: &FaultNotice) -> bool {
        let _ = notice;
        false
    }
}

/// The copies on the streams (`CopyPath::OnStream`, decision 0013): pinned host memory, the
/// two async copies through it, and the host's access to it. Offered through
/// [`Device::pinned_copies`]; called from the driver's thread only.
pub trait PinnedCopies: Device {
    /// `aclrtMallocHost(&p, size)`: made once per slot, like the device buffer.
    fn malloc_host(&mut self, size: usize) -> Result<HostPtr, AclCode>;
    /// `aclrtFreeHost`.
    fn free_host(&mut self, ptr: HostPtr) -> Result<(), AclCode>;
    /// `aclrtMemcpyAsync(.., ACL_MEMCPY_HOST_TO_DEVICE, stream)` from pinned memory, enqueued
    /// behind every task already on `stream`.
    fn memcpy_to_device_async(
        &mut self,
        dst: DevicePtr,
        src: HostPtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode>;
    /// `aclrtMemcpyAsync(.., ACL_MEMCPY_DEVICE_TO_HOST, stream)` into pinned memory, enqueued
    /// behind every task already on `stream`.
    fn memcpy_from_device_async(
        &mut self,
        dst: HostPtr,
        src: DevicePtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode>;
    /// Host write into pinned memory this backend made (no ACL call); out of range: `100000`.
    fn write_host(&mut self, dst: HostPtr, src: &[u8]) -> Result<(), AclCode>;
    /// Host read from pinned memory this backend made (no ACL call), after the copy finished.
    fn read_host(&mut self, dst: &mut [u8], src: HostPtr) -> Result<(), AclCode>;
}
