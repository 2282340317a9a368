//! Thread binding: the [`WorkerBinding`], each thread's binding to its device, and each
//! device id's force reset count.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use ascend_cl_sys::{ACL_SUCCESS, Acl};
use lane_core::status_latch::AclCode;

use crate::error::AclError;

/// What a host worker thread needs to bind itself to the lane's device, from
/// [`AclDevice::worker_binding`](super::AclDevice::worker_binding). ACL binds a device per
/// thread (ascend-cl.md §2.1): a worker calls [`WorkerBinding::bind`] before its first runner
/// call, and again once [`WorkerBinding::resets`] moved past the count it bound at.
#[derive(Clone, Debug)]
pub struct WorkerBinding {
    pub(super) acl: Arc<Acl>,
    pub(super) device_id: i32,
    pub(super) resets: Arc<AtomicU64>,
}

impl WorkerBinding {
    /// `aclrtSetDevice(device_id)` on the calling thread.
    pub fn bind(&self) -> Result<(), AclCode> {
        let code = set_device(&self.acl, self.device_id, &self.resets);
        AclCode::from_raw(code).map_or(Ok(()), Err)
    }

    /// The loaded library, for the runner's own calls on the worker thread.
    #[must_use]
    pub fn acl(&self) -> &Acl {
        &self.acl
    }

    /// The lane's logical device id.
    #[must_use]
    pub const fn device_id(&self) -> i32 {
        self.device_id
    }

    /// How many force resets the lane's device id has had in this process (by any lane): a
    /// worker that bound when this was lower must bind again before its next call.
    #[must_use]
    pub fn resets(&self) -> u64 {
        self.resets.load(Ordering::Acquire)
    }
}

/// A thread's binding: the device it bound last through this library (`aclrtSetDevice` makes
/// it the thread's one current device) and that device id's force reset count when it did.
/// Keyed by device id alone: a process drives one ACL library, whose current device is per
/// thread for the whole process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Bound {
    pub(super) device_id: i32,
    pub(super) resets: u64,
}

thread_local! {
    /// This thread's binding; `None` before its first bind. A force reset leaves it stale
    /// (its count is behind), which every check sees.
    static BOUND: core::cell::Cell<Option<Bound>> = const { core::cell::Cell::new(None) };
}

pub(super) fn bound() -> Option<Bound> {
    BOUND.with(core::cell::Cell::get)
}

fn set_bound(bound: Option<Bound>) {
    BOUND.with(|cell| cell.set(bound));
}

/// `aclrtSetDevice(device_id)` at open, the binding noted for the calling thread.
pub(super) fn bind_calling_thread(
    acl: &Acl,
    device_id: i32,
    resets: &AtomicU64,
) -> Result<(), AclError> {
    let code = set_device(acl, device_id, resets);
    acl.check("aclrtSetDevice", code).map_err(|source| AclError::SetDevice { device_id, source })
}

/// `aclrtSetDevice(device_id)` on the calling thread, its raw code; on success the thread's
/// binding is noted with the count `resets` had before the call (a reset made meanwhile
/// leaves the binding stale, so the next call binds again).
pub(super) fn set_device(acl: &Acl, device_id: i32, resets: &AtomicU64) -> i32 {
    let resets = resets.load(Ordering::Acquire);
    // SAFETY: plain value.
    let code = unsafe { acl.aclrtSetDevice(device_id) };
    if code == ACL_SUCCESS {
        set_bound(Some(Bound { device_id, resets }));
    }
    code
}

/// The force reset count of `device_id`, one per device id for the whole process: a force
/// reset unbinds every thread from its device, whichever lane made it (ascend-cl.md §2.1).
pub(super) fn reset_count(device_id: i32) -> Arc<AtomicU64> {
    static COUNTS: Mutex<BTreeMap<i32, Arc<AtomicU64>>> = Mutex::new(BTreeMap::new());
    let mut counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(counts.entry(device_id).or_default())
}
