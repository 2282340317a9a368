//! The lane's completion waiter on ACL: [`AclDevice::completion_waiter`] hands one to
//! lane-service, which makes every blocking wait of the lane on it from a thread of its own
//! (each run's completion events, the recovery drain), so the lane thread never blocks in a
//! device wait (SPEC L-16).

use std::time::Instant;

use ascend_cl_sys::Acl;
use ascend_cl_sys::types::ACL_MEMCPY_DEVICE_TO_HOST;
use lane_core::Timestamp;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{CompletionWaiter, DevicePtr, EventHandle};

use crate::device::{AclDevice, WorkerBinding, device_ptr, event_ptr, stream_ptr};

/// [`CompletionWaiter`] over the lane's loaded library, bound to the lane's device on its own
/// thread like a host worker: `aclrtSetDevice` before its first wait and again after every
/// force reset (ACL binds per thread, ascend-cl.md §2.1; a reset unbinds every thread).
#[derive(Debug)]
pub(crate) struct AclWaiter {
    binding: WorkerBinding,
    /// The force-reset count this thread bound at; `None` before its first bind.
    bound_at: Option<u64>,
    /// The lane's clock epoch (the device's), so [`CompletionWaiter::now`] reads the same
    /// clock as `Device::now`.
    epoch: Instant,
}

impl AclWaiter {
    /// A waiter for `device`, made on the lane thread and moved to the waiter's.
    pub(crate) fn new(device: &AclDevice, epoch: Instant) -> Self {
        Self {
            binding: device.worker_binding(),
            bound_at: None,
            epoch,
        }
    }

    fn acl(&self) -> &Acl {
        self.binding.acl()
    }
}

impl CompletionWaiter for AclWaiter {
    fn bind(&mut self) -> Result<(), AclCode> {
        let resets = self.binding.resets();
        if self.bound_at != Some(resets) {
            self.binding.bind()?;
            self.bound_at = Some(resets);
        }
        Ok(())
    }

    fn now(&mut self) -> Timestamp {
        Timestamp(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        // SAFETY: an event the lane's device created and recorded; the lane destroys it only
        // once no wait on it is out, and forgets it (never touches it again) after a reset.
        let code = unsafe {
            self.acl()
                .aclrtSynchronizeEventWithTimeout(event_ptr(event), timeout_ms)
        };
        AclCode::from_raw(code).map_or(Ok(()), Err)
    }

    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        // SAFETY: the pair's stream the awaited run was launched on; the lane replaces or
        // destroys a stream only once its FIFO is empty, and the awaited run holds its entry
        // until this wait's answer is fed, so the stream is live for the call.
        let code = unsafe {
            self.acl()
                .aclrtSynchronizeStreamWithTimeout(stream_ptr(stream), timeout_ms)
        };
        AclCode::from_raw(code).map_or(Ok(()), Err)
    }

    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        let len = dst.len();
        // SAFETY: `dst` is writable for its length; `src` is the awaited run's record region,
        // inside its slot's allocation, which the lane frees only at close or forgets after a
        // reset, never while a wait on the slot is out.
        let code = unsafe {
            self.acl().aclrtMemcpy(
                dst.as_mut_ptr().cast(),
                len,
                device_ptr(src),
                len,
                ACL_MEMCPY_DEVICE_TO_HOST,
            )
        };
        AclCode::from_raw(code).map_or(Ok(()), Err)
    }

    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        // SAFETY: plain value.
        let code = unsafe { self.acl().aclrtSynchronizeDeviceWithTimeout(timeout_ms) };
        AclCode::from_raw(code).map_or(Ok(()), Err)
    }

    fn recent_error_message(&mut self) -> Option<String> {
        self.acl().recent_error_message()
    }
}
