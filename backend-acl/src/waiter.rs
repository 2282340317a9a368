//! The lane's completion waiter on ACL: [`AclDevice::completion_waiter`] hands one to
//! lane-service, which makes every blocking wait of the lane on it from a thread of its own
//! (each run's completion events, the recovery drain), so the lane thread never blocks in a
//! device wait (SPEC L-16).

use std::time::Instant;

use ascend_cl_sys::Acl;
use lane_core::Timestamp;
use lane_core::status_latch::AclCode;
use lane_driver::{CompletionWaiter, EventHandle};

use crate::device::{AclDevice, WorkerBinding, event_ptr};

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

    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        // SAFETY: plain value.
        let code = unsafe { self.acl().aclrtSynchronizeDeviceWithTimeout(timeout_ms) };
        AclCode::from_raw(code).map_or(Ok(()), Err)
    }

    fn recent_error_message(&mut self) -> Option<String> {
        self.acl().recent_error_message()
    }
}
