//! The [`Device`] trait: the ACL calls a lane makes on a device, one method per call in
//! ascend-cl.md §5. The lane owns streams, events, device memory and recovery, so these are
//! its calls; the embedding runtime's work (kernels, host buffers) is the
//! [`Runner`](crate::Runner)'s.
//!
//! The simulator (backend-sim) and the NPU backend (backend-acl) both implement it; the one
//! [`Driver`](crate::Driver) loop turns lane effects into these calls. Methods return the raw
//! code the call returned as an [`AclCode`] on failure; they never interpret it (status-latch
//! classifies, lane-core decides).
//!
//! **The runtime's to implement (L-22).** The lane decides; whatever implements [`Device`]
//! executes. A runtime that owns its device (its own rt layer, its simulated platform, a test
//! stub) implements this trait, with [`PinnedCopies`] and a [`CompletionWaiter`] where it has
//! them, and hands it to `lane_service::spawn` in place of backend-acl's device: the lane's
//! rules (FIFO ownership of the pair, verdicts, classification) hold whatever executes them.
//! Its `create_stream` may return a stream the runtime already owns; the lane never assumes
//! it made one, and every stream it is done with goes back through `destroy_stream` or
//! `destroy_stream_force`. A C or C++ runtime does the same through lane-capi's table of
//! device operations (`RunLaneDeviceOps`), which lane-capi turns into this trait.
//!
//! Handles are plain values; the backend checks them ([`Device`]'s "Handles" section).

use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{FaultNotice, RunId, Timestamp};

use crate::waiter::CompletionWaiter;

/// An event handle, chosen by the backend (`aclrtEvent`).
///
/// A plain value (see [`Device`'s handles](Device#handles)): the backend that issued it checks it
/// at every use and refuses one it does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventHandle(pub u64);

/// A device memory address, chosen by the backend (`void *devPtr`).
///
/// A plain value (see [`Device`'s handles](Device#handles)): a call that takes one takes the range
/// from it, and the backend refuses a range outside every allocation it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevicePtr(pub u64);

impl DevicePtr {
    /// The address `offset` bytes into this one (a field of an allocation).
    #[must_use]
    pub const fn at(self, offset: usize) -> Self {
        Self(self.0.wrapping_add(offset as u64))
    }
}

/// A pinned host memory address, chosen by the backend (`void *hostPtr` from
/// `aclrtMallocHost`). Only the backend that made it reads or writes through it
/// ([`PinnedCopies::read_host`], [`PinnedCopies::write_host`]), so no caller holds a raw
/// pointer. A plain value (see [`Device`'s handles](Device#handles)): a range outside every pinned
/// allocation the backend holds is `100000`.
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
    /// The slot's resources (at its first launch) and its arm, before any kernel of the
    /// run: a record here (the "armed" event of copies on the streams) belongs to no run yet.
    Arm,
    /// From an accepted AICore kernel on: the run's records and waits, its AICPU kernel and
    /// (copies on the streams) its readback copy.
    Kernels,
}

/// The ACL calls a lane makes on a device. One method, one ACL call.
///
/// The copies on the streams are not here: they are [`PinnedCopies`], which a device
/// implements or does not, and offers through [`Device::pinned_copies`].
///
/// Every method is called from the driver's thread only; none is called while the lane is
/// borrowed (so no device wait ever happens under a lane lock, L-16).
///
/// # Handles
///
/// [`StreamHandle`], [`EventHandle`], [`DevicePtr`] and [`HostPtr`] are plain values: safe
/// code can make any of them, so a handle proves nothing. The contract is the backend's:
/// every method that takes one must answer a handle it did not issue, or no longer holds
/// (destroyed, freed, or issued before a force reset), with an error code, never with
/// undefined behaviour. backend-acl looks each one up in the table of handles it issued
/// before it hands it to ACL (its `issued` module); the simulator, with no unsafe code,
/// looks each up in its own maps and reports a dead one. So no method here is `unsafe`, and
/// no caller has a valid-usage list to keep.
///
/// # Implementing it
///
/// The embedding runtime may implement it (L-22, the module doc): the required methods are
/// the lane's device calls; the provided ones (`query_event`, `event_timestamps`, `event_timestamp`, `pinned_copies`,
/// `recent_error_message`, `completion_waiter`, `notice_concerns`, `own_probe`) have defaults
/// that do without. lane-service needs [`Device::completion_waiter`]: its waits run on a
/// thread of their own, beside the other calls (its `CompletionWaiter` doc says which).
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
    /// The device's own check that a reset left it usable, made by recovery's probe after the
    /// lane's probe calls passed (bind, a stream create and destroy, a small alloc and free;
    /// SPEC §5.3): its failure fails the probe attempt like theirs. No ACL call; the default
    /// checks nothing more. A runtime that owns the device (L-22) checks its own state here
    /// (lane-capi's table: its `probe` entry).
    ///
    /// # Errors
    ///
    /// The check's code: the attempt's probe failed with it.
    fn own_probe(&mut self) -> Result<(), AclCode> {
        Ok(())
    }

    /// The device was reset outside the lane (L-24: the runtime owns recovery and reported
    /// its reset): forget every handle this device issued and every thread's binding, as
    /// after [`reset_device_force`](Self::reset_device_force), with no device call. The
    /// default forgets nothing (a device that keeps no handles or bindings of its own).
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
    /// `aclrtQueryEventStatus(e, &status)`: whether the tasks `event` captured have finished,
    /// without waiting (`true` also for a never-recorded event, as on ACL). A lane the caller
    /// drives (L-23) looks at the awaited run's boundary with it on a `poll`, so a poll never
    /// blocks. The default is `207000` (`ACL_ERROR_RT_FEATURE_NOT_SUPPORT`): such a device
    /// gets its runs' completions only from a blocking wait.
    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        let _ = event;
        Err(AclCode::RtFeatureNotSupport)
    }
    /// Whether this device gives event timestamps ([`event_timestamp`](Self::event_timestamp)).
    /// Asked once, when a slot's resources are made: where it is `true` each slot gets one more
    /// event, recorded on the AICore stream right before each run's AICore kernel, and a run's
    /// device start and end come from that event's and its boundary's timestamps
    /// (`TimingSource::EventTimestamps`), the timing buffer staying the fallback. The default
    /// is `false` (no extra event, no extra record: the launch's calls are unchanged).
    fn event_timestamps(&self) -> bool {
        false
    }
    /// `aclrtEventGetTimestamp(e, &ts)`: when the tasks `event` captured finished, in
    /// nanoseconds of the device clock (a backend whose call gives microseconds scales them).
    /// Asked only after the event completed. The default is `207000`
    /// (`ACL_ERROR_RT_FEATURE_NOT_SUPPORT`): the timing buffer is the run's only timing.
    fn event_timestamp(&mut self, event: EventHandle) -> Result<u64, AclCode> {
        let _ = event;
        Err(AclCode::RtFeatureNotSupport)
    }
    /// `aclrtSynchronizeStreamWithTimeout(stream, ms)`: waits for every task on `stream`
    /// (`ms` > 0; 0 is refused with 107000), 507046 on timeout, and returns the stream's sticky
    /// code: on real ACL the only call that materializes a faulted kernel's code
    /// (device-truth §1). The device verdict (L-8) makes it, AICPU stream first, only for a
    /// run its record does not decide; a successful run's path never does.
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

    /// `aclrtStreamWaitEvent(stream, event)`: tasks enqueued on `stream` after this start only
    /// once the tasks `event` captured have finished: a run's fence (the AICPU stream waits
    /// for its AICore kernel's `core_done`), the order between runs (the AICore stream waits
    /// for the predecessor's boundary, L-5), and the arm of copies on the streams.
    fn stream_wait_event(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode>;

    /// The executor's place in a run's launch: `Some` before the calls of each
    /// [`LaunchStage`], `None` once the launch ended (launched or failed). No ACL call. A
    /// backend that attributes calls to runs (the simulator's traces and fault sites) reads
    /// the run from here, never from the order of calls; one that does not ignores it. It
    /// has no default, so a device that wraps another must decide to forward it.
    fn launch_context(&mut self, context: Option<LaunchContext>);

    /// The copies on the streams, if this device makes them: a device that implements
    /// [`PinnedCopies`] answers `Some(self)`. The default is `None`; the
    /// [`Executor`](crate::Executor) asks only on the `CopyPath::OnStream` path, and with
    /// `None` answers the call it would have made with `207000`
    /// (`ACL_ERROR_RT_FEATURE_NOT_SUPPORT`), so such a lane's first launch fails its arm.
    fn pinned_copies(&mut self) -> Option<&mut dyn PinnedCopies> {
        None
    }

    /// `aclGetRecentErrMsg` after the last call, if it failed and the backend has text for
    /// it; taken (a second call returns `None`). The one read of the device's text: the
    /// [`Executor`](crate::Executor) takes it right after each call whose failure it answers
    /// and answers with it ([`Answer`](crate::Answer)), which puts it on the outcome that
    /// failure causes ([`Report`](crate::Report)).
    fn recent_error_message(&mut self) -> Option<String> {
        None
    }

    /// A [`CompletionWaiter`] on this device for a thread of its own: lane-service asks for
    /// one on the lane thread right after making the device and moves it to its completion
    /// waiter thread, which then makes every blocking wait of the lane (each run's
    /// completion, the recovery drain), so the lane thread never blocks in one (L-16).
    ///
    /// # Errors
    ///
    /// `207000` (`ACL_ERROR_RT_FEATURE_NOT_SUPPORT`) by default: a device without a waiter
    /// runs on the single-thread [`Driver`](crate::Driver) only, and lane-service refuses it.
    fn completion_waiter(&mut self) -> Result<Box<dyn CompletionWaiter + Send>, AclCode> {
        Err(AclCode::RtFeatureNotSupport)
    }

    /// Whether a device fault notice names this device and one of the stream ids this
    /// device took (`aclrtStreamGetId`) for its streams (L-19): a live one's, or one
    /// destroyed since its last force reset less than a bound ago, since a late notice can
    /// name a stream already gone. A stream killed by or before the last reset, another
    /// device or another stream does not concern it (backend-acl's rule and bound:
    /// decision 0025). The default knows no stream ids: no notice concerns it.
    fn notice_concerns(&self, notice: &FaultNotice) -> bool {
        let _ = notice;
        false
    }
}

/// The copies on the streams (`CopyPath::OnStream`, decision 0013): pinned host memory, the
/// two async copies through it, and the host's own access to it. A device implements them or
/// does not; one that does answers `Some(self)` from [`Device::pinned_copies`], and a lane
/// whose profile keeps synchronous copies (`CopyPath::Sync`) never makes them.
///
/// Called from the driver's thread only, like every [`Device`] method.
pub trait PinnedCopies: Device {
    /// `aclrtMallocHost(&p, size)`: pinned host memory, so an async copy is truly async and
    /// ordered on its stream. Made once per slot, like the device buffer.
    fn malloc_host(&mut self, size: usize) -> Result<HostPtr, AclCode>;
    /// `aclrtFreeHost`.
    fn free_host(&mut self, ptr: HostPtr) -> Result<(), AclCode>;
    /// `aclrtMemcpyAsync(dst, len, src, len, ACL_MEMCPY_HOST_TO_DEVICE, stream)` from pinned
    /// memory: enqueued behind every task already on `stream`; an error here is the enqueue's.
    fn memcpy_to_device_async(
        &mut self,
        dst: DevicePtr,
        src: HostPtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode>;
    /// `aclrtMemcpyAsync(dst, len, src, len, ACL_MEMCPY_DEVICE_TO_HOST, stream)` into pinned
    /// memory: enqueued behind every task already on `stream`, so an event recorded after it
    /// passes only once the bytes are in host memory.
    fn memcpy_from_device_async(
        &mut self,
        dst: HostPtr,
        src: DevicePtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode>;
    /// Host write into pinned memory this backend made (no ACL call: plain host memory).
    /// A range outside the allocation is `100000`, never undefined.
    fn write_host(&mut self, dst: HostPtr, src: &[u8]) -> Result<(), AclCode>;
    /// Host read from pinned memory this backend made (no ACL call). Read only after an event
    /// proved the copy into it finished.
    fn read_host(&mut self, dst: &mut [u8], src: HostPtr) -> Result<(), AclCode>;
}
