//! The [`Device`] trait: the ACL calls a lane makes on a device, one method per call in
//! ascend-cl.md §5. The lane owns streams, events, device memory and recovery, so these are
//! its calls; the embedding runtime's work (kernels, host buffers) is the
//! [`Runner`](crate::Runner)'s.
//!
//! The simulator (backend-sim) and the NPU backend (backend-acl) both implement it; the one
//! [`Driver`](crate::Driver) loop turns lane effects into these calls. Methods return the raw
//! code the call returned as an [`AclCode`] on failure; they never interpret it (status-latch
//! classifies, lane-core decides).

use lane_core::Timestamp;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;

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

/// The ACL calls a lane makes on a device. One method, one ACL call.
///
/// Every method is called from the driver's thread only; none is called while the lane is
/// borrowed (so no device wait ever happens under a lane lock, L-16).
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

    /// `aclGetRecentErrMsg` after the last call, if it failed and the backend has text for
    /// it; taken (a second call returns `None`). The driver takes it after each failure that
    /// fails a run or a publication and attaches it to that item's outcome
    /// ([`Report`](crate::Report)).
    fn recent_error_message(&mut self) -> Option<String> {
        None
    }

    /// A runner's own call on this device (a kernel launch, an upload) failed: keep the
    /// device's text about it (`aclGetRecentErrMsg`, read now, before another call replaces
    /// it) for [`Device::recent_error_message`]. The default keeps nothing.
    fn capture_error_message(&mut self) {}
}
