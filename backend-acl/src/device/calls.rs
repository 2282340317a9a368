//! The `Device` and `PinnedCopies` methods of [`AclDevice`], one ACL call each.

use core::ffi::c_void;

use ascend_cl_sys::{
    ACL_EVENT_RECORDED_STATUS_COMPLETE, ACL_EVENT_RECORDED_STATUS_NOT_READY, ACL_EVENT_SYNC,
    ACL_EVENT_TIME_LINE, ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE, ACL_SUCCESS, AclrtEvent, AclrtStream,
};
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{FaultNotice, Timestamp};
use lane_driver::{
    CompletionWaiter, Device, DevicePtr, EventHandle, HostPtr, LaunchContext, PinnedCopies,
};

use crate::issued::{self};
use crate::waiter::AclWaiter;

use super::binding::set_device;
use super::{AclDevice, EVENT_GET_TIMESTAMP};

impl Device for AclDevice {
    /// [`AclDevice::notice_concerns_at`] at the clock's reading.
    fn notice_concerns(&self, notice: &FaultNotice) -> bool {
        self.notice_concerns_at(notice, self.clock())
    }

    fn now(&mut self) -> Timestamp {
        self.clock()
    }

    /// ACL attributes nothing to runs: ignored.
    fn launch_context(&mut self, _context: Option<LaunchContext>) {}

    fn set_device(&mut self) -> Result<(), AclCode> {
        let code = set_device(&self.acl, self.device_id, &self.resets);
        self.check(code)
    }

    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        // SAFETY: plain value.
        self.bound_call(|acl| unsafe { acl.aclrtSynchronizeDeviceWithTimeout(timeout_ms) })
    }

    fn reset_device_force(&mut self) -> Result<(), AclCode> {
        let id = self.device_id;
        // No bind first: the reset names its device, and a poisoned device may refuse the
        // bind. Never a plain reset, before or after (ascend-cl.md §2.1: 507007).
        // SAFETY: plain value.
        let code = unsafe { self.acl.aclrtResetDeviceForce(id) };
        // Whatever it returned, every handle and binding is gone.
        self.forget_after_reset();
        self.check(code)
    }

    fn adopt_reset(&mut self) {
        // The runtime reset the device (L-24): the same as after the lane's own reset.
        self.forget_after_reset();
    }

    fn create_stream(&mut self) -> Result<StreamHandle, AclCode> {
        let mut stream: AclrtStream = core::ptr::null_mut();
        // SAFETY: `stream` is a writable aclrtStream; priority 0 and flag 0 (an ordinary
        // stream: PERSISTENT and friends make sync return at once, ascend-cl.md §2.3).
        self.bound_call(|acl| unsafe { acl.aclrtCreateStreamWithConfig(&mut stream, 0, 0) })?;
        if stream.is_null() {
            return Err(self.null_handle("aclrtCreateStreamWithConfig"));
        }
        let handle = issued::issue_stream(self.device_id, stream);
        self.take_stream_id(stream, handle);
        Ok(handle)
    }

    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::stream(id, stream),
            // SAFETY: a stream live on this device id (looked up).
            |acl, s| unsafe { acl.aclrtDestroyStream(s) },
        )?;
        issued::retire_stream(stream);
        let now = self.clock();
        self.stream_ids.destroyed(stream, now);
        Ok(())
    }

    fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::stream(id, stream),
            // SAFETY: a stream live on this device id (looked up).
            |acl, s| unsafe { acl.aclrtDestroyStreamForce(s) },
        )?;
        issued::retire_stream(stream);
        let now = self.clock();
        self.stream_ids.destroyed(stream, now);
        Ok(())
    }

    fn create_event(&mut self) -> Result<EventHandle, AclCode> {
        let mut event: AclrtEvent = core::ptr::null_mut();
        // Where the library gives timestamps every event records them: the boundary and the
        // start event need them, and the driver makes both through this one call.
        let flag = if self.event_timestamps() {
            ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE
        } else {
            ACL_EVENT_SYNC
        };
        // SAFETY: `event` is a writable aclrtEvent; the flag is non-zero (0 is 107000).
        self.bound_call(|acl| unsafe { acl.aclrtCreateEventExWithFlag(&mut event, flag) })?;
        if event.is_null() {
            return Err(self.null_handle("aclrtCreateEventExWithFlag"));
        }
        Ok(issued::issue_event(self.device_id, event))
    }

    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode> {
        let lookup = |id| Ok((issued::event(id, event)?, issued::stream(id, stream)?));
        // SAFETY: an event and a stream live on this device id (looked up).
        self.bound_call_with(lookup, |acl, (e, s)| unsafe { acl.aclrtRecordEvent(e, s) })
    }

    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::event(id, event),
            // SAFETY: an event live on this device id (looked up); the timeout is the driver's.
            |acl, e| unsafe { acl.aclrtSynchronizeEventWithTimeout(e, timeout_ms) },
        )
    }

    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        let mut status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
        self.bound_call_with(
            |id| issued::event(id, event),
            // SAFETY: an event live on this device id (looked up); `status` is a writable slot.
            |acl, e| unsafe { acl.aclrtQueryEventStatus(e, &mut status) },
        )?;
        Ok(status == ACL_EVENT_RECORDED_STATUS_COMPLETE)
    }

    /// `true` when the library exports `aclrtEventGetTimestamp` (an optional symbol; a
    /// [`Library::PathHiding`](super::Library::PathHiding) that hides it turns timestamps off).
    fn event_timestamps(&self) -> bool {
        self.acl.has_optional(EVENT_GET_TIMESTAMP)
    }

    fn event_timestamp(&mut self, event: EventHandle) -> Result<u64, AclCode> {
        let mut us = 0_u64;
        let mut unavailable = false;
        self.bound_call_with(
            |id| issued::event(id, event),
            // SAFETY: an event live on this device id (looked up); `us` is a writable u64.
            |acl, e| match unsafe { acl.aclrtEventGetTimestamp(e, &mut us) } {
                Ok(code) => code,
                Err(_) => {
                    unavailable = true;
                    ACL_SUCCESS
                }
            },
        )?;
        if unavailable {
            self.message = Some(format!("{EVENT_GET_TIMESTAMP} is not in the loaded library"));
            return Err(AclCode::RtFeatureNotSupport);
        }
        // ACL gives microseconds of the device clock.
        Ok(us.saturating_mul(1_000))
    }

    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::stream(id, stream),
            // SAFETY: a stream live on this device id (looked up); the timeout is the driver's.
            |acl, s| unsafe { acl.aclrtSynchronizeStreamWithTimeout(s, timeout_ms) },
        )
    }

    fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::event(id, event),
            // SAFETY: an event live on this device id (looked up).
            |acl, e| unsafe { acl.aclrtDestroyEvent(e) },
        )?;
        issued::retire_event(event);
        Ok(())
    }

    fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode> {
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: `ptr` is a writable pointer slot.
        self.bound_call(|acl| unsafe {
            acl.aclrtMalloc(&mut ptr, size, ACL_MEM_MALLOC_HUGE_FIRST)
        })?;
        if ptr.is_null() {
            return Err(self.null_handle("aclrtMalloc"));
        }
        Ok(issued::issue_allocation(self.device_id, ptr, size))
    }

    fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::allocation(id, ptr),
            // SAFETY: an allocation live on this device id (looked up: its start).
            |acl, p| unsafe { acl.aclrtFree(p) },
        )?;
        issued::retire_allocation(ptr);
        Ok(())
    }

    fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::range(id, dst, src.len()),
            // SAFETY: `src` is readable for its length; `[dst, dst + src.len())` lies inside an
            // allocation live on this device id (looked up).
            |acl, dst| unsafe {
                acl.aclrtMemcpy(
                    dst,
                    src.len(),
                    src.as_ptr().cast(),
                    src.len(),
                    ACL_MEMCPY_HOST_TO_DEVICE,
                )
            },
        )
    }

    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        let len = dst.len();
        self.bound_call_with(
            |id| issued::range(id, src, len),
            // SAFETY: `dst` is writable for its length; `[src, src + len)` lies inside an
            // allocation live on this device id (looked up).
            |acl, src| unsafe {
                acl.aclrtMemcpy(dst.as_mut_ptr().cast(), len, src, len, ACL_MEMCPY_DEVICE_TO_HOST)
            },
        )
    }

    fn stream_wait_event(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode> {
        let lookup = |id| Ok((issued::stream(id, stream)?, issued::event(id, event)?));
        // SAFETY: a stream and an event (created with ACL_EVENT_SYNC) live on this device id
        // (looked up).
        self.bound_call_with(lookup, |acl, (s, e)| unsafe { acl.aclrtStreamWaitEvent(s, e) })
    }

    fn recent_error_message(&mut self) -> Option<String> {
        self.message.take()
    }

    /// A waiter sharing this device's library, device id, reset count and clock: it binds
    /// its own thread before its first wait and after every force reset.
    fn completion_waiter(&mut self) -> Result<Box<dyn CompletionWaiter + Send>, AclCode> {
        Ok(Box::new(AclWaiter::new(self, self.epoch)))
    }

    fn pinned_copies(&mut self) -> Option<&mut dyn PinnedCopies> {
        Some(self)
    }
}

impl PinnedCopies for AclDevice {
    fn malloc_host(&mut self, size: usize) -> Result<HostPtr, AclCode> {
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: `ptr` is a writable pointer slot.
        self.bound_call(|acl| unsafe { acl.aclrtMallocHost(&mut ptr, size) })?;
        if ptr.is_null() {
            return Err(self.null_handle("aclrtMallocHost"));
        }
        let address = ptr as usize as u64;
        self.pinned.insert(address, size);
        Ok(HostPtr(address))
    }

    fn free_host(&mut self, ptr: HostPtr) -> Result<(), AclCode> {
        if !self.pinned.contains_key(&ptr.0) {
            self.message =
                Some(format!("{:#x} is not a pinned allocation made since the last reset", ptr.0));
            return Err(AclCode::InvalidParam);
        }
        // SAFETY: an allocation this library made since the last reset, not yet freed.
        self.bound_call(|acl| unsafe { acl.aclrtFreeHost(ptr.0 as usize as *mut c_void) })?;
        self.pinned.remove(&ptr.0);
        Ok(())
    }

    fn memcpy_to_device_async(
        &mut self,
        dst: DevicePtr,
        src: HostPtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.memcpy_async(src, dst, len, ACL_MEMCPY_HOST_TO_DEVICE, stream)
    }

    fn memcpy_from_device_async(
        &mut self,
        dst: HostPtr,
        src: DevicePtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.memcpy_async(dst, src, len, ACL_MEMCPY_DEVICE_TO_HOST, stream)
    }

    fn write_host(&mut self, dst: HostPtr, src: &[u8]) -> Result<(), AclCode> {
        let dst = self.pinned_range(dst, src.len())?;
        // SAFETY: `dst` is inside a live pinned allocation for `src.len()` bytes (checked),
        // which no Rust reference aliases; no copy into it is in flight (the driver writes
        // only before it enqueues the copies that use it).
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        Ok(())
    }

    fn read_host(&mut self, dst: &mut [u8], src: HostPtr) -> Result<(), AclCode> {
        let src = self.pinned_range(src, dst.len())?;
        // SAFETY: `src` is inside a live pinned allocation for `dst.len()` bytes (checked);
        // the driver reads only after an event proved the copy into it finished.
        unsafe { core::ptr::copy_nonoverlapping(src.cast_const(), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }
}
