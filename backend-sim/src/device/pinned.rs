//! Pinned host memory and the copies on the streams ([`PinnedCopies`]). An async copy is a
//! task on its stream: its bytes move when it runs in virtual time, not when it is enqueued,
//! and the host sees them once its clock passes the task's end.

use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{DevicePtr, HostPtr, PinnedCopies};

use super::memory::Memory;
use super::{Named, SimDevice};
use crate::costs::Cost;
use crate::faults::{Injected, Site};
use crate::trace::Record;

/// First pinned host address (`aclrtMallocHost`), far from device addresses so a mix-up
/// between the two is a dead handle, never a silent hit.
pub(super) const FIRST_HOST_PTR: u64 = 0x7000_0000_0000;

/// An async copy task on a stream (copies on the streams): it moves its bytes when it runs
/// in virtual time, not when it is enqueued.
#[derive(Clone, Copy, Debug)]
pub(super) struct PendingCopy {
    /// When the task ends (its bytes land then).
    pub(super) at: u64,
    pub(super) seq: u64,
    /// The stream it runs on (a force destroy drops it).
    pub(super) stream: StreamHandle,
    pub(super) direction: CopyDirection,
    len: usize,
}

/// Which way an async copy moves its bytes, and between which buffers.
#[derive(Clone, Copy, Debug)]
pub(super) enum CopyDirection {
    /// Pinned host memory to the device (the arm).
    ToDevice { src: HostPtr, dst: DevicePtr },
    /// The device to pinned host memory (the status read).
    ToHost { src: DevicePtr, dst: HostPtr },
}

impl SimDevice {
    /// An async copy task runs: its bytes move now, in virtual time. A stream sticky-faulted
    /// by an earlier task still runs it (continue-on-failure, device-truth §1).
    pub(super) fn run_copy_task(&mut self, copy: PendingCopy) {
        let len = copy.len;
        match copy.direction {
            CopyDirection::ToDevice { src, dst } => {
                let Some(bytes) = self.host_region(src, len).map(<[u8]>::to_vec) else {
                    self.violation(format!(
                        "an arm copy read {len} bytes at host {:#x}, which is not pinned memory",
                        src.0
                    ));
                    return;
                };
                match self.region_mut(dst, len) {
                    Some((alloc, offset)) => {
                        if let Some(out) = alloc.bytes.get_mut(offset..offset + len) {
                            out.copy_from_slice(&bytes);
                        }
                        alloc.kernel_writer = None;
                    }
                    None => self.violation(format!(
                        "an arm copy wrote {len} bytes at {:#x}, which is not inside an allocation",
                        dst.0
                    )),
                }
            }
            CopyDirection::ToHost { src, dst } => {
                if let Some(run) = self.header_read_of(src, len) {
                    self.check_timing_writer(run);
                }
                let Some(bytes) = self
                    .region_mut(src, len)
                    .and_then(|(alloc, offset)| alloc.bytes.get(offset..offset + len))
                    .map(<[u8]>::to_vec)
                else {
                    self.violation(format!(
                        "a readback copy read {len} bytes at {:#x}, which is not inside an allocation",
                        src.0
                    ));
                    return;
                };
                match self.host_region_mut(dst, len) {
                    Some(out) => out.copy_from_slice(&bytes),
                    None => self.violation(format!(
                        "a readback copy wrote {len} bytes at host {:#x}, which is not pinned memory",
                        dst.0
                    )),
                }
            }
        }
    }

    /// The pinned allocation holding `len` bytes from `ptr`, as that slice.
    fn host_region(&self, ptr: HostPtr, len: usize) -> Option<&[u8]> {
        let (base, bytes) = self.host_memory.range(..=ptr).next_back()?;
        let offset = usize::try_from(ptr.0 - base.0).ok()?;
        bytes.get(offset..offset.checked_add(len)?)
    }

    /// [`Self::host_region`], mutably.
    fn host_region_mut(&mut self, ptr: HostPtr, len: usize) -> Option<&mut [u8]> {
        let (base, bytes) = self.host_memory.range_mut(..=ptr).next_back()?;
        let offset = usize::try_from(ptr.0 - base.0).ok()?;
        bytes.get_mut(offset..offset.checked_add(len)?)
    }

    /// Enqueues an async copy task of `len` bytes on `stream`; the caller checked the
    /// handles. Its bytes move when it runs ([`Self::run_copy_task`]).
    fn enqueue_copy(&mut self, stream: StreamHandle, direction: CopyDirection, len: usize) {
        let start = self.task_start(stream, 0);
        let end = start.map(|s| s.saturating_add(self.costs.get(Cost::CopyTask)));
        self.enqueue(stream, start, end);
        let enqueued_ns = self.host_ns;
        let what = match direction {
            CopyDirection::ToDevice { .. } => "arm h2d",
            CopyDirection::ToHost { .. } => "readback d2h",
        };
        self.journal.push_for_effect(|run| Record::CopyTask {
            stream: stream.0,
            what,
            len,
            run: run.map(|r| r.0),
            enqueued_ns,
            span: start.zip(end),
        });
        // A copy behind a task that never ends never runs.
        if let (Some(_), Some(at)) = (start, end) {
            self.write_seq += 1;
            self.pending_copies.push(PendingCopy {
                at,
                seq: self.write_seq,
                stream,
                direction,
                len,
            });
        }
    }

    /// The checks every async copy's enqueue makes, in the synchronous copy's order: the
    /// stream, the device's sticky fault, the device buffer, the pinned buffer.
    fn check_copy(
        &mut self,
        call: &str,
        stream: StreamHandle,
        device: DevicePtr,
        host: HostPtr,
        len: usize,
    ) -> Result<(), AclCode> {
        if !self.streams.contains_key(&stream) {
            return Err(self.dead_handle(call, "stream", stream.0));
        }
        self.sticky_now()?;
        if self.locate(device).is_none() {
            return Err(self.dead_handle(call, "buffer", device.0));
        }
        if self.region_mut(device, len).is_none() || self.host_region(host, len).is_none() {
            return Err(AclCode::RtParamInvalid);
        }
        Ok(())
    }
}

impl PinnedCopies for SimDevice {
    fn malloc_host(&mut self, size: usize) -> Result<HostPtr, AclCode> {
        // Pinned memory is allocated like device memory, once per slot.
        self.call(
            "malloc_host",
            Cost::Malloc,
            Named::Run(None),
            |d, _| {
                d.sticky_now().and_then(|()| {
                    // The slot's resources are made together: a malloc fault fails either allocation.
                    let ptr = d.next_allocation(size, Memory::Pinned)?;
                    d.host_memory.insert(HostPtr(ptr), vec![0; size]);
                    Ok(HostPtr(ptr))
                })
            },
            |result| match &result {
                Ok(p) => format!("{size} B -> host {:#x}", p.0),
                Err(_) => format!("{size} B"),
            },
        )
    }

    fn free_host(&mut self, ptr: HostPtr) -> Result<(), AclCode> {
        self.call(
            "free_host",
            Cost::Free,
            Named::Run(None),
            |d, _| {
                if let Some(bytes) = d.host_memory.remove(&ptr) {
                    let end = ptr
                        .0
                        .saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
                    if d.pending_copies.iter().any(|c| match c.direction {
                        CopyDirection::ToDevice { src: p, .. }
                        | CopyDirection::ToHost { dst: p, .. } => (ptr.0..end).contains(&p.0),
                    }) {
                        d.violation(format!(
                            "host {:#x} freed while a copy on a stream will still use it",
                            ptr.0
                        ));
                    }
                    Ok(())
                } else {
                    Err(d.dead_handle("free_host", "pinned buffer", ptr.0))
                }
            },
            |_| format!("host {:#x}", ptr.0),
        )
    }

    fn memcpy_to_device_async(
        &mut self,
        dst: DevicePtr,
        src: HostPtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.call(
            "memcpy_h2d_async",
            Cost::CopyEnqueue,
            Named::Effect,
            |d, _| {
                d.check_copy("memcpy_h2d_async", stream, dst, src, len)
                    .and_then(|()| {
                        // The arm's fault site, as for the synchronous arm.
                        if let Some(Injected::Fail(code)) = d.faults.decide(Site::Arm, None) {
                            return Err(code);
                        }
                        d.enqueue_copy(stream, CopyDirection::ToDevice { src, dst }, len);
                        Ok(())
                    })
            },
            |_| format!("{len} B host {:#x} -> {:#x} on h{}", src.0, dst.0, stream.0),
        )
    }

    fn memcpy_from_device_async(
        &mut self,
        dst: HostPtr,
        src: DevicePtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.call(
            "memcpy_d2h_async",
            Cost::CopyEnqueue,
            Named::Effect,
            |d, _| {
                // A read covering a live run's status header is that run's status read.
                let header_of = d.header_read_of(src, len);
                d.check_copy("memcpy_d2h_async", stream, src, dst, len)
                    .and_then(|()| {
                        // The status read's fault site, as for the synchronous read.
                        if let Some(run) = header_of {
                            if let Some(Injected::Fail(code)) =
                                d.faults.decide(Site::StatusRead, Some(run.0))
                            {
                                return Err(code);
                            }
                        }
                        d.enqueue_copy(stream, CopyDirection::ToHost { src, dst }, len);
                        Ok(())
                    })
            },
            |_| format!("{len} B {:#x} -> host {:#x} on h{}", src.0, dst.0, stream.0),
        )
    }

    fn write_host(&mut self, dst: HostPtr, src: &[u8]) -> Result<(), AclCode> {
        // Plain host memory: no call, no cost; settle first so the order with copy tasks holds.
        self.settle();
        match self.host_region_mut(dst, src.len()) {
            Some(out) => {
                out.copy_from_slice(src);
                Ok(())
            }
            None => Err(AclCode::RtParamInvalid),
        }
    }

    fn read_host(&mut self, dst: &mut [u8], src: HostPtr) -> Result<(), AclCode> {
        // The host sees a copy task's bytes once its clock has passed the task's end.
        self.settle();
        match self.host_region(src, dst.len()) {
            Some(bytes) => {
                dst.copy_from_slice(bytes);
                Ok(())
            }
            None => Err(AclCode::RtParamInvalid),
        }
    }
}
