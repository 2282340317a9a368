//! Device memory: allocations at addresses the backend chooses, bounds-checked. A kernel's
//! write names its run, so a backend can check that a run's buffers are written by its own
//! kernels only (L-13).

use std::collections::BTreeMap;

/// One device allocation.
#[derive(Clone, Debug)]
pub(crate) struct Allocation {
    pub(crate) bytes: Vec<u8>,
    /// The run whose kernels wrote it last (a host write or a copy clears it).
    pub(crate) kernel_writer: Option<u64>,
}

/// The device's allocations, by base address.
#[derive(Clone, Debug, Default)]
pub(crate) struct Memory {
    allocations: BTreeMap<u64, Allocation>,
}

impl Memory {
    pub(crate) fn insert(&mut self, base: u64, size: usize) {
        self.allocations.insert(base, Allocation { bytes: vec![0; size], kernel_writer: None });
    }

    pub(crate) fn remove(&mut self, base: u64) -> Option<usize> {
        self.allocations.remove(&base).map(|a| a.bytes.len())
    }

    pub(crate) fn len(&self) -> usize {
        self.allocations.len()
    }

    pub(crate) fn clear(&mut self) {
        self.allocations.clear();
    }

    /// The allocation holding `addr`, as `(base, offset)`.
    pub(crate) fn locate(&self, addr: u64) -> Option<(u64, usize)> {
        let (&base, alloc) = self.allocations.range(..=addr).next_back()?;
        let offset = usize::try_from(addr - base).ok()?;
        (offset < alloc.bytes.len()).then_some((base, offset))
    }

    /// The allocation holding all `len` bytes from `addr`, and `addr`'s offset in it.
    pub(crate) fn region_mut(&mut self, addr: u64, len: usize) -> Option<(&mut Allocation, usize)> {
        let (base, offset) = self.locate(addr)?;
        let alloc = self.allocations.get_mut(&base)?;
        (offset.checked_add(len)? <= alloc.bytes.len()).then_some((alloc, offset))
    }

    /// The `len` bytes from `addr`, if one allocation holds them all.
    pub(crate) fn bytes(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let (base, offset) = self.locate(addr)?;
        self.allocations.get(&base)?.bytes.get(offset..offset.checked_add(len)?)
    }

    /// Writes `bytes` at `addr` (`false`: no allocation holds them), naming the kernel's run
    /// (`None`: the host or a copy).
    pub(crate) fn write(&mut self, addr: u64, bytes: &[u8], writer: Option<u64>) -> bool {
        match self.region_mut(addr, bytes.len()) {
            Some((alloc, offset)) => {
                if let Some(out) = alloc.bytes.get_mut(offset..offset + bytes.len()) {
                    out.copy_from_slice(bytes);
                }
                alloc.kernel_writer = writer;
                true
            }
            None => false,
        }
    }

    /// The run whose kernels last wrote the allocation holding `addr`.
    pub(crate) fn kernel_writer(&self, addr: u64) -> Option<u64> {
        let (base, _) = self.locate(addr)?;
        self.allocations.get(&base)?.kernel_writer
    }

    /// The addresses of the allocation at `base`, if one starts there.
    pub(crate) fn span(&self, base: u64) -> Option<core::ops::Range<u64>> {
        let len = self.allocations.get(&base)?.bytes.len();
        Some(base..base.saturating_add(u64::try_from(len).unwrap_or(u64::MAX)))
    }
}
