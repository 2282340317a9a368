//! The lane's completion waiter on ACL ([`AclDevice::completion_waiter`]): lane-service makes
//! every blocking wait on it from a thread of its own (SPEC L-16).

use std::time::Instant;

use ascend_cl_sys::Acl;
use ascend_cl_sys::types::{
    ACL_EVENT_RECORDED_STATUS_COMPLETE, ACL_EVENT_RECORDED_STATUS_NOT_READY,
    ACL_MEMCPY_DEVICE_TO_HOST,
};
use lane_core::Timestamp;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{CompletionWaiter, DevicePtr, EventHandle};

use crate::device::{AclDevice, WorkerBinding};
use crate::issued::{self, Refused};

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
    /// Why this waiter's last call refused its handle ([`issued`]), if it did: its text,
    /// taken before the library's.
    refused: Option<String>,
}

impl AclWaiter {
    /// A waiter for `device`, made on the lane thread and moved to the waiter's.
    pub(crate) fn new(device: &AclDevice, epoch: Instant) -> Self {
        Self { binding: device.worker_binding(), bound_at: None, epoch, refused: None }
    }

    fn acl(&self) -> &Acl {
        self.binding.acl()
    }

    /// `lookup` on the lane's device id ([`issued`]): a handle no device of this process
    /// holds live there is refused with its code, its message kept, and never reaches ACL.
    fn live<T>(&mut self, lookup: impl FnOnce(i32) -> Result<T, Refused>) -> Result<T, AclCode> {
        self.refused = None;
        lookup(self.binding.device_id()).map_err(|refused| {
            self.refused = Some(refused.message);
            refused.code
        })
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
        let event = self.live(|id| issued::event(id, event))?;
        // SAFETY: an event live on the lane's device id (looked up); the lane destroys it
        // only once no wait on it is out, and resets the device only once this wait answered.
        let code = unsafe { self.acl().aclrtSynchronizeEventWithTimeout(event, timeout_ms) };
        AclCode::from_raw(code).map_or(Ok(()), Err)
    }

    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        let event = self.live(|id| issued::event(id, event))?;
        let mut status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
        // SAFETY: an event live on the lane's device id (looked up), as for the wait above;
        // `status` is a writable slot.
        let code = unsafe { self.acl().aclrtQueryEventStatus(event, &mut status) };
        AclCode::from_raw(code).map_or(Ok(status == ACL_EVENT_RECORDED_STATUS_COMPLETE), Err)
    }

    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        let stream = self.live(|id| issued::stream(id, stream))?;
        // SAFETY: a stream live on the lane's device id (looked up): the pair's stream the
        // awaited run was launched on; the lane replaces or destroys a stream only once its
        // FIFO is empty, and the awaited run holds its entry until this wait's answer is fed,
        // so the stream stays live for the call.
        let code = unsafe { self.acl().aclrtSynchronizeStreamWithTimeout(stream, timeout_ms) };
        AclCode::from_raw(code).map_or(Ok(()), Err)
    }

    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        let len = dst.len();
        let src = self.live(|id| issued::range(id, src, len))?;
        // SAFETY: `dst` is writable for its length; `[src, src + len)` lies inside an
        // allocation live on the lane's device id (looked up): the awaited run's record
        // region, which the lane frees only at close or forgets after a reset, never while a
        // wait on the slot is out.
        let code = unsafe {
            self.acl().aclrtMemcpy(
                dst.as_mut_ptr().cast(),
                len,
                src,
                len,
                ACL_MEMCPY_DEVICE_TO_HOST,
            )
        };
        AclCode::from_raw(code).map_or(Ok(()), Err)
    }

    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.refused = None;
        // SAFETY: plain value.
        let code = unsafe { self.acl().aclrtSynchronizeDeviceWithTimeout(timeout_ms) };
        AclCode::from_raw(code).map_or(Ok(()), Err)
    }

    fn recent_error_message(&mut self) -> Option<String> {
        self.refused.take().or_else(|| self.acl().recent_error_message())
    }
}
