//! The backend trait: ACL-shaped calls, one method per call in ascend-cl.md §5, plus the
//! runner's own host work (prepare, finalise, upload).
//!
//! The simulator (backend-sim) and the NPU backend (backend-acl) both implement it; the one
//! [`Driver`](crate::Driver) loop turns lane effects into these calls. Methods return the raw
//! code the call returned as an [`AclCode`] on failure; they never interpret it (status-latch
//! classifies, lane-core decides).

use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, RunId, SlotId, Timestamp};

/// An event handle, chosen by the backend (`aclrtEvent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventHandle(pub u64);

/// A device memory address, chosen by the backend (`void *devPtr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevicePtr(pub u64);

impl DevicePtr {
    /// The address `offset` bytes into this one (a field of an allocation).
    #[must_use]
    pub const fn at(self, offset: usize) -> Self {
        Self(self.0.wrapping_add(offset as u64))
    }
}

/// What `aclrtQueryEventStatus` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventStatus {
    /// Every task captured by the last record has finished (also: never recorded).
    Complete,
    /// Not yet.
    NotReady,
}

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
}

/// Why the runner's prepare failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrepareError {
    /// The run cannot be prepared while its predecessor runs (the C++ runtime's -3). Nothing
    /// was touched.
    Incompatible,
    /// Preparation failed with this code; the backend freed what it had allocated.
    Failed(AclCode),
}

/// The calls a run lane makes on a device. One method, one ACL (or RT) call, except the three
/// runner methods at the end.
///
/// Every method may be called from the driver's thread only; none is called while the lane
/// is borrowed (so no device wait ever happens under a lane lock, L-16).
pub trait Backend {
    /// The backend's clock: host nanoseconds since its epoch (virtual in the simulator, a
    /// monotonic clock on hardware). The driver reads time only here.
    fn now(&mut self) -> Timestamp;

    /// `aclrtSetDevice`: bind the calling thread to the device (again after a reset).
    fn set_device(&mut self) -> Result<(), AclCode>;
    /// `aclrtSynchronizeDeviceWithTimeout(ms)`: bounded drain before a force reset. Its result
    /// proves nothing about the device's health.
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode>;
    /// `aclrtResetDeviceForce`: every stream, event and device allocation is dead afterwards.
    fn reset_device_force(&mut self) -> Result<(), AclCode>;

    /// `aclrtCreateStreamWithConfig(&s, 0, 0)`.
    fn create_stream(&mut self) -> Result<StreamHandle, AclCode>;
    /// `aclrtDestroyStream` (the lane only destroys a stream with no queued work).
    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode>;

    /// `aclrtCreateEventExWithFlag(&e, ACL_EVENT_SYNC)`: reusable by re-recording.
    fn create_event(&mut self) -> Result<EventHandle, AclCode>;
    /// `aclrtRecordEvent(e, s)`: captures every task already submitted to `stream`.
    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode>;
    /// `aclrtQueryEventStatus`: non-blocking. A never-recorded event reports `Complete`.
    fn query_event(&mut self, event: EventHandle) -> Result<EventStatus, AclCode>;
    /// `aclrtSynchronizeEventWithTimeout(e, ms)`: blocks until the captured tasks finish;
    /// `507047` on timeout (the device keeps running). A never-recorded event returns success
    /// at once, so the driver tracks its own records. It does not return a stream's sticky
    /// error: the status header read does.
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode>;
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

    /// `rtKernelLaunchWithHandleV2` on the AICore stream: the run's AICore workers.
    fn launch_aicore(&mut self, stream: StreamHandle, args: &RunArgs) -> Result<(), AclCode>;
    /// `rtsLaunchCpuKernel` on the AICPU stream: the run's scheduler, which spins until its
    /// AICore workers report through the handshake.
    fn launch_aicpu(&mut self, stream: StreamHandle, args: &RunArgs) -> Result<(), AclCode>;

    /// Runner: prepare `run` into `slot` (host runtime buffer, arena, args upload). Touches
    /// no stream.
    fn prepare_run(
        &mut self,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError>;
    /// Runner: copy outputs back (when `copy_back`), validate, free per-run resources.
    fn finalise_run(
        &mut self,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure>;
    /// Runner: upload published AICore code.
    fn upload_code(&mut self, code: CodeRef) -> Result<(), AclCode>;

    /// Called by the driver after every lane step it performs, for traces and checks.
    /// The default does nothing.
    fn observe(&mut self, _step: &crate::Observation<'_>) {}
}
