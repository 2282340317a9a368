//! [`TableDevice`]'s pinned host copies (`PinnedCopies`), through the table's optional entries.

use core::ffi::c_void;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{DevicePtr, HostPtr, PinnedCopies};

use super::INTERNAL_ERROR;
use super::device::TableDevice;
use super::handles::{pointer, value};

impl PinnedCopies for TableDevice {
    fn malloc_host(&mut self, size: usize) -> Result<HostPtr, AclCode> {
        let entries = self.pinned_entries()?;
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: the table's entry with its `user`, a plain size and a writable pointer slot.
        self.bound_call(|e| unsafe { (entries.malloc_host)(e.user, size, &raw mut ptr) })?;
        if ptr.is_null() {
            self.message = Some(
                "the runtime's device table's malloc_host returned 0 and NULL; return memory \
                 with 0, or a non-zero code"
                    .to_owned(),
            );
            return Err(INTERNAL_ERROR);
        }
        let address = value(ptr);
        self.pinned.insert(address, size);
        Ok(HostPtr(address))
    }

    fn free_host(&mut self, ptr: HostPtr) -> Result<(), AclCode> {
        let entries = self.pinned_entries()?;
        if !self.pinned.contains_key(&ptr.0) {
            self.message = Some(format!(
                "{:#x} is not pinned memory the table's malloc_host returned since the last reset",
                ptr.0
            ));
            return Err(AclCode::InvalidParam);
        }
        // SAFETY: the table's entry with its `user` and memory it returned since the last reset,
        // not freed yet.
        self.bound_call(|e| unsafe { (entries.free_host)(e.user, pointer(ptr.0)) })?;
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
        self.memcpy_async((src, dst), len, true, stream)
    }

    fn memcpy_from_device_async(
        &mut self,
        dst: HostPtr,
        src: DevicePtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.memcpy_async((dst, src), len, false, stream)
    }

    fn write_host(&mut self, dst: HostPtr, src: &[u8]) -> Result<(), AclCode> {
        let dst = self.pinned_range(dst, src.len())?;
        // SAFETY: `dst` lies inside live pinned memory for `src.len()` bytes (checked), host
        // memory by the table's contract, which no Rust reference aliases; no copy into it is in
        // flight (the driver writes only before it enqueues the copies that use it).
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        Ok(())
    }

    fn read_host(&mut self, dst: &mut [u8], src: HostPtr) -> Result<(), AclCode> {
        let src = self.pinned_range(src, dst.len())?;
        // SAFETY: `src` lies inside live pinned memory for `dst.len()` bytes (checked); the
        // driver reads only after an event proved the copy into it finished.
        unsafe { core::ptr::copy_nonoverlapping(src.cast_const(), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }
}
