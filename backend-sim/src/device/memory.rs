//! Device memory: allocations, the synchronous copies, and the kernels' pending writes. The
//! host sees a device write (a kernel's or a copy task's) once its clock passes it, in
//! device-time order, and a run's kernels write no live run's slot buffers but their own
//! (L-13).

use lane_core::RunId;
use lane_core::status_latch::{AclCode, RECORD_BYTES};
use lane_driver::{DevicePtr, RECORD_OFFSET, RunArgs};

use super::pinned::{CopyDirection, PendingCopy};
use super::{Named, PublishedRecord, SimDevice};
use crate::costs::Cost;
use crate::faults::{Injected, Site};

/// First device address.
pub(super) const FIRST_PTR: u64 = 0x1000_0000;
/// `aclrtMalloc` rounds up to 32 bytes and adds 32 bytes of padding (ascend-cl.md §2.5).
const MALLOC_ALIGN: u64 = 32;

/// Which address space an allocation comes from.
#[derive(Clone, Copy, Debug)]
pub(super) enum Memory {
    /// Device memory (`aclrtMalloc`).
    Device,
    /// Pinned host memory (`aclrtMallocHost`).
    Pinned,
}

/// A device allocation: its bytes, and the run whose kernels wrote it last.
#[derive(Clone, Debug)]
pub(super) struct Allocation {
    pub(super) bytes: Vec<u8>,
    /// The run whose kernels wrote it last (a host write clears it).
    pub(super) kernel_writer: Option<RunId>,
}

/// A kernel's write, not yet seen by the host: it lands at `at` (ties in `seq` order).
#[derive(Clone, Debug)]
pub(super) struct PendingWrite {
    at: u64,
    seq: u64,
    pub(super) run: RunId,
    ptr: DevicePtr,
    bytes: Vec<u8>,
    /// A result record, with what it says: remembered as published when it lands.
    pub(super) record: Option<PublishedRecord>,
}

/// One device write due by the host clock, in device-time order.
enum Due {
    Kernel(PendingWrite),
    Copy(PendingCopy),
}

impl SimDevice {
    /// `aclrtMalloc`: zeroed device memory (refused while the device is bad).
    pub(super) fn malloc_call(&mut self, size: usize) -> Result<DevicePtr, AclCode> {
        self.call(
            "malloc",
            Cost::Malloc,
            Named::Run(None),
            |d, _| {
                d.sticky_now().and_then(|()| {
                    let ptr = d.next_allocation(size, Memory::Device)?;
                    d.memory.insert(
                        DevicePtr(ptr),
                        Allocation {
                            bytes: vec![0; size],
                            kernel_writer: None,
                        },
                    );
                    Ok(DevicePtr(ptr))
                })
            },
            |result| match &result {
                Ok(p) => format!("{size} B -> {:#x}", p.0),
                Err(_) => format!("{size} B"),
            },
        )
    }

    /// `aclrtFree`: a buffer a pending write or copy still uses is a violation.
    pub(super) fn free_call(&mut self, ptr: DevicePtr) -> Result<(), AclCode> {
        self.call(
            "free",
            Cost::Free,
            Named::Run(None),
            |d, _| {
                if let Some(alloc) = d.memory.remove(&ptr) {
                    let end = ptr
                        .0
                        .saturating_add(u64::try_from(alloc.bytes.len()).unwrap_or(u64::MAX));
                    let copied = d.pending_copies.iter().any(|c| match c.direction {
                        CopyDirection::ToDevice { dst: p, .. }
                        | CopyDirection::ToHost { src: p, .. } => (ptr.0..end).contains(&p.0),
                    });
                    if copied
                        || d.pending_writes
                            .iter()
                            .any(|w| (ptr.0..end).contains(&w.ptr.0))
                    {
                        d.violation(format!(
                            "{:#x} freed while a run's kernels will still write it",
                            ptr.0
                        ));
                    }
                    Ok(())
                } else {
                    Err(d.dead_handle("free", "buffer", ptr.0))
                }
            },
            |_| format!("{:#x}", ptr.0),
        )
    }

    /// `aclrtMemcpy` host to device, synchronous: the arm (its fault site), or the record
    /// region's zeroing.
    pub(super) fn memcpy_to_device_call(
        &mut self,
        dst: DevicePtr,
        src: &[u8],
    ) -> Result<(), AclCode> {
        self.call(
            "memcpy_h2d",
            Cost::WriteH2d,
            Named::Effect,
            |d, _| {
                // The executor zeroes a slot's record region once, when it makes the slot: that copy
                // is not an arm (the arm's fault site counts arms).
                let record_zeroing = src.len() == RECORD_BYTES
                    && d.locate(dst)
                        .is_some_and(|(_, offset)| offset == RECORD_OFFSET);
                d.sticky_now().and_then(|()| {
                    if !record_zeroing {
                        if let Some(Injected::Fail(code)) = d.faults.decide(Site::Arm, None) {
                            return Err(code);
                        }
                    }
                    if d.locate(dst).is_none() {
                        return Err(d.dead_handle("memcpy_to_device", "buffer", dst.0));
                    }
                    let (alloc, offset) = d
                        .region_mut(dst, src.len())
                        .ok_or(AclCode::RtParamInvalid)?;
                    if let Some(out) = alloc.bytes.get_mut(offset..offset + src.len()) {
                        out.copy_from_slice(src);
                    }
                    alloc.kernel_writer = None;
                    Ok(())
                })
            },
            |_| format!("{} B -> {:#x}", src.len(), dst.0),
        )
    }

    /// `aclrtMemcpy` device to host, synchronous: a live run's status read or record read
    /// (their fault sites).
    pub(super) fn memcpy_from_device_call(
        &mut self,
        dst: &mut [u8],
        src: DevicePtr,
    ) -> Result<(), AclCode> {
        let len = dst.len();
        self.call(
            "memcpy_d2h",
            Cost::ReadD2h,
            Named::Effect,
            |d, _| {
                // A read covering a live run's status header is that run's status read.
                let header_of = d.header_read_of(src, len);
                if let Some(run) = header_of {
                    d.check_timing_writer(run);
                }
                // A read covering a live run's record region is the waiter's record read
                // (L-8); with synchronous copies it covers the status header too (one copy).
                let record_of = d.record_read_of(src, len);
                d.sticky_now().and_then(|()| {
                    if let Some(run) = header_of {
                        if let Some(Injected::Fail(code)) =
                            d.faults.decide(Site::StatusRead, Some(run.0))
                        {
                            return Err(code);
                        }
                    }
                    if let Some(run) = record_of {
                        if let Some(Injected::Fail(code)) =
                            d.faults.decide(Site::RecordRead, Some(run.0))
                        {
                            return Err(code);
                        }
                    }
                    if d.locate(src).is_none() {
                        return Err(d.dead_handle("memcpy_from_device", "buffer", src.0));
                    }
                    let (alloc, offset) = d
                        .region_mut(src, dst.len())
                        .ok_or(AclCode::RtParamInvalid)?;
                    if let Some(bytes) = alloc.bytes.get(offset..offset + dst.len()) {
                        dst.copy_from_slice(bytes);
                    }
                    Ok(())
                })
            },
            |_| format!("{len} B <- {:#x}", src.0),
        )
    }

    /// The checks every allocation makes (a zero size is invalid; the malloc fault site
    /// applies to device and pinned memory alike) and its address: the next one of `memory`,
    /// aligned, with a guard gap so neighbouring allocations never touch.
    pub(super) fn next_allocation(&mut self, size: usize, memory: Memory) -> Result<u64, AclCode> {
        if size == 0 {
            return Err(AclCode::RtParamInvalid);
        }
        if let Some(Injected::Fail(code)) = self.faults.decide(Site::Malloc, None) {
            return Err(code);
        }
        let next = match memory {
            Memory::Device => &mut self.next_ptr,
            Memory::Pinned => &mut self.next_host_ptr,
        };
        let ptr = *next;
        let size64 = u64::try_from(size).unwrap_or(u64::MAX);
        *next = ptr.saturating_add(size64.div_ceil(MALLOC_ALIGN) * MALLOC_ALIGN + MALLOC_ALIGN);
        Ok(ptr)
    }

    /// Applies every device write (kernel writes and copy tasks) the host clock has passed,
    /// in device-time order.
    pub(super) fn settle(&mut self) {
        if self.pending_writes.is_empty() && self.pending_copies.is_empty() {
            return;
        }
        let now = self.host_ns;
        let mut due: Vec<(u64, u64, Due)> = Vec::new();
        self.pending_writes.retain(|w| {
            if w.at <= now {
                due.push((w.at, w.seq, Due::Kernel(w.clone())));
                false
            } else {
                true
            }
        });
        self.pending_copies.retain(|c| {
            if c.at <= now {
                due.push((c.at, c.seq, Due::Copy(*c)));
                false
            } else {
                true
            }
        });
        due.sort_by_key(|(at, seq, _)| (*at, *seq));
        for (_, _, due) in due {
            match due {
                Due::Kernel(write) => self.apply_kernel_write(write),
                Due::Copy(copy) => self.run_copy_task(copy),
            }
        }
    }

    fn apply_kernel_write(&mut self, write: PendingWrite) {
        if let Some(owner) = self.owner_of(write.ptr) {
            if owner != write.run {
                self.violation(format!(
                    "run {}'s kernels wrote {:#x}, a buffer of live run {} (L-13)",
                    write.run.0, write.ptr.0, owner.0
                ));
            }
        }
        match self.region_mut(write.ptr, write.bytes.len()) {
            Some((alloc, offset)) => {
                if let Some(dst) = alloc.bytes.get_mut(offset..offset + write.bytes.len()) {
                    dst.copy_from_slice(&write.bytes);
                }
                alloc.kernel_writer = Some(write.run);
                if let Some(record) = write.record {
                    self.published.insert(write.run, record);
                    if record == PublishedRecord::Error {
                        self.published_errors.insert(write.run);
                    }
                }
            }
            None => self.violation(format!(
                "run {}'s kernels wrote {} bytes at {:#x}, which is not inside an allocation",
                write.run.0,
                write.bytes.len(),
                write.ptr.0
            )),
        }
    }

    /// The live run whose status header a read of `len` bytes from `src` covers: that read
    /// is the run's status read.
    pub(super) fn header_read_of(&self, src: DevicePtr, len: usize) -> Option<RunId> {
        self.read_covering(src, len, |run| run.status_header)
    }

    /// The live run whose result record region a device-to-host read of `len` bytes from
    /// `src` covers, if any.
    fn record_read_of(&self, src: DevicePtr, len: usize) -> Option<RunId> {
        self.read_covering(src, len, |run| run.record)
    }

    /// The live run whose `region` (its address) a read of `len` bytes from `src` covers.
    fn read_covering(
        &self,
        src: DevicePtr,
        len: usize,
        region: impl Fn(&RunArgs) -> DevicePtr,
    ) -> Option<RunId> {
        let len = u64::try_from(len).unwrap_or(u64::MAX);
        let read = src.0..src.0.saturating_add(len);
        self.live_runs
            .values()
            .find(|run| read.contains(&region(run).0))
            .map(|run| run.run)
    }

    /// The live run whose slot buffers include `ptr`.
    fn owner_of(&self, ptr: DevicePtr) -> Option<RunId> {
        self.live_runs
            .values()
            .find(|a| [a.status_header, a.timing, a.handshake, a.record].contains(&ptr))
            .map(|a| a.run)
    }

    /// The allocation holding `ptr`, as `(base, offset of ptr)` (a pointer may address a
    /// field inside an allocation, as the driver's slot buffers do).
    pub(super) fn locate(&self, ptr: DevicePtr) -> Option<(DevicePtr, usize)> {
        let (&base, alloc) = self.memory.range(..=ptr).next_back()?;
        let offset = usize::try_from(ptr.0 - base.0).ok()?;
        (offset < alloc.bytes.len()).then_some((base, offset))
    }

    /// The allocation holding all `len` bytes from `ptr`, and the offset of `ptr` in it.
    pub(super) fn region_mut(
        &mut self,
        ptr: DevicePtr,
        len: usize,
    ) -> Option<(&mut Allocation, usize)> {
        let (base, offset) = self.locate(ptr)?;
        let alloc = self.memory.get_mut(&base)?;
        (offset.checked_add(len)? <= alloc.bytes.len()).then_some((alloc, offset))
    }

    pub(super) fn write_later(&mut self, at: u64, run: RunId, ptr: DevicePtr, bytes: Vec<u8>) {
        self.write_seq += 1;
        self.pending_writes.push(PendingWrite {
            at,
            seq: self.write_seq,
            run,
            ptr,
            bytes,
            record: None,
        });
    }
}
