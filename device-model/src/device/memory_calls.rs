//! [`Device`]'s memory calls: allocations, reads and writes, and the copies
//! enqueued on streams.
//! Apart from [`super`] for length: the calls by what they act on, the engine apart.

use status_latch::{AclCode, RECORD_BYTES};

use super::{
    CallError, CopySpec, CopyTask, Dead, Device, HostMemory, Place, SlotRead, Task, TaskKind,
};
use crate::config::Ns;
use crate::faults::{Injected, Site};

impl Device {
    // ----- memory -----------------------------------------------------------------------

    /// The checks an allocation makes before the backend picks its address (`aclrtMalloc`,
    /// `aclrtMallocHost`): the device fault, a zero size (107000), a `malloc` rule's code.
    ///
    /// # Errors
    ///
    /// That code.
    pub fn check_malloc(&mut self, size: usize, now: Ns) -> Result<(), AclCode> {
        self.fault_now(now)?;
        if size == 0 {
            return Err(AclCode::RtParamInvalid);
        }
        self.fail_at(Site::Malloc, None)
    }

    /// Device memory of `size` zero bytes at `base` (the backend's address, checked by
    /// [`Device::check_malloc`]).
    pub fn allocate(&mut self, base: u64, size: usize) {
        self.memory.insert(base, size);
    }

    /// `aclrtFree` of the allocation at `base`: whether a queued or running task will still
    /// use it (the simulator's invariant; the fake lets that task fail).
    ///
    /// # Errors
    ///
    /// [`Dead::Memory`] when no allocation starts at `base`.
    pub fn free(&mut self, base: u64) -> Result<bool, CallError> {
        let span = self.memory.span(base).ok_or(CallError::Dead(Dead::Memory(base)))?;
        let in_use = self.streams.values().any(|s| s.tasks().any(|task| task_touches(task, &span)));
        self.memory.remove(base);
        Ok(in_use)
    }

    /// Whether a queued or running copy task will still use host memory in `span`.
    #[must_use]
    pub fn host_in_use(&self, span: &core::ops::Range<u64>) -> bool {
        self.streams.values().any(|s| {
            s.tasks().any(|task| {
                matches!(&task.kind, TaskKind::Copy(c) if [c.copy.src, c.copy.dst]
                    .into_iter()
                    .any(|place| matches!(place, Place::Host { addr, .. } if span.contains(&addr))))
            })
        })
    }

    /// The allocation holding `addr`: its base and `addr`'s offset in it.
    #[must_use]
    pub fn locate(&self, addr: u64) -> Option<(u64, usize)> {
        self.memory.locate(addr)
    }

    /// The `len` bytes at `addr`, if one allocation holds them all.
    #[must_use]
    pub fn bytes(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.memory.bytes(addr, len)
    }

    /// The run whose kernels last wrote the allocation holding `addr`.
    #[must_use]
    pub fn kernel_writer(&self, addr: u64) -> Option<u64> {
        self.memory.kernel_writer(addr)
    }

    /// A synchronous host-to-device copy (`aclrtMemcpy`): the arm (its fault site; a copy of a
    /// whole 280-byte record region, the region's one zeroing, is not an arm), or any other.
    ///
    /// # Errors
    ///
    /// The device fault, an `arm` rule's code, a dead address, 107000 for a range past its
    /// allocation.
    pub fn write(&mut self, dst: u64, bytes: &[u8], now: Ns) -> Result<(), CallError> {
        self.fault_now(now)?;
        if bytes.len() != RECORD_BYTES {
            self.fail_at(Site::Arm, None)?;
        }
        if self.memory.locate(dst).is_none() {
            return Err(CallError::Dead(Dead::Memory(dst)));
        }
        if self.memory.write(dst, bytes, None) {
            Ok(())
        } else {
            Err(AclCode::RtParamInvalid.into())
        }
    }

    /// The live run whose `what` buffer a read of `len` bytes from `src` covers, if any.
    #[must_use]
    pub fn slot_read(&self, src: u64, len: usize, what: SlotRead) -> Option<Option<u64>> {
        let read = src..src.saturating_add(u64::try_from(len).unwrap_or(u64::MAX));
        self.live
            .values()
            .find(|run| {
                let at = match what {
                    SlotRead::Header => run.header,
                    SlotRead::Record => run.record,
                };
                at.is_some_and(|at| read.contains(&at))
            })
            .map(|run| run.id)
    }

    /// A synchronous device-to-host copy (`aclrtMemcpy`) into `dst`: a status read when it
    /// covers a live run's header, a record read when it covers its record (their fault
    /// sites).
    ///
    /// # Errors
    ///
    /// The device fault, a `status-read` or `record-read` rule's code, a dead address, 107000
    /// for a range past its allocation.
    pub fn read(&mut self, dst: &mut [u8], src: u64, now: Ns) -> Result<(), CallError> {
        let len = dst.len();
        let header_of = self.slot_read(src, len, SlotRead::Header);
        let record_of = self.slot_read(src, len, SlotRead::Record);
        self.fault_now(now)?;
        if let Some(run) = header_of {
            self.fail_at(Site::StatusRead, run)?;
        }
        if let Some(run) = record_of {
            self.fail_at(Site::RecordRead, run)?;
        }
        if self.memory.locate(src).is_none() {
            return Err(CallError::Dead(Dead::Memory(src)));
        }
        let bytes = self.memory.bytes(src, len).ok_or(AclCode::RtParamInvalid)?;
        dst.copy_from_slice(bytes);
        Ok(())
    }

    /// A synchronous device-to-device copy.
    ///
    /// # Errors
    ///
    /// 107000 when either range is outside one allocation.
    pub fn copy_within(&mut self, dst: u64, src: u64, len: usize) -> Result<(), AclCode> {
        let bytes = self.memory.bytes(src, len).ok_or(AclCode::RtParamInvalid)?.to_vec();
        if self.memory.write(dst, &bytes, None) { Ok(()) } else { Err(AclCode::RtParamInvalid) }
    }

    // ----- copies on the streams --------------------------------------------------------

    /// `aclrtMemcpyAsync`: a copy task on `stream`; its bytes move when the stream reaches it.
    /// A host-to-device copy is an arm (its fault site), a device-to-host one covering a live
    /// run's header that run's status read; a `copy` rule fails the task when it runs.
    /// Returns the task's number on its stream (for [`Device::task_result`] when `watched`).
    ///
    /// # Errors
    ///
    /// A dead stream or device address, the device fault, 107000 for a range outside its
    /// allocation, a refused enqueue, an `arm` or `status-read` rule's code.
    pub fn enqueue_copy(
        &mut self,
        stream: u64,
        copy: CopySpec,
        host: &dyn HostMemory,
        watched: bool,
        tag: u64,
        now: Ns,
    ) -> Result<u64, CallError> {
        self.stream(stream)?;
        self.fault_now(now)?;
        for place in [copy.src, copy.dst] {
            match place {
                Place::Device(addr) if self.memory.locate(addr).is_none() => {
                    return Err(CallError::Dead(Dead::Memory(addr)));
                }
                _ => {}
            }
        }
        for place in [copy.src, copy.dst] {
            let fits = match place {
                Place::Device(addr) => self.memory.bytes(addr, copy.len).is_some(),
                Place::Host { addr, pinned } => host.holds(addr, copy.len, pinned),
            };
            if !fits {
                return Err(AclCode::RtParamInvalid.into());
            }
        }
        self.refuse_enqueue(stream)?;
        match (copy.src, copy.dst) {
            (Place::Host { .. }, Place::Device(_)) => self.fail_at(Site::Arm, None)?,
            (Place::Device(src), Place::Host { .. }) => {
                if let Some(run) = self.slot_read(src, copy.len, SlotRead::Header) {
                    self.fail_at(Site::StatusRead, run)?;
                }
            }
            _ => {}
        }
        let fail = match self.faults.decide(Site::Copy, None) {
            Some(Injected::Fail(code)) => Some(code),
            _ => None,
        };
        Ok(self.enqueue(stream, TaskKind::Copy(CopyTask { copy, fail }), tag, watched, now))
    }

    /// A watched task's own result, once it ran (taken).
    pub fn task_result(&mut self, stream: u64, seq: u64) -> Option<Result<(), AclCode>> {
        self.results.remove(&(stream, seq))
    }
}

/// Whether a queued or running task will still use device memory in `span`.
fn task_touches(task: &Task, span: &core::ops::Range<u64>) -> bool {
    match &task.kind {
        TaskKind::Kernel(s) => {
            [s.timing, s.header, s.record].into_iter().flatten().any(|at| span.contains(&at))
        }
        TaskKind::Copy(copy) => [copy.copy.src, copy.copy.dst]
            .into_iter()
            .any(|place| matches!(place, Place::Device(at) if span.contains(&at))),
        TaskKind::Record { .. } | TaskKind::Wait(_) => false,
    }
}
