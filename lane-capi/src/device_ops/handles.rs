//! The handles a runtime's table issued, per device: every value looked up before an entry gets it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use core::ffi::c_void;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{DevicePtr, EventHandle};

/// The live handles of one device, each kind by its value (memory with its size).
#[derive(Debug, Default)]
pub(super) struct Issued {
    pub(super) streams: BTreeSet<u64>,
    pub(super) events: BTreeSet<u64>,
    /// Allocation base -> size.
    pub(super) allocations: BTreeMap<u64, usize>,
}

/// One device as the runtime's tables drive it: the lanes whose tables share `user` and whose
/// configs share the device id. A force reset through any of them kills every handle any of
/// them holds and unbinds every thread, as a reset does on ACL, so the issued handles and the
/// reset count are the device's, not one lane's.
#[derive(Debug)]
pub(super) struct Domain {
    /// Process-unique, never 0: the thread-local binding names its device by it.
    pub(super) serial: u64,
    /// Force resets made through this device's tables.
    pub(super) resets: AtomicU64,
    /// Live handles; a lookup takes the read side (never held across an entry).
    issued: RwLock<Issued>,
}

impl Domain {
    /// The device of `user` and `device_id`: the one live already, or a new one. Kept only
    /// while a lane holds it, so a runtime that makes a `user` per lane leaves nothing behind.
    pub(super) fn of(user: *mut c_void, device_id: i32) -> Arc<Self> {
        static DEVICES: Mutex<BTreeMap<(usize, i32), Weak<Domain>>> = Mutex::new(BTreeMap::new());
        static SERIALS: AtomicU64 = AtomicU64::new(0);
        let key = (user.addr(), device_id);
        let mut devices = DEVICES.lock().unwrap_or_else(PoisonError::into_inner);
        devices.retain(|_, device| device.strong_count() > 0);
        if let Some(device) = devices.get(&key).and_then(Weak::upgrade) {
            return device;
        }
        let device = Arc::new(Self {
            serial: SERIALS.fetch_add(1, Ordering::Relaxed) + 1,
            resets: AtomicU64::new(0),
            issued: RwLock::new(Issued::default()),
        });
        devices.insert(key, Arc::downgrade(&device));
        device
    }

    pub(super) fn issued(&self) -> RwLockReadGuard<'_, Issued> {
        self.issued.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn issued_mut(&self) -> RwLockWriteGuard<'_, Issued> {
        self.issued.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn stream(&self, stream: StreamHandle) -> Result<*mut c_void, Refused> {
        if self.issued().streams.contains(&stream.0) {
            Ok(pointer(stream.0))
        } else {
            Err(refused(AclCode::RtInvalidHandle, "stream", stream.0))
        }
    }

    pub(super) fn event(&self, event: EventHandle) -> Result<*mut c_void, Refused> {
        if self.issued().events.contains(&event.0) {
            Ok(pointer(event.0))
        } else {
            Err(refused(AclCode::RtInvalidHandle, "event", event.0))
        }
    }

    /// `ptr` when `[ptr, ptr + len)` lies inside one live allocation.
    pub(super) fn range(&self, ptr: DevicePtr, len: usize) -> Result<*mut c_void, Refused> {
        if inside(&self.issued().allocations, ptr.0, len) {
            Ok(pointer(ptr.0))
        } else {
            Err(refused(AclCode::RtParamInvalid, "device range at", ptr.0))
        }
    }

    /// `ptr` when a live allocation starts there (what `free` takes).
    pub(super) fn allocation(&self, ptr: DevicePtr) -> Result<*mut c_void, Refused> {
        if self.issued().allocations.contains_key(&ptr.0) {
            Ok(pointer(ptr.0))
        } else {
            Err(refused(AclCode::RtParamInvalid, "allocation", ptr.0))
        }
    }
}

/// Whether `[ptr, ptr + len)` lies inside one allocation of `allocations` (base -> size).
pub(super) fn inside(allocations: &BTreeMap<u64, usize>, ptr: u64, len: usize) -> bool {
    allocations.range(..=ptr).next_back().is_some_and(|(&base, &size)| {
        usize::try_from(ptr - base)
            .ok()
            .and_then(|offset| offset.checked_add(len))
            .is_some_and(|end| end <= size)
    })
}

/// A handle value as the pointer the table gave (its provenance was exposed when it came in).
pub(super) fn pointer(value: u64) -> *mut c_void {
    std::ptr::with_exposed_provenance_mut(usize::try_from(value).unwrap_or(usize::MAX))
}

/// A pointer the table gave as a handle value, its provenance exposed (pinned memory is read
/// and written through it again).
pub(super) fn value(ptr: *mut c_void) -> u64 {
    ptr.expose_provenance() as u64
}

/// Why a handle was refused: its code and the text the device keeps for it.
#[derive(Debug)]
pub(super) struct Refused {
    pub(super) code: AclCode,
    pub(super) message: String,
}

fn refused(code: AclCode, what: &str, value: u64) -> Refused {
    Refused {
        code,
        message: format!(
            "{what} {value:#x} is not one the runtime's device table returned and the lane still \
             holds (never returned, destroyed, or from before a force reset); refused before any \
             entry was called"
        ),
    }
}
