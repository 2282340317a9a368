//! The [`Device`] impl: one thin method per ACL call, each into the inherent method of the
//! file that owns the resource (streams, events, memory, recovery, kernels). The logic, and
//! every call's preamble ([`SimDevice::call`]), lives there.

use lane_core::Timestamp;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{Device, DevicePtr, EventHandle, LaunchContext, PinnedCopies};

use super::SimDevice;

impl Device for SimDevice {
    fn now(&mut self) -> Timestamp {
        Timestamp(self.host_ns)
    }

    fn set_device(&mut self) -> Result<(), AclCode> {
        self.set_device_call()
    }

    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.synchronize_device_call(timeout_ms)
    }

    fn reset_device_force(&mut self) -> Result<(), AclCode> {
        self.reset_device_force_call()
    }

    fn create_stream(&mut self) -> Result<StreamHandle, AclCode> {
        self.create_stream_call()
    }

    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.destroy_stream_call(stream, false)
    }

    fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.destroy_stream_call(stream, true)
    }

    fn create_event(&mut self) -> Result<EventHandle, AclCode> {
        self.create_event_call()
    }

    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode> {
        self.record_event_call(event, stream)
    }

    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.synchronize_event_call(event, timeout_ms)
    }

    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        self.query_event_call(event)
    }

    fn event_timestamps(&self) -> bool {
        self.event_timestamps
    }

    fn event_timestamp(&mut self, event: EventHandle) -> Result<u64, AclCode> {
        self.event_timestamp_call(event)
    }

    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.synchronize_stream_call(stream, timeout_ms)
    }

    fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode> {
        self.destroy_event_call(event)
    }

    fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode> {
        self.malloc_call(size)
    }

    fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode> {
        self.free_call(ptr)
    }

    fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode> {
        self.memcpy_to_device_call(dst, src)
    }

    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        self.memcpy_from_device_call(dst, src)
    }

    fn stream_wait_event(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode> {
        self.stream_wait_event_call(stream, event)
    }

    fn launch_context(&mut self, context: Option<LaunchContext>) {
        self.follow_launch_context(context);
    }

    fn pinned_copies(&mut self) -> Option<&mut dyn PinnedCopies> {
        Some(self)
    }
}
